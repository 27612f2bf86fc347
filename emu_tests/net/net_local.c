/* SPDX-License-Identifier: MIT */
/*
 * net_local.c - gdak.net.udp_local: the udp transport between two QPs of
 * one process, where packets go through the peer's in-process inbox
 * (nic_model/tr_udp_local.c) instead of the kernel:
 *  - WRITE (1 and several packets, 64 KiB), READ, FETCH_ADD, SEND_IMM:
 *    bytes, values and CQEs exact; every packet of both QPs went through
 *    the inbox (tx_local == tx_pkts); the same again on two NIC threads
 *    (the QPs on different threads: cross-thread wakeups);
 *  - GDAK_UDP_LOCAL=0: the same operations, no packet through the inbox;
 *  - a window larger than the inbox (GDAK_UDP_WINDOW=256, MTU 256): a full
 *    inbox makes the sender wait, nothing is lost;
 *  - drop + duplicate + reorder + corrupt injected: every operation
 *    completes once with exact data, retransmissions and ICRC drops seen;
 *  - the peer QP destroyed: the sender's WRITE ends in TRANSPORT_RETRY_EXC
 *    (its packets are lost, as on a wire to a closed port), no crash;
 *  - GDAK_UDP_LOCAL=2: gdak_open fails with -EINVAL.
 * Exits 77 when the udp transport cannot open (no loopback sockets).
 */
#include <errno.h>
#include <stdlib.h>

#include "gdak_test.h"
#include "nic_util.h"
#include "tr_udp.h"

#define BUF (1u << 20)
#define SRC 0		/* [0, 256K) source */
#define DST (256u << 10) /* [256K, 512K) target / receive */
#define RD (512u << 10)	/* [512K, 768K) READ landing */
#define CNT (1000u << 10) /* an 8-byte counter */
#define POLL_MS 30000

struct env {
	struct gdak_ctx *ctx;
	uint8_t *buf;
	struct gdak_mr *mr;
};

static int env_open(struct env *e)
{
	int r = gdak_open("emu:udp:127.0.0.1", &e->ctx);

	if (r)
		return r;
	REQUIRE_EQ(gdak_mem_alloc(e->ctx, BUF, GDAK_MEM_HOST, (void **)&e->buf), 0);
	REQUIRE_EQ(gdak_mr_reg(e->ctx, e->buf, BUF, GDAK_ACCESS_ALL, &e->mr), 0);
	return 0;
}

static void env_close(struct env *e)
{
	CHECK_EQ(gdak_mr_dereg(e->mr), 0);
	CHECK_EQ(gdak_mem_free(e->ctx, e->buf), 0);
	gdak_close(e->ctx);
}

static void pair(struct env *e, uint32_t mtu, struct nu_qp *a, struct nu_qp *b)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .rq_depth = 16, .rq_max_sge = 1,
				  .rcq_depth = 16, .mtu = mtu};

	REQUIRE_EQ(nu_pair(e->ctx, &at, a, b), 0);
}

static void expect_ok(struct nu_qp *q, uint16_t idx)
{
	nu_ring_expect_ok(q, idx, POLL_MS);
}

static void fill(uint8_t *p, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31 + seed * 7 + (i >> 8));
}

