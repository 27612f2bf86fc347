/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/wqe.h - low-level send-queue access: reserve WQEBBs, address them,
 * and build mlx5 WQEs in place.  Not thread safe: the caller owns the queue
 * (exclusive QP, or slots it reserved through gdak/dev/rma.h).
 *
 * Indices are 64-bit WQEBB counts (they never wrap in practice); the ring
 * slot is idx & (sq_wqebb_cnt - 1) and the ctrl segment carries idx & 0xffff
 * (PRM "Send WQE ctrl segment": wqe_index is the 16-bit producer counter).
 * A WQE larger than one WQEBB may run past the end of the ring: its DS are
 * addressed one by one (gdak_dev_wqe_ds), so it continues at slot 0 exactly
 * as the hardware fetches it.
 *
 * Every builder returns the number of WQEBBs the WQE occupies (>= 1), or 0
 * when the request cannot be encoded (too many SGEs, inline data over
 * max_inline); a 0 wrote nothing to the ring.  Sizes are known before
 * writing: gdak_dev_wqe_bbs_sge / gdak_dev_wqe_bbs_inline.
 */
#ifndef GDAK_DEV_WQE_H
#define GDAK_DEV_WQE_H

#include <stddef.h>
#include <stdint.h>

#include <gdak/mlx5.h>
#include <gdak/dev/types.h>
#include <gdak/dev/ordering.h>

/* WQE flags (ctrl.fm_ce_se). */
enum gdak_dev_wqe_flags {
	/* CQ_UPDATE: a CQE on success too (0 = CQE only on error) */
	GDAK_DEV_WQE_SIGNAL = 1u << 0,
	/* Fence: do not start before every earlier RDMA_READ / atomic of the QP
	 * completed (IBA 10.8.3.3).  Emitted as rdma-core's MLX5_WQE_CTRL_FENCE
	 * (4 << 5); gdak/mlx5.h gives every non-zero fence mode this meaning. */
	GDAK_DEV_WQE_FENCE = 1u << 1,
	/* Solicited event on the responder (SEND / WRITE_IMM). */
	GDAK_DEV_WQE_SOLICITED = 1u << 2,
};

/* A local scatter/gather element (registered memory: address, length, lkey). */
struct gdak_dev_sge {
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
};

