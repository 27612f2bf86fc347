/* SPDX-License-Identifier: MIT */
/*
 * nic_ext.c - NIC-model queues on rings the device allocated (nm_ext.h):
 * two QPs on two NIC threads sharing ONE external CQ (send and receive
 * side of both), every ring and record in malloc'd memory.  WRITE, SEND
 * and READ, each CQE compared byte for byte with what ConnectX writes; the
 * CQ wraps many times with both threads producing at once; the NIC never
 * touches the device's rings at RESET; bad arguments and destroy order get
 * their errno.
 */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "gdak_test.h"
#include "nic_util.h"
#include "nm_ext.h"

#define BUF (64u * 1024)
#define NCQE 8u
#define SQ 64u
#define RQ 16u

static struct gdak_ctx *ctx;
static uint8_t *la, *lb;
static struct gdak_mr *ma, *mb;

/* the device side of the shared CQ */
static struct mlx5_cqe64 *cqbuf;
static uint32_t *cqdb;
static uint64_t cq_ci;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cq_fresh(struct mlx5_cqe64 *b, uint32_t n)
{
	memset(b, 0, (size_t)n * 64);
	for (uint32_t i = 0; i < n; i++)
		b[i].op_own = GDAK_MLX5_CQE_INVALID_OP_OWN; /* what libmlx5 does */
}

/* Next CQE of the shared CQ, copied out (64 bytes); -ETIMEDOUT. */
static int cq_take(struct mlx5_cqe64 *out)
{
	const struct mlx5_cqe64 *c = &cqbuf[cq_ci & (NCQE - 1)];
	uint64_t end = now_ms() + 10000;

	while (!gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE), cq_ci,
					  NCQE)) {
		if (now_ms() > end)
			return -ETIMEDOUT;
		sched_yield();
	}
	memcpy(out, c, 64);
	cq_ci++;
	__atomic_store_n(cqdb, gdak_mlx5_cq_dbrec_value((uint32_t)cq_ci), __ATOMIC_RELEASE);
	return 0;
}

/* What ConnectX writes for a successful completion at CQ index idx. */
static void expect_cqe(struct mlx5_cqe64 *e, uint64_t idx, uint8_t op, uint32_t qpn, uint16_t wqe,
		       uint32_t bytes, uint32_t imm_be)
{
	memset(e, 0, 64);
	e->byte_cnt = gdak_htobe32(bytes);
	e->imm_inval_pkey = imm_be;
	e->sop_drop_qpn = gdak_htobe32(qpn);
	e->wqe_counter = gdak_htobe16(wqe);
	e->op_own = gdak_mlx5_cqe_op_own(op, idx, NCQE);
}

struct ext_qp {
	struct nu_qp q;
	uint8_t *sq, *rq;
	uint32_t *db;
	uint8_t *uar;
};

static int ext_qp(struct ext_qp *e, struct nm_cq *cq, int thread)
{
	struct nm_ext_qp_attr a;
	struct gdak_qp *qp;
	int r;

	e->sq = aligned_alloc(4096, SQ * 64);
	e->rq = aligned_alloc(4096, 4096); /* C11: a multiple of the alignment */
	e->db = aligned_alloc(64, 64);
	e->uar = aligned_alloc(4096, 4096);
	REQUIRE(e->sq && e->rq && e->db && e->uar);
	memset(e->sq, 0, SQ * 64);
	memset(e->rq, 0, RQ * 16);
	memset(e->db, 0, 64);
	memset(e->uar, 0, 4096);
	memset(&a, 0, sizeof(a));
	a.sq = e->sq;
	a.sq_wqebb_cnt = SQ;
	a.rq = e->rq;
	a.rq_wqe_cnt = RQ;
	a.rq_stride = 16;
	a.dbrec = e->db;
	a.uar = e->uar;
	a.scq = a.rcq = cq;
	a.nic_thread = thread;
	r = nm_ext_qp_create(ctx, &a, &qp);
	if (r)
		return r;
	nu_qp_from(&e->q, qp);
	return 0;
}

static void ext_free(struct ext_qp *e)
{
	free(e->sq);
	free(e->rq);
	free(e->db);
	free(e->uar);
}

