/* SPDX-License-Identifier: MIT */
/*
 * dx_api.h - DEVX entry points of gdak's libibverbs.so.1 for gdak's
 * libmlx5.so.1 (nic_model/ibv/mlx5/gm_devx.c), exported under the private
 * version node GDAK_PRIVATE_1: nothing but gdak's own libmlx5 links them.
 *
 * Every call returns 0 or a negative errno, as the kernel's DEVX ioctl
 * would have answered (-EREMOTEIO: ConnectX ran the command and failed it;
 * status and syndrome are in the output mailbox).  Objects are opaque.
 */
#ifndef DX_API_H
#define DX_API_H

#include <stddef.h>
#include <stdint.h>

struct ibv_context;
struct gdak_dx_obj;

/* 1 when ctx is a context of gdak's libibverbs (reads ctx->device only,
 * never through it: any pointer may be asked about). */
int gdak_dx_is_ours(struct ibv_context *ctx);
int gdak_dx_general(struct ibv_context *ctx, const void *in, size_t inlen, void *out,
		    size_t outlen);
int gdak_dx_obj_create(struct ibv_context *ctx, const void *in, size_t inlen, void *out,
		       size_t outlen, struct gdak_dx_obj **obj);
int gdak_dx_obj_modify(struct gdak_dx_obj *obj, const void *in, size_t inlen, void *out,
		       size_t outlen);
int gdak_dx_obj_query(struct gdak_dx_obj *obj, const void *in, size_t inlen, void *out,
		      size_t outlen);
int gdak_dx_obj_destroy(struct gdak_dx_obj *obj);
/* umem: *id is what PRM fields name it by */
int gdak_dx_umem_reg(struct ibv_context *ctx, void *addr, size_t size, uint32_t access,
		     struct gdak_dx_obj **umem, uint32_t *id);
int gdak_dx_umem_dereg(struct gdak_dx_obj *umem);
/* a 4 KiB doorbell page laid out as a ConnectX UAR; type: MLX5DV_UAR_ALLOC_TYPE_* */
int gdak_dx_uar_alloc(struct ibv_context *ctx, unsigned type, struct gdak_dx_obj **uar, void **page,
		      uint32_t *page_id);
void gdak_dx_uar_free(struct gdak_dx_obj *uar);
int gdak_dx_query_eqn(struct ibv_context *ctx, uint32_t vector, uint32_t *eqn);

/* dx_verbs.c: DEVX commands on verbs-created objects (QUERY_QP, 2ERR, 2RST,
 * QUERY_CQ); -EOPNOTSUPP for objects of another library */
struct ibv_qp;
struct ibv_cq;
int gdak_dx_verbs_qp_query(struct ibv_qp *qp, const void *in, size_t inlen, void *out,
			   size_t outlen);
int gdak_dx_verbs_qp_modify(struct ibv_qp *qp, const void *in, size_t inlen, void *out,
			    size_t outlen);
int gdak_dx_verbs_cq_query(struct ibv_cq *cq, const void *in, size_t inlen, void *out,
			   size_t outlen);

#endif /* DX_API_H */
