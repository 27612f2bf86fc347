/* SPDX-License-Identifier: MIT */
/*
 * fid_util.h - the fidelity tests' "device": host threads that drive the
 * emulated NIC's queues the way DOCA GPUNetIO, NVSHMEM IBGDA and NCCL GIN's
 * GDAKI backend drive a ConnectX, byte by byte, through the C11 device
 * headers (<gdak/dev/ordering.h> stores, <gdak/dev/wqe.h> ring addressing).
 *
 * Every WQE and doorbell value is spelled out here instead of coming from
 * gdak's own builders: the point is that the NIC model accepts what those
 * stacks write, not what gdak writes.  Header only; one test file each.
 */
#ifndef GDAK_FID_UTIL_H
#define GDAK_FID_UTIL_H

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>
#include <gdak/nic.h>
#include <gdak/dev/ordering.h>
#include <gdak/dev/wqe.h>

#include "gdak_test.h"
#include "nic_util.h"

/* The devices the fidelity tests run on: the in-process transport, and
 * RoCEv2 over UDP where this host lets it open (else skipped). */
#define FID_DEVS                           \
	{                                  \
		"emu", "emu:udp:127.0.0.1" \
	}

/* The state most fidelity tests share: a context, a 4 KiB source and
 * destination, and their MRs. */
struct fid_env {
	struct gdak_ctx *ctx;
	uint8_t src[4096], dst[4096];
	struct gdak_mr *ms, *md;
};

/* Open dev: 0.  An optional one (the udp transport) that cannot open here
 * is skipped with a line saying so: 1. */
static inline int fid_open(const char *dev, int optional, struct gdak_ctx **ctx)
{
	int r = gdak_open(dev, ctx);

	if (r && optional) {
		fprintf(stderr, "%s cannot open here (%s): skipped\n", dev, gdak_strerror(r));
		return 1;
	}
	REQUIRE_EQ(r, 0);
	return 0;
}

/* On an open ctx: src filled from seed, src and dst (len bytes each)
 * registered for all access. */
static inline void fid_env_reg(struct gdak_ctx *ctx, void *src, void *dst, size_t len,
			       uint64_t seed, struct gdak_mr **ms, struct gdak_mr **md)
{
	gdak_test_fill(src, len, seed);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, len, GDAK_ACCESS_ALL, ms), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, len, GDAK_ACCESS_ALL, md), 0);
}

/* The set-up most fidelity tests share: strict mode, an "emu" context and
 * fid_env_reg on it. */
static inline void fid_env_open(struct gdak_ctx **ctx, void *src, void *dst, size_t len,
				uint64_t seed, struct gdak_mr **ms, struct gdak_mr **md)
{
	REQUIRE_EQ(gdak_nic_set_strict(1), 0);
	REQUIRE_EQ(gdak_open("emu", ctx), 0);
	fid_env_reg(*ctx, src, dst, len, seed, ms, md);
}

static inline void fid_env_close(struct gdak_ctx *ctx, struct gdak_mr *ms, struct gdak_mr *md)
{
	gdak_mr_dereg(ms);
	gdak_mr_dereg(md);
	gdak_close(ctx);
}

/* ---- bytes ------------------------------------------------------------------ */

static inline void fid_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void fid_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void fid_be64(uint8_t *p, uint64_t v)
{
	fid_be32(p, (uint32_t)(v >> 32));
	fid_be32(p + 4, (uint32_t)v);
}
static inline uint32_t fid_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint16_t fid_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* ctrl segment: [0] opmod, [1..2] wqe index, [3] opcode, [4..6] QPN,
 * [7] DS, [8] signature, [9..10] reserved, [11] fm_ce_se, [12..15] imm */
