/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/dc.h - the Dynamically Connected transport on the device: WQE
 * builders for a DCI and the high-level put / get / atomics / put+signal /
 * send with the peer chosen per call.
 *
 * A DCI's WQE is an RC WQE with the peer's address vector (struct
 * gdak_dev_av, built by the host with gdak_dc_av) between the ctrl segment
 * and the rest:
 *   ctrl | AV (1 DS compact, 3 DS full) | raddr | atomic | data / inline
 * so a full-AV RDMA_WRITE of one SGE is 6 DS (two WQEBBs) and a compact
 * one 4 DS (one WQEBB), as NVSHMEM's IBGDA posts them.  NOP (quiet's
 * signalled NOP), DUMP and WAIT stay on the DCI itself and take no AV:
 * gdak_dev_wait / gdak_dev_quiet work on a DCI unchanged.
 *
 * Ordering: a DCI executes its WQEs in order and completes them in order,
 * whatever their targets (the NIC closes one stream before it opens the
 * next, docs/DESIGN.md "DC"), so tickets and one-CQE-retires-all hold as on
 * RC; put+signal's WRITE and FA go to the same DCT and land in order.
 *
 * Same conventions as wqe.h (builders return WQEBBs or 0, caller owns the
 * queue) and rma.h (thread safety by qp->sharing, tickets, sticky errors).
 */
#ifndef GDAK_DEV_DC_H
#define GDAK_DEV_DC_H

#include <stdint.h>

#include <gdak/mlx5.h>
#include <gdak/dev/types.h>
#include <gdak/dev/wqe.h>
#include <gdak/dev/rma.h>

/* ---- sizes ------------------------------------------------------------------ */

GDAK_DEV uint32_t gdak_dev_dc_bbs_sge(const struct gdak_dev_av *av, int has_raddr, uint32_t nsge)
{
	return gdak_mlx5_wqebbs(1u + av->ds + (has_raddr ? 1u : 0u) + nsge);
}

GDAK_DEV uint32_t gdak_dev_dc_bbs_inline(const struct gdak_dev_av *av, int has_raddr, uint32_t len)
{
	return gdak_mlx5_wqebbs(1u + av->ds + (has_raddr ? 1u : 0u) + gdak_mlx5_inline_ds(len));
}

/* 8-byte atomic: ctrl + AV + raddr + atomic + data. */
GDAK_DEV uint32_t gdak_dev_dc_bbs_atomic(const struct gdak_dev_av *av)
{
	return gdak_mlx5_wqebbs(4u + av->ds);
}

/* ---- segments ---------------------------------------------------------------- */

/* The address vector at DS 1..av->ds of the WQE at idx (each DS one
 * 16-byte store, so a two-WQEBB WQE may wrap the ring).  Returns the DS
 * written, 0 for an AV whose size is neither form. */
GDAK_DEV uint32_t gdak_dev_dc_set_av(const struct gdak_dev_qp *qp, uint64_t idx,
				     const struct gdak_dev_av *av)
{
	if (gdak_dev_unlikely(av->ds != 1 && av->ds != 3))
		return 0;
	for (uint32_t d = 0; d < av->ds; d++)
		gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, 1 + d), av->words[2 * d],
				  av->words[2 * d + 1]);
	return av->ds;
}

/* ---- builders ------------------------------------------------------------------ */

/* ctrl + AV + optional raddr + nsge data segments. */
GDAK_DEV uint32_t gdak_dev_dc_wqe_sge_op(const struct gdak_dev_qp *qp, uint64_t idx,
					 const struct gdak_dev_av *av, uint8_t opcode,
					 uint32_t flags, uint32_t imm_be, int has_raddr,
					 uint64_t raddr, uint32_t rkey,
					 const struct gdak_dev_sge *sge, uint32_t nsge)
{
	uint32_t k, ds = 1 + av->ds + (has_raddr ? 1 : 0) + nsge;
	if (gdak_dev_unlikely(ds > GDAK_MLX5_MAX_DS || (nsge && !sge) ||
			      (av->ds != 1 && av->ds != 3)))
		return 0;
	k = 1 + gdak_dev_dc_set_av(qp, idx, av);
	return gdak_dev_wqe_sge_tail(qp, idx, k, ds, opcode, flags, imm_be, has_raddr, raddr, rkey,
				     sge, nsge);
}