GDAK_DEV uint8_t gdak_dev_wqe_fm_ce_se(uint32_t flags)
{
	return (uint8_t)(((flags & GDAK_DEV_WQE_SIGNAL) ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
			 ((flags & GDAK_DEV_WQE_FENCE) ? MLX5_WQE_CTRL_FENCE : 0) |
			 ((flags & GDAK_DEV_WQE_SOLICITED) ? MLX5_WQE_CTRL_SOLICITED : 0));
}

/* ---- sizes ------------------------------------------------------------------ */

/* WQEBBs of a WQE with ctrl + (raddr) + nsge data segments. */
GDAK_DEV uint32_t gdak_dev_wqe_bbs_sge(int has_raddr, uint32_t nsge)
{
	return gdak_mlx5_wqebbs(1u + (has_raddr ? 1u : 0u) + nsge);
}
/* WQEBBs of a WQE with ctrl + (raddr) + len inline bytes. */
GDAK_DEV uint32_t gdak_dev_wqe_bbs_inline(int has_raddr, uint32_t len)
{
	return gdak_mlx5_wqebbs(1u + (has_raddr ? 1u : 0u) + gdak_mlx5_inline_ds(len));
}

/* ---- device-owned words ----------------------------------------------------------- */

/*
 * The QP's device-owned words (indices, the sticky error).  EXCLUSIVE: one
 * thread, or one cooperating group whose leader alone touches them, so
 * program order is all the ordering they need - plain accesses, which the
 * compiler may keep in registers and which never cost a system-scope
 * fence.  SHARED: acquire/release at system scope, as other posters and
 * pollers read them.
 */
GDAK_DEV uint64_t gdak_dev_own_load_u64(const struct gdak_dev_qp *qp, const uint64_t *p)
{
	if (qp->sharing == GDAK_DEV_SHARED)
		return gdak_dev_load_acquire_u64(p);
	return *p;
}

GDAK_DEV void gdak_dev_own_store_u64(const struct gdak_dev_qp *qp, uint64_t *p, uint64_t v)
{
	if (qp->sharing == GDAK_DEV_SHARED)
		gdak_dev_store_release_u64(p, v);
	else
		*p = v;
}

GDAK_DEV uint32_t gdak_dev_own_load_u32(const struct gdak_dev_qp *qp, const uint32_t *p)
{
	if (qp->sharing == GDAK_DEV_SHARED)
		return gdak_dev_load_acquire_u32(p);
	return *p;
}

/* ---- reservation and addressing ------------------------------------------------ */

/* Exclusive owner: take nbb WQEBBs, returning the first index.  Does not
 * check for room: reserving past sq_done + sq_wqebb_cnt overwrites WQEs the
 * NIC may not have fetched yet (a ConnectX executes the overwritten bytes;
 * the NIC model flags producer_overrun).  Check gdak_dev_sq_free_bbs first,
 * or use rma.h's calls, which wait for room. */
GDAK_DEV uint64_t gdak_dev_sq_reserve(struct gdak_dev_qp *qp, uint32_t nbb)
{
	uint64_t idx = qp->sq_resv;
	qp->sq_resv = idx + nbb;
	return idx;
}

/* WQEBBs that may be reserved now without overwriting a WQE whose
 * completion has not been seen. */
GDAK_DEV uint64_t gdak_dev_sq_free_bbs(const struct gdak_dev_qp *qp)
{
	uint64_t used = qp->sq_resv - gdak_dev_own_load_u64(qp, &qp->sq_done);
	return used >= qp->sq_wqebb_cnt ? 0 : qp->sq_wqebb_cnt - used;
}

/* The WQEBB at index idx. */
GDAK_DEV void *gdak_dev_wqe_ptr(const struct gdak_dev_qp *qp, uint64_t idx)
{
	return (char *)qp->sq_buf + ((size_t)(idx & (qp->sq_wqebb_cnt - 1)) << 6);
}

/* DS (16-byte unit) number k of the WQE starting at idx, wrapping at the
 * ring's end. */
GDAK_DEV void *gdak_dev_wqe_ds(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t k)
{
	uint64_t u = (idx << 2) + k;
	uint64_t mask = ((uint64_t)qp->sq_wqebb_cnt << 2) - 1;
	return (char *)qp->sq_buf + ((size_t)(u & mask) << 4);
}

/* ---- segments -------------------------------------------------------------------- */

/* Two 32-bit words (in memory order) as the 64-bit value a little-endian
 * load of those 8 bytes returns. */
GDAK_DEV uint64_t gdak_dev_pack32(uint32_t first, uint32_t second)
{
	return (uint64_t)first | ((uint64_t)second << 32);
}

/*
 * The ctrl segment's first 8 bytes, as a 64-bit value in memory order: what
 * the DB handler writes to the doorbell register (PRM "Doorbells": the
 * first 8 bytes of the last WQE's ctrl segment).
 *   [0] be32(opmod << 24 | (idx & 0xffff) << 8 | opcode)
 *   [1] qpn_ds_be | be32(ds)
 * Callers that know what they built ring with it instead of loading it back
 * from the ring (a PCIe round trip when the ring is mapped host memory).
 */
GDAK_DEV uint64_t gdak_dev_wqe_ctrl_db(const struct gdak_dev_qp *qp, uint64_t idx, uint8_t opcode,
				       uint8_t opmod, uint32_t ds)
{
	return gdak_dev_pack32(gdak_htobe32(gdak_mlx5_ctrl_w0(opcode, opmod, (uint16_t)idx)),
			       qp->qpn_ds_be | gdak_htobe32(gdak_mlx5_ctrl_w1(0, ds)));
}

/*
 * The ctrl segment, one 16-byte store:
 *   bytes 0..7   gdak_dev_wqe_ctrl_db
 *   byte 8       signature, 9..10 dci_stream_channel_id = 0, 11 fm_ce_se
 *   bytes 12..15 imm, big-endian as it travels
 */
GDAK_DEV void gdak_dev_wqe_set_ctrl(const struct gdak_dev_qp *qp, uint64_t idx, uint8_t opcode,
				    uint8_t opmod, uint32_t ds, uint8_t fm_ce_se, uint32_t imm_be)
{
	gdak_dev_store_16(gdak_dev_wqe_ptr(qp, idx), gdak_dev_wqe_ctrl_db(qp, idx, opcode, opmod, ds),
			  gdak_dev_pack32((uint32_t)fm_ce_se << 24, imm_be));
}

/* Remote address segment: be64 raddr, be32 rkey, reserved. */
GDAK_DEV void gdak_dev_wqe_set_raddr(void *seg, uint64_t raddr, uint32_t rkey)
{
	gdak_dev_store_16(seg, gdak_htobe64(raddr), gdak_dev_pack32(gdak_htobe32(rkey), 0));
}

/* Data segment: be32 byte_count, be32 lkey, be64 addr. */
GDAK_DEV void gdak_dev_wqe_set_data(void *seg, const struct gdak_dev_sge *sge)
{
	gdak_dev_store_16(seg, gdak_dev_pack32(gdak_htobe32(sge->len), gdak_htobe32(sge->lkey)),
			  gdak_htobe64(sge->addr));
}

/*
 * Inline segment starting at DS k: be32(len | MLX5_INLINE_SEG) then the
 * bytes, zero-padded to the DS boundary (hardware ignores the padding; zero
 * keeps ring bytes deterministic for traces and the BlueFlame comparison).
 * Each DS is assembled in registers and stored in one 16-byte store, DS by
 * DS, so a WQE that wraps the ring continues at slot 0.
 */
GDAK_DEV void gdak_dev_wqe_set_inline(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t k,
				      const void *data, uint32_t len)
{
	const uint8_t *src = (const uint8_t *)data;
	uint32_t total = 4 + len, nds = gdak_mlx5_inline_ds(len), pos = 0;
	for (uint32_t d = 0; d < nds; d++) {
		uint64_t q[2] = {0, 0};
		for (uint32_t b = 0; b < 16; b++, pos++) {
			uint64_t v;
			if (pos < 4)
				v = (uint8_t)(gdak_htobe32(len | MLX5_INLINE_SEG) >> (8 * pos));
			else
				v = pos < total ? src[pos - 4] : 0;
			q[b >> 3] |= v << (8 * (b & 7));
		}
		gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, k + d), q[0], q[1]);
	}
}

