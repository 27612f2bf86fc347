/* SPDX-License-Identifier: MIT */
/*
 * nm_check.c - the checks: every rule of docs/DESIGN.md "Checks", one
 * function each (check_<rule>, or nm_check_<rule> where a stage calls it
 * alone), with what ConnectX does and what gdak does; how a rule that
 * fires is reported (nm_violation: counter, error query, rate-limited log,
 * trace record) and how a failed WQE check marks its op (nm_check_fail).
 * The stages call these where they see the rule's fact; the rule names are
 * those the logs, traces and gdak_qp_query_error print.
 *
 * The rule: never reject what ConnectX executes; fail with ConnectX's
 * syndrome what ConnectX fails; flag what ConnectX would silently
 * misexecute.  "strict" rules are skipped (or relaxed) with GDAK_STRICT=0.
 *
 * A check returns 1 when its rule fired (the op then carries the syndrome
 * and the rule), 0 when it passed.
 */
#include <stdarg.h>
#include <stdio.h>

#include "nm_loc.h"

int nm_check_fail(struct nm_qp *qp, struct nm_op *op, uint8_t synd, const char *rule, int violation,
		  const char *what)
{
	op->status = synd;
	op->rule = rule;
	if (violation) {
		op->flags |= NM_OPF_VIOLATION;
		nm_violation(qp, op->wqe_index, rule, synd, "%s WQE: %s",
			     gdak_mlx5_opcode_name(op->opcode), what);
	}
	return 1;
}

/* ---- requester: the WQE as decoded (nm_req.c FETCH/DECODE) ------------------------- */

/* bad_opcode - ConnectX: LOCAL_QP_OP_ERR for an opcode it does not know or
 * the QP type does not take.  gdak: the same, also for opcodes the model
 * does not execute (TSO, UMR, ...: a limitation, named in the text). */
int nm_check_bad_opcode_rule(struct nm_qp *qp, struct nm_op *op,
			     const struct gdak_mlx5_op_info *info)
{
	if (__builtin_expect(info && (info->flags & GDAK_OPF_SUPPORTED), 1))
		return 0;
	op->bbs = 1;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "bad_opcode", 1,
			     info ? "opcode not supported by the NIC model" : "unknown opcode");
}

/* atomic_opmod - ConnectX: executes extended atomics up to its
 * atomic_size_qp.  gdak: LOCAL_QP_OP_ERR for an operand size other than 4
 * or 8 bytes (a limitation; the decoder marks it with opmod 0xff). */
static int check_atomic_opmod(struct nm_qp *qp, struct nm_op *op)
{
	if (op->opmod != 0xff)
		return 0;
	return nm_check_fail(
		qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "atomic_opmod", 1,
		"extended atomic operand size not modelled (only opmod 0, 0x08, 0x09)");
}

/* bad_ds - ConnectX: LOCAL_QP_OP_ERR when the DS count is too small for
 * the opcode's segments.  gdak: the same, DS range per opcode from
 * gdak_mlx5_op_info (extended atomics by opmod, a DCI's AV added). */
static int check_bad_ds(struct nm_qp *qp, struct nm_op *op, uint32_t min_ds, uint32_t max_ds)
{
	char t[64];

	if (op->ds >= min_ds && op->ds <= max_ds)
		return 0;
	snprintf(t, sizeof(t), "DS %u outside %u..%u", op->ds, min_ds, max_ds);
	if (op->ds == 0)
		op->bbs = 1;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "bad_ds", 1, t);
}

/* wqe_past_producer - ConnectX: fetches WQEBBs the device never announced
 * (stale ring bytes: misexecution).  gdak: LOCAL_QP_OP_ERR. */
static int check_wqe_past_producer(struct nm_qp *qp, struct nm_op *op)
{
	if (op->bbs <= qp->pi - qp->ci)
		return 0;
	nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "wqe_past_producer", 1,
		      "DS count reaches past the producer index");
	op->bbs = (uint8_t)(qp->pi - qp->ci);
	return 1;
}

/* wqe_index_mismatch - ConnectX: reports the ctrl's index in the CQE, so
 * completions are misattributed.  gdak: strict, LOCAL_QP_OP_ERR (stricter
 * than hardware, which runs it). */
static int check_wqe_index_mismatch(struct nm_qp *qp, struct nm_op *op, uint16_t ctrl_index)
{
	char t[64];

	if (ctrl_index == op->wqe_index || !nm_strict())
		return 0;
	snprintf(t, sizeof(t), "ctrl says index %u, ring slot is %u", ctrl_index, op->wqe_index);
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "wqe_index_mismatch", 1, t);
}

/* qpn_mismatch - ConnectX: a ctrl naming another QPN is not documented.
 * gdak: strict, LOCAL_QP_OP_ERR (stricter than hardware may be). */
static int check_qpn_mismatch(struct nm_qp *qp, struct nm_op *op, uint32_t ctrl_qpn)
{
	char t[64];

	if (ctrl_qpn == qp->base.qpn || !nm_strict())
		return 0;
	snprintf(t, sizeof(t), "ctrl names QPN 0x%x, this is 0x%x", ctrl_qpn, qp->base.qpn);
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "qpn_mismatch", 1, t);
}

/* bf_mismatch, the WQE's side: the doorbell stage found its BlueFlame copy
 * different from the ring (nm_check_bf_mismatch reported it); the WQE fails
 * with LOCAL_QP_OP_ERR. */
static int check_bf_mismatch(struct nm_qp *qp, struct nm_op *op)
{
	if (__builtin_expect(qp->bf_bad != qp->ci, 1))
		return 0;
	qp->bf_bad = UINT64_MAX;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "bf_mismatch", 0, "");
}

