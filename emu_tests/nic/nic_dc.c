/* SPDX-License-Identifier: MIT */
/*
 * nic_dc.c - the Dynamically Connected transport on the NIC model, host
 * threads playing the device through gdak/dev/dc.h: one DCI reaches three
 * DCTs in two contexts (two PDs) with full and compact address vectors -
 * WRITE, READ, fetch-add, CAS, SEND, put+signal - data and CQEs checked
 * byte for byte, streams counted; then the error cases with ConnectX's
 * syndromes (wrong access key, no such DCT, DCT in ERR, AV naming another
 * LID, bad rkey at a DCT, an AV whose size the DS count contradicts), and
 * the host API's refusals.
 */
#include <errno.h>
#include <string.h>

#include <gdak/dev/dev.h>
#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "gdak_test.h"

#define T_NS 20000000000ull
#define LEN 200
#define NDCT 3

struct target {
	struct gdak_ctx *ctx;
	struct gdak_qp *dct;
	struct gdak_dev_qp *ddct;
	struct gdak_qp_info info;
	struct gdak_dev_av full, compact;
	uint8_t *mem; /* [0, LEN) data, [256, 264) atomic word, [512, 512 + LEN) receive */
	struct gdak_mr *mr;
};

static struct gdak_ctx *ctx_a, *ctx_b;
static struct target tg[NDCT];
static uint8_t *lmem; /* DCI side: source, READ landing, atomic results */
static struct gdak_mr *lmr;

static void target_new(struct target *t, struct gdak_ctx *ctx, uint64_t key, int rq)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCT, .dc_key = key, .rq_depth = rq ? 16 : 0 };

	t->ctx = ctx;
	CHECK_EQ(gdak_qp_create(ctx, &a, &t->dct), 0);
	CHECK_EQ(gdak_qp_type(t->dct), GDAK_QPT_DCT);
	CHECK_EQ(gdak_qp_connect(t->dct, NULL), 0);
	CHECK_EQ(gdak_qp_state(t->dct), GDAK_QPS_RTR);
	CHECK_EQ(gdak_qp_export(t->dct, &t->ddct), 0);
	CHECK_EQ(gdak_qp_info(t->dct, &t->info), 0);
	CHECK_EQ(t->info.qp_type, GDAK_QPT_DCT);
	CHECK_EQ(t->info.dc_key, key);
	CHECK_EQ(t->info.qpn, gdak_qp_num(t->dct));
	/* what a peer in another process gets: the packed record */
	{
		uint8_t w[GDAK_QP_INFO_WIRE_SIZE];
		struct gdak_qp_info back;

		gdak_qp_info_pack(&t->info, w);
		CHECK_EQ(gdak_qp_info_unpack(w, &back), 0);
		CHECK_EQ(back.dc_key, key);
		CHECK_EQ(back.qp_type, GDAK_QPT_DCT);
		CHECK_EQ(gdak_dc_av(&back, 0, &t->full), 0);
	}
	CHECK_EQ(gdak_dc_av(&t->info, 1, &t->compact), 0);
	CHECK_EQ(t->full.ds, 3);
	CHECK_EQ(t->compact.ds, 1);
	/* the bytes as rdma-core's struct mlx5_wqe_av names them */
	{
		struct mlx5_wqe_av f, c;

		memcpy(&f, t->full.words, sizeof(f));
		memcpy(&c, t->compact.words, 16);
		CHECK_EQ(gdak_be64toh(f.key.dc_key), key);
		CHECK_EQ(gdak_be32toh(f.dqp_dct), t->info.qpn | MLX5_EXTENDED_UD_AV);
		CHECK_EQ(gdak_be16toh(f.rlid), t->info.lid);
		CHECK_EQ(gdak_be32toh(f.grh_gid_fl), 1u << 30);
		CHECK_MEM(f.rgid, t->info.gid, 16);
		CHECK_EQ(gdak_be64toh(c.key.dc_key), key);
		CHECK_EQ(gdak_be32toh(c.dqp_dct), t->info.qpn);
		CHECK_EQ(gdak_be16toh(c.rlid), t->info.lid);
	}
	CHECK_EQ(gdak_mem_alloc(ctx, 1024, GDAK_MEM_HOST, (void **)&t->mem), 0);
	memset(t->mem, 0, 1024);
	CHECK_EQ(gdak_mr_reg(ctx, t->mem, 1024, GDAK_ACCESS_ALL, &t->mr), 0);
}

