/* SPDX-License-Identifier: MIT */
/*
 * gm_devx.c - the mlx5dv_devx_* entry points of gdak's libmlx5.so.1 (at
 * rdma-core's symbol versions, libmlx5.map): on a device of gdak's
 * libibverbs they run DEVX on the NIC model (nic_model/ibv/dx_*.c, reached
 * through its private node GDAK_PRIVATE_1); on anything else they answer
 * as rdma-core's libmlx5 answers for a device without mlx5 support.
 *
 * Return conventions are rdma-core's: the int calls return a positive
 * errno (and set errno), the create calls NULL with errno.  A command
 * ConnectX runs and fails returns EREMOTEIO with status and syndrome in
 * the output mailbox, as the kernel's devx ioctl does.
 *
 * Objects handed out are recorded, and a call given a pointer this
 * library did not hand out answers without dereferencing it.
 *
 * Not provided (rdma-core's "not supported" answer, so callers fall back):
 * asynchronous commands and event channels, EQs and MSI vectors, the DEVX
 * views of verbs-created SRQs, WQs and indirection tables, MODIFY_CQ of a
 * verbs CQ.  Verbs QPs: QUERY_QP and every RC transition (dx_verbs.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "dx_api.h"
#include "gv_private.h"

#ifndef MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED
#define MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED (1u << 31) /* rdma-core 45 */
#endif

#define GM_BF_OFFSET 0x800 /* the first BlueFlame half: the doorbell register */

static int not_supported(const char *func)
{
	gdak_ibv_note(func, "not supported by gdak's libmlx5");
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

static void *no_object(const char *func)
{
	not_supported(func);
	return NULL;
}

/* A negative errno from libibverbs as rdma-core's int answer. */
static int answer(int ret)
{
	if (ret) {
		errno = -ret;
		return -ret;
	}
	return 0;
}

/* ---- what this library handed out --------------------------------------------------- */

enum gm_kind {
	GM_OBJ = 1,
	GM_UMEM,
	GM_UAR
};

struct gm_handle {
	union {
		struct mlx5dv_devx_umem umem; /* what the program sees (first) */
		struct mlx5dv_devx_uar uar;
	} pub;
	enum gm_kind kind;
	struct gdak_dx_obj *dx;
	struct gm_handle *next;
};

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gm_handle *handles;

static struct gm_handle *handle_new(enum gm_kind kind, struct gdak_dx_obj *dx)
{
	struct gm_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->kind = kind;
	h->dx = dx;
	pthread_mutex_lock(&handles_lock);
	h->next = handles;
	handles = h;
	pthread_mutex_unlock(&handles_lock);
	return h;
}

/* The handle of what gdak's DEVX layer has just made, ret its answer: NULL
 * with errno set when it failed, or when no handle can be had - then what it
 * made is undone. */
static struct gm_handle *handle_for(int ret, enum gm_kind kind, struct gdak_dx_obj *dx)
{
	struct gm_handle *h;

	if (ret) {
		answer(ret);
		return NULL;
	}
	h = handle_new(kind, dx);
	if (h)
		return h;
	switch (kind) {
	case GM_OBJ:
		gdak_dx_obj_destroy(dx);
		break;
	case GM_UMEM:
		gdak_dx_umem_dereg(dx);
		break;
	case GM_UAR:
		gdak_dx_uar_free(dx);
		break;
	}
	errno = ENOMEM;
	return NULL;
}

/* The handle at p of this kind, or NULL (p compared, never read). */
static struct gm_handle *handle_find(const void *p, enum gm_kind kind)
{
	struct gm_handle *h;

	pthread_mutex_lock(&handles_lock);
	for (h = handles; h; h = h->next)
		if ((const void *)h == p && h->kind == kind)
			break;
	pthread_mutex_unlock(&handles_lock);
	return h;
}

static void handle_free(struct gm_handle *h)
{
	struct gm_handle **p;

	pthread_mutex_lock(&handles_lock);
	for (p = &handles; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	pthread_mutex_unlock(&handles_lock);
	free(h);
}

/* ---- MLX5_1.7 ------------------------------------------------------------------------ */

int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out,
			    size_t outlen)
{
	if (!gdak_dx_is_ours(context))
		return not_supported(__func__);
	return answer(gdak_dx_general(context, in, inlen, out, outlen));
}

struct mlx5dv_devx_obj *mlx5dv_devx_obj_create(struct ibv_context *context, const void *in,
					       size_t inlen, void *out, size_t outlen)
{
	struct gdak_dx_obj *dx = NULL;
	int ret;

	if (!gdak_dx_is_ours(context))
		return no_object(__func__);
	ret = gdak_dx_obj_create(context, in, inlen, out, outlen, &dx);
	return (struct mlx5dv_devx_obj *)(void *)handle_for(ret, GM_OBJ, dx);
}

int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
	struct gm_handle *h = handle_find(obj, GM_OBJ);
	int ret;

	if (!h)
		return obj ? not_supported(__func__) : answer(-EINVAL);
	ret = gdak_dx_obj_destroy(h->dx);
	if (!ret)
		handle_free(h);
	return answer(ret);
}

int mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
			   size_t outlen)
{
	struct gm_handle *h = handle_find(obj, GM_OBJ);

	if (!h)
		return not_supported(__func__);
	return answer(gdak_dx_obj_modify(h->dx, in, inlen, out, outlen));
}

int mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
			  size_t outlen)
{
	struct gm_handle *h = handle_find(obj, GM_OBJ);

	if (!h)
		return not_supported(__func__);
	return answer(gdak_dx_obj_query(h->dx, in, inlen, out, outlen));
}

int mlx5dv_devx_query_eqn(struct ibv_context *context, uint32_t vector, uint32_t *eqn)
{
	if (!gdak_dx_is_ours(context))
		return not_supported(__func__);
	return answer(gdak_dx_query_eqn(context, vector, eqn));
}

static struct mlx5dv_devx_umem *umem_reg(struct ibv_context *ctx, void *addr, size_t size,
					 uint32_t access)
{
	struct gdak_dx_obj *dx = NULL;
	struct gm_handle *h;
	uint32_t id;
	int ret = gdak_dx_umem_reg(ctx, addr, size, access, &dx, &id);

	h = handle_for(ret, GM_UMEM, dx);
	if (!h)
		return NULL;
	h->pub.umem.umem_id = id;
	return &h->pub.umem;
}

struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg(struct ibv_context *ctx, void *addr, size_t size,
					      uint32_t access)
{
	if (!gdak_dx_is_ours(ctx))
		return no_object(__func__);
	return umem_reg(ctx, addr, size, access);
}

int mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem)
{
	struct gm_handle *h = handle_find(umem, GM_UMEM);
	int ret;

	if (!h)
		return not_supported(__func__);
	ret = gdak_dx_umem_dereg(h->dx);
	if (!ret)
		handle_free(h);
	return answer(ret);
}

struct mlx5dv_devx_uar *mlx5dv_devx_alloc_uar(struct ibv_context *context, uint32_t flags)
{
	struct gdak_dx_obj *dx = NULL;
	struct gm_handle *h;
	uint32_t id;
	void *page;
	int ret;

	if (!gdak_dx_is_ours(context))
		return no_object(__func__);
	/* rdma-core: BF (0), NC, NC_DEDICATED; anything else is not supported */
	if (flags & ~(uint32_t)(MLX5DV_UAR_ALLOC_TYPE_NC | MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED))
		return no_object(__func__);
	/* every call gets a page of its own, NC included (rdma-core hands out
	 * one shared NC page): the NIC model watches one register per QP */
	ret = gdak_dx_uar_alloc(context, flags, &dx, &page, &id);
	h = handle_for(ret, GM_UAR, dx);
	if (!h)
		return NULL;
	h->pub.uar.base_addr = page;
	h->pub.uar.reg_addr = (char *)page + GM_BF_OFFSET;
	h->pub.uar.page_id = id;
	h->pub.uar.mmap_off = (off_t)id << 12;
	h->pub.uar.comp_mask = 0;
	return &h->pub.uar;
}

void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *devx_uar)
{
	struct gm_handle *h = handle_find(devx_uar, GM_UAR);

	if (!h)
		return;
	gdak_dx_uar_free(h->dx);
	handle_free(h);
}

/* A context DEVX commands can be sent on (MLX5DV_CONTEXT_FLAGS_DEVX): on
 * gdak's devices every context can, so this is ibv_open_device; flags and
 * comp_mask are checked as mlx5_alloc_context checks them. */
struct ibv_context *mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	if (gdak_ibv_is_device(device) != 1)
		return no_object(__func__);
	if (attr && (attr->comp_mask || (attr->flags & ~(uint32_t)MLX5DV_CONTEXT_FLAGS_DEVX))) {
		gdak_ibv_note(__func__, "unknown flags or comp_mask: EINVAL");
		errno = EINVAL;
		return NULL;
	}
	return ibv_open_device(device);
}

/* ---- MLX5_1.8: DEVX views of verbs objects ------------------------------------------- */

int mlx5dv_devx_cq_modify(struct ibv_cq *cq, const void *in, size_t inlen, void *out, size_t outlen)
{
	return not_supported(__func__);
}

int mlx5dv_devx_cq_query(struct ibv_cq *cq, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = gdak_dx_verbs_cq_query(cq, in, inlen, out, outlen);

	return ret == -EOPNOTSUPP ? not_supported(__func__) : answer(ret);
}

int mlx5dv_devx_ind_tbl_modify(struct ibv_rwq_ind_table *ind_tbl, const void *in, size_t inlen,
			       void *out, size_t outlen)
{
	return not_supported(__func__);
}