/*
 * The DS range of op's opcode, from its gdak_mlx5_op_info row; for
 * ATOMIC_MASKED_CS / _FA by ctrl opmod (<gdak/mlx5.h> "Extended atomics"),
 * which also gives the operand size (op->asize) and the atomic segment's
 * bytes (*seg).  An opmod the model does not know sets op->opmod to 0xff
 * (atomic_opmod fails it).  A DCI's address vector (av_ds) adds to both ends.
 */
static void ds_range(struct nm_op *op, const struct gdak_mlx5_op_info *info, uint32_t av_ds,
		     uint32_t *min_ds, uint32_t *max_ds, uint32_t *seg)
{
	*min_ds = info->min_ds;
	*max_ds = info->max_ds;
	if (info->flags & GDAK_OPF_MASKED) {
		int fa = op->opcode == MLX5_OPCODE_ATOMIC_MASKED_FA;

		switch (op->opmod) {
		case 0:
			*seg = 32;
			break;
		case GDAK_MLX5_OPMOD_EXT_ATOMIC_4B:
			op->asize = 4;
			*seg = 16;
			break;
		case GDAK_MLX5_OPMOD_EXT_ATOMIC_8B:
			*seg = fa ? 16 : 32;
			break;
		default:
			op->opmod = 0xff;
			goto av;
		}
		*min_ds = *max_ds = 2 + *seg / 16 + 1;
	}
av:
	if (av_ds) {
		*min_ds += av_ds;
		*max_ds = *max_ds + av_ds > GDAK_MLX5_MAX_DS ? GDAK_MLX5_MAX_DS : *max_ds + av_ds;
	}
}

int nm_check_ctrl_rule(struct nm_qp *qp, struct nm_op *op, const struct gdak_mlx5_op_info *info,
		       const struct gdak_mlx5_ctrl *c, uint32_t av_ds, uint32_t *seg)
{
	uint32_t min_ds, max_ds;

	ds_range(op, info, av_ds, &min_ds, &max_ds, seg);
	return check_atomic_opmod(qp, op) || check_bad_ds(qp, op, min_ds, max_ds) ||
	       check_wqe_past_producer(qp, op) || check_wqe_index_mismatch(qp, op, c->wqe_index) ||
	       check_qpn_mismatch(qp, op, c->qpn) || check_bf_mismatch(qp, op);
}

/* wait_opmod - ConnectX: WAIT modes other than wait-on-CQ are Ethernet-SQ
 * features.  gdak: strict, LOCAL_QP_OP_ERR (a limitation). */
int nm_check_wait_opmod(struct nm_qp *qp, struct nm_op *op)
{
	if (op->opmod == GDAK_MLX5_WAIT_OPMOD_CQ)
		return 0;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "wait_opmod", 1,
			     "WAIT mode other than wait-on-CQ (opmod 0) is not modelled");
}

/* inline_not_allowed - ConnectX: LOCAL_QP_OP_ERR for inline data on an
 * opcode that takes none.  gdak: the same, strict. */
static int check_inline_not_allowed(struct nm_qp *qp, struct nm_op *op,
				    const struct gdak_mlx5_op_info *info)
{
	if (info->flags & GDAK_OPF_INLINE_OK)
		return 0;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "inline_not_allowed", 1,
			     "inline data on an opcode that takes none");
}

/* inline_overflow - ConnectX: LOCAL_LENGTH_ERR for an inline length past
 * the WQE's DS.  gdak: the same, strict. */
static int check_inline_overflow(struct nm_qp *qp, struct nm_op *op, uint32_t len, uint32_t rem)
{
	char t[80];

	if (4 + (uint64_t)len <= (uint64_t)rem * 16)
		return 0;
	snprintf(t, sizeof(t), "inline length %u over the %u bytes its DS hold", len, rem * 16 - 4);
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "inline_overflow", 1, t);
}

int nm_check_inline(struct nm_qp *qp, struct nm_op *op, const struct gdak_mlx5_op_info *info,
		    uint32_t len, uint32_t rem)
{
	return check_inline_not_allowed(qp, op, info) || check_inline_overflow(qp, op, len, rem);
}

/* length (requester) - ConnectX: LOCAL_LENGTH_ERR for a message over 2 GiB.
 * gdak: the same, strict. */
static int check_length(struct nm_qp *qp, struct nm_op *op, uint64_t total)
{
	if (total <= 0x80000000ull)
		return 0;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "length", 1,
			     "message longer than 2 GiB");
}

/* atomic_length - ConnectX: LOCAL_LENGTH_ERR when the local segment is not
 * one operand-sized segment.  gdak: the same, strict (4 bytes for opmod
 * 0x08, else 8). */
static int check_atomic_length(struct nm_qp *qp, struct nm_op *op,
			       const struct gdak_mlx5_op_info *info)
{
	if (!(info->flags & (GDAK_OPF_ATOMIC | GDAK_OPF_MASKED)) ||
	    (op->nseg == 1 && op->len == op->asize))
		return 0;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "atomic_length", 1,
			     op->asize == 4 ? "a 4-byte atomic needs one 4-byte local data segment"
					    : "an atomic needs one 8-byte local data segment");
}

int nm_check_sges_rule(struct nm_qp *qp, struct nm_op *op, const struct gdak_mlx5_op_info *info,
		       uint64_t total)
{
	if (check_length(qp, op, total))
		return 1;
	op->len = (uint32_t)total;
	return check_atomic_length(qp, op, info);
}

/* ---- requester: before and after EXECUTE (nm_req.c) ---------------------------------- */

/* wait_bad_cq - ConnectX: a WAIT naming no CQ fails the WQE.  gdak:
 * LOCAL_QP_OP_ERR (gdak's choice of syndrome: the sources do not settle
 * it). */
