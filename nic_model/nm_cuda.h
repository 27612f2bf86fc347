/* SPDX-License-Identifier: MIT */
/*
 * nm_cuda.h - the CUDA driver API as the NIC model's CUDA memory engine uses
 * it, loaded at run time from libcuda.so.1 (never linked: one build of gdak
 * runs on machines with and without a GPU).
 *
 * Only the few types and constants the engine needs are declared here, with
 * the values of the driver API (cuda.h, CUDA 12/13); the symbol names are
 * the versioned ones libcuda exports (cuMemAlloc_v2 ...), because cuda.h
 * maps the plain names to them with macros.
 */
#ifndef NM_CUDA_H
#define NM_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef int nm_cu_result;		/* CUresult: 0 = CUDA_SUCCESS */
typedef int nm_cu_device;		/* CUdevice */
typedef struct nm_cu_ctx_st *nm_cu_ctx;	/* CUcontext */
typedef struct nm_cu_stream_st *nm_cu_stream; /* CUstream */
typedef struct nm_cu_event_st *nm_cu_event;	/* CUevent */
typedef unsigned long long nm_cu_ptr;	/* CUdeviceptr */
typedef struct nm_cu_mod_st *nm_cu_module;    /* CUmodule */
typedef struct nm_cu_func_st *nm_cu_function; /* CUfunction */

#define NM_CU_MEMHOSTALLOC_PORTABLE 0x01
#define NM_CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define NM_CU_STREAM_NON_BLOCKING 0x1
#define NM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define NM_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS 6
#define NM_CU_MEMORYTYPE_HOST 1
#define NM_CU_MEMORYTYPE_DEVICE 2
#define NM_CU_MEMORYTYPE_UNIFIED 4
#define NM_CU_ERROR_NOT_READY 600
#define NM_CU_EVENT_DISABLE_TIMING 0x2
#define NM_CU_MEMOP_WRITE_VALUE_32 2 /* CUstreamBatchMemOpType */
#define NM_CU_MEMOP_WRITE_VALUE_64 5
#define NM_CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER 0x1
#define NM_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM 1
#define NM_CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE 1

/* CUstreamBatchMemOpParams (its writeValue member; the union is 48 bytes) */
struct nm_cu_memop {
	uint32_t op;
	uint32_t pad0;
	uint64_t addr;
	uint64_t value;
	uint32_t flags;
	uint32_t pad1;
	uint64_t alias; /* the driver's */
	uint64_t pad2;
};

/* CUmemcpyAttributes: source order, two CUmemLocation hints, flags */
struct nm_cu_cpattr {
	int32_t src_order;
	int32_t src_loc[2];
	int32_t dst_loc[2];
	uint32_t flags;
};

