/* SPDX-License-Identifier: MIT */
/*
 * nm_doorbell.c - the doorbell stage: how far may the requester go?
 *
 * Three things announce new WQEs (mlx5 PRM "Doorbell record" / "UAR"):
 *   - the send doorbell record, dbrec[1] = be32(producer & 0xffff);
 *   - the doorbell register at UAR + 0x800: the first 8 bytes of a ctrl
 *     segment, decoded as the HCA does (only the QPN, the WQE index and the
 *     DS count matter):
 *       DS != 0  the last posted WQE's ctrl (rdma-core, NVSHMEM, BlueFlame's
 *                whole 64-byte WQE): the producer is index + its WQEBBs;
 *       DS == 0  be32(qpn << 8) with the NEXT producer index and opcode 0
 *                (DOCA GPUNetIO, also from its CPU proxy): the producer is
 *                the index itself;
 *   - CPU_PROXY: a 64-bit producer index the device publishes.
 *
 * A QP created with GDAK_QP_F_SQ_NO_DBREC (GPUNetIO's GPU_SM_NO_DBR, HCA
 * cap send_dbr_mode_no_dbr_ext) has no record: the register alone says how
 * far to go, in strict and relaxed mode alike.
 *
 * In strict mode the requester works up to min(record, ring), which accepts
 * both orders seen in the field: record-then-ring (rdma-core, NVSHMEM) and
 * ring-record-ring (DOCA) - in each case the work runs once both have
 * moved.  A record that stays ahead of the ring, or a ring ahead of the
 * record, is reported when the QP goes idle (hardware would not execute
 * WQEs it was never rung for).  Relaxed mode works to the record alone.
 *
 * The producer moving backwards or more than the ring size ahead of the
 * consumer means the device overwrote WQEs the NIC had not executed yet:
 * strict mode stops the QP with LOCAL_QP_OP_ERR (rule producer_overrun).
 */
#include "nm_loc.h"

/* what the names table says about a doorbell, for logs */
enum nm_db_event { NM_DB_NONE, NM_DB_RECORD, NM_DB_RING, NM_DB_PROXY };
static const char *const db_event_names[] = {"none", "record", "ring", "proxy"};

static inline const uint64_t *reg_at(const struct nm_qp *qp, unsigned half)
{
	return (const uint64_t *)(const void *)(qp->uar + GDAK_MLX5_DB_OFFSET +
						((size_t)half << NM_BF_LOG_HALF));
}

static inline uint64_t half_load(const struct nm_qp *qp, unsigned half)
{
	return __atomic_load_n(reg_at(qp, half), __ATOMIC_ACQUIRE);
}

/* The whole 64-byte register half (BlueFlame), as 8-byte loads: the device
 * writes it with 8-byte stores, possibly while the NIC looks. */
static void reg_copy(const struct nm_qp *qp, unsigned half, uint8_t out[64])
{
	const uint64_t *r = reg_at(qp, half);

	for (int i = 0; i < 8; i++) {
		uint64_t v = __atomic_load_n(r + i, __ATOMIC_RELAXED);
		memcpy(out + 8 * i, &v, 8);
	}
}

static inline uint16_t rec_load(const struct nm_qp *qp)
{
	return (uint16_t)gdak_be32toh(__atomic_load_n(&qp->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE));
}

/* The producer index (64-bit, near the consumer) a register value announces. */
static uint64_t reg_producer(const struct nm_qp *qp, uint64_t reg, uint32_t *ds_out,
			     uint64_t *idx_out)
{
	/* the register holds the ctrl segment's first 8 bytes */
	struct gdak_mlx5_ctrl c;
	uint16_t idx16, end16;
	uint32_t ds;

	gdak_mlx5_ctrl_decode_words(gdak_be32toh((uint32_t)reg),
				    gdak_be32toh((uint32_t)(reg >> 32)), &c);
	idx16 = c.wqe_index;
	ds = c.ds;
	/* DS 0 in the register: "the producer is at idx" (GPUNetIO, NVSHMEM) */
	end16 = ds ? (uint16_t)(idx16 + gdak_mlx5_wqebbs(ds)) : idx16;

	if (ds_out)
		*ds_out = ds;
	if (idx_out)
		*idx_out = qp->ci +
			   (uint64_t)(int64_t)(int16_t)(uint16_t)(idx16 - (uint16_t)qp->ci);
	return qp->ci + (uint64_t)(int64_t)(int16_t)(uint16_t)(end16 - (uint16_t)qp->ci);
}