int nm_check_wait_bad_cq(struct nm_qp *qp, struct nm_op *op, const struct nm_cq *cq)
{
	char t[64];

	if (cq)
		return 0;
	snprintf(t, sizeof(t), "CQ number 0x%x names no CQ", op->rkey);
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "wait_bad_cq", 1, t);
}

/* wait_index_ahead - ConnectX: waits (possibly forever) for a CQE more than
 * a ring ahead.  gdak: keeps waiting; strict: flagged (warning) once per
 * WAIT.  An index further ahead than the CQ holds can only be reached after
 * the consumer frees entries: legal, but usually an off-by-a-ring bug. */
void nm_check_wait_index_ahead(struct nm_qp *qp, const struct nm_op *op, const struct nm_cq *cq,
			       uint32_t produced)
{
	if ((uint32_t)op->compare - produced < cq->ncqe || qp->wait_warned == op->ci + 1 ||
	    !nm_strict())
		return;
	qp->wait_warned = op->ci + 1;
	nm_violation(qp, op->wqe_index, "wait_index_ahead", 0,
		     "WAIT for CQE %u of CQ 0x%x, which has produced %u of %u entries: "
		     "more than a ring ahead",
		     (unsigned)op->compare, op->rkey, produced, cq->ncqe);
}

/* atomic_transport - ConnectX: extended atomics travel as Mellanox extended
 * atomic packets.  gdak: in-process and emu:udp carry them; on a transport
 * with 8-byte atomics only (emu:verbs: plain verbs, rxe) a 4-byte atomic
 * fails with LOCAL_QP_OP_ERR. */
int nm_check_atomic_transport(struct nm_qp *qp, struct nm_op *op)
{
	if (op->asize != 4 || !qp->ctx->tr->atomics_8b_only)
		return 0;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "atomic_transport", 1,
			     "4-byte atomics are not carried by the verbs transport");
}

/* rnr, rnr_retry_exceeded - ConnectX: an RNR NAK is retried, and the WQE
 * fails with RNR_RETRY_EXC_ERR when the retry count runs out.  gdak: the
 * transport's BUSY is retried for GDAK_RNR_TIMEOUT_MS (from the first
 * BUSY of the head op), then RNR_RETRY_EXC_ERR.  1 while it is retried. */
int nm_check_rnr_retry(struct nm_qp *qp, struct nm_op *op)
{
	uint64_t now = nm_now_ns();
	uint64_t lim = (uint64_t)atomic_load_explicit(&nm_cfg.rnr_timeout_ms,
						      memory_order_relaxed) *
		       1000000ull;

	if (!qp->busy_since_ns) {
		qp->busy_since_ns = now ? now : 1;
		return 1;
	}
	if (now - qp->busy_since_ns < lim)
		return 1;
	op->status = MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR;
	op->rule = "rnr_retry_exceeded";
	return 0;
}

/* ---- doorbell stage (nm_doorbell.c) ------------------------------------------------- */

/* producer_overrun - ConnectX: a producer (record, register, proxy word)
 * more than the ring ahead of the consumer means WQEs were overwritten
 * before execution.  gdak: strict, LOCAL_QP_OP_ERR and the QP to ERR.
 * p: the producer index the doorbell `what` announces.  1 when it is not
 * taken (strict or not). */
int nm_check_producer_overrun(struct nm_qp *qp, uint64_t p, const char *what_db)
{
	uint64_t ahead = p - qp->ci;

	if (ahead <= qp->sq_cnt)
		return 0;
	if (nm_strict()) {
		const char *what = (int64_t)ahead < 0 || ahead > 0x8000 ? "moved backwards"
									: "overran the consumer";
		nm_violation(qp, (uint16_t)qp->ci, "producer_overrun",
			     MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
			     "%s producer %s: %llu WQEBBs ahead of consumer %llu, ring %u "
			     "(the device overwrote WQEs not yet executed)",
			     what_db, what, (unsigned long long)(int64_t)ahead,
			     (unsigned long long)qp->ci, qp->sq_cnt);
		nm_qp_set_error(qp, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, 0, (uint16_t)qp->ci,
				"producer_overrun",
				"producer %s (%s): %lld WQEBBs ahead of consumer, ring %u", what,
				what_db, (long long)ahead, qp->sq_cnt);
	}
	return 1;
}

/* bf_not_alternated - ConnectX: executes it, but two write-combined
 * BlueFlame writes to the same register half may reach it merged or
 * reordered (rdma-core alternates: bf->offset ^= bf->buf_size).  gdak:
 * executed; strict: flagged (warning) when the BlueFlame copy of WQE idx
 * landed in the half the previous register write used (same_half). */
void nm_check_bf_not_alternated(struct nm_qp *qp, uint64_t idx, unsigned half, int same_half)
{
	if (!same_half)
		return;
	nm_violation(qp, (uint16_t)idx, "bf_not_alternated", 0,
		     "BlueFlame write to register half %u (UAR + 0x%x) again: "
		     "alternate halves (bf->offset ^= bf->buf_size)",
		     half, GDAK_MLX5_DB_OFFSET + (half << NM_BF_LOG_HALF));
}

/* bf_mismatch - ConnectX: executes the BlueFlame copy, not the ring's
 * bytes.  gdak: strict, the settled copy must equal the ring copy; the
 * first differing byte is reported here, and the WQE fails with
 * LOCAL_QP_OP_ERR when it is decoded (check_bf_mismatch). */
void nm_check_bf_mismatch(struct nm_qp *qp, uint64_t idx, const uint8_t copy[64],
			  const uint8_t ring[64])
{
	for (int i = 0; i < 64; i++) {
		if (copy[i] != ring[i]) {
			nm_violation(
				qp, (uint16_t)idx, "bf_mismatch", MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
				"BlueFlame copy of WQE %u differs from the ring copy at byte %d "
				"(0x%02x vs 0x%02x)",
				(unsigned)(uint16_t)idx, i, copy[i], ring[i]);
			break;
		}
	}
}