/* ---- builders --------------------------------------------------------------------- */

/* The DS budget of one WQE: 6-bit ds field. */
#define GDAK_DEV_WQE_MAX_SGE (GDAK_MLX5_MAX_DS - 2)

/* The optional raddr and nsge data segments from DS k on, then the ctrl
 * (ds in all): the WQEBBs the WQE takes.  The RC and DC builders' tail. */
GDAK_DEV uint32_t gdak_dev_wqe_sge_tail(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t k,
					uint32_t ds, uint8_t opcode, uint32_t flags,
					uint32_t imm_be, int has_raddr, uint64_t raddr,
					uint32_t rkey, const struct gdak_dev_sge *sge,
					uint32_t nsge)
{
	if (has_raddr)
		gdak_dev_wqe_set_raddr(gdak_dev_wqe_ds(qp, idx, k++), raddr, rkey);
	for (uint32_t i = 0; i < nsge; i++)
		gdak_dev_wqe_set_data(gdak_dev_wqe_ds(qp, idx, k++), &sge[i]);
	gdak_dev_wqe_set_ctrl(qp, idx, opcode, 0, ds, gdak_dev_wqe_fm_ce_se(flags), imm_be);
	return gdak_mlx5_wqebbs(ds);
}

/* ctrl + optional raddr + nsge data segments. */
GDAK_DEV uint32_t gdak_dev_wqe_sge_op(const struct gdak_dev_qp *qp, uint64_t idx, uint8_t opcode,
				      uint32_t flags, uint32_t imm_be, int has_raddr,
				      uint64_t raddr, uint32_t rkey, const struct gdak_dev_sge *sge,
				      uint32_t nsge)
{
	uint32_t ds = 1 + (has_raddr ? 1 : 0) + nsge;
	if (gdak_dev_unlikely(ds > GDAK_MLX5_MAX_DS || (nsge && !sge)))
		return 0;
	return gdak_dev_wqe_sge_tail(qp, idx, 1, ds, opcode, flags, imm_be, has_raddr, raddr, rkey,
				     sge, nsge);
}

