/* SPDX-License-Identifier: MIT */
/*
 * capture_cuda.c - reading GPU-resident rings for the ring capture.
 *
 * The hardware backend can put a QP's rings and doorbell records in GPU
 * memory (GDAK_QP_F_QUEUES_GPU, DEVX umems).  The host cannot load from that
 * memory, so the capture copies what it needs with the driver API, loaded at
 * run time (gdak_cuda.h, as nic_model/nm_cuda.c and hw_mlx5/hw_cuda.c do)
 * so a build without a GPU still links and runs.
 *
 * The copies go on a stream created CU_STREAM_NON_BLOCKING: a copy on the
 * legacy default stream would wait for every kernel running in the context,
 * and GPU-initiated code is typically one long kernel that polls the very
 * CQEs the capture wants to read - the capture would see nothing until the
 * kernel ended.  The destination is pinned memory, so the copy is one DMA
 * and cuStreamSynchronize waits for that copy only.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capture_int.h"
#include "gdak_cuda.h"
#include "gdak_log.h"

typedef int cap_cu_result;
typedef struct cap_cu_ctx_st *cap_cu_ctx;
typedef struct cap_cu_stream_st *cap_cu_stream;
typedef unsigned long long cap_cu_devptr;

enum {
	CAP_CU_STREAM_NON_BLOCKING = 0x1,
	CAP_CU_MEMHOSTALLOC_PORTABLE = 0x1,
	CAP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	CAP_CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
	CAP_CU_MEMORYTYPE_HOST = 1,
	CAP_CU_MEMORYTYPE_DEVICE = 2,
};

static struct {
	cap_cu_result (*CtxSetCurrent)(cap_cu_ctx);
	cap_cu_result (*CtxGetCurrent)(cap_cu_ctx *);
	cap_cu_result (*StreamCreate)(cap_cu_stream *, unsigned);
	cap_cu_result (*StreamDestroy)(cap_cu_stream);
	cap_cu_result (*StreamSynchronize)(cap_cu_stream);
	cap_cu_result (*MemcpyDtoHAsync)(void *, cap_cu_devptr, size_t, cap_cu_stream);
	cap_cu_result (*MemHostAlloc)(void **, size_t, unsigned);
	cap_cu_result (*MemFreeHost)(void *);
	cap_cu_result (*GetErrorString)(cap_cu_result, const char **);
	cap_cu_result (*PointerGetAttribute)(void *, int, cap_cu_devptr);
} cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_state = -ENODEV;
static cap_cu_ctx primary;	/* retained for the life of the process */

struct cap_cuda {
	cap_cu_stream stream;
};

/* Test hook (gdak_capture_test_fake_gpu): every ring is "GPU memory" and a
 * "copy" is a memcpy, so the staged paths run without a GPU. */
static int fake_gpu;
static struct cap_cuda fake_cc;

void gdak_capture_test_fake_gpu(int on) { fake_gpu = on; }

static const char *cu_err(cap_cu_result r)
{
	const char *s = NULL;

	if (cu.GetErrorString && !cu.GetErrorString(r, &s) && s)
		return s;
	return "unknown CUDA error";
}

