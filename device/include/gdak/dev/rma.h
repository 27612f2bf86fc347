/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/rma.h - the high-level device API: put, put of an inline value,
 * put+signal, get, atomics, wait(ticket), quiet, signal waits, send.
 *
 * Thread safety follows qp->sharing:
 *   EXCLUSIVE  one thread (or one cooperating warp/block) owns the QP;
 *              indices are plain loads and stores.
 *   SHARED     any number of threads and blocks.  A poster reserves WQEBBs
 *              with an atomic add on sq_resv, waits until its slots are free
 *              (sq_resv_end - sq_done <= sq_wqebb_cnt: no slot is reused
 *              before the completion of the WQE in it was seen), writes its
 *              WQEs, then waits for its turn (sq_ready == its start), writes
 *              the doorbell record, rings and passes the turn on
 *              (sq_ready = its end).  So doorbell records only move forward
 *              and the NIC sees WQEs in producer order even when posters
 *              finish writing out of order.  The send CQ is polled by
 *              whichever waiter takes scq.lock (try-lock).
 *
 * Tickets: a posting call returns the index just past its WQEs; wait(ticket)
 * returns once everything below it completed.  RC completes in order, so one
 * CQE retires all earlier WQEs: posting calls signal a WQE only when asked
 * or when it crosses a half-ring boundary (so that a poster waiting for room
 * always has a signalled WQE ahead of it), and wait/quiet add a signalled NOP
 * when nothing at or after the ticket is signalled.  The CQ must hold at
 * least sq_wqebb_cnt CQEs (every WQE may be signalled).
 *
 * Errors: posting calls fail fast with the sticky error (-EIO ...) once the
 * QP has failed; waits return it when the failure concerns their work.
 * Waits inside posting calls (room, turn) are bounded by qp->wait_timeout_ns
 * when non-zero (-ETIMEDOUT; in shared mode this marks the send queue dead,
 * since slots reserved and never published would stall every later poster).
 *
 * Atomics: the NIC writes the remote word's original value into the local
 * result buffer big-endian, as ConnectX does; the calls here return it in
 * host order.  The remote word itself is in host order (ConnectX in host
 * endianness mode), so signal words are read natively.
 */
#ifndef GDAK_DEV_RMA_H
#define GDAK_DEV_RMA_H

#include <errno.h>
#include <stdint.h>

#include <gdak/mlx5.h>
#include <gdak/dev/types.h>
#include <gdak/dev/ordering.h>
#include <gdak/dev/wqe.h>
#include <gdak/dev/db.h>
#include <gdak/dev/cq.h>
#include <gdak/dev/recv.h>

/* ---- an exclusive owner's working copy ------------------------------------------ */

/*
 * gdak_dev_qp_load copies the descriptor into *local (the calling thread's
 * registers or local memory); gdak_dev_qp_store writes the device-owned
 * words back.  In between, an EXCLUSIVE owner passes local to every call,
 * so its indices and sticky error never leave the thread: no PCIe round
 * trip when the exported descriptor is in mapped host memory, not even an
 * L2 access when it is in GPU memory (NVSHMEM and DOCA keep such state in
 * GPU memory for the same reason).  The rings, records and doorbell page
 * are reached through the pointers the copy holds.  Nothing else may use
 * the descriptor between load and store.
 */
GDAK_DEV void gdak_dev_qp_load(struct gdak_dev_qp *local, const struct gdak_dev_qp *qp)
{
	*local = *qp;
}

GDAK_DEV void gdak_dev_cq_store_state(struct gdak_dev_cq *cq, const struct gdak_dev_cq *local)
{
	cq->cons_idx = local->cons_idx;
	cq->err_wqe_counter = local->err_wqe_counter;
	cq->err_qpn = local->err_qpn;
	cq->err_wqe_index = local->err_wqe_index;
	/* last, as gdak_dev_cq_record_error: a reader that sees err sees its fields */
	gdak_dev_store_release_u32(&cq->err, local->err);
}