/* ctrl + optional raddr + inline data (len <= qp->max_inline). */
GDAK_DEV uint32_t gdak_dev_wqe_inline_op(const struct gdak_dev_qp *qp, uint64_t idx,
					 uint8_t opcode, uint32_t flags, uint32_t imm_be,
					 int has_raddr, uint64_t raddr, uint32_t rkey,
					 const void *data, uint32_t len)
{
	uint32_t k = 1, ds = 1 + (has_raddr ? 1 : 0) + gdak_mlx5_inline_ds(len);
	if (gdak_dev_unlikely(len > qp->max_inline || ds > GDAK_MLX5_MAX_DS || (len && !data)))
		return 0;
	if (has_raddr)
		gdak_dev_wqe_set_raddr(gdak_dev_wqe_ds(qp, idx, k++), raddr, rkey);
	gdak_dev_wqe_set_inline(qp, idx, k, data, len);
	gdak_dev_wqe_set_ctrl(qp, idx, opcode, 0, ds, gdak_dev_wqe_fm_ce_se(flags), imm_be);
	return gdak_mlx5_wqebbs(ds);
}

/* NOP: ctrl only.  Signalled, it is the cheapest way to learn that
 * everything before it completed (RC completes in order). */
GDAK_DEV uint32_t gdak_dev_wqe_nop(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t flags)
{
	gdak_dev_wqe_set_ctrl(qp, idx, MLX5_OPCODE_NOP, 0, 1, gdak_dev_wqe_fm_ce_se(flags), 0);
	return 1;
}

GDAK_DEV uint32_t gdak_dev_wqe_write(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t flags,
				     uint64_t raddr, uint32_t rkey, const struct gdak_dev_sge *sge,
				     uint32_t nsge)
{
	return gdak_dev_wqe_sge_op(qp, idx, MLX5_OPCODE_RDMA_WRITE, flags, 0, 1, raddr, rkey,
				   sge, nsge);
}

/* imm is in host order; it travels (and lands in the responder's CQE)
 * big-endian. */
GDAK_DEV uint32_t gdak_dev_wqe_write_imm(const struct gdak_dev_qp *qp, uint64_t idx,
					 uint32_t flags, uint64_t raddr, uint32_t rkey,
					 const struct gdak_dev_sge *sge, uint32_t nsge, uint32_t imm)
{
	return gdak_dev_wqe_sge_op(qp, idx, MLX5_OPCODE_RDMA_WRITE_IMM, flags,
				   gdak_htobe32(imm), 1, raddr, rkey, sge, nsge);
}

GDAK_DEV uint32_t gdak_dev_wqe_write_inline(const struct gdak_dev_qp *qp, uint64_t idx,
					    uint32_t flags, uint64_t raddr, uint32_t rkey,
					    const void *data, uint32_t len)
{
	return gdak_dev_wqe_inline_op(qp, idx, MLX5_OPCODE_RDMA_WRITE, flags, 0, 1, raddr, rkey,
				      data, len);
}

GDAK_DEV uint32_t gdak_dev_wqe_write_imm_inline(const struct gdak_dev_qp *qp, uint64_t idx,
						uint32_t flags, uint64_t raddr, uint32_t rkey,
						const void *data, uint32_t len, uint32_t imm)
{
	return gdak_dev_wqe_inline_op(qp, idx, MLX5_OPCODE_RDMA_WRITE_IMM, flags,
				      gdak_htobe32(imm), 1, raddr, rkey, data, len);
}

