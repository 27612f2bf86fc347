/* SPDX-License-Identifier: MIT */
/*
 * nm_cuda.c - the NIC model's memory engine when a GPU is usable.
 *
 * Loaded, not linked: nm_cuda_dma_probe() dlopen()s libcuda.so.1, initialises
 * the driver and retains the primary context of one device ($GDAK_CUDA_DEVICE,
 * default 0) - the context the CUDA runtime of the application uses too, so
 * memory either side allocates is valid in the other.  Without libcuda, a
 * device or a working driver the probe returns NULL and nm_dma_host.c serves
 * (GDAK_CUDA_DMA=0 forces that, e.g. for a process that forks).
 *
 * What changes with a GPU:
 *   HOST_MAPPED  cuMemHostAlloc(PORTABLE | DEVICEMAP): pinned host memory
 *                mapped into the GPU at the same address (unified addressing),
 *                so the rings, doorbell records, the "UAR" page and the
 *                exported descriptor are reachable from kernels through the
 *                host pointers the descriptor holds; the NIC threads access
 *                it as ordinary memory.
 *   GPU          cuMemAlloc.  The NIC threads cannot load or store it: every
 *                copy touching it is a cuMemcpyAsync on the calling NIC
 *                thread's own stream followed by a stream synchronize
 *                (GDAK_CUDA_COPY_STREAMS=N > 1: a copy of at least
 *                GDAK_CUDA_COPY_SPLIT bytes, default 4 MiB, is split in N
 *                parts on N streams of the thread, one synchronize each).
 *                The streams are NON_BLOCKING: a copy must never wait for
 *                the application's kernels (they spin on CQEs this copy
 *                precedes), which a copy on the legacy default stream would.
 *                nm_cuda_copy_start/_poll (nm_cuda.h) are the asynchronous
 *                form, for a requester that keeps copies in flight.
 *   kind_of      cuPointerGetAttribute(MEMORY_TYPE): memory the application
 *                got from cudaMalloc is recognised as GPU memory when it
 *                registers it.
 *
 * Atomics on GPU memory are a read-modify-write of the 8-byte word through
 * two copies under a lock (striped by address).  They are atomic with
 * respect to every other atomic the NIC model executes, on any NIC thread -
 * what IBA requires of an HCA (o10-42: atomicity among the HCA's own
 * atomics) - but NOT with respect to the GPU's own atomic instructions on
 * the same word, nor to RDMA writes landing on it: the same contract as a
 * real NIC without PCIe AtomicOps.  Device code must not mix them on one word.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdak/env.h>

#include "nm_cuda.h"
#include "nm_dma.h"
#include "nm_loc.h"

static struct nm_cu_api cu;
static nm_cu_ctx cu_ctx;
static int cu_ordinal;

/* ---- per-thread state: current context and the thread's own streams ---- */

#define NM_CUDA_MAX_STREAMS 8
static unsigned copy_streams = 1;		/* GDAK_CUDA_COPY_STREAMS */
static unsigned async_streams = 4;		/* GDAK_CUDA_ASYNC_STREAMS */
static __thread unsigned tls_async_rr;
static size_t copy_split = (size_t)4 << 20;	/* GDAK_CUDA_COPY_SPLIT */

struct cu_thread {
	nm_cu_stream s[NM_CUDA_MAX_STREAMS];
};

static __thread int tls_ctx_set;
static __thread struct cu_thread *tls_cu;
static pthread_key_t stream_key;

static void stream_dtor(void *p)
{
	struct cu_thread *t = (struct cu_thread *)p;

	/* a thread that used the engine goes away: its streams too */
	for (int i = 0; t && i < NM_CUDA_MAX_STREAMS; i++)
		if (t->s[i] && cu.StreamDestroy)
			cu.StreamDestroy(t->s[i]);
	free(t);
}

static const char *cu_err(nm_cu_result r)
{
	const char *s = NULL;

	if (cu.GetErrorString && !cu.GetErrorString(r, &s) && s)
		return s;
	return "unknown CUDA error";
}

