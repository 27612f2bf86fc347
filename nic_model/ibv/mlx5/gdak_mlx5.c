/* SPDX-License-Identifier: MIT */
/*
 * gdak_mlx5.c - gdak's libmlx5.so.1, part 1: every mlx5dv entry point that
 * rdma-core 44's libmlx5 exports (MLX5_1.0 ... MLX5_1.24), each answering as
 * the real libmlx5 answers for a device that is not mlx5-capable.
 *
 * Why it exists: Debian's perftest links libmlx5.so.1 and imports mlx5dv_*
 * at load time, and the system's libmlx5 imports libibverbs' private
 * IBVERBS_PRIVATE_34 internals, which gdak's libibverbs.so.1 does not
 * export; without a libmlx5 of its own next to gdak's libibverbs, perftest
 * does not start.  gdak-run puts both on LD_LIBRARY_PATH (lib/gdak/).
 *
 * The answers (rdma-core providers/mlx5, where mlx5_get_dv_ops() finds no
 * mlx5 context): mlx5dv_is_supported() is false; calls that create an
 * object return NULL with errno EOPNOTSUPP; int calls return EOPNOTSUPP
 * (positive, as rdma-core does; the few that return a negative errno or
 * -1 with errno do so here too); void calls do nothing.  The four steering
 * actions that need no device (drop, default miss, pop VLAN, tag) are
 * created as rdma-core creates them, and mlx5dv_dr_action_destroy() frees
 * them.  No call dereferences an object it did not create: none of those
 * can exist while no call creates them.  GDAK_LOG=info|debug names each
 * refused call on stderr.
 *
 * Part 2 makes the emulated NIC an mlx5 device here (docs/VERBS.md).  The
 * mlx5dv half: mlx5dv_is_supported is true for gdak's devices (all the
 * devices gdak's libibverbs shows); mlx5dv_query_device answers what a
 * ConnectX-6 Dx reports where gdak honours it (CQE version 1) and zero
 * capabilities elsewhere; mlx5dv_init_obj hands out the real rings of
 * verbs objects (QP: SQ/RQ, records, BlueFlame register; CQ: ring, record,
 * cqn; PD: pdn; AH: address vector); mlx5dv_create_cq/qp take the mlx5
 * attributes gdak honours and refuse the rest with EOPNOTSUPP, then create
 * the verbs object.  The internals come from gdak's libibverbs through its
 * GDAK_PRIVATE_1 node (nic_model/ibv/gv_private.h).  SRQs, RWQs and DM
 * have no mlx5 ring in gdak (EOPNOTSUPP).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gv_private.h"

/* gdak's libibverbs logs it: GDAK_LOG is read by the configuration table */
static void note(const char *func)
{
	gdak_ibv_note(func, "not supported: gdak's libmlx5 (part 1) has no mlx5 device");
}

#include "provider_stub.h"

static ssize_t not_supported_neg1(const char *func)
{
	note(func);
	errno = EOPNOTSUPP;
	return -1;
}

/* Steering actions that rdma-core builds without touching a device.  The
 * struct is opaque to programs, so ours is only a tag. */
enum ga_type {
	GA_DROP = 1,
	GA_DEFAULT_MISS,
	GA_POP_VLAN,
	GA_TAG
};
#define GA_MAGIC 0x67646b61u

struct generic_action {
	uint32_t magic;
	enum ga_type type;
	uint32_t tag;
};

static struct generic_action *to_ga(struct mlx5dv_dr_action *a)
{
	return (struct generic_action *)(void *)a;
}

static struct mlx5dv_dr_action *generic_action(enum ga_type type)
{
	struct generic_action *a = calloc(1, sizeof(*a));

	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->magic = GA_MAGIC;
	a->type = type;
	return (struct mlx5dv_dr_action *)(void *)a;
}

/* ---- MLX5_1.0 ---- */

static void dv_log(const char *func, const char *what)
{
	/* errors are always worth a line: the caller falls back, and the
	 * reason is otherwise lost */
	fprintf(stderr, "gdak E %s: %s\n", func, what);
}

static int ours(struct ibv_context *ctx)
{
	return ctx && ctx->device && gdak_ibv_is_device(ctx->device);
}