struct nm_cu_api {
	nm_cu_result (*DeviceGetName)(char *name, int len, nm_cu_device dev);
	nm_cu_result (*CtxSetCurrent)(nm_cu_ctx ctx);
	nm_cu_result (*MemAlloc)(nm_cu_ptr *p, size_t len);
	nm_cu_result (*MemFree)(nm_cu_ptr p);
	nm_cu_result (*MemHostAlloc)(void **p, size_t len, unsigned flags);
	nm_cu_result (*MemFreeHost)(void *p);
	nm_cu_result (*MemHostGetDevicePointer)(nm_cu_ptr *d, void *h, unsigned flags);
	nm_cu_result (*MemcpyAsync)(nm_cu_ptr dst, nm_cu_ptr src, size_t len, nm_cu_stream s);
	/* optional: the device-to-device form (no pointer classification) */
	nm_cu_result (*MemcpyDtoDAsync)(nm_cu_ptr dst, nm_cu_ptr src, size_t len, nm_cu_stream s);
	nm_cu_result (*StreamCreate)(nm_cu_stream *s, unsigned flags);
	nm_cu_result (*StreamSynchronize)(nm_cu_stream s);
	nm_cu_result (*StreamDestroy)(nm_cu_stream s);
	nm_cu_result (*PointerGetAttribute)(void *data, int attr, nm_cu_ptr p);
	/* optional: SYNC_MEMOPS on memory pinned for GDRCopy */
	nm_cu_result (*PointerSetAttribute)(const void *value, int attr, nm_cu_ptr p);
	nm_cu_result (*GetErrorString)(nm_cu_result r, const char **s);
	nm_cu_result (*EventCreate)(nm_cu_event *e, unsigned flags);
	nm_cu_result (*EventRecord)(nm_cu_event e, nm_cu_stream s);
	nm_cu_result (*EventQuery)(nm_cu_event e);
	nm_cu_result (*EventDestroy)(nm_cu_event e);
	/* GDAK_CUDA_STATS's timeline of direct copies; optional */
	nm_cu_result (*EventSynchronize)(nm_cu_event e);
	nm_cu_result (*EventElapsedTime)(float *ms, nm_cu_event a, nm_cu_event b);
	/* GDAK_CUDA_BATCH=memop; optional */
	nm_cu_result (*StreamWriteValue32)(nm_cu_stream s, nm_cu_ptr addr, uint32_t v,
					   unsigned flags);
	nm_cu_result (*StreamWriteValue64)(nm_cu_stream s, nm_cu_ptr addr, uint64_t v,
					   unsigned flags);
	/* GDAK_CUDA_BATCH: optional */
	nm_cu_result (*StreamQuery)(nm_cu_stream s);
	nm_cu_result (*StreamBatchMemOp)(nm_cu_stream s, unsigned count, struct nm_cu_memop *ops,
					 unsigned flags);
	/* cuMemcpyBatchAsync_v2 (CUDA 13); or the CUDA 12.8 form with failIdx */
	nm_cu_result (*MemcpyBatch)(nm_cu_ptr *dsts, nm_cu_ptr *srcs, size_t *sizes, size_t count,
				    struct nm_cu_cpattr *attrs, size_t *attr_idx, size_t nattrs,
				    nm_cu_stream s);
	nm_cu_result (*MemcpyBatch12)(nm_cu_ptr *dsts, nm_cu_ptr *srcs, size_t *sizes, size_t count,
				      struct nm_cu_cpattr *attrs, size_t *attr_idx, size_t nattrs,
				      size_t *fail_idx, nm_cu_stream s);
	/* the batch copy kernel (GDAK_CUDA_BATCH=kernel); optional */
	nm_cu_result (*ModuleLoadData)(nm_cu_module *m, const void *image);
	nm_cu_result (*ModuleGetFunction)(nm_cu_function *f, nm_cu_module m, const char *name);
	nm_cu_result (*LaunchKernel)(nm_cu_function f, unsigned gx, unsigned gy, unsigned gz,
				     unsigned bx, unsigned by, unsigned bz, unsigned shmem,
				     nm_cu_stream s, void **params, void **extra);
	/* the wide copy's grid (GDAK_CUDA_BIG=kernel); optional */
	nm_cu_result (*DeviceGetAttribute)(int *v, int attr, nm_cu_device dev);
};

/*
 * Asynchronous copies, for a NIC-model pipeline that keeps several WQEs'
 * copies in flight and completes each WQE when its copy is done (what a
 * 16 MiB GPU -> GPU WRITE needs to approach cudaMemcpy: one synchronous
 * copy per WQE pays the launch and the completion wake-up, ~10 us on an
 * H200, for every WQE).  Reached through nm_dma_ops.copy_start /
 * copy_poll (nm_dma.h), which the loop transport uses for GPU WRITEs
 * (nm_loop.c); docs/CUDA.md "Asynchronous copies".
 *
 * nm_cuda_copy_start enqueues the copy on the calling NIC thread's stream
 * (copies of one thread complete in the order started) and records t's
 * event after it: 0, or -errno (nothing was enqueued).  Host-only copies
 * are done at once (t->done = 1).  nm_cuda_copy_poll: 1 when the copy has
 * landed (a CQE written after it is ordered after the data), 0 while in
 * flight, -EIO when the copy failed.  A ticket is reused freely;
 * nm_cuda_copy_ticket_fini frees its event.  -ENODEV without the CUDA
 * engine.
 *
 * With GDAK_CUDA_BATCH=kernel a copy into GPU memory of at most
 * GDAK_CUDA_BATCH_MAX bytes whose ticket asks for any stream or for the
 * batch stream (and whose host source, if any, is not src_busy) is not
 * started at once: it joins the
 * calling thread's open batch (small host sources are staged in it), and
 * the batch - every such copy of a NIC pass - is launched as ONE copy
 * kernel with ONE event when a ticket of it is first polled (or when it is
 * full).  Batches of a thread run in order on one stream; inside a batch,
 * copies whose ranges may meet are copied in the order started.
 *
 * With GDAK_CUDA_CQE=stream as well, every copy of a NIC thread goes on its
 * batch stream, and one into GPU memory started by the NIC thread inside a
 * pass comes back done (t->done = 1) at once: whatever the completer then
 * writes through nm_dma_ops.cqe_tail lands after it on that stream.
 */
