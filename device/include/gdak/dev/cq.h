/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/cq.h - completion queues: poll one CQE, retire send-queue WQEs up
 * to an index, update the CQ doorbell record, and the sticky error.
 *
 * A CQE's wqe_counter is the 16-bit index of the first WQEBB of the WQE it
 * completes (PRM "Completion Queue Entry").  Device code keeps 64-bit
 * indices; a counter maps back to the one index in [base, base + 65536)
 * with the same low 16 bits, base being the oldest WQE not yet retired.  That
 * is unambiguous because the ring (<= 32768 WQEBBs on mlx5) never holds more
 * than 65536 WQEBBs beyond base.
 *
 * RC completes in order (IBA 10.8.3.1), so a CQE for the WQE at index w
 * retires w and everything before it, signalled or not: sq_done becomes
 * the end of w (gdak_dev_sq_retire_end).
 *
 * Errors: an error CQE (REQ_ERR / RESP_ERR) makes the poll return -EIO and
 * is recorded, the first one only, in the CQ (cq->err and cq->err_*), where
 * every later wait sees it at once instead of waiting for work the NIC
 * flushed.  With GDAK_DEV_DEBUG defined, the offending CQE is printed.
 */
#ifndef GDAK_DEV_CQ_H
#define GDAK_DEV_CQ_H

#include <errno.h>
#include <stdint.h>
#if defined(GDAK_DEV_DEBUG) && !defined(__CUDA_ARCH__)
#include <stdio.h>
#endif

#include <gdak/mlx5.h>
#include <gdak/dev/types.h>
#include <gdak/dev/ordering.h>
#include <gdak/dev/wqe.h>

/* A completion, decoded. */
struct gdak_dev_cqe {
	uint8_t opcode;		/* MLX5_CQE_* */
	uint8_t syndrome;	/* error CQEs: MLX5_CQE_SYNDROME_* */
	uint8_t vendor_syndrome;
	uint8_t wqe_opcode;	/* error CQEs: opcode of the failed WQE */
	uint16_t wqe_counter;	/* as in the CQE (16 bits) */
	uint16_t proto;		/* 1: the CQE named a WQE that was never posted */
	uint32_t qpn;
	uint32_t byte_cnt;	/* responder CQEs: bytes received */
	uint32_t imm;		/* *_IMM: the immediate, host order */
	uint64_t wqe_index;	/* wqe_counter mapped to the 64-bit queue index */
};

/* cq->err: valid bit, then the first error's fields. */
#define GDAK_DEV_CQ_ERR_VALID 0x80000000u
#define GDAK_DEV_CQ_ERR_PROTO 0x40000000u	/* CQE for a WQE never posted */
/* Device code gave up on slots it had reserved (a bounded wait expired in
 * shared mode): later WQEs can never be published in order, so the queue is
 * dead for device code, as after an error CQE. */
#define GDAK_DEV_CQ_ERR_ABORT 0x20000000u
#define GDAK_DEV_CQ_ERR_PACK(cqe_op, vendor, synd, wqe_op)                                     \
	(GDAK_DEV_CQ_ERR_VALID | ((uint32_t)((cqe_op) & 0xf) << 24) |                         \
	 ((uint32_t)(vendor) << 16) | ((uint32_t)(synd) << 8) | (uint32_t)(wqe_op))

/* Map a 16-bit wqe_counter to the 64-bit index at or above base. */
GDAK_DEV uint64_t gdak_dev_wqe_counter_to_index(uint16_t wqe_counter, uint64_t base)
{
	return base + (uint16_t)(wqe_counter - (uint16_t)base);
}

GDAK_DEV void *gdak_dev_cqe_ptr(const struct gdak_dev_cq *cq, uint64_t n)
{
	return (char *)cq->cqes + ((size_t)(n & (cq->ncqe - 1)) << 6);
}

