/* SPDX-License-Identifier: MIT */
/*
 * nm_mem.c - memory allocation and memory regions of the NIC model.
 *
 * Keys are verbs-like: lkey = rkey = slot index << 8 | an 8-bit variant.
 * The variant is random (nm_rand.c: a stranger cannot walk the keys as
 * 0x101, 0x202, ...), never 0 (so never key 0 nor MLX5_INVALID_LKEY 0x100),
 * unless the caller names it (nm_mr_reg_variant: a DEVX MKEY's mkey_7_0)
 * and differs from the slot's previous one, so a stale key of a recycled
 * slot does not match; the index makes two live keys differ by
 * construction.  The data path looks keys up without a lock (nm_mr_get in nm_loc.h):
 * slots are atomically published pointers; deregistration clears the slot,
 * waits for a grace period (nm_engine_sync) and only then frees the MR.  A
 * WQE that names a deregistered key therefore gets LOCAL_PROT_ERR (local) or
 * REMOTE_ACCESS_ERR (remote), never a use-after-free.
 */
#include <errno.h>
#include <stdlib.h>

#include "nm_dma.h"
#include "nm_loc.h"
#include "nm_rand.h"

int nm_mem_alloc(struct gdak_ctx *bctx, size_t len, enum gdak_mem_kind kind, void **addr)
{
	struct nm_ctx *ctx = nm_ctx_of(bctx);
	struct gdak_mem_block *a = calloc(1, sizeof(*a));
	int ret;

	if (!a)
		return -ENOMEM;
	ret = nm_dma_get()->alloc(len, kind, addr);
	if (ret) {
		free(a);
		GDAK_ERR("ctx", bctx->id, "cannot allocate %zu bytes of %s memory: %s", len,
			 kind == GDAK_MEM_GPU ? "GPU" : kind == GDAK_MEM_HOST_MAPPED ? "mapped" : "host",
			 gdak_strerror(ret));
		return ret;
	}
	a->addr = *addr;
	a->len = len;
	a->kind = kind;
	pthread_mutex_lock(&ctx->lock);
	gdak_mem_block_push(&ctx->allocs, a);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int nm_mem_free(struct gdak_ctx *bctx, void *addr)
{
	struct nm_ctx *ctx = nm_ctx_of(bctx);
	struct gdak_mem_block *a = gdak_mem_block_take(bctx, &ctx->lock, &ctx->allocs, addr);

	if (!a)
		return -EINVAL;
	nm_dma_get()->free(a->addr, a->len, a->kind);
	free(a);
	return 0;
}

enum gdak_mem_kind nm_mem_kind_of(struct gdak_ctx *bctx, const void *addr)
{
	struct nm_ctx *ctx = nm_ctx_of(bctx);
	enum gdak_mem_kind k = GDAK_MEM_HOST;

	if (!gdak_mem_block_kind(&ctx->lock, &ctx->allocs, addr, &k))
		k = nm_dma_get()->kind_of(addr);
	/* for data movement HOST_MAPPED is host memory */
	return k;
}

/* ---- MR table ---------------------------------------------------------------- */

/* A free slot's mr_free_next entry holds the next free slot (index + 1,
 * below 2^24: the table has 2^20 slots) and, in its top byte, the key
 * variant the slot had last (FREE_KEY_SHIFT). */
#define FREE_KEY_SHIFT 24
_Static_assert(NM_MR_CHUNK *NM_MR_CHUNKS < (1u << FREE_KEY_SHIFT), "free-list links fit 24 bits");

static int slot_alloc(struct nm_ctx *ctx, uint32_t *idx, uint8_t *prev_key)
{
	*prev_key = 0;
	if (ctx->mr_free_head) {
		uint32_t e;

		*idx = ctx->mr_free_head - 1;
		e = ctx->mr_free_next[*idx];
		ctx->mr_free_head = e & ((1u << FREE_KEY_SHIFT) - 1);
		*prev_key = (uint8_t)(e >> FREE_KEY_SHIFT);
		return 0;
	}
	if (ctx->mr_next >= NM_MR_CHUNK * NM_MR_CHUNKS)
		return -ENOSPC;
	if (!ctx->mrt[ctx->mr_next / NM_MR_CHUNK]) {
		_Atomic(struct nm_mr *) *chunk = calloc(NM_MR_CHUNK, sizeof(*chunk));
		if (!chunk)
			return -ENOMEM;
		__atomic_store_n(&ctx->mrt[ctx->mr_next / NM_MR_CHUNK], chunk, __ATOMIC_RELEASE);
	}
	if (ctx->mr_next >= ctx->mr_free_cap) {
		uint32_t cap = ctx->mr_free_cap ? ctx->mr_free_cap * 2 : 64;
		uint32_t *n = realloc(ctx->mr_free_next, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		ctx->mr_free_next = n;
		ctx->mr_free_cap = cap;
	}
	/* index 0 is never handed out: key 0 stays invalid */
	if (ctx->mr_next == 0)
		ctx->mr_next = 1;
	*idx = ctx->mr_next++;
	return 0;
}

/* The CPU mapping gpu_map made at registration, undone (no WQE holds mr). */
static void mr_unmap(struct nm_mr *mr)
{
	if (mr->gpu_map && nm_dma_get()->gpu_unmap)
		nm_dma_get()->gpu_unmap(mr->gpu_map);
	mr->gpu_map = 0;
}

int nm_mr_reg(struct gdak_ctx *bctx, void *addr, size_t len, unsigned access, struct gdak_mr **out)
{
	return nm_mr_reg_variant(bctx, addr, len, access, -1, out);
}

int nm_mr_reg_variant(struct gdak_ctx *bctx, void *addr, size_t len, unsigned access, int variant,
		      struct gdak_mr **out)
{
	struct nm_ctx *ctx = nm_ctx_of(bctx);
	struct nm_mr *mr = calloc(1, sizeof(*mr));
	uint32_t idx;
	uint8_t prev;
	int ret;

	if (!mr)
		return -ENOMEM;
	mr->kind = (uint8_t)nm_mem_kind_of(bctx, addr);
	if (mr->kind == GDAK_MEM_HOST_MAPPED)
		mr->kind = GDAK_MEM_HOST;
	if (mr->kind == GDAK_MEM_GPU) {
		const struct nm_dma_ops *dma = nm_dma_get();

		if (dma->gpu_prepare)
			dma->gpu_prepare(nm_engine_nthreads());
		if (dma->gpu_map)
			dma->gpu_map(addr, len, &mr->gpu_map);
	}
	mr->start = (uintptr_t)addr;
	mr->end = (uintptr_t)addr + len;
	mr->base.ctx = bctx;
	mr->base.addr = addr;
	mr->base.len = len;
	mr->base.access = access;
	if (ctx->tr->mr_reg) {
		ret = ctx->tr->mr_reg(ctx, mr);
		if (ret) {
			mr_unmap(mr);
			free(mr);
			return ret;
		}
	}

	pthread_mutex_lock(&ctx->lock);
	ret = slot_alloc(ctx, &idx, &prev);
	if (!ret && variant == 0 && idx == 1)
		/* 0x100 is MLX5_INVALID_LKEY: slot 1 stays unused */
		ret = slot_alloc(ctx, &idx, &prev);
	if (!ret) {
		uint8_t key = variant >= 0 ? (uint8_t)variant : nm_rand_key8(prev);
		mr->index = idx;
		mr->base.lkey = mr->base.rkey = idx << 8 | key;
		if (mr->wire_keys) /* what a peer's requests must carry */
			mr->base.rkey = mr->wire_rkey;
		atomic_store_explicit(&ctx->mrt[idx / NM_MR_CHUNK][idx % NM_MR_CHUNK], mr,
				      memory_order_release);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		GDAK_ERR("ctx", bctx->id, "no free memory-region slot: %s", gdak_strerror(ret));
		if (ctx->tr->mr_dereg)
			ctx->tr->mr_dereg(ctx, mr);
		mr_unmap(mr);
		free(mr);
		return ret;
	}
	atomic_fetch_add(&ctx->nmrs, 1);
	GDAK_DBG("ctx", bctx->id, "mr %p+%zu access 0x%x key 0x%x", addr, len, access, mr->base.lkey);
	*out = &mr->base;
	return 0;
}

int nm_mr_dereg(struct gdak_mr *bmr)
{
	struct nm_mr *mr = (struct nm_mr *)bmr;
	struct nm_ctx *ctx = nm_ctx_of(bmr->ctx);
	_Atomic(struct nm_mr *) *slot = &ctx->mrt[mr->index / NM_MR_CHUNK][mr->index % NM_MR_CHUNK];

	if (atomic_load(slot) != mr) {
		GDAK_ERR("ctx", bmr->ctx->id, "mr key 0x%x is not registered", bmr->lkey);
		return -EINVAL;
	}
	atomic_store_explicit(slot, NULL, memory_order_release);
	/* key caches filled before this point go stale (nm_mr_get_cached) */
	atomic_fetch_add_explicit(&ctx->mr_gen, 1, memory_order_seq_cst);
	/* WQEs executing right now may still hold mr: let them finish. */
	nm_engine_sync();
	pthread_mutex_lock(&ctx->lock);
	ctx->mr_free_next[mr->index] = ctx->mr_free_head | (uint32_t)(mr->base.lkey & 0xff)
								   << FREE_KEY_SHIFT;
	ctx->mr_free_head = mr->index + 1;
	pthread_mutex_unlock(&ctx->lock);
	if (ctx->tr->mr_dereg)
		ctx->tr->mr_dereg(ctx, mr);
	mr_unmap(mr);
	free(mr);
	atomic_fetch_sub(&ctx->nmrs, 1);
	nm_ctx_maybe_free(ctx); /* a deferred close may end here */
	return 0;
}

void nm_mem_ctx_fini(struct nm_ctx *ctx)
{
	unsigned leaked = 0;

	for (uint32_t c = 0; c < NM_MR_CHUNKS; c++) {
		if (!ctx->mrt[c])
			continue;
		for (uint32_t i = 0; i < NM_MR_CHUNK; i++) {
			struct nm_mr *mr = atomic_load(&ctx->mrt[c][i]);
			if (mr) {
				leaked++;
				mr_unmap(mr);
				free(mr);
			}
		}
		free(ctx->mrt[c]);
		ctx->mrt[c] = NULL;
	}
	if (leaked)
		GDAK_WARN("ctx", ctx->base.id, "%u memory regions still registered at close; freed",
			  leaked);
	free(ctx->mr_free_next);
	while (ctx->allocs) {
		struct gdak_mem_block *a = ctx->allocs;
		ctx->allocs = a->next;
		nm_dma_get()->free(a->addr, a->len, a->kind);
		free(a);
	}
}