struct nm_cuda_ticket {
	nm_cu_event ev;
	void *batch;  /* a batched copy (GDAK_CUDA_BATCH): the batch engine, */
	uint64_t seq; /* and the batch it is in; NULL: ev is the copy's event */
	int done;
	int stream;   /* in: stream index to use, < 0 any; out: the one used
			 * (NM_CUDA_BATCH_STREAM: the batch stream) */
	int src_busy; /* in: a copy in flight writes into the source range (a
			 * host source then cannot be staged when the copy starts) */
};
/* The stream index of batched copies and of the copies ordered with them. */
#define NM_CUDA_BATCH_STREAM 8
int nm_cuda_copy_start(void *dst, int dst_kind, const void *src, int src_kind, size_t len,
		       struct nm_cuda_ticket *t);
int nm_cuda_copy_poll(struct nm_cuda_ticket *t);
void nm_cuda_copy_ticket_fini(struct nm_cuda_ticket *t);

/*
 * What the engine did since the process started: where the time of GPU-
 * memory WRITEs goes (docs/CUDA.md "Counters").  GDAK_CUDA_STATS=1 prints
 * the change since the last print to stderr at every emu context close and
 * at exit (nm_cuda_stats_report); gdak-perf-cuda's logs then say, per
 * configuration, how many driver calls each batch cost.
 */