/* record_without_ring - ConnectX never executes WQEs it was not rung for.
 * ring_without_record - a QP with a doorbell record executes to the record:
 * a register ahead of it runs nothing.  gdak: neither is executed; strict:
 * flagged (warning) once the QP has idled with them apart (the doorbell
 * stage waits for them to settle).  rec_pi: the record as a 64-bit
 * producer.  Returns NM_DB_REC_AHEAD, NM_DB_RING_AHEAD or 0 (they agree). */
int nm_check_db_disagree(const struct nm_qp *qp, uint64_t rec_pi)
{
	if (rec_pi > qp->pi && rec_pi - qp->ci <= qp->sq_cnt)
		return NM_DB_REC_AHEAD;
	if (qp->rung_any && qp->rung_pi > rec_pi && qp->rung_pi - qp->ci <= qp->sq_cnt)
		return NM_DB_RING_AHEAD;
	return 0;
}

void nm_check_db_disagree_report(struct nm_qp *qp, int which, uint64_t rec_pi, uint64_t half0,
				 uint64_t half1)
{
	if (which == NM_DB_REC_AHEAD)
		nm_violation(
			qp, (uint16_t)qp->pi, "record_without_ring", 0,
			"doorbell record at %u but the doorbell register was rung only up to %u: "
			"WQEs %u.. are not executed (hardware would not see them either; "
			"register halves hold 0x%016llx 0x%016llx, last ring from half %d)",
			(unsigned)qp->rec_last, (unsigned)(uint16_t)qp->pi,
			(unsigned)(uint16_t)qp->pi, (unsigned long long)gdak_be64toh(half0),
			(unsigned long long)gdak_be64toh(half1), qp->reg_half);
	else
		nm_violation(qp, (uint16_t)rec_pi, "ring_without_record", 0,
			     "doorbell register rung up to %u but the record says %u",
			     (unsigned)(uint16_t)qp->rung_pi, (unsigned)qp->rec_last);
}

/* ---- responder (nm_resp.c) ------------------------------------------------------- */

/* bad_rkey, rkey_access, rkey_bounds - ConnectX: REMOTE_ACCESS_ERR on the
 * requester (a NAK), the responder stays up.  gdak: the same.  need: the
 * access the request needs; *mrp the region when it passes, else the
 * syndrome, *rule and why (for the responder's refusal). */
int nm_check_rkey_rule(struct nm_qp *qp, uint32_t need, uint64_t va, uint32_t rkey, uint64_t len,
		       struct nm_mr **mrp, const char **rule, char *why, size_t why_len)
{
	struct nm_mr *mr = nm_mr_get(qp->ctx, rkey);