static inline void fid_ctrl(uint8_t *w, uint8_t opmod, uint16_t idx, uint8_t opcode, uint32_t qpn,
			    uint8_t ds, uint8_t fm_ce_se, uint32_t imm_be)
{
	w[0] = opmod;
	fid_be16(w + 1, idx);
	w[3] = opcode;
	fid_be32(w + 4, qpn << 8 | ds);
	w[8] = w[9] = w[10] = 0;
	w[11] = fm_ce_se;
	memcpy(w + 12, &imm_be, 4);
}
/* remote address segment: be64 raddr, be32 rkey, 4 reserved */
static inline void fid_raddr(uint8_t *p, uint64_t raddr, uint32_t rkey)
{
	fid_be64(p, raddr);
	fid_be32(p + 8, rkey);
	fid_be32(p + 12, 0);
}
/* data segment: be32 byte_count, be32 lkey, be64 addr */
static inline void fid_data(uint8_t *p, uint32_t len, uint32_t lkey, const void *addr)
{
	fid_be32(p, len);
	fid_be32(p + 4, lkey);
	fid_be64(p + 8, (uint64_t)(uintptr_t)addr);
}

enum {
	FID_CQ_UPDATE = 2 << 2,
	FID_FENCE_SMALL = 1 << 5,
	FID_FENCE = 2 << 5
};

/* Copy a WQE of ds DS (built in w) into the ring at q->pi, DS by DS (it
 * continues at slot 0 past the ring's end, as the HCA fetches it), with
 * relaxed stores: the doorbell record / register store orders them.
 * Returns the index it was written at; q->pi moves past it. */
static inline uint64_t fid_put(struct nu_qp *q, const uint8_t *w, unsigned ds)
{
	uint64_t at = q->pi;

	for (unsigned k = 0; k < ds; k++) {
		uint64_t lo, hi;

		memcpy(&lo, w + 16 * k, 8);
		memcpy(&hi, w + 16 * k + 8, 8);
		gdak_dev_store_16(gdak_dev_wqe_ds(q->d, at, k), lo, hi);
	}
	q->last = at;
	q->pi += gdak_mlx5_wqebbs(ds);
	return at;
}

/* RDMA_WRITE or RDMA_READ (ctrl + raddr + data, DS 3) as NVSHMEM's
 * ibgda_write_rdma_write_wqe / ibgda_write_rdma_read_wqe. */
static inline uint64_t fid_rdma(struct nu_qp *q, uint8_t opcode, const void *laddr, uint32_t len,
				uint32_t lkey, uint64_t raddr, uint32_t rkey, uint8_t fm_ce_se)
{
	uint8_t w[64];

	fid_ctrl(w, 0, (uint16_t)q->pi, opcode, q->qpn, 3, fm_ce_se, 0);
	fid_raddr(w + 16, raddr, rkey);
	fid_data(w + 32, len, lkey, laddr);
	return fid_put(q, w, 3);
}
static inline uint64_t fid_write(struct nu_qp *q, const void *laddr, uint32_t len, uint32_t lkey,
				 uint64_t raddr, uint32_t rkey, uint8_t fm_ce_se)
{
	return fid_rdma(q, MLX5_OPCODE_RDMA_WRITE, laddr, len, lkey, raddr, rkey, fm_ce_se);
}
static inline uint64_t fid_read(struct nu_qp *q, void *laddr, uint32_t len, uint32_t lkey,
				uint64_t raddr, uint32_t rkey, uint8_t fm_ce_se)
{
	return fid_rdma(q, MLX5_OPCODE_RDMA_READ, laddr, len, lkey, raddr, rkey, fm_ce_se);
}
/* 8-byte ATOMIC_FA (ctrl + raddr + atomic + data, DS 4). */
/* An 8-byte atomic: ctrl, raddr, nops 8-byte operands (2: DS 4 - FA,
 * CS, masked FA; 4: DS 5 - masked CS) and the 8-byte local result. */
static inline uint64_t fid_atomic8(struct nu_qp *q, uint8_t opmod, uint8_t opcode, uint64_t raddr,
				   uint32_t rkey, const uint64_t *ops, unsigned nops, uint32_t lkey,
				   void *laddr, uint8_t fm_ce_se)
{
	uint8_t w[128];
	unsigned ds = nops > 2 ? 5 : 4;

	fid_ctrl(w, opmod, (uint16_t)q->pi, opcode, q->qpn, (uint8_t)ds, fm_ce_se, 0);
	fid_raddr(w + 16, raddr, rkey);
	for (unsigned i = 0; i < nops; i++)
		fid_be64(w + 32 + 8 * i, ops[i]);
	fid_data(w + 32 + 8 * nops, 8, lkey, laddr);
	return fid_put(q, w, ds);
}

