/* SPDX-License-Identifier: MIT */
/*
 * nic_ops.c - every operation between two QPs through the loop transport:
 * RDMA_READ, RDMA_WRITE_IMM (consumes a receive WQE, RESP_WR_IMM CQE),
 * SEND / SEND_IMM (inline and gathered), ATOMIC_FA / ATOMIC_CS (original
 * value returned big-endian, as ConnectX does), put+signal then wait on the
 * signal word, a fenced WRITE after a READ, NOP; bytes and CQE fields checked.
 */
#include <sched.h>

#include "gdak_case.h"
#include "gdak_test.h"
#include "nic_util.h"

#define BUF (256u * 1024)

static struct gdak_ctx *ctx;
static uint8_t *la, *lb;	/* A's and B's buffers */
static struct gdak_mr *ma, *mb;
static struct nu_qp a, b;

static void expect_req(struct nu_qp *q, uint16_t idx, uint32_t bytes)
{
	struct gdak_mlx5_cqe_fields f;
	REQUIRE_EQ(nu_poll(q, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, idx);
	CHECK_EQ(f.byte_cnt, bytes);
}

static void test_read(void)
{
	for (uint32_t len = 1; len <= BUF / 2; len = len * 4 + 1) {
		uint16_t idx;
		gdak_test_fill(lb, len, len);
		memset(la, 0, len);
		idx = nu_post_rdma(&a, MLX5_OPCODE_RDMA_READ, la, len, gdak_mr_lkey(ma), (uintptr_t)lb,
				   gdak_mr_rkey(mb), 0, NU_SIG);
		nu_ring(&a);
		expect_req(&a, idx, len);
		CHECK_MEM(la, lb, len);
	}
}

static void test_write_imm(void)
{
	struct gdak_mlx5_cqe_fields f;
	uint16_t idx;

	gdak_test_fill(la, 4000, 77);
	memset(lb + 8192, 0, 4000);
	nu_post_recv(&b, NULL, 0, MLX5_INVALID_LKEY);
	idx = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE_IMM, la, 4000, gdak_mr_lkey(ma),
			   (uintptr_t)(lb + 8192), gdak_mr_rkey(mb), gdak_htobe32(0xdeadbeef), NU_SIG);
	nu_ring(&a);
	expect_req(&a, idx, 4000);
	REQUIRE_EQ(nu_poll(&b, 1, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(f.byte_cnt, 4000);
	CHECK_EQ(gdak_be32toh(f.imm), 0xdeadbeef);
	CHECK_EQ(f.qpn, b.qpn);
	CHECK_EQ(f.wqe_counter, 0);
	CHECK_MEM(lb + 8192, la, 4000);
}

static void test_send(void)
{
	struct gdak_mlx5_cqe_fields f;
	uint16_t idx;

	/* plain SEND, several sizes, receive WQE index counts up */
	for (unsigned i = 0; i < 20; i++) {
		uint32_t len = 1 + i * 997;
		gdak_test_fill(la, len, i);
		memset(lb, 0xee, len + 1);
		nu_post_recv(&b, lb, len + 100, gdak_mr_lkey(mb));
		idx = nu_post_send(&a, i & 1 ? MLX5_OPCODE_SEND_IMM : MLX5_OPCODE_SEND, la, len,
				   gdak_mr_lkey(ma), gdak_htobe32(i), NU_SIG);
		nu_ring(&a);
		expect_req(&a, idx, len);
		REQUIRE_EQ(nu_poll(&b, 1, &f, 5000), 0);
		CHECK_EQ(f.opcode, i & 1 ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND);
		CHECK_EQ(f.byte_cnt, len);
		CHECK_EQ(f.wqe_counter, (uint16_t)(b.rq_pi - 1));
		if (i & 1)
			CHECK_EQ(gdak_be32toh(f.imm), i);
		CHECK_MEM(lb, la, len);
		CHECK_EQ(lb[len], 0xee); /* nothing past the message */
	}
	/* inline SEND */
	memcpy(la, "hello, responder", 16);
	nu_post_recv(&b, lb + 100, 64, gdak_mr_lkey(mb));
	idx = nu_post_send(&a, MLX5_OPCODE_SEND, la, 16, 0, 0, NU_SIG | NU_INLINE);
	nu_ring(&a);
	expect_req(&a, idx, 16);
	REQUIRE_EQ(nu_poll(&b, 1, &f, 5000), 0);
	CHECK_EQ(f.byte_cnt, 16);
	CHECK_MEM(lb + 100, "hello, responder", 16);
}

/* One signalled atomic on target, its old value into res: target is then
 * want and res holds old, big-endian. */
static void atomic_step(uint64_t *target, uint64_t *res, uint8_t opcode, uint64_t swap_add,
			uint64_t compare, uint64_t want, uint64_t old)
{
	uint16_t idx = nu_post_atomic(&a, opcode, res, gdak_mr_lkey(ma), (uintptr_t)target,
				      gdak_mr_rkey(mb), swap_add, compare, NU_SIG);

	nu_ring(&a);
	expect_req(&a, idx, 8);
	CHECK_EQ(*target, want);
	CHECK_EQ(*res, gdak_htobe64(old));
	CHECK_EQ(gdak_be64toh(*res), old);
}

static void test_atomics(void)
{
	uint64_t *target = (uint64_t *)(void *)(lb + 4096);
	uint64_t *res = (uint64_t *)(void *)(la + 4096);

	*target = 1000;
	atomic_step(target, res, MLX5_OPCODE_ATOMIC_FA, 5, 0, 1005, 1000);
	/* compare-swap that fails, then one that succeeds */
	atomic_step(target, res, MLX5_OPCODE_ATOMIC_CS, 42, 999, 1005, 1005);
	atomic_step(target, res, MLX5_OPCODE_ATOMIC_CS, 42, 1005, 42, 1005);

	/* 1000 unsignalled fetch-adds then a signalled one: all applied once */
	*target = 0;
	for (unsigned i = 0; i < 1000; i++) {
		nu_post_atomic(&a, MLX5_OPCODE_ATOMIC_FA, res, gdak_mr_lkey(ma), (uintptr_t)target,
			       gdak_mr_rkey(mb), 3, 0, i == 999 ? NU_SIG : 0);
		if (i % 8 == 7)
			nu_ring(&a);
		if (i % 64 == 63 || i == 999) {
			struct gdak_mlx5_cqe_fields f;
			/* keep the ring from overflowing: a signalled NOP as a fence point */
			if (i != 999) {
				nu_post_nop(&a, NU_SIG);
			}
			nu_ring(&a);
			REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
			CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		}
	}
	CHECK_EQ(*target, 3000);
	CHECK_EQ(gdak_be64toh(*res), 2997);
}

/* put + signal (write, then fetch-add on a flag), the peer waits on the flag */
static void test_put_signal(void)
{
	volatile uint64_t *flag = (volatile uint64_t *)(void *)(lb + 16384);
	uint64_t *res = (uint64_t *)(void *)(la + 16384);
	uint64_t t0;

	*flag = 0;
	gdak_test_fill(la, 8192, 5);
	memset(lb + 32768, 0, 8192);
	for (unsigned k = 1; k <= 8; k++) {
		nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, la + (k - 1) * 1024, 1024, gdak_mr_lkey(ma),
			     (uintptr_t)(lb + 32768 + (k - 1) * 1024), gdak_mr_rkey(mb), 0, 0);
		nu_post_atomic(&a, MLX5_OPCODE_ATOMIC_FA, res, gdak_mr_lkey(ma), (uintptr_t)flag,
			       gdak_mr_rkey(mb), 1, 0, k == 8 ? NU_SIG : 0);
		nu_ring(&a);
		t0 = gdak_test_now_ns();
		while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < k &&
		       gdak_test_now_ns() - t0 < 5000000000ull)
			sched_yield();
		REQUIRE_EQ(*flag, k);
		/* RC ordering: the data is there when the signal is */
		CHECK_MEM(lb + 32768 + (k - 1) * 1024, la + (k - 1) * 1024, 1024);
	}
	{
		struct gdak_mlx5_cqe_fields f;
		REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	}
}

