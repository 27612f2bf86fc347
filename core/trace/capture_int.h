/* SPDX-License-Identifier: MIT */
/*
 * capture_int.h - the ring capture (core/trace/trace_capture.c, capture_*.c),
 * internal to gdak: the hooks backends call, and the capture's own loader of
 * the CUDA driver API.  Grouped by the file that defines them.
 */
#ifndef GDAK_CAPTURE_INT_H
#define GDAK_CAPTURE_INT_H

#include <stddef.h>

#include <gdak/capture.h>

struct gdak_ctx;
struct gdak_qp;

/* ---- trace_capture.c: backend hooks -------------------------------------- */

/* A QP was created: with $GDAK_CAPTURE_TRACE or else $GDAK_TRACE set, the
 * process-wide capture (opened on first use, closed at exit) follows it.
 * Never fails the creation. */
void gdak_capture_env_add_qp(struct gdak_qp *qp);
/* qp is about to be destroyed: every capture following it makes a last pass
 * over its rings and forgets it. */
void gdak_capture_forget_qp(struct gdak_qp *qp);
/* ctx is about to be closed: its QPs are forgotten as above, captures bound
 * to it stop and complete their files (their handles stay valid). */
void gdak_capture_forget_ctx(struct gdak_ctx *ctx);

/* ---- capture_cuda.c: GPU-resident rings ---------------------------------- */

struct cap_cuda;	/* a non-blocking stream and the context it belongs to */

/* dlopen("libcuda.so.1"), cuInit, the primary context of $GDAK_CUDA_DEVICE
 * (default 0), a non-blocking stream; -ENODEV without a usable GPU. */
int cap_cuda_open(struct cap_cuda **cc);
void cap_cuda_close(struct cap_cuda *cc);
/* Pinned host memory (copies into it never stage through a bounce buffer). */
int cap_cuda_host_alloc(struct cap_cuda *cc, size_t len, void **p);
void cap_cuda_host_free(struct cap_cuda *cc, void *p);
/* What a ring pointer from a device descriptor is: *device = 1 for GPU
 * memory (read with cap_cuda_read), else *host = the address the host reads
 * it at (pinned or registered host memory may be mapped into the GPU at
 * another address).  -ENODEV without CUDA (then *host = p, *device = 0). */
int cap_cuda_classify(const void *p, const void **host, int *device);
/* Copy len bytes of GPU memory at src to dst and wait for the copy alone
 * (never for the application's kernels: the stream is non-blocking). */
int cap_cuda_read(struct cap_cuda *cc, void *dst, const void *src, size_t len);

/* Test hook: treat every ring as GPU memory read by memcpy (the staged
 * paths, without a GPU).  Set before adding rings. */
void gdak_capture_test_fake_gpu(int on);

#endif /* GDAK_CAPTURE_INT_H */
