/* SPDX-License-Identifier: MIT */
/*
 * gpumem_fake.c - a stand-in libcuda.so.1 for the NIC model's CUDA memory
 * engine (nic_model/nm_cuda.c) on machines without a GPU: enough of the
 * driver API for the engine's per-copy path and its batch copy kernel, so
 * that gdak.nic.gpu_batch runs the real engine code in CI.
 *
 * Strict where a GPU is:
 *   - "device memory" is a memfd mapped twice: the addresses handed out are
 *     a PROT_NONE view (a NIC-thread load or store through one faults, as
 *     it would on real GPU memory); copies go through a writable view;
 *   - the copy kernel (nic_model/nm_cuda_kern.h) may only touch device
 *     memory and pinned host memory (its descriptors, its staging): anything
 *     else is an illegal address, sticky for the process like on a GPU;
 *   - work is asynchronous: a stream's operations run only when an event is
 *     queried or a stream synchronised, a few at a time and interleaved over
 *     streams, so a NIC that writes a CQE before its copy's event has fired
 *     finds the data not there yet;
 *   - the kernel's chains run interleaved, last chain first, one descriptor
 *     at a time (blocks run in any order on a GPU): a batch that relied on
 *     an order between chains gets it wrong here;
 *   - a stream write-value lands as release stores, its last byte last
 *     (store_value): a CPU that polls a CQE's owner byte or the NIC's
 *     completion word with an acquire load sees all the stream did before;
 *     one with NO_MEMORY_BARRIER lands before everything queued since the
 *     stream's last barrier (enqueue);
 *   - with GDAK_FAKE_GPU_ASYNC=1 a thread of the stand-in also runs work
 *     every few tens of microseconds, as a GPU does with nobody asking
 *     (stream-ordered CQEs, GDAK_CUDA_CQE=stream, need it: there the NIC
 *     asks nothing).
 * Test hooks (looked up with dlsym): gdak_fake_gpu_hold (stop running
 * work), gdak_fake_gpu_rw (the writable view of device memory),
 * gdak_fake_gpu_bar_copy (a GDRCopy mapping's loads and stores, locked),
 * gdak_fake_gpu_sync_memops (cuPointerSetAttribute SYNC_MEMOPS calls),
 * gdak_fake_gpu_stats (kernel launches, copies, descriptors run),
 * gdak_fake_gpu_unfenced (write-values without a barrier),
 * gdak_fake_gpu_copies_queued (copies accepted), gdak_fake_gpu_dtod and
 * gdak_fake_gpu_big (cuMemcpyDtoDAsync calls, wide copy kernel launches),
 * gdak_fake_gpu_watch / gdak_fake_gpu_watched (the order in which the
 * last byte of each 64-byte slot of a range - a CQ's owner bytes - was
 * written, by which kind of operation, with which value).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "nm_cuda_kern.h"

#define DEV_LEN (256u << 20)
#define MAX_ALLOCS 4096
#define MAX_STREAMS 256
#define DEVICE_NAME "gdak fake GPU (gpumem)"
#define API __attribute__((visibility("default")))
/* The exported functions are the driver's ABI, looked up by dlsym. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#include "fake_cuda_mem.h"

enum {
	OP_COPY,
	OP_EVENT,
	OP_KERNEL,
	OP_VALUE
};

struct fevent {
	int pending; /* records queued and not yet run */
};

struct fop {
	int kind;
	devptr dst, src;
	size_t len;
	void *stage; /* a pageable source, copied when enqueued */
	struct fevent *ev;
	uint64_t desc, chain, count, done, seq;
	uint32_t nchain;
	int nobar; /* OP_VALUE: CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER */
	struct fop *next;
};

struct fstream {
	struct fop *head, *tail;
	int live;
};