GDAK_DEV uint32_t gdak_dev_wqe_send(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t flags,
				    const struct gdak_dev_sge *sge, uint32_t nsge)
{
	return gdak_dev_wqe_sge_op(qp, idx, MLX5_OPCODE_SEND, flags, 0, 0, 0, 0, sge, nsge);
}

GDAK_DEV uint32_t gdak_dev_wqe_send_imm(const struct gdak_dev_qp *qp, uint64_t idx,
					uint32_t flags, const struct gdak_dev_sge *sge,
					uint32_t nsge, uint32_t imm)
{
	return gdak_dev_wqe_sge_op(qp, idx, MLX5_OPCODE_SEND_IMM, flags, gdak_htobe32(imm), 0, 0,
				   0, sge, nsge);
}

GDAK_DEV uint32_t gdak_dev_wqe_send_inline(const struct gdak_dev_qp *qp, uint64_t idx,
					   uint32_t flags, const void *data, uint32_t len)
{
	return gdak_dev_wqe_inline_op(qp, idx, MLX5_OPCODE_SEND, flags, 0, 0, 0, 0, data, len);
}

GDAK_DEV uint32_t gdak_dev_wqe_send_imm_inline(const struct gdak_dev_qp *qp, uint64_t idx,
					       uint32_t flags, const void *data, uint32_t len,
					       uint32_t imm)
{
	return gdak_dev_wqe_inline_op(qp, idx, MLX5_OPCODE_SEND_IMM, flags, gdak_htobe32(imm), 0,
				      0, 0, data, len);
}

/* RDMA_READ into the local SGEs (at least one: min DS is 3). */
GDAK_DEV uint32_t gdak_dev_wqe_read(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t flags,
				    uint64_t raddr, uint32_t rkey, const struct gdak_dev_sge *sge,
				    uint32_t nsge)
{
	if (gdak_dev_unlikely(nsge == 0))
		return 0;
	return gdak_dev_wqe_sge_op(qp, idx, MLX5_OPCODE_RDMA_READ, flags, 0, 1, raddr, rkey, sge,
				   nsge);
}

/*
 * 8-byte atomics: ctrl + raddr + atomic + data (4 DS, one WQEBB).  The data
 * segment receives the remote word's original value, written big-endian as
 * ConnectX writes it (rma.h converts); raddr must be 8-byte aligned.
 */
GDAK_DEV uint32_t gdak_dev_wqe_atomic(const struct gdak_dev_qp *qp, uint64_t idx, uint8_t opcode,
				      uint32_t flags, uint64_t raddr, uint32_t rkey,
				      uint64_t swap_add, uint64_t compare, uint64_t laddr,
				      uint32_t lkey)
{
	struct gdak_dev_sge sge = {laddr, 8, lkey};
	gdak_dev_wqe_set_raddr(gdak_dev_wqe_ds(qp, idx, 1), raddr, rkey);
	/* atomic segment: be64 swap_add, be64 compare */
	gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, 2), gdak_htobe64(swap_add), gdak_htobe64(compare));
	gdak_dev_wqe_set_data(gdak_dev_wqe_ds(qp, idx, 3), &sge);
	gdak_dev_wqe_set_ctrl(qp, idx, opcode, 0, 4, gdak_dev_wqe_fm_ce_se(flags), 0);
	return 1;
}

GDAK_DEV uint32_t gdak_dev_wqe_fetch_add(const struct gdak_dev_qp *qp, uint64_t idx,
					 uint32_t flags, uint64_t raddr, uint32_t rkey,
					 uint64_t add, uint64_t laddr, uint32_t lkey)
{
	return gdak_dev_wqe_atomic(qp, idx, MLX5_OPCODE_ATOMIC_FA, flags, raddr, rkey, add, 0,
				   laddr, lkey);
}