static void load(void)
{
	struct gdak_cuda_driver d;
	void *lib;

	if (gdak_cuda_open(&d)) {
		GDAK_INFO("capture", 0, "no CUDA driver (%s): GPU-resident rings cannot be read",
			  d.why);
		return;
	}
	lib = d.lib;
#define SYM(field, name)                                                        \
	do {                                                                    \
		*(void **)&cu.field = dlsym(lib, name);                         \
		if (!cu.field) {                                                \
			GDAK_WARN("capture", 0, "libcuda.so.1 lacks %s", name); \
			return;                                                 \
		}                                                               \
	} while (0)
	SYM(CtxSetCurrent, "cuCtxSetCurrent");
	SYM(CtxGetCurrent, "cuCtxGetCurrent");
	SYM(StreamCreate, "cuStreamCreate");
	SYM(StreamDestroy, "cuStreamDestroy_v2");
	SYM(StreamSynchronize, "cuStreamSynchronize");
	SYM(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
	SYM(MemHostAlloc, "cuMemHostAlloc");
	SYM(MemFreeHost, "cuMemFreeHost");
	SYM(GetErrorString, "cuGetErrorString");
	SYM(PointerGetAttribute, "cuPointerGetAttribute");
#undef SYM
	switch (gdak_cuda_start(&d)) {
	case GDAK_CUDA_READY:
		break;
	case GDAK_CUDA_NO_SYMBOL:
		GDAK_WARN("capture", 0, "libcuda.so.1 lacks %s", d.why);
		return;
	case GDAK_CUDA_NO_INIT:
		GDAK_INFO("capture", 0, "cuInit: %s", cu_err(d.result));
		return;
	case GDAK_CUDA_NO_CONTEXT:
		GDAK_WARN("capture", 0, "CUDA device %d: %s", d.ordinal, cu_err(d.result));
		return;
	default:
		GDAK_INFO("capture", 0, "no CUDA device");
		return;
	}
	primary = (cap_cu_ctx)d.ctx;
	/* the library stays loaded: the context and streams live in it */
	load_state = 0;
}

/*
 * The primary context - the one the application's runtime uses, so its
 * device pointers are valid here, and the one the capture's stream belongs
 * to - current on the calling thread for what follows; *saved is what the
 * thread had current.  The current context is asked for each time, never
 * cached: gdak_capture_poll() runs in the application's thread, which may
 * have switched to a context of its own since (a stream used under another
 * context fails with "invalid resource handle").
 */
static int enter(cap_cu_ctx *saved)
{
	cap_cu_ctx now = NULL;
	cap_cu_result r;

	if (cu.CtxGetCurrent(&now))
		now = NULL;
	*saved = now;
	if (now == primary)
		return 0;
	if ((r = cu.CtxSetCurrent(primary))) {
		GDAK_ERR_RL("capture", 0, "cuCtxSetCurrent: %s", cu_err(r));
		return -EIO;
	}
	return 0;
}

/* Give the caller's own context back.  A thread that had none keeps the
 * primary one (the capture thread; a runtime thread would make it current
 * on its first call anyway), so the capture thread switches only once. */
static void leave(cap_cu_ctx saved)
{
	if (saved && saved != primary)
		cu.CtxSetCurrent(saved);
}

/* The driver's entry points, looked up once: 0, or why they cannot be. */
static int loaded(void)
{
	pthread_once(&load_once, load);
	return load_state;
}

int cap_cuda_open(struct cap_cuda **out)
{
	struct cap_cuda *cc;
	cap_cu_ctx saved;
	cap_cu_result r;
	int ret;

	*out = NULL;
	if (fake_gpu) {
		*out = &fake_cc;
		return 0;
	}
	if ((ret = loaded()))
		return ret;
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return -ENOMEM;
	if ((ret = enter(&saved))) {
		free(cc);
		return ret;
	}
	r = cu.StreamCreate(&cc->stream, CAP_CU_STREAM_NON_BLOCKING);
	leave(saved);
	if (r) {
		GDAK_ERR("capture", 0, "cuStreamCreate(NON_BLOCKING): %s", cu_err(r));
		free(cc);
		return -EIO;
	}
	*out = cc;
	return 0;
}

void cap_cuda_close(struct cap_cuda *cc)
{
	cap_cu_ctx saved;

	if (!cc || cc == &fake_cc)
		return;
	if (!enter(&saved)) {
		cu.StreamDestroy(cc->stream);
		leave(saved);
	}
	free(cc);
}

int cap_cuda_host_alloc(struct cap_cuda *cc, size_t len, void **p)
{
	cap_cu_ctx saved;
	cap_cu_result r;
	int ret;

	*p = NULL;
	if (cc == &fake_cc)
		return posix_memalign(p, 64, len) ? -ENOMEM : 0;
	if ((ret = enter(&saved)))
		return ret;
	r = cu.MemHostAlloc(p, len, CAP_CU_MEMHOSTALLOC_PORTABLE);
	leave(saved);
	if (r) {
		GDAK_ERR("capture", 0, "cuMemHostAlloc(%zu): %s", len, cu_err(r));
		*p = NULL;
		return -ENOMEM;
	}
	return 0;
}

void cap_cuda_host_free(struct cap_cuda *cc, void *p)
{
	cap_cu_ctx saved;

	if (cc == &fake_cc) {
		free(p);
	} else if (p && !enter(&saved)) {
		cu.MemFreeHost(p);
		leave(saved);
	}
}

int cap_cuda_read(struct cap_cuda *cc, void *dst, const void *src, size_t len)
{
	cap_cu_ctx saved;
	cap_cu_result r;
	int ret;

	if (cc == &fake_cc) {
		memcpy(dst, src, len);
		return 0;
	}
	if ((ret = enter(&saved)))
		return ret;
	r = cu.MemcpyDtoHAsync(dst, (cap_cu_devptr)(uintptr_t)src, len, cc->stream);
	if (!r)
		r = cu.StreamSynchronize(cc->stream);
	leave(saved);
	if (r) {
		GDAK_ERR_RL("capture", 0, "copy of %zu bytes from GPU address %p: %s", len, src,
			    cu_err(r));
		return -EIO;
	}
	return 0;
}

int cap_cuda_classify(const void *p, const void **host, int *device)
{
	cap_cu_devptr dp = (cap_cu_devptr)(uintptr_t)p;
	unsigned int type = 0;
	cap_cu_ctx saved;
	void *hp = NULL;
	int ret;

	*host = p;
	*device = 0;
	if (fake_gpu) {
		*device = 1;
		return 0;
	}
	if ((ret = loaded()))
		return ret;
	if ((ret = enter(&saved)))
		return ret;
	/* not a CUDA pointer at all: ordinary host memory, used as it is */
	if (cu.PointerGetAttribute(&type, CAP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp))
		type = 0;
	if (type == CAP_CU_MEMORYTYPE_DEVICE)
		*device = 1;
	/* pinned or registered host memory: the address the GPU uses may not
	 * be the host's (registered memory without unified host pointers) */
	if (type == CAP_CU_MEMORYTYPE_HOST &&
	    !cu.PointerGetAttribute(&hp, CAP_CU_POINTER_ATTRIBUTE_HOST_POINTER, dp) && hp)
		*host = hp;
	leave(saved);
	return 0;
}
