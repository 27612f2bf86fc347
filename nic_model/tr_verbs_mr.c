/* SPDX-License-Identifier: MIT */
/*
 * tr_verbs_mr.c - memory regions of the verbs transport (the nm_transport_ops
 * mr_reg / mr_dereg hooks).
 *
 * Every NIC-model MR of an emu:verbs context is registered with the device
 * when gdak_mr_reg runs, so the rkey gdak_mr_rkey hands out is the device's
 * own: a peer in another process (another NIC model, plain verbs code, a
 * ConnectX) puts it on the wire as it is.  Local keys stay the NIC model's
 * (it checks every WQE's lkey itself) and are translated when posting.
 *
 * GPU memory: the CUDA driver is asked for a dma-buf of the range
 * (cuMemGetHandleForAddressRange, CUDA >= 11.7 with a kernel and driver
 * that support it) and the device to register it (ibv_reg_dmabuf_mr,
 * rdma-core >= 34 and a provider that maps dma-bufs; rxe does not).  When
 * either says no, the region is staged: tv_mem_plan (tr_verbs_map.c)
 * decides, tr_verbs_stage.c moves the bytes.  libcuda is not linked and
 * not loaded here: it is only looked up (RTLD_NOLOAD) - GPU memory exists
 * only when the CUDA engine (nm_cuda.c) or the application loaded it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nm_loc.h"
#include "tr_verbs.h"

/* CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr,
 *	size_t size, CUmemRangeHandleType type, unsigned long long flags) */
typedef int (*cu_range_handle_fn)(void *handle, unsigned long long dptr, size_t size, int type,
				  unsigned long long flags);
#define TV_CU_RANGE_HANDLE_TYPE_DMA_BUF_FD 1

#define TV_CU_POINTER_ATTRIBUTE_CONTEXT 1

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static cu_range_handle_fn cu_range_handle;
static int (*cu_ptr_attr)(void *data, int attr, unsigned long long ptr);
static int (*cu_ctx_push)(void *ctx);
static int (*cu_ctx_pop)(void **ctx);

static void cu_lookup(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!h)
		return;
	cu_range_handle = (cu_range_handle_fn)dlsym(h, "cuMemGetHandleForAddressRange");
	cu_ptr_attr = (int (*)(void *, int, unsigned long long))dlsym(h, "cuPointerGetAttribute");
	cu_ctx_push = (int (*)(void *))dlsym(h, "cuCtxPushCurrent_v2");
	cu_ctx_pop = (int (*)(void **))dlsym(h, "cuCtxPopCurrent_v2");
}

/* The driver wants the memory's context current on the calling thread,
 * which gdak_mr_reg's caller need not have made current (a thread that
 * only got a pointer): push the pointer's own context for the call. */
static int range_handle(unsigned long long lo, size_t len, int *fd)
{
	void *cctx = NULL, *old;
	bool pushed = false;
	int r;

	if (cu_ptr_attr && cu_ctx_push && cu_ctx_pop &&
	    !cu_ptr_attr(&cctx, TV_CU_POINTER_ATTRIBUTE_CONTEXT, lo) && cctx)
		pushed = !cu_ctx_push(cctx);
	r = cu_range_handle(fd, lo, len, TV_CU_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (pushed)
		cu_ctx_pop(&old);
	return r;
}

static unsigned verbs_access(unsigned access)
{
	/* the NIC model checks local access itself; the device wants
	 * LOCAL_WRITE with any remote write/atomic right (ibv_reg_mr(3)) and
	 * for the READ / atomic results it writes locally */
	return (access & GDAK_ACCESS_ALL) | IBV_ACCESS_LOCAL_WRITE;
}

/* A dma-buf registration of GPU memory, or NULL (why logged at debug). */
static struct ibv_mr *reg_dmabuf(struct tv_ctx *tc, struct nm_mr *mr)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = mr->start & ~(pg - 1), hi = (mr->end + pg - 1) & ~(pg - 1);
	struct ibv_mr *vmr;
	int fd = -1, r;

	pthread_once(&cu_once, cu_lookup);
	if (!cu_range_handle) {
		GDAK_DBG("ctx", tc->id, "verbs: no cuMemGetHandleForAddressRange in a loaded "
			 "libcuda: GPU memory is staged");
		return NULL;
	}
	/* the driver exports whole host pages of the range (NCCL and perftest
	 * do the same); the MR then starts at the region's offset in it, with
	 * the region's own address as its iova, so WQE addresses stay valid */
	r = range_handle(lo, hi - lo, &fd);
	if (r || fd < 0) {
		GDAK_DBG("ctx", tc->id, "verbs: cuMemGetHandleForAddressRange(0x%llx, %llu): "
			 "CUresult %d: GPU memory is staged", (unsigned long long)lo,
			 (unsigned long long)(hi - lo), r);
		return NULL;
	}
	vmr = ibv_reg_dmabuf_mr(tc->pd, mr->start - lo, mr->end - mr->start, mr->start, fd,
				(int)verbs_access(mr->base.access));
	if (!vmr)
		GDAK_DBG("ctx", tc->id, "verbs: ibv_reg_dmabuf_mr: %s: GPU memory is staged",
			 strerror(errno));
	close(fd); /* the MR holds its own reference to the dma-buf */
	return vmr;
}