GDAK_DEV uint32_t gdak_dev_wqe_cas(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t flags,
				   uint64_t raddr, uint32_t rkey, uint64_t compare, uint64_t swap,
				   uint64_t laddr, uint32_t lkey)
{
	return gdak_dev_wqe_atomic(qp, idx, MLX5_OPCODE_ATOMIC_CS, flags, raddr, rkey, swap,
				   compare, laddr, lkey);
}

/*
 * Masked 8-byte atomics: ctrl + raddr + 32-byte masked segment + data
 * (5 DS, two WQEBBs).  CS: swap the bits under swap_mask where the bits
 * under compare_mask equal compare.  FA: add, with carries stopped at the
 * bits set in boundary (each set bit ends a field); the compare fields are 0.
 */
GDAK_DEV uint32_t gdak_dev_wqe_masked(const struct gdak_dev_qp *qp, uint64_t idx, uint8_t opcode,
				      uint32_t flags, uint64_t raddr, uint32_t rkey,
				      uint64_t swap_add, uint64_t compare, uint64_t swap_add_mask,
				      uint64_t compare_mask, uint64_t laddr, uint32_t lkey)
{
	struct gdak_dev_sge sge = {laddr, 8, lkey};
	gdak_dev_wqe_set_raddr(gdak_dev_wqe_ds(qp, idx, 1), raddr, rkey);
	gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, 2), gdak_htobe64(swap_add), gdak_htobe64(compare));
	gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, 3), gdak_htobe64(swap_add_mask),
			  gdak_htobe64(compare_mask));
	gdak_dev_wqe_set_data(gdak_dev_wqe_ds(qp, idx, 4), &sge);
	gdak_dev_wqe_set_ctrl(qp, idx, opcode, 0, 5, gdak_dev_wqe_fm_ce_se(flags), 0);
	return 2;
}

GDAK_DEV uint32_t gdak_dev_wqe_masked_cas(const struct gdak_dev_qp *qp, uint64_t idx,
					  uint32_t flags, uint64_t raddr, uint32_t rkey,
					  uint64_t compare, uint64_t compare_mask, uint64_t swap,
					  uint64_t swap_mask, uint64_t laddr, uint32_t lkey)
{
	return gdak_dev_wqe_masked(qp, idx, MLX5_OPCODE_ATOMIC_MASKED_CS, flags, raddr, rkey,
				   swap, compare, swap_mask, compare_mask, laddr, lkey);
}

GDAK_DEV uint32_t gdak_dev_wqe_masked_fetch_add(const struct gdak_dev_qp *qp, uint64_t idx,
						uint32_t flags, uint64_t raddr, uint32_t rkey,
						uint64_t add, uint64_t boundary, uint64_t laddr,
						uint32_t lkey)
{
	return gdak_dev_wqe_masked(qp, idx, MLX5_OPCODE_ATOMIC_MASKED_FA, flags, raddr, rkey, add,
				   0, boundary, 0, laddr, lkey);
}

/*
 * Extended 4-byte atomics (ctrl opmod 0x08, <gdak/mlx5.h>): ctrl + raddr +
 * one 16-byte segment + a 4-byte data segment (DS 4, one WQEBB).  The data
 * segment receives the target's original 32-bit value big-endian; raddr
 * must be 4-byte aligned.  FA: add, carries stopped at the bits set in
 * boundary (0: a plain 32-bit add).  CS: where the bits under compare_mask
 * equal compare, the bits under swap_mask come from swap (both masks all
 * ones: a plain 32-bit compare-and-swap).
 */
GDAK_DEV uint32_t gdak_dev_wqe_atomic32(const struct gdak_dev_qp *qp, uint64_t idx, uint8_t opcode,
					uint32_t flags, uint64_t raddr, uint32_t rkey, uint32_t v0,
					uint32_t v1, uint32_t m0, uint32_t m1, uint64_t laddr,
					uint32_t lkey)
{
	struct gdak_dev_sge sge = { laddr, 4, lkey };
	gdak_dev_wqe_set_raddr(gdak_dev_wqe_ds(qp, idx, 1), raddr, rkey);
	gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, 2),
			  gdak_dev_pack32(gdak_htobe32(v0), gdak_htobe32(v1)),
			  gdak_dev_pack32(gdak_htobe32(m0), gdak_htobe32(m1)));
	gdak_dev_wqe_set_data(gdak_dev_wqe_ds(qp, idx, 3), &sge);
	gdak_dev_wqe_set_ctrl(qp, idx, opcode, GDAK_MLX5_OPMOD_EXT_ATOMIC_4B, 4,
			      gdak_dev_wqe_fm_ce_se(flags), 0);
	return 1;
}