/* The newest register value: the half that changed since the stage last
 * looked (both changed: the one announcing the producer further ahead).
 * *half_out: the half it came from, -1 when neither changed. */
static uint64_t reg_newest(const struct nm_qp *qp, uint64_t *r0, uint64_t *r1, int *half_out)
{
	int c0, c1;

	*r0 = half_load(qp, 0);
	*r1 = half_load(qp, 1);
	c0 = *r0 != qp->db_half_last[0];
	c1 = *r1 != qp->db_half_last[1];
	if (c0 && c1) {
		int64_t p0 = (int64_t)(reg_producer(qp, *r0, NULL, NULL) - qp->ci);
		int64_t p1 = (int64_t)(reg_producer(qp, *r1, NULL, NULL) - qp->ci);

		*half_out = p1 > p0;
	} else {
		*half_out = c0 ? 0 : c1 ? 1 : -1;
	}
	return *half_out < 0 ? qp->db_reg_last : *half_out ? *r1 : *r0;
}

static uint64_t nm_db_reg_producer(const struct nm_qp *qp)
{
	uint64_t r0, r1;
	int h;
	uint64_t reg = reg_newest(qp, &r0, &r1, &h);
	uint64_t p = reg_producer(qp, reg, NULL, NULL);

	/* the furthest rung, as db_poll keeps it */
	return qp->rung_any && (int64_t)(qp->rung_pi - p) > 0 ? qp->rung_pi : p;
}

static void nm_db_forget_register(struct nm_qp *qp)
{
	uint64_t r0, r1;
	int h;

	qp->db_reg_last = reg_newest(qp, &r0, &r1, &h);
	qp->db_half_last[0] = r0;
	qp->db_half_last[1] = r1;
}

/* FLUSH (QP in ERR): the producer everything posted reaches, rung or not
 * (hardware flushes it all); the doorbells are taken as seen. */
uint64_t nm_db_flush_producer(struct nm_qp *qp)
{
	uint64_t p;

	/* everything posted, rung or not, is flushed (what hardware does) */
	if (qp->handler == GDAK_DEV_DB_CPU_PROXY) {
		p = __atomic_load_n(qp->proxy_pi, __ATOMIC_ACQUIRE);
	} else if (qp->no_dbrec || (qp->rg && qp->rg->dbrec)) {
		p = nm_db_reg_producer(qp);
		nm_db_forget_register(qp);
	} else {
		uint16_t rec = (uint16_t)gdak_be32toh(
			__atomic_load_n(&qp->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE));
		p = qp->ci + (uint16_t)(rec - (uint16_t)qp->ci);
		qp->rec_last = rec;
		nm_db_forget_register(qp);
	}
	if (p - qp->ci > qp->sq_cnt)
		p = qp->ci; /* garbage producer: nothing sensible to flush */
	return p;
}

void nm_db_reset(struct nm_qp *qp)
{
	qp->db_reg_last = 0;
	/* queues_reset cleared the halves' ctrl words: any ring changes them */
	qp->db_half_last[0] = qp->db_half_last[1] = 0;
	qp->reg_half = -1;
	qp->bf_wait_half = 0;
	/* what the halves hold now (zero, or the device's own page as it is) */
	reg_copy(qp, 0, qp->half_shadow[0]);
	reg_copy(qp, 1, qp->half_shadow[1]);
	qp->rung_pi = 0;
	qp->pi = 0;
	qp->rec_last = 0;
	qp->rung_any = false;
	qp->bf_bad = UINT64_MAX;
	qp->bf_wait = UINT64_MAX;
	qp->bf_since_ns = 0;
	qp->db_odd_since_ns = 0;
	qp->db_odd_reported = false;
}