static int cu_errno(nm_cu_result r)
{
	switch (r) {
	case 1:	/* CUDA_ERROR_INVALID_VALUE */
		return -EINVAL;
	case 2:	/* CUDA_ERROR_OUT_OF_MEMORY */
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static int thread_ctx(void)
{
	nm_cu_result r;

	if (__builtin_expect(tls_ctx_set, 1))
		return 0;
	r = cu.CtxSetCurrent(cu_ctx);
	if (r) {
		GDAK_ERR_RL("cuda", cu_ordinal, "cuCtxSetCurrent: %s", cu_err(r));
		return cu_errno(r);
	}
	tls_ctx_set = 1;
	return 0;
}

/* Stream k (< copy_streams) of the calling thread, created on first use. */
static int thread_stream(unsigned k, nm_cu_stream *out)
{
	nm_cu_result r;
	int ret;

	if (__builtin_expect(tls_cu && tls_cu->s[k], 1)) {
		*out = tls_cu->s[k];
		return 0;
	}
	ret = thread_ctx();
	if (ret)
		return ret;
	if (!tls_cu) {
		tls_cu = (struct cu_thread *)calloc(1, sizeof(*tls_cu));
		if (!tls_cu)
			return -ENOMEM;
		pthread_setspecific(stream_key, tls_cu);
	}
	r = cu.StreamCreate(&tls_cu->s[k], NM_CU_STREAM_NON_BLOCKING);
	if (r) {
		tls_cu->s[k] = NULL;
		GDAK_ERR_RL("cuda", cu_ordinal, "cuStreamCreate: %s", cu_err(r));
		return cu_errno(r);
	}
	*out = tls_cu->s[k];
	return 0;
}

/* ---- the engine ---------------------------------------------------------- */

static int cuda_alloc(size_t len, enum gdak_mem_kind kind, void **addr)
{
	nm_cu_result r;
	nm_cu_ptr d = 0;
	void *h = NULL;
	int ret;

	if (kind == GDAK_MEM_HOST)
		return nm_dma_host_ops.alloc(len, kind, addr);
	ret = thread_ctx();
	if (ret)
		return ret;
	if (len == 0)
		len = 1;
	if (kind == GDAK_MEM_GPU) {
		r = cu.MemAlloc(&d, len);
		if (r) {
			GDAK_ERR("cuda", cu_ordinal, "cuMemAlloc(%zu): %s", len, cu_err(r));
			return cu_errno(r);
		}
		*addr = (void *)(uintptr_t)d;
		return 0;
	}
	r = cu.MemHostAlloc(&h, len, NM_CU_MEMHOSTALLOC_PORTABLE | NM_CU_MEMHOSTALLOC_DEVICEMAP);
	if (r) {
		GDAK_ERR("cuda", cu_ordinal, "cuMemHostAlloc(%zu, PORTABLE|DEVICEMAP): %s", len,
			 cu_err(r));
		return cu_errno(r);
	}
	/* The exported descriptors hold host pointers that kernels dereference:
	 * that needs the mapping at the same address (unified addressing, every
	 * 64-bit platform CUDA supports).  Refuse anything else loudly. */
	r = cu.MemHostGetDevicePointer(&d, h, 0);
	if (r || d != (nm_cu_ptr)(uintptr_t)h) {
		GDAK_ERR("cuda", cu_ordinal, "mapped host memory %p is at device address 0x%llx "
			 "(%s): gdak needs unified addressing", h, d, r ? cu_err(r) : "differs");
		cu.MemFreeHost(h);
		return -ENOTSUP;
	}
	*addr = h;
	return 0;
}

static void cuda_free(void *addr, size_t len, enum gdak_mem_kind kind)
{
	nm_cu_result r = 0;

	if (kind == GDAK_MEM_HOST) {
		nm_dma_host_ops.free(addr, len, kind);
		return;
	}
	if (!addr || thread_ctx())
		return;
	if (kind == GDAK_MEM_GPU)
		r = cu.MemFree((nm_cu_ptr)(uintptr_t)addr);
	else
		r = cu.MemFreeHost(addr);
	if (r)
		GDAK_WARN("cuda", cu_ordinal, "freeing %p: %s", addr, cu_err(r));
}

/*
 * One copy on this thread's stream(s), waited for.  The DMA engine's
 * contract is synchronous: the completer writes the CQE right after, and a
 * kernel that sees the CQE must see the data.  A large copy may be split
 * over the thread's streams (GDAK_CUDA_COPY_STREAMS), so that its parts run
 * side by side; it is still one wait per copy.
 */
static int cuda_copy(void *dst, enum gdak_mem_kind dk, const void *src, enum gdak_mem_kind sk,
		     size_t len)
{
	unsigned parts = 1, k;
	nm_cu_stream s[NM_CUDA_MAX_STREAMS];
	nm_cu_result r = 0;
	size_t part;
	int ret = 0;

	if (dk != GDAK_MEM_GPU && sk != GDAK_MEM_GPU) {
		memcpy(dst, src, len);
		return 0;
	}
	if (len == 0)
		return 0;
	if (copy_streams > 1 && len >= copy_split)
		parts = copy_streams;
	/* 64-byte aligned parts, the last one takes the rest */
	part = (len / parts) & ~(size_t)63;
	for (k = 0; k < parts; k++) {
		size_t off = (size_t)k * part, n = k == parts - 1 ? len - off : part;

		ret = thread_stream(k, &s[k]);
		if (ret)
			break;
		r = cu.MemcpyAsync((nm_cu_ptr)(uintptr_t)dst + off, (nm_cu_ptr)(uintptr_t)src + off,
				   n, s[k]);
		if (r)
			break;
	}
	/* wait for every part enqueued, even after a failed enqueue */
	for (unsigned i = 0; i < k; i++) {
		nm_cu_result w = cu.StreamSynchronize(s[i]);

		if (!r)
			r = w;
	}
	if (r) {
		GDAK_ERR_RL("cuda", cu_ordinal, "copy %p <- %p (%zu bytes): %s", dst, src, len,
			    cu_err(r));
		return cu_errno(r);
	}
	return ret;
}

/* ---- asynchronous copies (nm_cuda.h) ------------------------------------ */

static const struct nm_dma_ops *probe_result;

int nm_cuda_copy_start(void *dst, int dst_kind, const void *src, int src_kind, size_t len,
		       struct nm_cuda_ticket *t)
{
	nm_cu_stream s;
	nm_cu_result r;
	int ret;

	t->done = 0;
	if (dst_kind != GDAK_MEM_GPU && src_kind != GDAK_MEM_GPU) {
		memcpy(dst, src, len);
		t->done = 1;
		return 0;
	}
	if (!probe_result)
		return -ENODEV;
	/* Copies in flight go round-robin over the thread's async streams so
	 * that consecutive WQEs' copies overlap; a copy whose ranges meet one
	 * still in flight is put on that copy's stream by the requester
	 * (t->stream, nm_loop.c), so it lands after it. */
	t->stream = (int)(t->stream >= 0 ? (unsigned)t->stream % async_streams
					 : tls_async_rr++ % async_streams);
	ret = thread_stream((unsigned)t->stream, &s);
	if (ret)
		return ret;
	if (!t->ev) {
		r = cu.EventCreate(&t->ev, NM_CU_EVENT_DISABLE_TIMING);
		if (r) {
			t->ev = NULL;
			GDAK_ERR_RL("cuda", cu_ordinal, "cuEventCreate: %s", cu_err(r));
			return cu_errno(r);
		}
	}
	r = len ? cu.MemcpyAsync((nm_cu_ptr)(uintptr_t)dst, (nm_cu_ptr)(uintptr_t)src, len, s) : 0;
	if (!r)
		r = cu.EventRecord(t->ev, s);
	if (r) {
		GDAK_ERR_RL("cuda", cu_ordinal, "async copy %p <- %p (%zu bytes): %s", dst, src,
			    len, cu_err(r));
		return cu_errno(r);
	}
	return 0;
}

int nm_cuda_copy_poll(struct nm_cuda_ticket *t)
{
	nm_cu_result r;

	if (t->done)
		return 1;
	if (!t->ev)
		return -EINVAL;
	r = cu.EventQuery(t->ev);
	if (r == NM_CU_ERROR_NOT_READY)
		return 0;
	if (r) {
		GDAK_ERR_RL("cuda", cu_ordinal, "async copy failed: %s", cu_err(r));
		return cu_errno(r);
	}
	t->done = 1;
	return 1;
}

void nm_cuda_copy_ticket_fini(struct nm_cuda_ticket *t)
{
	if (t->ev && cu.EventDestroy)
		cu.EventDestroy(t->ev);
	t->ev = NULL;
	t->done = 0;
}

/* nm_dma_ops form of the three above (struct nm_dma_ticket carries the event) */
static int cuda_copy_start(void *dst, enum gdak_mem_kind dk, const void *src,
			   enum gdak_mem_kind sk, size_t len, struct nm_dma_ticket *t)
{
	struct nm_cuda_ticket ct = {.ev = (nm_cu_event)t->ev, .done = t->done,
				    .stream = t->stream};
	int r = nm_cuda_copy_start(dst, (int)dk, src, (int)sk, len, &ct);

	t->ev = ct.ev;
	t->done = ct.done;
	t->stream = ct.stream;
	return r;
}

static int cuda_copy_poll(struct nm_dma_ticket *t)
{
	struct nm_cuda_ticket ct = {.ev = (nm_cu_event)t->ev, .done = t->done};
	int r = nm_cuda_copy_poll(&ct);

	t->done = ct.done;
	return r;
}

static void cuda_ticket_fini(struct nm_dma_ticket *t)
{
	struct nm_cuda_ticket ct = {.ev = (nm_cu_event)t->ev, .done = t->done};

	nm_cuda_copy_ticket_fini(&ct);
	t->ev = NULL;
	t->done = 0;
}

#define NM_CUDA_ATOMIC_LOCKS 64
static pthread_mutex_t atomic_lock[NM_CUDA_ATOMIC_LOCKS];

/* See the file comment: atomic among the NIC model's atomics only. */
static int cuda_atomic64(void *addr, enum gdak_mem_kind kind, enum nm_atomic_op op, uint64_t a,
			 uint64_t b, uint64_t am, uint64_t bm, uint64_t *old)
{
	pthread_mutex_t *lk = &atomic_lock[((uintptr_t)addr >> 3) % NM_CUDA_ATOMIC_LOCKS];
	uint64_t word, before;
	int ret;

	if (kind != GDAK_MEM_GPU)
		return nm_dma_host_ops.atomic64(addr, kind, op, a, b, am, bm, old);
	pthread_mutex_lock(lk);
	ret = cuda_copy(&word, GDAK_MEM_HOST, addr, GDAK_MEM_GPU, 8);
	if (!ret) {
		before = word;
		ret = nm_dma_host_ops.atomic64(&word, GDAK_MEM_HOST, op, a, b, am, bm, old);
		if (!ret && word != before)
			ret = cuda_copy(addr, GDAK_MEM_GPU, &word, GDAK_MEM_HOST, 8);
	}
	pthread_mutex_unlock(lk);
	return ret;
}

static enum gdak_mem_kind cuda_kind_of(const void *addr)
{
	unsigned type = 0;

	if (thread_ctx())
		return GDAK_MEM_HOST;
	/* ordinary host memory is not CUDA's: the call fails, and it is HOST */
	if (cu.PointerGetAttribute(&type, NM_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				   (nm_cu_ptr)(uintptr_t)addr))
		return GDAK_MEM_HOST;
	/* managed memory reports DEVICE or UNIFIED: copies through the driver
	 * are right for it too.  Pinned host memory is host memory for the NIC. */
	if (type == NM_CU_MEMORYTYPE_DEVICE || type == NM_CU_MEMORYTYPE_UNIFIED)
		return GDAK_MEM_GPU;
	return GDAK_MEM_HOST;
}

static const struct nm_dma_ops nm_cuda_ops = {
	.name = "cuda",
	.alloc = cuda_alloc,
	.free = cuda_free,
	.copy = cuda_copy,
	.atomic64 = cuda_atomic64,
	.copy_start = cuda_copy_start,
	.copy_poll = cuda_copy_poll,
	.ticket_fini = cuda_ticket_fini,
	.kind_of = cuda_kind_of,
};

/* ---- probe ------------------------------------------------------------------- */

#define SYM(field, name)                                                      \
	do {                                                                  \
		*(void **)(&cu.field) = dlsym(lib, name);                    \
		if (!cu.field) {                                              \
			GDAK_WARN("cuda", 0, "libcuda.so.1 lacks %s: GPU memory engine off", \
				  name);                                      \
			goto fail;                                            \
		}                                                             \
	} while (0)

/* A number of the configuration table; def when unset or bad (the table
 * has said what is wrong, and gdak_open refuses the environment). */
static unsigned long env_num(const char *name, unsigned long def)
{
	unsigned long long n;

	return gdak_env_uint(name, &n) == 0 ? (unsigned long)n : def;
}

static void probe_once(void)
{
	char name[128] = "";
	int dma = 1;
	nm_cu_device dev;
	nm_cu_result r;
	void *lib;
	int n = 0;

	if (gdak_env_bool("GDAK_CUDA_DMA", &dma) == 0 && !dma) {
		GDAK_INFO("cuda", 0, "GDAK_CUDA_DMA=%s: host memory engine",
			  gdak_env_raw("GDAK_CUDA_DMA"));
		return;
	}
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		GDAK_DBG("cuda", 0, "no CUDA driver (%s): host memory engine", dlerror());
		return;
	}
	SYM(Init, "cuInit");
	SYM(DeviceGetCount, "cuDeviceGetCount");
	SYM(DeviceGet, "cuDeviceGet");
	SYM(DeviceGetName, "cuDeviceGetName");
	SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(CtxSetCurrent, "cuCtxSetCurrent");
	SYM(MemAlloc, "cuMemAlloc_v2");
	SYM(MemFree, "cuMemFree_v2");
	SYM(MemHostAlloc, "cuMemHostAlloc");
	SYM(MemFreeHost, "cuMemFreeHost");
	SYM(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
	SYM(MemcpyAsync, "cuMemcpyAsync");
	SYM(StreamCreate, "cuStreamCreate");
	SYM(StreamSynchronize, "cuStreamSynchronize");
	SYM(StreamDestroy, "cuStreamDestroy_v2");
	SYM(PointerGetAttribute, "cuPointerGetAttribute");
	SYM(GetErrorString, "cuGetErrorString");
	SYM(EventCreate, "cuEventCreate");
	SYM(EventRecord, "cuEventRecord");
	SYM(EventQuery, "cuEventQuery");
	SYM(EventDestroy, "cuEventDestroy_v2");

	r = cu.Init(0);
	if (r) {
		GDAK_INFO("cuda", 0, "cuInit: %s: host memory engine", cu_err(r));
		goto fail;
	}
	r = cu.DeviceGetCount(&n);
	if (r || n <= 0) {
		GDAK_INFO("cuda", 0, "no CUDA device: host memory engine");
		goto fail;
	}
	cu_ordinal = (int)env_num("GDAK_CUDA_DEVICE", 0);
	if (cu_ordinal < 0 || cu_ordinal >= n) {
		GDAK_ERR("cuda", 0, "GDAK_CUDA_DEVICE=%d: only %d device(s); using device 0",
			 cu_ordinal, n);
		cu_ordinal = 0;
	}
	r = cu.DeviceGet(&dev, cu_ordinal);
	if (!r)
		r = cu.DevicePrimaryCtxRetain(&cu_ctx, dev);
	if (r) {
		GDAK_WARN("cuda", cu_ordinal, "primary context: %s: host memory engine", cu_err(r));
		goto fail;
	}
	cu.DeviceGetName(name, sizeof(name) - 1, dev);
	for (int i = 0; i < NM_CUDA_ATOMIC_LOCKS; i++)
		pthread_mutex_init(&atomic_lock[i], NULL);
	pthread_key_create(&stream_key, stream_dtor);
	/* the table bounds the streams by NM_CUDA_MAX_STREAMS */
	copy_streams = (unsigned)env_num("GDAK_CUDA_COPY_STREAMS", 1);
	async_streams = (unsigned)env_num("GDAK_CUDA_ASYNC_STREAMS", 4);
	copy_split = env_num("GDAK_CUDA_COPY_SPLIT", (size_t)4 << 20);
	if (copy_streams > NM_CUDA_MAX_STREAMS)
		copy_streams = NM_CUDA_MAX_STREAMS;
	if (async_streams > NM_CUDA_MAX_STREAMS)
		async_streams = NM_CUDA_MAX_STREAMS;
	GDAK_INFO("cuda", cu_ordinal, "CUDA memory engine on device %d (%s); copies of %zu+ "
		  "bytes on %u stream(s)", cu_ordinal, name, copy_split, copy_streams);
	/* the library stays loaded for the life of the process */
	probe_result = &nm_cuda_ops;
	return;

fail:
	memset(&cu, 0, sizeof(cu));
	dlclose(lib);
}

/* Once per process, whichever thread asks first (nm_dma_get may race). */
const struct nm_dma_ops *nm_cuda_dma_probe(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, probe_once);
	return probe_result;
}
