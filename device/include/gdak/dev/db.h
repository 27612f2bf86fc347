/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/db.h - make written WQEs visible to the NIC and ring it.
 *
 * Sequence (PRM "Doorbell record" / "Doorbells"; rdma-core mlx5_post_send):
 *   1+2. send doorbell record, dbrec[MLX5_SND_DBR] = be32(new_pi & 0xffff),
 *        as a release store: the WQE stores before it become visible first
 *   3. ring, by the QP's handler:
 *      DB        the first 8 bytes of the last WQE's ctrl segment to the
 *                doorbell register (8-byte store); a fence before it on
 *                host threads only (gdak_dev_barrier_dbrec_to_ring says why)
 *      BF        the same barrier, then the whole 64-byte WQE to the BlueFlame
 *                register - only when this doorbell covers exactly one
 *                single-WQEBB WQE; anything larger falls back to DB
 *      CPU_PROXY release-store the 64-bit producer index to *proxy_pi; a CPU
 *                thread watching it rings the NIC for us (hosts where the
 *                GPU cannot map the UAR page)
 *
 * Not thread safe: one submitter at a time (exclusive owner, or the holder of
 * the producer-order token in rma.h's shared mode).
 */
#ifndef GDAK_DEV_DB_H
#define GDAK_DEV_DB_H

#include <stdint.h>

#include <gdak/mlx5.h>
#include <gdak/dev/types.h>
#include <gdak/dev/ordering.h>
#include <gdak/dev/wqe.h>

/* Step 2 alone: publish the producer index in the send doorbell record.
 * One release store at system scope: it orders this thread's WQE stores
 * before the record (step 1 and 2 in one instruction under CUDA,
 * st.release.sys; no separate fence). */
GDAK_DEV void gdak_dev_sq_update_dbrec(struct gdak_dev_qp *qp, uint64_t new_pi)
{
	gdak_dev_store_release_u32(&qp->dbrec[MLX5_SND_DBR],
				   gdak_mlx5_sq_dbrec_value((uint32_t)new_pi));
}

/*
 * Step 3 alone: ring for the WQE at last_idx, the last one below new_pi;
 * single says the doorbell covers only that one WQE (BlueFlame allowed).
 * db: that WQE's first 8 ctrl bytes when the caller knows them
 * (gdak_dev_wqe_ctrl_db), or 0 to load them from the ring (a ctrl segment
 * is never 0: its DS count is at least 1).  BlueFlame loads the whole WQE
 * back from the ring.
 */
/*
 * The register (half) this doorbell goes to.  With two BlueFlame halves the
 * writes alternate, as rdma-core's bf->offset ^= bf->buf_size after every
 * post: two write-combined 64-byte writes to the same half could reach the
 * HCA merged or out of order.  Not thread safe - the caller holds the
 * doorbell (exclusive owner, or the producer-order turn).
 */
GDAK_DEV uint64_t *gdak_dev_db_reg_next(struct gdak_dev_qp *qp)
{
	uint64_t *reg = qp->db_reg;

	if (qp->bf_log_half) {
		reg = (uint64_t *)((char *)reg + ((size_t)qp->bf_half << qp->bf_log_half));
		qp->bf_half ^= 1;
	}
	return reg;
}

GDAK_DEV void gdak_dev_sq_ring_db(struct gdak_dev_qp *qp, uint64_t last_idx, uint64_t new_pi,
				  int single, uint64_t db)
{
	const uint64_t *wqe = (const uint64_t *)gdak_dev_wqe_ptr(qp, last_idx);

	if (qp->handler == GDAK_DEV_DB_CPU_PROXY) {
		gdak_dev_store_release_u64(qp->proxy_pi, new_pi);
	} else if (qp->handler == GDAK_DEV_DB_BF && single &&
		   gdak_dev_wqe_bbs_at(qp, last_idx) == 1) {
		uint64_t *reg = gdak_dev_db_reg_next(qp);

		gdak_dev_barrier_dbrec_to_ring();
		for (int i = 0; i < 8; i++)
			gdak_dev_mmio_store_u64(reg + i, wqe[i]);
	} else {
		/* DB, and BF for batches or multi-WQEBB WQEs */
		uint64_t *reg = gdak_dev_db_reg_next(qp);

		gdak_dev_barrier_dbrec_to_ring();
		gdak_dev_mmio_store_u64(reg, db ? db : wqe[0]);
	}
	qp->sq_db = new_pi;
}

/*
 * The register value DOCA GPUNetIO and NVSHMEM ring with: ctrl word 0 is
 * be32(new_pi << 8) (opcode 0, opmod 0), word 1 be32(qpn << 8) (DS 0).  The
 * HCA reads a DS-0 doorbell's index as the producer itself (a DS != 0 one
 * as the last WQE's index), so this form needs no WQE bytes at all - it is
 * the only one a QP without a doorbell record (GDAK_QP_F_SQ_NO_DBREC) can
 * use when the last WQE is larger than one WQEBB.
 */
GDAK_DEV uint64_t gdak_dev_db_value_pi(const struct gdak_dev_qp *qp, uint64_t new_pi)
{
	return gdak_dev_pack32(gdak_htobe32((uint32_t)(new_pi & 0xffff) << 8), qp->qpn_ds_be);
}

/* Ring with the producer-index form (no record written: the caller's choice
 * of order, e.g. DOCA's ring-record-ring). */
GDAK_DEV void gdak_dev_sq_ring_pi(struct gdak_dev_qp *qp, uint64_t new_pi)
{
	uint64_t *reg = gdak_dev_db_reg_next(qp);

	gdak_dev_barrier_dbrec_to_ring();
	gdak_dev_mmio_store_u64(reg, gdak_dev_db_value_pi(qp, new_pi));
	qp->sq_db = new_pi;
}

GDAK_DEV void gdak_dev_sq_ring(struct gdak_dev_qp *qp, uint64_t last_idx, uint64_t new_pi,
			       int single)
{
	gdak_dev_sq_ring_db(qp, last_idx, new_pi, single, 0);
}

/*
 * Exclusive submit: the WQEs in [sq_ready, new_pi) were written, the last
 * starting at last_idx.  Record, ring, then advance sq_ready.
 */
GDAK_DEV void gdak_dev_sq_submit(struct gdak_dev_qp *qp, uint64_t last_idx, uint64_t new_pi)
{
	uint64_t prev = qp->sq_ready;
	gdak_dev_sq_update_dbrec(qp, new_pi);
	gdak_dev_sq_ring(qp, last_idx, new_pi, last_idx == prev);
	gdak_dev_own_store_u64(qp, &qp->sq_ready, new_pi);
}

#endif /* GDAK_DEV_DB_H */