int nm_db_peek(const struct nm_qp *qp)
{
	if (qp->handler == GDAK_DEV_DB_CPU_PROXY)
		return __atomic_load_n(qp->proxy_pi, __ATOMIC_RELAXED) != qp->pi;
	if (rec_load(qp) != qp->rec_last || half_load(qp, 0) != qp->db_half_last[0] ||
	    half_load(qp, 1) != qp->db_half_last[1])
		return 1;
	/* in ERR, receive WQEs posted meanwhile are flushed too */
	return qp->rq_cnt && nm_qp_state(qp) == GDAK_QPS_ERR &&
	       nm_resp_rq_avail((struct nm_qp *)qp);
}

/*
 * BlueFlame: a doorbell that covers exactly one single-WQEBB WQE carries the
 * whole WQE; it must equal the ring copy.  The device writes those 64 bytes
 * as several stores (write-combined on hardware), so the NIC may look in the
 * middle of them: a difference only counts once the register has stayed the
 * same for NM_DB_SETTLE_NS.  Until then the WQE waits (normally for
 * nanoseconds).  Returns 0 to go on, 1 to wait, -1 for a real mismatch.
 */
#define NM_DB_SETTLE_NS 200000000ull

int nm_db_bf_verify(struct nm_qp *qp)
{
	uint64_t idx = qp->bf_wait, now;
	const uint8_t *ring = qp->sq + (idx & qp->sq_mask) * 64;
	uint8_t copy[64];

	if (half_load(qp, 0) != qp->db_half_last[0] || half_load(qp, 1) != qp->db_half_last[1]) {
		qp->bf_wait = UINT64_MAX; /* a newer doorbell replaced it: cannot tell */
		return 0;
	}
	reg_copy(qp, qp->bf_wait_half, copy);
	if (atomic_load_explicit(&qp->db_any, memory_order_relaxed) &&
	    !memcmp(copy + 8, qp->half_shadow[qp->bf_wait_half] + 8, 56)) {
		/* an 8-byte doorbell: the rest of the half is what it was */
		memcpy(qp->half_shadow[qp->bf_wait_half], copy, 64);
		qp->bf_wait = UINT64_MAX;
		qp->bf_since_ns = 0;
		return 0;
	}
	if (!memcmp(copy, ring, 64)) {
		/* a BlueFlame copy, and it matches.  Known to be one only now
		 * when the device may write either: the half check is here */
		if (atomic_load_explicit(&qp->db_any, memory_order_relaxed))
			nm_check_bf_not_alternated(qp, idx, qp->bf_wait_half, qp->bf_same_half);
		memcpy(qp->half_shadow[qp->bf_wait_half], copy, 64);
		qp->bf_wait = UINT64_MAX;
		qp->bf_since_ns = 0;
		return 0;
	}
	now = nm_now_ns();
	if (!qp->bf_since_ns || memcmp(copy, qp->bf_seen, 64)) {
		qp->bf_since_ns = now; /* still being written */
		memcpy(qp->bf_seen, copy, 64);
		return 1;
	}
	if (now - qp->bf_since_ns < NM_DB_SETTLE_NS)
		return 1;
	qp->bf_wait = UINT64_MAX;
	qp->bf_since_ns = 0;
	memcpy(qp->half_shadow[qp->bf_wait_half], copy, 64);
	nm_check_bf_mismatch(qp, idx, copy, ring);
	return -1;
}