int mlx5dv_query_device(struct ibv_context *ctx_in, struct mlx5dv_context *attrs_out)
{
	/* what the caller asks for and this device can answer; the rest of
	 * comp_mask comes back cleared, as rdma-core does */
	const uint64_t known = MLX5DV_CONTEXT_MASK_CQE_COMPRESION | MLX5DV_CONTEXT_MASK_SWP |
			       MLX5DV_CONTEXT_MASK_STRIDING_RQ |
			       MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS |
			       MLX5DV_CONTEXT_MASK_DYN_BFREGS |
			       MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS |
			       MLX5DV_CONTEXT_MASK_DC_ODP_CAPS | MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS |
			       MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD |
			       MLX5DV_CONTEXT_MASK_DCI_STREAMS |
			       MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH |
			       MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD;
	uint64_t want;

	if (!ours(ctx_in))
		return not_supported(__func__);
	if (!attrs_out)
		return EINVAL;
	want = attrs_out->comp_mask & known;
	attrs_out->version = 0;
	/* CQE version 1 (user index in the CQE), as every ConnectX-5 and
	 * later; no multi-packet WQEs, CQE compression or 128-byte CQEs */
	attrs_out->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
	attrs_out->comp_mask = want;
	/* requested capabilities gdak does not have are zero, the answer a
	 * device without them gives */
	if (want & MLX5DV_CONTEXT_MASK_CQE_COMPRESION)
		memset(&attrs_out->cqe_comp_caps, 0, sizeof(attrs_out->cqe_comp_caps));
	if (want & MLX5DV_CONTEXT_MASK_SWP)
		memset(&attrs_out->sw_parsing_caps, 0, sizeof(attrs_out->sw_parsing_caps));
	if (want & MLX5DV_CONTEXT_MASK_STRIDING_RQ)
		memset(&attrs_out->striding_rq_caps, 0, sizeof(attrs_out->striding_rq_caps));
	if (want & MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS)
		attrs_out->tunnel_offloads_caps = 0;
	if (want & MLX5DV_CONTEXT_MASK_DYN_BFREGS)
		attrs_out->max_dynamic_bfregs = 0; /* each QP has its own page anyway */
	if (want & MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS)
		attrs_out->flow_action_flags = 0;
	if (want & MLX5DV_CONTEXT_MASK_DC_ODP_CAPS)
		attrs_out->dc_odp_caps = 0;
	if (want & MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS)
		attrs_out->num_lag_ports = 1;
	if (want & MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD)
		memset(&attrs_out->sig_caps, 0, sizeof(attrs_out->sig_caps));
	if (want & MLX5DV_CONTEXT_MASK_DCI_STREAMS) {
		/* up to 16 concurrent streams (the NIC model's GDAK_DCI_MAX_STREAMS);
		 * an error fails the whole DCI, no stream errors on its own */
		attrs_out->dci_streams_caps.max_log_num_concurent = 4;
		attrs_out->dci_streams_caps.max_log_num_errored = 0;
	}
	if (want & MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH)
		attrs_out->max_wr_memcpy_length = 0;
	if (want & MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD)
		memset(&attrs_out->crypto_caps, 0, sizeof(attrs_out->crypto_caps));
	return 0;
}

/* ---- MLX5_1.1 ---- */

struct ibv_cq_ex *mlx5dv_create_cq(struct ibv_context *context, struct ibv_cq_init_attr_ex *cq_attr,
				   struct mlx5dv_cq_init_attr *mlx5_cq_attr)
{
	const uint64_t known = MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE |
			       MLX5DV_CQ_INIT_ATTR_MASK_FLAGS | MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;

	if (!ours(context))
		return no_object(__func__);
	if (!cq_attr) {
		errno = EINVAL;
		return NULL;
	}
	if (mlx5_cq_attr) {
		uint64_t m = mlx5_cq_attr->comp_mask;

		if (m & ~known) {
			dv_log(__func__, "unknown comp_mask bits");
			errno = EINVAL;
			return NULL;
		}
		if (m & MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE) {
			dv_log(__func__, "CQE compression: not supported by the emulated NIC");
			errno = EOPNOTSUPP;
			return NULL;
		}
		if ((m & MLX5DV_CQ_INIT_ATTR_MASK_FLAGS) && mlx5_cq_attr->flags) {
			dv_log(__func__,
			       mlx5_cq_attr->flags & ~(uint32_t)MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD
				       ? "unknown CQ flags"
				       : "CQE padding (128-byte CQEs): not supported");
			errno = mlx5_cq_attr->flags & ~(uint32_t)MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD
					? EINVAL
					: EOPNOTSUPP;
			return NULL;
		}
		if (m & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) {
			if (mlx5_cq_attr->cqe_size == 128) {
				/* ConnectX takes them; the NIC model writes 64-byte CQEs */
				dv_log(__func__, "128-byte CQEs: not supported by the emulated NIC "
						 "(ask for 64)");
				errno = EOPNOTSUPP;
				return NULL;
			}
			if (mlx5_cq_attr->cqe_size != 64) {
				errno = EINVAL;
				return NULL;
			}
		}
	}
	return ibv_create_cq_ex(context, cq_attr);
}