static inline uint64_t fid_fadd(struct nu_qp *q, void *laddr, uint32_t lkey, uint64_t raddr,
				uint32_t rkey, uint64_t add, uint8_t fm_ce_se)
{
	const uint64_t ops[2] = { add, 0 };

	return fid_atomic8(q, 0, MLX5_OPCODE_ATOMIC_FA, raddr, rkey, ops, 2, lkey, laddr, fm_ce_se);
}

/* ---- doorbells ------------------------------------------------------------- */

/* send doorbell record: be32(pi & 0xffff), a release store */
static inline void fid_dbrec(struct nu_qp *q, uint64_t pi)
{
	uint8_t b[4];
	uint32_t v;

	fid_be32(b, (uint32_t)pi & 0xffff);
	memcpy(&v, b, 4);
	gdak_dev_store_release_u32(&q->d->dbrec[MLX5_SND_DBR], v);
}
/* The register value GPUNetIO and NVSHMEM ring: ctrl word 0 carries the
 * NEXT producer index (opcode 0, opmod 0), word 1 be32(qpn << 8) (DS 0). */
static inline uint64_t fid_db_value(uint32_t qpn, uint64_t pi)
{
	uint8_t b[8];
	uint64_t v;

	b[0] = 0;
	fid_be16(b + 1, (uint16_t)pi);
	b[3] = 0;
	fid_be32(b + 4, qpn << 8);
	memcpy(&v, b, 8);
	return v;
}
static inline void fid_ring(struct nu_qp *q, uint64_t pi)
{
	gdak_dev_mmio_store_u64(q->d->db_reg, fid_db_value(q->qpn, pi));
}
/* DOCA GPUNetIO's doca_gpu_dev_verbs_submit_db: ring early, record, ring again */
static inline void fid_submit_doca(struct nu_qp *q)
{
	fid_ring(q, q->pi);
	fid_dbrec(q, q->pi);
	fid_ring(q, q->pi);
}
/* NVSHMEM IBGDA: record, then ring with the next producer index */
static inline void fid_submit_nvshmem(struct nu_qp *q)
{
	fid_dbrec(q, q->pi);
	fid_ring(q, q->pi);
}
/* rdma-core mlx5_post_send: record, then the last WQE's first 8 ctrl bytes */
static inline void fid_submit_rdmacore(struct nu_qp *q)
{
	uint64_t v;

	fid_dbrec(q, q->pi);
	memcpy(&v, gdak_dev_wqe_ptr(q->d, q->last), 8);
	gdak_dev_mmio_store_u64(q->d->db_reg, v);
}

/* ---- completions ------------------------------------------------------------- */

static inline uint64_t fid_ms(void)
{
	return gdak_test_now_ns() / 1000000u;
}

/* DOCA's poll_cq_at: the CQE with index idx of a normal CQ, owner bit =
 * idx / ncqe parity.  Returns it, or NULL after timeout_ms. */
static inline const uint8_t *fid_cqe_at(const struct gdak_dev_cq *cq, uint64_t idx,
					unsigned timeout_ms)
{
	const uint8_t *c = (const uint8_t *)cq->cqes + 64 * (idx & (cq->ncqe - 1));
	uint64_t end = fid_ms() + timeout_ms;

	for (;;) {
		uint8_t own = gdak_dev_load_acquire_u8(c + 63);

		if ((own >> 4) != MLX5_CQE_INVALID && (own & 1) == ((idx >> cq->log_ncqe) & 1))
			return c;
		if (fid_ms() > end)
			return NULL;
		sched_yield();
	}
}
/* consumer counter to the CQ doorbell record (CQs without overrun-ignore) */
static inline void fid_cq_consumed(const struct gdak_dev_cq *cq, uint64_t n)
{
	uint8_t b[4];
	uint32_t v;

	fid_be32(b, (uint32_t)n & 0xffffff);
	memcpy(&v, b, 4);
	gdak_dev_store_release_u32(cq->dbrec, v);
}