	if (!mr) {
		*rule = "bad_rkey";
		snprintf(why, why_len, "rkey 0x%x is not registered", rkey);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	if ((mr->base.access & need) != need) {
		*rule = "rkey_access";
		snprintf(why, why_len, "rkey 0x%x grants 0x%x, the request needs 0x%x", rkey,
			 mr->base.access, need);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	if (!nm_mr_covers(mr, va, len)) {
		*rule = "rkey_bounds";
		snprintf(why, why_len, "0x%llx+%llu outside rkey 0x%x [0x%llx, 0x%llx)",
			 (unsigned long long)va, (unsigned long long)len, rkey,
			 (unsigned long long)mr->start, (unsigned long long)mr->end);
		return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	}
	*mrp = mr;
	return 0;
}

/* rq_overrun - ConnectX: a receive producer more than the RQ ahead means
 * receive WQEs were overwritten: misexecution.  gdak: strict, the responder
 * fails with LOCAL_QP_OP_ERR (QP to ERR); the request is refused either way
 * (the requester sees REMOTE_OP_ERR).  avail: receive WQEs the record
 * announces beyond the consumer.  Called with resp_lock released (it
 * takes err_lock and may move the QP to ERR). */
int nm_check_rq_overrun(struct nm_qp *qp, uint32_t avail, uint8_t opcode)
{
	if (avail <= qp->rq_cnt)
		return 0;
	if (nm_strict()) {
		nm_violation(qp, (uint16_t)qp->rq_ci, "rq_overrun",
			     MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
			     "receive producer %u ahead of consumer by %u, ring %u",
			     (unsigned)(uint16_t)(qp->rq_ci + avail), avail, qp->rq_cnt);
		nm_qp_set_error(qp, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, opcode, (uint16_t)qp->rq_ci,
				"rq_overrun", "receive queue producer overran the consumer");
	}
	return 1;
}

/* recv_bad_lkey (recv_lkey_access, recv_lkey_bounds) - ConnectX:
 * LOCAL_PROT_ERR on the receive CQ, REMOTE_OP_ERR to the requester.  gdak:
 * the same.  Segment i (lkey, a, l; mr: what the lkey names) of receive
 * WQE rwqe: the rule that fired (reported), or NULL. */
const char *nm_check_recv_sge(struct nm_qp *qp, uint16_t rwqe, uint32_t i, const struct nm_mr *mr,
			      uint32_t lkey, uint64_t a, uint32_t l)
{
	const char *rule;

	if (__builtin_expect(
		    mr && (mr->base.access & GDAK_ACCESS_LOCAL_WRITE) && nm_mr_covers(mr, a, l), 1))
		return NULL;
	rule = !mr					      ? "recv_bad_lkey"
	       : !(mr->base.access & GDAK_ACCESS_LOCAL_WRITE) ? "recv_lkey_access"
							      : "recv_lkey_bounds";
	nm_violation(qp, rwqe, rule, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
		     "receive WQE %u segment %u: lkey 0x%x addr 0x%llx len %u", rwqe, i, lkey,
		     (unsigned long long)a, l);
	return rule;
}

/* atomic_unaligned - ConnectX: REMOTE_INVAL_REQ_ERR for a target not aligned
 * to the operand size.  gdak: the same (reported strict or not).  idx: the
 * WQE the report names; req_wqe: the requester's WQE (or NM_WQE_NONE). */
int nm_check_atomic_unaligned_rule(struct nm_qp *qp, uint16_t idx, uint32_t req_wqe, uint8_t opcode,
				   uint64_t va, uint32_t sz)
{
	char who[48] = "";

	if (!(va & (sz - 1)))
		return 0;
	if (req_wqe != NM_WQE_NONE)
		snprintf(who, sizeof(who), " (WQE %u of requester QP 0x%x)", req_wqe,
			 qp->peer_info.qpn);
	nm_violation(qp, idx, "atomic_unaligned", MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
		     "%s target 0x%llx is not %u-byte aligned%s", gdak_mlx5_opcode_name(opcode),
		     (unsigned long long)va, sz, who);
	return 1;
}

/* The responder's rules as a message is applied: each fills *rule and why
 * (the text the responder's refusal logs) and returns the syndrome the
 * requester sees, 0 when it passed. */

/* responder_not_ready - ConnectX: requests to a QP not in RTR/RTS are
 * dropped; the requester retries out: TRANSPORT_RETRY_EXC_ERR.  gdak: the
 * same syndrome, at once. */
int nm_check_resp_ready_rule(struct nm_qp *qp, const char **rule, char *why, size_t why_len)
{
	int st = nm_qp_state(qp);

	if (st == GDAK_QPS_RTR || st == GDAK_QPS_RTS)
		return 0;
	*rule = "responder_not_ready";
	snprintf(why, why_len, "responder QP is in %s; requests are dropped",
		 gdak_qp_state_name((enum gdak_qp_state)st));
	return MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
}

/* bad_request - ConnectX: an invalid request NAK (REMOTE_INVAL_REQ_ERR)
 * for an operation the responder does not serve.  gdak: the same for an
 * opcode other than WRITE(_IMM), READ, SEND(_IMM) (atomics come by
 * nm_resp_atomic). */
int nm_check_resp_opcode(uint8_t opcode, const char **rule, char *why, size_t why_len)
{
	switch (opcode) {
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_RDMA_READ:
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		return 0;
	default:
		*rule = "bad_request";
		snprintf(why, why_len, "opcode %s is not a responder request",
			 gdak_mlx5_opcode_name(opcode));
		return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
	}
}

/* no_rq - ConnectX: REMOTE_INVAL_REQ_ERR for a SEND / WRITE_IMM to a QP
 * without a receive queue.  gdak: the same. */
int nm_check_no_rq(const struct nm_qp *qp, uint8_t opcode, const char **rule, char *why,
		   size_t why_len)
{
	if (qp->rq_cnt)
		return 0;
	*rule = "no_rq";
	snprintf(why, why_len, "%s to a QP without a receive queue", gdak_mlx5_opcode_name(opcode));
	return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
}

/* rnr - ConnectX: no receive WQE posted: an RNR NAK, the requester retries
 * (nm_check_rnr_retry).  gdak: the same; counted.  avail: receive WQEs
 * posted beyond the consumer.  NM_RESP_RNR when it fired. */
int nm_check_resp_rnr(struct nm_qp *qp, uint32_t avail, const char **rule)
{
	if (avail)
		return 0;
	__atomic_fetch_add(&qp->st.rnr, 1, __ATOMIC_RELAXED);
	*rule = "rnr";
	return NM_RESP_RNR;
}

/* recv_too_small - ConnectX: LOCAL_LENGTH_ERR on the responder's receive CQ
 * (the QP to ERR), REMOTE_INVAL_REQ_ERR to the requester.  gdak: the same.
 * need: the message's bytes (at least that many while its length is not
 * known yet, m->len_unknown) against the receive WQE's m->cap. */
int nm_check_recv_too_small(const struct nm_resp_msg *m, uint64_t need, const char **rule,
			    char *why, size_t why_len)
{
	if (need <= m->cap)
		return 0;
	*rule = "recv_too_small";
	if (m->len_unknown)
		snprintf(why, why_len, "message of at least %llu bytes, receive WQE holds %u",
			 (unsigned long long)need, m->cap);
	else
		snprintf(why, why_len, "%u-byte message, receive WQE holds %llu", m->len,
			 (unsigned long long)m->cap);
	return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
}

/* length (responder) - ConnectX: REMOTE_INVAL_REQ_ERR for data past the
 * message's length (an RDMA longer than its RETH said) or a SEND whose
 * length is still unknown at its end.  gdak: the same.  Segment off+len of
 * m; need_mr: the segment goes to or from the rkey's region (there must be
 * one); read: it is a READ's response data. */
int nm_check_resp_length(const struct nm_resp_msg *m, uint32_t off, uint32_t len, bool need_mr,
			 bool read, const char **rule, char *why, size_t why_len)
{
	if ((uint64_t)off + len <= m->len && (m->mr || !need_mr))
		return 0;
	*rule = "length";
	snprintf(why, why_len, "%ssegment %u+%u beyond the %u-byte %s", read ? "read " : "", off,
		 len, m->len, read ? "request" : "message");
	return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
}

int nm_check_resp_len_known(const struct nm_resp_msg *m, const char **rule, char *why,
			    size_t why_len)
{
	if (!m->len_unknown)
		return 0;
	*rule = "length";
	snprintf(why, why_len, "message of unknown length ended without one (nm_resp_end_len)");
	return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR;
}

/* ---- completer (nm_comp.c) ---------------------------------------------------------- */

/* cq_overrun - ConnectX: a CQ without overrun-ignore that has no room is a
 * CQ error and the QP goes to ERR.  gdak: the same, strict; relaxed mode
 * overwrites (CQs with oi or cc never overrun).  The CQE of wqe_index finds
 * cq full: 1 when it is dropped (strict). */
int nm_check_cq_overrun(struct nm_qp *qp, struct nm_cq *cq, uint16_t wqe_index)
{
	uint32_t ci;

	if (!nm_strict())
		return 0;
	ci = gdak_be32toh(__atomic_load_n(cq->dbrec, __ATOMIC_ACQUIRE)) & 0xffffff;
	nm_violation(qp, wqe_index, "cq_overrun", 0,
		     "CQ 0x%x overrun at the CQE of %s WQE %u: %llu CQEs written, the device "
		     "consumed up to %u of %u (is it updating the CQ doorbell record?)",
		     cq->cqn,
		     cq == qp->rcq && cq != qp->scq   ? "receive"
		     : cq == qp->scq && cq != qp->rcq ? "send"
						      : "a",
		     wqe_index, (unsigned long long)cq->pi, ci, cq->ncqe);
	nm_qp_set_error(qp, 0, 0, wqe_index, "cq_overrun",
			"CQ 0x%x overrun (%u entries): the device does not consume CQEs or "
			"does not update the CQ doorbell record",
			cq->cqn, cq->ncqe);
	return 1;
}

/* ---- local data segments (requester, transports) ---------------------------------- */

/* bad_lkey, lkey_access, lkey_bounds - ConnectX: LOCAL_PROT_ERR.  gdak: the
 * same (DUMP's segments too). */
int nm_check_local_sge_rule(struct nm_qp *qp, const struct nm_op *op, unsigned i, unsigned need,
			    void **addr, uint32_t *len, struct nm_mr **mrp, const char **rule)
{
	uint64_t a;
	uint32_t l, lkey;
	struct nm_mr *mr;

	gdak_mlx5_data_decode(&op->sge[i], &a, &l, &lkey);
	mr = nm_mr_get(qp->ctx, lkey);
	if (!mr) {
		*rule = "bad_lkey";
		GDAK_WARN_RL("qp", qp->id, "WQE %u (%s) segment %u: lkey 0x%x is not registered",
			     op->wqe_index, gdak_mlx5_opcode_name(op->opcode), i, lkey);
		return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	}
	if ((mr->base.access & need) != need) {
		*rule = "lkey_access";
		GDAK_WARN_RL("qp", qp->id, "WQE %u (%s) segment %u: lkey 0x%x lacks LOCAL_WRITE",
			     op->wqe_index, gdak_mlx5_opcode_name(op->opcode), i, lkey);
		return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	}
	if (!nm_mr_covers(mr, a, l)) {
		*rule = "lkey_bounds";
		GDAK_WARN_RL("qp", qp->id,
			     "WQE %u (%s) segment %u: 0x%llx+%u outside lkey 0x%x "
			     "[0x%llx, 0x%llx)",
			     op->wqe_index, gdak_mlx5_opcode_name(op->opcode), i,
			     (unsigned long long)a, l, lkey, (unsigned long long)mr->start,
			     (unsigned long long)mr->end);
		return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
	}
	*addr = (void *)(uintptr_t)a;
	*len = l;
	*mrp = mr;
	return 0;
}

/* ---- emu:verbs transport (tr_verbs.c) -------------------------------------------------- */

/* What the verbs transport cannot hand to the underlying verbs device (a
 * plain verbs QP: rxe, or a ConnectX through rdma-core), each failing the
 * WQE before it is posted.  ConnectX itself has none of these limits. */

/* verbs_opcode - an opcode with no verbs work request (masked atomics,
 * WAIT, DUMP, ...: docs/RXE.md): LOCAL_QP_OP_ERR.  has_wr: there is one. */
int nm_check_verbs_opcode(struct nm_qp *qp, struct nm_op *op, bool has_wr)
{
	if (has_wr)
		return 0;
	GDAK_WARN_RL("qp", qp->id, "verbs: WQE %u: %s has no verbs work request", op->wqe_index,
		     gdak_mlx5_opcode_name(op->opcode));
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "verbs_opcode", 0, "");
}

/* verbs_too_many_sge - more data segments than the verbs QP takes
 * (max_sge): LOCAL_LENGTH_ERR. */
int nm_check_verbs_nseg(struct nm_qp *qp, struct nm_op *op, unsigned max_sge)
{
	if (op->nseg <= max_sge)
		return 0;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "verbs_too_many_sge", 0,
			     "");
}

