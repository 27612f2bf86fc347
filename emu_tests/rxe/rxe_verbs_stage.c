/* SPDX-License-Identifier: MIT */
/*
 * rxe_verbs_stage.c - gdak.rxe.verbs_stage: the verbs transport's bounce
 * buffers (nic_model/tr_verbs_stage.c), the path GPU memory takes where the
 * device cannot register it through dma-buf (rxe never can), exercised
 * without a GPU: context A is opened with GDAK_VERBS_STAGE=all (the test
 * hook: host memory handled as GPU memory without dma-buf) and
 * GDAK_VERBS_BOUNCE=4096, context B normally; their QPs on rxe0 connect.
 *
 * A's buffer is registered for local access only (so no verbs MR exists
 * for it: every byte must pass through the bounce rings), B's for all.
 *   A -> B  WRITE of 1 .. 70000 bytes (one-off bounce past 4096), two
 *           segments, eight WRITEs under one doorbell (ring full, wraps);
 *           READ the same sizes and batched; fetch-add / compare-swap with
 *           the result staged; SEND into B's receive;
 *   B -> A  SEND into A's staged receive WQEs (two segments each, four
 *           posted at once: the receive ring fills), 100 .. 12000 bytes;
 *           (a WRITE_IMM into A cannot be: A has no remote-access memory)
 * every byte verified.  Errors: A cannot register memory for remote access
 * (-EOPNOTSUPP), a bad GDAK_VERBS_STAGE / GDAK_VERBS_BOUNCE fails
 * gdak_open, and a staged WRITE to a wrong rkey among others in flight is
 * REMOTE_ACCESS_ERR, after which a reset and reconnect find the bounce
 * rings whole.
 * Skips (77) without a verbs device (the host here; the rxe guest has one).
 */
#include <stdlib.h>

#include <gdak/nic.h>

#include "rxe_util.h"

#define ALEN (256u << 10)
#define BLEN (256u << 10)

static struct rx A, B;
static uint8_t *abuf, *bbuf;
static struct gdak_mr *amr, *bmr;

static uint64_t a_at(uint32_t off) { return (uint64_t)(uintptr_t)(abuf + off); }
static uint64_t b_at(uint32_t off) { return (uint64_t)(uintptr_t)(bbuf + off); }

/* n WRITEs (read: READs) of len bytes under one doorbell, A's k-th segment
 * at a_off + k * a_step, B's at b_off + k * b_step, pattern seed + k; the
 * destination cleared first and every byte verified after. */
static void batch(int read, int n, uint32_t len, uint32_t a_off, uint32_t a_step, uint32_t b_off,
		  uint32_t b_step, uint32_t seed)
{
	uint32_t nbb = gdak_dev_wqe_bbs_sge(1, 1);
	uint8_t *src = read ? bbuf + b_off : abuf + a_off,
		*dst = read ? abuf + a_off : bbuf + b_off;
	uint32_t src_step = read ? b_step : a_step, dst_step = read ? a_step : b_step;
	struct gdak_dev_cqe err;
	int64_t first = -1, i = -1;

	memset(dst, 0, (size_t)dst_step * (uint32_t)n);
	for (int k = 0; k < n; k++) {
		struct gdak_dev_sge s = { a_at(a_off + a_step * (uint32_t)k), len,
					  gdak_mr_lkey(amr) };
		uint64_t raddr = b_at(b_off + b_step * (uint32_t)k);

		rx_pattern(src + src_step * (uint32_t)k, len, seed + (uint32_t)k);
		i = rx_reserve(&A, nbb);
		REQUIRE(i >= 0);
		if (first < 0)
			first = i;
		if (read)
			gdak_dev_wqe_read(A.q, (uint64_t)i, GDAK_DEV_WQE_SIGNAL, raddr,
					  gdak_mr_rkey(bmr), &s, 1);
		else
			gdak_dev_wqe_write(A.q, (uint64_t)i, GDAK_DEV_WQE_SIGNAL, raddr,
					   gdak_mr_rkey(bmr), &s, 1);
	}
	CHECK_EQ(rx_submit_wait(&A, first, i, nbb, &err), 0);
	for (int k = 0; k < n; k++)
		CHECK_EQ(rx_pattern_diff(dst + dst_step * (uint32_t)k, len, seed + (uint32_t)k), 0);
}