static void target_free(struct target *t)
{
	CHECK_EQ(gdak_qp_destroy(t->dct), 0);
	CHECK_EQ(gdak_mr_dereg(t->mr), 0);
	CHECK_EQ(gdak_mem_free(t->ctx, t->mem), 0);
}

static struct gdak_qp *dci_new(struct gdak_dev_qp **d, uint32_t streams)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCI, .sq_depth = 64, .dci_streams = streams };
	struct gdak_qp *q;

	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), 0);
	CHECK_EQ(gdak_qp_connect(q, NULL), 0);
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_RTS);
	CHECK_EQ(gdak_qp_export(q, d), 0);
	(*d)->max_inline = 64;
	return q;
}

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* Every operation to every DCT, full and compact AVs alternating, targets
 * interleaved so that the DCI's stream turns at every call. */
static void ops(void)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = dci_new(&d, 1);
	struct gdak_nic_dc_stats st;
	uint64_t t = 0, old = 0;

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < NDCT; i++) {
			struct target *x = &tg[i];
			const struct gdak_dev_av *av = (round + i) & 1 ? &x->compact : &x->full;
			struct gdak_dev_sge src = { va(lmem), LEN, gdak_mr_lkey(lmr) };
			struct gdak_dev_sge dst = { va(lmem + 2048), LEN, gdak_mr_lkey(lmr) };
			uint64_t *word = (uint64_t *)(void *)(x->mem + 256);
			uint64_t *res = (uint64_t *)(void *)(lmem + 4096);

			gdak_test_fill(lmem, LEN, (uint64_t)(round * 10 + i + 1));
			CHECK_EQ(gdak_dev_dc_put(d, av, &src, va(x->mem), gdak_mr_rkey(x->mr),
						 GDAK_DEV_WQE_SIGNAL, &t),
				 0);
			CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
			CHECK_MEM(x->mem, lmem, LEN);

			/* READ back what the WRITE put there */
			memset(lmem + 2048, 0, LEN);
			CHECK_EQ(gdak_dev_dc_get(d, av, &dst, va(x->mem), gdak_mr_rkey(x->mr), 0,
						 &t),
				 0);
			CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
			CHECK_MEM(lmem + 2048, lmem, LEN);

			/* fetch-add, then CAS that fails and one that succeeds */
			*word = 1000u * (unsigned)i;
			CHECK_EQ(gdak_dev_dc_fetch_add(d, av, va(word), gdak_mr_rkey(x->mr), 5, res,
						       gdak_mr_lkey(lmr), &old),
				 0);
			CHECK_EQ(old, 1000u * (unsigned)i);
			CHECK_EQ(*res,
				 gdak_htobe64(1000u * (unsigned)i)); /* big-endian, as ConnectX */
			CHECK_EQ(*word, 1000u * (unsigned)i + 5);
			CHECK_EQ(gdak_dev_dc_compare_swap(d, av, va(word), gdak_mr_rkey(x->mr), 1,
							  77, res, gdak_mr_lkey(lmr), &old),
				 0);
			CHECK_EQ(old, 1000u * (unsigned)i + 5);
			CHECK_EQ(*word, 1000u * (unsigned)i + 5);
			CHECK_EQ(gdak_dev_dc_compare_swap(d, av, va(word), gdak_mr_rkey(x->mr),
							  1000u * (unsigned)i + 5, 77, res,
							  gdak_mr_lkey(lmr), &old),
				 0);
			CHECK_EQ(*word, 77);
		}
	}
	/* every call named another DCT than the one before it: the stream
	 * turned each time (12 targets x 4 operations, 3 DCTs in turn) */
	CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
	CHECK_EQ(st.connects, 4 * NDCT);
	CHECK_EQ(st.disconnects, 4 * NDCT - 1);
	CHECK_EQ(st.open_streams, 1);

	/* SEND: the DCT with a receive queue consumes a receive WQE */
	{
		struct target *x = &tg[2];
		struct gdak_dev_sge rs = { va(x->mem + 512), LEN, gdak_mr_lkey(x->mr) };
		struct gdak_dev_sge src = { va(lmem), 150, gdak_mr_lkey(lmr) };
		struct gdak_dev_cqe c = { 0 };
		static const char msg[] = "inline hello to a DCT";

		CHECK_EQ(gdak_dev_recv_post(x->ddct, &rs, 1), 0);
		CHECK_EQ(gdak_dev_recv_post(x->ddct, &rs, 1), 0);
		gdak_test_fill(lmem, 150, 99);
		CHECK_EQ(gdak_dev_dc_send(d, &x->full, &src, GDAK_DEV_WQE_SIGNAL, &t), 0);
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
		CHECK_EQ(gdak_dev_recv_wait_timeout(x->ddct, &c, T_NS), 0);
		CHECK_EQ(c.opcode, MLX5_CQE_RESP_SEND);
		CHECK_EQ(c.byte_cnt, 150);
		CHECK_EQ(c.qpn, gdak_qp_num(x->dct));
		CHECK_EQ(c.wqe_index, 0);
		CHECK_MEM(x->mem + 512, lmem, 150);
		CHECK_EQ(gdak_dev_dc_send_inline(d, &x->compact, msg, sizeof(msg), 0, &t), 0);
		CHECK_EQ(gdak_dev_quiet_timeout(d, T_NS, NULL), 0);
		CHECK_EQ(gdak_dev_recv_wait_timeout(x->ddct, &c, T_NS), 0);
		CHECK_EQ(c.byte_cnt, sizeof(msg));
		CHECK_EQ(c.wqe_index, 1);
		CHECK_MEM(x->mem + 512, msg, sizeof(msg));
	}

	/* put+signal to the DCT in the other context: the signal follows the data */
	{
		struct target *x = &tg[1];
		struct gdak_dev_sge src = { va(lmem), LEN, gdak_mr_lkey(lmr) };
		uint64_t *sig = (uint64_t *)(void *)(x->mem + 264);

		*sig = 0;
		memset(x->mem, 0, LEN);
		gdak_test_fill(lmem, LEN, 1234);
		CHECK_EQ(gdak_dev_dc_put_signal(d, &x->full, &src, va(x->mem), gdak_mr_rkey(x->mr),
						va(sig), gdak_mr_rkey(x->mr), 3, 0, &t),
			 0);
		CHECK_EQ(gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_GE, 3, T_NS, &old), 0);
		CHECK_MEM(x->mem, lmem, LEN);
		CHECK_EQ(gdak_dev_dc_put_signal(d, &x->compact, &src, va(x->mem + 300),
						gdak_mr_rkey(x->mr), va(sig), gdak_mr_rkey(x->mr),
						4, 0, &t),
			 0);
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
		CHECK_EQ(*sig, 7);
		CHECK_MEM(x->mem + 300, lmem, LEN);
	}
	/* put_inline and several WQEs back to back to one DCT (no stream turn) */
	{
		struct target *x = &tg[0];
		uint64_t before;

		CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
		before = st.connects;
		for (int i = 0; i < 100; i++) {
			uint32_t v = (uint32_t)i * 3u;

			CHECK_EQ(gdak_dev_dc_put_inline(d, &x->compact, &v, 4,
							va(x->mem + 4 * (i % 50)),
							gdak_mr_rkey(x->mr), 0, &t),
				 0);
		}
		CHECK_EQ(gdak_dev_quiet_timeout(d, T_NS, NULL), 0);
		for (int i = 50; i < 100; i++) {
			uint32_t v;

			memcpy(&v, x->mem + 4 * (i % 50), 4);
			CHECK_EQ(v, (uint32_t)i * 3u);
		}
		CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
		CHECK_EQ(st.connects, before + 1);
	}
	/* the DCTs were never disturbed */
	for (int i = 0; i < NDCT; i++) {
		CHECK_EQ(gdak_nic_dc_stats(tg[i].dct, &st), 0);
		CHECK_EQ(st.key_violations, 0);
		CHECK_EQ(gdak_qp_state(tg[i].dct), GDAK_QPS_RTR);
	}
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