struct nm_cuda_stats {
	uint64_t copies_batched;   /* copies that joined a batch */
	uint64_t copies_replaced;  /* ... and were replaced by a later one (same range) */
	uint64_t copies_submitted; /* ... live copies of the batches submitted */
	uint64_t copies_single;	   /* asynchronous copies outside the batches */
	uint64_t copies_sync;	   /* synchronous copies (cuMemcpyAsync + synchronize) */
	uint64_t copies_gdr;	   /* CPU loads/stores through a GDRCopy mapping */
	uint64_t batches_kernel, batches_memop, batches_copy; /* by how submitted */
	uint64_t chains;				      /* kernel batches: blocks launched */
	uint64_t max_batch;				      /* most live copies in one batch */
	uint64_t flush_poll;	     /* batches closed by a poll (once a NIC pass) */
	uint64_t flush_full;	     /* ... because the batch was full */
	uint64_t flush_conflict;     /* ... because a copy met two chains (copy: any) */
	uint64_t flush_other;	     /* ... by an unbatched copy behind them, a thread exit */
	uint64_t slot_waits;	     /* a new batch waited for a slot (8 in flight) */
	uint64_t queries;	     /* cuStreamQuery / cuEventQuery */
	uint64_t calls_launch;	     /* cuLaunchKernel */
	uint64_t calls_memop;	     /* cuStreamBatchMemOp / cuStreamWriteValue64 */
	uint64_t calls_memcpy_batch; /* cuMemcpyBatchAsync */
	uint64_t calls_memcpy;	     /* cuMemcpyAsync */
	uint64_t calls_event;	     /* cuEventRecord */
	uint64_t calls_sync;	     /* cuStreamSynchronize */
	/* GDAK_CUDA_CQE=stream */
	uint64_t copies_direct;	  /* unbatched copies on the batch stream, no event */
	uint64_t cqes_stream;	  /* CQEs whose last words the stream wrote */
	uint64_t cqe_drains;	  /* CQEs (or copies) that waited for the stream to land */
	uint64_t values_unfenced; /* value write-values without a memory barrier */
	/* GDAK_CUDA_STATS=1 only: host time inside the submitting driver calls
	 * of the asynchronous paths, and from a batch's first direct copy to
	 * its submission (how fast the NIC feeds the stream) */
	uint64_t ns_memcpy, ns_memop, ns_launch;
	uint64_t ns_memcpy_max;
	uint64_t ns_direct_span;
	uint64_t ns_open; /* from a batch's first operation to its submission */
	/* GDAK_CUDA_CQE=stream, direct copies (GDAK_CUDA_STATS=1 for the
	 * times): those queued behind another direct copy of the same open
	 * batch (a pipelined burst: the GPU may still be copying the one
	 * before), their time in the call, and the NIC thread's time from the
	 * previous direct call's return to this call (seeing the doorbell,
	 * the WQE, the checks) */
	uint64_t calls_behind, ns_behind, ns_behind_max, ns_direct_gap, ns_direct_gap_max;
	uint64_t calls_dtod; /* direct GPU->GPU copies through cuMemcpyDtoDAsync */
	/* GDAK_CUDA_DIRECT_BATCH=1: equal direct copies submitted together in
	 * one cuMemcpyBatchAsync, and the time in those calls */
	uint64_t copies_dq_batched, ns_dq_batch;
	/* GDAK_CUDA_HOLD: pass ends that kept the open batch open (the GPU
	 * still running earlier ones); time in cuMemcpyBatchAsync (copy mode,
	 * GDAK_CUDA_STATS=1) */
	uint64_t holds, ns_memcpy_batch;
	/* CQE words submitted without a memory barrier (after the batch's
	 * first one) */
	uint64_t cqe_words_unfenced;
	/* GDAK_CUDA_BIG=kernel: direct GPU->GPU copies by the engine's wide
	 * copy kernel (cuLaunchKernel) */
	uint64_t calls_big;
	/* batch engines built by a NIC thread at its first GPU copy, and built
	 * ahead for the pool when an MR on GPU memory was registered */
	uint64_t engines_built, engines_ahead;
};
void nm_cuda_stats_get(struct nm_cuda_stats *s);
/* With GDAK_CUDA_STATS=1: one line "gdak cuda stats (WHEN): ..." with the
 * change since the last report, when anything changed. */
void nm_cuda_stats_report(const char *when);
/* The path GPU-memory WRITEs take, in words (gdak-info). */
const char *nm_cuda_path(void);
/* GDRCopy: in use, or why not. */
const char *nm_cuda_gdr(void);
/* GDRCopy (when in use): GPU [gpu, gpu + len) <-> host through the mapping
 * that covers it - CPU loads and stores, fenced, done when it returns.  1
 * done, 0 no mapping covers it (use the driver), -EIO the copy failed. */
int nm_cuda_gdr_rw(void *gpu, void *host, size_t len, int to_gpu);
/* 1 when one GDRCopy mapping covers [gpu, gpu + len) */
int nm_cuda_gdr_mapped(const void *gpu, size_t len);
/* Pin and map the 64 KiB GPU pages around a range of a caller's GPU memory
 * (rings in cudaMalloc memory); *key for nm_cuda_gdr_unpin.  0, or -errno
 * (no GDRCopy, GDRCopy refused: the range stays on the driver's path). */
int nm_cuda_gdr_pin(const void *gpu, size_t len, uint64_t *key);
void nm_cuda_gdr_unpin(uint64_t key);

/* The loaded driver API (NULL without the CUDA engine), the calling
 * thread's current-context setup (0 or -errno) and an error's text: for
 * nm_ring_gpu.c, which issues its own copies and stream memory operations. */
const struct nm_cu_api *nm_cuda_api(void);
int nm_cuda_thread_ctx(void);
const char *nm_cuda_strerror(nm_cu_result r);

#endif /* NM_CUDA_H */