/* the exported descriptor points at the device's own memory */
static void check_export(struct ext_qp *e, struct nm_cq *cq)
{
	struct gdak_dev_qp *d = e->q.d;

	CHECK(d->sq_buf == (void *)e->sq);
	CHECK(d->rq_buf == (void *)e->rq);
	CHECK(d->dbrec == e->db);
	CHECK((uint8_t *)(void *)d->db_reg == e->uar + 0x800);
	CHECK(d->scq.cqes == (void *)cqbuf);
	CHECK(d->rcq.cqes == (void *)cqbuf);
	CHECK(d->scq.dbrec == cqdb);
	CHECK_EQ(d->scq.cqn, nm_ext_cq_num(cq));
	CHECK_EQ(d->rcq.cqn, nm_ext_cq_num(cq));
	CHECK_EQ(d->scq.ncqe, NCQE);
	CHECK_EQ(d->sq_wqebb_cnt, SQ);
	CHECK_EQ(d->rq_wqe_cnt, RQ);
}

/* Two CQEs of one exchange, in either order: sort by QPN. */
static void take2(struct mlx5_cqe64 *x, struct mlx5_cqe64 *y, uint64_t *ix, uint64_t *iy,
		  uint32_t qpn_x)
{
	struct mlx5_cqe64 c0, c1;
	uint64_t i0 = cq_ci, i1;

	REQUIRE_EQ(cq_take(&c0), 0);
	i1 = cq_ci;
	REQUIRE_EQ(cq_take(&c1), 0);
	if ((gdak_be32toh(c0.sop_drop_qpn) & 0xffffff) == qpn_x) {
		*x = c0, *ix = i0, *y = c1, *iy = i1;
	} else {
		*x = c1, *ix = i1, *y = c0, *iy = i0;
	}
}

/* One signalled RDMA op of len bytes between la (A's) and lb (B's), posted
 * by q: lb ends equal to la (pattern seed), and q's requester CQE is exact. */
static void rdma_one(struct ext_qp *q, uint8_t opcode, uint32_t len, uint64_t seed)
{
	int wr = opcode == MLX5_OPCODE_RDMA_WRITE;
	struct mlx5_cqe64 got, want;
	uint64_t at;
	uint16_t idx;

	gdak_test_fill(la, len, seed);
	memset(lb, 0, len);
	at = cq_ci;
	idx = nu_post_rdma(&q->q, opcode, wr ? la : lb, len, gdak_mr_lkey(wr ? ma : mb),
			   (uintptr_t)(wr ? lb : la), gdak_mr_rkey(wr ? mb : ma), 0, NU_SIG);
	nu_ring(&q->q);
	REQUIRE_EQ(cq_take(&got), 0);
	expect_cqe(&want, at, MLX5_CQE_REQ, q->q.qpn, idx, len, 0);
	CHECK_MEM(&got, &want, 64);
	CHECK_MEM(lb, la, len);
}

static void test_ops(struct ext_qp *A, struct ext_qp *B)
{
	struct mlx5_cqe64 got, got2, want;
	uint64_t gi, gi2;
	uint16_t idx;

	/* WRITE A -> B: one requester CQE on the shared CQ */
	for (uint32_t len = 1; len <= BUF / 2; len = len * 5 + 3)
		rdma_one(A, MLX5_OPCODE_RDMA_WRITE, len, len);
	/* READ B <- A */
	for (uint32_t len = 1; len <= BUF / 2; len = len * 7 + 1)
		rdma_one(B, MLX5_OPCODE_RDMA_READ, len, len + 9);
	/* SEND / SEND_IMM A -> B: A's requester CQE and B's receive CQE, both
	 * on the one CQ (written by A's NIC thread, in either order) */
	for (unsigned i = 0; i < 2 * RQ + 3; i++) {
		uint32_t len = 1 + i * 611;
		uint16_t ridx = (uint16_t)B->q.rq_pi;
		uint32_t imm = i & 1 ? gdak_htobe32(0xab000000u + i) : 0;

		gdak_test_fill(la, len, i);
		memset(lb, 0xee, len + 1);
		nu_post_recv(&B->q, lb, len + 64, gdak_mr_lkey(mb));
		idx = nu_post_send(&A->q, i & 1 ? MLX5_OPCODE_SEND_IMM : MLX5_OPCODE_SEND, la, len,
				   gdak_mr_lkey(ma), imm, NU_SIG);
		nu_ring(&A->q);
		take2(&got, &got2, &gi, &gi2, A->q.qpn);
		expect_cqe(&want, gi, MLX5_CQE_REQ, A->q.qpn, idx, len, 0);
		CHECK_MEM(&got, &want, 64);
		expect_cqe(&want, gi2, i & 1 ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND,
			   B->q.qpn, ridx, len, imm);
		CHECK_MEM(&got2, &want, 64);
		CHECK_MEM(lb, la, len);
		CHECK_EQ(lb[len], 0xee);
	}
}