static int sticky;
static __thread int current;
static struct fstream streams[MAX_STREAMS];
static unsigned rr;
static int held, no_done;
static unsigned long long n_launch, n_copy, n_desc, n_memop, n_batch_memop, n_batch_copy, n_nobar,
	n_copy_q, n_dtod, n_big;
static int module_magic, func_magic, func_big_magic;

/* One of the counters below, read under the lock. */
static unsigned long long counter(const unsigned long long *n)
{
	unsigned long long v;

	pthread_mutex_lock(&lock);
	v = *n;
	pthread_mutex_unlock(&lock);
	return v;
}

API void gdak_fake_gpu_hold(int on)
{
	pthread_mutex_lock(&lock);
	held = on;
	pthread_mutex_unlock(&lock);
}

API unsigned long long gdak_fake_gpu_memops(void)
{
	return counter(&n_memop);
}

/* Stream write-values accepted with NO_MEMORY_BARRIER. */
API unsigned long long gdak_fake_gpu_unfenced(void)
{
	return counter(&n_nobar);
}

/* Copies accepted (cuMemcpyAsync, each copy of a cuMemcpyBatchAsync). */
API unsigned long long gdak_fake_gpu_copies_queued(void)
{
	return counter(&n_copy_q);
}

/* The copy kernel stops writing its completion word (the engine must then
 * see completions through the events alone). */
API void gdak_fake_gpu_no_done(int on)
{
	pthread_mutex_lock(&lock);
	no_done = on;
	pthread_mutex_unlock(&lock);
}

API void gdak_fake_gpu_stats(unsigned long long *launches, unsigned long long *copies,
			     unsigned long long *descs)
{
	pthread_mutex_lock(&lock);
	*launches = n_launch;
	*copies = n_copy;
	*descs = n_desc;
	pthread_mutex_unlock(&lock);
}

/* cuStreamBatchMemOp and cuMemcpyBatchAsync calls accepted. */
API void gdak_fake_gpu_batch_calls(unsigned long long *memop, unsigned long long *copy)
{
	pthread_mutex_lock(&lock);
	*memop = n_batch_memop;
	*copy = n_batch_copy;
	pthread_mutex_unlock(&lock);
}

/* Owner-byte watch: writes of byte 63 of each 64-byte slot of [lo, lo+len) */
struct fwatch {
	uint32_t slot;
	uint8_t val;
	uint8_t by_value; /* a stream write-value (else a copy) */
};
#define WATCH_MAX 65536
static devptr watch_lo;
static size_t watch_len;
static struct fwatch watch_log[WATCH_MAX];
static unsigned watch_n;

API void gdak_fake_gpu_watch(devptr lo, size_t len)
{
	pthread_mutex_lock(&lock);
	watch_lo = lo;
	watch_len = len;
	watch_n = 0;
	pthread_mutex_unlock(&lock);
}

/* Up to max records, oldest first; returns how many there are. */
API unsigned gdak_fake_gpu_watched(struct fwatch *out, unsigned max)
{
	unsigned n;

	pthread_mutex_lock(&lock);
	n = watch_n;
	memcpy(out, watch_log, sizeof(*out) * (n < max ? n : max));
	pthread_mutex_unlock(&lock);
	return n;
}

/* Under lock: a write of len bytes (now at d) to device address dst. */
static void watch_note(devptr dst, const uint8_t *d, size_t len, int by_value)
{
	if (!watch_len || dst + len <= watch_lo || dst >= watch_lo + watch_len)
		return;
	for (size_t i = 0; i < len; i++) {
		devptr a = dst + i;

		if (a < watch_lo || a >= watch_lo + watch_len || ((a - watch_lo) & 63) != 63)
			continue;
		if (watch_n < WATCH_MAX) {
			watch_log[watch_n].slot = (uint32_t)((a - watch_lo) / 64);
			watch_log[watch_n].val = d[i];
			watch_log[watch_n].by_value = (uint8_t)by_value;
		}
		watch_n++;
	}
}