/* One WRITE (read 0) or READ of each size between abuf + aoff and bbuf +
 * boff, alone: the pattern of seed + k arrives whole, nothing past it. */
static void sizes_one(int read, const uint32_t *sizes, unsigned count, uint32_t aoff, uint32_t boff,
		      uint32_t seed)
{
	uint8_t *src = read ? bbuf + boff : abuf + aoff, *dst = read ? abuf + aoff : bbuf + boff;
	struct gdak_dev_cqe err;

	for (unsigned k = 0; k < count; k++) {
		uint32_t n = sizes[k];
		struct gdak_dev_sge s = { a_at(aoff), n, gdak_mr_lkey(amr) };

		rx_pattern(src, n, seed + k);
		memset(dst, 0, n + 16);
		CHECK_EQ(rx_op(&A, read ? MLX5_OPCODE_RDMA_READ : MLX5_OPCODE_RDMA_WRITE, &s, 1,
			       b_at(boff), gdak_mr_rkey(bmr), 0, &err),
			 0);
		CHECK_EQ(rx_pattern_diff(dst, n, seed + k), 0);
		CHECK_EQ(dst[n], 0); /* nothing past the message */
	}
}

static void writes(void)
{
	static const uint32_t sizes[] = { 1, 100, 4095, 4096, 4097, 10000, 70000 };
	struct gdak_dev_cqe err;

	sizes_one(0, sizes, sizeof(sizes) / sizeof(sizes[0]), 1000, 5000, 10);
	/* two segments, 3000 + 2500 bytes from different places */
	{
		struct gdak_dev_sge s[2] = { { a_at(0), 3000, gdak_mr_lkey(amr) },
					     { a_at(100000), 2500, gdak_mr_lkey(amr) } };
		rx_pattern(abuf, 3000, 30);
		rx_pattern(abuf + 100000, 2500, 31);
		CHECK_EQ(rx_op(&A, MLX5_OPCODE_RDMA_WRITE, s, 2, b_at(0), gdak_mr_rkey(bmr), 0,
			       &err), 0);
		CHECK_EQ(rx_pattern_diff(bbuf, 3000, 30), 0);
		CHECK_EQ(rx_pattern_diff(bbuf + 3000, 2500, 31), 0);
	}
	/* eight 1500-byte WRITEs under one doorbell: two fit the 4096-byte
	 * ring at a time, the rest wait for room (and wrap around it) */
	batch(0, 8, 1500, 20000, 1500, 40000, 1600, 40);
}

static void reads(void)
{
	static const uint32_t sizes[] = { 8, 4096, 4097, 9000, 65536 };
	struct gdak_dev_cqe err;

	sizes_one(1, sizes, sizeof(sizes) / sizeof(sizes[0]), 100000, 100000, 50);
	/* a READ scattered over two segments, and six 2000-byte READs in flight */
	{
		struct gdak_dev_sge s[2] = { { a_at(0), 1000, gdak_mr_lkey(amr) },
					     { a_at(200000), 5000, gdak_mr_lkey(amr) } };
		uint8_t *want = malloc(6000);

		REQUIRE(want);
		rx_pattern(bbuf + 150000, 6000, 60);
		rx_pattern(want, 6000, 60);
		memset(abuf, 0, 1000);
		memset(abuf + 200000, 0, 5000);
		CHECK_EQ(rx_op(&A, MLX5_OPCODE_RDMA_READ, s, 2, b_at(150000), gdak_mr_rkey(bmr), 0,
			       &err), 0);
		CHECK_MEM(abuf, want, 1000);
		CHECK_MEM(abuf + 200000, want + 1000, 5000);
		free(want);
	}
	batch(1, 6, 2000, 120000, 2000, 60000, 2048, 70);
}

