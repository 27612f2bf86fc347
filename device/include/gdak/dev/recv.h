/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/recv.h - the receive side of two-sided operations: post receive
 * WQEs and poll the receive CQ.
 *
 * An RC receive WQE is a list of data segments, 16 * max_sge bytes (the RQ
 * stride); a list shorter than max_sge ends with a segment whose lkey is
 * MLX5_INVALID_LKEY (PRM "Receive WQE"; rdma-core mlx5_post_recv).  The
 * receive doorbell record dbrec[MLX5_RCV_DBR] = be32(rq_pi & 0xffff) is all
 * the NIC needs: there is no receive doorbell register.  Receive WQEs are
 * consumed in order, so a responder CQE's wqe_counter names the RQ slot and
 * retires it (rq_done = its index + 1).
 *
 * Exclusive QPs use rq_pi / rq_done directly; shared QPs serialise posting
 * and polling with qp->rq_lock.
 */
#ifndef GDAK_DEV_RECV_H
#define GDAK_DEV_RECV_H

#include <errno.h>
#include <stdint.h>

#include <gdak/mlx5.h>
#include <gdak/dev/types.h>
#include <gdak/dev/ordering.h>
#include <gdak/dev/wqe.h>
#include <gdak/dev/cq.h>

/* Receive WQE at index idx. */
GDAK_DEV void *gdak_dev_rwqe_ptr(const struct gdak_dev_qp *qp, uint64_t idx)
{
	return (char *)qp->rq_buf + ((size_t)(idx & (qp->rq_wqe_cnt - 1)) << qp->rq_log_stride);
}

GDAK_DEV uint32_t gdak_dev_rq_max_sge(const struct gdak_dev_qp *qp)
{
	return (1u << qp->rq_log_stride) / 16;
}

/* Low level: write the receive WQE at idx.  0, or -EINVAL (no RQ, too many
 * SGEs). */
GDAK_DEV int gdak_dev_rwqe_set(const struct gdak_dev_qp *qp, uint64_t idx,
			       const struct gdak_dev_sge *sge, uint32_t nsge)
{
	struct mlx5_wqe_data_seg *d;
	uint32_t max = gdak_dev_rq_max_sge(qp);
	if (gdak_dev_unlikely(!qp->rq_buf || nsge > max || (nsge && !sge)))
		return -EINVAL;
	d = (struct mlx5_wqe_data_seg *)gdak_dev_rwqe_ptr(qp, idx);
	for (uint32_t i = 0; i < nsge; i++)
		gdak_dev_wqe_set_data(&d[i], &sge[i]);
	if (nsge < max) {
		d[nsge].byte_count = 0;
		d[nsge].lkey = gdak_htobe32(MLX5_INVALID_LKEY);
		d[nsge].addr = 0;
	}
	return 0;
}

/* Low level: publish receive WQEs below new_pi (receive doorbell record). */
GDAK_DEV void gdak_dev_rq_update_dbrec(struct gdak_dev_qp *qp, uint64_t new_pi)
{
	gdak_dev_barrier_wqe_to_dbrec();
	gdak_dev_store_release_u32(&qp->dbrec[MLX5_RCV_DBR],
				   gdak_htobe32((uint32_t)new_pi & 0xffff));
}

GDAK_DEV int gdak_dev_rq_lock(struct gdak_dev_qp *qp, uint64_t deadline)
{
	uint32_t spins = 0;
	if (qp->sharing != GDAK_DEV_SHARED)
		return 0;
	while (gdak_dev_load_relaxed_u32(&qp->rq_lock) || gdak_dev_cas_u32(&qp->rq_lock, 0, 1)) {
		if (gdak_dev_expired(deadline, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
	return 0;
}

GDAK_DEV void gdak_dev_rq_unlock(struct gdak_dev_qp *qp)
{
	if (qp->sharing == GDAK_DEV_SHARED)
		gdak_dev_store_release_u32(&qp->rq_lock, 0);
}

/*
 * Post one receive WQE (the buffers a later incoming SEND lands in).
 * Returns 0, -ENOBUFS when the RQ is full (poll completions first), -EINVAL.
 */
GDAK_DEV int gdak_dev_recv_post(struct gdak_dev_qp *qp, const struct gdak_dev_sge *sge,
				uint32_t nsge)
{
	int rc;
	if (gdak_dev_unlikely(!qp->rq_buf))
		return -EINVAL;
	rc = gdak_dev_rq_lock(qp, GDAK_DEV_FOREVER);
	if (rc)
		return rc;
	if (qp->rq_pi - gdak_dev_load_acquire_u64(&qp->rq_done) >= qp->rq_wqe_cnt) {
		rc = -ENOBUFS;
	} else {
		rc = gdak_dev_rwqe_set(qp, qp->rq_pi, sge, nsge);
		if (!rc) {
			qp->rq_pi++;
			gdak_dev_rq_update_dbrec(qp, qp->rq_pi);
		}
	}
	gdak_dev_rq_unlock(qp);
	return rc;
}

/*
 * Poll the receive CQ once.  Returns 1 with *out filled (opcode
 * RESP_SEND / RESP_SEND_IMM / RESP_WR_IMM, byte_cnt, imm, wqe_index = the
 * receive WQE consumed), 0 when nothing arrived, -EIO for an error CQE
 * (*out: syndrome, wqe index; sticky in qp->rcq).
 */
GDAK_DEV int gdak_dev_recv_poll(struct gdak_dev_qp *qp, struct gdak_dev_cqe *out)
{
	struct gdak_dev_cq *cq = &qp->rcq;
	int rc;
	if (qp->sharing == GDAK_DEV_SHARED) {
		if (gdak_dev_load_relaxed_u32(&qp->rq_lock) || gdak_dev_cas_u32(&qp->rq_lock, 0, 1))
			return 0;
	}
	rc = gdak_dev_cq_poll_one(cq, qp->rq_done, out);
	if (rc != 0) {
		/* RDMA_WRITE_IMM consumes a receive WQE too (IBA 9.4.3) */
		gdak_dev_store_release_u64(&qp->rq_done, out->wqe_index + 1);
		gdak_dev_cq_update_dbrec(cq);
	}
	gdak_dev_rq_unlock(qp);
	return rc;
}

/* Wait for one receive completion.  0 (*out filled), -EIO (an error CQE,
 * now or earlier: the receive side is sticky too), -ETIMEDOUT. */
GDAK_DEV int gdak_dev_recv_wait_timeout(struct gdak_dev_qp *qp, struct gdak_dev_cqe *out,
					uint64_t timeout_ns)
{
	uint64_t deadline = gdak_dev_deadline(timeout_ns);
	uint32_t spins = 0;
	for (;;) {
		int rc = gdak_dev_cq_error(&qp->rcq, out);
		if (rc)
			return rc;
		rc = gdak_dev_recv_poll(qp, out);
		if (rc > 0)
			return 0;
		if (rc < 0)
			return rc;
		if (gdak_dev_expired(deadline, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
}

GDAK_DEV int gdak_dev_recv_wait(struct gdak_dev_qp *qp, struct gdak_dev_cqe *out)
{
	return gdak_dev_recv_wait_timeout(qp, out, GDAK_DEV_FOREVER);
}

#endif /* GDAK_DEV_RECV_H */
