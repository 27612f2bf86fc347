/* SPDX-License-Identifier: MIT */
/*
 * gdak_test_wqe.h - the one-SGE WQEs the verbs / DEVX tests write into the
 * rings of the device they play, host code or a CUDA kernel alike: the
 * segments after ctrl (raddr, atomic, data), the ctrl segment, and in
 * kernels the ring of record and register and the wait for a CQE.  The
 * tests' own encoding, not gdak/mlx5.h's, so that a mistake there cannot
 * hide behind the same one here.
 */
#ifndef GDAK_TEST_WQE_H
#define GDAK_TEST_WQE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#ifdef __CUDACC__
#define GDAK_TW __host__ __device__ static inline
#else
#define GDAK_TW static inline
#endif

GDAK_TW uint32_t gdak_tw_be32(uint32_t v)
{
#ifdef __CUDA_ARCH__
	return __byte_perm(v, 0, 0x0123);
#else
	return htobe32(v);
#endif
}

GDAK_TW uint64_t gdak_tw_be64(uint64_t v)
{
	return (uint64_t)gdak_tw_be32((uint32_t)v) << 32 | gdak_tw_be32((uint32_t)(v >> 32));
}

/* 16 bytes as four 32-bit stores: what a kernel writes into a ring in GPU
 * or mapped host memory (the compiler may not merge or drop them). */
GDAK_TW void gdak_tw_put16(uint8_t *p, const uint32_t *s)
{
	volatile uint32_t *d = (volatile uint32_t *)p;

	for (int i = 0; i < 4; i++)
		d[i] = s[i];
}

/* At p: the remote address (all but SEND), the atomic operands (fetch-add,
 * compare-and-swap), the one data segment.  Returns the end. */
GDAK_TW uint8_t *gdak_tw_segs(uint8_t *p, uint8_t opcode, uint64_t raddr, uint32_t rkey,
			      uint64_t add_swap, uint64_t cmp, uint64_t laddr, uint32_t lkey,
			      uint32_t len)
{
	uint32_t seg[4];

	if (opcode != MLX5_OPCODE_SEND) {
		uint64_t ra = gdak_tw_be64(raddr);

		memcpy(seg, &ra, 8);
		seg[2] = gdak_tw_be32(rkey);
		seg[3] = 0;
		gdak_tw_put16(p, seg);
		p += 16;
	}
	if (opcode == MLX5_OPCODE_ATOMIC_FA || opcode == MLX5_OPCODE_ATOMIC_CS) {
		uint64_t v[2] = { gdak_tw_be64(add_swap), gdak_tw_be64(cmp) };

		memcpy(seg, v, 16); /* no uint32_t view of the uint64_t words */
		gdak_tw_put16(p, seg);
		p += 16;
	}
	{
		uint64_t la = gdak_tw_be64(laddr);

		seg[0] = gdak_tw_be32(len);
		seg[1] = gdak_tw_be32(lkey);
		memcpy(seg + 2, &la, 8);
		gdak_tw_put16(p, seg);
		p += 16;
	}
	return p;
}

/* The ctrl segment at w of a signalled WQE of ds 16-byte units. */
GDAK_TW void gdak_tw_ctrl(uint8_t *w, uint32_t pi, uint8_t opcode, uint32_t qpn, unsigned ds)
{
	uint32_t seg[4];

	seg[0] = gdak_tw_be32((pi & 0xffff) << 8 | opcode);
	seg[1] = gdak_tw_be32(qpn << 8 | ds);
	seg[2] = gdak_tw_be32(MLX5_WQE_CTRL_CQ_UPDATE);
	seg[3] = 0;
	gdak_tw_put16(w, seg);
}

/* A receive WQE at slot: one data segment, then the terminating one
 * (byte count 0, the invalid lkey). */
GDAK_TW void gdak_tw_recv(uint8_t *slot, uint64_t addr, uint32_t lkey, uint32_t len)
{
	uint32_t seg[4];
	uint64_t a = gdak_tw_be64(addr);

	seg[0] = gdak_tw_be32(len);
	seg[1] = gdak_tw_be32(lkey);
	memcpy(seg + 2, &a, 8);
	gdak_tw_put16(slot, seg);
	seg[0] = 0;
	seg[1] = gdak_tw_be32(MLX5_INVALID_LKEY);
	seg[2] = seg[3] = 0;
	gdak_tw_put16(slot + 16, seg);
}