/* Record the first error of this CQ (later ones are consequences: flushes). */
GDAK_DEV void gdak_dev_cq_record_error(struct gdak_dev_cq *cq, const struct gdak_dev_cqe *c)
{
	if (gdak_dev_load_relaxed_u32(&cq->err))
		return;
	cq->err_wqe_counter = c->wqe_counter;
	cq->err_qpn = c->qpn;
	cq->err_wqe_index = c->wqe_index;
	gdak_dev_store_release_u32(&cq->err, GDAK_DEV_CQ_ERR_PACK(c->opcode, c->vendor_syndrome,
								   c->syndrome, c->wqe_opcode) |
						     (c->proto ? GDAK_DEV_CQ_ERR_PROTO : 0));
}

/* The sticky error: 0 if none, else -EIO (-EPROTO for a nonsensical CQE,
 * -ECANCELED for abandoned slots) with the first error CQE's fields in *out
 * (when out is not NULL). */
GDAK_DEV int gdak_dev_cq_error(const struct gdak_dev_cq *cq, struct gdak_dev_cqe *out)
{
	uint32_t e = gdak_dev_load_acquire_u32(&cq->err);
	if (gdak_dev_likely(!e))
		return 0;
	if (out) {
		out->opcode = (uint8_t)((e >> 24) & 0xf);
		out->vendor_syndrome = (uint8_t)(e >> 16);
		out->syndrome = (uint8_t)(e >> 8);
		out->wqe_opcode = (uint8_t)e;
		out->wqe_counter = cq->err_wqe_counter;
		out->proto = (e & GDAK_DEV_CQ_ERR_PROTO) ? 1 : 0;
		out->qpn = cq->err_qpn;
		out->byte_cnt = 0;
		out->imm = 0;
		out->wqe_index = cq->err_wqe_index;
	}
	if (e & GDAK_DEV_CQ_ERR_ABORT)
		return -ECANCELED;
	return (e & GDAK_DEV_CQ_ERR_PROTO) ? -EPROTO : -EIO;
}

/* Mark the CQ's queue dead (GDAK_DEV_CQ_ERR_ABORT) unless an error is
 * already recorded.  Any thread may call it. */
GDAK_DEV void gdak_dev_cq_abort(struct gdak_dev_cq *cq)
{
	gdak_dev_cas_u32(&cq->err, 0, GDAK_DEV_CQ_ERR_VALID | GDAK_DEV_CQ_ERR_ABORT);
}

#ifdef GDAK_DEV_DEBUG
GDAK_DEV void gdak_dev_cqe_dump(const struct gdak_dev_cq *cq, uint64_t n, const uint8_t *cqe)
{
	const struct gdak_mlx5_err_cqe *e = (const struct gdak_mlx5_err_cqe *)cqe;
	printf("gdak_dev: cq 0x%x cqe #%llu: opcode %u syndrome 0x%02x vendor 0x%02x "
	       "wqe_counter %u s_wqe_opcode_qpn 0x%08x\n",
	       cq->cqn, (unsigned long long)n, cqe[63] >> 4, e->syndrome, e->vendor_err_synd,
	       gdak_be16toh(e->wqe_counter), gdak_be32toh(e->s_wqe_opcode_qpn));
	for (int i = 0; i < 64; i += 16)
		printf("gdak_dev:   %02x: %02x%02x%02x%02x %02x%02x%02x%02x %02x%02x%02x%02x "
		       "%02x%02x%02x%02x\n", i, cqe[i], cqe[i + 1], cqe[i + 2], cqe[i + 3],
		       cqe[i + 4], cqe[i + 5], cqe[i + 6], cqe[i + 7], cqe[i + 8], cqe[i + 9],
		       cqe[i + 10], cqe[i + 11], cqe[i + 12], cqe[i + 13], cqe[i + 14], cqe[i + 15]);
}
#endif

/*
 * Poll one CQE.  Returns 1 (consumed a good CQE), 0 (none ready) or -EIO
 * (consumed an error CQE, recorded as the sticky error); *out is filled for
 * 1 and -EIO.  wq_base: the oldest unretired index of the work queue the
 * CQE belongs to, for the 64-bit mapping - qp->sq_done for the send CQ,
 * qp->rq_done for the receive CQ (the CQE carries 16 bits of the index;
 * wq_base supplies the rest).  Retiring is the caller's: set sq_done with
 * gdak_dev_sq_retire_end(qp, out->wqe_index, sq_done).  Does not write the
 * CQ doorbell record (gdak_dev_cq_update_dbrec, once per batch; required,
 * see there).  One poller at a time.  gdak_dev_sq_drain / gdak_dev_wait do
 * all of this (tools/examples/ex_write.c spells it out).
 *
 * The owner byte is polled with an acquire load; on the GPU the bytes the
 * decoder reads (32..63: immediate, byte count, syndromes, QPN, counter)
 * then come in two 16-byte loads issued together - one PCIe round trip
 * when the CQ is mapped host memory, not one per field.
 */
