/* SPDX-License-Identifier: MIT */
/*
 * nic_udp_resp.c - the responder API under a packet transport (emu:udp on
 * loopback, both QPs in this process, MTU 1024 so messages span packets):
 *  - a multi-packet SEND that fits: one receive CQE with the real length;
 *  - a multi-packet SEND larger than the receive WQE: LOCAL_LENGTH_ERR on
 *    the responder's receive CQE, REMOTE_INVAL_REQ_ERR on the requester's
 *    (IBA 9.7.5.1.6), both QPs in ERR;
 *  - a multi-packet WRITE_IMM: the data lands, ONE receive WQE is consumed
 *    (at the last packet) - the next SEND completes on the next WQE.
 * Exits 77 when the udp transport cannot open (no loopback sockets).
 */
#include <errno.h>

#include "gdak_test.h"
#include "nic_util.h"

#define LEN 3000	/* three packets at MTU 1024 */

static struct gdak_ctx *ctx;
static uint8_t *buf;	/* [0, 16K) source, [16K, 32K) receive / target */
static struct gdak_mr *mr;

static void pair(struct nu_qp *a, struct nu_qp *b)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .rq_depth = 16, .rq_max_sge = 1,
				  .rcq_depth = 16, .mtu = 1024};

	REQUIRE_EQ(nu_pair(ctx, &at, a, b), 0);
}

static void send_fits_and_write_imm(void)
{
	struct gdak_mlx5_cqe_fields f;
	struct nu_qp a, b;
	uint8_t *dst = buf + 16384;

	pair(&a, &b);
	memset(dst, 0, 16384);
	for (unsigned i = 0; i < LEN; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	/* receive WQE 0: the WRITE_IMM; WQE 1: the SEND */
	nu_post_recv(&b, dst + 8192, 4096, gdak_mr_lkey(mr));
	nu_post_recv(&b, dst + 12288, 4096, gdak_mr_lkey(mr));

	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE_IMM, buf, LEN, gdak_mr_lkey(mr),
		     (uintptr_t)dst, gdak_mr_rkey(mr), gdak_htobe32(0x1234), NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 20000), 0);
	CHECK_EQ(f.syndrome, 0);
	REQUIRE_EQ(nu_poll(&b, 1, &f, 20000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(f.wqe_counter, 0);
	CHECK_EQ(f.byte_cnt, LEN);
	CHECK_EQ(f.imm, gdak_htobe32(0x1234));
	CHECK_MEM(dst, buf, LEN);

	nu_post_send(&a, MLX5_OPCODE_SEND, buf, LEN, gdak_mr_lkey(mr), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 20000), 0);
	CHECK_EQ(f.syndrome, 0);
	REQUIRE_EQ(nu_poll(&b, 1, &f, 20000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(f.wqe_counter, 1);	/* the WRITE_IMM took exactly one */
	CHECK_EQ(f.byte_cnt, LEN);
	CHECK_MEM(dst + 12288, buf, LEN);
	CHECK_EQ(nu_cqe_ready(&b, 1), 0);
	CHECK_EQ(gdak_qp_state(b.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
}

static void send_too_long(void)
{
	struct gdak_mlx5_cqe_fields f;
	struct gdak_qp_error e;
	struct nu_qp a, b;
	uint8_t *dst = buf + 16384;

	pair(&a, &b);
	memset(dst, 0, 16384);
	nu_post_recv(&b, dst, 1500, gdak_mr_lkey(mr));	/* fits the first packet only */
	nu_post_send(&a, MLX5_OPCODE_SEND, buf, LEN, gdak_mr_lkey(mr), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&b, 1, &f, 20000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_ERR);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	CHECK_EQ(f.wqe_counter, 0);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 20000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	CHECK_EQ(nu_wait_state(&b, GDAK_QPS_ERR, 20000), 0);
	CHECK_EQ(nu_wait_state(&a, GDAK_QPS_ERR, 20000), 0);
	memset(&e, 0, sizeof(e));
	CHECK_EQ(gdak_qp_query_error(b.qp, &e), 0);
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	CHECK(!strcmp(e.rule, "recv_too_small"));
	nu_destroy(&a);
	nu_destroy(&b);
}

int main(void)
{
	int r;

	gdak_set_log_level(GDAK_LOG_ERROR);
	r = gdak_open("emu:udp:127.0.0.1", &ctx);
	if (r) {
		fprintf(stderr, "emu:udp cannot open here (%s): skipped\n", gdak_strerror(r));
		return 77;
	}
	REQUIRE_EQ(gdak_mem_alloc(ctx, 32768, GDAK_MEM_HOST, (void **)&buf), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, 32768, GDAK_ACCESS_ALL, &mr), 0);
	send_fits_and_write_imm();
	send_too_long();
	CHECK_EQ(gdak_mr_dereg(mr), 0);
	CHECK_EQ(gdak_mem_free(ctx, buf), 0);
	gdak_close(ctx);
	return gdak_test_end();
}