/* Both QPs' threads produce into the CQ at once: WRITEs on A, READs on B,
 * unsignalled except every 4th; each CQE is there once, per-QP in order. */
static void test_concurrent(struct ext_qp *A, struct ext_qp *B)
{
	enum {
		ROUNDS = 40,
		PER = 8
	};
	uint16_t next_a = (uint16_t)A->q.pi, next_b = (uint16_t)B->q.pi;
	unsigned seen_a = 0, seen_b = 0;

	for (unsigned r = 0; r < ROUNDS; r++) {
		uint16_t ia[PER / 4], ib[PER / 4];
		unsigned na = 0, nb = 0;

		for (unsigned k = 0; k < PER; k++) {
			unsigned f = (k % 4 == 3) ? NU_SIG : 0;
			uint16_t x = nu_post_rdma(
				&A->q, MLX5_OPCODE_RDMA_WRITE, la + k * 512, 512, gdak_mr_lkey(ma),
				(uintptr_t)(lb + 8192 + k * 512), gdak_mr_rkey(mb), 0, f);
			uint16_t y = nu_post_rdma(&B->q, MLX5_OPCODE_RDMA_READ,
						  lb + 32768 + k * 512, 512, gdak_mr_lkey(mb),
						  (uintptr_t)(la + 16384 + k * 512),
						  gdak_mr_rkey(ma), 0, f);
			if (f) {
				ia[na++] = x;
				ib[nb++] = y;
			}
		}
		nu_ring(&A->q);
		nu_ring(&B->q);
		na = nb = 0;
		for (unsigned k = 0; k < 2 * (PER / 4); k++) {
			struct mlx5_cqe64 c;
			uint32_t qpn;

			REQUIRE_EQ(cq_take(&c), 0);
			qpn = gdak_be32toh(c.sop_drop_qpn) & 0xffffff;
			CHECK_EQ(c.op_own >> 4, MLX5_CQE_REQ);
			CHECK_EQ(gdak_be32toh(c.byte_cnt), 512);
			if (qpn == A->q.qpn) {
				REQUIRE(na < PER / 4);
				CHECK_EQ(gdak_be16toh(c.wqe_counter), ia[na]);
				na++, seen_a++;
			} else {
				CHECK_EQ(qpn, B->q.qpn);
				REQUIRE(nb < PER / 4);
				CHECK_EQ(gdak_be16toh(c.wqe_counter), ib[nb]);
				nb++, seen_b++;
			}
		}
	}
	CHECK_EQ(seen_a, ROUNDS * PER / 4);
	CHECK_EQ(seen_b, ROUNDS * PER / 4);
	CHECK(cq_ci > 10 * NCQE); /* the CQ wrapped many times */
	(void)next_a;
	(void)next_b;
}