GDAK_DEV int gdak_dev_cq_poll_one(struct gdak_dev_cq *cq, uint64_t wq_base,
				  struct gdak_dev_cqe *out)
{
	uint64_t n = cq->cons_idx;
	const uint8_t *cqe = (const uint8_t *)gdak_dev_cqe_ptr(cq, n);
	struct gdak_mlx5_cqe_fields f;
	uint8_t op_own = gdak_dev_load_acquire_u8(cqe + 63);

	/* owner bit == wrap parity of n, opcode != INVALID (PRM "CQE ownership") */
	if (!gdak_mlx5_cqe_is_sw_owned(op_own, n, cq->ncqe))
		return 0;
#if GDAK_DEV_ON_GPU
	{
		/* the acquire above orders these after the owner check */
		uint64_t body[8] = {0, 0, 0, 0, 0, 0, 0, 0};
		gdak_dev_load_relaxed_16(cqe + 32, &body[4], &body[5]);
		gdak_dev_load_relaxed_16(cqe + 48, &body[6], &body[7]);
		gdak_mlx5_cqe_decode(body, &f);
	}
#else
	gdak_mlx5_cqe_decode(cqe, &f);
#endif
	out->opcode = f.opcode;
	out->syndrome = f.syndrome;
	out->vendor_syndrome = f.vendor_syndrome;
	out->wqe_opcode = f.wqe_opcode;
	out->wqe_counter = f.wqe_counter;
	out->proto = 0;
	out->qpn = f.qpn;
	out->byte_cnt = f.byte_cnt;
	out->imm = gdak_be32toh(f.imm);
	out->wqe_index = gdak_dev_wqe_counter_to_index(f.wqe_counter, wq_base);
	cq->cons_idx = n + 1;
	if (gdak_dev_unlikely(f.opcode == MLX5_CQE_REQ_ERR || f.opcode == MLX5_CQE_RESP_ERR)) {
#ifdef GDAK_DEV_DEBUG
		gdak_dev_cqe_dump(cq, n, cqe);
#endif
		gdak_dev_cq_record_error(cq, out);
		return -EIO;
	}
	return 1;
}

/*
 * Poll one requester CQE (send CQ), fields for retiring only: opcode,
 * wqe_counter / wqe_index, qpn; byte_cnt and imm are 0.  Returns as
 * gdak_dev_cq_poll_one, which it falls back to for error CQEs (they are
 * decoded in full).
 *
 * On the GPU the poll is ONE aligned 8-byte acquire load of the CQE's last
 * 8 bytes - sop_drop_qpn (56..59), wqe_counter (60..61), signature, op_own
 * (63) - so a completion costs one PCIe round trip.  That relies on the
 * producer making the CQE visible with op_own last (the NIC model: body,
 * then a release store of op_own; ConnectX: one 64-byte PCIe write) and on
 * an aligned 8-byte read being served from one snapshot of the line, which
 * every PCIe root complex does.  Define GDAK_DEV_CQE_BYTE_OWNER to poll
 * the owner byte alone and read the rest after it (two round trips).
 */
GDAK_DEV int gdak_dev_cq_poll_req(struct gdak_dev_cq *cq, uint64_t wq_base,
				  struct gdak_dev_cqe *out)
{
#if GDAK_DEV_ON_GPU && !defined(GDAK_DEV_CQE_BYTE_OWNER)
	uint64_t n = cq->cons_idx;
	const uint8_t *cqe = (const uint8_t *)gdak_dev_cqe_ptr(cq, n);
	uint64_t tail = gdak_dev_load_acquire_u64((const uint64_t *)(const void *)(cqe + 56));
	uint8_t op_own = (uint8_t)(tail >> 56);