GDAK_DEV void gdak_dev_qp_store(struct gdak_dev_qp *qp, const struct gdak_dev_qp *local)
{
	qp->sq_resv = local->sq_resv;
	qp->sq_ready = local->sq_ready;
	qp->sq_done = local->sq_done;
	qp->sq_db = local->sq_db;
	qp->sq_sig = local->sq_sig;
	qp->sq_sig_start = local->sq_sig_start;
	qp->bf_half = local->bf_half;
	qp->rq_pi = local->rq_pi;
	qp->rq_done = local->rq_done;
	gdak_dev_cq_store_state(&qp->scq, &local->scq);
	gdak_dev_cq_store_state(&qp->rcq, &local->rcq);
}

/* ---- reservation and publication ------------------------------------------------ */

/* Whether [start, end) must be signalled: it holds the last WQEBB of a
 * half ring (with a one-slot ring, always). */
GDAK_DEV int gdak_dev_sq_want_signal(const struct gdak_dev_qp *qp, uint64_t start, uint64_t end)
{
	uint32_t sh = qp->sq_log_cnt ? qp->sq_log_cnt - 1 : 0;
	return qp->sq_log_cnt == 0 || (start >> sh) != (end >> sh);
}

/* Give up reserved slots [s, s + nbb) after a failed wait. */
GDAK_DEV void gdak_dev_sq_abandon(struct gdak_dev_qp *qp, uint64_t s, uint32_t nbb)
{
	if (qp->sharing != GDAK_DEV_SHARED) {
		if (qp->sq_resv == s + nbb)
			qp->sq_resv = s;
		return;
	}
	gdak_dev_cq_abort(&qp->scq);
}

GDAK_DEV uint64_t gdak_dev_sq_post_deadline(const struct gdak_dev_qp *qp)
{
	return gdak_dev_deadline(qp->wait_timeout_ns ? qp->wait_timeout_ns : GDAK_DEV_FOREVER);
}

/* One round of a posting wait that made no progress: the first round sets
 * the deadline; 0 after a back-off, or the QP's sticky error, or
 * -ETIMEDOUT once the deadline passed (then the caller abandons). */
GDAK_DEV int gdak_dev_sq_wait_step(struct gdak_dev_qp *qp, uint64_t *deadline, uint32_t *spins)
{
	int rc;
	if (!*spins)
		*deadline = gdak_dev_sq_post_deadline(qp);
	rc = gdak_dev_sq_failed_below(qp, UINT64_MAX, NULL);
	if (!rc && gdak_dev_expired(*deadline, *spins))
		rc = -ETIMEDOUT;
	if (!rc)
		gdak_dev_backoff(spins);
	return rc;
}

/*
 * Reserve nbb consecutive WQEBBs and wait until they are free.  nbb may be
 * at most half the ring (a larger request could wait for a completion that
 * only its own WQEs would signal).  0 and *start, or -EINVAL, the sticky
 * error, -ETIMEDOUT.
 */
GDAK_DEV int gdak_dev_sq_acquire(struct gdak_dev_qp *qp, uint32_t nbb, uint64_t *start)
{
	uint64_t s, deadline = 0;
	uint32_t spins = 0;
	int rc;

	if (gdak_dev_unlikely(nbb == 0 || (nbb > 1 && nbb > (qp->sq_wqebb_cnt >> 1))))
		return -EINVAL;
	rc = gdak_dev_sq_failed_below(qp, UINT64_MAX, NULL);
	if (gdak_dev_unlikely(rc))
		return rc;
	if (qp->sharing == GDAK_DEV_SHARED) {
		s = gdak_dev_fetch_add_u64(&qp->sq_resv, nbb);
	} else {
		s = qp->sq_resv;
		qp->sq_resv = s + nbb;
	}
	while (s + nbb - gdak_dev_own_load_u64(qp, &qp->sq_done) > qp->sq_wqebb_cnt) {
		if (gdak_dev_sq_progress_to(qp, s + nbb - qp->sq_wqebb_cnt) > 0)
			continue;
		rc = gdak_dev_sq_wait_step(qp, &deadline, &spins);
		if (gdak_dev_unlikely(rc)) {
			gdak_dev_sq_abandon(qp, s, nbb);
			return rc;
		}
	}
	*start = s;
	return 0;
}

/*
 * Make the WQEs in [start, end) visible and ring, the last one starting at
 * last_idx; signalled says whether that one asked for a CQE; db is its
 * first 8 ctrl bytes (gdak_dev_wqe_ctrl_db) or 0 (read from the ring).  In
 * shared mode, first wait for the turn: every earlier reservation
 * published.  EXCLUSIVE, the whole call is the WQE stores already made, one
 * release store of the doorbell record and the doorbell store: the indices
 * are plain stores (gdak_dev_own_store_u64).
 */
