/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include <gdak/dev/db.h>

#include "gdak_test.h"
#include "nic_util.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void nu_qp_from(struct nu_qp *q, struct gdak_qp *qp)
{
	memset(q, 0, sizeof(*q));
	q->qp = qp;
	gdak_qp_export(qp, &q->d);
	q->qpn = gdak_qp_num(qp);
}

struct gdak_qp *nu_dci(struct gdak_ctx *ctx, uint32_t streams, struct gdak_dev_qp **d)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCI, .sq_depth = 64, .dci_streams = streams };
	struct gdak_qp *q;

	REQUIRE_EQ(gdak_qp_create(ctx, &a, &q), 0);
	REQUIRE_EQ(gdak_qp_connect(q, NULL), 0);
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_RTS);
	REQUIRE_EQ(gdak_qp_export(q, d), 0);
	return q;
}

void nu_need_gpu_mem(struct gdak_ctx *ctx)
{
	void *g = NULL;
	int r;

	gdak_set_log_level(GDAK_LOG_ERROR);
	r = gdak_mem_alloc(ctx, 64, GDAK_MEM_GPU, &g);
	gdak_set_log_level(GDAK_LOG_WARN);
	if (r == -ENOTSUP) {
		gdak_close(ctx);
		GDAK_TEST_SKIP("the NIC model has no CUDA memory engine here (no GPU or driver)");
	}
	REQUIRE_EQ(r, 0);
	gdak_mem_free(ctx, g);
}

int nu_pair(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr, struct nu_qp *a, struct nu_qp *b)
{
	struct gdak_qp *qa, *qb;
	struct gdak_qp_info ia, ib;
	int r;

	if ((r = gdak_qp_create(ctx, attr, &qa)))
		return r;
	if ((r = gdak_qp_create(ctx, attr, &qb)))
		return r;
	if ((r = gdak_qp_info(qa, &ia)) || (r = gdak_qp_info(qb, &ib)))
		return r;
	if ((r = gdak_qp_connect(qa, &ib)) || (r = gdak_qp_connect(qb, &ia)))
		return r;
	nu_qp_from(a, qa);
	nu_qp_from(b, qb);
	return 0;
}

void nu_destroy(struct nu_qp *q)
{
	if (q->qp)
		gdak_qp_destroy(q->qp);
	q->qp = NULL;
}

void nu_put_raw(struct nu_qp *q, const void *wqe, unsigned ds)
{
	unsigned bbs = gdak_mlx5_wqe_bbs(ds);
	const uint8_t *s = wqe;
	uint8_t *ring = q->d->sq_buf;

	for (unsigned i = 0; i < bbs; i++) {
		uint32_t slot = (uint32_t)(q->pi + i) & (q->d->sq_wqebb_cnt - 1);
		memcpy(ring + (size_t)slot * 64, s + (size_t)i * 64, 64);
	}
	q->last = q->pi;
	q->pi += bbs;
}

