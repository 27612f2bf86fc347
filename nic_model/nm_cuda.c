/* SPDX-License-Identifier: MIT */
/*
 * nm_cuda.c - the NIC model's memory engine when a GPU is usable.
 *
 * Loaded, not linked: nm_cuda_dma_probe() loads libcuda.so.1 (gdak_cuda_load,
 * core/internal/gdak_cuda.h), initialises the driver and retains the primary
 * context of one device ($GDAK_CUDA_DEVICE, default 0) - the context the CUDA runtime of the application uses too, so
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
 *                form, for a requester that keeps copies in flight; with
 *                GDAK_CUDA_BATCH=kernel|memop the small ones into GPU memory
 *                are batched: one copy kernel per NIC pass ("batched
 *                copies" below).
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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gdak/env.h>

#include "gdak_cuda.h"
#include "nm_cuda.h"
#include "nm_cuda_kern.h"
#include "nm_dma.h"
#include "nm_loc.h"

static struct nm_cu_api cu;
static nm_cu_ctx cu_ctx;
static int cu_ordinal;

/* What the engine did (nm_cuda_stats, GDAK_CUDA_STATS). */
static struct nm_cuda_stats cs;
#define CS_ADD(f, v) __atomic_fetch_add(&cs.f, (uint64_t)(v), __ATOMIC_RELAXED)