GDAK_DEV int gdak_dev_sq_publish_db(struct gdak_dev_qp *qp, uint64_t start, uint64_t end,
				    uint64_t last_idx, int signalled, uint64_t db)
{
	if (qp->sharing == GDAK_DEV_SHARED) {
		uint64_t deadline = 0;
		uint32_t spins = 0;
		while (gdak_dev_load_acquire_u64(&qp->sq_ready) != start) {
			int rc = gdak_dev_sq_wait_step(qp, &deadline, &spins);
			if (gdak_dev_unlikely(rc)) {
				gdak_dev_sq_abandon(qp, start, (uint32_t)(end - start));
				return rc;
			}
		}
		/* we hold the turn: sq_sig and the doorbell are ours alone */
		if (signalled)
			gdak_dev_store_release_u64(&qp->sq_sig, end);
	} else if (signalled) {
		qp->sq_sig_start = last_idx;
		qp->sq_sig = end;
	}
	gdak_dev_sq_update_dbrec(qp, end);
	gdak_dev_sq_ring_db(qp, last_idx, end, last_idx == start, db);
	/* the next producer's doorbell must not overtake this one */
	if (qp->sharing == GDAK_DEV_SHARED)
		gdak_dev_mmio_flush_writes();
	gdak_dev_own_store_u64(qp, &qp->sq_ready, end);
	return 0;
}

GDAK_DEV int gdak_dev_sq_publish(struct gdak_dev_qp *qp, uint64_t start, uint64_t end,
				 uint64_t last_idx, int signalled)
{
	return gdak_dev_sq_publish_db(qp, start, end, last_idx, signalled, 0);
}

/* flags for a WQE at [s, e): the caller's, plus the half-ring signal. */
GDAK_DEV uint32_t gdak_dev_sq_flags(const struct gdak_dev_qp *qp, uint64_t s, uint64_t e,
				    uint32_t flags)
{
	return gdak_dev_sq_want_signal(qp, s, e) ? flags | GDAK_DEV_WQE_SIGNAL : flags;
}

/* Reserve nbb WQEBBs at *s and turn *flags into gdak_dev_sq_flags' for
 * them: the opening of every single-WQE post.  0 or acquire's error (then
 * *flags is as it was). */
GDAK_DEV int gdak_dev_sq_begin(struct gdak_dev_qp *qp, uint32_t nbb, uint64_t *s, uint32_t *flags)
{
	int rc = gdak_dev_sq_acquire(qp, nbb, s);
	if (gdak_dev_unlikely(rc))
		return rc;
	*flags = gdak_dev_sq_flags(qp, *s, *s + nbb, *flags);
	return 0;
}

/* Publish one WQE of bbs WQEBBs at s, built with opcode and ds (so the
 * doorbell value is known without reading the ring back).  bbs == 0: the
 * builder refused it, which the callers rule out beforehand; publish a NOP
 * to keep order. */
GDAK_DEV int gdak_dev_sq_finish(struct gdak_dev_qp *qp, uint64_t s, uint32_t nbb, uint32_t bbs,
				uint32_t flags, uint64_t *ticket, uint8_t opcode, uint32_t ds)
{
	if (gdak_dev_unlikely(bbs == 0 || bbs > nbb)) {
		bbs = gdak_dev_wqe_nop(qp, s, flags);
		opcode = MLX5_OPCODE_NOP;
		ds = 1;
	}
	if (ticket)
		*ticket = s + nbb;
	return gdak_dev_sq_publish_db(qp, s, s + nbb, s, (flags & GDAK_DEV_WQE_SIGNAL) != 0,
				      gdak_dev_wqe_ctrl_db(qp, s, opcode, 0, ds));
}

/* ---- one-sided ------------------------------------------------------------------- */

/* One RDMA_WRITE (from sge) or RDMA_READ (into sge) WQE: put's and get's
 * body; opcode is a constant at every call, so only one builder remains. */
