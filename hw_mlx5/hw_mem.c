/* SPDX-License-Identifier: MIT */
/*
 * hw_mem.c - memory for the hardware backend: allocation by kind, memory
 * registration (host memory with ibv_reg_mr; GPU memory through a dma-buf
 * with ibv_reg_dmabuf_mr, else through peer memory), and the refcounted
 * host-to-GPU mappings of rings, doorbell records and the UAR page.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw_loc.h"
#include "gdak_log.h"

/* gdak's access bits are IBV_ACCESS_* by value (gdak.h). */
_Static_assert((int)GDAK_ACCESS_LOCAL_WRITE == (int)IBV_ACCESS_LOCAL_WRITE, "access bits");
_Static_assert((int)GDAK_ACCESS_REMOTE_WRITE == (int)IBV_ACCESS_REMOTE_WRITE, "access bits");
_Static_assert((int)GDAK_ACCESS_REMOTE_READ == (int)IBV_ACCESS_REMOTE_READ, "access bits");
_Static_assert((int)GDAK_ACCESS_REMOTE_ATOMIC == (int)IBV_ACCESS_REMOTE_ATOMIC, "access bits");

static size_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (size_t)p : 4096;
}

static const char *kind_name(enum gdak_mem_kind k)
{
	return k == GDAK_MEM_GPU ? "GPU" : k == GDAK_MEM_HOST_MAPPED ? "HOST_MAPPED" : "HOST";
}

int hw_mem_alloc(struct gdak_ctx *ctx, size_t len, enum gdak_mem_kind kind, void **addr)
{
	struct hw_ctx *hc = hw_ctx_of(ctx);
	struct hw_alloc *a = calloc(1, sizeof(*a));
	size_t pg = page_size();
	size_t rlen = (len + pg - 1) & ~(pg - 1);
	int ret = 0;

	if (!a)
		return -ENOMEM;
	a->b.len = rlen;
	a->b.kind = kind;
	if (kind == GDAK_MEM_GPU) {
		if (!hc->cuda) {
			GDAK_ERR("ctx", ctx->id, "GPU memory asked for, but no CUDA GPU is usable");
			ret = -ENOTSUP;
		} else {
			ret = hw_cuda_dev_alloc(rlen, &a->b.addr);
			a->cuda = 1;
			if (!ret)
				ret = hw_cuda_memset(a->b.addr, 0, rlen);
		}
	} else if (kind == GDAK_MEM_HOST_MAPPED && hc->cuda) {
		ret = hw_cuda_host_alloc(rlen, &a->b.addr);
		a->cuda = 1;
		if (!ret)
			memset(a->b.addr, 0, rlen);
	} else {
		/* page aligned so that a registration never shares a page it
		 * does not own (fork safety, ibv_fork_init) */
		ret = posix_memalign(&a->b.addr, pg, rlen) ? -ENOMEM : 0;
		if (!ret)
			memset(a->b.addr, 0, rlen);
	}
	if (ret) {
		GDAK_ERR("ctx", ctx->id, "allocating %zu bytes of %s memory: %s", len,
			 kind_name(kind), gdak_strerror(ret));
		free(a);
		return ret;
	}
	pthread_mutex_lock(&hc->lock);
	gdak_mem_block_push(&hc->allocs, &a->b);
	pthread_mutex_unlock(&hc->lock);
	*addr = a->b.addr;
	return 0;
}

static void free_one(struct gdak_mem_block *b)
{
	struct hw_alloc *a = (struct hw_alloc *)b;

	if (b->kind == GDAK_MEM_GPU)
		hw_cuda_dev_free(b->addr);
	else if (a->cuda)
		hw_cuda_host_free(b->addr);
	else
		free(b->addr);
	free(a);
}

int hw_mem_free(struct gdak_ctx *ctx, void *addr)
{
	struct hw_ctx *hc = hw_ctx_of(ctx);
	struct gdak_mem_block *a = gdak_mem_block_take(ctx, &hc->lock, &hc->allocs, addr);

	if (!a)
		return -EINVAL;
	free_one(a);
	return 0;
}

enum gdak_mem_kind hw_mem_kind_of(struct gdak_ctx *ctx, const void *addr)
{
	struct hw_ctx *hc = hw_ctx_of(ctx);
	enum gdak_mem_kind k = GDAK_MEM_HOST;

	if (!gdak_mem_block_kind(&hc->lock, &hc->allocs, addr, &k) && hc->cuda &&
	    hw_cuda_is_device_ptr(addr))
		k = GDAK_MEM_GPU;
	return k;
}

void hw_mem_release_all(struct hw_ctx *hc)
{
	struct gdak_mem_block *a;
	struct hw_gpumap *m;

	while ((a = hc->allocs)) {
		hc->allocs = a->next;
		GDAK_WARN("ctx", hc->base.id, "freeing %zu bytes at %p left allocated at close",
			  a->len, a->addr);
		free_one(a);
	}
	while ((m = hc->maps)) {
		hc->maps = m->next;
		if (!m->borrowed)
			hw_cuda_host_unregister(m->base);
		free(m);
	}
}

/* ---- registration ------------------------------------------------------ */

static struct ibv_mr *reg_gpu(struct hw_ctx *hc, void *addr, size_t len, int access, int *dmabuf)
{
	struct ibv_mr *mr = NULL;
	uint64_t off = 0;
	int fd = -1, e = 0;