/* Every operation once (reps times), data and CQEs checked. */
static void ops(struct env *e, struct nu_qp *a, struct nu_qp *b, unsigned reps)
{
	static const uint32_t lens[] = {8, 3000, 65536};
	uint8_t *src = e->buf + SRC, *dst = e->buf + DST;
	uint32_t lk = gdak_mr_lkey(e->mr), rk = gdak_mr_rkey(e->mr);
	uint64_t *cnt = (uint64_t *)(void *)(e->buf + CNT), before, old;
	struct gdak_mlx5_cqe_fields f;

	for (unsigned r = 0; r < reps; r++) {
		for (unsigned i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			fill(src, lens[i], r * 3 + i);
			memset(dst, 0, lens[i]);
			expect_ok(a, nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, src, lens[i], lk,
						  (uintptr_t)dst, rk, 0, NU_SIG));
			CHECK_MEM(dst, src, lens[i]);
		}
		/* READ back what the last WRITE left */
		memset(e->buf + RD, 0, 65536);
		expect_ok(a, nu_post_rdma(a, MLX5_OPCODE_RDMA_READ, e->buf + RD, 65536, lk,
					  (uintptr_t)dst, rk, 0, NU_SIG));
		CHECK_MEM(e->buf + RD, src, 65536);
		/* FETCH_ADD: the original value comes back big-endian */
		before = *cnt;
		expect_ok(a, nu_post_atomic(a, MLX5_OPCODE_ATOMIC_FA, e->buf + RD, lk,
					    (uintptr_t)cnt, rk, 5, 0, NU_SIG));
		memcpy(&old, e->buf + RD, 8);
		CHECK_EQ(gdak_be64toh(old), before);
		CHECK_EQ(*cnt, before + 5);
		/* SEND_IMM of three packets at MTU 1024 */
		fill(src, 3000, r + 11);
		nu_post_recv(b, dst, 4096, lk);
		expect_ok(a, nu_post_send(a, MLX5_OPCODE_SEND_IMM, src, 3000, lk,
					  gdak_htobe32(0xabc0 + r), NU_SIG));
		REQUIRE_EQ(nu_poll(b, 1, &f, POLL_MS), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND_IMM);
		CHECK_EQ(f.byte_cnt, 3000);
		CHECK_EQ(f.imm, gdak_htobe32(0xabc0 + r));
		CHECK_MEM(dst, src, 3000);
	}
}

static void stats(struct nu_qp *q, struct roce_stats *st)
{
	memset(st, 0, sizeof(*st));
	REQUIRE_EQ(nm_tr_udp_qp_stats(q->qp, st), 0);
}

static void local_ops(unsigned nic_threads)
{
	struct roce_stats sa, sb;
	struct nu_qp a, b;
	struct env e;

	REQUIRE_EQ(gdak_nic_set_threads(nic_threads), 0);
	REQUIRE_EQ(env_open(&e), 0);
	pair(&e, 1024, &a, &b);
	ops(&e, &a, &b, 3);
	stats(&a, &sa);
	stats(&b, &sb);
	CHECK(sa.tx_pkts > 0 && sb.tx_pkts > 0);
	CHECK_EQ(sa.tx_local, sa.tx_pkts);
	CHECK_EQ(sb.tx_local, sb.tx_pkts);
	CHECK_EQ(sa.retransmits + sb.retransmits, 0);
	CHECK_EQ(sa.icrc_errors + sb.icrc_errors, 0);
	printf("local, %u NIC thread(s): tx %llu / %llu packets through the inbox\n", nic_threads,
	       (unsigned long long)sa.tx_local, (unsigned long long)sb.tx_local);
	nu_destroy(&a);
	nu_destroy(&b);
	env_close(&e);
	REQUIRE_EQ(gdak_nic_set_threads(1), 0);
}

static void kernel_ops(void)
{
	struct roce_stats sa, sb;
	struct nu_qp a, b;
	struct env e;

	setenv("GDAK_UDP_LOCAL", "0", 1);
	REQUIRE_EQ(env_open(&e), 0);
	unsetenv("GDAK_UDP_LOCAL");
	pair(&e, 1024, &a, &b);
	ops(&e, &a, &b, 1);
	stats(&a, &sa);
	stats(&b, &sb);
	CHECK(sa.tx_pkts > 0 && sb.tx_pkts > 0);
	CHECK_EQ(sa.tx_local + sb.tx_local, 0);
	nu_destroy(&a);
	nu_destroy(&b);
	env_close(&e);
}