static int db_poll(struct nm_qp *qp)
{
	uint64_t target;
	uint16_t rec;
	uint64_t reg;
	int changed = 0, half;

	/* an injected stall: leave the doorbell unread, so it is seen later */
	if (nm_fault_db_stall(qp))
		return 0;
	if (qp->handler == GDAK_DEV_DB_CPU_PROXY) {
		uint64_t p = __atomic_load_n(qp->proxy_pi, __ATOMIC_ACQUIRE);
		/* a GPU-memory SQ holds pi at what its fetch has landed: the
		 * word announced sq_want already */
		uint64_t seen = qp->rg && qp->rg->sq_want > qp->pi ? qp->rg->sq_want : qp->pi;

		if (p == seen)
			return 0;
		nm_stat_add(&qp->st.doorbells, 1);
		NM_TRACE(qp, gdak_trace_doorbell, qp->base.qpn, GDAK_DEV_DB_CPU_PROXY, (uint16_t)p, &p, 8);
		if (nm_check_producer_overrun(qp, p, db_event_names[NM_DB_PROXY]))
			return 1;
		qp->pi = p;
		return 1;
	}

	rec = rec_load(qp);
	{
		uint64_t r0, r1;

		reg = reg_newest(qp, &r0, &r1, &half);
		qp->db_half_last[0] = r0;
		qp->db_half_last[1] = r1;
	}
	if (half >= 0) {
		uint32_t ds;
		uint64_t idx;
		uint64_t prev_end = qp->rung_pi;
		int prev_half = qp->reg_half;
		uint64_t np = reg_producer(qp, reg, &ds, &idx);
		/* The other half announcing less than what is already rung
		 * was written before that newer ring: the stage read the halves
		 * while the device wrote both and saw the newer one first.  The
		 * HCA sees register writes in the order they were made, so the
		 * furthest producer stands; taking the older one would hold the
		 * requester behind a record that has moved on, for good.  (The
		 * same half going backwards is the device's doing: it goes to
		 * the overrun check.) */
		bool stale = qp->rung_any && half != qp->reg_half &&
			     (int64_t)(np - qp->rung_pi) < 0;

		if (!stale) {
			qp->db_reg_last = reg;
			qp->reg_half = (int8_t)half;
			qp->rung_pi = np;
		}
		qp->rung_any = true;
		changed = 1;
		nm_stat_add(&qp->st.doorbells, 1);
#ifdef NM_HAVE_TRACE
		if (nm_tbuf(qp)) {
			uint8_t regb[64];

			if (qp->handler == GDAK_DEV_DB_BF)
				reg_copy(qp, (unsigned)half, regb);
			else
				memcpy(regb, &reg, 8);
			NM_TRACE(qp, gdak_trace_doorbell, qp->base.qpn,
				 (uint8_t)qp->handler, rec, regb,
				 qp->handler == GDAK_DEV_DB_BF ? 64u : 8u);
		}
#endif
		/* A copy still waiting to be verified was overwritten by this
		 * doorbell: it can no longer be checked (comparing the new
		 * register with the old WQE would be a false mismatch). */
		qp->bf_wait = UINT64_MAX;
		qp->bf_since_ns = 0;
		/* BlueFlame only for a doorbell covering exactly one 1-WQEBB WQE;
		 * batches ring with the 8-byte form and leave stale bytes behind */
		if (!stale &&
		    (qp->handler == GDAK_DEV_DB_BF ||
		     atomic_load_explicit(&qp->db_any, memory_order_relaxed)) &&
		    nm_strict() && ds && ds <= 4 && idx == prev_end && idx >= qp->ci &&
		    idx - qp->ci < qp->sq_cnt) {
			qp->bf_wait = idx;
			qp->bf_wait_half = (uint8_t)half;
			qp->bf_since_ns = 0;
			/* rdma-core alternates the halves after every register
			 * write: the HCA may otherwise combine this BlueFlame
			 * write with the previous one still in flight */
			qp->bf_same_half = prev_half == half;
			/* (a device that may write either size: checked once the
			 * copy is known to be a BlueFlame one, nm_db_bf_verify) */
			if (!atomic_load_explicit(&qp->db_any, memory_order_relaxed))
				nm_check_bf_not_alternated(qp, idx, (unsigned)half,
							   qp->bf_same_half);
		}
	}
	if (rec != qp->rec_last) {
		qp->rec_last = rec;
		changed = 1;
	}
	if (!changed)
		return 0;
	qp->db_odd_reported = false;

	if (qp->no_dbrec || (qp->rg && qp->rg->dbrec)) {
		/* no record: the register's producer index is the device's word.
		 * A record in GPU memory is read only at the idle check: the
		 * register (host memory) says the same, without a copy */
		if (!qp->rung_any)
			return 1;
		if (nm_check_producer_overrun(qp, qp->rung_pi, db_event_names[NM_DB_RING]))
			return 1;
		if (qp->rung_pi > qp->pi)
			qp->pi = qp->rung_pi;
		return 1;
	}

	/* record as a 64-bit producer: 0..65535 ahead of the consumer */
	target = qp->ci + (uint16_t)(rec - (uint16_t)qp->ci);
	if (nm_check_producer_overrun(qp, target, db_event_names[NM_DB_RECORD]))
		return 1;
	if (nm_strict()) {
		if (!qp->rung_any || (int64_t)(qp->rung_pi - qp->ci) < 0)
			target = qp->ci;	/* nothing rung beyond the consumer yet */
		else if (qp->rung_pi < target)
			target = qp->rung_pi;
	}
	if (target > qp->pi)
		qp->pi = target;
	if (qp->pi < qp->ci)
		qp->pi = qp->ci;
	return 1;
}