	*dmabuf = 0;
	if (!hw_cuda_dmabuf_fd(addr, len, &fd, &off)) {
		mr = ibv_reg_dmabuf_mr(hc->pd, off, len, (uint64_t)(uintptr_t)addr, fd, access);
		e = errno;
		/* the MR holds its own reference to the dma-buf */
		close(fd);
		if (mr) {
			*dmabuf = 1;
			return mr;
		}
		GDAK_INFO("ctx", hc->base.id, "ibv_reg_dmabuf_mr(%p, %zu): %s; trying peer memory",
			  addr, len, strerror(e));
	}
	/* nvidia-peermem: the kernel resolves GPU virtual addresses itself */
	mr = ibv_reg_mr(hc->pd, addr, len, access);
	if (!mr)
		GDAK_ERR("ctx", hc->base.id,
			 "cannot register GPU memory %p+%zu: dma-buf %s, peer memory: %s "
			 "(load nvidia-peermem, or use a kernel >= 5.12 with dma-buf and CUDA >= 11.7)",
			 addr, len, e ? strerror(e) : "unavailable", strerror(errno));
	return mr;
}

int hw_mr_reg(struct gdak_ctx *ctx, void *addr, size_t len, unsigned access, struct gdak_mr **out)
{
	struct hw_ctx *hc = hw_ctx_of(ctx);
	struct hw_mr *m;
	int e;

	if (!len) {
		GDAK_ERR("ctx", ctx->id, "zero-length registration (a ConnectX MR needs >= 1 byte)");
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (hw_mem_kind_of(ctx, addr) == GDAK_MEM_GPU) {
		m->mr = reg_gpu(hc, addr, len, (int)access, &m->dmabuf);
	} else {
		m->mr = ibv_reg_mr(hc->pd, addr, len, (int)access);
		if (!m->mr)
			GDAK_ERR("ctx", ctx->id, "ibv_reg_mr(%p, %zu, 0x%x): %s", addr, len, access,
				 strerror(errno));
	}
	if (!m->mr) {
		e = errno ? errno : EINVAL;
		free(m);
		return -e;
	}
	m->base.ctx = ctx;
	m->base.addr = addr;
	m->base.len = len;
	m->base.access = access;
	m->base.lkey = m->mr->lkey;
	m->base.rkey = m->mr->rkey;
	*out = &m->base;
	return 0;
}

int hw_mr_dereg(struct gdak_mr *mr)
{
	struct hw_mr *m = (struct hw_mr *)mr;
	int ret = ibv_dereg_mr(m->mr);

	if (ret) {
		GDAK_ERR("ctx", mr->ctx->id, "ibv_dereg_mr(lkey 0x%x): %s", mr->lkey, strerror(ret));
		return -ret;
	}
	free(m);
	return 0;
}

/* ---- host memory mapped into the GPU ------------------------------------ */

int hw_gpumap_get(struct hw_ctx *hc, void *addr, size_t len, int iomem, void **dptr)
{
	size_t pg = page_size();
	uintptr_t base = (uintptr_t)addr & ~(uintptr_t)(pg - 1);
	uintptr_t end = ((uintptr_t)addr + len + pg - 1) & ~(uintptr_t)(pg - 1);
	struct hw_gpumap *m;
	int ret, registered;

	if (!hc->cuda)
		return -ENODEV;
	pthread_mutex_lock(&hc->lock);
	for (m = hc->maps; m; m = m->next) {
		if (base >= (uintptr_t)m->base && end <= (uintptr_t)m->base + m->len) {
			m->refs++;
			*dptr = (char *)m->dptr + ((uintptr_t)addr - (uintptr_t)m->base);
			pthread_mutex_unlock(&hc->lock);
			return 0;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		pthread_mutex_unlock(&hc->lock);
		return -ENOMEM;
	}
	m->base = (void *)base;
	m->len = end - base;
	m->refs = 1;
	ret = hw_cuda_host_register(m->base, m->len, iomem);
	if (ret == -EEXIST) {
		/* rdma-core packs several doorbell records in one page, and the
		 * application may have registered the memory itself */
		m->borrowed = 1;
		ret = 0;
	}
	registered = !ret && !m->borrowed;
	if (!ret)
		ret = hw_cuda_host_dptr(m->base, &m->dptr);
	if (ret) {
		if (registered)
			hw_cuda_host_unregister(m->base);
		free(m);
		pthread_mutex_unlock(&hc->lock);
		return ret;
	}
	m->next = hc->maps;
	hc->maps = m;
	*dptr = (char *)m->dptr + ((uintptr_t)addr - base);
	pthread_mutex_unlock(&hc->lock);
	return 0;
}

void hw_gpumap_put(struct hw_ctx *hc, void *addr)
{
	struct hw_gpumap **pp, *m;

	pthread_mutex_lock(&hc->lock);
	for (pp = &hc->maps; (m = *pp); pp = &m->next) {
		if ((uintptr_t)addr >= (uintptr_t)m->base &&
		    (uintptr_t)addr < (uintptr_t)m->base + m->len) {
			if (--m->refs == 0) {
				*pp = m->next;
				if (!m->borrowed)
					hw_cuda_host_unregister(m->base);
				free(m);
			}
			break;
		}
	}
	pthread_mutex_unlock(&hc->lock);
}