/* 256 packets in flight against a 64-slot inbox. */
static void inbox_full(void)
{
	uint32_t lk, rk;
	struct roce_stats sa;
	struct nu_qp a, b;
	struct env e;

	setenv("GDAK_UDP_WINDOW", "256", 1);
	REQUIRE_EQ(env_open(&e), 0);
	unsetenv("GDAK_UDP_WINDOW");
	lk = gdak_mr_lkey(e.mr);
	rk = gdak_mr_rkey(e.mr);
	pair(&e, 256, &a, &b);
	fill(e.buf + SRC, 65536, 42);
	memset(e.buf + DST, 0, 65536);
	expect_ok(&a, nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, e.buf + SRC, 65536, lk,
				   (uintptr_t)(e.buf + DST), rk, 0, NU_SIG));
	CHECK_MEM(e.buf + DST, e.buf + SRC, 65536);
	stats(&a, &sa);
	CHECK(sa.tx_pkts >= 256);
	CHECK_EQ(sa.tx_local, sa.tx_pkts);
	CHECK_EQ(sa.retransmits, 0);
	/* both QPs on the one NIC thread: the sender fills the inbox before
	 * the receiver's turn, so it must have been told to wait */
	if (gdak_nic_get_threads() == 1)
		CHECK(sa.xmit_busy > 0);
	nu_destroy(&a);
	nu_destroy(&b);
	env_close(&e);
}

static void faults(void)
{
	struct roce_stats sa, sb;
	struct nu_qp a, b;
	struct env e;

	setenv("GDAK_FAULTS", "pkt_drop:p=4%,seed=3;pkt_dup:p=4%,seed=4;pkt_reorder:p=4%,seed=5;"
	       "pkt_corrupt:p=2%,seed=6", 1);
	setenv("GDAK_UDP_RETRY", "forever", 1);
	REQUIRE_EQ(env_open(&e), 0);
	unsetenv("GDAK_FAULTS");
	unsetenv("GDAK_UDP_RETRY");
	pair(&e, 1024, &a, &b);
	ops(&e, &a, &b, 6);
	stats(&a, &sa);
	stats(&b, &sb);
	CHECK(sa.f_drop + sb.f_drop > 0);
	CHECK(sa.retransmits > 0);
	CHECK(sa.icrc_errors + sb.icrc_errors > 0);
	CHECK(sa.tx_local > 0 && sb.tx_local > 0);
	printf("faults: %llu/%llu dropped, %llu retransmitted, %llu ICRC drops\n",
	       (unsigned long long)sa.f_drop, (unsigned long long)sb.f_drop,
	       (unsigned long long)sa.retransmits,
	       (unsigned long long)(sa.icrc_errors + sb.icrc_errors));
	nu_destroy(&a);
	nu_destroy(&b);
	env_close(&e);
}

static void peer_gone(void)
{
	struct gdak_mlx5_cqe_fields f = {0};
	struct nu_qp a, b;
	struct env e;

	setenv("GDAK_UDP_RTO_US", "20000", 1);
	setenv("GDAK_UDP_RETRY", "1", 1);
	REQUIRE_EQ(env_open(&e), 0);
	unsetenv("GDAK_UDP_RTO_US");
	unsetenv("GDAK_UDP_RETRY");
	pair(&e, 1024, &a, &b);
	expect_ok(&a, nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, e.buf + SRC, 8, gdak_mr_lkey(e.mr),
				   (uintptr_t)(e.buf + DST), gdak_mr_rkey(e.mr), 0, NU_SIG));
	nu_destroy(&b);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, e.buf + SRC, 3000, gdak_mr_lkey(e.mr),
		     (uintptr_t)(e.buf + DST), gdak_mr_rkey(e.mr), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(f.wqe_counter, 1);
	CHECK_EQ(nu_wait_state(&a, GDAK_QPS_ERR, POLL_MS), 0);
	nu_destroy(&a);
	env_close(&e);
}

static void bad_env(void)
{
	struct gdak_ctx *ctx = NULL;

	setenv("GDAK_UDP_LOCAL", "2", 1);
	CHECK_EQ(gdak_open("emu:udp:127.0.0.1", &ctx), -EINVAL);
	unsetenv("GDAK_UDP_LOCAL");
	if (ctx)
		gdak_close(ctx);
}

int main(void)
{
	struct env e;
	int r;

	gdak_set_log_level(GDAK_LOG_ERROR);
	unsetenv("GDAK_UDP_LOCAL");
	unsetenv("GDAK_FAULTS");
	r = env_open(&e);
	if (r) {
		fprintf(stderr, "emu:udp cannot open here (%s): skipped\n", gdak_strerror(r));
		return 77;
	}
	env_close(&e);
	local_ops(1);
	local_ops(2);
	kernel_ops();
	inbox_full();
	faults();
	peer_gone();
	bad_env();
	return gdak_test_end();
}