API void *gdak_fake_gpu_rw(devptr p, size_t len)
{
	void *r;

	pthread_mutex_lock(&lock);
	r = dev_rw(p, len);
	pthread_mutex_unlock(&lock);
	return r;
}

/* A CPU load or store through a GDRCopy mapping (gdr_fake.c), under the
 * lock the device's own operations run under: a BAR access is ordered with
 * the GPU's accesses to the same memory, and the NIC thread's CQE stores
 * through a mapping meet the test's device-side reads only here. */
API void gdak_fake_gpu_bar_copy(void *dst, const void *src, size_t len)
{
	pthread_mutex_lock(&lock);
	memcpy(dst, src, len);
	pthread_mutex_unlock(&lock);
}

/* What a kernel may touch: device memory or pinned host memory. */
static uint8_t *kptr(devptr p, size_t len)
{
	uint8_t *d = dev_rw(p, len);

	if (d)
		return d;
	return pinned(p, len) ? (uint8_t *)(uintptr_t)p : NULL;
}

static int need_ctx(void)
{
	if (!inited)
		return E_NOT_INITIALIZED;
	return current ? OK : E_INVALID_CONTEXT;
}

/*
 * A stream write-value (4 or 8 bytes, aligned) as the GPU does it: after
 * a memory barrier (everything before it on the stream is visible first),
 * one store - which a CPU poller sees with an acquire load of the whole
 * word (the NIC's completion word) or of its last byte (a CQE's op_own,
 * the word being a CQE's last 8 bytes).  C11 has no mixed-size atomics and
 * ThreadSanitizer pairs a release only with an acquire at the same
 * address, so the store is two release stores: the word with its last
 * byte still the old one, then the last byte.  Whoever polls either sees
 * everything before the write-value; a whole-word reader may see the last
 * byte one step late (the NIC's completion word never changes it).
 * Little-endian like the GPU: the last byte is the value's top one.
 */
static void store_value(uint8_t *d, uint64_t v, size_t len)
{
	uint8_t b[8];

	if (len == 8) {
		uint64_t w = __atomic_load_n((uint64_t *)(void *)d, __ATOMIC_RELAXED);

		memcpy(b, &v, 8);
		memcpy(&w, b, 7);
		__atomic_store_n((uint64_t *)(void *)d, w, __ATOMIC_RELEASE);
	} else {
		uint32_t w = __atomic_load_n((uint32_t *)(void *)d, __ATOMIC_RELAXED),
			 v32 = (uint32_t)v;

		memcpy(b, &v32, 4);
		memcpy(&w, b, 3);
		__atomic_store_n((uint32_t *)(void *)d, w, __ATOMIC_RELEASE);
	}
	__atomic_store_n(d + len - 1, b[len - 1], __ATOMIC_RELEASE);
}

