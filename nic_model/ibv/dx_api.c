/* SPDX-License-Identifier: MIT */
/*
 * dx_api.c - the private DEVX entry points (dx_api.h): checks at the edge,
 * then the command layer.
 */
#include <errno.h>

#include "dx_api.h"
#include "dx_loc.h"
#include "gv_loc.h"

GV_EXPORT int gdak_dx_is_ours(struct ibv_context *ctx)
{
	return ctx && gv_device_index(ctx->device) >= 0;
}

static struct dx_ctx *ctx_of(struct ibv_context *ctx)
{
	return gdak_dx_is_ours(ctx) ? dx_ctx_of(ctx) : NULL;
}

GV_EXPORT int gdak_dx_general(struct ibv_context *ctx, const void *in, size_t inlen, void *out,
			      size_t outlen)
{
	struct dx_ctx *c = ctx_of(ctx);

	if (!c)
		return -EOPNOTSUPP;
	/* the kernel: a header in and out, and only the whitelisted opcodes */
	if (!in || !out || inlen < DX_HDR_IN_LEN || outlen < DX_HDR_OUT_LEN ||
	    !dx_is_general(dx_get(in, inlen, DXF_IN_OPCODE)))
		return -EINVAL;
	return dx_general(c, in, inlen, out, outlen);
}

GV_EXPORT int gdak_dx_obj_create(struct ibv_context *ctx, const void *in, size_t inlen, void *out,
				 size_t outlen, struct gdak_dx_obj **obj)
{
	struct dx_ctx *c = ctx_of(ctx);
	struct dx_obj *o = NULL;
	int ret;

	if (!c)
		return -EOPNOTSUPP;
	ret = dx_obj_create(c, in, inlen, out, outlen, &o);
	*obj = (struct gdak_dx_obj *)o;
	return ret;
}

GV_EXPORT int gdak_dx_obj_modify(struct gdak_dx_obj *obj, const void *in, size_t inlen, void *out,
				 size_t outlen)
{
	return dx_obj_modify((struct dx_obj *)obj, in, inlen, out, outlen);
}

GV_EXPORT int gdak_dx_obj_query(struct gdak_dx_obj *obj, const void *in, size_t inlen, void *out,
				size_t outlen)
{
	return dx_obj_query((struct dx_obj *)obj, in, inlen, out, outlen);
}

GV_EXPORT int gdak_dx_obj_destroy(struct gdak_dx_obj *obj)
{
	return dx_obj_destroy((struct dx_obj *)obj);
}

GV_EXPORT int gdak_dx_umem_reg(struct ibv_context *ctx, void *addr, size_t size, uint32_t access,
			       struct gdak_dx_obj **umem, uint32_t *id)
{
	struct dx_ctx *c = ctx_of(ctx);
	struct dx_obj *o;
	int ret;

	if (!c)
		return -EOPNOTSUPP;
	ret = dx_umem_reg(c, addr, size, access, &o);
	if (ret)
		return ret;
	*umem = (struct gdak_dx_obj *)o;
	*id = o->id;
	return 0;
}

GV_EXPORT int gdak_dx_umem_dereg(struct gdak_dx_obj *umem)
{
	return dx_obj_destroy((struct dx_obj *)umem);
}

GV_EXPORT int gdak_dx_uar_alloc(struct ibv_context *ctx, unsigned type, struct gdak_dx_obj **uar,
				void **page, uint32_t *page_id)
{
	struct dx_ctx *c = ctx_of(ctx);
	struct dx_obj *o;
	int ret;

	if (!c)
		return -EOPNOTSUPP;
	ret = dx_uar_alloc(c, type, &o);
	if (ret)
		return ret;
	/* what mmap_off is an offset into (a ConnectX context's command fd;
	 * gdak's contexts have none until then) */
	if (ctx->cmd_fd < 0)
		ctx->cmd_fd = dx_uar_fd(c);
	*uar = (struct gdak_dx_obj *)o;
	*page = o->u.uar.page;
	*page_id = o->id;
	return 0;
}

GV_EXPORT void gdak_dx_uar_free(struct gdak_dx_obj *uar)
{
	if (uar)
		dx_obj_destroy((struct dx_obj *)uar);
}

GV_EXPORT int gdak_dx_query_eqn(struct ibv_context *ctx, uint32_t vector, uint32_t *eqn)
{
	if (!ctx_of(ctx))
		return -EOPNOTSUPP;
	if (vector >= DX_NUM_EQ || !eqn)
		return -EINVAL;
	*eqn = DX_EQN_BASE + vector;
	return 0;
}