static void test_bad_args(struct nm_cq *cq)
{
	struct nm_ext_cq_attr ca;
	struct nm_ext_qp_attr qa;
	struct nm_cq *c2;
	struct gdak_qp *qp;
	struct gdak_ctx *other;
	uint8_t *sq = aligned_alloc(4096, SQ * 64);
	uint32_t *db = aligned_alloc(64, 64);

	REQUIRE(sq && db);
	memset(&ca, 0, sizeof(ca));
	ca.buf = sq;
	ca.ncqe = 8;
	ca.cqe_size = 128;
	ca.dbrec = db;
	CHECK_EQ(nm_ext_cq_create(ctx, &ca, &c2), -ENOTSUP);
	CHECK(c2 == NULL);
	ca.cqe_size = 64;
	ca.ncqe = 6;
	CHECK_EQ(nm_ext_cq_create(ctx, &ca, &c2), -EINVAL);
	ca.ncqe = 8;
	ca.buf = sq + 8;
	CHECK_EQ(nm_ext_cq_create(ctx, &ca, &c2), -EINVAL);
	ca.buf = sq;
	ca.dbrec = NULL;
	CHECK_EQ(nm_ext_cq_create(ctx, &ca, &c2), -EINVAL);
	ca.dbrec = db;
	ca.flags = 0x80;
	CHECK_EQ(nm_ext_cq_create(ctx, &ca, &c2), -EINVAL);
	CHECK_EQ(nm_ext_cq_create(ctx, NULL, &c2), -EINVAL);

	memset(&qa, 0, sizeof(qa));
	qa.sq = sq;
	qa.sq_wqebb_cnt = SQ;
	qa.dbrec = db;
	CHECK_EQ(nm_ext_qp_create(ctx, &qa, &qp), -EINVAL); /* no CQ */
	qa.scq = cq;
	qa.sq_wqebb_cnt = 48;
	CHECK_EQ(nm_ext_qp_create(ctx, &qa, &qp), -EINVAL);
	qa.sq_wqebb_cnt = SQ;
	qa.rq_wqe_cnt = 4;
	qa.rq_stride = 16;
	CHECK_EQ(nm_ext_qp_create(ctx, &qa, &qp), -EINVAL); /* RQ without buffer / CQ */
	qa.rq_wqe_cnt = 0;
	qa.dbrec = NULL;
	CHECK_EQ(nm_ext_qp_create(ctx, &qa, &qp), -EINVAL);
	qa.dbrec = db;
	/* a CQ of another context */
	REQUIRE_EQ(gdak_open("emu:loop", &other), 0);
	CHECK_EQ(nm_ext_qp_create(other, &qa, &qp), -EINVAL);
	gdak_close(other);
	/* a send-only QP on the shared CQ is fine, and counts as a user */
	CHECK_EQ(nm_ext_cq_users(cq), 2);
	REQUIRE_EQ(nm_ext_qp_create(ctx, &qa, &qp), 0);
	CHECK_EQ(nm_ext_cq_users(cq), 3);
	CHECK_EQ(gdak_qp_state(qp), GDAK_QPS_RESET);
	CHECK_EQ(gdak_qp_destroy(qp), 0);
	CHECK_EQ(nm_ext_cq_users(cq), 2);
	/* a CQ nobody uses goes at once */
	ca.flags = NM_EXT_CQ_OI;
	REQUIRE_EQ(nm_ext_cq_create(ctx, &ca, &c2), 0);
	CHECK(nm_ext_cq_num(c2) != 0 && nm_ext_cq_num(c2) != nm_ext_cq_num(cq));
	CHECK_EQ(nm_ext_cq_destroy(c2), 0);
	CHECK_EQ(nm_ext_cq_destroy(NULL), -EINVAL);
	free(sq);
	free(db);
}

/* RESET leaves the device's rings alone (libmlx5 clears them, not the HCA);
 * the QP then connects again and works from index 0. */