int nm_db_poll(struct nm_qp *qp)
{
	int r = db_poll(qp);

	/* a GPU-memory SQ: what the doorbells announced comes into the shadow
	 * (asynchronously: the pass goes on with the other QPs meanwhile) */
	if (__builtin_expect(qp->rg != NULL, 0) && qp->rg->sq)
		r |= nm_rg_sq_step(qp);
	return r;
}

/*
 * Called when the QP has been idle for a while.  A record ahead of the ring
 * (or the reverse) is normal for a moment - the device writes one, then the
 * other, and may be preempted in between - so it is reported only when it
 * has not changed for NM_DB_SETTLE_NS.  Returns 1 to keep the QP active
 * until then.
 */
int nm_db_idle_check(struct nm_qp *qp)
{
	uint64_t rec_pi, now;
	int odd;

	if (!nm_strict() || qp->handler == GDAK_DEV_DB_CPU_PROXY || qp->no_dbrec ||
	    nm_qp_state(qp) != GDAK_QPS_RTS)
		return 0;
	if (qp->rg && qp->rg->dbrec) {
		/* the record is in GPU memory: this is where it is read */
		if (nm_rg_sq_rec_read(qp))
			return 0;
		qp->rec_last = rec_load(qp);
	}
	rec_pi = qp->ci + (uint16_t)(qp->rec_last - (uint16_t)qp->ci);
	if (qp->rg && qp->rg->dbrec)
		/* the register ran the QP: a record left behind is behind the
		 * consumer, not 64K ahead */
		rec_pi = qp->ci +
			 (uint64_t)(int64_t)(int16_t)(uint16_t)(qp->rec_last - (uint16_t)qp->ci);
	odd = nm_check_db_disagree(qp, rec_pi);
	if (!odd) {
		qp->db_odd_since_ns = 0;
		return 0;
	}
	now = nm_now_ns();
	if (!qp->db_odd_since_ns || qp->db_odd_rec != qp->rec_last ||
	    qp->db_odd_reg != qp->db_reg_last) {
		qp->db_odd_since_ns = now;
		qp->db_odd_rec = qp->rec_last;
		qp->db_odd_reg = qp->db_reg_last;
		return 1;
	}
	if (now - qp->db_odd_since_ns < NM_DB_SETTLE_NS)
		return 1;
	if (qp->db_odd_reported)
		return 0;
	qp->db_odd_reported = true;
	nm_check_db_disagree_report(qp, odd, rec_pi, half_load(qp, 0), half_load(qp, 1));
	return 0;
}