static void ctrl(struct mlx5_wqe_ctrl_seg *c, struct nu_qp *q, uint8_t opcode, unsigned ds,
		 unsigned flags, uint32_t imm)
{
	struct gdak_mlx5_ctrl cc = {
		.opcode = opcode, .wqe_index = (uint16_t)q->pi, .qpn = q->qpn, .ds = (uint8_t)ds,
		.fm_ce_se = (uint8_t)((flags & NU_SIG ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
				      (flags & NU_FENCE ? GDAK_MLX5_FENCE_SMALL_AND_FENCE : 0)),
		.imm = imm,
	};
	gdak_mlx5_ctrl_encode(c, &cc);
}

/* The payload segment at seg: inline bytes or one data segment.  Its DS. */
static unsigned payload(uint8_t *seg, void *laddr, uint32_t len, uint32_t lkey, unsigned flags)
{
	if (flags & NU_INLINE) {
		gdak_mlx5_inline_encode((void *)seg, len);
		memcpy(seg + 4, laddr, len);
		return gdak_mlx5_inline_ds(len);
	}
	gdak_mlx5_data_encode((void *)seg, (uintptr_t)laddr, len, lkey);
	return 1;
}

uint16_t nu_post_rdma(struct nu_qp *q, uint8_t opcode, void *laddr, uint32_t len, uint32_t lkey,
		      uint64_t raddr, uint32_t rkey, uint32_t imm_be, unsigned flags)
{
	uint8_t w[1024] __attribute__((aligned(16))) = {0};
	unsigned ds;
	uint16_t idx = (uint16_t)q->pi;

	gdak_mlx5_raddr_encode((void *)(w + 16), raddr, rkey);
	ds = 2 + payload(w + 32, laddr, len, lkey, flags);
	ctrl((void *)w, q, opcode, ds, flags, imm_be);
	nu_put_raw(q, w, ds);
	return idx;
}

uint16_t nu_post_send(struct nu_qp *q, uint8_t opcode, void *laddr, uint32_t len, uint32_t lkey,
		      uint32_t imm_be, unsigned flags)
{
	uint8_t w[1024] __attribute__((aligned(16))) = {0};
	unsigned ds = 1 + payload(w + 16, laddr, len, lkey, flags);
	uint16_t idx = (uint16_t)q->pi;

	ctrl((void *)w, q, opcode, ds, flags, imm_be);
	nu_put_raw(q, w, ds);
	return idx;
}

uint16_t nu_post_atomic(struct nu_qp *q, uint8_t opcode, void *laddr, uint32_t lkey,
			uint64_t raddr, uint32_t rkey, uint64_t swap_add, uint64_t compare,
			unsigned flags)
{
	uint8_t w[64] __attribute__((aligned(16))) = {0};
	uint16_t idx = (uint16_t)q->pi;

	gdak_mlx5_raddr_encode((void *)(w + 16), raddr, rkey);
	gdak_mlx5_atomic_encode((void *)(w + 32), swap_add, compare);
	gdak_mlx5_data_encode((void *)(w + 48), (uintptr_t)laddr, 8, lkey);
	ctrl((void *)w, q, opcode, 4, flags, 0);
	nu_put_raw(q, w, 4);
	return idx;
}

uint16_t nu_post_masked(struct nu_qp *q, uint8_t opcode, void *laddr, uint32_t lkey,
			uint64_t raddr, uint32_t rkey, uint64_t swap_add, uint64_t compare,
			uint64_t swap_add_mask, uint64_t compare_mask, unsigned flags)
{
	uint8_t w[128] __attribute__((aligned(16))) = {0};
	struct gdak_mlx5_masked_atomic_seg *m = (void *)(w + 32);
	uint16_t idx = (uint16_t)q->pi;

	gdak_mlx5_raddr_encode((void *)(w + 16), raddr, rkey);
	m->swap_add = gdak_htobe64(swap_add);
	m->compare = gdak_htobe64(compare);
	m->swap_add_mask = gdak_htobe64(swap_add_mask);
	m->compare_mask = gdak_htobe64(compare_mask);
	gdak_mlx5_data_encode((void *)(w + 64), (uintptr_t)laddr, 8, lkey);
	ctrl((void *)w, q, opcode, 5, flags, 0);
	nu_put_raw(q, w, 5);
	return idx;
}

uint16_t nu_post_nop(struct nu_qp *q, unsigned flags)
{
	uint8_t w[64] __attribute__((aligned(16))) = {0};
	uint16_t idx = (uint16_t)q->pi;

	ctrl((void *)w, q, MLX5_OPCODE_NOP, 1, flags, 0);
	nu_put_raw(q, w, 1);
	return idx;
}

void nu_ring(struct nu_qp *q)
{
	struct gdak_dev_qp *d = q->d;
	const uint64_t *w = (const uint64_t *)gdak_dev_wqe_ptr(d, q->last);
	uint64_t *reg;

	/* record (release: after the WQE stores) and register as the device
	 * API rings them; the CPU-proxy word alone for a proxy QP */
	if (d->handler != GDAK_DEV_DB_CPU_PROXY)
		gdak_dev_sq_update_dbrec(d, q->pi);
	if (d->handler != GDAK_DEV_DB_BF) {
		gdak_dev_sq_ring(d, q->last, q->pi, 0);
		return;
	}
	/* BlueFlame: the 64 bytes first, the 8 ctrl bytes last, so that what
	 * the NIC compares is complete once the first word changes (db.h
	 * stores them in order: a NIC looking mid-way waits for them to
	 * settle).  8-byte stores, like the device's MMIO writes. */
	reg = gdak_dev_db_reg_next(d);
	for (int i = 1; i < 8; i++)
		__atomic_store_n(reg + i, w[i], __ATOMIC_RELAXED);
	__atomic_store_n(reg, w[0], __ATOMIC_RELEASE);
	d->sq_db = q->pi;
}

void nu_ring_expect_ok(struct nu_qp *q, uint16_t idx, unsigned timeout_ms)
{
	struct gdak_mlx5_cqe_fields f = { 0 };

	nu_ring(q);
	REQUIRE_EQ(nu_poll(q, 0, &f, timeout_ms), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.syndrome, 0);
	CHECK_EQ(f.wqe_counter, idx);
}

void nu_post_recv(struct nu_qp *q, void *addr, uint32_t len, uint32_t lkey)
{
	struct gdak_dev_qp *d = q->d;
	uint8_t *w = (uint8_t *)d->rq_buf + ((q->rq_pi & (d->rq_wqe_cnt - 1)) << d->rq_log_stride);
	uint32_t nseg = (1u << d->rq_log_stride) / 16;

	gdak_mlx5_data_encode((void *)w, (uintptr_t)addr, len, lkey);
	for (uint32_t i = 1; i < nseg; i++)
		gdak_mlx5_data_encode((void *)(w + 16 * i), 0, 0, MLX5_INVALID_LKEY);
	q->rq_pi++;
	__atomic_store_n(&d->dbrec[MLX5_RCV_DBR], gdak_htobe32((uint32_t)q->rq_pi & 0xffff),
			 __ATOMIC_RELEASE);
}

static struct gdak_dev_cq *cq_of(struct nu_qp *q, int rcq, uint64_t **ci)
{
	*ci = rcq ? &q->rcq_ci : &q->scq_ci;
	return rcq ? &q->d->rcq : &q->d->scq;
}

int nu_cqe_ready(struct nu_qp *q, int rcq)
{
	uint64_t *ci;
	struct gdak_dev_cq *cq = cq_of(q, rcq, &ci);
	const struct mlx5_cqe64 *c = (const struct mlx5_cqe64 *)cq->cqes + (*ci & (cq->ncqe - 1));

	return gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE), *ci, cq->ncqe);
}

int nu_poll(struct nu_qp *q, int rcq, struct gdak_mlx5_cqe_fields *f, unsigned timeout_ms)
{
	uint64_t *ci;
	struct gdak_dev_cq *cq = cq_of(q, rcq, &ci);
	const struct mlx5_cqe64 *c = (const struct mlx5_cqe64 *)cq->cqes + (*ci & (cq->ncqe - 1));
	uint64_t end = now_ms() + timeout_ms;
	unsigned spins = 0;

	while (!gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE), *ci,
					  cq->ncqe)) {
		if (++spins > 64) {
			if (now_ms() > end)
				return -ETIMEDOUT;
			sched_yield();
		}
	}
	gdak_mlx5_cqe_decode(c, f);
	(*ci)++;
	__atomic_store_n(cq->dbrec, gdak_mlx5_cq_dbrec_value((uint32_t)*ci), __ATOMIC_RELEASE);
	return 0;
}

int nu_wait_state(struct nu_qp *q, enum gdak_qp_state s, unsigned timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;

	while (gdak_qp_state(q->qp) != s) {
		if (now_ms() > end)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}