/* verbs_reg_mr - a segment's region has no verbs registration and no
 * bounce buffers (its registration with the device failed):
 * LOCAL_PROT_ERR.  registered: it has one of them. */
int nm_check_verbs_reg_mr(struct nm_qp *qp, struct nm_op *op, bool registered)
{
	if (registered)
		return 0;
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, "verbs_reg_mr", 0, "");
}

/* rq_overrun (emu:verbs) - as the responder's rq_overrun, against the
 * receive WQEs handed to the verbs QP: the producer prod more than the RQ
 * ahead of posted (n WQEs) overwrote receive WQEs; LOCAL_QP_OP_ERR, the QP
 * to ERR.  1 when it fired. */
int nm_check_verbs_rq_overrun(struct nm_qp *qp, uint64_t posted, uint16_t prod, uint32_t n)
{
	if (n <= qp->rq_cnt)
		return 0;
	nm_violation(qp, (uint16_t)posted, "rq_overrun", MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
		     "receive producer %u ahead of what was posted by %u, ring %u", prod, n,
		     qp->rq_cnt);
	nm_qp_set_error(qp, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, MLX5_OPCODE_SEND, (uint16_t)posted,
			"rq_overrun", "receive queue producer overran the consumer");
	return 1;
}

/* recv_bad_lkey (emu:verbs) - segment i (lkey, a, l) of receive WQE rwqe
 * names no region that grants LOCAL_WRITE over it, or one with no verbs
 * registration nor bounce buffers (registered false): reported; the
 * transport posts it with a key no MR has, so that the message fails on
 * this WQE with LOCAL_PROT_ERR as a ConnectX would.  1 when it fired. */
