/* SPDX-License-Identifier: MIT */
/*
 * ex_write.c - a first gdak program: one RDMA WRITE posted by a host thread
 * playing the device, and the CQE the NIC model writes back for it.
 *
 *   build:  part of gdak's build (target ex_write), or against an install:
 *           cc ex_write.c $(pkg-config --cflags --libs gdak)
 *   run:    ./ex_write            (any device string: ./ex_write emu:udp)
 *
 * The steps are those of a CUDA kernel (ex_write_cuda.cu does the same from
 * one): build the WQE in the send ring, publish it in the doorbell record,
 * ring the doorbell, poll the completion queue.  rma.h's gdak_dev_put +
 * gdak_dev_wait do all of that in two calls; here each step is spelled out
 * so that the CQE can be looked at.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/dev/dev.h>

#define LEN 64

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "emu";
	struct gdak_ctx *ctx;
	struct gdak_qp *qa, *qb;
	struct gdak_qp_info ia, ib;
	struct gdak_mr *msrc, *mdst;
	struct gdak_dev_qp *q;
	struct gdak_dev_cqe cqe;
	uint8_t *src, *dst;
	int ret, n;

	ret = gdak_open(dev, &ctx);
	if (ret) {
		fprintf(stderr, "gdak_open(%s): %s\n", dev, gdak_strerror(ret));
		return 1;
	}
	/* Host threads are the device here, so plain host memory will do
	 * (GDAK_MEM_HOST).  A CUDA kernel needs memory it can address:
	 * GDAK_MEM_HOST_MAPPED (pinned, mapped into the GPU) or GDAK_MEM_GPU. */
	if (gdak_mem_alloc(ctx, LEN, GDAK_MEM_HOST, (void **)&src) ||
	    gdak_mem_alloc(ctx, LEN, GDAK_MEM_HOST, (void **)&dst) ||
	    gdak_mr_reg(ctx, src, LEN, GDAK_ACCESS_LOCAL_WRITE, &msrc) ||
	    gdak_mr_reg(ctx, dst, LEN, GDAK_ACCESS_ALL, &mdst))
		return 1;
	for (int i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	memset(dst, 0, LEN);

	/* Two QPs of one NIC, connected to each other: qa writes into the
	 * memory qb's side registered (the same NIC here; another process or
	 * host with emu:udp, ex_put_signal.c). */
	if (gdak_qp_create(ctx, NULL, &qa) || gdak_qp_create(ctx, NULL, &qb) ||
	    gdak_qp_info(qa, &ia) || gdak_qp_info(qb, &ib) || gdak_qp_connect(qa, &ib) ||
	    gdak_qp_connect(qb, &ia))
		return 1;
	/* The descriptor device code works with: ring addresses, doorbell
	 * record and register, indices. */
	if (gdak_qp_export(qa, &q))
		return 1;

	/* 1. Reserve one WQEBB.  gdak_dev_sq_reserve does not check for room:
	 *    a fresh queue has all of it; later, gdak_dev_sq_free_bbs says how
	 *    much is free (rma.h's calls wait for it). */
	uint64_t idx = gdak_dev_sq_reserve(q, 1);
	struct gdak_dev_sge sge = { .addr = (uintptr_t)src,
				    .len = LEN,
				    .lkey = gdak_mr_lkey(msrc) };

	/* 2. Build an RDMA_WRITE WQE there: ctrl + remote address + one data
	 *    segment.  SIGNAL asks for a CQE on success (without it the NIC
	 *    writes one only on error). */
	if (!gdak_dev_wqe_write(q, idx, GDAK_DEV_WQE_SIGNAL, (uintptr_t)dst, gdak_mr_rkey(mdst),
				&sge, 1))
		return 1;

	/* 3. Doorbell record then doorbell register, by the QP's handler. */
	gdak_dev_sq_submit(q, idx, q->sq_resv);

	/* 4. Poll the send CQ.  wq_base is the oldest send-queue index not yet
	 *    retired (q->sq_done): the CQE carries only 16 bits of the WQE's
	 *    index, and wq_base is what they are mapped back against. */
	while ((n = gdak_dev_cq_poll_one(&q->scq, q->sq_done, &cqe)) == 0)
		;
	/* The CQ doorbell record tells the NIC which entries it may reuse;
	 * without it a long-running program overruns the CQ.  Once per batch
	 * of polled CQEs is enough (gdak_dev_sq_drain does it for you). */
	gdak_dev_cq_update_dbrec(&q->scq);
	/* RC completes in order: this CQE retires the WQE it names and every
	 * WQE before it (unsignalled ones included). */
	q->sq_done = gdak_dev_sq_retire_end(q, cqe.wqe_index, q->sq_done);

	printf("CQE: opcode %s, wqe_counter %u (index %llu), qpn 0x%06x, byte_cnt %u, syndrome %s\n",
	       gdak_mlx5_cqe_opcode_name(cqe.opcode), cqe.wqe_counter,
	       (unsigned long long)cqe.wqe_index, cqe.qpn, cqe.byte_cnt,
	       n < 0 ? gdak_mlx5_syndrome_name(cqe.syndrome) : "none");
	if (n < 0 || cqe.opcode != MLX5_CQE_REQ || cqe.wqe_index != idx ||
	    cqe.qpn != gdak_qp_num(qa) || cqe.byte_cnt != LEN || memcmp(dst, src, LEN)) {
		fprintf(stderr, "ex_write: FAILED\n");
		return 1;
	}
	printf("ex_write: %d bytes written and checked, sq_done %llu\n", LEN,
	       (unsigned long long)q->sq_done);

	gdak_qp_destroy(qa);
	gdak_qp_destroy(qb);
	gdak_mr_dereg(msrc);
	gdak_mr_dereg(mdst);
	gdak_mem_free(ctx, src);
	gdak_mem_free(ctx, dst);
	gdak_close(ctx);
	return 0;
}
