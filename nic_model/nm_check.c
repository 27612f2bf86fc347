/* SPDX-License-Identifier: MIT */
/*
 * nm_check.c - the checks: how a failed strict-mode rule is reported
 * (nm_violation: counter, error query, rate-limited log, trace record),
 * how a failed WQE check marks its op, and the lkey / access / bounds
 * rule for a local data segment.  The stages call these where their rule
 * fires; the rule names are those the logs, traces and gdak_qp_query_error
 * print.
 */
#include <stdarg.h>
#include <stdio.h>

#include "nm_loc.h"

void nm_check_fail(struct nm_qp *qp, struct nm_op *op, uint8_t synd, const char *rule,
		   int violation, const char *what)
{
	op->status = synd;
	op->rule = rule;
	if (violation) {
		op->flags |= NM_OPF_VIOLATION;
		nm_violation(qp, op->wqe_index, rule, synd, "%s WQE: %s",
			     gdak_mlx5_opcode_name(op->opcode), what);
	}
}

int nm_check_local_sge(struct nm_qp *qp, const struct nm_op *op, unsigned i, unsigned need,
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