GDAK_DEV int gdak_dev_rdma_sge(struct gdak_dev_qp *qp, uint8_t opcode,
			       const struct gdak_dev_sge *sge, uint64_t raddr, uint32_t rkey,
			       uint32_t flags, uint64_t *ticket)
{
	uint64_t s;
	uint32_t bbs;
	int rc = gdak_dev_sq_begin(qp, 1, &s, &flags);
	if (gdak_dev_unlikely(rc))
		return rc;
	bbs = opcode == MLX5_OPCODE_RDMA_READ
		      ? gdak_dev_wqe_read(qp, s, flags, raddr, rkey, sge, 1)
		      : gdak_dev_wqe_write(qp, s, flags, raddr, rkey, sge, 1);
	return gdak_dev_sq_finish(qp, s, 1, bbs, flags, ticket, opcode, 3);
}

/* RDMA_WRITE of one local SGE to (raddr, rkey). */
GDAK_DEV int gdak_dev_put(struct gdak_dev_qp *qp, const struct gdak_dev_sge *src, uint64_t raddr,
			  uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_rdma_sge(qp, MLX5_OPCODE_RDMA_WRITE, src, raddr, rkey, flags, ticket);
}

/* One RDMA_WRITE to (raddr, rkey) or SEND of len bytes carried in the WQE
 * (len <= qp->max_inline): put_inline's and send_inline's body; opcode is a
 * constant at every call. */
GDAK_DEV int gdak_dev_inline_post(struct gdak_dev_qp *qp, uint8_t opcode, const void *data,
				  uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t flags,
				  uint64_t *ticket)
{
	const int remote = opcode == MLX5_OPCODE_RDMA_WRITE;
	uint32_t nbb = gdak_dev_wqe_bbs_inline(remote, len), bbs;
	uint64_t s;
	int rc;
	if (gdak_dev_unlikely(len > qp->max_inline || (len && !data)))
		return -EINVAL;
	rc = gdak_dev_sq_begin(qp, nbb, &s, &flags);
	if (gdak_dev_unlikely(rc))
		return rc;
	bbs = remote ? gdak_dev_wqe_write_inline(qp, s, flags, raddr, rkey, data, len)
		     : gdak_dev_wqe_send_inline(qp, s, flags, data, len);
	return gdak_dev_sq_finish(qp, s, nbb, bbs, flags, ticket, opcode,
				  (remote ? 2u : 1u) + gdak_mlx5_inline_ds(len));
}

/* RDMA_WRITE of len bytes carried in the WQE (len <= qp->max_inline): the
 * source may be reused (or freed) as soon as this returns. */
GDAK_DEV int gdak_dev_put_inline(struct gdak_dev_qp *qp, const void *data, uint32_t len,
				 uint64_t raddr, uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_inline_post(qp, MLX5_OPCODE_RDMA_WRITE, data, len, raddr, rkey, flags,
				    ticket);
}

/* Put a 1/2/4/8-byte value (its low size bytes, host order) inline. */
GDAK_DEV int gdak_dev_put_value(struct gdak_dev_qp *qp, uint64_t value, uint32_t size,
				uint64_t raddr, uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	if (gdak_dev_unlikely(size != 1 && size != 2 && size != 4 && size != 8))
		return -EINVAL;
	return gdak_dev_put_inline(qp, &value, size, raddr, rkey, flags, ticket);
}

/*
 * put+signal: RDMA_WRITE of src, then ATOMIC_FA of sig_add on the remote
 * 8-byte signal word, in one reservation and one doorbell.  The responder
 * executes an RC QP's requests in order (IBA 9.5), so whoever sees the
 * signal change also sees the data.  The fetched value lands in the QP's
 * scratch word (qp->scratch_addr / scratch_lkey, set by the host) and is
 * discarded.  -EINVAL when the QP has no scratch word.
 */