/* Under lock: run one operation. */
static void run_op(struct fop *o)
{
	if (o->kind == OP_EVENT) {
		o->ev->pending--;
		return;
	}
	if (o->kind == OP_VALUE) {
		/* a stream write-value: device memory or pinned host memory */
		uint8_t *d = kptr(o->dst, o->len);

		if (!d) {
			sticky = E_ILLEGAL_ADDRESS;
			return;
		}
		store_value(d, o->seq, o->len);
		watch_note(o->dst, d, o->len, 1);
		n_memop++;
		return;
	}
	if (o->kind == OP_COPY) {
		/* any side may be host memory (unified addressing) */
		uint8_t *d = dev_rw(o->dst, o->len), *s;

		if (!d)
			d = (uint8_t *)(uintptr_t)o->dst;
		s = o->stage ? (uint8_t *)o->stage : dev_rw(o->src, o->len);
		if (!s)
			s = (uint8_t *)(uintptr_t)o->src;
		memmove(d, s, o->len);
		watch_note(o->dst, d, o->len, 0);
		n_copy++;
		free(o->stage);
		return;
	}
	/* the batch copy kernel: chains interleaved, last one first */
	{
		const uint32_t *ch = (const uint32_t *)kptr(o->chain, 4 * ((size_t)o->nchain + 1));
		uint32_t *pos, left = 0;

		n_launch++;
		if (o->count && !dev_rw(o->count, 4)) {
			sticky = E_ILLEGAL_ADDRESS;
			return;
		}
		if (!o->nchain)
			goto out;
		pos = calloc(o->nchain, sizeof(*pos));
		if (!ch || !pos) {
			sticky = E_ILLEGAL_ADDRESS;
			free(pos);
			return;
		}
		for (uint32_t c = 0; c < o->nchain; c++) {
			pos[c] = ch[c];
			left += ch[c + 1] - ch[c];
		}
		while (left && !sticky) {
			for (uint32_t k = o->nchain; k-- > 0;) {
				const struct nm_ck_desc *e;
				uint8_t *d;
				const uint8_t *s;

				if (pos[k] >= ch[k + 1])
					continue;
				e = (const struct nm_ck_desc *)kptr(
					o->desc + (uint64_t)pos[k] * sizeof(*e), sizeof(*e));
				pos[k]++;
				left--;
				if (!e) {
					sticky = E_ILLEGAL_ADDRESS;
					break;
				}
				d = kptr(e->dst, e->len);
				s = (e->flags & NM_CK_F_INL) ? (e->len <= NM_CK_INL ? e->inl : NULL)
							     : kptr(e->src, e->len);
				if (!d || !s) {
					sticky = E_ILLEGAL_ADDRESS;
					break;
				}
				memmove(d, s, e->len);
				n_desc++;
			}
		}
		free(pos);
	out:
		/* the last block's completion word */
		if (o->count && !sticky && !no_done) {
			uint64_t *w = (uint64_t *)kptr(o->done, 8);

			if (!w)
				sticky = E_ILLEGAL_ADDRESS;
			else
				__atomic_store_n(w, o->seq, __ATOMIC_RELEASE);
		}
	}
}

/* Under lock: a little progress on every stream (ignores `held` when all). */
static void progress(int all, struct fstream *only)
{
	if (held && !all)
		return;
	for (unsigned i = 0; i < MAX_STREAMS; i++) {
		struct fstream *s = &streams[(rr + i) % MAX_STREAMS];
		int budget = all ? 1 << 30 : 2;

		if (only && s != only)
			continue;
		while (s->head && budget--) {
			struct fop *o = s->head;

			s->head = o->next;
			if (!s->head)
				s->tail = NULL;
			run_op(o);
			free(o);
		}
	}
	rr++;
}

static void *async_main(void *arg);

static void async_start(void)
{
	pthread_t t;
	pthread_attr_t at;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &at, async_main, NULL);
	pthread_attr_destroy(&at);
}

/*
 * Under lock.  A write-value with NO_MEMORY_BARRIER may become visible
 * before the writes issued ahead of it on its stream (copies, kernels,
 * other such write-values), up to the last operation that orders them (a
 * write-value with its barrier, an event): here it is queued right behind
 * that one, i.e. it lands before all of them, the latest first - an engine
 * that dropped a barrier it needs gets the bytes wrong.
 */
static int enqueue(struct fstream *s, struct fop *o)
{
	struct fop **at;

	if (!s || s < streams || s >= streams + MAX_STREAMS || !s->live) {
		free(o->stage);
		free(o);
		return E_INVALID_HANDLE;
	}
	o->next = NULL;
	if (o->kind == OP_VALUE && o->nobar) {
		struct fop *fence = NULL;

		for (struct fop *p = s->head; p; p = p->next)
			if ((p->kind == OP_VALUE && !p->nobar) || p->kind == OP_EVENT)
				fence = p;
		at = fence ? &fence->next : &s->head;
		o->next = *at;
		*at = o;
		if (!o->next)
			s->tail = o;
		return OK;
	}
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	return OK;
}

