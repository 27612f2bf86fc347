/* SPDX-License-Identifier: MIT */
/*
 * ex_strict.c - what strict mode catches, and how to read it.
 *
 * A ConnectX fetches the WQE at the slot its producer counter points to and
 * trusts the ctrl segment's 16-bit wqe_index; a WQE built with the wrong
 * index (here: the right slot, but one ring-length too far - the classic
 * "used the unwrapped counter of the next lap" bug) is executed all the
 * same and its CQE names a WQE that never existed.  The NIC model in strict
 * mode (GDAK_STRICT=1, the default) refuses it instead: an error CQE with
 * LOCAL_QP_OP_ERR, the QP in ERR, the rule named in gdak_qp_query_error(),
 * and a VIOLATION record in the trace.
 *
 *   ./ex_strict [TRACE]            writes TRACE (default ex_strict.pcapng)
 *   gdak-trace --errors TRACE      the error CQE and the violation
 *   gdak-trace --summary TRACE     per QP: first error and the WQE it names
 *
 * Exits 0 when the violation was reported as described.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/nic.h>
#include <gdak/dev/dev.h>

int main(int argc, char **argv)
{
	const char *trace = argc > 1 ? argv[1] : "ex_strict.pcapng";
	struct gdak_ctx *ctx;
	struct gdak_qp *qa, *qb;
	struct gdak_qp_info ia, ib;
	struct gdak_qp_error qe;
	struct gdak_mr *mr;
	struct gdak_dev_qp *q;
	struct gdak_dev_cqe cqe;
	uint8_t *buf;
	int ret, n;

	if (gdak_open("emu", &ctx) || gdak_mem_alloc(ctx, 128, GDAK_MEM_HOST, (void **)&buf) ||
	    gdak_mr_reg(ctx, buf, 128, GDAK_ACCESS_ALL, &mr) || gdak_qp_create(ctx, NULL, &qa) ||
	    gdak_qp_create(ctx, NULL, &qb) || gdak_qp_info(qa, &ia) || gdak_qp_info(qb, &ib) ||
	    gdak_qp_connect(qa, &ib) || gdak_qp_connect(qb, &ia) || gdak_qp_export(qa, &q))
		return 1;
	/* the trace starts here (GDAK_TRACE=path would start it at gdak_open) */
	if ((ret = gdak_nic_set_trace(trace))) {
		fprintf(stderr, "ex_strict: trace %s: %s\n", trace, gdak_strerror(ret));
		return 1;
	}

	struct gdak_dev_sge sge = { .addr = (uintptr_t)buf, .len = 64, .lkey = gdak_mr_lkey(mr) };
	uint64_t idx = gdak_dev_sq_reserve(q, 1);
	/* THE BUG: same ring slot (idx & (ring - 1)), wrong ctrl wqe_index */
	gdak_dev_wqe_write(q, idx + q->sq_wqebb_cnt, GDAK_DEV_WQE_SIGNAL, (uintptr_t)buf + 64,
			   gdak_mr_rkey(mr), &sge, 1);
	gdak_dev_sq_submit(q, idx, q->sq_resv);

	while ((n = gdak_dev_cq_poll_one(&q->scq, q->sq_done, &cqe)) == 0)
		;
	gdak_dev_cq_update_dbrec(&q->scq);
	printf("CQE: %s, syndrome %s (0x%02x), wqe_counter %u, failed WQE opcode %s\n",
	       gdak_mlx5_cqe_opcode_name(cqe.opcode), gdak_mlx5_syndrome_name(cqe.syndrome),
	       cqe.syndrome, cqe.wqe_counter, gdak_mlx5_opcode_name(cqe.wqe_opcode));
	/* The host side names the rule and says what it saw. */
	if ((ret = gdak_qp_query_error(qa, &qe)))
		return 1;
	printf("QP 0x%06x: state %s, rule %s: %s\n", gdak_qp_num(qa), gdak_qp_state_name(qe.state),
	       qe.rule, qe.text);
	gdak_nic_set_trace(NULL); /* close the trace: gdak-trace reads a complete file */
	printf("trace: %s (gdak-trace --errors %s)\n", trace, trace);

	ret = n == -EIO && cqe.opcode == MLX5_CQE_REQ_ERR &&
			      cqe.syndrome == MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR &&
			      qe.state == GDAK_QPS_ERR && !strcmp(qe.rule, "wqe_index_mismatch")
		      ? 0
		      : 1;
	if (ret)
		fprintf(stderr, "ex_strict: the violation was not reported as expected\n");
	gdak_qp_destroy(qa);
	gdak_qp_destroy(qb);
	gdak_mr_dereg(mr);
	gdak_mem_free(ctx, buf);
	gdak_close(ctx);
	return ret;
}