int nm_check_verbs_recv_sge(struct nm_qp *qp, uint16_t rwqe, uint32_t i, const struct nm_mr *mr,
			    bool registered, uint32_t lkey, uint64_t a, uint32_t l)
{
	if (mr && (mr->base.access & GDAK_ACCESS_LOCAL_WRITE) && nm_mr_covers(mr, a, l) &&
	    registered)
		return 0;
	nm_violation(qp, rwqe, "recv_bad_lkey", MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
		     "receive WQE %u segment %u: lkey 0x%x addr 0x%llx len %u", (unsigned)rwqe, i,
		     lkey, (unsigned long long)a, l);
	return 1;
}

/* recv_bounce - receive WQE rwqe needs len bytes of bounce buffer that
 * cannot be had: reported; it is posted so that the message fails on it
 * (LOCAL_PROT_ERR), as with a bad lkey. */
void nm_check_verbs_recv_bounce(struct nm_qp *qp, uint16_t rwqe, uint32_t len)
{
	nm_violation(qp, rwqe, "recv_bounce", MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
		     "receive WQE %u: no bounce buffer for %u bytes", (unsigned)rwqe, len);
}

void nm_violation(struct nm_qp *qp, uint16_t wqe_index, const char *rule, uint8_t syndrome,
		  const char *fmt, ...)
{
	char text[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	__atomic_fetch_add(&qp->st.violations, 1, __ATOMIC_RELAXED);
	/* for gdak_qp_query_error: warnings leave the QP running, so this is
	 * where the device's author finds them (lock order: resp_lock, then
	 * err_lock, as nm_qp_set_error) */
	pthread_mutex_lock(&qp->err_lock);
	snprintf(qp->viol_rule, sizeof(qp->viol_rule), "%s", rule);
	snprintf(qp->viol_text, sizeof(qp->viol_text), "WQE %u: %.140s", wqe_index, text);
	pthread_mutex_unlock(&qp->err_lock);
	GDAK_WARN_RL("qp", qp->id, "check %s fired at WQE %u: %s", rule, wqe_index, text);
	NM_TRACE(qp, gdak_trace_violation, qp->base.qpn, wqe_index, rule, syndrome, text);
}

/* ---- DC: the DCI's address vector and the DCT it names (nm_dc.c, tr_udp.c) ------------ */

/* dc_av_size - ConnectX: LOCAL_QP_OP_ERR when the DS count cannot hold the
 * ctrl segment and the AV form bit 31 of dqp_dct selects.  gdak: the same
 * (op->av_ds is the form: 1 or 3 DS). */
int nm_check_dc_av_size(struct nm_qp *qp, struct nm_op *op)
{
	char t[96];

	if (op->ds >= 1u + op->av_ds)
		return 0;
	snprintf(t, sizeof(t), "DS %u cannot hold the ctrl segment and a %s address vector", op->ds,
		 op->av_ds == 3 ? "48-byte" : "16-byte");
	return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "dc_av_size", 1, t);
}

/* dc_av_reserved - ConnectX: ignores bits 30..24 of dqp_dct.  gdak: strict:
 * flagged (warning): a DCT number over 24 bits is a bug in whoever built the
 * AV. */
void nm_check_dc_av_reserved(struct nm_qp *qp, const struct nm_op *op, uint32_t dqp)
{
	if ((dqp & 0x7f000000u) && nm_strict())
		nm_violation(qp, op->wqe_index, "dc_av_reserved", 0,
			     "AV dqp_dct 0x%08x: bits 30..24 are reserved", dqp);
}

/* The DC connect goes unanswered: ConnectX's DCI retries out,
 * TRANSPORT_RETRY_EXC_ERR (vendor 0x81), the DCI to ERR. */
static int dc_unanswered(struct nm_op *op, const char *rule)
{
	op->status = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
	op->rule = rule;
	return 1;
}

/* dc_no_av - a DC target asked for a WQE without an AV (NOP, WAIT, DUMP
 * stay on the DCI: a model bug, not the user's).  gdak:
 * TRANSPORT_RETRY_EXC_ERR rather than a crash. */
int nm_check_dc_no_av(struct nm_op *op)
{
	return op->av_ds ? 0 : dc_unanswered(op, "dc_no_av");
}

/* dc_no_dct - ConnectX: an AV naming no DCT (a free number, an RC QP's)
 * leaves the connect unanswered: TRANSPORT_RETRY_EXC_ERR, DCI to ERR.
 * gdak: the same, at once for a DCT of this process (over udp the far side
 * drops the request and the DCI's engine retries out). */
int nm_check_dc_no_dct(struct nm_qp *qp, struct nm_op *op, const struct nm_qp *dct)
{
	if (dct)
		return 0;
	GDAK_WARN_RL("qp", qp->id,
		     "WQE %u (%s): AV names DCT 0x%x, which does not exist: the DC connect goes "
		     "unanswered",
		     op->wqe_index, gdak_mlx5_opcode_name(op->opcode), op->dc_dctn);
	return dc_unanswered(op, "dc_no_dct");
}