static void *async_main(void *arg)
{
	struct timespec ts = { 0, 30000 };

	(void)arg;
	for (;;) {
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&lock);
		progress(0, NULL);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

API int cuInit(unsigned flags)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int r = fake_init();
	const char *a = getenv("GDAK_FAKE_GPU_ASYNC");

	(void)flags;
	if (!r && a && !strcmp(a, "1"))
		pthread_once(&once, async_start);
	return r;
}

/* what gdak-info asks (it shows the fake like a GPU) */
API int cuDriverGetVersion(int *v)
{
	*v = 13000;
	return OK;
}

API int cuDeviceTotalMem_v2(size_t *b, int dev)
{
	(void)dev;
	*b = DEV_LEN;
	return OK;
}

API int cuDeviceGetAttribute(int *v, int attr, int dev)
{
	(void)dev;
	/* compute capability 9.0; 2 SMs (the wide copy's grid) */
	*v = attr == 75 ? 9 : attr == 16 ? 2 : 0;
	return OK;
}

static int primary = 0x5ca1ab1e;

API int cuDevicePrimaryCtxRetain(void **c, int dev)
{
	if (!inited)
		return E_NOT_INITIALIZED;
	if (dev != 0)
		return E_INVALID_VALUE;
	*c = &primary;
	return OK;
}

API int cuCtxSetCurrent(void *c)
{
	current = c == &primary;
	return c && !current ? E_INVALID_CONTEXT : OK;
}

API int cuMemFreeHost(void *p)
{
	return fake_host_free(p);
}

API int cuMemHostGetDevicePointer_v2(devptr *d, void *h, unsigned flags)
{
	int ok;

	(void)flags;
	pthread_mutex_lock(&lock);
	ok = pinned((devptr)(uintptr_t)h, 1);
	pthread_mutex_unlock(&lock);
	*d = (devptr)(uintptr_t)h;
	return ok ? OK : E_INVALID_VALUE;
}