int tv_mr_reg(struct nm_ctx *ctx, struct nm_mr *mr)
{
	struct tv_ctx *tc = ctx->tr_priv;
	struct tv_mem_plan plan;
	struct tv_mr *m = calloc(1, sizeof(*m));
	struct ibv_mr *dmabuf = NULL;
	const char *why;
	int ret;

	if (!m)
		return -ENOMEM;
	if (mr->kind == GDAK_MEM_GPU && !tc->no_dmabuf)
		dmabuf = reg_dmabuf(tc, mr);
	ret = tv_mem_plan(mr->kind, mr->base.access, tc->stage_all, dmabuf != NULL, &plan, &why);
	if (ret) {
		GDAK_ERR("ctx", tc->id, "verbs: cannot register [0x%llx, 0x%llx) access 0x%x: %s",
			 (unsigned long long)mr->start, (unsigned long long)mr->end,
			 mr->base.access, why);
		free(m);
		return ret;
	}
	m->reg = plan.reg;
	m->staged = plan.stage_local;
	if (plan.reg == TV_REG_DMABUF) {
		m->vmr = dmabuf;
	} else if (plan.reg == TV_REG_HOST) {
		m->vmr = ibv_reg_mr(tc->pd, (void *)mr->start, mr->end - mr->start,
				    (int)verbs_access(mr->base.access));
		if (!m->vmr) {
			ret = errno ? -errno : -ENOMEM;
			GDAK_ERR("ctx", tc->id, "verbs: ibv_reg_mr [0x%llx, 0x%llx) access 0x%x: %s",
				 (unsigned long long)mr->start, (unsigned long long)mr->end,
				 mr->base.access, strerror(-ret));
			free(m);
			return ret;
		}
	}
	if (m->vmr) {
		mr->wire_keys = true;
		mr->wire_lkey = m->vmr->lkey;
		mr->wire_rkey = m->vmr->rkey;
	}
	mr->tr_priv = m;
	pthread_mutex_lock(&tc->lock);
	m->next = tc->mrs;
	m->pprev = &tc->mrs;
	if (tc->mrs)
		tc->mrs->pprev = &m->next;
	tc->mrs = m;
	pthread_mutex_unlock(&tc->lock);
	GDAK_DBG("ctx", tc->id, "verbs: [0x%llx, 0x%llx) %s%s, rkey 0x%x",
		 (unsigned long long)mr->start, (unsigned long long)mr->end,
		 plan.reg == TV_REG_DMABUF ? "dma-buf" : plan.reg == TV_REG_HOST ? "ibv_reg_mr" :
		 "no verbs MR", m->staged ? ", staged" : "", m->vmr ? m->vmr->rkey : 0);
	return 0;
}

static void unlink_mr(struct tv_mr *m)
{
	*m->pprev = m->next;
	if (m->next)
		m->next->pprev = m->pprev;
}

void tv_mr_dereg(struct nm_ctx *ctx, struct nm_mr *mr)
{
	struct tv_ctx *tc = ctx->tr_priv;
	struct tv_mr *m = mr->tr_priv;
	int rc;

	if (!m)
		return;
	mr->tr_priv = NULL;
	if (tc) {
		pthread_mutex_lock(&tc->lock);
		unlink_mr(m);
		pthread_mutex_unlock(&tc->lock);
	}
	if (m->vmr && (rc = ibv_dereg_mr(m->vmr)))
		GDAK_WARN("ctx", ctx->base.id, "verbs: ibv_dereg_mr of rkey 0x%x: %s", m->vmr->rkey,
			  strerror(rc));
	free(m);
}

void tv_mr_fini_all(struct tv_ctx *tc)
{
	/* MRs the application did not deregister: their verbs side goes with
	 * the protection domain (nm_mem_ctx_fini frees the NIC-model side) */
	while (tc->mrs) {
		struct tv_mr *m = tc->mrs;
		unlink_mr(m);
		if (m->vmr)
			ibv_dereg_mr(m->vmr);
		free(m);
	}
}
