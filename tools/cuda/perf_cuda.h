/* SPDX-License-Identifier: MIT */
/*
 * perf_cuda.h - gdak-perf-cuda: the device API driven by CUDA kernels
 * against the NIC model, with the baselines each number is judged by,
 * measured in the same run:
 *
 *   pingpong   a kernel writes a word of mapped host memory, a CPU thread
 *              answers in another, the kernel polls it: the floor of any
 *              kernel -> CPU -> kernel round trip (the NIC model is a CPU)
 *   write_lat  a kernel posts an 8-byte inline RDMA_WRITE, the NIC model
 *              executes it, the kernel sees its CQE (p50 / p99 vs pingpong)
 *   write_bw   1..256 CTAs, one thread and one QP each (NVSHMEM
 *              shmem_put_bw's shape), puts of S bytes; WQE/s over NIC
 *              threads 1/2/4/8
 *   big_bw     16 MiB GPU -> GPU RDMA_WRITE vs cudaMemcpy device-to-device
 *   floor      rings in GPU memory (GDAK_QP_F_QUEUES_GPU): a kernel writes a
 *              64-byte "WQE" to GPU memory and a host word, a CPU thread
 *              copies the WQE device-to-host and delivers a 64-byte "CQE"
 *              host-to-device (body copy, then cuStreamWriteValue32 of its
 *              last word), the kernel polls it: one fetch plus one delivery,
 *              the floor of a CPU NIC without a mapping of GPU memory; the
 *              gpu-rings write_lat rows are judged by it; and "wv ..." rows:
 *              a CPU thread answers a kernel's host word with stream
 *              write-values (a value into GPU memory, a host word), the
 *              floor of the gpu-dst write_lat rows (perf_cuda_lat.cu)
 *   dc_put_bw  write_bw's shape on DCIs, each put to the next of 8 DCTs
 *              (compact and full AV), vs the same puts on RC QPs
 *
 * Files: perf_cuda_main.cu (options, rows, output), perf_cuda_lat.cu
 * (pingpong, write_lat), perf_cuda_bw.cu (write_bw, big_bw), perf_cuda_dc.cu
 * (dc_put_bw).
 */
#ifndef GDAK_PERF_CUDA_H
#define GDAK_PERF_CUDA_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <gdak/gdak.h>
#include <gdak/nic.h>
#include <gdak/dev/dev.h>

struct pc_opts {
	unsigned lat_iters;	/* latency samples (after warm-up) */
	unsigned bw_iters;	/* puts per CTA */
	unsigned big_iters;	/* 16 MiB writes */
	size_t bw_size;		/* write_bw message size */
	size_t big_size;
	unsigned ctas[16], nctas;
	unsigned nic_threads[8], nnic;
	int run_lat, run_bw, run_big, run_dc;
	int gpu_desc;		/* descriptors copied into GPU memory (default) */
	const char *json;	/* JSON file, or NULL */
};

/* One output row. */
struct pc_row {
	char test[32];
	char note[48];		/* memory, descriptor placement ... */
	size_t bytes;
	unsigned ctas, nic_threads;
	uint64_t ops;
	double p50_ns, p99_ns, min_ns;	/* latency rows */
	double post_p50_ns;		/* write_lat: of which posting (until the doorbell) */
	double base_p50_ns, base_p99_ns; /* pingpong in the same run */
	double msg_rate, bw;		/* rate rows: WQE/s, bytes/s */
	double base_bw;			/* big_bw: cudaMemcpy D2D bytes/s */
	int verified;
};