/* A fetch-add (cs 0) or compare-swap (cs 1) on B's word at 250000: the
 * old value lands big-endian (as mlx5 writes it) at A's off, B's word is
 * then now. */
static void atomic_step(int cs, uint64_t swap_add, uint64_t cmp, uint32_t off, uint64_t old,
			uint64_t now)
{
	struct gdak_dev_cqe err;
	uint64_t v;

	CHECK_EQ(rx_atomic(&A, cs, b_at(250000), gdak_mr_rkey(bmr), swap_add, cmp, a_at(off),
			   gdak_mr_lkey(amr), &err),
		 0);
	memcpy(&v, abuf + off, 8);
	CHECK_EQ(gdak_be64toh(v), old);
	memcpy(&v, bbuf + 250000, 8);
	CHECK_EQ(v, now);
}

static void atomics(void)
{
	uint64_t v = 1000;

	memcpy(bbuf + 250000, &v, 8);
	memset(abuf + 250000, 0xee, 16);
	atomic_step(0, 23, 0, 250000, 1000, 1023);
	atomic_step(1, 5, 1023, 250008, 1023, 5);
	/* a compare that fails: unchanged, the old value still returned */
	atomic_step(1, 9, 1234, 250000, 5, 5);
}

static void sends(void)
{
	static const uint32_t to_a[] = { 100, 3000, 2000, 12000 };
	struct gdak_dev_cqe err, c;

	/* A -> B: staged source, B's receive registered */
	for (int k = 0; k < 2; k++) {
		uint32_t n = k ? 9000 : 3000;
		struct gdak_dev_sge r = { b_at(160000), 16384, gdak_mr_lkey(bmr) };
		struct gdak_dev_sge s = { a_at(30000), n, gdak_mr_lkey(amr) };

		rx_rq_post(&B, &r, 1);
		rx_pattern(abuf + 30000, n, 80 + k);
		CHECK_EQ(rx_op(&A, MLX5_OPCODE_SEND_IMM, &s, 1, 0, 0, 0x1234 + k, &err), 0);
		CHECK_EQ(rx_rq_poll(&B, &c), 1);
		CHECK_EQ(c.opcode, MLX5_CQE_RESP_SEND_IMM);
		CHECK_EQ(c.byte_cnt, n);
		CHECK_EQ(c.imm, 0x1234 + k);
		CHECK_EQ(rx_pattern_diff(bbuf + 160000, n, 80 + k), 0);
	}

	/* B -> A: four receive WQEs of two segments posted at once; 3000
	 * bytes each, so one at a time fits the 4096-byte receive ring (the
	 * others are handed to the device as room comes back: B's SENDs meet
	 * RNR and retry), the last one of 16000 (a one-off bounce buffer) */
	memset(abuf, 0, 200000);
	for (int k = 0; k < 4; k++) {
		uint32_t cap = k == 3 ? 16000 : 3000;
		struct gdak_dev_sge r[2] = { { a_at(50000u * k), cap / 2, gdak_mr_lkey(amr) },
					     { a_at(50000u * k + 30000), cap / 2, gdak_mr_lkey(amr) } };
		rx_rq_post(&A, r, 2);
	}
	for (int k = 0; k < 4; k++) {
		uint32_t n = to_a[k];
		struct gdak_dev_sge s = { b_at(0), n, gdak_mr_lkey(bmr) };

		rx_pattern(bbuf, n, 90 + k);
		CHECK_EQ(rx_op(&B, MLX5_OPCODE_SEND, &s, 1, 0, 0, 0, &err), 0);
	}
	for (int k = 0; k < 4; k++) {
		uint32_t n = to_a[k], half = (k == 3 ? 16000 : 3000) / 2;
		uint8_t *want = malloc(n);

		REQUIRE(want);
		rx_pattern(want, n, 90 + k);
		CHECK_EQ(rx_rq_poll(&A, &c), 1);
		CHECK_EQ(c.opcode, MLX5_CQE_RESP_SEND);
		CHECK_EQ(c.byte_cnt, n);
		CHECK_MEM(abuf + 50000u * k, want, n < half ? n : half);
		if (n > half)
			CHECK_MEM(abuf + 50000u * k + 30000, want + half, n - half);
		CHECK_EQ(abuf[50000u * k + (n < half ? n : 30000 + n - half)], 0);
		free(want);
	}
}