GDAK_DEV int gdak_dev_put_signal(struct gdak_dev_qp *qp, const struct gdak_dev_sge *src,
				 uint64_t raddr, uint32_t rkey, uint64_t sig_raddr,
				 uint32_t sig_rkey, uint64_t sig_add, uint32_t flags,
				 uint64_t *ticket)
{
	uint64_t s;
	uint32_t f1, ok;
	int rc;
	if (gdak_dev_unlikely(!qp->scratch_addr))
		return -EINVAL;
	rc = gdak_dev_sq_acquire(qp, 2, &s);
	if (gdak_dev_unlikely(rc))
		return rc;
	f1 = gdak_dev_sq_flags(qp, s, s + 2, flags);
	ok = gdak_dev_wqe_write(qp, s, flags & ~GDAK_DEV_WQE_SIGNAL, raddr, rkey, src, 1);
	if (gdak_dev_unlikely(!ok))
		gdak_dev_wqe_nop(qp, s, 0);
	gdak_dev_wqe_fetch_add(qp, s + 1, f1 & ~GDAK_DEV_WQE_FENCE, sig_raddr, sig_rkey, sig_add,
			       qp->scratch_addr, qp->scratch_lkey);
	if (ticket)
		*ticket = s + 2;
	return gdak_dev_sq_publish_db(qp, s, s + 2, s + 1, (f1 & GDAK_DEV_WQE_SIGNAL) != 0,
				      gdak_dev_wqe_ctrl_db(qp, s + 1, MLX5_OPCODE_ATOMIC_FA, 0, 4));
}

/* RDMA_READ from (raddr, rkey) into dst; the data is there once
 * gdak_dev_wait(ticket) returned 0. */
GDAK_DEV int gdak_dev_get(struct gdak_dev_qp *qp, const struct gdak_dev_sge *dst, uint64_t raddr,
			  uint32_t rkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_rdma_sge(qp, MLX5_OPCODE_RDMA_READ, dst, raddr, rkey, flags, ticket);
}

/* ---- waiting ----------------------------------------------------------------------- */

/*
 * Wait until everything below ticket completed.  If no signalled WQE at or
 * after the ticket was posted, post a signalled NOP first (RC completes in
 * order, so its CQE vouches for all before it).  0, the sticky error when
 * work below the ticket failed, or -ETIMEDOUT.
 */
GDAK_DEV int gdak_dev_wait_timeout(struct gdak_dev_qp *qp, uint64_t ticket, uint64_t timeout_ns,
				   struct gdak_dev_cqe *err)
{
	uint64_t target = ticket;
	int rc = gdak_dev_sq_failed_below(qp, ticket, err);
	if (gdak_dev_unlikely(rc))
		return rc;
	if (gdak_dev_own_load_u64(qp, &qp->sq_done) >= ticket)
		return 0;
	if (gdak_dev_own_load_u64(qp, &qp->sq_sig) < ticket) {
		uint64_t s;
		rc = gdak_dev_sq_acquire(qp, 1, &s);
		if (rc)
			return rc == -ETIMEDOUT ? rc : gdak_dev_sq_failed_below(qp, ticket, err);
		gdak_dev_wqe_nop(qp, s, GDAK_DEV_WQE_SIGNAL);
		rc = gdak_dev_sq_publish_db(qp, s, s + 1, s, 1,
					    gdak_dev_wqe_ctrl_db(qp, s, MLX5_OPCODE_NOP, 0, 1));
		if (rc)
			return rc == -ETIMEDOUT ? rc : gdak_dev_sq_failed_below(qp, ticket, err);
		target = s + 1;
	}
	rc = gdak_dev_sq_wait_timeout(qp, target, timeout_ns, err);
	/* the NOP may be flushed by a failure at or after the ticket: that
	 * failure is not the ticket's */
	if (rc && rc != -ETIMEDOUT && target != ticket)
		rc = gdak_dev_sq_failed_below(qp, ticket, err);
	return rc;
}

GDAK_DEV int gdak_dev_wait(struct gdak_dev_qp *qp, uint64_t ticket, struct gdak_dev_cqe *err)
{
	return gdak_dev_wait_timeout(qp, ticket, GDAK_DEV_FOREVER, err);
}

/* Everything posted (published) so far completed. */
GDAK_DEV int gdak_dev_quiet_timeout(struct gdak_dev_qp *qp, uint64_t timeout_ns,
				    struct gdak_dev_cqe *err)
{
	return gdak_dev_wait_timeout(qp, gdak_dev_own_load_u64(qp, &qp->sq_ready), timeout_ns,
				     err);
}

GDAK_DEV int gdak_dev_quiet(struct gdak_dev_qp *qp, struct gdak_dev_cqe *err)
{
	return gdak_dev_quiet_timeout(qp, GDAK_DEV_FOREVER, err);
}

/* ---- atomics ------------------------------------------------------------------------- */