	if (!gdak_mlx5_cqe_is_sw_owned(op_own, n, cq->ncqe))
		return 0;
	out->opcode = (uint8_t)(op_own >> 4);
	if (gdak_dev_unlikely(out->opcode == MLX5_CQE_REQ_ERR ||
			      out->opcode == MLX5_CQE_RESP_ERR))
		return gdak_dev_cq_poll_one(cq, wq_base, out);
	out->syndrome = 0;
	out->vendor_syndrome = 0;
	out->wqe_opcode = 0;
	out->wqe_counter = gdak_be16toh((uint16_t)(tail >> 32));
	out->proto = 0;
	out->qpn = gdak_be32toh((uint32_t)tail) & 0xffffff;
	out->byte_cnt = 0;
	out->imm = 0;
	out->wqe_index = gdak_dev_wqe_counter_to_index(out->wqe_counter, wq_base);
	cq->cons_idx = n + 1;
	return 1;
#else
	return gdak_dev_cq_poll_one(cq, wq_base, out);
#endif
}

/* CQ doorbell record: dbrec[0] = be32(cons_idx & 0xffffff), telling the
 * NIC which entries it may overwrite.  Required after gdak_dev_cq_poll_one /
 * _poll_req: a NIC that sees the record ncqe behind reports a CQ overrun (a
 * ConnectX moves the CQ to error; the NIC model's strict rule cq_overrun),
 * so a program that never updates it fails after ncqe completions.  Once
 * per batch of polled CQEs is enough; the drain, wait and receive calls
 * update it themselves. */
GDAK_DEV void gdak_dev_cq_update_dbrec(struct gdak_dev_cq *cq)
{
	gdak_dev_store_release_u32(&cq->dbrec[0], gdak_mlx5_cq_dbrec_value((uint32_t)cq->cons_idx));
}

/* ---- send queue: retire WQEs ------------------------------------------------ */

/*
 * Where the WQE starting at w ends.  EXCLUSIVE: when w is the last
 * signalled WQE (the usual case: wait and quiet wait for it), its end is
 * known (sq_sig_start / sq_sig); otherwise its ctrl segment's DS count is
 * read from the ring - its slot cannot have been reused, since sq_done has
 * not passed it.
 */
GDAK_DEV uint64_t gdak_dev_sq_retire_end(const struct gdak_dev_qp *qp, uint64_t w, uint64_t done)
{
	if (qp->sharing != GDAK_DEV_SHARED && w == qp->sq_sig_start && w >= done &&
	    qp->sq_sig > w && qp->sq_sig - w <= qp->sq_wqebb_cnt)
		return qp->sq_sig;
	return w + gdak_dev_wqe_bbs_at(qp, w);
}

/*
 * Drain the send CQ, advancing sq_done, until it is empty or sq_done
 * reached target (UINT64_MAX: until empty; stopping early saves the poll
 * of an empty entry - a PCIe round trip).  The caller owns the CQ
 * (exclusive QP, or holds scq.lock).  Returns the number of CQEs consumed,
 * or -EIO / -EPROTO when one of them was an error (the rest are still
 * consumed).
 *
 * The CQ doorbell record is a relaxed store: it only lets the NIC reuse
 * entries, and the NIC can reach the one just read only after ncqe more
 * completions, i.e. after WQEs posted later, whose doorbell record's
 * release store (or, shared, the release of sq_done to that poster)
 * orders our CQE loads first.  (The CQ holds at least one entry per SQ
 * WQEBB, rma.h.)
 */