static void connect_pair(void)
{
	struct gdak_qp_info ia, ib;

	REQUIRE(gdak_qp_info(A.qp, &ia) == 0);
	REQUIRE(gdak_qp_info(B.qp, &ib) == 0);
	REQUIRE(gdak_qp_connect(A.qp, &ib) == 0);
	REQUIRE(gdak_qp_connect(B.qp, &ia) == 0);
	REQUIRE(gdak_qp_export(A.qp, &A.q) == 0);
	REQUIRE(gdak_qp_export(B.qp, &B.q) == 0);
}

/*
 * Four staged 3000-byte WRITEs under one doorbell (one at a time fits the
 * ring), the second to a wrong rkey: the first lands, the second ends in
 * REMOTE_ACCESS_ERR, the QP in ERR.  Then both QPs RESET and reconnected:
 * the bounce rings must be whole again (a leaked ring would make the next
 * WRITE wait for ever), staged WRITE / READ verified.
 */
static void error_and_recover(void)
{
	uint32_t nbb = gdak_dev_wqe_bbs_sge(1, 1);
	struct gdak_dev_cqe err;
	int64_t idx[4];

	memset(bbuf, 0, 16384);
	for (int k = 0; k < 4; k++) {
		struct gdak_dev_sge s = { a_at(3000u * k), 3000, gdak_mr_lkey(amr) };
		rx_pattern(abuf + 3000u * k, 3000, 100 + k);
		idx[k] = rx_reserve(&A, nbb);
		REQUIRE(idx[k] >= 0);
		gdak_dev_wqe_write(A.q, (uint64_t)idx[k], GDAK_DEV_WQE_SIGNAL, b_at(4000u * k),
				   gdak_mr_rkey(bmr) ^ (k == 1 ? 0x5a00 : 0), &s, 1);
	}
	memset(&err, 0, sizeof(err));
	CHECK(rx_submit_wait(&A, idx[0], idx[3], nbb, &err) < 0);
	CHECK_EQ(err.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(err.wqe_counter, (uint16_t)idx[1]);
	CHECK_EQ(err.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(gdak_qp_state(A.qp), GDAK_QPS_ERR);
	CHECK_EQ(rx_pattern_diff(bbuf, 3000, 100), 0);
	for (int k = 2; k < 4; k++) /* flushed, never executed */
		CHECK_EQ(bbuf[4000u * k], 0);

	REQUIRE(gdak_qp_modify(A.qp, GDAK_QPS_RESET, NULL) == 0);
	REQUIRE(gdak_qp_modify(B.qp, GDAK_QPS_RESET, NULL) == 0);
	connect_pair();
	{
		struct gdak_dev_sge w = { a_at(20000), 10000, gdak_mr_lkey(amr) };
		struct gdak_dev_sge w2 = { a_at(40000), 3000, gdak_mr_lkey(amr) };
		struct gdak_dev_sge r = { a_at(60000), 4000, gdak_mr_lkey(amr) };

		rx_pattern(abuf + 20000, 10000, 110);
		rx_pattern(abuf + 40000, 3000, 111);
		rx_pattern(bbuf + 100000, 4000, 112);
		CHECK_EQ(rx_op(&A, MLX5_OPCODE_RDMA_WRITE, &w, 1, b_at(20000), gdak_mr_rkey(bmr), 0,
			       &err), 0);
		CHECK_EQ(rx_op(&A, MLX5_OPCODE_RDMA_WRITE, &w2, 1, b_at(40000), gdak_mr_rkey(bmr),
			       0, &err), 0);
		CHECK_EQ(rx_op(&A, MLX5_OPCODE_RDMA_READ, &r, 1, b_at(100000), gdak_mr_rkey(bmr),
			       0, &err), 0);
		CHECK_EQ(rx_pattern_diff(bbuf + 20000, 10000, 110), 0);
		CHECK_EQ(rx_pattern_diff(bbuf + 40000, 3000, 111), 0);
		CHECK_EQ(rx_pattern_diff(abuf + 60000, 4000, 112), 0);
	}
}

static int open_with(const char *stage, const char *bounce, struct gdak_ctx **ctx)
{
	int r;

	setenv("GDAK_VERBS_STAGE", stage, 1);
	setenv("GDAK_VERBS_BOUNCE", bounce, 1);
	r = gdak_open("emu:verbs:rxe0", ctx);
	unsetenv("GDAK_VERBS_STAGE");
	unsetenv("GDAK_VERBS_BOUNCE");
	return r;
}

int main(void)
{
	struct gdak_mr *bad;
	struct gdak_ctx *c;

	if (!rx_have_device("rxe0"))
		GDAK_TEST_SKIP("no verbs device rxe0 here (the rxe guest has one: "
			       "tools/rxe/gdak-rxe-vm ctest BUILD_DIR)");
	/* bounce waits are bounded by the RNR timeout: not a timing test */
	gdak_nic_set_rnr_timeout_ms(600000);

	/* bad settings: gdak_open says which, nothing opens */
	CHECK_EQ(open_with("gpu", "4096", &c), -EINVAL);
	CHECK_EQ(open_with("all", "12", &c), -EINVAL);
	CHECK_EQ(open_with("all", "4k", &c), -EINVAL);

	REQUIRE(open_with("all", "4096", &A.ctx) == 0);
	REQUIRE(gdak_open("emu:verbs:rxe0", &B.ctx) == 0);
	REQUIRE(gdak_mem_alloc(A.ctx, ALEN, GDAK_MEM_HOST, (void **)&abuf) == 0);
	REQUIRE(gdak_mem_alloc(B.ctx, BLEN, GDAK_MEM_HOST, (void **)&bbuf) == 0);
	memset(abuf, 0, ALEN);
	memset(bbuf, 0, BLEN);
	/* staged memory cannot be a remote target: refused, clearly */
	CHECK_EQ(gdak_mr_reg(A.ctx, abuf, ALEN, GDAK_ACCESS_ALL, &bad), -EOPNOTSUPP);
	CHECK_EQ(gdak_mr_reg(A.ctx, abuf, ALEN, GDAK_ACCESS_LOCAL_WRITE | GDAK_ACCESS_REMOTE_READ,
			     &bad), -EOPNOTSUPP);
	REQUIRE(gdak_mr_reg(A.ctx, abuf, ALEN, GDAK_ACCESS_LOCAL_WRITE, &amr) == 0);
	REQUIRE(gdak_mr_reg(B.ctx, bbuf, BLEN, GDAK_ACCESS_ALL, &bmr) == 0);
	REQUIRE(rx_qp(&A, 8, 2) == 0);
	REQUIRE(rx_qp(&B, 8, 1) == 0);
	connect_pair();

	writes();
	reads();
	atomics();
	sends();

	error_and_recover();

	gdak_qp_destroy(A.qp);
	gdak_qp_destroy(B.qp);
	CHECK_EQ(gdak_mr_dereg(amr), 0);
	CHECK_EQ(gdak_mr_dereg(bmr), 0);
	gdak_mem_free(A.ctx, abuf);
	gdak_mem_free(B.ctx, bbuf);
	gdak_close(A.ctx);
	gdak_close(B.ctx);
	return gdak_test_end();
}