int mlx5dv_devx_ind_tbl_query(struct ibv_rwq_ind_table *ind_tbl, const void *in, size_t inlen,
			      void *out, size_t outlen)
{
	return not_supported(__func__);
}

int mlx5dv_devx_qp_modify(struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = gdak_dx_verbs_qp_modify(qp, in, inlen, out, outlen);

	return ret == -EOPNOTSUPP ? not_supported(__func__) : answer(ret);
}

int mlx5dv_devx_qp_query(struct ibv_qp *qp, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = gdak_dx_verbs_qp_query(qp, in, inlen, out, outlen);

	return ret == -EOPNOTSUPP ? not_supported(__func__) : answer(ret);
}

int mlx5dv_devx_srq_modify(struct ibv_srq *srq, const void *in, size_t inlen, void *out,
			   size_t outlen)
{
	return not_supported(__func__);
}

int mlx5dv_devx_srq_query(struct ibv_srq *srq, const void *in, size_t inlen, void *out,
			  size_t outlen)
{
	return not_supported(__func__);
}

int mlx5dv_devx_wq_modify(struct ibv_wq *wq, const void *in, size_t inlen, void *out, size_t outlen)
{
	return not_supported(__func__);
}

int mlx5dv_devx_wq_query(struct ibv_wq *wq, const void *in, size_t inlen, void *out, size_t outlen)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.9 .. 1.11: asynchronous commands, events -------------------------------- */

struct mlx5dv_devx_cmd_comp *mlx5dv_devx_create_cmd_comp(struct ibv_context *context)
{
	return no_object(__func__);
}

void mlx5dv_devx_destroy_cmd_comp(struct mlx5dv_devx_cmd_comp *cmd_comp)
{
	gdak_ibv_note(__func__, "nothing to destroy");
}

int mlx5dv_devx_get_async_cmd_comp(struct mlx5dv_devx_cmd_comp *cmd_comp,
				   struct mlx5dv_devx_async_cmd_hdr *cmd_resp, size_t cmd_resp_len)
{
	return not_supported(__func__);
}

int mlx5dv_devx_obj_query_async(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen,
				size_t outlen, uint64_t wr_id,
				struct mlx5dv_devx_cmd_comp *cmd_comp)
{
	return not_supported(__func__);
}

struct mlx5dv_devx_event_channel *mlx5dv_devx_create_event_channel(
	struct ibv_context *context, enum mlx5dv_devx_create_event_channel_flags flags)
{
	return no_object(__func__);
}

void mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel *event_channel)
{
	gdak_ibv_note(__func__, "nothing to destroy");
}

ssize_t mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *event_channel,
			      struct mlx5dv_devx_async_event_hdr *event_data, size_t event_resp_len)
{
	not_supported(__func__);
	return -1;
}

int mlx5dv_devx_subscribe_devx_event(struct mlx5dv_devx_event_channel *event_channel,
				     struct mlx5dv_devx_obj *obj, uint16_t events_sz,
				     uint16_t events_num[], uint64_t cookie)
{
	return not_supported(__func__);
}

int mlx5dv_devx_subscribe_devx_event_fd(struct mlx5dv_devx_event_channel *event_channel, int fd,
					struct mlx5dv_devx_obj *obj, uint16_t event_num)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.19: umem_reg_ex --------------------------------------------------------------- */

struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg_ex(struct ibv_context *ctx,
						 struct mlx5dv_devx_umem_in *umem_in)
{
	if (!gdak_dx_is_ours(ctx))
		return no_object(__func__);
	if (!umem_in) {
		errno = EINVAL;
		return NULL;
	}
	if (umem_in->comp_mask & ~(uint64_t)MLX5DV_UMEM_MASK_DMABUF) {
		errno = EINVAL;
		return NULL;
	}
	/* a dma-buf is GPU memory here: it needs the GPU-memory ring engine */
	if (umem_in->comp_mask & MLX5DV_UMEM_MASK_DMABUF) {
		gdak_ibv_note(__func__,
			      "dma-buf umem: GPU memory is not executed by gdak's NIC model yet");
		errno = EOPNOTSUPP;
		return NULL;
	}
	return umem_reg(ctx, umem_in->addr, umem_in->size, umem_in->access);
}

/* ---- MLX5_1.22: EQs and MSI vectors ------------------------------------------------------ */

struct mlx5dv_devx_msi_vector *mlx5dv_devx_alloc_msi_vector(struct ibv_context *ibctx)
{
	return no_object(__func__);
}

struct mlx5dv_devx_eq *mlx5dv_devx_create_eq(struct ibv_context *ibctx, const void *in,
					     size_t inlen, void *out, size_t outlen)
{
	return no_object(__func__);
}

int mlx5dv_devx_destroy_eq(struct mlx5dv_devx_eq *eq)
{
	return not_supported(__func__);
}

int mlx5dv_devx_free_msi_vector(struct mlx5dv_devx_msi_vector *msi)
{
	return not_supported(__func__);
}