/* What a kernel read from one CQE. */
struct gdak_tw_cqe {
	uint8_t opcode, syndrome;
	uint16_t wqe_counter;
	uint32_t qpn, byte_cnt;
};

/* A send queue and its CQ as a kernel drives them (device addresses). */
struct gdak_tw_sq {
	uint8_t *sq;
	uint32_t wqebbs, qpn;
	uint32_t *dbrec; /* the send record (be32) */
	uint64_t *reg;	 /* the doorbell register */
	uint8_t *cq;
	uint32_t ncqe;
	uint32_t *cq_dbrec;
};

#ifdef __CUDACC__
/* The WQE at w (pi the producer after it) announced: the WQE before the
 * record, the record before the register - system scope, as the NIC reads
 * them from outside the GPU. */
__device__ static inline void gdak_tw_ring(const uint8_t *w, uint32_t pi, uint32_t *dbrec,
					   uint64_t *reg)
{
	__threadfence_system();
	*(volatile uint32_t *)dbrec = gdak_tw_be32(pi & 0xffff);
	__threadfence_system();
	*(volatile uint64_t *)reg = *(const volatile uint64_t *)w;
	__threadfence_system();
}

/* Wait for CQE ci of the ring cq (ncqe entries): owner bit of this pass,
 * opcode not INVALID; record it in r and hand the slot back through
 * cq_dbrec.  -1 when it does not come (the test fails, it does not hang). */
__device__ static inline int gdak_tw_cqe_wait(const uint8_t *cq, uint32_t ncqe, uint32_t ci,
					      uint32_t *cq_dbrec, struct gdak_tw_cqe *r)
{
	volatile struct mlx5_cqe64 *e = (volatile struct mlx5_cqe64 *)(cq + (ci % ncqe) * 64);
	uint32_t owner = (ci / ncqe) & 1;
	long long t0 = clock64();

	for (;;) {
		uint8_t oo = e->op_own;

		if ((oo >> 4) != MLX5_CQE_INVALID && (oo & 1) == owner)
			break;
		if (clock64() - t0 > 40000000000ll)
			return -1;
	}
	__threadfence_system();
	r->opcode = e->op_own >> 4;
	r->wqe_counter = (uint16_t)(gdak_tw_be32(e->wqe_counter) >> 16);
	r->byte_cnt = gdak_tw_be32(e->byte_cnt);
	if ((e->op_own >> 4) == MLX5_CQE_REQ_ERR) {
		volatile struct mlx5_err_cqe *x = (volatile struct mlx5_err_cqe *)e;

		r->syndrome = x->syndrome;
		r->qpn = gdak_tw_be32(x->s_wqe_opcode_qpn) & 0xffffff;
	} else {
		r->qpn = gdak_tw_be32(e->sop_drop_qpn) & 0xffffff;
	}
	*(volatile uint32_t *)cq_dbrec = gdak_tw_be32((ci + 1) & 0xffffff);
	__threadfence_system();
	return 0;
}

/* The WQE at w (its segments end at end) of bbs WQEBBs at producer pi:
 * its ctrl, the ring, then its CQE (the ci-th) into r.  -1: no CQE. */
__device__ static inline int gdak_tw_exec(const struct gdak_tw_sq *q, uint8_t *w,
					  const uint8_t *end, uint8_t opcode, uint32_t pi,
					  uint32_t bbs, uint32_t ci, struct gdak_tw_cqe *r)
{
	gdak_tw_ctrl(w, pi, opcode, q->qpn, (unsigned)(end - w) / 16);
	gdak_tw_ring(w, pi + bbs, q->dbrec, q->reg);
	return gdak_tw_cqe_wait(q->cq, q->ncqe, ci, q->cq_dbrec, r);
}
#endif

#endif /* GDAK_TEST_WQE_H */