/* The original value an atomic fetched into its local result word. */
GDAK_DEV uint64_t gdak_dev_amo_result(const uint64_t *result)
{
	return gdak_be64toh(gdak_dev_load_acquire_u64(result));
}

/* The blocking atomics' end: rc is the posting call's; then wait for
 * ticket t and *old = the word result fetched. */
GDAK_DEV int gdak_dev_amo_wait(struct gdak_dev_qp *qp, int rc, uint64_t t, const uint64_t *result,
			       uint64_t *old, uint64_t timeout_ns, struct gdak_dev_cqe *err)
{
	if (!rc)
		rc = gdak_dev_wait_timeout(qp, t, timeout_ns, err);
	if (!rc && old)
		*old = gdak_dev_amo_result(result);
	return rc;
}

/* One ATOMIC_FA (add = a) or ATOMIC_CS (compare = a, swap = b) WQE whose
 * original value lands in result (lkey): the two _nbi calls' body; opcode
 * is a constant at every call. */
GDAK_DEV int gdak_dev_amo_nbi(struct gdak_dev_qp *qp, uint8_t opcode, uint64_t raddr, uint32_t rkey,
			      uint64_t a, uint64_t b, uint64_t *result, uint32_t lkey,
			      uint32_t flags, uint64_t *ticket)
{
	uint64_t s, laddr = (uint64_t)(uintptr_t)result;
	uint32_t bbs;
	int rc = gdak_dev_sq_begin(qp, 1, &s, &flags);
	if (gdak_dev_unlikely(rc))
		return rc;
	bbs = opcode == MLX5_OPCODE_ATOMIC_CS
		      ? gdak_dev_wqe_cas(qp, s, flags, raddr, rkey, a, b, laddr, lkey)
		      : gdak_dev_wqe_fetch_add(qp, s, flags, raddr, rkey, a, laddr, lkey);
	return gdak_dev_sq_finish(qp, s, 1, bbs, flags, ticket, opcode, 4);
}

/* Non-blocking ATOMIC_FA: result (registered, lkey) receives the original
 * value once gdak_dev_wait(ticket) returned; read it with
 * gdak_dev_amo_result. */
GDAK_DEV int gdak_dev_fetch_add_nbi(struct gdak_dev_qp *qp, uint64_t raddr, uint32_t rkey,
				    uint64_t add, uint64_t *result, uint32_t lkey, uint32_t flags,
				    uint64_t *ticket)
{
	return gdak_dev_amo_nbi(qp, MLX5_OPCODE_ATOMIC_FA, raddr, rkey, add, 0, result, lkey, flags,
				ticket);
}

GDAK_DEV int gdak_dev_compare_swap_nbi(struct gdak_dev_qp *qp, uint64_t raddr, uint32_t rkey,
				       uint64_t compare, uint64_t swap, uint64_t *result,
				       uint32_t lkey, uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_amo_nbi(qp, MLX5_OPCODE_ATOMIC_CS, raddr, rkey, compare, swap, result, lkey,
				flags, ticket);
}

/* Blocking fetch-add: *old = the remote word before the add. */
GDAK_DEV int gdak_dev_fetch_add_timeout(struct gdak_dev_qp *qp, uint64_t raddr, uint32_t rkey,
					uint64_t add, uint64_t *result, uint32_t lkey,
					uint64_t *old, uint64_t timeout_ns,
					struct gdak_dev_cqe *err)
{
	uint64_t t;
	int rc = gdak_dev_fetch_add_nbi(qp, raddr, rkey, add, result, lkey, GDAK_DEV_WQE_SIGNAL,
					&t);
	return gdak_dev_amo_wait(qp, rc, t, result, old, timeout_ns, err);
}

GDAK_DEV int gdak_dev_fetch_add(struct gdak_dev_qp *qp, uint64_t raddr, uint32_t rkey,
				uint64_t add, uint64_t *result, uint32_t lkey, uint64_t *old)
{
	return gdak_dev_fetch_add_timeout(qp, raddr, rkey, add, result, lkey, old,
					  GDAK_DEV_FOREVER, NULL);
}

/* Blocking compare-swap: *old = the remote word before; the swap happened
 * iff *old == compare. */