static void test_reset(struct ext_qp *A, struct ext_qp *B)
{
	struct gdak_qp_info ia, ib;
	struct mlx5_cqe64 got, want;
	uint8_t snap[64];
	uint16_t idx;
	uint64_t old_ring;

	/* The old life's last rings were WQE 0 with the bytes the new life's
	 * WQE 0 will ring again (an 8-byte doorbell: ctrl bytes 0..7): only a
	 * change of the register shows a ring, so RESET must clear what the
	 * halves hold (nm_qp.c queues_reset), as a ConnectX register keeps no
	 * value.  Written while in RTS they are behind the consumer: nothing
	 * runs. */
	{
		uint8_t c8[16] __attribute__((aligned(16))) = { 0 };
		struct gdak_mlx5_ctrl c = {
			.opcode = MLX5_OPCODE_RDMA_WRITE, .wqe_index = 0, .qpn = A->q.qpn, .ds = 3
		};
		uint64_t v;

		gdak_mlx5_ctrl_encode((void *)c8, &c);
		memcpy(&v, c8, 8);
		for (unsigned h = 0; h < 2; h++)
			__atomic_store_n((uint64_t *)(void *)(A->uar + 0x800 + h * 256), v,
					 __ATOMIC_RELEASE);
		old_ring = v;
	}
	memcpy(snap, A->sq, 64);
	REQUIRE_EQ(gdak_qp_modify(A->q.qp, GDAK_QPS_RESET, NULL), 0);
	REQUIRE_EQ(gdak_qp_modify(B->q.qp, GDAK_QPS_RESET, NULL), 0);
	CHECK_MEM(A->sq, snap, 64);
	CHECK(A->db[1] != 0); /* the record is the device's to clear */
	memset(A->db, 0, 8);
	memset(B->db, 0, 8);
	REQUIRE_EQ(gdak_qp_info(A->q.qp, &ia), 0);
	REQUIRE_EQ(gdak_qp_info(B->q.qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(A->q.qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(B->q.qp, &ia), 0);
	nu_qp_from(&A->q, A->q.qp);
	nu_qp_from(&B->q, B->q.qp);
	gdak_test_fill(la, 100, 5);
	uint64_t at = cq_ci;
	idx = nu_post_rdma(&A->q, MLX5_OPCODE_RDMA_WRITE, la, 100, gdak_mr_lkey(ma), (uintptr_t)lb,
			   gdak_mr_rkey(mb), 0, NU_SIG);
	CHECK_EQ(idx, 0);
	nu_ring(&A->q);
	CHECK_EQ(*(const uint64_t *)(const void *)(A->uar + 0x800), old_ring);
	/* (the half not rung since: cleared by RESET) */
	CHECK_EQ(*(const uint64_t *)(const void *)(A->uar + 0x900), 0);
	REQUIRE_EQ(cq_take(&got), 0);
	expect_cqe(&want, at, MLX5_CQE_REQ, A->q.qpn, 0, 100, 0);
	CHECK_MEM(&got, &want, 64);
	CHECK_MEM(lb, la, 100);
}

/* One signalled WRITE on A rung by hand: mode 0 an 8-byte doorbell, 1 a
 * BlueFlame copy; to the register half given.  Returns its CQE's opcode. */
static int ring_write(struct ext_qp *A, int bf, unsigned half)
{
	struct mlx5_cqe64 got;
	uint64_t *reg = (uint64_t *)(void *)(A->uar + 0x800 + half * 256);
	const uint64_t *w;
	uint16_t idx;

	/* a new length each time: a BlueFlame copy identical to the half's
	 * previous one past the ctrl word cannot be told from an 8-byte ring
	 * (nor does it matter: the same WQE executes) */
	static uint32_t len = 64;

	len += 8;
	gdak_test_fill(la, len, len);
	idx = nu_post_rdma(&A->q, MLX5_OPCODE_RDMA_WRITE, la, len, gdak_mr_lkey(ma), (uintptr_t)lb,
			   gdak_mr_rkey(mb), 0, NU_SIG);
	w = (const uint64_t *)(const void *)(A->sq + (idx & (SQ - 1)) * 64);
	__atomic_store_n(&A->db[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)A->q.pi),
			 __ATOMIC_RELEASE);
	if (bf)
		for (int i = 7; i >= 1; i--)
			__atomic_store_n(reg + i, w[i], __ATOMIC_RELAXED);
	__atomic_store_n(reg, w[0], __ATOMIC_RELEASE);
	REQUIRE_EQ(cq_take(&got), 0);
	CHECK_MEM(lb, la, len);
	return got.op_own >> 4;
}

/* nm_ext_qp_doorbell_any: the device picks DB or BlueFlame per doorbell
 * (a ConnectX tells them by the write's size).  8-byte doorbells and
 * BlueFlame copies both execute; only a BlueFlame copy to the half used
 * last is a violation (rdma-core alternates). */
static void test_db_any(struct ext_qp *A)
{
	struct gdak_nic_stats st;

	REQUIRE_EQ(nm_ext_qp_doorbell_any(A->q.qp), 0);
	CHECK_EQ(nm_ext_qp_doorbell_any(NULL), -EINVAL);
	CHECK_EQ(ring_write(A, 0, 0), MLX5_CQE_REQ);
	CHECK_EQ(ring_write(A, 1, 1), MLX5_CQE_REQ);
	CHECK_EQ(ring_write(A, 0, 0), MLX5_CQE_REQ);
	CHECK_EQ(ring_write(A, 0, 0), MLX5_CQE_REQ); /* DB to one half twice: fine */
	CHECK_EQ(ring_write(A, 1, 1), MLX5_CQE_REQ);
	REQUIRE_EQ(gdak_nic_qp_stats(A->q.qp, &st), 0);
	CHECK_EQ(st.violations, 0);
	CHECK_EQ(ring_write(A, 1, 1), MLX5_CQE_REQ); /* BlueFlame to the same half again */
	REQUIRE_EQ(gdak_nic_qp_stats(A->q.qp, &st), 0);
	CHECK_EQ(st.violations, 1);
	CHECK_EQ(gdak_qp_state(A->q.qp), GDAK_QPS_RTS);
}

int main(void)
{
	struct nm_ext_cq_attr ca;
	struct nm_cq *cq;
	struct ext_qp A, B;
	struct gdak_qp_info ia, ib;
	struct gdak_nic_stats st;

	setenv("GDAK_NIC_THREADS", "2", 0);
	REQUIRE_EQ(gdak_open("emu:loop", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF, GDAK_MEM_HOST, (void **)&la), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF, GDAK_MEM_HOST, (void **)&lb), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, la, BUF, GDAK_ACCESS_ALL, &ma), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, lb, BUF, GDAK_ACCESS_ALL, &mb), 0);

	cqbuf = aligned_alloc(4096, 4096);
	cqdb = aligned_alloc(64, 64);
	REQUIRE(cqbuf && cqdb);
	cq_fresh(cqbuf, NCQE);
	memset(cqdb, 0, 64);
	memset(&ca, 0, sizeof(ca));
	ca.buf = cqbuf;
	ca.ncqe = NCQE;
	ca.cqe_size = 64;
	ca.dbrec = cqdb;
	REQUIRE_EQ(nm_ext_cq_create(ctx, &ca, &cq), 0);
	/* the NIC does not initialise the device's CQ */
	CHECK_EQ(cqbuf[3].op_own, GDAK_MLX5_CQE_INVALID_OP_OWN);

	REQUIRE_EQ(ext_qp(&A, cq, 0), 0);
	REQUIRE_EQ(ext_qp(&B, cq, 1), 0);
	CHECK_EQ(nm_ext_cq_users(cq), 2);
	check_export(&A, cq);
	check_export(&B, cq);
	REQUIRE_EQ(gdak_qp_info(A.q.qp, &ia), 0);
	REQUIRE_EQ(gdak_qp_info(B.q.qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(A.q.qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(B.q.qp, &ia), 0);

	test_ops(&A, &B);
	test_concurrent(&A, &B);
	test_bad_args(cq);
	test_reset(&A, &B);
	CHECK_EQ(nm_ext_cq_produced(cq), cq_ci);

	REQUIRE_EQ(gdak_nic_qp_stats(A.q.qp, &st), 0);
	CHECK_EQ(st.errors, 0);
	CHECK_EQ(st.violations, 0);
	REQUIRE_EQ(gdak_nic_qp_stats(B.q.qp, &st), 0);
	CHECK_EQ(st.errors, 0);
	CHECK_EQ(st.violations, 0);
	CHECK_EQ(st.recvs, 2 * RQ + 3);
	test_db_any(&A);

	/* destroy order: the kernel refuses a CQ with QPs (EBUSY) */
	CHECK_EQ(nm_ext_cq_destroy(cq), -EBUSY);
	nu_destroy(&A.q);
	CHECK_EQ(nm_ext_cq_destroy(cq), -EBUSY);
	nu_destroy(&B.q);
	CHECK_EQ(nm_ext_cq_users(cq), 0);
	CHECK_EQ(nm_ext_cq_destroy(cq), 0);
	ext_free(&A);
	ext_free(&B);
	free(cqbuf);
	free(cqdb);
	gdak_mr_dereg(ma);
	gdak_mr_dereg(mb);
	gdak_close(ctx);
	return gdak_test_end();
}