GDAK_DEV int gdak_dev_sq_drain_to(struct gdak_dev_qp *qp, uint64_t target)
{
	struct gdak_dev_cq *cq = &qp->scq;
	uint64_t done = qp->sq_done;
	uint64_t resv = qp->sharing == GDAK_DEV_SHARED ?
		gdak_dev_load_relaxed_u64(&qp->sq_resv) : qp->sq_resv;
	int n = 0, rc = 0;

	for (uint32_t i = 0; i < cq->ncqe; i++) {
		struct gdak_dev_cqe c;
		int r = gdak_dev_cq_poll_req(cq, done, &c);
		if (r == 0)
			break;
		n++;
		if (gdak_dev_unlikely(c.wqe_index >= resv)) {
			/* names a slot nobody reserved: the NIC (or memory) is
			 * broken; keep sq_done where it is */
			c.proto = 1;
			gdak_dev_cq_record_error(cq, &c);
			rc = -EPROTO;
			continue;
		}
		done = gdak_dev_sq_retire_end(qp, c.wqe_index, done);
		if (r < 0 && !rc)
			rc = r;
		if (done >= target && !rc)
			break;
	}
	if (n) {
		gdak_dev_store_relaxed_u32(&cq->dbrec[0],
					   gdak_mlx5_cq_dbrec_value((uint32_t)cq->cons_idx));
		gdak_dev_own_store_u64(qp, &qp->sq_done, done);
	}
	return rc ? rc : n;
}

GDAK_DEV int gdak_dev_sq_drain(struct gdak_dev_qp *qp)
{
	return gdak_dev_sq_drain_to(qp, UINT64_MAX);
}

/* Drain if nobody else is: in shared mode the poller holds scq.lock (taken
 * with a try-lock, so waiters never block each other).  Returns as
 * gdak_dev_sq_drain, 0 when another thread is polling. */
GDAK_DEV int gdak_dev_sq_progress_to(struct gdak_dev_qp *qp, uint64_t target)
{
	int rc;
	if (qp->sharing != GDAK_DEV_SHARED)
		return gdak_dev_sq_drain_to(qp, target);
	if (gdak_dev_load_relaxed_u32(&qp->scq.lock) || gdak_dev_cas_u32(&qp->scq.lock, 0, 1))
		return 0;
	rc = gdak_dev_sq_drain_to(qp, target);
	gdak_dev_store_release_u32(&qp->scq.lock, 0);
	return rc;
}

GDAK_DEV int gdak_dev_sq_progress(struct gdak_dev_qp *qp)
{
	return gdak_dev_sq_progress_to(qp, UINT64_MAX);
}

/* Nonzero when the sticky error concerns work below target. */
GDAK_DEV int gdak_dev_sq_failed_below(const struct gdak_dev_qp *qp, uint64_t target,
				      struct gdak_dev_cqe *err)
{
	uint32_t e = gdak_dev_own_load_u32(qp, &qp->scq.err);
	if (gdak_dev_likely(!e))
		return 0;
	if (!(e & (GDAK_DEV_CQ_ERR_PROTO | GDAK_DEV_CQ_ERR_ABORT)) &&
	    qp->scq.err_wqe_index >= target)
		return 0;
	return gdak_dev_cq_error(&qp->scq, err);
}

/*
 * Poll up to an index: wait until every WQE below target completed
 * (sq_done >= target).  Some WQE at or after the last one below target must
 * be signalled, or no CQE will ever say so (rma.h's wait/quiet see to it).
 * Returns 0, -EIO / -EPROTO / -ECANCELED (*err: the first error) when work below
 * target failed, or -ETIMEDOUT after timeout_ns (GDAK_DEV_FOREVER: never).
 */
GDAK_DEV int gdak_dev_sq_wait_timeout(struct gdak_dev_qp *qp, uint64_t target,
				      uint64_t timeout_ns, struct gdak_dev_cqe *err)
{
	uint64_t deadline = gdak_dev_deadline(timeout_ns);
	uint32_t spins = 0;
	for (;;) {
		int rc = gdak_dev_sq_failed_below(qp, target, err);
		if (gdak_dev_unlikely(rc))
			return rc;
		if (gdak_dev_own_load_u64(qp, &qp->sq_done) >= target)
			return 0;
		if (gdak_dev_sq_progress_to(qp, target) != 0)
			continue;
		if (gdak_dev_expired(deadline, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
}

GDAK_DEV int gdak_dev_sq_wait(struct gdak_dev_qp *qp, uint64_t target, struct gdak_dev_cqe *err)
{
	return gdak_dev_sq_wait_timeout(qp, target, GDAK_DEV_FOREVER, err);
}

#endif /* GDAK_DEV_CQ_H */