/* ---- MLX5_1.2 ---- */

/* Two versions, as rdma-core has them (1.0 programs get the same answer:
 * the difference is only in what a CQ's out struct holds on success). */
static int get_qp(struct ibv_qp *in, struct mlx5dv_qp *out)
{
	struct gdak_ibv_qp_rings r;
	int ret;

	if (!out)
		return EINVAL;
	ret = gdak_ibv_qp_rings(in, &r);
	if (ret)
		return ret;
	out->dbrec = (__be32 *)r.dbrec;
	out->sq.buf = r.sq;
	out->sq.wqe_cnt = r.sq_cnt;
	out->sq.stride = 64;
	out->rq.buf = r.rq;
	out->rq.wqe_cnt = r.rq_cnt;
	out->rq.stride = r.rq_stride;
	/* libmlx5 hands out the first half; it alternates halves itself */
	out->bf.reg = (char *)r.uar + 0x800;
	out->bf.size = r.bf_size;
	/* no uverbs command fd to mmap a UAR from: the offset, the raw QP
	 * handles and the TIR address are not available (mask bits cleared,
	 * as rdma-core does for what it cannot give) */
	out->comp_mask = 0;
	return 0;
}

static int get_cq(struct ibv_cq *in, struct mlx5dv_cq *out, int v1_0)
{
	static void *arm_reg; /* MLX5_1.0 callers get a pointer to this pointer */
	struct gdak_ibv_cq_ring r;
	int ret;

	if (!out)
		return EINVAL;
	ret = gdak_ibv_cq_ring(in, &r);
	if (ret)
		return ret;
	out->buf = r.buf;
	out->dbrec = (__be32 *)r.dbrec;
	out->cqe_cnt = r.cqe_cnt;
	out->cqe_size = r.cqe_size;
	out->cqn = r.cqn;
	out->comp_mask = 0;
	if (v1_0) {
		/* the 1.0 ABI returned the address of the UAR pointer there */
		__atomic_store_n(&arm_reg, r.uar, __ATOMIC_RELAXED);
		out->cq_uar = (void *)&arm_reg;
	} else {
		out->cq_uar = r.uar;
	}
	return 0;
}

static int get_pd(struct ibv_pd *in, struct mlx5dv_pd *out)
{
	uint32_t pdn;
	int ret;

	if (!out)
		return EINVAL;
	ret = gdak_ibv_pd_num(in, &pdn);
	if (ret)
		return ret;
	out->pdn = pdn;
	out->comp_mask = 0;
	return 0;
}

static int get_ah(struct ibv_ah *in, struct mlx5dv_ah *out)
{
	int ret;

	if (!out)
		return EINVAL;
	ret = gdak_ibv_ah_av(in, &out->av);
	if (ret)
		return ret;
	out->comp_mask = 0;
	return 0;
}

/* gdak's SRQs hand receive WRs to the QPs' own rings as messages need
 * them: there is no SRQ ring to give (buf, record and stride stay NULL / 0,
 * and a program that writes SRQ WQEs itself finds nothing to write to).
 * The number is real: what a DEVX QP or DCT names in its srqn (NVSHMEM's
 * DCIs do, and never post to it). */
static int get_srq(struct ibv_srq *in, struct mlx5dv_srq *out)
{
	uint32_t srqn;
	uint64_t want;
	int ret;

	if (!out)
		return EINVAL;
	ret = gdak_ibv_srq_num(in, &srqn);
	if (ret)
		return ret;
	want = out->comp_mask;
	memset(out, 0, sizeof(*out));
	if (want & MLX5DV_SRQ_MASK_SRQN) {
		out->srqn = srqn;
		out->comp_mask = MLX5DV_SRQ_MASK_SRQN;
	}
	return 0;
}