GDAK_DEV uint32_t gdak_dev_wqe_fetch_add32(const struct gdak_dev_qp *qp, uint64_t idx,
					   uint32_t flags, uint64_t raddr, uint32_t rkey,
					   uint32_t add, uint32_t boundary, uint64_t laddr,
					   uint32_t lkey)
{
	return gdak_dev_wqe_atomic32(qp, idx, MLX5_OPCODE_ATOMIC_MASKED_FA, flags, raddr, rkey, add,
				     boundary, 0, 0, laddr, lkey);
}

GDAK_DEV uint32_t gdak_dev_wqe_cas32(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t flags,
				     uint64_t raddr, uint32_t rkey, uint32_t compare, uint32_t swap,
				     uint64_t laddr, uint32_t lkey)
{
	return gdak_dev_wqe_atomic32(qp, idx, MLX5_OPCODE_ATOMIC_MASKED_CS, flags, raddr, rkey,
				     swap, compare, 0xffffffffu, 0xffffffffu, laddr, lkey);
}

/*
 * DUMP (opcode 0x23): ctrl + one data segment (DS 2).  The NIC reads the
 * local range and sends nothing; the WQE completes in order.  NVSHMEM posts
 * it fenced after RDMA_READs (get with ordering): its CQE then says the
 * READs before it have landed.
 */
GDAK_DEV uint32_t gdak_dev_wqe_dump(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t flags,
				    uint64_t laddr, uint32_t len, uint32_t lkey)
{
	struct gdak_dev_sge sge = { laddr, len, lkey };
	gdak_dev_wqe_set_data(gdak_dev_wqe_ds(qp, idx, 1), &sge);
	gdak_dev_wqe_set_ctrl(qp, idx, GDAK_MLX5_OPCODE_DUMP, 0, 2, gdak_dev_wqe_fm_ce_se(flags),
			      0);
	return 1;
}

/*
 * WAIT (cross-channel, opcode 0x0f, opmod 0): ctrl + the wait segment (DS 2:
 * 8 reserved bytes, be32 max_index, be32 CQ number).  The QP runs nothing
 * behind it until CQ cqn has produced its CQE number max_index (counted
 * from 0).  The counter/signal pattern: a companion QP waits on the main
 * QP's send CQ, then bumps a counter.
 */
GDAK_DEV uint32_t gdak_dev_wqe_wait_cq(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t flags,
				       uint32_t cqn, uint32_t max_index)
{
	gdak_dev_store_16(gdak_dev_wqe_ds(qp, idx, 1), 0,
			  gdak_dev_pack32(gdak_htobe32(max_index), gdak_htobe32(cqn & 0xffffff)));
	gdak_dev_wqe_set_ctrl(qp, idx, GDAK_MLX5_OPCODE_WAIT, GDAK_MLX5_WAIT_OPMOD_CQ,
			      GDAK_MLX5_WAIT_DS, gdak_dev_wqe_fm_ce_se(flags), 0);
	return 1;
}

/* WQEBBs of the WQE already written at idx (from its ctrl's DS count). */
GDAK_DEV uint32_t gdak_dev_wqe_bbs_at(const struct gdak_dev_qp *qp, uint64_t idx)
{
	const uint32_t *w = (const uint32_t *)gdak_dev_wqe_ptr(qp, idx);
	return gdak_mlx5_wqe_bbs(gdak_mlx5_ctrl_w1_ds(gdak_be32toh(w[1])));
}

#endif /* GDAK_DEV_WQE_H */