API int cuPointerGetAttribute(void *data, int attr, devptr p)
{
	int r = E_INVALID_VALUE;

	pthread_mutex_lock(&lock);
	if (attr == 2 && dev_rw(p, 1)) {
		*(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
		r = OK;
	} else if (attr == 2 && pinned(p, 1)) {
		*(unsigned *)data = 1; /* CU_MEMORYTYPE_HOST */
		r = OK;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* SYNC_MEMOPS (6) on device memory: counted (gdak_fake_gpu_sync_memops);
 * this stand-in's synchronous copies are synchronous anyway */
static unsigned long long n_sync_memops;

API int cuPointerSetAttribute(const void *value, int attr, devptr p)
{
	int r = E_INVALID_VALUE;

	pthread_mutex_lock(&lock);
	if (attr == 6 && value && *(const unsigned *)value <= 1 && dev_rw(p, 1)) {
		n_sync_memops++;
		r = OK;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

API unsigned long long gdak_fake_gpu_sync_memops(void)
{
	unsigned long long n;

	pthread_mutex_lock(&lock);
	n = n_sync_memops;
	pthread_mutex_unlock(&lock);
	return n;
}

API int cuStreamCreate(struct fstream **s, unsigned flags)
{
	int r = need_ctx();

	(void)flags;
	if (r)
		return r;
	r = E_OUT_OF_MEMORY;
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < MAX_STREAMS; i++)
		if (!streams[i].live) {
			memset(&streams[i], 0, sizeof(streams[i]));
			streams[i].live = 1;
			*s = &streams[i];
			r = OK;
			break;
		}
	pthread_mutex_unlock(&lock);
	return r;
}

API int cuStreamSynchronize(struct fstream *s)
{
	int r;

	pthread_mutex_lock(&lock);
	progress(1, s);
	r = sticky;
	pthread_mutex_unlock(&lock);
	return r;
}

API int cuStreamDestroy_v2(struct fstream *s)
{
	pthread_mutex_lock(&lock);
	progress(1, s);
	s->live = 0;
	pthread_mutex_unlock(&lock);
	return OK;
}

static int memcpy_async(devptr dst, devptr src, size_t len, struct fstream *s)
{
	struct fop *o;
	int r = need_ctx();

	if (r)
		return r;
	o = calloc(1, sizeof(*o));
	if (!o)
		return E_OUT_OF_MEMORY;
	o->kind = OP_COPY;
	o->dst = dst;
	o->src = src;
	o->len = len;
	pthread_mutex_lock(&lock);
	if (sticky) {
		pthread_mutex_unlock(&lock);
		free(o);
		return sticky;
	}
	/* a pageable source is staged by the driver before the call returns */
	if (!dev_rw(src, len) && !pinned(src, len)) {
		o->stage = malloc(len ? len : 1);
		if (o->stage)
			memcpy(o->stage, (const void *)(uintptr_t)src, len);
	}
	r = enqueue(s, o);
	if (!r)
		n_copy_q++;
	pthread_mutex_unlock(&lock);
	return r;
}

API int cuMemcpyAsync(devptr dst, devptr src, size_t len, struct fstream *s)
{
	return memcpy_async(dst, src, len, s);
}

/* The device-to-device form: both ends must be live device memory. */
API int cuMemcpyDtoDAsync_v2(devptr dst, devptr src, size_t len, struct fstream *s)
{
	if (len && (!dev_rw(dst, len) || !dev_rw(src, len)))
		return E_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	n_dtod++;
	pthread_mutex_unlock(&lock);
	return memcpy_async(dst, src, len, s);
}

/* cuMemcpyDtoDAsync calls. */
API unsigned long long gdak_fake_gpu_dtod(void)
{
	return counter(&n_dtod);
}

/* The synchronous copies a program (the tests playing the GPU) uses: done
 * at once, into or out of live device memory only. */
API int cuMemcpyHtoD_v2(devptr dst, const void *src, size_t len)
{
	uint8_t *d;
	int r = need_ctx();

	if (r)
		return r;
	pthread_mutex_lock(&lock);
	d = dev_rw(dst, len);
	if (d) {
		memcpy(d, src, len);
		watch_note(dst, d, len, 0);
	}
	pthread_mutex_unlock(&lock);
	return d ? OK : E_INVALID_VALUE;
}

API int cuMemcpyDtoH_v2(void *dst, devptr src, size_t len)
{
	uint8_t *s;
	int r = need_ctx();

	if (r)
		return r;
	pthread_mutex_lock(&lock);
	s = dev_rw(src, len);
	if (s)
		memcpy(dst, s, len);
	pthread_mutex_unlock(&lock);
	return s ? OK : E_INVALID_VALUE;
}

static int write_value(struct fstream *s, devptr addr, uint64_t v, size_t len, unsigned flags)
{
	struct fop *o;
	int r = need_ctx();

	if (r)
		return r;
	if ((flags & ~1u) || (addr & (len - 1)))
		return E_INVALID_VALUE;
	o = calloc(1, sizeof(*o));
	if (!o)
		return E_OUT_OF_MEMORY;
	o->kind = OP_VALUE;
	o->dst = addr;
	o->len = len;
	o->seq = v;
	o->nobar = flags & 1;
	pthread_mutex_lock(&lock);
	r = sticky ? sticky : enqueue(s, o);
	if (!r && o->nobar)
		n_nobar++;
	pthread_mutex_unlock(&lock);
	return r;
}

API int cuStreamWriteValue32_v2(struct fstream *s, devptr addr, uint32_t v, unsigned flags)
{
	return write_value(s, addr, v, 4, flags);
}

API int cuStreamWriteValue64_v2(struct fstream *s, devptr addr, uint64_t v, unsigned flags)
{
	return write_value(s, addr, v, 8, flags);
}

/* The writeValue member of CUstreamBatchMemOpParams (48 bytes). */
struct fmemop {
	uint32_t op, pad0;
	uint64_t addr, value;
	uint32_t flags, pad1;
	uint64_t alias, pad2;
};

API int cuStreamBatchMemOp_v2(struct fstream *s, unsigned count, struct fmemop *ops, unsigned flags)
{
	int r = need_ctx();

	if (r)
		return r;
	if (!count || count >= 256 || flags || !ops)
		return E_INVALID_VALUE;
	/* write-value 32 (2) and 64 (5) only; flags: NO_MEMORY_BARRIER or none */
	for (unsigned i = 0; i < count; i++)
		if ((ops[i].op != 2 && ops[i].op != 5) || (ops[i].flags & ~1u) ||
		    (ops[i].addr & (ops[i].op == 5 ? 7 : 3)))
			return E_INVALID_VALUE;
	for (unsigned i = 0; i < count; i++) {
		r = write_value(s, ops[i].addr,
				ops[i].op == 5 ? ops[i].value : (uint32_t)ops[i].value,
				ops[i].op == 5 ? 8 : 4, ops[i].flags);
		if (r)
			return r;
	}
	pthread_mutex_lock(&lock);
	n_batch_memop++;
	pthread_mutex_unlock(&lock);
	return OK;
}

/* CUmemcpyAttributes */
struct fcpattr {
	int32_t order, src_loc[2], dst_loc[2];
	uint32_t flags;
};

#ifndef FAKE_NO_MEMCPY_BATCH /* the driver before CUDA 12.8 (a second build) */
/* CUDA 13's cuMemcpyBatchAsync.  The copies of a batch land in no
 * particular order: here the last one first, so an engine that put two
 * copies with meeting ranges into one batch gets them wrong.  Strict about
 * what the engine promises: device-memory destinations, sources in device
 * or pinned memory (its staging). */
API int cuMemcpyBatchAsync_v2(devptr *dsts, devptr *srcs, size_t *sizes, size_t count,
			      struct fcpattr *attrs, size_t *idx, size_t nattrs, struct fstream *s)
{
	int r = need_ctx();

	if (r)
		return r;
	if (!count || !dsts || !srcs || !sizes || !attrs || !idx || !nattrs || nattrs > count ||
	    idx[0] != 0)
		return E_INVALID_VALUE;
	for (size_t i = 0; i < nattrs; i++)
		if (attrs[i].order < 1 || attrs[i].order > 3 || (i && idx[i] <= idx[i - 1]) ||
		    idx[i] >= count)
			return E_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < count; i++)
		if (!dev_rw(dsts[i], sizes[i]) ||
		    (!dev_rw(srcs[i], sizes[i]) && !pinned(srcs[i], sizes[i]))) {
			pthread_mutex_unlock(&lock);
			return E_INVALID_VALUE;
		}
	n_batch_copy++;
	pthread_mutex_unlock(&lock);
	for (size_t i = count; i-- > 0;) {
		r = memcpy_async(dsts[i], srcs[i], sizes[i], s);
		if (r)
			return r;
	}
	return OK;
}
#endif

API int cuStreamQuery(struct fstream *s)
{
	int r;

	pthread_mutex_lock(&lock);
	progress(0, NULL);
	r = sticky ? sticky : s->head ? E_NOT_READY : OK;
	pthread_mutex_unlock(&lock);
	return r;
}

API int cuEventCreate(struct fevent **e, unsigned flags)
{
	(void)flags;
	*e = calloc(1, sizeof(**e));
	return *e ? OK : E_OUT_OF_MEMORY;
}

API int cuEventRecord(struct fevent *e, struct fstream *s)
{
	struct fop *o = calloc(1, sizeof(*o));
	int r;

	if (!o)
		return E_OUT_OF_MEMORY;
	o->kind = OP_EVENT;
	o->ev = e;
	pthread_mutex_lock(&lock);
	e->pending++;
	r = enqueue(s, o);
	if (r)
		e->pending--;
	pthread_mutex_unlock(&lock);
	return r;
}

API int cuEventQuery(struct fevent *e)
{
	int r;

	pthread_mutex_lock(&lock);
	progress(0, NULL);
	r = sticky ? sticky : e->pending ? E_NOT_READY : OK;
	pthread_mutex_unlock(&lock);
	return r;
}

API int cuEventDestroy_v2(struct fevent *e)
{
	/* a record still queued keeps it: leak it rather than use freed memory */
	pthread_mutex_lock(&lock);
	if (!e->pending)
		free(e);
	pthread_mutex_unlock(&lock);
	return OK;
}

API int cuModuleLoadData(void **m, const void *image)
{
	if (!image || !strstr((const char *)image, ".entry " NM_CK_ENTRY))
		return E_INVALID_VALUE;
	*m = &module_magic;
	return OK;
}

API int cuModuleGetFunction(void **f, void *m, const char *name)
{
	if (m != &module_magic)
		return E_INVALID_HANDLE;
	if (!strcmp(name, NM_CK_ENTRY))
		*f = &func_magic;
	else if (!strcmp(name, NM_CK_BIG_ENTRY))
		*f = &func_big_magic;
	else
		return E_NOT_FOUND;
	return OK;
}

/* The wide copy kernel (nm_cuda_kern.h): its preconditions checked - live
 * device memory at both ends, 16-byte aligned, apart - then a copy on the
 * stream like any other.  An empty one (the engine's load check) may have
 * null addresses. */
static int launch_big(unsigned gx, unsigned bx, struct fstream *s, void **params)
{
	devptr d = *(const uint64_t *)params[0], src = *(const uint64_t *)params[1];
	size_t len = (size_t) * (const unsigned long long *)params[2];

	if (gx == 0 || bx != NM_CK_BIG_THREADS)
		return E_INVALID_VALUE;
	if (len && (!dev_rw(d, len) || !dev_rw(src, len) || ((d | src) & 15) ||
		    (src < d + len && d < src + len)))
		return E_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	n_big++;
	pthread_mutex_unlock(&lock);
	/* the empty one copies nothing: nothing for the stream to run */
	return len ? memcpy_async(d, src, len, s) : OK;
}

/* Launches of the wide copy kernel. */
API unsigned long long gdak_fake_gpu_big(void)
{
	return counter(&n_big);
}

API int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		       unsigned bz, unsigned shmem, struct fstream *s, void **params, void **extra)
{
	struct fop *o;
	int r = need_ctx();

	if (r)
		return r;
	if (f == &func_big_magic && params && !extra && gy == 1 && gz == 1 && by == 1 && bz == 1 &&
	    !shmem)
		return launch_big(gx, bx, s, params);
	if (f != &func_magic || !params || extra || gy != 1 || gz != 1 || bx != NM_CK_THREADS ||
	    by != 1 || bz != 1 || shmem)
		return E_INVALID_VALUE;
	o = calloc(1, sizeof(*o));
	if (!o)
		return E_OUT_OF_MEMORY;
	o->kind = OP_KERNEL;
	o->desc = *(const uint64_t *)params[0];
	o->chain = *(const uint64_t *)params[1];
	o->nchain = *(const uint32_t *)params[2];
	o->count = *(const uint64_t *)params[3];
	o->done = *(const uint64_t *)params[4];
	o->seq = *(const uint64_t *)params[5];
	if (gx < o->nchain || gx == 0) { /* a block per chain */
		free(o);
		return E_INVALID_VALUE;
	}
	pthread_mutex_lock(&lock);
	r = sticky ? sticky : enqueue(s, o);
	pthread_mutex_unlock(&lock);
	return r;
}