/* READ remote X into L, fenced WRITE of L to remote Y: Y must hold X. */
static void test_fence(void)
{
	struct gdak_mlx5_cqe_fields f;
	uint16_t idx;

	gdak_test_fill(lb + 65536, 4096, 99);
	memset(la + 65536, 0, 4096);
	memset(lb + 131072, 0, 4096);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_READ, la + 65536, 4096, gdak_mr_lkey(ma),
		     (uintptr_t)(lb + 65536), gdak_mr_rkey(mb), 0, 0);
	idx = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, la + 65536, 4096, gdak_mr_lkey(ma),
			   (uintptr_t)(lb + 131072), gdak_mr_rkey(mb), 0, NU_SIG | NU_FENCE);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, idx);
	CHECK_MEM(lb + 131072, lb + 65536, 4096);
}

static void test_nop(void)
{
	uint16_t idx = nu_post_nop(&a, NU_SIG);
	nu_ring(&a);
	expect_req(&a, idx, 0);
}

static const struct gdak_case cases[] = {
	GDAK_CASE(test_read),	 GDAK_CASE(test_write_imm),  GDAK_CASE(test_send),
	GDAK_CASE(test_atomics), GDAK_CASE(test_put_signal), GDAK_CASE(test_fence),
	GDAK_CASE(test_nop),
};

int main(int argc, char **argv)
{
	struct gdak_qp_attr attr = {.sq_depth = 256, .rq_depth = 64};
	struct gdak_nic_stats st;

	REQUIRE_EQ(gdak_open("emu:loop", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF, GDAK_MEM_HOST, (void **)&la), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF, GDAK_MEM_HOST, (void **)&lb), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, la, BUF, GDAK_ACCESS_ALL, &ma), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, lb, BUF, GDAK_ACCESS_ALL, &mb), 0);
	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	GDAK_TEST_RUN_CASES(argc, argv, cases);
	REQUIRE_EQ(gdak_nic_qp_stats(a.qp, &st), 0);
	CHECK_EQ(st.errors, 0);
	CHECK_EQ(st.violations, 0);
	REQUIRE_EQ(gdak_nic_qp_stats(b.qp, &st), 0);
	if (gdak_test_all_cases)
		CHECK_EQ(st.recvs, 22);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	CHECK_EQ(gdak_qp_state(b.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(ma);
	gdak_mr_dereg(mb);
	gdak_close(ctx);
	return gdak_test_end();
}