static int init_obj(struct mlx5dv_obj *obj, uint64_t obj_type, int v1_0)
{
	struct ibv_context *ctx = NULL;
	int ret = 0;

	/* rdma-core takes the context from the first object asked for and
	 * answers EINVAL when none is */
	if (!obj || !(obj_type & (MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ | MLX5DV_OBJ_RWQ |
				  MLX5DV_OBJ_DM | MLX5DV_OBJ_AH | MLX5DV_OBJ_PD)))
		return EINVAL;
	if (obj_type & MLX5DV_OBJ_QP)
		ctx = obj->qp.in ? obj->qp.in->context : NULL;
	else if (obj_type & MLX5DV_OBJ_CQ)
		ctx = obj->cq.in ? obj->cq.in->context : NULL;
	else if (obj_type & MLX5DV_OBJ_SRQ)
		ctx = obj->srq.in ? obj->srq.in->context : NULL;
	else if (obj_type & MLX5DV_OBJ_RWQ)
		ctx = obj->rwq.in ? obj->rwq.in->context : NULL;
	else if (obj_type & MLX5DV_OBJ_DM)
		ctx = obj->dm.in ? obj->dm.in->context : NULL;
	else if (obj_type & MLX5DV_OBJ_AH)
		ctx = obj->ah.in ? obj->ah.in->context : NULL;
	else
		ctx = obj->pd.in ? obj->pd.in->context : NULL;
	if (!ctx)
		return EINVAL;
	if (!ours(ctx))
		return not_supported("mlx5dv_init_obj");
	if (obj_type & (MLX5DV_OBJ_RWQ | MLX5DV_OBJ_DM)) {
		/* RWQs and device memory do not exist in gdak */
		dv_log("mlx5dv_init_obj", "RWQ / DM objects do not exist in gdak");
		return EOPNOTSUPP;
	}
	if (obj_type & MLX5DV_OBJ_SRQ)
		ret = get_srq(obj->srq.in, obj->srq.out);
	if (!ret && (obj_type & MLX5DV_OBJ_QP))
		ret = get_qp(obj->qp.in, obj->qp.out);
	if (!ret && (obj_type & MLX5DV_OBJ_CQ))
		ret = get_cq(obj->cq.in, obj->cq.out, v1_0);
	if (!ret && (obj_type & MLX5DV_OBJ_AH))
		ret = get_ah(obj->ah.in, obj->ah.out);
	if (!ret && (obj_type & MLX5DV_OBJ_PD))
		ret = get_pd(obj->pd.in, obj->pd.out);
	return ret;
}

__typeof__(mlx5dv_init_obj) gdak_mlx5dv_init_obj_1_2, gdak_mlx5dv_init_obj_1_0;
int gdak_mlx5dv_init_obj_1_2(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	return init_obj(obj, obj_type, 0);
}
__asm__(".symver gdak_mlx5dv_init_obj_1_2, mlx5dv_init_obj@@MLX5_1.2");

int gdak_mlx5dv_init_obj_1_0(struct mlx5dv_obj *obj, uint64_t obj_type)
{
	return init_obj(obj, obj_type, 1);
}
__asm__(".symver gdak_mlx5dv_init_obj_1_0, mlx5dv_init_obj@MLX5_1.0");

int mlx5dv_set_context_attr(struct ibv_context *context, enum mlx5dv_set_ctx_attr_type type,
			    void *attr)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.3 ---- */

/* A DCT (its access key) or a DCI (its streams), as NVSHMEM's IBGDA
 * creates its DCT: IBV_QPT_DRIVER, an SRQ and a receive CQ. */