/* dc_av_target - ConnectX: an AV whose address is not where the DCT it
 * numbers is reaches another node or nobody: unanswered,
 * TRANSPORT_RETRY_EXC_ERR.  gdak: the same, counted as a violation (the AV
 * was built from the wrong gdak_qp_info).  In-process transport: the DCT's
 * LID, and no GID (its QPs have none). */
int nm_check_dc_av_target_loop(struct nm_qp *qp, struct nm_op *op, uint16_t lid, uint16_t dct_lid,
			       const uint8_t gid[16])
{
	static const uint8_t zero[16];

	if (lid != dct_lid) {
		nm_violation(qp, op->wqe_index, "dc_av_target",
			     MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
			     "AV names DCT 0x%x at LID 0x%x, that DCT is at LID 0x%x", op->dc_dctn,
			     lid, dct_lid);
	} else if (op->av_ds == 3 && memcmp(gid, zero, 16)) {
		nm_violation(qp, op->wqe_index, "dc_av_target",
			     MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
			     "AV names DCT 0x%x at a GID; in-process DCTs have none (all zero)",
			     op->dc_dctn);
	} else {
		return 0;
	}
	op->flags |= NM_OPF_VIOLATION;
	return dc_unanswered(op, "dc_av_target");
}

/* dc_av_target on RoCE (udp), a DCT of this process: RoCE routes by GID
 * (ConnectX ignores the AV's LID there), so a full AV with the DCT's own
 * GID.  dct_gid: the DCT's, or NULL when it has none to give. */
int nm_check_dc_av_target_gid(struct nm_qp *qp, struct nm_op *op, const uint8_t gid[16],
			      const uint8_t *dct_gid)
{
	char g[48] = "(none)";
	const uint8_t *d = dct_gid;

	if (d && op->av_ds == 3 && !memcmp(gid, d, 16))
		return 0;
	if (d)
		snprintf(g, sizeof(g),
			 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
			 d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11],
			 d[12], d[13], d[14], d[15]);
	nm_violation(qp, op->wqe_index, "dc_av_target", MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		     "AV names DCT 0x%x %s; on RoCE it needs a full AV with the DCT's GID %s",
		     op->dc_dctn, op->av_ds != 3 ? "with a compact AV" : "at another GID", g);
	op->flags |= NM_OPF_VIOLATION;
	return dc_unanswered(op, "dc_av_target");
}

/* dc_av_compact - ConnectX: a compact AV has no GRH; on RoCE it has nothing
 * to route by (what the HCA does then is not documented).  gdak (udp):
 * LOCAL_QP_OP_ERR, strict.  dc_av_target on the udp wire: a GID that is no
 * IPv4-mapped address is unreachable for it: TRANSPORT_RETRY_EXC_ERR. */
int nm_check_dc_av_route(struct nm_qp *qp, struct nm_op *op)
{
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (op->av_ds != 3)
		return nm_check_fail(qp, op, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "dc_av_compact", 1,
				     "a compact AV (no GRH) cannot reach a DCT over RoCE");
	if (!memcmp(op->av + 32, v4map, 12))
		return 0;
	nm_violation(qp, op->wqe_index, "dc_av_target", MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		     "AV names DCT 0x%x at a GID that is no IPv4-mapped address: the udp transport "
		     "cannot reach it",
		     op->dc_dctn);
	op->flags |= NM_OPF_VIOLATION;
	return dc_unanswered(op, "dc_av_target");
}

/* dc_dct_state - ConnectX: a DCT not in RTR (RESET, INIT, ERR, drained)
 * does not answer: TRANSPORT_RETRY_EXC_ERR on the DCI.  gdak: the same.
 * Both ends call it: the DCI side (op: the WQE, failed at once for a DCT
 * of this process) and the DCT side (op NULL: the request from DCI dci is
 * dropped, its engine retries out). */
int nm_check_dc_dct_state(struct nm_qp *dct, uint32_t dci, struct nm_qp *qp, struct nm_op *op)
{
	int st = nm_qp_state(dct);

	if (st == GDAK_QPS_RTR)
		return 0;
	if (!op) {
		GDAK_WARN_RL("qp", dct->id,
			     "DCT is in %s: the DC request of DCI 0x%x goes unanswered",
			     gdak_qp_state_name((enum gdak_qp_state)st), dci);
		return 1;
	}
	GDAK_WARN_RL("qp", qp->id, "WQE %u (%s): DCT 0x%x is in %s: the DC connect goes unanswered",
		     op->wqe_index, gdak_mlx5_opcode_name(op->opcode), dct->base.qpn,
		     gdak_qp_state_name((enum gdak_qp_state)st));
	return dc_unanswered(op, "dc_dct_state");
}

/* dc_key_violation - ConnectX: the DCT drops a connect with the wrong access
 * key and counts it (dctc.dc_access_key_violation_count, the
 * DCT_KEY_VIOLATION event); the DCI retries out: TRANSPORT_RETRY_EXC_ERR.
 * gdak: the same, counted in *count (gdak_nic_dc_stats key_violations;
 * several DCIs may hit one DCT at once).  Both ends, as dc_dct_state. */
int nm_check_dc_key_violation(struct nm_qp *dct, uint64_t want, uint64_t key, uint64_t *count,
			      uint32_t dci, struct nm_op *op)
{
	if (key == want)
		return 0;
	__atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
	if (op)
		GDAK_WARN_RL("qp", dct->id,
			     "DCT access key violation: DCI 0x%x WQE %u presents key 0x%llx", dci,
			     op->wqe_index, (unsigned long long)key);
	else
		GDAK_WARN_RL("qp", dct->id,
			     "DCT access key violation: DCI 0x%x presents key 0x%llx", dci,
			     (unsigned long long)key);
	return op ? dc_unanswered(op, "dc_key_violation") : 1;
}