/* every NIC thread's batches and the stats report share the maximum */
static void cs_max(uint64_t *f, uint64_t n)
{
	uint64_t m = __atomic_load_n(f, __ATOMIC_RELAXED);

	while (n > m &&
	       !__atomic_compare_exchange_n(f, &m, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void cs_max_batch(uint64_t n)
{
	cs_max(&cs.max_batch, n);
}

/* GDAK_CUDA_STATS=1: the driver calls of the asynchronous paths are timed
 * (0 otherwise: no clock read on the data path) */
static int stats_on = -1;

/* GDAK_CUDA_STATS, read once (the probe and the first report may race) */
static int stats_enabled(void)
{
	int v = __atomic_load_n(&stats_on, __ATOMIC_RELAXED);

	if (v < 0) {
		int on = 0;

		v = gdak_env_bool("GDAK_CUDA_STATS", &on) == 0 && on;
		__atomic_store_n(&stats_on, v, __ATOMIC_RELAXED);
	}
	return v;
}

static uint64_t cs_clock(void)
{
	struct timespec ts;

	if (__atomic_load_n(&stats_on, __ATOMIC_RELAXED) <= 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cs_since(uint64_t t0)
{
	return t0 ? cs_clock() - t0 : 0;
}

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
	case 1: /* CUDA_ERROR_INVALID_VALUE */
		return -EINVAL;
	case 2: /* CUDA_ERROR_OUT_OF_MEMORY */
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

/* ---- GDRCopy (libgdrapi, when present) -----------------------------------
 *
 * With libgdrapi.so.2 and its driver (gdrdrv), GPU memory the engine
 * allocates (up to GDAK_CUDA_GDR_MAX bytes an allocation) is pinned and
 * mapped into the CPU through the GPU's BAR: copies of at most
 * NM_GDR_COPY bytes between it and host memory are then CPU loads and
 * stores - no driver call, no stream, done when they return (the stores
 * are write-combined; gdr_copy_to_mapping fences them, so a CQE written
 * after reaches the GPU after the data, PCIe keeping posted writes in
 * order).  Loaded at run time, never required; GDAK_CUDA_GDR=0 turns it
 * off.  A copy takes this path only when nothing in flight meets it (the
 * ticket names no stream): it would overtake the streams.
 */
#define NM_GDR_PAGE ((size_t)64 << 10)
#define NM_GDR_COPY 65536
#define NM_GDR_MAPS 1024

struct nm_gdr_mh {
	unsigned long h; /* gdr_mh_t */
};

static struct {
	void *g; /* gdr_t */
	void *(*open)(void);
	int (*pin)(void *g, unsigned long addr, size_t size, uint64_t token, uint32_t vas,
		   struct nm_gdr_mh *mh);
	int (*unpin)(void *g, struct nm_gdr_mh mh);
	int (*map)(void *g, struct nm_gdr_mh mh, void **va, size_t size);
	int (*unmap)(void *g, struct nm_gdr_mh mh, void *va, size_t size);
	int (*to)(struct nm_gdr_mh mh, void *map, const void *h, size_t size);
	int (*from)(struct nm_gdr_mh mh, void *h, const void *map, size_t size);
	size_t max;
	const char *why; /* why not in use */
} gdr = { .why = "libgdrapi.so.2 not found" };

struct gdr_map {
	uint64_t dev;	/* aligned start, what the allocation returned */
	size_t len;	/* pinned and mapped */
	nm_cu_ptr base; /* the engine's allocation; 0: a caller's range (nm_cuda_gdr_pin) */
	uint8_t *host;
	struct nm_gdr_mh mh;
};
static struct gdr_map gdr_maps[NM_GDR_MAPS];
static unsigned gdr_nmaps;
static pthread_rwlock_t gdr_lk = PTHREAD_RWLOCK_INITIALIZER;

static void gdr_setup(void)
{
	int on = 1;
	unsigned long long m;
	void *lib;

	if (gdak_env_bool("GDAK_CUDA_GDR", &on) == 0 && !on) {
		gdr.why = "GDAK_CUDA_GDR=0";
		return;
	}
	lib = dlopen("libgdrapi.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return;
	*(void **)(&gdr.open) = dlsym(lib, "gdr_open");
	*(void **)(&gdr.pin) = dlsym(lib, "gdr_pin_buffer");
	*(void **)(&gdr.unpin) = dlsym(lib, "gdr_unpin_buffer");
	*(void **)(&gdr.map) = dlsym(lib, "gdr_map");
	*(void **)(&gdr.unmap) = dlsym(lib, "gdr_unmap");
	*(void **)(&gdr.to) = dlsym(lib, "gdr_copy_to_mapping");
	*(void **)(&gdr.from) = dlsym(lib, "gdr_copy_from_mapping");
	if (!gdr.open || !gdr.pin || !gdr.unpin || !gdr.map || !gdr.unmap || !gdr.to || !gdr.from) {
		gdr.why = "libgdrapi.so.2 lacks the gdr_* entry points";
		dlclose(lib);
		return;
	}
	gdr.g = gdr.open();
	if (!gdr.g) {
		gdr.why = "libgdrapi.so.2 found, but gdr_open fails (no gdrdrv driver?)";
		dlclose(lib);
		return;
	}
	gdr.max = (size_t)64 << 20;
	if (gdak_env_uint("GDAK_CUDA_GDR_MAX", &m) == 0)
		gdr.max = (size_t)m;
	gdr.why = NULL;
}

/* Pin and map m->len bytes at m->dev and enter the mapping in the table:
 * 0, or -errno with nothing left pinned. */
static int gdr_map_add(struct gdr_map *m)
{
	const unsigned one = 1;
	void *va = NULL;
	int ret = -ENOSPC;

	/* as GDRCopy asks: synchronous memory operations on the range (a
	 * cudaMemcpy into it) complete before they return, so that CPU loads
	 * through the mapping after one see its bytes */
	if (cu.PointerSetAttribute &&
	    cu.PointerSetAttribute(&one, NM_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, m->dev))
		GDAK_DBG("cuda", cu_ordinal, "SYNC_MEMOPS on 0x%llx: refused",
			 (unsigned long long)m->dev);
	if (gdr.pin(gdr.g, (unsigned long)m->dev, m->len, 0, 0, &m->mh))
		return -EIO;
	if (gdr.map(gdr.g, m->mh, &va, m->len)) {
		gdr.unpin(gdr.g, m->mh);
		return -EIO;
	}
	m->host = (uint8_t *)va;
	pthread_rwlock_wrlock(&gdr_lk);
	if (gdr_nmaps < NM_GDR_MAPS) {
		gdr_maps[gdr_nmaps++] = *m;
		ret = 0;
	}
	pthread_rwlock_unlock(&gdr_lk);
	if (ret) {
		gdr.unmap(gdr.g, m->mh, va, m->len);
		gdr.unpin(gdr.g, m->mh);
	}
	return ret;
}

/* Take the mapping of an allocation at dev (own) or of a caller's range
 * whose CPU address is host out of the table, unmapped and unpinned: 1
 * when there was one (*out: what it was). */
static int gdr_map_take(int own, uint64_t key, struct gdr_map *out)
{
	int found = 0;

	pthread_rwlock_wrlock(&gdr_lk);
	for (unsigned i = 0; i < gdr_nmaps; i++) {
		struct gdr_map *m = &gdr_maps[i];

		if (own ? !(m->base && m->dev == key)
			: !(!m->base && (uint64_t)(uintptr_t)m->host == key))
			continue;
		*out = *m;
		*m = gdr_maps[--gdr_nmaps];
		found = 1;
		break;
	}
	pthread_rwlock_unlock(&gdr_lk);
	if (found) {
		gdr.unmap(gdr.g, out->mh, out->host, out->len);
		gdr.unpin(gdr.g, out->mh);
	}
	return found;
}

/* A GPU allocation of len bytes, pinned and mapped for the CPU: 0, or
 * -errno (the caller then allocates the plain way). */
static int gdr_alloc(size_t len, void **addr)
{
	size_t plen = (len + NM_GDR_PAGE - 1) & ~(NM_GDR_PAGE - 1);
	struct gdr_map m = { 0 };
	nm_cu_result r;
	int ret;

	if (!gdr.g || len > gdr.max)
		return -ENOTSUP;
	r = cu.MemAlloc(&m.base, plen + NM_GDR_PAGE);
	if (r)
		return cu_errno(r);
	m.dev = (m.base + NM_GDR_PAGE - 1) & ~(uint64_t)(NM_GDR_PAGE - 1);
	m.len = plen;
	ret = gdr_map_add(&m);
	if (!ret) {
		*addr = (void *)(uintptr_t)m.dev;
		return 0;
	}
	GDAK_DBG("cuda", cu_ordinal, "GDRCopy mapping of %zu bytes: %s; not mapped", len,
		 gdak_strerror(ret));
	cu.MemFree(m.base);
	return ret;
}

/* 1 when addr was a mapped allocation (now freed). */
static int gdr_free(void *addr)
{
	struct gdr_map m;

	if (!gdr.g || !gdr_map_take(1, (uint64_t)(uintptr_t)addr, &m))
		return 0;
	cu.MemFree(m.base);
	return 1;
}

/* The mapping that covers GPU [a, a + len), or NULL.  gdr_lk held. */
static const struct gdr_map *gdr_cover(uint64_t a, size_t len)
{
	for (unsigned i = 0; i < gdr_nmaps; i++)
		if (a >= gdr_maps[i].dev && a + len <= gdr_maps[i].dev + gdr_maps[i].len)
			return &gdr_maps[i];
	return NULL;
}

/* GPU [a, a + len) <-> host h through the mapping that covers it: 1 done,
 * 0 no mapping covers it, -EIO the copy failed. */
static int gdr_rw(uint64_t a, void *h, size_t len, int to_gpu)
{
	const struct gdr_map *m;
	int done = 0;

	pthread_rwlock_rdlock(&gdr_lk);
	m = gdr_cover(a, len);
	if (m && to_gpu)
		done = gdr.to(m->mh, m->host + (a - m->dev), h, len) ? -EIO : 1;
	else if (m)
		done = gdr.from(m->mh, h, m->host + (a - m->dev), len) ? -EIO : 1;
	pthread_rwlock_unlock(&gdr_lk);
	return done;
}

/* dst <- src through a mapping when one side is a mapped GPU range and the
 * copy is small: 1 done, 0 not this path. */
static int gdr_copy(void *dst, enum gdak_mem_kind dk, const void *src, enum gdak_mem_kind sk,
		    size_t len)
{
	int done;

	if (!gdr.g || !len || len > NM_GDR_COPY || (dk == GDAK_MEM_GPU) == (sk == GDAK_MEM_GPU))
		return 0;
	if (dk == GDAK_MEM_GPU)
		done = gdr_rw((uint64_t)(uintptr_t)dst, (void *)(uintptr_t)src, len, 1);
	else
		done = gdr_rw((uint64_t)(uintptr_t)src, dst, len, 0);
	if (done == 1)
		CS_ADD(copies_gdr, 1);
	return done == 1;
}

int nm_cuda_gdr_rw(void *gpu, void *host, size_t len, int to_gpu)
{
	if (!gdr.g || !len)
		return 0;
	return gdr_rw((uint64_t)(uintptr_t)gpu, host, len, to_gpu);
}

int nm_cuda_gdr_mapped(const void *gpu, size_t len)
{
	int in;

	if (!gdr.g || !len)
		return 0;
	pthread_rwlock_rdlock(&gdr_lk);
	in = gdr_cover((uint64_t)(uintptr_t)gpu, len) != NULL;
	pthread_rwlock_unlock(&gdr_lk);
	return in;
}

int nm_cuda_gdr_pin(const void *gpu, size_t len, uint64_t *key)
{
	uint64_t a = (uint64_t)(uintptr_t)gpu & ~(uint64_t)(NM_GDR_PAGE - 1);
	uint64_t e = ((uint64_t)(uintptr_t)gpu + len + NM_GDR_PAGE - 1) &
		     ~(uint64_t)(NM_GDR_PAGE - 1);
	struct gdr_map m = { 0 };
	int ret;

	*key = 0;
	if (!gdr.g || !len)
		return -ENOTSUP;
	if (e - a > gdr.max)
		return -E2BIG;
	m.dev = a;
	m.len = (size_t)(e - a);
	/* GDRCopy pins whole 64 KiB GPU pages, so the pages around the range
	 * must be GPU memory of one allocation too; where it refuses, the
	 * driver's path stays */
	ret = gdr_map_add(&m);
	if (!ret)
		*key = (uint64_t)(uintptr_t)m.host;
	return ret;
}

void nm_cuda_gdr_unpin(uint64_t key)
{
	struct gdr_map m;

	if (key && gdr.g)
		(void)gdr_map_take(0, key, &m);
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
		if (gdr_alloc(len, addr) == 0)
			return 0;
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
		GDAK_ERR("cuda", cu_ordinal,
			 "mapped host memory %p is at device address 0x%llx "
			 "(%s): gdak needs unified addressing",
			 h, d, r ? cu_err(r) : "differs");
		cu.MemFreeHost(h);
		return -ENOTSUP;
	}
	*addr = h;
	return 0;
}

static void cb_drain_all(void);

static void cuda_free(void *addr, size_t len, enum gdak_mem_kind kind)
{
	nm_cu_result r = 0;

	if (kind == GDAK_MEM_HOST) {
		nm_dma_host_ops.free(addr, len, kind);
		return;
	}
	if (!addr || thread_ctx())
		return;
	/* GDAK_CUDA_CQE=stream: a queued copy or CQE word may still write it */
	cb_drain_all();
	if (kind == GDAK_MEM_GPU && gdr_free(addr))
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
static void cb_drain_mine(void);

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
	/* GDAK_CUDA_CQE=stream: the thread's queued copies land first (a READ,
	 * an atomic or a SEND payload after WRITEs the NIC counts as done) */
	cb_drain_mine();
	if (len == 0 || gdr_copy(dst, dk, src, sk, len))
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
	CS_ADD(copies_sync, 1);
	CS_ADD(calls_memcpy, k);
	CS_ADD(calls_sync, k);
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

/* ---- batched copies (GDAK_CUDA_BATCH=kernel|memop|copy) -------------------
 *
 * A NIC thread's copies into GPU memory join its open batch; the first poll
 * of one of its tickets (the next pass, nm_loop.c) submits the batch with
 * one driver call on the thread's batch stream: one copy-kernel launch
 * (nm_cuda_kern.h), one cuStreamBatchMemOp when every copy of it is a 4- or
 * 8-byte value from host memory (memop, copy), or one cuMemcpyBatchAsync
 * (copy: the copy engines, no SM).  The batch itself says when it has
 * landed: its last operation writes its sequence number into a pinned word
 * (the kernel after a system fence, a stream write-value after the copies),
 * which a poll reads with one load; the stream is queried only every 16th
 * poll that finds a batch still running (errors, a word that never came).
 *
 * Order.  Batches of a thread run one after the other (one stream).  Inside
 * a batch the kernel's blocks run in parallel, one per chain; a copy whose
 * destination or (GPU) source meets a granule of an earlier copy of the
 * batch joins that copy's chain and is copied after it (copy mode has no
 * chains: such a copy closes the batch).  A copy that would join two chains
 * closes the batch instead (it goes into the next one, after the whole
 * batch).  Granules: 8 bytes for copies of at most NM_CB_SMALL bytes, 256
 * for larger ones (a coarse granule remembers the chain of the small copies
 * in it, or that there were several); sharing one without overlapping only
 * serialises, it is never wrong.  A copy with the same destination range
 * as the last copy of the chain it joins, and not reading that range,
 * replaces it: the earlier bytes would be overwritten before anyone could
 * tell (the batch's CQEs are all written after it has landed), and a CTA
 * putting to one address over and over costs one copy per pass.
 *
 * Staging.  The engine reads GPU memory and the batch's own pinned memory
 * only: a host source (an inline WQE's bytes, host buffers) is copied into
 * the descriptor (up to NM_CK_INL bytes) or the batch's staging area when
 * the copy is added.  That is only right when no copy in flight writes the
 * source, so a host-source copy whose ticket says src_busy (nm_loop.c) is
 * not batched; copies into host memory are never batched either
 * (cuMemcpyAsync, as before).
 *
 * Slots.  NM_CB_SLOTS batches per thread may be in flight; the open batch
 * needs a free slot (its staging is written as copies join), waited for
 * when all are busy.  A thread's batch engine outlives the thread (a pool):
 * tickets may be polled by the control path after the QP left its thread.
 */
#define NM_CB_SLOTS 8
#define NM_CB_DESC 1024
#define NM_CB_PAY ((uint32_t)256 << 10)
#define NM_CB_HT 8192 /* granules per batch, at most half used */
#define NM_CB_GRAN 8  /* log2 of the coarse granule */
#define NM_CB_FINE 3  /* log2 of the fine granule */
#define NM_CB_SMALL 64
#define NM_CB_MEMOPS 254	 /* cuStreamBatchMemOp takes fewer than 256, and the done word */
#define NM_CB_TAILS 128		 /* stream-ordered CQE words per batch */
#define NM_CK_F_DEAD 0x80000000u /* replaced by a later copy: not submitted */
#define NM_CB_LAST 64		 /* the open batch's last copies, by destination */
#define NM_CB_DQ 16		 /* equal direct copies deferred to one call */

struct cb_slot {
	struct nm_ck_desc *desc; /* pinned, mapped: sorted by chain */
	uint32_t *chain;	 /* NM_CB_DESC + 1 chain starts */
	uint8_t *pay;		 /* staging, NM_CB_PAY bytes */
	void *mem;		 /* the one cuMemHostAlloc holding the three */
	uint64_t seq;		 /* the batch in this slot (0: none yet) */
	int failed;
};

struct cb_gran {
	uint64_t key; /* granule << 1 | fine */
	uint32_t gen;
	int32_t chain;	/* of the copies marking it (coarse: the large ones); -1 none */
	int32_t schain; /* coarse: of the small copies in it, -1 none, -2 several */
};

struct cb_ctx {
	pthread_mutex_t lk;
	nm_cu_stream s;
	uint64_t *done;	 /* pinned: the last batch that has landed */
	nm_cu_ptr count; /* GPU word: blocks of the running launch done */
	uint32_t qskip;	 /* polls since the last stream query */
	struct cb_slot slot[NM_CB_SLOTS];
	uint64_t open_seq; /* the batch being built; all before it are submitted */
	uint64_t done_seq; /* every batch up to this one has finished */
	uint64_t fail_seq; /* batches up to this one may have failed (0: none) */
	/* the open batch, in the order copies joined */
	uint32_t n, live, nchain, pay_used, ht_used, gen;
	struct nm_ck_desc ent[NM_CB_DESC];
	uint32_t ent_chain[NM_CB_DESC];
	uint32_t cursor[NM_CB_DESC];
	uint32_t tail[NM_CB_DESC]; /* the last copy of each chain */
	struct cb_gran ht[NM_CB_HT];
	/* the last copy into each destination slot (hashed): a copy equal to
	 * it is found without the granule table */
	uint32_t last_ent[NM_CB_LAST], last_gen[NM_CB_LAST];
	/* copy mode's arguments */
	nm_cu_ptr cp_dst[NM_CB_DESC], cp_src[NM_CB_DESC];
	size_t cp_len[NM_CB_DESC];
	struct nm_cu_memop mop[NM_CB_MEMOPS + 2];
	/* GDAK_CUDA_CQE=stream: CQE words stored after the open batch's copies,
	 * and copies put on the stream ahead of it (its done word covers them) */
	uint64_t tl_addr[NM_CB_TAILS], tl_val[NM_CB_TAILS];
	uint8_t tl_one[NM_CB_TAILS]; /* the word is a whole CQE's visible part */
	uint32_t ntail, direct;
	uint64_t direct_t0;  /* GDAK_CUDA_STATS: when the first direct copy was queued */
	uint64_t open_t0;    /* ... when the open batch got its first operation */
	uint64_t direct_ret; /* ... when the last direct copy's call returned */
	/* GDAK_CUDA_DIRECT_BATCH=1: equal direct GPU -> GPU copies of a pass
	 * not yet given to the driver (cb_dq_submit), all the same range */
	uint32_t ndq;
	nm_cu_ptr dq_dst[NM_CB_DQ], dq_src[NM_CB_DQ];
	size_t dq_len[NM_CB_DQ];
	/* the stream's last operation is a write-value with its barrier (the
	 * completion word of a batch): a value after it needs none */
	int fenced;
	/* counters of the open batch, added to cs when it is submitted (one
	 * atomic add per batch, not per copy) */
	uint32_t n_batched, n_replaced;
	/* GDAK_CUDA_HOLD: the open batch's work (n_batched + ntail + direct)
	 * when a pass end last kept it open; UINT32_MAX: not kept open */
	uint32_t held_work;
	struct cb_ctx *next; /* the pool */
	struct cb_ctx *all;  /* every engine (cuda_free drains them) */
};

/* GDAK_CUDA_BATCH: 0 off, 1 kernel, 2 memop, 3 copy */
enum {
	CB_OFF,
	CB_KERNEL,
	CB_MEMOP,
	CB_COPY
};
static int cb_mode;
static int cqe_stream;		/* GDAK_CUDA_CQE=stream (with a batch mode) */
static int memop_refused;	/* cuStreamBatchMemOp failed once */
static int value_fences;	/* GDAK_CUDA_VALUE_FENCES=1: a barrier before every value */
static int pass_word;		/* GDAK_CUDA_PASS_WORD=1: every pass end submits its batch */
static int same_off;		/* GDAK_CUDA_SAME=0: equal copies take the granule table */
static int dtod = 1;		/* GDAK_CUDA_DTOD=0: direct GPU->GPU copies by cuMemcpyAsync */
static int direct_batch;	/* GDAK_CUDA_DIRECT_BATCH=1: equal direct copies, one call */
static int big_mode;		/* GDAK_CUDA_BIG: 0 auto, 1 driver, 2 kernel */
static int pre_query = 1;	/* GDAK_CUDA_PREQUERY: a stream query before a burst */
static nm_cu_function big_fn;	/* the wide copy kernel, NULL: not loaded */
static unsigned big_grid = 528; /* its most blocks: 4 per SM */
static nm_cu_module ck_mod;	/* the copy kernels' module, loaded once */
static nm_cu_device cu_device;
static unsigned hold_inflight; /* GDAK_CUDA_HOLD: batches in flight that keep one open */
static int cqe_fences; /* GDAK_CUDA_CQE_FENCES (default 1): a barrier before every CQE word */
__thread int nm_cuda_pass_pending; /* nm_loc.h: the open batch waits for the pass end */
static uint32_t cb_max = 16384;	   /* GDAK_CUDA_BATCH_MAX */
static nm_cu_function cb_fn;
static pthread_key_t cb_key;
static pthread_mutex_t cb_pool_lk = PTHREAD_MUTEX_INITIALIZER;
static struct cb_ctx *cb_pool, *cb_all;
static unsigned cb_nall; /* cb_all's length */
static __thread struct cb_ctx *tls_cb;
static __thread int tls_cb_failed;

static void cb_destroy(struct cb_ctx *c)
{
	for (int i = 0; i < NM_CB_SLOTS; i++)
		if (c->slot[i].mem)
			cu.MemFreeHost(c->slot[i].mem);
	if (c->s)
		cu.StreamDestroy(c->s);
	if (c->count)
		cu.MemFree(c->count);
	if (c->done)
		cu.MemFreeHost(c->done);
	pthread_mutex_destroy(&c->lk);
	free(c);
}

static struct cb_ctx *cb_create(void)
{
	size_t dl = sizeof(struct nm_ck_desc) * NM_CB_DESC, cl = 4 * (NM_CB_DESC + 1);
	struct cb_ctx *c;
	nm_cu_result r;

	if (thread_ctx())
		return NULL;
	c = (struct cb_ctx *)calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lk, NULL);
	c->open_seq = 1;
	c->gen = 1;
	c->held_work = UINT32_MAX;
	r = cu.StreamCreate(&c->s, NM_CU_STREAM_NON_BLOCKING);
	if (!r)
		r = cu.MemHostAlloc((void **)&c->done, 64,
				    NM_CU_MEMHOSTALLOC_PORTABLE | NM_CU_MEMHOSTALLOC_DEVICEMAP);
	if (!r) {
		nm_cu_ptr d = 0;

		memset(c->done, 0, 64);
		r = cu.MemHostGetDevicePointer(&d, c->done, 0);
		if (!r && d != (nm_cu_ptr)(uintptr_t)c->done)
			r = 1;
	}
	if (!r)
		r = cu.MemAlloc(&c->count, 64);
	if (!r) /* the count starts at 0: from the zeroed pinned word */
		r = cu.MemcpyAsync(c->count, (nm_cu_ptr)(uintptr_t)c->done, 4, c->s);
	if (!r)
		r = cu.StreamSynchronize(c->s);
	for (int i = 0; !r && i < NM_CB_SLOTS; i++) {
		struct cb_slot *sl = &c->slot[i];
		nm_cu_ptr d = 0;

		r = cu.MemHostAlloc(&sl->mem, dl + ((cl + 63) & ~(size_t)63) + NM_CB_PAY,
				    NM_CU_MEMHOSTALLOC_PORTABLE | NM_CU_MEMHOSTALLOC_DEVICEMAP);
		if (r)
			break;
		/* the kernel dereferences these host addresses (unified addressing) */
		r = cu.MemHostGetDevicePointer(&d, sl->mem, 0);
		if (!r && d != (nm_cu_ptr)(uintptr_t)sl->mem)
			r = 1;
		sl->desc = (struct nm_ck_desc *)sl->mem;
		sl->chain = (uint32_t *)((uint8_t *)sl->mem + dl);
		sl->pay = (uint8_t *)sl->mem + dl + ((cl + 63) & ~(size_t)63);
	}
	if (r) {
		GDAK_ERR_RL("cuda", cu_ordinal,
			    "batch engine setup: %s; GPU copies of this "
			    "thread go one by one",
			    cu_err(r));
		cb_destroy(c);
		return NULL;
	}
	return c;
}

/* A new engine into the list of all of them (cb_drain_all), and into the
 * pool when pooled (built ahead for a NIC thread to take). */
static void cb_enlist(struct cb_ctx *c, int pooled)
{
	pthread_mutex_lock(&cb_pool_lk);
	c->all = cb_all;
	cb_all = c;
	cb_nall++;
	if (pooled) {
		c->next = cb_pool;
		cb_pool = c;
	}
	pthread_mutex_unlock(&cb_pool_lk);
	if (pooled)
		CS_ADD(engines_ahead, 1);
	else
		CS_ADD(engines_built, 1);
}

/* The calling thread's batch engine (from the pool or new); NULL: none. */
static struct cb_ctx *cb_get(void)
{
	struct cb_ctx *c;

	if (__builtin_expect(tls_cb != NULL, 1))
		return tls_cb;
	if (tls_cb_failed)
		return NULL;
	pthread_mutex_lock(&cb_pool_lk);
	c = cb_pool;
	if (c)
		cb_pool = c->next;
	pthread_mutex_unlock(&cb_pool_lk);
	if (!c && thread_ctx() == 0) {
		c = cb_create();
		if (c)
			cb_enlist(c, 0);
	}
	if (!c) {
		tls_cb_failed = 1;
		return NULL;
	}
	c->next = NULL;
	tls_cb = c;
	pthread_setspecific(cb_key, c);
	return c;
}

/*
 * nm_dma_ops.gpu_prepare: an MR on GPU memory was registered, and up to n
 * NIC threads may copy into it.  Each needs a batch engine, whose pinned
 * slots cost about a millisecond of driver calls (docs/BENCHMARKS-CUDA.md,
 * "Fifteenth look") - on the NIC thread, in the middle of the pass of its
 * first GPU WRITE, while the application's kernel waits for the CQE.  Built
 * here on the registering thread instead, into the pool the NIC threads
 * take their engine from; never more than n altogether.
 */
static void cuda_gpu_prepare(unsigned n)
{
	static pthread_mutex_t prep_lk = PTHREAD_MUTEX_INITIALIZER;

	if (!cb_mode || !n)
		return;
	pthread_mutex_lock(&prep_lk);
	for (;;) {
		struct cb_ctx *c;
		unsigned have;

		pthread_mutex_lock(&cb_pool_lk);
		have = cb_nall;
		pthread_mutex_unlock(&cb_pool_lk);
		if (have >= n)
			break;
		c = cb_create();
		if (!c)
			break; /* said why; the NIC threads try again themselves */
		cb_enlist(c, 1);
	}
	pthread_mutex_unlock(&prep_lk);
}

/* Advance done_seq from the completion word (one load), and with force or
 * every 16th time also from the stream: idle means every batch submitted
 * has finished; an error fails them all.  Locked. */
static void cb_progress(struct cb_ctx *c, int force)
{
	uint64_t d = __atomic_load_n(c->done, __ATOMIC_ACQUIRE);
	nm_cu_result r;

	if (d > c->done_seq && d < c->open_seq)
		c->done_seq = d;
	if (c->done_seq + 1 >= c->open_seq || (!force && ++c->qskip % 16))
		return;
	CS_ADD(queries, 1);
	r = cu.StreamQuery(c->s);
	if (r == NM_CU_ERROR_NOT_READY)
		return;
	if (r) {
		GDAK_ERR_RL("cuda", cu_ordinal, "batches %llu..%llu: %s",
			    (unsigned long long)c->done_seq + 1,
			    (unsigned long long)c->open_seq - 1, cu_err(r));
		c->fail_seq = c->open_seq - 1;
	}
	c->done_seq = c->open_seq - 1;
}

/* The slot of batch seq is free (its previous batch finished).  Locked. */
static void cb_slot_wait(struct cb_ctx *c, uint64_t seq)
{
	struct cb_slot *sl = &c->slot[seq % NM_CB_SLOTS];

	if (sl->seq && sl->seq > c->done_seq)
		CS_ADD(slot_waits, 1);
	while (sl->seq && sl->seq > c->done_seq) {
		cb_progress(c, 1);
		if (sl->seq > c->done_seq)
			sched_yield();
	}
}

/* c->mop[k..]: the open batch's stream-ordered CQE words, then the
 * completion word; returns the new count.  Default flags: each write-value
 * has a memory barrier before it, so a CQE word becomes visible after the
 * data of the operations before it on the stream.  Locked. */
static unsigned cb_tail_ops(struct cb_ctx *c, unsigned k)
{
	int fenced = 0;
	uint32_t unf = 0;

	for (uint32_t i = 0; i < c->ntail; i++, k++) {
		memset(&c->mop[k], 0, sizeof(c->mop[k]));
		c->mop[k].op = NM_CU_MEMOP_WRITE_VALUE_64;
		c->mop[k].addr = c->tl_addr[i];
		c->mop[k].value = c->tl_val[i];
		/* The first CQE word's barrier already orders every copy and
		 * value before it; a later one-word CQE (its own slot: its
		 * consumer polls the slots in order) needs none.  The words of
		 * a collapsed CQ's entry keep theirs: its owner word must not
		 * show before the rest of the entry.  A barrier in the GPU's
		 * front end waits for the GPU's outstanding system writes. */
		if (fenced && c->tl_one[i] && !__atomic_load_n(&cqe_fences, __ATOMIC_RELAXED)) {
			c->mop[k].flags = NM_CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;
			unf++;
		}
		fenced = 1;
	}
	CS_ADD(cqe_words_unfenced, unf);
	memset(&c->mop[k], 0, sizeof(c->mop[k]));
	c->mop[k].op = NM_CU_MEMOP_WRITE_VALUE_64;
	c->mop[k].addr = (uint64_t)(uintptr_t)c->done;
	c->mop[k].value = c->open_seq;
	return k + 1;
}

/* c->mop[0..k) on the batch stream: one cuStreamBatchMemOp, or a
 * write-value each where the driver has none.  Locked. */
static nm_cu_result cb_memop_submit(struct cb_ctx *c, unsigned k)
{
	nm_cu_result r = 0;

	if (cu.StreamBatchMemOp && !memop_refused) {
		uint64_t t0 = cs_clock();

		r = cu.StreamBatchMemOp(c->s, k, c->mop, 0);
		CS_ADD(ns_memop, cs_since(t0));
		CS_ADD(calls_memop, 1);
		if (!r)
			return 0;
		if (!__atomic_load_n(&cqe_fences, __ATOMIC_RELAXED)) {
			/* a driver that takes no NO_MEMORY_BARRIER: every CQE
			 * word fenced from now on, and this batch again */
			__atomic_store_n(&cqe_fences, 1, __ATOMIC_RELAXED);
			for (unsigned i = 0; i < k; i++)
				c->mop[i].flags = 0;
			r = cu.StreamBatchMemOp(c->s, k, c->mop, 0);
			CS_ADD(calls_memop, 1);
			if (!r)
				return 0;
		}
		GDAK_WARN("cuda", cu_ordinal,
			  "cuStreamBatchMemOp (%u write-values): %s: one cuStreamWriteValue each "
			  "from now on",
			  k, cu_err(r));
		memop_refused = 1;
	}
	for (unsigned i = 0; i < k && !r; i++) {
		const struct nm_cu_memop *o = &c->mop[i];

		r = o->op == NM_CU_MEMOP_WRITE_VALUE_64
			    ? cu.StreamWriteValue64(c->s, o->addr, o->value, 0)
			    : cu.StreamWriteValue32(c->s, o->addr, (uint32_t)o->value, 0);
		CS_ADD(calls_memop, 1);
	}
	return r;
}

/* The open batch as memory operations: every live copy a 4- or 8-byte
 * value from host memory at an aligned address, then the stream-ordered
 * CQE words and the completion word, in one cuStreamBatchMemOp (each
 * operation after the ones before it).  1 done, 0 not such a batch (or the
 * driver refused: the next path does it), -1 failed.  Locked.
 *
 * Barriers.  A write-value with default flags waits until every write
 * before it on the stream is visible (__threadfence_system), which the GPU's
 * front end pays for each time.  The values of a batch need it only
 * against each other where they meet, and against what came before the
 * batch: the batch's first value (unless the stream's last operation was
 * a write-value with its barrier, which already ordered everything before
 * it) and every value that is not the first live copy of its chain (it
 * meets an earlier one) keep the barrier; the others are NO_MEMORY_BARRIER
 * and may land in any order among themselves.
 * The CQE words and the completion word after them keep theirs, so none
 * becomes visible before any value of the batch.  GDAK_CUDA_VALUE_FENCES=1
 * puts the barrier back on every value. */
static int cb_memops(struct cb_ctx *c)
{
	uint32_t k = 0, unfenced = 0;
	uint64_t seen[NM_CB_DESC / 64];
	nm_cu_result r;

	if ((cb_mode != CB_MEMOP && cb_mode != CB_COPY) || !cu.StreamBatchMemOp || memop_refused ||
	    c->live + c->ntail > NM_CB_MEMOPS)
		return 0;
	for (uint32_t i = 0; i < c->n; i++) {
		const struct nm_ck_desc *e = &c->ent[i];

		if (e->flags & NM_CK_F_DEAD)
			continue;
		if (!(e->flags & NM_CK_F_INL) || (e->len != 4 && e->len != 8) ||
		    (e->dst & (e->len - 1)))
			return 0;
	}
	memset(seen, 0, sizeof(seen));
	for (uint32_t i = 0; i < c->n; i++) {
		const struct nm_ck_desc *e = &c->ent[i];
		struct nm_cu_memop *o = &c->mop[k];
		uint32_t ch = c->ent_chain[i], v32;
		int first = !(seen[ch / 64] >> (ch % 64) & 1);

		if (e->flags & NM_CK_F_DEAD)
			continue;
		seen[ch / 64] |= (uint64_t)1 << (ch % 64);
		memset(o, 0, sizeof(*o));
		o->addr = e->dst;
		if ((k || c->fenced) && first &&
		    !__atomic_load_n(&value_fences, __ATOMIC_RELAXED)) {
			o->flags = NM_CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;
			unfenced++;
		}
		if (e->len == 8) {
			o->op = NM_CU_MEMOP_WRITE_VALUE_64;
			memcpy(&o->value, e->inl, 8);
		} else {
			o->op = NM_CU_MEMOP_WRITE_VALUE_32;
			memcpy(&v32, e->inl, 4);
			o->value = v32;
		}
		k++;
	}
	/* default flags: a memory barrier before each, the values are visible
	 * when the CPU sees the word or the device a CQE word */
	k = cb_tail_ops(c, k);
	{
		uint64_t t0 = cs_clock();

		r = cu.StreamBatchMemOp(c->s, k, c->mop, 0);
		CS_ADD(ns_memop, cs_since(t0));
	}
	CS_ADD(calls_memop, 1);
	if (r && (unfenced || c->ntail > 1)) {
		/* a driver that takes no NO_MEMORY_BARRIER: every value fenced */
		GDAK_WARN(
			"cuda", cu_ordinal,
			"cuStreamBatchMemOp (%u write-values, %u without a barrier): %s: a barrier "
			"before every value from now on",
			k, unfenced, cu_err(r));
		__atomic_store_n(&value_fences, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&cqe_fences, 1, __ATOMIC_RELAXED);
		unfenced = 0;
		for (uint32_t i = 0; i < k; i++)
			c->mop[i].flags = 0;
		r = cu.StreamBatchMemOp(c->s, k, c->mop, 0);
		CS_ADD(calls_memop, 1);
	}
	if (r) {
		/* once: the driver will not take them later either */
		GDAK_WARN("cuda", cu_ordinal,
			  "cuStreamBatchMemOp (%u write-values): %s: value batches take the %s "
			  "from now on",
			  k, cu_err(r), cb_mode == CB_COPY ? "copy engines" : "copy kernel");
		memop_refused = 1;
		return 0;
	}
	CS_ADD(batches_memop, 1);
	CS_ADD(values_unfenced, unfenced);
	return 1;
}

/* copy mode: the open batch as one cuMemcpyBatchAsync (its copies do not
 * meet: cb_add closes a batch before a copy that would), then the
 * completion word.  Without the batched copy, a cuMemcpyAsync each.  0 or
 * a driver error.  Locked. */
static nm_cu_result cb_copies(struct cb_ctx *c)
{
	struct nm_cu_cpattr at = { .src_order = NM_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
	size_t idx0 = 0, fail = 0, k = 0;
	nm_cu_result r = 0;

	for (uint32_t i = 0; i < c->n; i++) {
		const struct nm_ck_desc *e = &c->ent[i];

		if (e->flags & NM_CK_F_DEAD)
			continue;
		c->cp_dst[k] = e->dst;
		/* inline bytes: from the descriptor copy kept in the slot */
		c->cp_src[k] = e->src;
		c->cp_len[k] = e->len;
		k++;
	}
	if (cu.MemcpyBatch) {
		uint64_t t0 = cs_clock();

		r = cu.MemcpyBatch(c->cp_dst, c->cp_src, c->cp_len, k, &at, &idx0, 1, c->s);
		CS_ADD(ns_memcpy_batch, cs_since(t0));
		CS_ADD(calls_memcpy_batch, 1);
	} else if (cu.MemcpyBatch12) {
		uint64_t t0 = cs_clock();

		r = cu.MemcpyBatch12(c->cp_dst, c->cp_src, c->cp_len, k, &at, &idx0, 1, &fail,
				     c->s);
		CS_ADD(ns_memcpy_batch, cs_since(t0));
		CS_ADD(calls_memcpy_batch, 1);
	} else {
		for (size_t i = 0; i < k && !r; i++)
			r = cu.MemcpyAsync(c->cp_dst[i], c->cp_src[i], c->cp_len[i], c->s);
		CS_ADD(calls_memcpy, k);
	}
	if (!r && c->ntail) {
		r = cb_memop_submit(c, cb_tail_ops(c, 0));
	} else if (!r) {
		r = cu.StreamWriteValue64(c->s, (nm_cu_ptr)(uintptr_t)c->done, c->open_seq, 0);
		CS_ADD(calls_memop, 1);
	}
	if (!r)
		CS_ADD(batches_copy, 1);
	return r;
}

/*
 * GDAK_CUDA_STATS: a timeline of the bursts of large direct copies (the
 * 16 MiB row), to tell copies that run slowly from a stream that waits: a
 * timing event before a burst's first copy and one where the burst ends
 * (before the CQE words behind it), none between two copies (a record there
 * would be a gap in the copy engine's work), and the CPU clock at each call.
 * The events are created once, at the first mark; the report prints a line
 * per burst of 4 copies or more.  One timeline for the process: with several
 * NIC threads copying at once their calls mix into one burst (the 16 MiB row
 * has one).
 */
#define TL_EV 16
#define TL_CALLS 256
#define TL_MIN_LEN ((size_t)1 << 20)
static struct {
	pthread_mutex_t lk;
	int ready;	     /* 1: events created; -1: not available */
	int open;	     /* a burst's start event is recorded, not its end */
	unsigned nev, ncall; /* events: start, end, start, end...  */
	nm_cu_event ev[TL_EV];
	uint64_t call[TL_CALLS]; /* CLOCK_REALTIME ns when a call began / returned */
	unsigned ev_call[TL_EV]; /* the first call entry of the burst */
	uint64_t enter[TL_EV];	 /* ... when its nm_cuda_copy_start began */
	uint64_t last_enter;	 /* the last large nm_cuda_copy_start's beginning */
} tl = { .lk = PTHREAD_MUTEX_INITIALIZER };

static uint64_t tl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* what: 0 a burst's first call is about to begin, 1 a call returned, 2 the
 * burst ends (its last copy is the stream's last work).  Stats on only. */
static void tl_mark(nm_cu_stream s, size_t len, int what)
{
	uint64_t now;

	if (what != 2 && len < TL_MIN_LEN)
		return;
	now = tl_now();
	pthread_mutex_lock(&tl.lk);
	if (!tl.ready) {
		tl.ready = cu.EventElapsedTime && cu.EventSynchronize ? 1 : -1;
		for (unsigned i = 0; i < TL_EV && tl.ready == 1; i++)
			if (cu.EventCreate(&tl.ev[i], 0))
				tl.ready = -1;
	}
	if (tl.ready != 1 || (what != 0 && !tl.open)) {
		pthread_mutex_unlock(&tl.lk);
		return;
	}
	if (what == 0 && (tl.open || tl.nev + 2 > TL_EV || tl.ncall + 2 > TL_CALLS)) {
		pthread_mutex_unlock(&tl.lk);
		return;
	}
	if (what == 2 && tl.ncall - tl.ev_call[tl.nev - 1] < 5) {
		/* fewer than 4 copies: not reported, its entries are reused */
		tl.ncall = tl.ev_call[--tl.nev];
		tl.open = 0;
	} else if (what != 1 && !cu.EventRecord(tl.ev[tl.nev], s)) {
		tl.enter[tl.nev] = __atomic_load_n(&tl.last_enter, __ATOMIC_RELAXED);
		tl.ev_call[tl.nev++] = tl.ncall;
		tl.open = what == 0;
	} else if (what != 1) {
		tl.open = 0;
	}
	if (what != 2 && tl.ncall < TL_CALLS)
		tl.call[tl.ncall++] = now;
	pthread_mutex_unlock(&tl.lk);
}

static void tl_report(const char *when)
{
	pthread_mutex_lock(&tl.lk);
	for (unsigned e = 0; e + 1 < tl.nev && !thread_ctx(); e += 2) {
		unsigned c0 = tl.ev_call[e], c1 = tl.ev_call[e + 1];
		float ms = 0;
		char line[1200];
		int o = 0;

		/* c1 - c0 entries: the first call's start, then each return */
		if (c1 - c0 < 5 || cu.EventSynchronize(tl.ev[e + 1]) ||
		    cu.EventElapsedTime(&ms, tl.ev[e], tl.ev[e + 1]))
			continue;
		for (unsigned k = c0 + 1; k < c1 && o < (int)sizeof(line) - 16; k++)
			o += snprintf(line + o, sizeof(line) - (size_t)o, " %.1f",
				      (double)(tl.call[k] - tl.call[c0]) / 1e3);
		fprintf(stderr,
			"gdak cuda timeline (%s): burst of %u copies: first call at realtime %llu "
			"ns, %.1f us after its copy was started; GPU %.1f us from before the first "
			"copy to after the last (%.2f us a copy); calls returned at us:%s\n",
			when, c1 - c0 - 1, (unsigned long long)tl.call[c0],
			(double)(tl.call[c0] - tl.enter[e]) / 1e3, ms * 1000.0,
			ms * 1000.0 / (c1 - c0 - 1), line);
	}
	tl.nev = tl.ncall = 0;
	tl.open = 0;
	pthread_mutex_unlock(&tl.lk);
}

/*
 * GDAK_CUDA_BIG=kernel: a direct GPU -> GPU copy by the wide copy kernel
 * (nm_cuda_kern.h) when it can take it - both addresses 16-byte aligned,
 * the ranges apart.  One cuLaunchKernel costs the NIC thread less than a
 * cuMemcpyDtoDAsync of the same copy, above all the first call of a burst
 * from a thread that has not called the driver for a while, and the
 * kernel copies as fast as the driver's copy (docs/BENCHMARKS-CUDA.md,
 * "Fourteenth look").  1 with *r the launch's result, 0: not taken.
 */
static int big_call(nm_cu_ptr d, nm_cu_ptr sp, size_t len, nm_cu_stream s, nm_cu_result *r)
{
	const size_t per = (size_t)NM_CK_BIG_THREADS * NM_CK_BIG_UNROLL * 16;
	unsigned long long l = len;
	void *args[3] = { &d, &sp, &l };
	size_t g;

	if (!big_fn || ((d | sp) & 15) || (sp < d + len && d < sp + len))
		return 0;
	g = len / per + 1;
	if (g > big_grid)
		g = big_grid;
	/* timed by the caller, as the driver's copy would be */
	*r = cu.LaunchKernel(big_fn, (unsigned)g, 1, 1, NM_CK_BIG_THREADS, 1, 1, 0, s, args, NULL);
	CS_ADD(calls_big, 1);
	return 1;
}

/* One direct copy on the batch stream, timed (GDAK_CUDA_STATS).  Locked. */
static nm_cu_result cb_direct_call(struct cb_ctx *c, nm_cu_ptr d, nm_cu_ptr sp, int src_gpu,
				   size_t len, int behind)
{
	uint64_t t0 = cs_clock(), dt;
	nm_cu_result r;

	if (!behind && t0)
		tl_mark(c->s, len, 0);
	/* GDAK_CUDA_PREQUERY (default 1): the first direct copy of a burst
	 * comes from a NIC thread that may not have called the driver for a
	 * while, and such a first call is slow; a stream query just before it
	 * makes the two together cheaper (docs/BENCHMARKS-CUDA.md, "Twelfth
	 * look", "Fourteenth look") */
	if (pre_query && !behind) {
		(void)cu.StreamQuery(c->s);
		CS_ADD(queries, 1);
	}
	/* GPU -> GPU: the wide copy kernel, or the device-to-device entry
	 * point, which need not find out what either pointer is */
	if (src_gpu && big_call(d, sp, len, c->s, &r)) {
		/* counted by big_call */
	} else if (dtod && src_gpu && cu.MemcpyDtoDAsync) {
		r = cu.MemcpyDtoDAsync(d, sp, len, c->s);
		CS_ADD(calls_dtod, 1);
	} else {
		r = cu.MemcpyAsync(d, sp, len, c->s);
	}
	dt = cs_since(t0);
	if (!r && t0)
		tl_mark(c->s, len, 1);
	CS_ADD(calls_memcpy, 1); /* the direct calls, whichever entry point */
	CS_ADD(ns_memcpy, dt);
	cs_max(&cs.ns_memcpy_max, dt);
	if (behind) {
		CS_ADD(calls_behind, 1);
		CS_ADD(ns_behind, dt);
		cs_max(&cs.ns_behind_max, dt);
		if (t0 && c->direct_ret) {
			CS_ADD(ns_direct_gap, t0 - c->direct_ret);
			cs_max(&cs.ns_direct_gap_max, t0 - c->direct_ret);
		}
	}
	c->direct_ret = t0 ? t0 + dt : 0;
	if (!behind)
		c->direct_t0 = t0;
	if (!c->open_t0)
		c->open_t0 = t0;
	return r;
}

/*
 * GDAK_CUDA_DIRECT_BATCH=1: the pass's deferred direct copies to the driver
 * - one cuMemcpyBatchAsync when there are several.  They are all the same
 * copy (same GPU source, destination and length, the two apart: cb_direct
 * defers nothing else), so they may land in any order, even at once: each
 * writes the bytes the others write, and none writes what another reads.
 * Everything after them on the stream (the open batch, CQE words) waits
 * for all of them.  Every call site that puts anything on the stream comes
 * here first.  Locked.
 */
static void cb_dq_submit(struct cb_ctx *c)
{
	struct nm_cu_cpattr at = { .src_order = NM_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
	size_t idx0 = 0, fail = 0;
	uint32_t n = c->ndq;
	nm_cu_result r = 1;

	if (!n)
		return;
	c->ndq = 0;
	if (n > 1) {
		uint64_t t0 = cs_clock();

		if (cu.MemcpyBatch)
			r = cu.MemcpyBatch(c->dq_dst, c->dq_src, c->dq_len, n, &at, &idx0, 1, c->s);
		else
			r = cu.MemcpyBatch12(c->dq_dst, c->dq_src, c->dq_len, n, &at, &idx0, 1,
					     &fail, c->s);
		CS_ADD(calls_memcpy_batch, 1);
		CS_ADD(ns_dq_batch, cs_since(t0));
		if (!r) {
			CS_ADD(copies_dq_batched, n);
			if (!c->direct_t0)
				c->direct_t0 = t0;
			c->direct_ret = t0 ? cs_clock() : 0;
			return;
		}
		GDAK_WARN_RL("cuda", cu_ordinal,
			     "cuMemcpyBatchAsync (%u equal copies): %s; one call each", n,
			     cu_err(r));
	}
	for (uint32_t i = 0; i < n; i++) {
		r = cb_direct_call(c, c->dq_dst[i], c->dq_src[i], 1, c->dq_len[i],
				   c->direct > n - i);
		if (r)
			/* the tickets are done already (stream-ordered CQEs): what
			 * follows lands without these bytes; say so loudly */
			GDAK_ERR_RL("cuda", cu_ordinal,
				    "copy 0x%llx <- 0x%llx (%zu bytes) on the batch stream: %s",
				    (unsigned long long)c->dq_dst[i],
				    (unsigned long long)c->dq_src[i], c->dq_len[i], cu_err(r));
	}
}

/* Submit the open batch (if any copy is in it).  why: the counter.  Locked. */
static void cb_flush(struct cb_ctx *c, uint64_t *why)
{
	struct cb_slot *sl = &c->slot[c->open_seq % NM_CB_SLOTS];
	uint32_t n = c->n, nc = c->nchain;
	nm_cu_ptr dp, cp, hp;
	uint32_t ntail = c->ntail;
	/* with CQE words the write-values after the kernel say it has landed:
	 * the kernel's own word, written before them, repeats the last one's
	 * (a CPU-stored CQE must not overtake a queued one of the same CQ) */
	unsigned long long seq = ntail ? c->open_seq - 1 : c->open_seq;
	nm_cu_result r;
	void *args[6];
	int fenced = 1;

	cb_dq_submit(c);
	if (!n && !ntail && !c->direct)
		return;
	if (c->direct_t0) {
		tl_mark(c->s, 0, 2);
		CS_ADD(ns_direct_span, cs_since(c->direct_t0));
		c->direct_t0 = 0;
	}
	if (c->open_t0) {
		CS_ADD(ns_open, cs_since(c->open_t0));
		c->open_t0 = 0;
	}
	CS_ADD(copies_batched, c->n_batched);
	CS_ADD(copies_replaced, c->n_replaced);
	c->n_batched = c->n_replaced = 0;
	__atomic_fetch_add(why, 1, __ATOMIC_RELAXED);
	CS_ADD(copies_submitted, c->live);
	cs_max_batch(c->live);
	/* the device sees the CQE bodies the completer wrote before their words
	 * (TSan has no thread fence: the reader is the GPU, which it does not
	 * see anyway) */
#if defined(__SANITIZE_THREAD__)
	__atomic_signal_fence(__ATOMIC_RELEASE);
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
	r = (nm_cu_result)cb_memops(c);
	if (r) {
		r = r < 0;
		goto launched;
	}
	if (!n) {
		/* CQE words and copies put on the stream ahead: write-values only */
		r = cb_memop_submit(c, cb_tail_ops(c, 0));
		goto launched;
	}
	if (cb_mode == CB_COPY) {
		r = cb_copies(c);
		goto launched;
	}
	/* counting sort by chain, stable: a chain keeps the join order; the
	 * replaced copies stay out */
	memset(sl->chain, 0, 4 * ((size_t)nc + 1));
	for (uint32_t i = 0; i < n; i++)
		if (!(c->ent[i].flags & NM_CK_F_DEAD))
			sl->chain[c->ent_chain[i] + 1]++;
	for (uint32_t k = 0; k < nc; k++) {
		sl->chain[k + 1] += sl->chain[k];
		c->cursor[k] = sl->chain[k];
	}
	for (uint32_t i = 0; i < n; i++)
		if (!(c->ent[i].flags & NM_CK_F_DEAD))
			sl->desc[c->cursor[c->ent_chain[i]]++] = c->ent[i];
	dp = (nm_cu_ptr)(uintptr_t)sl->desc;
	cp = (nm_cu_ptr)(uintptr_t)sl->chain;
	hp = (nm_cu_ptr)(uintptr_t)c->done;
	args[0] = &dp;
	args[1] = &cp;
	args[2] = &nc;
	args[3] = &c->count;
	args[4] = &hp;
	args[5] = &seq;
	{
		uint64_t t0 = cs_clock();

		r = cu.LaunchKernel(cb_fn, nc, 1, 1, NM_CK_THREADS, 1, 1, 0, c->s, args, NULL);
		CS_ADD(ns_launch, cs_since(t0));
	}
	CS_ADD(calls_launch, 1);
	if (!r) {
		CS_ADD(batches_kernel, 1);
		CS_ADD(chains, nc);
	}
	/* the kernel writes the done word itself; CQE words go after it */
	if (!r && ntail)
		r = cb_memop_submit(c, cb_tail_ops(c, 0));
	else if (!r)
		fenced = 0;
launched:
	/* every other path ends with the completion word's write-value */
	c->fenced = !r && fenced;
	sl->seq = c->open_seq;
	sl->failed = r != 0;
	if (r) {
		GDAK_ERR_RL("cuda", cu_ordinal,
			    "batch copy submission (%u copies, %u chains, %u CQE words): %s%s",
			    c->live, nc, ntail, cu_err(r),
			    ntail ? ": stream-ordered CQEs of this batch are lost" : "");
		/* what ran before has finished, this batch has failed */
		cu.StreamSynchronize(c->s);
		c->done_seq = sl->seq;
	}
	c->open_seq++;
	c->held_work = UINT32_MAX;
	c->ntail = c->direct = 0;
	c->n = c->live = c->nchain = c->pay_used = c->ht_used = 0;
	if (++c->gen == 0) {
		memset(c->ht, 0, sizeof(c->ht));
		memset(c->last_gen, 0, sizeof(c->last_gen));
		c->gen = 1;
	}
}

/* Anything of this thread's not yet landed: the open batch, copies put on
 * the stream ahead of it, batches submitted.  Locked. */
static int cb_pending(struct cb_ctx *c)
{
	return c->n || c->ntail || c->direct || c->done_seq + 1 < c->open_seq;
}

/* Submit the open batch and wait until everything submitted has landed
 * (an operation that must not overtake the stream).  Locked. */
static void cb_drain(struct cb_ctx *c)
{
	cb_flush(c, &cs.flush_other);
	while (c->done_seq + 1 < c->open_seq) {
		cb_progress(c, 1);
		if (c->done_seq + 1 < c->open_seq)
			sched_yield();
	}
}

/*
 * GDAK_CUDA_CQE=stream: a copy into GPU memory queued on the batch stream by
 * the NIC thread that owns the engine, inside a pass, is complete for the
 * NIC at once: the completer's CQE words for it go on the same stream
 * behind it (nm_cuda_cqe_tail), so nobody can see the CQE before the data,
 * and the open batch is submitted at the pass end (nm_cuda_pass_end).
 * Elsewhere (the control path draining a QP, an inline run) a ticket is done when its
 * batch has landed, as without the mode.
 */
static int cb_queued_done(struct cb_ctx *c)
{
	/* an inline run (GDAK_IBV_INLINE) is the program's thread running a
	 * pass: the QP's next pass, and its CQE, may come from the NIC thread's
	 * own stream, which this copy is not on */
	if (!cqe_stream || tls_cb != c || !nm_rg_in_pass || nm_thread_inline())
		return 0;
	nm_cuda_pass_pending = 1;
	return 1;
}

static inline uint32_t cb_hash(uint64_t g)
{
	return (uint32_t)((g * 0x9e3779b97f4a7c15ull) >> 40) & (NM_CB_HT - 1);
}

/* The entry of key k in the open batch's table, or NULL; *slot: where it is
 * or would go. */
static struct cb_gran *cb_find(struct cb_ctx *c, uint64_t k, uint32_t *slot)
{
	uint32_t h = cb_hash(k);

	while (c->ht[h].gen == c->gen) {
		if (c->ht[h].key == k) {
			*slot = h;
			return &c->ht[h];
		}
		h = (h + 1) & (NM_CB_HT - 1);
	}
	*slot = h;
	return NULL;
}

static struct cb_gran *cb_entry(struct cb_ctx *c, uint64_t k)
{
	uint32_t h;
	struct cb_gran *g = cb_find(c, k, &h);

	if (g)
		return g;
	g = &c->ht[h];
	g->key = k;
	g->gen = c->gen;
	g->chain = g->schain = -1;
	c->ht_used++;
	return g;
}

/* Fold chain k into *chain: 0, or -1 when it is a second chain. */
static int cb_fold(int32_t k, int *chain)
{
	if (k == -1)
		return 0;
	if (k < 0 || (*chain >= 0 && *chain != k))
		return -1;
	*chain = k;
	return 0;
}

/* Fold the chains meeting [a, a + len) into *chain: 0, or -1 when the range
 * meets a second chain. */
static int cb_probe(struct cb_ctx *c, uint64_t a, uint32_t len, int *chain)
{
	uint32_t h;

	if (len <= NM_CB_SMALL) {
		for (uint64_t g = a >> NM_CB_FINE; g <= (a + len - 1) >> NM_CB_FINE; g++) {
			struct cb_gran *e = cb_find(c, g << 1 | 1, &h);

			if (e && cb_fold(e->chain, chain))
				return -1;
		}
	}
	for (uint64_t g = a >> NM_CB_GRAN; g <= (a + len - 1) >> NM_CB_GRAN; g++) {
		struct cb_gran *e = cb_find(c, g << 1, &h);

		if (!e)
			continue;
		if (cb_fold(e->chain, chain) || (len > NM_CB_SMALL && cb_fold(e->schain, chain)))
			return -1;
	}
	return 0;
}

static void cb_mark(struct cb_ctx *c, uint64_t a, uint32_t len, int32_t chain)
{
	if (len <= NM_CB_SMALL)
		for (uint64_t g = a >> NM_CB_FINE; g <= (a + len - 1) >> NM_CB_FINE; g++)
			cb_entry(c, g << 1 | 1)->chain = chain;
	for (uint64_t g = a >> NM_CB_GRAN; g <= (a + len - 1) >> NM_CB_GRAN; g++) {
		struct cb_gran *e = cb_entry(c, g << 1);

		if (len > NM_CB_SMALL)
			e->chain = chain;
		else
			e->schain = e->schain == -1 || e->schain == chain ? chain : -2;
	}
}

/* Table entries a range may take (at most). */
static uint32_t cb_grans(uint64_t a, uint32_t len)
{
	uint32_t n = (uint32_t)(((a + len - 1) >> NM_CB_GRAN) - (a >> NM_CB_GRAN) + 1);

	if (len <= NM_CB_SMALL)
		n += (uint32_t)(((a + len - 1) >> NM_CB_FINE) - (a >> NM_CB_FINE) + 1);
	return n;
}

static void cb_ticket(struct cb_ctx *c, struct nm_cuda_ticket *t)
{
	t->batch = c;
	t->seq = c->open_seq;
	t->done = cb_queued_done(c);
	t->stream = NM_CUDA_BATCH_STREAM;
}

/*
 * A copy equal to the last copy of its chain - the same GPU source, the
 * same destination, the same length, the two ranges apart - adds nothing:
 * the batch copies the same bytes to the same place at the same point of
 * the chain (nothing after it in the chain, so nothing in the batch
 * writes the source or the destination in between; anything outside the
 * batch that could, closes it first).  A CTA putting one buffer to one
 * address over and over is then one table look-up per WQE instead of the
 * granule table's probes and marks.  Counted as replaced.  1: joined so.
 * Locked.
 */
static int cb_same(struct cb_ctx *c, uint64_t d, uint64_t s, uint32_t len, struct nm_cuda_ticket *t)
{
	uint32_t h = (uint32_t)(d >> 3) % NM_CB_LAST, i = c->last_ent[h];
	const struct nm_ck_desc *p = &c->ent[i];

	if (c->last_gen[h] != c->gen || i >= c->n || c->tail[c->ent_chain[i]] != i || p->dst != d ||
	    p->len != len || p->src != s ||
	    (p->flags & (NM_CK_F_DEAD | NM_CK_F_INL | NM_CK_F_SYS)) || (s < d + len && d < s + len))
		return 0;
	c->n_batched++;
	c->n_replaced++;
	cb_ticket(c, t);
	return 1;
}

/* Add dst <- src (len bytes, 0 < len <= cb_max, dst in GPU memory) to the
 * open batch.  Locked. */
static void cb_add(struct cb_ctx *c, void *dst, const void *src, int src_gpu, uint32_t len,
		   struct nm_cuda_ticket *t)
{
	uint64_t d = (uint64_t)(uintptr_t)dst, s = (uint64_t)(uintptr_t)src;
	/* copy mode stages inline bytes too: the copy engines need a source */
	uint32_t pay = !src_gpu && (len > NM_CK_INL || cb_mode == CB_COPY) ? (len + 15) & ~15u : 0;
	uint32_t grans = cb_grans(d, len) + (src_gpu ? cb_grans(s, len) : 0);
	struct nm_ck_desc *e;
	int chain, replace;

	if (src_gpu && c->n && !same_off && cb_same(c, d, s, len, t))
		return;
	for (;;) {
		if (!c->n)
			cb_slot_wait(c, c->open_seq);
		chain = -1;
		replace = 0;
		if (c->n < NM_CB_DESC && c->pay_used + pay <= NM_CB_PAY &&
		    c->ht_used + grans <= NM_CB_HT / 2 && !cb_probe(c, d, len, &chain) &&
		    !(src_gpu && cb_probe(c, s, len, &chain))) {
			if (chain >= 0) {
				struct nm_ck_desc *p = &c->ent[c->tail[chain]];

				/* the same destination, not read by this copy: replaced */
				replace = p->dst == d && p->len == len &&
					  !(src_gpu && s < d + len && d < s + len);
			}
			if (chain < 0 || replace || cb_mode != CB_COPY)
				break;
			/* copy mode: copies of one batch land in any order */
			cb_flush(c, &cs.flush_conflict);
			continue;
		}
		/* full, or it would join two chains: it goes into the next batch */
		cb_flush(c,
			 chain == -1 || c->n >= NM_CB_DESC ? &cs.flush_full : &cs.flush_conflict);
	}
	if (replace) {
		c->ent[c->tail[chain]].flags |= NM_CK_F_DEAD;
		c->live--;
		c->n_replaced++;
	}
	if (chain < 0)
		chain = (int)c->nchain++;
	cb_mark(c, d, len, chain);
	if (src_gpu)
		cb_mark(c, s, len, chain);
	e = &c->ent[c->n];
	e->dst = d;
	e->len = len;
	e->flags = 0;
	if (src_gpu) {
		e->src = s;
	} else if (pay == 0) {
		memcpy(e->inl, src, len);
		e->src = 0;
		e->flags = NM_CK_F_INL;
	} else {
		uint8_t *p = c->slot[c->open_seq % NM_CB_SLOTS].pay + c->pay_used;

		memcpy(p, src, len);
		if (len <= NM_CK_INL) /* copy mode: the memop path reads inl[] */
			memcpy(e->inl, src, len);
		e->src = (uint64_t)(uintptr_t)p;
		e->flags = len <= NM_CK_INL ? NM_CK_F_SYS | NM_CK_F_INL : NM_CK_F_SYS;
		c->pay_used += pay;
	}
	c->tail[chain] = c->n;
	c->last_ent[(d >> 3) % NM_CB_LAST] = c->n;
	c->last_gen[(d >> 3) % NM_CB_LAST] = c->gen;
	c->ent_chain[c->n++] = (uint32_t)chain;
	c->live++;
	c->n_batched++;
	if (!c->open_t0)
		c->open_t0 = cs_clock();
	cb_ticket(c, t);
	if (c->n == NM_CB_DESC)
		cb_flush(c, &cs.flush_full);
}

static int cb_poll(struct nm_cuda_ticket *t)
{
	struct cb_ctx *c = (struct cb_ctx *)t->batch;
	struct cb_slot *sl = &c->slot[t->seq % NM_CB_SLOTS];
	int ret;

	/* the control path may poll (a QP torn down): launches need the context */
	ret = thread_ctx();
	if (ret)
		return ret;
	pthread_mutex_lock(&c->lk);
	if (cb_queued_done(c)) {
		/* on the stream ahead of anything the completer queues now */
		ret = t->seq <= c->done_seq &&
				      ((sl->seq == t->seq && sl->failed) || t->seq <= c->fail_seq)
			      ? -EIO
			      : 1;
		pthread_mutex_unlock(&c->lk);
		t->done = ret == 1;
		return ret;
	}
	if (t->seq >= c->open_seq)
		cb_flush(c, &cs.flush_poll);
	if (t->seq > c->done_seq)
		cb_progress(c, 0);
	if (t->seq <= c->done_seq)
		ret = (sl->seq == t->seq && sl->failed) || t->seq <= c->fail_seq ? -EIO : 1;
	else
		ret = 0;
	pthread_mutex_unlock(&c->lk);
	if (ret == 1)
		t->done = 1;
	return ret;
}
/* A thread goes away: its batches land, the engine goes back to the pool. */
static void cb_release(void *p)
{
	struct cb_ctx *c = (struct cb_ctx *)p;

	if (!c)
		return;
	pthread_mutex_lock(&c->lk);
	cb_flush(c, &cs.flush_other);
	if (c->done_seq + 1 < c->open_seq && thread_ctx() == 0) {
		cu.StreamSynchronize(c->s);
		c->done_seq = c->open_seq - 1;
	}
	pthread_mutex_unlock(&c->lk);
	pthread_mutex_lock(&cb_pool_lk);
	c->next = cb_pool;
	cb_pool = c;
	pthread_mutex_unlock(&cb_pool_lk);
	tls_cb = NULL;
}

/* A copy ordered after the batches (its ticket names the batch stream) but
 * not batched itself: the open batch is launched first, then this copy on
 * the batch stream, then its own event.  GDAK_CUDA_CQE=stream: a copy into
 * GPU memory records no event - it belongs to the open batch, whose done
 * word (and CQE words) the stream writes after it. */
/* GDAK_CUDA_DIRECT_BATCH=1: defer a direct GPU -> GPU copy to the pass
 * end, when it equals the ones deferred (or none is) and nothing went into
 * the open batch since (it would land after them).  1: deferred.  Locked. */
static int cb_dq_join(struct cb_ctx *c, const void *dst, const void *src, int sk, size_t len)
{
	nm_cu_ptr d = (nm_cu_ptr)(uintptr_t)dst, sp = (nm_cu_ptr)(uintptr_t)src;

	if (!direct_batch || sk != GDAK_MEM_GPU || (!cu.MemcpyBatch && !cu.MemcpyBatch12) || c->n ||
	    c->ntail || !nm_rg_in_pass || nm_thread_inline() || tls_cb != c ||
	    (sp < d + len && d < sp + len))
		return 0;
	if (c->ndq &&
	    (c->ndq == NM_CB_DQ || c->dq_dst[0] != d || c->dq_src[0] != sp || c->dq_len[0] != len))
		return 0;
	c->dq_dst[c->ndq] = d;
	c->dq_src[c->ndq] = sp;
	c->dq_len[c->ndq] = len;
	c->ndq++;
	nm_cuda_pass_pending = 1;
	return 1;
}

/* The ticket's completion event, created on its first copy and kept for the
 * next ones: 0, or the driver's error (logged). */
static nm_cu_result ticket_event(struct nm_cuda_ticket *t)
{
	nm_cu_result r;

	if (t->ev)
		return 0;
	r = cu.EventCreate(&t->ev, NM_CU_EVENT_DISABLE_TIMING);
	if (r) {
		t->ev = NULL;
		GDAK_ERR_RL("cuda", cu_ordinal, "cuEventCreate: %s", cu_err(r));
	}
	return r;
}

static int cb_direct(struct cb_ctx *c, void *dst, int dk, const void *src, int sk, size_t len,
		     struct nm_cuda_ticket *t)
{
	nm_cu_result r = 0;

	if (cqe_stream && dk == GDAK_MEM_GPU) {
		pthread_mutex_lock(&c->lk);
		if (c->n || c->ntail)
			cb_flush(c, &cs.flush_other);
		if (!c->direct) /* the batch it opens needs its slot */
			cb_slot_wait(c, c->open_seq);
		if (cb_dq_join(c, dst, src, sk, len)) {
			r = 0;
		} else if (c->ndq && (cb_dq_submit(c), cb_dq_join(c, dst, src, sk, len))) {
			r = 0; /* a different copy: the deferred ones went, it waits */
		} else {
			r = cb_direct_call(c, (nm_cu_ptr)(uintptr_t)dst, (nm_cu_ptr)(uintptr_t)src,
					   sk == GDAK_MEM_GPU, len, c->direct > 0);
		}
		c->fenced = 0;
		CS_ADD(copies_direct, 1);
		if (!r) {
			c->direct++;
			t->batch = c;
			t->seq = c->open_seq;
			t->done = cb_queued_done(c);
		}
		pthread_mutex_unlock(&c->lk);
		t->stream = NM_CUDA_BATCH_STREAM;
		if (r) {
			t->batch = NULL;
			GDAK_ERR_RL("cuda", cu_ordinal,
				    "copy %p <- %p (%zu bytes) on the batch stream: %s", dst, src,
				    len, cu_err(r));
			return cu_errno(r);
		}
		return 0;
	}
	r = ticket_event(t);
	if (r)
		return cu_errno(r);
	pthread_mutex_lock(&c->lk);
	cb_flush(c, &cs.flush_other);
	if (len && !(dk == GDAK_MEM_GPU && sk == GDAK_MEM_GPU &&
		     big_call((nm_cu_ptr)(uintptr_t)dst, (nm_cu_ptr)(uintptr_t)src, len, c->s, &r)))
		r = cu.MemcpyAsync((nm_cu_ptr)(uintptr_t)dst, (nm_cu_ptr)(uintptr_t)src, len, c->s);
	if (!r)
		r = cu.EventRecord(t->ev, c->s);
	c->fenced = 0;
	CS_ADD(calls_memcpy, len != 0);
	CS_ADD(calls_event, 1);
	pthread_mutex_unlock(&c->lk);
	t->batch = NULL;
	t->stream = NM_CUDA_BATCH_STREAM;
	if (r) {
		GDAK_ERR_RL("cuda", cu_ordinal, "copy %p <- %p (%zu bytes) on the batch stream: %s",
			    dst, src, len, cu_err(r));
		return cu_errno(r);
	}
	return 0;
}

/* The calling thread's engine, drained when anything of it is pending
 * (GDAK_CUDA_CQE=stream only). */
static void cb_drain_mine(void)
{
	struct cb_ctx *c = tls_cb;

	if (!cqe_stream || !c)
		return;
	pthread_mutex_lock(&c->lk);
	cb_progress(c, 0);
	if (cb_pending(c)) {
		CS_ADD(cqe_drains, 1);
		cb_drain(c);
	}
	pthread_mutex_unlock(&c->lk);
}

/* Every engine's queue landed (memory about to be freed). */
static void cb_drain_all(void)
{
	struct cb_ctx *c;

	if (!cqe_stream)
		return;
	pthread_mutex_lock(&cb_pool_lk);
	c = cb_all;
	pthread_mutex_unlock(&cb_pool_lk);
	for (; c; c = c->all) {
		pthread_mutex_lock(&c->lk);
		cb_progress(c, 0);
		if (cb_pending(c))
			cb_drain(c);
		pthread_mutex_unlock(&c->lk);
	}
}

/* nm_dma_ops.cqe_tail (nm_dma.h): CQE words behind the thread's queue. */
static int cuda_cqe_tail(void *dst, const void *src, unsigned words, int can_defer)
{
	struct cb_ctx *c = tls_cb;
	int queued = 0;

	if (!cqe_stream || !c)
		return 0;
	pthread_mutex_lock(&c->lk);
	cb_progress(c, 0);
	if (!cb_pending(c)) {
		/* everything before it has landed: the completer stores it */
	} else if (!can_defer || words > NM_CB_TAILS) {
		CS_ADD(cqe_drains, 1);
		cb_drain(c);
	} else {
		if (c->ntail + words > NM_CB_TAILS)
			cb_flush(c, &cs.flush_full);
		if (!c->n && !c->ntail && !c->direct)
			cb_slot_wait(c, c->open_seq);
		for (unsigned i = 0; i < words; i++) {
			c->tl_addr[c->ntail] = (uint64_t)(uintptr_t)dst + 8 * i;
			memcpy(&c->tl_val[c->ntail], (const uint8_t *)src + 8 * i, 8);
			c->tl_one[c->ntail] = words == 1;
			c->ntail++;
		}
		CS_ADD(cqes_stream, 1);
		if (!c->open_t0)
			c->open_t0 = cs_clock();
		queued = 1;
		if (nm_rg_in_pass)
			nm_cuda_pass_pending = 1;
		else
			cb_flush(c, &cs.flush_other);
	}
	pthread_mutex_unlock(&c->lk);
	return queued;
}

/*
 * The pass end submits the open batch - unless all it holds are copies
 * already on the stream (direct: 16 MiB WRITEs) and no CQE word: then its
 * completion word, bookkeeping only, waits for the next batch that has
 * work (or a drain, a poll from outside the pass).  A write-value between
 * two large copies makes the stream wait for the first to be visible
 * before the second starts, a gap in the copy engine's work every pass;
 * without it consecutive passes' copies run back to back.
 * GDAK_CUDA_PASS_WORD=1 submits it at every pass end (for an A/B run).
 */
/*
 * GDAK_CUDA_HOLD=N (default 0: off): a pass end keeps the open batch open while
 * N or more batches are still running on the GPU and this pass added work
 * to it: submitted now, it would only queue behind them, and a batch costs
 * the GPU about the same however many WQEs it carries (equal and replaced
 * copies join for nothing), so the next passes' WQEs go into it too.  The
 * first pass end that finds the GPU caught up, or a pass that added
 * nothing (the NIC going idle - every thread runs one before it sleeps),
 * submits it; a full batch goes as always.  CQE words wait with it, but
 * only while earlier ones are still on the stream.  0: every pass end
 * submits - the default, because the H200 measured the 64-CTA rate row
 * lower with 2 (3.7 against 7.6-7.9 M/s).  Locked.
 */
static int cb_hold(struct cb_ctx *c)
{
	uint32_t work = c->n_batched + c->ntail + c->direct;

	if (!hold_inflight || work == c->held_work || c->n >= NM_CB_DESC / 2 ||
	    c->ntail >= NM_CB_TAILS / 2 || pass_word)
		return 0;
	cb_progress(c, 0);
	if (c->open_seq - 1 - c->done_seq < hold_inflight)
		return 0;
	c->held_work = work;
	CS_ADD(holds, 1);
	return 1;
}

void nm_cuda_pass_end(void)
{
	struct cb_ctx *c = tls_cb;

	nm_cuda_pass_pending = 0;
	if (!c)
		return;
	pthread_mutex_lock(&c->lk);
	cb_dq_submit(c);
	if (c->n || c->ntail || !c->direct || pass_word) {
		if ((c->n || c->ntail) && cb_hold(c))
			nm_cuda_pass_pending = 1; /* the next pass end looks again */
		else
			cb_flush(c, &cs.flush_poll);
	}
	pthread_mutex_unlock(&c->lk);
}

/* 1 when the copy went into (or behind) the batches, 0 when it takes the
 * per-copy path, -errno on failure. */
static int cb_start(void *dst, int dk, const void *src, int sk, size_t len,
		    struct nm_cuda_ticket *t)
{
	struct cb_ctx *c;

	/* GDAK_CUDA_CQE=stream: every copy of the thread goes on the batch
	 * stream, in the order started (nothing else orders them with the
	 * copies the NIC already counts as complete) */
	if (!cb_mode || (!cqe_stream && t->stream >= 0 && t->stream != NM_CUDA_BATCH_STREAM))
		return 0;
	/* an engine from the pool was another thread's: this one needs the
	 * context current for the launches */
	if (thread_ctx())
		return 0;
	c = cb_get();
	if (!c)
		return 0;
	if (dk == GDAK_MEM_GPU && len <= cb_max && (sk == GDAK_MEM_GPU || !t->src_busy)) {
		if (!len) {
			t->batch = NULL;
			t->done = 1;
			t->stream = NM_CUDA_BATCH_STREAM;
			return 1;
		}
		pthread_mutex_lock(&c->lk);
		cb_add(c, dst, src, sk == GDAK_MEM_GPU, (uint32_t)len, t);
		pthread_mutex_unlock(&c->lk);
		return 1;
	}
	if (t->stream == NM_CUDA_BATCH_STREAM || cqe_stream) {
		int r = len || !cqe_stream ? cb_direct(c, dst, dk, src, sk, len, t) : 0;

		if (!len && cqe_stream) {
			t->batch = NULL;
			t->done = 1;
			t->stream = NM_CUDA_BATCH_STREAM;
		}
		return r ? r : 1;
	}
	return 0;
}

/* ---- asynchronous copies (nm_cuda.h) ------------------------------------ */

static int cb_busy_mine(void)
{
	struct cb_ctx *c = tls_cb;
	int busy;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lk);
	/* copies left on the stream by the pass end: their word now, so that
	 * the queue can be seen to land */
	if (!c->n && !c->ntail && c->direct)
		cb_flush(c, &cs.flush_other);
	cb_progress(c, 0);
	busy = cb_pending(c);
	pthread_mutex_unlock(&c->lk);
	return busy;
}

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
	if (len >= TL_MIN_LEN && __atomic_load_n(&stats_on, __ATOMIC_RELAXED) > 0)
		__atomic_store_n(&tl.last_enter, tl_now(), __ATOMIC_RELAXED);
	/* nothing in flight meets it (no stream asked for): it may overtake;
	 * GDAK_CUDA_CQE=stream: only when nothing of the thread is queued */
	if (t->stream < 0 && !t->src_busy && gdr.g && (!cqe_stream || !cb_busy_mine()) &&
	    gdr_copy(dst, (enum gdak_mem_kind)dst_kind, src, (enum gdak_mem_kind)src_kind, len)) {
		t->batch = NULL;
		t->done = 1;
		return 0;
	}
	ret = cb_start(dst, dst_kind, src, src_kind, len, t);
	if (ret)
		return ret < 0 ? ret : 0;
	t->batch = NULL;
	/* Copies in flight go round-robin over the thread's async streams so
	 * that consecutive WQEs' copies overlap; a copy whose ranges meet one
	 * still in flight is put on that copy's stream by the requester
	 * (t->stream, nm_loop.c), so it lands after it. */
	t->stream = (int)(t->stream >= 0 ? (unsigned)t->stream % async_streams
					 : tls_async_rr++ % async_streams);
	ret = thread_stream((unsigned)t->stream, &s);
	if (ret)
		return ret;
	r = ticket_event(t);
	if (r)
		return cu_errno(r);
	{
		uint64_t t0 = cs_clock(), dt;

		r = len ? cu.MemcpyAsync((nm_cu_ptr)(uintptr_t)dst, (nm_cu_ptr)(uintptr_t)src, len,
					 s)
			: 0;
		dt = cs_since(t0);
		CS_ADD(ns_memcpy, dt);
		cs_max(&cs.ns_memcpy_max, dt);
	}
	if (!r)
		r = cu.EventRecord(t->ev, s);
	CS_ADD(copies_single, 1);
	CS_ADD(calls_memcpy, len != 0);
	CS_ADD(calls_event, 1);
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
	if (t->batch)
		return cb_poll(t);
	if (!t->ev)
		return -EINVAL;
	CS_ADD(queries, 1);
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
	t->batch = NULL;
	t->done = 0;
}

/* nm_dma_ops form of the three above (struct nm_dma_ticket carries the event) */
static int cuda_copy_start(void *dst, enum gdak_mem_kind dk, const void *src,
			   enum gdak_mem_kind sk, size_t len, struct nm_dma_ticket *t)
{
	struct nm_cuda_ticket ct = { .ev = (nm_cu_event)t->ev,
				     .batch = t->batch,
				     .seq = t->seq,
				     .done = t->done,
				     .stream = t->stream,
				     .src_busy = t->src_busy };
	int r = nm_cuda_copy_start(dst, (int)dk, src, (int)sk, len, &ct);

	t->ev = ct.ev;
	t->batch = ct.batch;
	t->seq = ct.seq;
	t->done = ct.done;
	t->stream = ct.stream;
	return r;
}

static int cuda_copy_poll(struct nm_dma_ticket *t)
{
	struct nm_cuda_ticket ct = {
		.ev = (nm_cu_event)t->ev, .batch = t->batch, .seq = t->seq, .done = t->done
	};
	int r = nm_cuda_copy_poll(&ct);

	t->done = ct.done;
	return r;
}

static void cuda_ticket_fini(struct nm_dma_ticket *t)
{
	struct nm_cuda_ticket ct = {.ev = (nm_cu_event)t->ev, .done = t->done};

	nm_cuda_copy_ticket_fini(&ct);
	t->ev = NULL;
	t->batch = NULL;
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

static int cuda_batching(void)
{
	return cb_mode;
}

/* Host memory the driver maps into the GPU at the same address (a CQ ring
 * the stream can write the CQE words of). */
static int cuda_gpu_writable(const void *addr, size_t len)
{
	nm_cu_ptr d = 1;

	if (!len || thread_ctx() || cu.MemHostGetDevicePointer(&d, (void *)(uintptr_t)addr, 0) ||
	    d != (nm_cu_ptr)(uintptr_t)addr)
		return 0;
	d = 1;
	return !cu.MemHostGetDevicePointer(&d, (uint8_t *)(uintptr_t)addr + len - 1, 0) &&
	       d == (nm_cu_ptr)(uintptr_t)addr + len - 1;
}

/* nm_dma_ops.gpu_map: a GPU MR the engine did not allocate mapped through
 * GDRCopy (up to GDAK_CUDA_GDR_MAX bytes), so that small copies into and
 * out of it are CPU stores and loads as for the engine's own allocations */
static void cuda_gpu_map(const void *addr, size_t len, uint64_t *key)
{
	int r;

	*key = 0;
	if (!gdr.g || !len || nm_cuda_gdr_mapped(addr, len))
		return;
	r = nm_cuda_gdr_pin(addr, len, key);
	if (r)
		GDAK_DBG("cuda", cu_ordinal, "GDRCopy mapping of the MR at %p+%zu: %s; not mapped",
			 addr, len, gdak_strerror(r));
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
	.batching = cuda_batching,
	.cqe_tail = cuda_cqe_tail,
	.gpu_writable = cuda_gpu_writable,
	.kind_of = cuda_kind_of,
	.gpu_prepare = cuda_gpu_prepare,
	.gpu_map = cuda_gpu_map,
	.gpu_unmap = nm_cuda_gdr_unpin,
};

/* ---- counters (nm_cuda.h) ------------------------------------------------ */

void nm_cuda_stats_get(struct nm_cuda_stats *out)
{
	const uint64_t *src = (const uint64_t *)&cs;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(cs) / 8; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

void nm_cuda_stats_report(const char *when)
{
	static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
	static struct nm_cuda_stats last;
	struct nm_cuda_stats now, d;
	uint64_t *a, *b, *o;
	uint64_t batches;

	if (!stats_enabled() || !probe_result)
		return;
	tl_report(when);
	pthread_mutex_lock(&lk);
	nm_cuda_stats_get(&now);
	a = (uint64_t *)&now;
	b = (uint64_t *)&last;
	o = (uint64_t *)&d;
	for (size_t i = 0; i < sizeof(d) / 8; i++)
		o[i] = a[i] - b[i];
	d.max_batch = now.max_batch;
	d.ns_memcpy_max = now.ns_memcpy_max;
	d.ns_behind_max = now.ns_behind_max;
	d.ns_direct_gap_max = now.ns_direct_gap_max;
	last = now;
	__atomic_store_n(&cs.max_batch, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&cs.ns_memcpy_max, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&cs.ns_behind_max, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&cs.ns_direct_gap_max, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lk);
	batches = d.batches_kernel + d.batches_memop + d.batches_copy;
	if (!batches && !d.copies_single && !d.copies_sync && !d.copies_gdr && !d.cqes_stream)
		return;
	fprintf(stderr,
		"gdak cuda stats (%s, %s): batched %llu (replaced %llu, submitted %llu), "
		"single %llu, sync %llu, gdr %llu; batches %llu (kernel %llu, memop %llu, copy %llu), "
		"copies/batch %.1f, max %llu, chains/kernel %.1f; closed by poll %llu, full "
		"%llu, conflict %llu, other %llu; slot waits %llu; calls: launch %llu, memop "
		"%llu, memcpy-batch %llu, memcpy %llu, event %llu, sync %llu, query %llu; "
		"calls/batch %.2f; stream cqes %llu, direct %llu, drains %llu; unfenced values "
		"%llu; us in calls: memcpy %.1f (max %.1f), memop %.1f, launch %.1f; direct "
		"span us %.1f; open us/batch %.2f; direct behind another: %llu calls, us/call %.2f "
		"(max %.1f), gap us/call %.2f (max %.1f); dtod %llu; equal direct copies batched %llu "
		"(us in those calls %.1f); holds %llu; us in calls: memcpy-batch %.1f; cqe words "
		"unfenced %llu; wide copy kernel %llu; engines built by NIC threads %llu, ahead "
		"%llu\n",
		when, nm_cuda_path(), (unsigned long long)d.copies_batched,
		(unsigned long long)d.copies_replaced, (unsigned long long)d.copies_submitted,
		(unsigned long long)d.copies_single, (unsigned long long)d.copies_sync,
		(unsigned long long)d.copies_gdr, (unsigned long long)batches,
		(unsigned long long)d.batches_kernel, (unsigned long long)d.batches_memop,
		(unsigned long long)d.batches_copy,
		batches ? (double)d.copies_submitted / (double)batches : 0.0,
		(unsigned long long)d.max_batch,
		d.batches_kernel ? (double)d.chains / (double)d.batches_kernel : 0.0,
		(unsigned long long)d.flush_poll, (unsigned long long)d.flush_full,
		(unsigned long long)d.flush_conflict, (unsigned long long)d.flush_other,
		(unsigned long long)d.slot_waits, (unsigned long long)d.calls_launch,
		(unsigned long long)d.calls_memop, (unsigned long long)d.calls_memcpy_batch,
		(unsigned long long)d.calls_memcpy, (unsigned long long)d.calls_event,
		(unsigned long long)d.calls_sync, (unsigned long long)d.queries,
		batches ? (double)(d.calls_launch + d.calls_memop + d.calls_memcpy_batch +
				   d.queries) /
				  (double)batches
			: 0.0,
		(unsigned long long)d.cqes_stream, (unsigned long long)d.copies_direct,
		(unsigned long long)d.cqe_drains, (unsigned long long)d.values_unfenced,
		(double)d.ns_memcpy / 1e3, (double)d.ns_memcpy_max / 1e3, (double)d.ns_memop / 1e3,
		(double)d.ns_launch / 1e3, (double)d.ns_direct_span / 1e3,
		batches ? (double)d.ns_open / 1e3 / (double)batches : 0.0,
		(unsigned long long)d.calls_behind,
		d.calls_behind ? (double)d.ns_behind / 1e3 / (double)d.calls_behind : 0.0,
		(double)d.ns_behind_max / 1e3,
		d.calls_behind ? (double)d.ns_direct_gap / 1e3 / (double)d.calls_behind : 0.0,
		(double)d.ns_direct_gap_max / 1e3, (unsigned long long)d.calls_dtod,
		(unsigned long long)d.copies_dq_batched, (double)d.ns_dq_batch / 1e3,
		(unsigned long long)d.holds, (double)d.ns_memcpy_batch / 1e3,
		(unsigned long long)d.cqe_words_unfenced, (unsigned long long)d.calls_big,
		(unsigned long long)d.engines_built, (unsigned long long)d.engines_ahead);
}

static void stats_atexit(void)
{
	nm_cuda_stats_report("exit");
}

const char *nm_cuda_gdr(void)
{
	if (!probe_result)
		return "no CUDA engine";
	return gdr.why ? gdr.why
		       : "in use: GPU memory the NIC allocates, GPU MRs and GPU rings "
			 "are mapped for the CPU";
}

static char path_buf[384];

static const char *path_base(void)
{
	switch (cb_mode) {
	case CB_KERNEL:
		return "batched: one copy kernel per NIC pass";
	case CB_MEMOP:
		return "batched: stream memops for 4/8-byte values, else one copy kernel per pass";
	case CB_COPY:
		return cu.MemcpyBatch || cu.MemcpyBatch12
			       ? "batched: stream memops for 4/8-byte values, else one "
				 "cuMemcpyBatchAsync per pass (no SM)"
			       : "batched: stream memops for 4/8-byte values, else cuMemcpyAsync "
				 "each (no SM; the driver has no cuMemcpyBatchAsync)";
	default:
		return "one cuMemcpyAsync per WQE";
	}
}

const char *nm_cuda_path(void)
{
	if (!probe_result)
		return "no CUDA engine";
	return path_buf;
}

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

extern const char nm_cuda_copy_ptx[]; /* nm_cuda_copy_ptx.c */

/* The copy kernels' module (nm_cuda_copy_ptx.c), loaded once: 0 or the
 * driver's error. */
static nm_cu_result ck_module(nm_cu_module *m)
{
	nm_cu_result r = 0;

	if (!ck_mod)
		r = cu.ModuleLoadData(&ck_mod, nm_cuda_copy_ptx);
	*m = r ? NULL : ck_mod;
	return r;
}

/* One of the copy kernels: looked up in the module, then launched once,
 * one block, with args (empty work) and waited for on a stream of its own -
 * a lazily loaded kernel's first launch may wait for the device, which must
 * not happen once an application kernel spins on a CQE.  0 or the
 * driver's error. */
static nm_cu_result ck_load(const char *entry, nm_cu_function *f, unsigned threads, void **args)
{
	nm_cu_module mod = NULL;
	nm_cu_stream s = NULL;
	nm_cu_result r = ck_module(&mod);

	if (!r)
		r = cu.ModuleGetFunction(f, mod, entry);
	if (!r)
		r = cu.StreamCreate(&s, NM_CU_STREAM_NON_BLOCKING);
	if (!r)
		r = cu.LaunchKernel(*f, 1, 1, 1, threads, 1, 1, 0, s, args, NULL);
	if (!r)
		r = cu.StreamSynchronize(s);
	if (s)
		cu.StreamDestroy(s);
	return r;
}

/* GDAK_CUDA_BIG=kernel (auto: with a batch mode that launches kernels
 * anyway; copy promises no SM): load the wide copy kernel and launch it
 * once, empty (a lazily loaded kernel's first launch may wait for the
 * device); its grid: 4 blocks per SM.  Any failure leaves the driver's
 * copies. */
static void big_load(void)
{
	unsigned long long zero = 0;
	nm_cu_ptr null = 0;
	void *args[3] = { &null, &null, &zero };
	nm_cu_result r;
	int sms = 0;

	if (big_mode == 1 || (big_mode == 0 && cb_mode != CB_KERNEL && cb_mode != CB_MEMOP))
		return;
	if (!cu.ModuleLoadData || !cu.ModuleGetFunction || !cu.LaunchKernel) {
		GDAK_WARN(
			"cuda", cu_ordinal,
			"libcuda.so.1 lacks the module API: GDAK_CUDA_BIG=kernel goes on as driver");
		return;
	}
	r = ck_load(NM_CK_BIG_ENTRY, &big_fn, NM_CK_BIG_THREADS, args);
	if (r) {
		GDAK_WARN(
			"cuda", cu_ordinal,
			"the wide copy kernel does not load or run (%s): GDAK_CUDA_BIG=kernel goes "
			"on as driver",
			cu_err(r));
		big_fn = NULL;
		return;
	}
	if (cu.DeviceGetAttribute && !cu.DeviceGetAttribute(&sms, 16 /* SM count */, cu_device) &&
	    sms > 0 && sms < 1 << 20)
		big_grid = 4 * (unsigned)sms;
}

/*
 * GDAK_CUDA_BATCH=kernel: load the copy kernel and launch it once, empty,
 * now - before any application kernel waits on the NIC: the first launch
 * of a lazily loaded kernel may have to wait for the device, which a
 * kernel spinning on a CQE would never let it do.
 */
static void cb_setup(void *lib)
{
	unsigned long long m;
	nm_cu_result r = 0;
	uint32_t zero = 0;
	nm_cu_ptr null = 0;
	unsigned long long seq0 = 0;
	void *args[6] = { &null, &null, &zero, &null, &null, &seq0 };

	stats_enabled();
	if (gdak_env_choice("GDAK_CUDA_BATCH", &cb_mode) < 0)
		cb_mode = 0;
	if (gdak_env_uint("GDAK_CUDA_BATCH_MAX", &m) >= 0 && m)
		cb_max = (uint32_t)m;
	if (gdak_env_choice("GDAK_CUDA_CQE", &cqe_stream) < 0)
		cqe_stream = 0;
	{
		int on = 0;

		value_fences = gdak_env_bool("GDAK_CUDA_VALUE_FENCES", &on) == 0 && on;
		on = 0;
		pass_word = gdak_env_bool("GDAK_CUDA_PASS_WORD", &on) == 0 && on;
		on = 1;
		same_off = gdak_env_bool("GDAK_CUDA_SAME", &on) == 0 && !on;
		on = 1;
		dtod = !(gdak_env_bool("GDAK_CUDA_DTOD", &on) == 0 && !on);
		on = 0;
		direct_batch = gdak_env_bool("GDAK_CUDA_DIRECT_BATCH", &on) == 0 && on;
		if (gdak_env_choice("GDAK_CUDA_BIG", &big_mode) < 0)
			big_mode = 0;
		on = 1;
		pre_query = !(gdak_env_bool("GDAK_CUDA_PREQUERY", &on) == 0 && !on);
		if (gdak_env_uint("GDAK_CUDA_HOLD", &m) == 0)
			hold_inflight = (unsigned)m;
		on = 1;
		cqe_fences = !(gdak_env_bool("GDAK_CUDA_CQE_FENCES", &on) == 0 && !on);
	}
	if (!cb_mode) {
		cqe_stream = 0;
		return;
	}
	*(void **)(&cu.ModuleLoadData) = dlsym(lib, "cuModuleLoadData");
	*(void **)(&cu.ModuleGetFunction) = dlsym(lib, "cuModuleGetFunction");
	*(void **)(&cu.LaunchKernel) = dlsym(lib, "cuLaunchKernel");
	*(void **)(&cu.StreamQuery) = dlsym(lib, "cuStreamQuery");
	*(void **)(&cu.StreamWriteValue32) = dlsym(lib, "cuStreamWriteValue32_v2");
	*(void **)(&cu.StreamWriteValue64) = dlsym(lib, "cuStreamWriteValue64_v2");
	*(void **)(&cu.StreamBatchMemOp) = dlsym(lib, "cuStreamBatchMemOp_v2");
	*(void **)(&cu.MemcpyDtoDAsync) = dlsym(lib, "cuMemcpyDtoDAsync_v2");
	*(void **)(&cu.MemcpyBatch) = dlsym(lib, "cuMemcpyBatchAsync_v2");
	if (!cu.MemcpyBatch) /* CUDA 12.8/12.9: the form with failIdx */
		*(void **)(&cu.MemcpyBatch12) = dlsym(lib, "cuMemcpyBatchAsync");
	if (!cu.StreamQuery) {
		GDAK_WARN("cuda", cu_ordinal,
			  "libcuda.so.1 lacks cuStreamQuery: GDAK_CUDA_BATCH off");
		cb_mode = CB_OFF;
		return;
	}
	if (cb_mode == CB_MEMOP && !cu.StreamBatchMemOp) {
		GDAK_WARN("cuda", cu_ordinal,
			  "libcuda.so.1 lacks cuStreamBatchMemOp_v2: "
			  "GDAK_CUDA_BATCH=memop goes on as kernel");
		cb_mode = CB_KERNEL;
	}
	if (cb_mode == CB_COPY && !cu.StreamWriteValue64) {
		GDAK_WARN("cuda", cu_ordinal,
			  "libcuda.so.1 lacks cuStreamWriteValue64_v2: "
			  "GDAK_CUDA_BATCH=copy goes on as kernel");
		cb_mode = CB_KERNEL;
	}
	if (cqe_stream && (!cu.StreamWriteValue64 || !cu.StreamWriteValue32)) {
		GDAK_WARN("cuda", cu_ordinal,
			  "libcuda.so.1 lacks cuStreamWriteValue64_v2: GDAK_CUDA_CQE=stream off, "
			  "the CPU writes every CQE");
		cqe_stream = 0;
	}
	if (thread_ctx()) {
		cb_mode = CB_OFF;
		cqe_stream = 0;
		return;
	}
	*(void **)(&cu.DeviceGetAttribute) = dlsym(lib, "cuDeviceGetAttribute");
	big_load();
	if (cb_mode == CB_COPY) {
		/* the copy engines and the front end only: no batch kernel */
		pthread_key_create(&cb_key, cb_release);
		return;
	}
	if (!cu.ModuleLoadData || !cu.ModuleGetFunction || !cu.LaunchKernel) {
		GDAK_WARN("cuda", cu_ordinal,
			  "libcuda.so.1 lacks the module API: "
			  "GDAK_CUDA_BATCH=kernel off");
		cb_mode = CB_OFF;
		return;
	}
	r = ck_load(NM_CK_ENTRY, &cb_fn, NM_CK_THREADS, args);
	if (r) {
		GDAK_WARN("cuda", cu_ordinal,
			  "the batch copy kernel does not load or run (%s): "
			  "GDAK_CUDA_BATCH=kernel off, GPU copies go one by one",
			  cu_err(r));
		cb_mode = 0;
		return;
	}
	pthread_key_create(&cb_key, cb_release);
}

static void probe_once(void)
{
	struct gdak_cuda_driver d;
	enum gdak_cuda_step step;
	char name[128] = "";
	int dma = 1;
	void *lib;

	if (gdak_env_bool("GDAK_CUDA_DMA", &dma) == 0 && !dma) {
		GDAK_INFO("cuda", 0, "GDAK_CUDA_DMA=%s: host memory engine",
			  gdak_env_raw("GDAK_CUDA_DMA"));
		return;
	}
	if (gdak_cuda_open(&d)) {
		GDAK_DBG("cuda", 0, "no CUDA driver (%s): host memory engine", d.why);
		return;
	}
	lib = d.lib;
	SYM(DeviceGetName, "cuDeviceGetName");
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
	/* optional: GDAK_CUDA_STATS's timeline */
	*(void **)(&cu.EventSynchronize) = dlsym(lib, "cuEventSynchronize");
	*(void **)(&cu.EventElapsedTime) = dlsym(lib, "cuEventElapsedTime_v2");
	if (!cu.EventElapsedTime)
		*(void **)(&cu.EventElapsedTime) = dlsym(lib, "cuEventElapsedTime");
	/* optional: SYNC_MEMOPS before a GDRCopy pin */
	*(void **)(&cu.PointerSetAttribute) = dlsym(lib, "cuPointerSetAttribute");
	/* optional: the GPU-memory ring engine's CQE owner words (nm_ring_gpu.c) */
	*(void **)(&cu.StreamWriteValue32) = dlsym(lib, "cuStreamWriteValue32_v2");
	*(void **)(&cu.StreamBatchMemOp) = dlsym(lib, "cuStreamBatchMemOp_v2");

	step = gdak_cuda_start(&d);
	if (step == GDAK_CUDA_NO_SYMBOL) {
		GDAK_WARN("cuda", 0, "libcuda.so.1 lacks %s: GPU memory engine off", d.why);
		goto fail;
	}
	if (step == GDAK_CUDA_NO_INIT) {
		GDAK_INFO("cuda", 0, "cuInit: %s: host memory engine", cu_err(d.result));
		goto fail;
	}
	if (step == GDAK_CUDA_NO_DEVICE) {
		GDAK_INFO("cuda", 0, "no CUDA device: host memory engine");
		goto fail;
	}
	cu_ordinal = d.ordinal;
	if (d.ordinal != d.asked)
		GDAK_ERR("cuda", 0, "GDAK_CUDA_DEVICE=%d: only %d device(s); using device 0",
			 d.asked, d.count);
	if (step != GDAK_CUDA_READY) {
		GDAK_WARN("cuda", cu_ordinal, "primary context: %s: host memory engine",
			  cu_err(d.result));
		goto fail;
	}
	cu_ctx = (nm_cu_ctx)d.ctx;
	cu_device = d.device;
	cu.DeviceGetName(name, sizeof(name) - 1, d.device);
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
	cb_setup(lib);
	if (!cb_mode)
		cqe_stream = 0;
	snprintf(path_buf, sizeof(path_buf), "%s%s%s", path_base(),
		 big_fn ? "; larger GPU->GPU copies: the wide copy kernel (GDAK_CUDA_BIG=kernel)"
			: "",
		 cqe_stream ? "; CQEs stream-ordered behind the data (GDAK_CUDA_CQE=stream)" : "");
	gdr_setup();
	/* the library stays loaded for the life of the process */
	probe_result = &nm_cuda_ops;
	GDAK_INFO("cuda", cu_ordinal,
		  "CUDA memory engine on device %d (%s); copies of %zu+ "
		  "bytes on %u stream(s); GPU-memory WRITEs: %s",
		  cu_ordinal, name, copy_split, copy_streams, nm_cuda_path());
	atexit(stats_atexit);
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

/* The GPU-memory ring engine (nm_ring_gpu.c) drives the driver itself:
 * stream memory operations and copies on a stream of its own. */
const struct nm_cu_api *nm_cuda_api(void)
{
	return nm_cuda_dma_probe() ? &cu : NULL;
}

int nm_cuda_thread_ctx(void)
{
	return thread_ctx();
}

const char *nm_cuda_strerror(nm_cu_result r)
{
	return cu_err(r);
}