#define PC_CHECK(call)                                                                      \
	do {                                                                                \
		cudaError_t e_ = (call);                                                    \
		if (e_ != cudaSuccess) {                                                    \
			fprintf(stderr, "gdak-perf-cuda: %s:%d: %s: %s\n", __FILE__,        \
				__LINE__, #call, cudaGetErrorString(e_));                   \
			return -EIO;                                                        \
		}                                                                           \
	} while (0)
#define PC_GDAK(call)                                                                       \
	do {                                                                                \
		int r_ = (call);                                                            \
		if (r_) {                                                                   \
			fprintf(stderr, "gdak-perf-cuda: %s:%d: %s: %s\n", __FILE__,        \
				__LINE__, #call, gdak_strerror(r_));                        \
			return r_;                                                          \
		}                                                                           \
	} while (0)

/* ---- perf_cuda_main.cu ---------------------------------------------------- */
void pc_add_row(const struct pc_row *r);
double pc_percentile(double *v, size_t n, double p); /* sorts v */
uint64_t pc_now_ns(void);
/* Wait for stream s; -ETIMEDOUT after limit_s seconds (the kernel hangs). */
int pc_wait(cudaStream_t s, unsigned limit_s, const char *what);

/* A connected pair on ctx; the requester's descriptor is copied into GPU
 * memory when gpu_desc (its device-owned indices are then GPU-local; the
 * rings and records stay in mapped host memory). */
struct pc_pair {
	struct gdak_qp *qa, *qb;
	struct gdak_dev_qp *dev;	/* what the kernel uses */
	struct gdak_dev_qp *host;	/* the exported descriptor */
};
/* GDAK_QP_F_* for the pairs pc_pair_make creates (the gpu-rings rows) */
extern unsigned pc_qp_flags;
int pc_pair_make(struct gdak_ctx *ctx, enum gdak_dev_db_handler h, uint32_t sq, int nic_thread,
		 int gpu_desc, struct gdak_dev_qp *dev_slot, struct pc_pair *p);
void pc_pair_destroy(struct pc_pair *p);

/* ---- perf_cuda_lat.cu ------------------------------------------------------ */
/* The raw ping-pong: p50/p99 in ns. */
int pc_pingpong(unsigned iters, double *p50, double *p99);
/* One device-to-host fetch plus one host-to-device CQE delivery: p50/p99. */
int pc_floor(unsigned iters, double *p50, double *p99);
/* The stream write-value floors of a GPU-memory WRITE (floor rows "wv ..."):
 * *engine_p50 is the one shaped like the engine's batch (value, CQE word,
 * completion word). */
int pc_wv_floors(unsigned iters, double base_p50, double base_p99, double *engine_p50);
int pc_write_lat(const struct pc_opts *o, double base_p50, double base_p99);

/* ---- perf_cuda_bw.cu -------------------------------------------------------- */
int pc_write_bw(const struct pc_opts *o);
/* The rate kernel: CTA c puts n times from src + c * size to dst + c * size
 * on qps[c], then waits for all of them; its clock at start and end in
 * t0[c] and t1[c], its status in rc[c] (perf_cuda_bw.cu). */
__global__ void pc_k_rate(struct gdak_dev_qp *qps, uint64_t src, uint32_t lkey, uint64_t dst,
			  uint32_t rkey, uint32_t size, unsigned n, uint64_t *t0, uint64_t *t1,
			  int *rc);
int pc_big_bw(const struct pc_opts *o);
/* What the rate kernels time, in CTA c: n posts on qp (post(i): 0 or the
 * error that ends the burst), then the wait for all of them; the clock at
 * start and end in t0[c] and t1[c], the status in rc[c]. */
template <typename Post>
__device__ static inline void pc_timed_burst(struct gdak_dev_qp *qp, unsigned n, uint64_t *t0,
					     uint64_t *t1, int *rc, Post post)
{
	unsigned c = blockIdx.x;
	int r = 0;

	t0[c] = gdak_dev_now_ns();
	for (unsigned i = 0; i < n && !r; i++)
		r = post(i);
	if (!r)
		r = gdak_dev_quiet_timeout(qp, 30000000000ull, NULL);
	t1[c] = gdak_dev_now_ns();
	rc[c] = r;
}
/* ---- perf_cuda_dc.cu ----------------------------------------------------- */
int pc_dc_bw(const struct pc_opts *o);

#endif /* GDAK_PERF_CUDA_H */