GDAK_DEV int gdak_dev_compare_swap_timeout(struct gdak_dev_qp *qp, uint64_t raddr, uint32_t rkey,
					   uint64_t compare, uint64_t swap, uint64_t *result,
					   uint32_t lkey, uint64_t *old, uint64_t timeout_ns,
					   struct gdak_dev_cqe *err)
{
	uint64_t t;
	int rc = gdak_dev_compare_swap_nbi(qp, raddr, rkey, compare, swap, result, lkey,
					   GDAK_DEV_WQE_SIGNAL, &t);
	return gdak_dev_amo_wait(qp, rc, t, result, old, timeout_ns, err);
}

GDAK_DEV int gdak_dev_compare_swap(struct gdak_dev_qp *qp, uint64_t raddr, uint32_t rkey,
				   uint64_t compare, uint64_t swap, uint64_t *result,
				   uint32_t lkey, uint64_t *old)
{
	return gdak_dev_compare_swap_timeout(qp, raddr, rkey, compare, swap, result, lkey, old,
					     GDAK_DEV_FOREVER, NULL);
}

/* ---- local signal words ---------------------------------------------------------------- */

enum gdak_dev_cmp {
	GDAK_DEV_CMP_GE = 0,	/* *sig >= value */
	GDAK_DEV_CMP_EQ = 1,	/* *sig == value */
};

/*
 * Wait until the local 8-byte signal word (written by a peer's put+signal
 * or atomics) satisfies the comparison; acquire, so the data the peer put
 * before signalling is visible afterwards.  0 (*seen: the value found, when
 * not NULL) or -ETIMEDOUT.
 */
GDAK_DEV int gdak_dev_signal_wait_timeout(const uint64_t *sig, enum gdak_dev_cmp cmp,
					  uint64_t value, uint64_t timeout_ns, uint64_t *seen)
{
	uint64_t deadline = gdak_dev_deadline(timeout_ns);
	uint32_t spins = 0;
	for (;;) {
		uint64_t v = gdak_dev_load_acquire_u64(sig);
		if (cmp == GDAK_DEV_CMP_EQ ? v == value : v >= value) {
			if (seen)
				*seen = v;
			return 0;
		}
		if (gdak_dev_expired(deadline, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
}

GDAK_DEV uint64_t gdak_dev_signal_wait_ge(const uint64_t *sig, uint64_t value)
{
	uint64_t v = 0;
	gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_GE, value, GDAK_DEV_FOREVER, &v);
	return v;
}

GDAK_DEV void gdak_dev_signal_wait_eq(const uint64_t *sig, uint64_t value)
{
	gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_EQ, value, GDAK_DEV_FOREVER, NULL);
}

/* ---- two-sided ------------------------------------------------------------------------ */

/* SEND of one local SGE, with an immediate when has_imm. */
GDAK_DEV int gdak_dev_send_imm(struct gdak_dev_qp *qp, const struct gdak_dev_sge *src,
			       uint32_t imm, uint32_t flags, uint64_t *ticket)
{
	uint64_t s;
	int rc = gdak_dev_sq_begin(qp, 1, &s, &flags);
	if (gdak_dev_unlikely(rc))
		return rc;
	return gdak_dev_sq_finish(qp, s, 1, gdak_dev_wqe_send_imm(qp, s, flags, src, 1, imm),
				  flags, ticket, MLX5_OPCODE_SEND_IMM, 2);
}

GDAK_DEV int gdak_dev_send(struct gdak_dev_qp *qp, const struct gdak_dev_sge *src, uint32_t flags,
			   uint64_t *ticket)
{
	uint64_t s;
	int rc = gdak_dev_sq_begin(qp, 1, &s, &flags);
	if (gdak_dev_unlikely(rc))
		return rc;
	return gdak_dev_sq_finish(qp, s, 1, gdak_dev_wqe_send(qp, s, flags, src, 1), flags,
				  ticket, MLX5_OPCODE_SEND, 2);
}

/* SEND of len bytes carried in the WQE (len <= qp->max_inline). */
GDAK_DEV int gdak_dev_send_inline(struct gdak_dev_qp *qp, const void *data, uint32_t len,
				  uint32_t flags, uint64_t *ticket)
{
	return gdak_dev_inline_post(qp, MLX5_OPCODE_SEND, data, len, 0, 0, flags, ticket);
}

#endif /* GDAK_DEV_RMA_H */