static struct ibv_qp *create_dc(struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_attr,
				const struct mlx5dv_qp_init_attr *dv)
{
	struct gdak_ibv_dc_attr dc = { 0 };

	if (qp_attr->qp_type != IBV_QPT_DRIVER) {
		dv_log(__func__, "DC QPs are created with qp_type IBV_QPT_DRIVER");
		errno = EINVAL;
		return NULL;
	}
	switch (dv->dc_init_attr.dc_type) {
	case MLX5DV_DCTYPE_DCT:
		dc.type = GDAK_IBV_DCT;
		dc.key = dv->dc_init_attr.dct_access_key;
		break;
	case MLX5DV_DCTYPE_DCI:
		dc.type = GDAK_IBV_DCI;
		dc.streams = 1;
		if (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS) {
			const struct mlx5dv_dci_streams *st = &dv->dc_init_attr.dci_streams;

			/* what mlx5dv_query_device's dci_streams_caps offers */
			if (st->log_num_concurent > 4 || st->log_num_errored > 0) {
				dv_log(__func__, "DCI streams beyond dci_streams_caps (16 "
						 "concurrent, no errored streams)");
				errno = EOPNOTSUPP;
				return NULL;
			}
			dc.streams = 1u << st->log_num_concurent;
		}
		break;
	default:
		dv_log(__func__, "unknown DC type");
		errno = EINVAL;
		return NULL;
	}
	return gdak_ibv_create_dc_qp(context, qp_attr, &dc);
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_attr,
				struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
	/* the NIC model never scatters to the CQE, which either flag allows */
	const uint32_t flags_ok = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
				  MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE;

	if (!ours(context))
		return no_object(__func__);
	if (!qp_attr) {
		errno = EINVAL;
		return NULL;
	}
	if (mlx5_qp_attr) {
		uint64_t m = mlx5_qp_attr->comp_mask;

		if (m & ~(uint64_t)(MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS |
				    MLX5DV_QP_INIT_ATTR_MASK_DC |
				    MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS |
				    MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS)) {
			dv_log(__func__, "unknown comp_mask bits");
			errno = EINVAL;
			return NULL;
		}
		if ((m & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS) &&
		    (!(m & MLX5DV_QP_INIT_ATTR_MASK_DC) ||
		     mlx5_qp_attr->dc_init_attr.dc_type != MLX5DV_DCTYPE_DCI)) {
			dv_log(__func__, "DCI streams on a QP that is not a DCI");
			errno = EINVAL;
			return NULL;
		}
		if ((m & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) && mlx5_qp_attr->send_ops_flags) {
			dv_log(__func__, "mlx5 send ops (mlx5dv_wr_*): not supported");
			errno = EOPNOTSUPP;
			return NULL;
		}
		if ((m & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS) &&
		    (mlx5_qp_attr->create_flags & ~flags_ok)) {
			dv_log(__func__, "create flags other than the scatter-to-CQE ones: not "
					 "supported");
			errno = EOPNOTSUPP;
			return NULL;
		}
		if (m & MLX5DV_QP_INIT_ATTR_MASK_DC)
			return create_dc(context, qp_attr, mlx5_qp_attr);
	}
	return ibv_create_qp_ex(context, qp_attr);
}

struct ibv_wq *mlx5dv_create_wq(struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr,
				struct mlx5dv_wq_init_attr *mlx5_wq_attr)
{
	return no_object(__func__);
}

/* ---- MLX5_1.4 ---- */

int mlx5dv_get_clock_info(struct ibv_context *context, struct mlx5dv_clock_info *clock_info)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.5 ---- */

struct ibv_flow_action *mlx5dv_create_flow_action_esp(struct ibv_context *ctx,
						      struct ibv_flow_action_esp_attr *esp,
						      struct mlx5dv_flow_action_esp *mlx5_attr)
{
	return no_object(__func__);
}

/* ---- MLX5_1.6 ---- */

struct ibv_flow *mlx5dv_create_flow(struct mlx5dv_flow_matcher *matcher,
				    struct mlx5dv_flow_match_parameters *match_value,
				    size_t num_actions,
				    struct mlx5dv_flow_action_attr actions_attr[])
{
	return no_object(__func__);
}

struct mlx5dv_flow_matcher *mlx5dv_create_flow_matcher(
	struct ibv_context *context, struct mlx5dv_flow_matcher_attr *matcher_attr)
{
	return no_object(__func__);
}

int mlx5dv_destroy_flow_matcher(struct mlx5dv_flow_matcher *matcher)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.7 ---- */

struct ibv_flow_action *mlx5dv_create_flow_action_modify_header(struct ibv_context *ctx,
								size_t actions_sz,
								uint64_t actions[],
								enum mlx5dv_flow_table_type ft_type)
{
	return no_object(__func__);
}

struct ibv_flow_action *mlx5dv_create_flow_action_packet_reformat(
	struct ibv_context *ctx, size_t data_sz, void *data,
	enum mlx5dv_flow_action_packet_reformat_type reformat_type,
	enum mlx5dv_flow_table_type ft_type)
{
	return no_object(__func__);
}

/* ---- MLX5_1.8 ---- */

bool mlx5dv_is_supported(struct ibv_device *device)
{
	return device && gdak_ibv_is_device(device);
}

/* ---- MLX5_1.10 ---- */