/* One WRITE on a fresh DCI with av; expects an error CQE with synd and the
 * rule. */
static void expect_fail(const struct gdak_dev_av *av, uint32_t rkey, uint8_t synd, const char *rule)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = dci_new(&d, 1);
	struct gdak_dev_sge src = { va(lmem), 64, gdak_mr_lkey(lmr) };
	struct gdak_dev_cqe c;
	struct gdak_qp_error e;
	uint64_t t = 0;

	memset(&c, 0, sizeof(c));
	CHECK_EQ(gdak_dev_dc_put(d, av, &src, va(tg[0].mem), rkey, GDAK_DEV_WQE_SIGNAL, &t), 0);
	CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, &c), -EIO);
	CHECK_EQ(c.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(c.syndrome, synd);
	CHECK_EQ(c.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(c.wqe_index, 0);
	CHECK_EQ(gdak_qp_query_error(q, &e), 0);
	CHECK_EQ(e.state, GDAK_QPS_ERR);
	CHECK_EQ(e.syndrome, synd);
	CHECK_STR(e.rule, rule);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

static void errors(void)
{
	struct gdak_nic_dc_stats st;
	struct gdak_dev_av bad;
	struct gdak_qp_info info;

	/* wrong access key: the DCT drops the connect and counts it */
	info = tg[0].info;
	info.dc_key ^= 1;
	CHECK_EQ(gdak_dc_av(&info, 0, &bad), 0);
	expect_fail(&bad, gdak_mr_rkey(tg[0].mr), MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		    "dc_key_violation");
	CHECK_EQ(gdak_nic_dc_stats(tg[0].dct, &st), 0);
	CHECK_EQ(st.key_violations, 1);
	CHECK_EQ(gdak_qp_state(tg[0].dct), GDAK_QPS_RTR);

	/* no such DCT: a number nothing has, and an RC QP's number */
	info = tg[0].info;
	info.qpn = 0xfffffe;
	CHECK_EQ(gdak_dc_av(&info, 1, &bad), 0);
	expect_fail(&bad, gdak_mr_rkey(tg[0].mr), MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		    "dc_no_dct");
	{
		struct gdak_qp *rc;

		CHECK_EQ(gdak_qp_create(ctx_a, NULL, &rc), 0);
		info.qpn = gdak_qp_num(rc);
		CHECK_EQ(gdak_dc_av(&info, 0, &bad), 0);
		expect_fail(&bad, gdak_mr_rkey(tg[0].mr), MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
			    "dc_no_dct");
		CHECK_EQ(gdak_qp_destroy(rc), 0);
	}

	/* an AV naming the DCT at another LID */
	info = tg[0].info;
	info.lid ^= 0x100;
	CHECK_EQ(gdak_dc_av(&info, 1, &bad), 0);
	expect_fail(&bad, gdak_mr_rkey(tg[0].mr), MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		    "dc_av_target");

	/* a bad rkey at a DCT: REMOTE_ACCESS_ERR as on RC, the DCT stays up */
	expect_fail(&tg[0].full, gdak_mr_rkey(tg[0].mr) ^ 0x100,
		    MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, "bad_rkey");
	CHECK_EQ(gdak_qp_state(tg[0].dct), GDAK_QPS_RTR);

	/* an AV that claims the full form in a WQE sized for the compact one */
	bad = tg[0].compact;
	((uint8_t *)bad.words)[8] |= 0x80;
	expect_fail(&bad, gdak_mr_rkey(tg[0].mr), MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "bad_ds");

	/* the DCT in ERR answers nothing */
	CHECK_EQ(gdak_qp_modify(tg[0].dct, GDAK_QPS_ERR, NULL), 0);
	expect_fail(&tg[0].full, gdak_mr_rkey(tg[0].mr), MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		    "dc_dct_state");
	/* ... and works again after RESET -> RTR */
	CHECK_EQ(gdak_qp_modify(tg[0].dct, GDAK_QPS_RESET, NULL), 0);
	CHECK_EQ(gdak_qp_connect(tg[0].dct, NULL), 0);
	{
		struct gdak_dev_qp *d;
		struct gdak_qp *q = dci_new(&d, 2);
		struct gdak_dev_sge src = { va(lmem), 64, gdak_mr_lkey(lmr) };
		uint64_t t = 0;

		gdak_test_fill(lmem, 64, 4242);
		CHECK_EQ(gdak_dev_dc_put(d, &tg[0].full, &src, va(tg[0].mem),
					 gdak_mr_rkey(tg[0].mr), GDAK_DEV_WQE_SIGNAL, &t),
			 0);
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
		CHECK_MEM(tg[0].mem, lmem, 64);
		CHECK_EQ(gdak_qp_destroy(q), 0);
	}
}

static void refusals(void)
{
	struct gdak_qp_attr a;
	struct gdak_qp *q = NULL, *rc;
	struct gdak_qp_info info;
	struct gdak_dev_av av;

	a = (struct gdak_qp_attr){ .dc_key = 5 };
	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -EINVAL); /* a key on an RC QP */
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI, .dci_streams = 3 };
	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -EINVAL);
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI, .dci_streams = 32 };
	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -EINVAL);
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI, .rq_depth = 4 };
	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -EINVAL);
	a = (struct gdak_qp_attr){ .type = 7 };
	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -EINVAL);
	CHECK(q == NULL);

	/* a DCT stops at RTR; a DC QP connects to nobody */
	CHECK_EQ(gdak_qp_modify(tg[1].dct, GDAK_QPS_RTS, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_create(ctx_a, NULL, &rc), 0);
	CHECK_EQ(gdak_qp_info(rc, &info), 0);
	CHECK_EQ(info.qp_type, GDAK_QPT_RC);
	CHECK_EQ(gdak_dc_av(&info, 0, &av), -EINVAL); /* not a DCT */
	CHECK_EQ(gdak_qp_connect(rc, NULL), -EINVAL);
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI };
	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), 0);
	CHECK_EQ(gdak_qp_connect(q, &info), -EINVAL);
	CHECK_EQ(gdak_qp_destroy(q), 0);
	CHECK_EQ(gdak_qp_destroy(rc), 0);
}

int main(void)
{
	CHECK_EQ(gdak_open("emu", &ctx_a), 0);
	CHECK_EQ(gdak_open("emu", &ctx_b), 0);
	CHECK_EQ(gdak_mem_alloc(ctx_a, 8192, GDAK_MEM_HOST, (void **)&lmem), 0);
	CHECK_EQ(gdak_mr_reg(ctx_a, lmem, 8192, GDAK_ACCESS_ALL, &lmr), 0);
	target_new(&tg[0], ctx_a, 0x1111222233334444ull, 0);
	target_new(&tg[1], ctx_b, 0xdc, 0);
	target_new(&tg[2], ctx_b, 0, 1);

	ops();
	errors();
	refusals();

	for (int i = 0; i < NDCT; i++)
		target_free(&tg[i]);
	CHECK_EQ(gdak_mr_dereg(lmr), 0);
	CHECK_EQ(gdak_mem_free(ctx_a, lmem), 0);
	gdak_close(ctx_b);
	gdak_close(ctx_a);
	return gdak_test_end();
}