/* ctrl + AV + optional raddr + inline data (len <= qp->max_inline). */
GDAK_DEV uint32_t gdak_dev_dc_wqe_inline_op(const struct gdak_dev_qp *qp, uint64_t idx,
					    const struct gdak_dev_av *av, uint8_t opcode,
					    uint32_t flags, uint32_t imm_be, int has_raddr,
					    uint64_t raddr, uint32_t rkey, const void *data,
					    uint32_t len)
{
	uint32_t k, ds = 1 + av->ds + (has_raddr ? 1 : 0) + gdak_mlx5_inline_ds(len);
	if (gdak_dev_unlikely(len > qp->max_inline || ds > GDAK_MLX5_MAX_DS || (len && !data) ||
			      (av->ds != 1 && av->ds != 3)))
		return 0;
	k = 1 + gdak_dev_dc_set_av(qp, idx, av);
	if (has_raddr)
		gdak_dev_wqe_set_raddr(gdak_dev_wqe_ds(qp, idx, k++), raddr, rkey);
	gdak_dev_wqe_set_inline(qp, idx, k, data, len);
	gdak_dev_wqe_set_ctrl(qp, idx, opcode, 0, ds, gdak_dev_wqe_fm_ce_se(flags), imm_be);
	return gdak_mlx5_wqebbs(ds);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_write(const struct gdak_dev_qp *qp, uint64_t idx,
					const struct gdak_dev_av *av, uint32_t flags,
					uint64_t raddr, uint32_t rkey,
					const struct gdak_dev_sge *sge, uint32_t nsge)
{
	return gdak_dev_dc_wqe_sge_op(qp, idx, av, MLX5_OPCODE_RDMA_WRITE, flags, 0, 1, raddr, rkey,
				      sge, nsge);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_write_imm(const struct gdak_dev_qp *qp, uint64_t idx,
					    const struct gdak_dev_av *av, uint32_t flags,
					    uint64_t raddr, uint32_t rkey,
					    const struct gdak_dev_sge *sge, uint32_t nsge,
					    uint32_t imm)
{
	return gdak_dev_dc_wqe_sge_op(qp, idx, av, MLX5_OPCODE_RDMA_WRITE_IMM, flags,
				      gdak_htobe32(imm), 1, raddr, rkey, sge, nsge);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_write_inline(const struct gdak_dev_qp *qp, uint64_t idx,
					       const struct gdak_dev_av *av, uint32_t flags,
					       uint64_t raddr, uint32_t rkey, const void *data,
					       uint32_t len)
{
	return gdak_dev_dc_wqe_inline_op(qp, idx, av, MLX5_OPCODE_RDMA_WRITE, flags, 0, 1, raddr,
					 rkey, data, len);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_read(const struct gdak_dev_qp *qp, uint64_t idx,
				       const struct gdak_dev_av *av, uint32_t flags, uint64_t raddr,
				       uint32_t rkey, const struct gdak_dev_sge *sge, uint32_t nsge)
{
	if (gdak_dev_unlikely(nsge == 0))
		return 0;
	return gdak_dev_dc_wqe_sge_op(qp, idx, av, MLX5_OPCODE_RDMA_READ, flags, 0, 1, raddr, rkey,
				      sge, nsge);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_send(const struct gdak_dev_qp *qp, uint64_t idx,
				       const struct gdak_dev_av *av, uint32_t flags,
				       const struct gdak_dev_sge *sge, uint32_t nsge)
{
	return gdak_dev_dc_wqe_sge_op(qp, idx, av, MLX5_OPCODE_SEND, flags, 0, 0, 0, 0, sge, nsge);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_send_imm(const struct gdak_dev_qp *qp, uint64_t idx,
					   const struct gdak_dev_av *av, uint32_t flags,
					   const struct gdak_dev_sge *sge, uint32_t nsge,
					   uint32_t imm)
{
	return gdak_dev_dc_wqe_sge_op(qp, idx, av, MLX5_OPCODE_SEND_IMM, flags, gdak_htobe32(imm),
				      0, 0, 0, sge, nsge);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_send_inline(const struct gdak_dev_qp *qp, uint64_t idx,
					      const struct gdak_dev_av *av, uint32_t flags,
					      const void *data, uint32_t len)
{
	return gdak_dev_dc_wqe_inline_op(qp, idx, av, MLX5_OPCODE_SEND, flags, 0, 0, 0, 0, data,
					 len);
}

/* 8-byte atomics: ctrl + AV + raddr + atomic + data (5 or 7 DS, two
 * WQEBBs either way); the data segment receives the original value
 * big-endian. */
GDAK_DEV uint32_t gdak_dev_dc_wqe_atomic(const struct gdak_dev_qp *qp, uint64_t idx,
					 const struct gdak_dev_av *av, uint8_t opcode,
					 uint32_t flags, uint64_t raddr, uint32_t rkey,
					 uint64_t swap_add, uint64_t compare, uint64_t laddr,
					 uint32_t lkey)
{
	struct gdak_dev_sge sge = { laddr, 8, lkey };
	uint32_t k, ds = 4 + av->ds;
	if (gdak_dev_unlikely(av->ds != 1 && av->ds != 3))
		return 0;
	k = 1 + gdak_dev_dc_set_av(qp, idx, av);
	gdak_dev_wqe_set_raddr(gdak_dev_wqe_ds(qp, idx, k), raddr, rkey);
	gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, k + 1), gdak_htobe64(swap_add),
			  gdak_htobe64(compare));
	gdak_dev_wqe_set_data(gdak_dev_wqe_ds(qp, idx, k + 2), &sge);
	gdak_dev_wqe_set_ctrl(qp, idx, opcode, 0, ds, gdak_dev_wqe_fm_ce_se(flags), 0);
	return gdak_mlx5_wqebbs(ds);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_fetch_add(const struct gdak_dev_qp *qp, uint64_t idx,
					    const struct gdak_dev_av *av, uint32_t flags,
					    uint64_t raddr, uint32_t rkey, uint64_t add,
					    uint64_t laddr, uint32_t lkey)
{
	return gdak_dev_dc_wqe_atomic(qp, idx, av, MLX5_OPCODE_ATOMIC_FA, flags, raddr, rkey, add,
				      0, laddr, lkey);
}

GDAK_DEV uint32_t gdak_dev_dc_wqe_cas(const struct gdak_dev_qp *qp, uint64_t idx,
				      const struct gdak_dev_av *av, uint32_t flags, uint64_t raddr,
				      uint32_t rkey, uint64_t compare, uint64_t swap,
				      uint64_t laddr, uint32_t lkey)
{
	return gdak_dev_dc_wqe_atomic(qp, idx, av, MLX5_OPCODE_ATOMIC_CS, flags, raddr, rkey, swap,
				      compare, laddr, lkey);
}

/* ---- high level: one peer per call ---------------------------------------------- */

/* Reserve, build with the caller's builder result, publish: the shape every
 * call below shares.  nbb is known before the builder runs. */
#define GDAK_DEV_DC_POST(q_, av_, nbb_, flags_, ticket_, opcode_, nds_, build_)            \
	do {                                                                               \
		uint64_t s_;                                                               \
		uint32_t f_;                                                               \
		int rc_;                                                                   \
		if (gdak_dev_unlikely((av_)->ds != 1 && (av_)->ds != 3))                   \
			return -EINVAL;                                                    \
		f_ = (flags_);                                                             \
		rc_ = gdak_dev_sq_begin((q_), (nbb_), &s_, &f_);                           \
		if (gdak_dev_unlikely(rc_))                                                \
			return rc_;                                                        \
		return gdak_dev_sq_finish((q_), s_, (nbb_), build_(s_, f_), f_, (ticket_), \
					  (opcode_), (nds_));                              \
	} while (0)

/* One RDMA_WRITE (from sge) or RDMA_READ (into sge) at the DCT av names:
 * dc_put's and dc_get's body; opcode is a constant at every call. */
GDAK_DEV int gdak_dev_dc_rdma_sge(struct gdak_dev_qp *qp, uint8_t opcode,
				  const struct gdak_dev_av *av, const struct gdak_dev_sge *sge,
				  uint64_t raddr, uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
#define B_(s, f)                                                           \
	(opcode == MLX5_OPCODE_RDMA_READ                                   \
		 ? gdak_dev_dc_wqe_read(qp, s, av, f, raddr, rkey, sge, 1) \
		 : gdak_dev_dc_wqe_write(qp, s, av, f, raddr, rkey, sge, 1))
	GDAK_DEV_DC_POST(qp, av, gdak_dev_dc_bbs_sge(av, 1, 1), flags, ticket, opcode, 3 + av->ds,
			 B_);
#undef B_
}

/* RDMA_WRITE of one local SGE to (raddr, rkey) at the DCT av names. */
GDAK_DEV int gdak_dev_dc_put(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
			     const struct gdak_dev_sge *src, uint64_t raddr, uint32_t rkey,
			     uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_dc_rdma_sge(qp, MLX5_OPCODE_RDMA_WRITE, av, src, raddr, rkey, flags,
				    ticket);
}

/* RDMA_READ from (raddr, rkey) at the DCT av names into dst. */
GDAK_DEV int gdak_dev_dc_get(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
			     const struct gdak_dev_sge *dst, uint64_t raddr, uint32_t rkey,
			     uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_dc_rdma_sge(qp, MLX5_OPCODE_RDMA_READ, av, dst, raddr, rkey, flags, ticket);
}

/* RDMA_WRITE of len inline bytes (len <= qp->max_inline). */
GDAK_DEV int gdak_dev_dc_put_inline(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
				    const void *data, uint32_t len, uint64_t raddr, uint32_t rkey,
				    uint32_t flags, uint64_t *ticket)
{
	if (gdak_dev_unlikely(len > qp->max_inline || (len && !data)))
		return -EINVAL;
#define B_(s, f) gdak_dev_dc_wqe_write_inline(qp, s, av, f, raddr, rkey, data, len)
	GDAK_DEV_DC_POST(qp, av, gdak_dev_dc_bbs_inline(av, 1, len), flags, ticket,
			 MLX5_OPCODE_RDMA_WRITE, 2 + av->ds + gdak_mlx5_inline_ds(len), B_);
#undef B_
}

/* SEND of one SGE to the DCT av names (it consumes one of its receive WQEs). */
GDAK_DEV int gdak_dev_dc_send(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
			      const struct gdak_dev_sge *src, uint32_t flags, uint64_t *ticket)
{
#define B_(s, f) gdak_dev_dc_wqe_send(qp, s, av, f, src, 1)
	GDAK_DEV_DC_POST(qp, av, gdak_dev_dc_bbs_sge(av, 0, 1), flags, ticket, MLX5_OPCODE_SEND,
			 2 + av->ds, B_);
#undef B_
}

GDAK_DEV int gdak_dev_dc_send_inline(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
				     const void *data, uint32_t len, uint32_t flags,
				     uint64_t *ticket)
{
	if (gdak_dev_unlikely(len > qp->max_inline || (len && !data)))
		return -EINVAL;
#define B_(s, f) gdak_dev_dc_wqe_send_inline(qp, s, av, f, data, len)
	GDAK_DEV_DC_POST(qp, av, gdak_dev_dc_bbs_inline(av, 0, len), flags, ticket,
			 MLX5_OPCODE_SEND, 1 + av->ds + gdak_mlx5_inline_ds(len), B_);
#undef B_
}

/* Non-blocking ATOMIC_FA / ATOMIC_CS at the DCT av names; result
 * (registered, lkey) holds the original value once gdak_dev_wait(ticket)
 * returned (read it with gdak_dev_amo_result). */
GDAK_DEV int gdak_dev_dc_fetch_add_nbi(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
				       uint64_t raddr, uint32_t rkey, uint64_t add,
				       uint64_t *result, uint32_t lkey, uint32_t flags,
				       uint64_t *ticket)
{
#define B_(s, f) \
	gdak_dev_dc_wqe_fetch_add(qp, s, av, f, raddr, rkey, add, (uint64_t)(uintptr_t)result, lkey)
	GDAK_DEV_DC_POST(qp, av, gdak_dev_dc_bbs_atomic(av), flags, ticket, MLX5_OPCODE_ATOMIC_FA,
			 4 + av->ds, B_);
#undef B_
}

GDAK_DEV int gdak_dev_dc_compare_swap_nbi(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
					  uint64_t raddr, uint32_t rkey, uint64_t compare,
					  uint64_t swap, uint64_t *result, uint32_t lkey,
					  uint32_t flags, uint64_t *ticket)
{
#define B_(s, f)                                                                                   \
	gdak_dev_dc_wqe_cas(qp, s, av, f, raddr, rkey, compare, swap, (uint64_t)(uintptr_t)result, \
			    lkey)
	GDAK_DEV_DC_POST(qp, av, gdak_dev_dc_bbs_atomic(av), flags, ticket, MLX5_OPCODE_ATOMIC_CS,
			 4 + av->ds, B_);
#undef B_
}

/* Blocking forms: *old = the remote word before the operation. */
GDAK_DEV int gdak_dev_dc_fetch_add(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
				   uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t *result,
				   uint32_t lkey, uint64_t *old)
{
	uint64_t t;
	int rc = gdak_dev_dc_fetch_add_nbi(qp, av, raddr, rkey, add, result, lkey,
					   GDAK_DEV_WQE_SIGNAL, &t);
	return gdak_dev_amo_wait(qp, rc, t, result, old, GDAK_DEV_FOREVER, NULL);
}

GDAK_DEV int gdak_dev_dc_compare_swap(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
				      uint64_t raddr, uint32_t rkey, uint64_t compare,
				      uint64_t swap, uint64_t *result, uint32_t lkey, uint64_t *old)
{
	uint64_t t;
	int rc = gdak_dev_dc_compare_swap_nbi(qp, av, raddr, rkey, compare, swap, result, lkey,
					      GDAK_DEV_WQE_SIGNAL, &t);
	return gdak_dev_amo_wait(qp, rc, t, result, old, GDAK_DEV_FOREVER, NULL);
}

/*
 * put+signal to one DCT: RDMA_WRITE of src, then ATOMIC_FA of sig_add on
 * the signal word, in one reservation and one doorbell.  Both WQEs carry
 * the same AV, so they travel on one stream and the DCT applies them in
 * order: whoever sees the signal sees the data.  The fetched value lands
 * in the DCI's scratch word.  -EINVAL without one.
 */
GDAK_DEV int gdak_dev_dc_put_signal(struct gdak_dev_qp *qp, const struct gdak_dev_av *av,
				    const struct gdak_dev_sge *src, uint64_t raddr, uint32_t rkey,
				    uint64_t sig_raddr, uint32_t sig_rkey, uint64_t sig_add,
				    uint32_t flags, uint64_t *ticket)
{
	uint32_t b1, b2, f2, ok;
	uint64_t s;
	int rc;

	if (gdak_dev_unlikely(!qp->scratch_addr || (av->ds != 1 && av->ds != 3)))
		return -EINVAL;
	b1 = gdak_dev_dc_bbs_sge(av, 1, 1);
	b2 = gdak_dev_dc_bbs_atomic(av);
	rc = gdak_dev_sq_acquire(qp, b1 + b2, &s);
	if (gdak_dev_unlikely(rc))
		return rc;
	f2 = gdak_dev_sq_flags(qp, s, s + b1 + b2, flags);
	ok = gdak_dev_dc_wqe_write(qp, s, av, flags & ~GDAK_DEV_WQE_SIGNAL, raddr, rkey, src, 1);
	if (gdak_dev_unlikely(!ok)) {
		/* keep the slots' DS chain intact: NOP of the same size */
		gdak_dev_wqe_set_ctrl(qp, s, MLX5_OPCODE_NOP, 0, 1, 0, 0);
		if (b1 > 1)
			gdak_dev_wqe_set_ctrl(qp, s + 1, MLX5_OPCODE_NOP, 0, 1, 0, 0);
	}
	gdak_dev_dc_wqe_fetch_add(qp, s + b1, av, f2 & ~GDAK_DEV_WQE_FENCE, sig_raddr, sig_rkey,
				  sig_add, qp->scratch_addr, qp->scratch_lkey);
	if (ticket)
		*ticket = s + b1 + b2;
	return gdak_dev_sq_publish_db(
		qp, s, s + b1 + b2, s + b1, (f2 & GDAK_DEV_WQE_SIGNAL) != 0,
		gdak_dev_wqe_ctrl_db(qp, s + b1, MLX5_OPCODE_ATOMIC_FA, 0, 4 + av->ds));
}

#endif /* GDAK_DEV_DC_H */