struct ibv_dm *mlx5dv_alloc_dm(struct ibv_context *context, struct ibv_alloc_dm_attr *dm_attr,
			       struct mlx5dv_alloc_dm_attr *mlx5_dm_attr)
{
	return no_object(__func__);
}

struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr)
{
	return no_object(__func__);
}

int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
	return not_supported(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_ibv_qp(struct ibv_qp *ibqp)
{
	if (!ibqp || ibqp->qp_type != IBV_QPT_RAW_PACKET) {
		errno = EINVAL;
		return NULL;
	}
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_table(struct mlx5dv_dr_table *table)
{
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_vport(struct mlx5dv_dr_domain *domain,
							    uint32_t vport)
{
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_drop(void)
{
	return generic_action(GA_DROP);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_flow_counter(struct mlx5dv_devx_obj *devx_obj,
							      uint32_t offset)
{
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_modify_header(struct mlx5dv_dr_domain *domain,
							       uint32_t flags, size_t actions_sz,
							       __be64 actions[])
{
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_packet_reformat(
	struct mlx5dv_dr_domain *domain, uint32_t flags,
	enum mlx5dv_flow_action_packet_reformat_type reformat_type, size_t data_sz, void *data)
{
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_tag(uint32_t tag_value)
{
	struct mlx5dv_dr_action *a = generic_action(GA_TAG);

	if (a)
		to_ga(a)->tag = tag_value & 0xffffff;
	return a;
}

int mlx5dv_dr_action_destroy(struct mlx5dv_dr_action *action)
{
	if (!action)
		return EINVAL;
	if (to_ga(action)->magic != GA_MAGIC)
		return not_supported(__func__);
	to_ga(action)->magic = 0;
	free(action);
	return 0;
}

struct mlx5dv_dr_domain *mlx5dv_dr_domain_create(struct ibv_context *ctx,
						 enum mlx5dv_dr_domain_type type)
{
	return no_object(__func__);
}

int mlx5dv_dr_domain_destroy(struct mlx5dv_dr_domain *domain)
{
	return not_supported(__func__);
}

int mlx5dv_dr_domain_sync(struct mlx5dv_dr_domain *domain, uint32_t flags)
{
	return errno = not_supported(__func__);
}

struct mlx5dv_dr_matcher *mlx5dv_dr_matcher_create(struct mlx5dv_dr_table *table, uint16_t priority,
						   uint8_t match_criteria_enable,
						   struct mlx5dv_flow_match_parameters *mask)
{
	return no_object(__func__);
}

int mlx5dv_dr_matcher_destroy(struct mlx5dv_dr_matcher *matcher)
{
	return not_supported(__func__);
}

struct mlx5dv_dr_rule *mlx5dv_dr_rule_create(struct mlx5dv_dr_matcher *matcher,
					     struct mlx5dv_flow_match_parameters *value,
					     size_t num_actions, struct mlx5dv_dr_action *actions[])
{
	return no_object(__func__);
}

int mlx5dv_dr_rule_destroy(struct mlx5dv_dr_rule *rule)
{
	return not_supported(__func__);
}

struct mlx5dv_dr_table *mlx5dv_dr_table_create(struct mlx5dv_dr_domain *domain, uint32_t level)
{
	return no_object(__func__);
}

int mlx5dv_dr_table_destroy(struct mlx5dv_dr_table *table)
{
	return not_supported(__func__);
}

struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
	return no_object(__func__);
}

/* ---- MLX5_1.12 ---- */

struct mlx5dv_var *mlx5dv_alloc_var(struct ibv_context *context, uint32_t flags)
{
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_flow_meter(struct mlx5dv_dr_flow_meter_attr *attr)
{
	return no_object(__func__);
}

int mlx5dv_dr_action_modify_flow_meter(struct mlx5dv_dr_action *action,
				       struct mlx5dv_dr_flow_meter_attr *attr,
				       __be64 modify_field_select)
{
	return errno = not_supported(__func__);
}

int mlx5dv_dump_dr_domain(FILE *fout, struct mlx5dv_dr_domain *domain)
{
	return fout && domain ? -not_supported(__func__) : -EINVAL;
}

int mlx5dv_dump_dr_matcher(FILE *fout, struct mlx5dv_dr_matcher *matcher)
{
	/* the dump calls answer with a negative errno */
	return fout && matcher ? -not_supported(__func__) : -EINVAL;
}

int mlx5dv_dump_dr_rule(FILE *fout, struct mlx5dv_dr_rule *rule)
{
	/* the dump calls answer with a negative errno */
	return fout && rule ? -not_supported(__func__) : -EINVAL;
}

int mlx5dv_dump_dr_table(FILE *fout, struct mlx5dv_dr_table *table)
{
	/* the dump calls answer with a negative errno */
	return fout && table ? -not_supported(__func__) : -EINVAL;
}

void mlx5dv_free_var(struct mlx5dv_var *dv_var)
{
	note(__func__);
}

/* ---- MLX5_1.13 ---- */

struct mlx5dv_pp *mlx5dv_pp_alloc(struct ibv_context *context, size_t pp_context_sz,
				  const void *pp_context, uint32_t flags)
{
	return no_object(__func__);
}

void mlx5dv_pp_free(struct mlx5dv_pp *pp)
{
	note(__func__);
}

/* ---- MLX5_1.14 ---- */

struct mlx5dv_dr_action *mlx5dv_dr_action_create_default_miss(void)
{
	return generic_action(GA_DEFAULT_MISS);
}

void mlx5dv_dr_domain_set_reclaim_device_memory(struct mlx5dv_dr_domain *dmn, bool enable)
{
	note(__func__);
}

int mlx5dv_modify_qp_lag_port(struct ibv_qp *qp, uint8_t port_num)
{
	return not_supported(__func__);
}

int mlx5dv_query_qp_lag_port(struct ibv_qp *qp, uint8_t *port_num, uint8_t *active_port_num)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.15 ---- */

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_devx_tir(struct mlx5dv_devx_obj *devx_obj)
{
	return no_object(__func__);
}

/* ---- MLX5_1.16 ---- */

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_array(
	struct mlx5dv_dr_domain *domain, size_t num_dest,
	struct mlx5dv_dr_action_dest_attr *dests[])
{
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_flow_sampler(
	struct mlx5dv_dr_flow_sampler_attr *attr)
{
	return no_object(__func__);
}

/* ---- MLX5_1.17 ---- */

struct mlx5dv_dr_action *mlx5dv_dr_action_create_aso(struct mlx5dv_dr_domain *domain,
						     struct mlx5dv_devx_obj *devx_obj,
						     uint32_t offset, uint32_t flags,
						     uint8_t return_reg_c)
{
	return no_object(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_pop_vlan(void)
{
	return generic_action(GA_POP_VLAN);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_push_vlan(struct mlx5dv_dr_domain *domain,
							   __be32 vlan_hdr)
{
	return no_object(__func__);
}

int mlx5dv_dr_action_modify_aso(struct mlx5dv_dr_action *action, uint32_t offset, uint32_t flags,
				uint8_t return_reg_c)
{
	return not_supported(__func__);
}

int mlx5dv_modify_qp_sched_elem(struct ibv_qp *qp, const struct mlx5dv_sched_leaf *requestor,
				const struct mlx5dv_sched_leaf *responder)
{
	return not_supported(__func__);
}

int mlx5dv_modify_qp_udp_sport(struct ibv_qp *qp, uint16_t udp_sport)
{
	return not_supported(__func__);
}

struct mlx5dv_sched_leaf *mlx5dv_sched_leaf_create(struct ibv_context *context,
						   const struct mlx5dv_sched_attr *sched_attr)
{
	return no_object(__func__);
}

int mlx5dv_sched_leaf_destroy(struct mlx5dv_sched_leaf *leaf)
{
	return not_supported(__func__);
}

int mlx5dv_sched_leaf_modify(struct mlx5dv_sched_leaf *leaf,
			     const struct mlx5dv_sched_attr *sched_attr)
{
	return not_supported(__func__);
}

struct mlx5dv_sched_node *mlx5dv_sched_node_create(struct ibv_context *context,
						   const struct mlx5dv_sched_attr *sched_attr)
{
	return no_object(__func__);
}

int mlx5dv_sched_node_destroy(struct mlx5dv_sched_node *node)
{
	return not_supported(__func__);
}

int mlx5dv_sched_node_modify(struct mlx5dv_sched_node *node,
			     const struct mlx5dv_sched_attr *sched_attr)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.18 ---- */

int mlx5dv_reserved_qpn_alloc(struct ibv_context *ctx, uint32_t *qpn)
{
	return not_supported(__func__);
}

int mlx5dv_reserved_qpn_dealloc(struct ibv_context *ctx, uint32_t qpn)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.19 ---- */

void *mlx5dv_dm_map_op_addr(struct ibv_dm *dm, uint8_t op)
{
	return no_object(__func__);
}

int _mlx5dv_query_port(struct ibv_context *context, uint32_t port_num, struct mlx5dv_port *info,
		       size_t info_len)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.20 ---- */

void mlx5dv_dr_domain_allow_duplicate_rules(struct mlx5dv_dr_domain *domain, bool allow)
{
	note(__func__);
}

int mlx5dv_map_ah_to_qp(struct ibv_ah *ah, uint32_t qp_num)
{
	return not_supported(__func__);
}

int mlx5dv_qp_cancel_posted_send_wrs(struct mlx5dv_qp_ex *mqp, uint64_t wr_id)
{
	/* the count of cancelled WRs, or a negative errno */
	return -not_supported(__func__);
}

int _mlx5dv_mkey_check(struct mlx5dv_mkey *mkey, struct mlx5dv_mkey_err *err_info,
		       size_t err_info_size)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.21 ---- */

int mlx5dv_crypto_login(struct ibv_context *context, struct mlx5dv_crypto_login_attr *login_attr)
{
	return not_supported(__func__);
}

int mlx5dv_crypto_login_query_state(struct ibv_context *context,
				    enum mlx5dv_crypto_login_state *state)
{
	return not_supported(__func__);
}

int mlx5dv_crypto_logout(struct ibv_context *context)
{
	return not_supported(__func__);
}

int mlx5dv_dci_stream_id_reset(struct ibv_qp *qp, uint16_t stream_id)
{
	return not_supported(__func__);
}

struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context,
				     struct mlx5dv_dek_init_attr *init_attr)
{
	return no_object(__func__);
}

int mlx5dv_dek_destroy(struct mlx5dv_dek *dek)
{
	return not_supported(__func__);
}

int mlx5dv_dek_query(struct mlx5dv_dek *dek, struct mlx5dv_dek_attr *attr)
{
	return not_supported(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_ib_port(struct mlx5dv_dr_domain *domain,
							      uint32_t ib_port)
{
	return no_object(__func__);
}

int mlx5dv_dr_matcher_set_layout(struct mlx5dv_dr_matcher *matcher,
				 struct mlx5dv_dr_matcher_layout *layout)
{
	return errno = not_supported(__func__);
}

struct ibv_device **mlx5dv_get_vfio_device_list(struct mlx5dv_vfio_context_attr *attr)
{
	return no_object(__func__);
}

int mlx5dv_vfio_get_events_fd(struct ibv_context *ibctx)
{
	return (int)not_supported_neg1(__func__);
}

int mlx5dv_vfio_process_events(struct ibv_context *context)
{
	return not_supported(__func__);
}

/* ---- MLX5_1.22 ---- */

int mlx5dv_dr_aso_other_domain_link(struct mlx5dv_devx_obj *devx_obj,
				    struct mlx5dv_dr_domain *peer_dmn, struct mlx5dv_dr_domain *dmn,
				    uint32_t flags, uint8_t return_reg_c)
{
	return errno = not_supported(__func__);
}

int mlx5dv_dr_aso_other_domain_unlink(struct mlx5dv_devx_obj *devx_obj,
				      struct mlx5dv_dr_domain *dmn)
{
	return errno = not_supported(__func__);
}

/* ---- MLX5_1.24 ---- */

struct mlx5dv_steering_anchor *mlx5dv_create_steering_anchor(
	struct ibv_context *context, struct mlx5dv_steering_anchor_attr *attr)
{
	return no_object(__func__);
}

struct mlx5dv_crypto_login_obj *mlx5dv_crypto_login_create(
	struct ibv_context *context, struct mlx5dv_crypto_login_attr_ex *login_attr)
{
	return no_object(__func__);
}

int mlx5dv_crypto_login_destroy(struct mlx5dv_crypto_login_obj *crypto_login)
{
	return not_supported(__func__);
}

int mlx5dv_crypto_login_query(struct mlx5dv_crypto_login_obj *crypto_login,
			      struct mlx5dv_crypto_login_query_attr *query_attr)
{
	return not_supported(__func__);
}

int mlx5dv_destroy_steering_anchor(struct mlx5dv_steering_anchor *sa)
{
	return not_supported(__func__);
}

struct mlx5dv_dr_action *mlx5dv_dr_action_create_dest_root_table(struct mlx5dv_dr_table *table,
								 uint16_t priority)
{
	return no_object(__func__);
}
