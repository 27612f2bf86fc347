/* SPDX-License-Identifier: MIT */
/*
 * ex_write_cuda.cu - ex_write.c from a CUDA kernel: one GPU thread posts an
 * RDMA WRITE, rings the doorbell and polls its CQE through the same device
 * headers; the NIC model (CPU threads) executes it.
 *
 *   build:  target ex_write_cuda (with a CUDA toolkit), or against an install:
 *           nvcc -arch=sm_90 ex_write_cuda.cu $(pkg-config --cflags --libs gdak)
 *   run:    ./ex_write_cuda       exits 77 (skipped) when no GPU is usable
 *
 * What changes from host threads: the buffers must be addressable by the GPU
 * (GDAK_MEM_HOST_MAPPED here, so the host can check them directly;
 * GDAK_MEM_GPU for device memory), and the descriptor gdak_qp_export()
 * returns already lives in device-visible memory: pass its pointer to the
 * kernel as it is.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/dev/dev.h>

#define LEN 64

struct kout {
	int rc;
	uint8_t opcode, syndrome;
	uint16_t wqe_counter;
	uint32_t byte_cnt;
};

__global__ void write_one(struct gdak_dev_qp *q, uint64_t src, uint32_t lkey, uint64_t dst,
			  uint32_t rkey, struct kout *out)
{
	struct gdak_dev_sge sge = {src, LEN, lkey};
	struct gdak_dev_cqe cqe;
	uint64_t idx = gdak_dev_sq_reserve(q, 1);
	int n;

	gdak_dev_wqe_write(q, idx, GDAK_DEV_WQE_SIGNAL, dst, rkey, &sge, 1);
	gdak_dev_sq_submit(q, idx, q->sq_resv);
	/* wq_base: the oldest unretired send-queue index (cq.h) */
	while ((n = gdak_dev_cq_poll_one(&q->scq, q->sq_done, &cqe)) == 0)
		;
	gdak_dev_cq_update_dbrec(&q->scq);
	q->sq_done = gdak_dev_sq_retire_end(q, cqe.wqe_index, q->sq_done);
	out->rc = n;
	out->opcode = cqe.opcode;
	out->syndrome = cqe.syndrome;
	out->wqe_counter = cqe.wqe_counter;
	out->byte_cnt = cqe.byte_cnt;
}

int main(void)
{
	struct gdak_ctx *ctx;
	struct gdak_qp *qa, *qb;
	struct gdak_qp_info ia, ib;
	struct gdak_mr *msrc, *mdst;
	struct gdak_dev_qp *q;
	struct kout *out;
	uint8_t *src, *dst;
	int ngpu = 0;

	if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
		printf("ex_write_cuda: skipped: no usable GPU\n");
		return 77;
	}
	if (gdak_open("emu", &ctx) ||
	    gdak_mem_alloc(ctx, LEN, GDAK_MEM_HOST_MAPPED, (void **)&src) ||
	    gdak_mem_alloc(ctx, LEN, GDAK_MEM_HOST_MAPPED, (void **)&dst) ||
	    gdak_mem_alloc(ctx, sizeof(*out), GDAK_MEM_HOST_MAPPED, (void **)&out) ||
	    gdak_mr_reg(ctx, src, LEN, GDAK_ACCESS_LOCAL_WRITE, &msrc) ||
	    gdak_mr_reg(ctx, dst, LEN, GDAK_ACCESS_ALL, &mdst) ||
	    gdak_qp_create(ctx, NULL, &qa) || gdak_qp_create(ctx, NULL, &qb) ||
	    gdak_qp_info(qa, &ia) || gdak_qp_info(qb, &ib) || gdak_qp_connect(qa, &ib) ||
	    gdak_qp_connect(qb, &ia) || gdak_qp_export(qa, &q))
		return 1;
	for (int i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	memset(dst, 0, LEN);

	write_one<<<1, 1>>>(q, (uintptr_t)src, gdak_mr_lkey(msrc), (uintptr_t)dst,
			    gdak_mr_rkey(mdst), out);
	if (cudaDeviceSynchronize() != cudaSuccess) {
		fprintf(stderr, "ex_write_cuda: kernel failed\n");
		return 1;
	}
	printf("CQE: opcode %s, wqe_counter %u, byte_cnt %u, syndrome %s\n",
	       gdak_mlx5_cqe_opcode_name(out->opcode), out->wqe_counter, out->byte_cnt,
	       out->rc < 0 ? gdak_mlx5_syndrome_name(out->syndrome) : "none");
	if (out->rc != 1 || out->opcode != MLX5_CQE_REQ || out->byte_cnt != LEN ||
	    memcmp(dst, src, LEN)) {
		fprintf(stderr, "ex_write_cuda: FAILED\n");
		return 1;
	}
	printf("ex_write_cuda: %d bytes written by the GPU and checked\n", LEN);
	gdak_qp_destroy(qa);
	gdak_qp_destroy(qb);
	gdak_close(ctx);
	return 0;
}