/* Bounded wait for a condition (ms); 1 when it held. */
#define FID_UNTIL(cond, ms)                                   \
	({                                                    \
		uint64_t end_ = fid_ms() + (ms);              \
		int ok_;                                      \
		while (!(ok_ = !!(cond)) && fid_ms() <= end_) \
			sched_yield();                        \
		ok_;                                          \
	})

static inline uint64_t fid_violations(struct nu_qp *q)
{
	struct gdak_nic_stats st;

	if (gdak_nic_qp_stats(q->qp, &st))
		return ~0ull;
	return st.violations;
}
static inline uint64_t fid_doorbells(struct nu_qp *q)
{
	struct gdak_nic_stats st;

	if (gdak_nic_qp_stats(q->qp, &st))
		return 0;
	return st.doorbells;
}

/* GPUNetIO's GPU_SM_NO_DBR submit, in rounds of 1..5 16-byte WRITEs from
 * src into dst (offsets wrapping at len), each round rung through the
 * register alone and its CQEs awaited (REQUIRE, timeout_ms each); the
 * number of WRITEs done. */
static inline uint64_t fid_write_rounds_no_dbr(struct nu_qp *q, const uint8_t *src, uint8_t *dst,
					       size_t len, uint32_t lkey, uint32_t rkey, int rounds,
					       unsigned timeout_ms)
{
	uint64_t n = 0;

	for (int r = 0; r < rounds; r++) {
		unsigned k = 1 + (unsigned)r % 5;

		for (unsigned i = 0; i < k; i++) {
			uint64_t off = (n + i) * 16 % len;

			fid_write(q, src + off, 16, lkey, (uintptr_t)(dst + off), rkey,
				  FID_CQ_UPDATE);
		}
		fid_ring(q, q->pi); /* doca_gpu_dev_verbs_submit_db_no_dbr */
		for (unsigned i = 0; i < k; i++, n++)
			REQUIRE(fid_cqe_at(&q->d->scq, n, timeout_ms) != NULL);
	}
	return n;
}

/* A connected pair on e whose send queue has no doorbell record (and whose
 * send CQ ignores overrun), driven through rounds register-only rounds from
 * e->src into e->dst: the data and the record (still 0) checked. */
static inline void fid_no_dbrec_pair(struct fid_env *e, int rounds, unsigned timeout_ms,
				     struct nu_qp *a, struct nu_qp *b)
{
	struct gdak_qp_attr attr = { .sq_depth = 32,
				     .cq_depth = 32,
				     .flags = GDAK_QP_F_SQ_NO_DBREC |
					      GDAK_QP_F_SCQ_OVERRUN_IGNORE };
	uint64_t n;

	memset(e->dst, 0, sizeof(e->dst));
	REQUIRE_EQ(nu_pair(e->ctx, &attr, a, b), 0);
	n = fid_write_rounds_no_dbr(a, e->src, e->dst, sizeof(e->dst), gdak_mr_lkey(e->ms),
				    gdak_mr_rkey(e->md), rounds, timeout_ms);
	CHECK_MEM(e->dst, e->src, n * 16 < sizeof(e->dst) ? n * 16 : sizeof(e->dst));
	CHECK_EQ(a->d->dbrec[MLX5_SND_DBR], 0);
}

/* The QP's error, checked: state ERR, rule and syndrome. */
static inline void fid_expect_error(struct nu_qp *q, const char *rule, uint8_t synd, int line)
{
	struct gdak_qp_error e;

	if (nu_wait_state(q, GDAK_QPS_ERR, 5000)) {
		gdak_test_fail(__FILE__, line, "QP 0x%x never went to ERR (rule %s)", q->qpn, rule);
		return;
	}
	if (gdak_qp_query_error(q->qp, &e)) {
		gdak_test_fail(__FILE__, line, "gdak_qp_query_error failed");
		return;
	}
	if (strcmp(e.rule, rule) || e.syndrome != synd)
		gdak_test_fail(__FILE__, line, "rule '%s' syndrome 0x%x (%s), want '%s' 0x%x",
			       e.rule, e.syndrome, e.text, rule, synd);
	else
		gdak_test_passed++;
}
#define FID_EXPECT_ERROR(q, rule, synd) fid_expect_error(q, rule, synd, __LINE__)

#endif /* GDAK_FID_UTIL_H */
