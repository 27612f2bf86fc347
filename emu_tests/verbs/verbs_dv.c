/* SPDX-License-Identifier: MIT */
/*
 * verbs_dv.c - gdak's libmlx5.so.1 on gdak's libibverbs.so.1, as an mlx5dv
 * program sees them: the device is mlx5-capable, query_device reports CQE
 * version 1, mlx5dv_create_cq/qp refuse what gdak does not do, and
 * mlx5dv_init_obj hands out rings the program then drives by itself - two
 * QPs write their own WQEs (one rung by BlueFlame, one by an 8-byte
 * doorbell), and their CQEs are read from the one CQ ring they share, each
 * field checked, the data too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_verbs.h"

#define BUF 65536

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;

/* Attributes of an RC QP on pd with cq for both queues, all else 0. */
static void rc_attr(struct ibv_qp_init_attr_ex *a, struct mlx5dv_qp_init_attr *d, struct ibv_cq *cq)
{
	memset(a, 0, sizeof(*a));
	memset(d, 0, sizeof(*d));
	a->send_cq = a->recv_cq = cq;
	a->qp_type = IBV_QPT_RC;
	a->comp_mask = IBV_QP_INIT_ATTR_PD;
	a->pd = pd;
}

static struct ibv_qp *dv_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex a;
	struct mlx5dv_qp_init_attr d;

	rc_attr(&a, &d, cq);
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	d.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
	d.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
	return mlx5dv_create_qp(ctx, &a, &d);
}

static void modify(struct ibv_qp *qp, uint32_t dqpn)
{
	struct gdak_vt_path p = gdak_vt_path_1024(gid, dqpn, 0, 4);

	REQUIRE_EQ(gdak_vt_to_init(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ), 0);
	REQUIRE_EQ(gdak_vt_to_rtr(qp, &p, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rts(qp, &p, 0), 0);
}

/* One RDMA WQE (3 DS, signalled) at index idx, recorded and rung. */
static void post_rdma(struct ibv_qp *qp, struct mlx5dv_qp *dv, uint16_t idx, uint8_t opcode,
		      void *laddr, uint32_t len, uint32_t lkey, void *raddr, uint32_t rkey, int bf)
{
	uint8_t *w = (uint8_t *)dv->sq.buf + (size_t)(idx & (dv->sq.wqe_cnt - 1)) * 64;
	struct mlx5_wqe_raddr_seg *r = (void *)(w + 16);
	/* BlueFlame alternates the register's halves, as libmlx5 does */
	uint64_t *reg = (uint64_t *)(void *)((uint8_t *)dv->bf.reg +
					     (bf && (idx & 1) ? dv->bf.size : 0));

	memset(w, 0, 64);
	mlx5dv_set_ctrl_seg((void *)w, idx, opcode, 0, qp->qp_num, MLX5_WQE_CTRL_CQ_UPDATE, 3, 0,
			    0);
	r->raddr = htobe64((uintptr_t)raddr);
	r->rkey = htobe32(rkey);
	mlx5dv_set_data_seg((void *)(w + 32), len, lkey, (uintptr_t)laddr);
	__atomic_store_n(&dv->dbrec[MLX5_SND_DBR], htobe32((uint16_t)(idx + 1)), __ATOMIC_RELEASE);
	if (bf) {
		for (int i = 7; i >= 1; i--)
			__atomic_store_n(reg + i, ((uint64_t *)(void *)w)[i], __ATOMIC_RELAXED);
	}
	__atomic_store_n(reg, ((uint64_t *)(void *)w)[0], __ATOMIC_RELEASE);
}

static uint64_t cq_ci;

static void take_cqe(struct mlx5dv_cq *dv, struct mlx5_cqe64 *out)
{
	struct mlx5_cqe64 *c = (struct mlx5_cqe64 *)dv->buf + (cq_ci & (dv->cqe_cnt - 1));
	uint8_t own;

	for (;;) {
		own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);
		if ((own >> 4) != MLX5_CQE_INVALID && (own & 1) == !!(cq_ci & dv->cqe_cnt))
			break;
		sched_yield();
	}
	memcpy(out, c, 64);
	cq_ci++;
	__atomic_store_n(&dv->dbrec[0], htobe32((uint32_t)cq_ci & 0xffffff), __ATOMIC_RELEASE);
}

static void check_cqe(const struct mlx5_cqe64 *c, uint32_t qpn, uint16_t idx, uint32_t len)
{
	struct mlx5_cqe64 want;

	memset(&want, 0, sizeof(want));
	want.byte_cnt = htobe32(len);
	want.sop_drop_qpn = htobe32(qpn);
	want.wqe_counter = htobe16(idx);
	want.op_own = (uint8_t)(MLX5_CQE_REQ << 4 | (c->op_own & 1));
	CHECK_MEM(c, &want, 64);
}

int main(void)
{
	struct ibv_device **list;
	struct mlx5dv_context dctx;
	struct ibv_cq_init_attr_ex ca;
	struct mlx5dv_cq_init_attr dca;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct mlx5dv_qp qa, qb;
	struct mlx5dv_cq dcq;
	struct mlx5dv_pd dpd;
	struct mlx5dv_ah dah;
	struct mlx5dv_obj obj;
	struct ibv_ah_attr aha;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct mlx5_cqe64 c1, c2;
	uint8_t *buf;
	int n = 0;

	list = ibv_get_device_list(&n);
	REQUIRE(list && n >= 1);
	CHECK(mlx5dv_is_supported(list[0]));
	ctx = ibv_open_device(list[0]);
	REQUIRE(ctx != NULL);
	ibv_free_device_list(list);
	REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd != NULL);

	/* query_device: CQE v1; asked-for capabilities answered (zero), the
	 * clock ones cleared */
	memset(&dctx, 0xff, sizeof(dctx));
	dctx.comp_mask = MLX5DV_CONTEXT_MASK_CQE_COMPRESION | MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK;
	REQUIRE_EQ(mlx5dv_query_device(ctx, &dctx), 0);
	CHECK_EQ(dctx.flags, MLX5DV_CONTEXT_FLAGS_CQE_V1);
	CHECK_EQ(dctx.comp_mask, MLX5DV_CONTEXT_MASK_CQE_COMPRESION);
	CHECK_EQ(dctx.cqe_comp_caps.max_num, 0);

	/* create_cq: 128-byte CQEs and compression refused, 64 taken */
	memset(&ca, 0, sizeof(ca));
	ca.cqe = 63;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	memset(&dca, 0, sizeof(dca));
	dca.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
	dca.cqe_size = 128;
	errno = 0;
	CHECK(mlx5dv_create_cq(ctx, &ca, &dca) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	dca.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE;
	errno = 0;
	CHECK(mlx5dv_create_cq(ctx, &ca, &dca) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	dca.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
	dca.cqe_size = 64;
	cqx = mlx5dv_create_cq(ctx, &ca, &dca);
	REQUIRE(cqx != NULL);
	cq = ibv_cq_ex_to_cq(cqx);

	/* create_qp: DC on a QP type that is not IBV_QPT_DRIVER refused (DC
	 * itself: verbs_dc.c); RC with a scatter-to-CQE flag taken */
	{
		struct ibv_qp_init_attr_ex x;
		struct mlx5dv_qp_init_attr d;

		rc_attr(&x, &d, cq);
		x.cap.max_send_wr = 4;
		d.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
		d.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
		errno = 0;
		CHECK(mlx5dv_create_qp(ctx, &x, &d) == NULL);
		CHECK_EQ(errno, EINVAL);
	}
	a = dv_qp(cq);
	b = dv_qp(cq);
	REQUIRE(a && b);

	/* init_obj: QP, CQ, PD at once */
	memset(&obj, 0, sizeof(obj));
	memset(&qa, 0xff, sizeof(qa));
	qa.comp_mask = MLX5DV_QP_MASK_UAR_MMAP_OFFSET;
	obj.qp.in = a;
	obj.qp.out = &qa;
	obj.cq.in = cq;
	obj.cq.out = &dcq;
	obj.pd.in = pd;
	obj.pd.out = &dpd;
	REQUIRE_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_PD), 0);
	CHECK_EQ(qa.sq.stride, 64);
	CHECK(qa.sq.wqe_cnt >= 16 && !(qa.sq.wqe_cnt & (qa.sq.wqe_cnt - 1)));
	CHECK_EQ(qa.rq.wqe_cnt, 16);
	CHECK_EQ(qa.rq.stride, 16);
	CHECK((uint8_t *)qa.rq.buf + 16 * 16 <= (uint8_t *)qa.sq.buf); /* RQ first */
	CHECK(qa.dbrec != NULL);
	CHECK_EQ(((uintptr_t)qa.bf.reg & 0xfff), 0x800);
	CHECK_EQ(qa.bf.size, 256);
	CHECK_EQ(qa.comp_mask, 0); /* no UAR mmap offset to give */
	CHECK_EQ(dcq.cqe_size, 64);
	CHECK_EQ(dcq.cqe_cnt, 64);
	CHECK(dcq.cqn != 0 && dcq.cqn < (1u << 24));
	CHECK(dcq.buf != NULL && dcq.dbrec != NULL && dcq.cq_uar != NULL);
	CHECK_EQ(((struct mlx5_cqe64 *)dcq.buf)[5].op_own >> 4, MLX5_CQE_INVALID);
	CHECK(dpd.pdn != 0);
	memset(&obj, 0, sizeof(obj));
	obj.qp.in = b;
	obj.qp.out = &qb;
	REQUIRE_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP), 0);
	CHECK(qb.sq.buf != qa.sq.buf && qb.bf.reg != qa.bf.reg);
	/* the MLX5_1.0 version gives the address of the arm pointer */
	{
		int (*io10)(struct mlx5dv_obj *, uint64_t) = (int (*)(
			struct mlx5dv_obj *, uint64_t))dlvsym(RTLD_DEFAULT, "mlx5dv_init_obj",
							      "MLX5_1.0");
		struct mlx5dv_cq old;

		REQUIRE(io10 != NULL);
		memset(&obj, 0, sizeof(obj));
		obj.cq.in = cq;
		obj.cq.out = &old;
		REQUIRE_EQ(io10(&obj, MLX5DV_OBJ_CQ), 0);
		CHECK(*(void **)old.cq_uar == dcq.cq_uar);
		CHECK_EQ(old.cqn, dcq.cqn);
	}
	/* SRQs have no mlx5 ring in gdak: the number only (what NVSHMEM's
	 * DEVX QPs name), two SRQs two numbers */
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
		struct ibv_srq *srq = ibv_create_srq(pd, &sa), *srq2 = ibv_create_srq(pd, &sa);
		struct mlx5dv_srq ds, ds2;

		REQUIRE(srq != NULL && srq2 != NULL);
		memset(&obj, 0, sizeof(obj));
		memset(&ds, 0xee, sizeof(ds));
		ds.comp_mask = MLX5DV_SRQ_MASK_SRQN;
		obj.srq.in = srq;
		obj.srq.out = &ds;
		CHECK_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ), 0);
		CHECK_EQ(ds.comp_mask, MLX5DV_SRQ_MASK_SRQN);
		CHECK(ds.srqn != 0 && ds.srqn <= 0xffffff);
		CHECK(ds.buf == NULL && ds.dbrec == NULL && ds.stride == 0);
		memset(&ds2, 0, sizeof(ds2));
		ds2.comp_mask = MLX5DV_SRQ_MASK_SRQN;
		obj.srq.in = srq2;
		obj.srq.out = &ds2;
		CHECK_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ), 0);
		CHECK(ds2.srqn != ds.srqn && ds2.srqn != 0);
		CHECK_EQ(ibv_destroy_srq(srq2), 0);
		CHECK_EQ(ibv_destroy_srq(srq), 0);
	}
	/* AH: the address vector */
	memset(&aha, 0, sizeof(aha));
	aha.is_global = 1;
	aha.grh.dgid = gid;
	aha.grh.hop_limit = 7;
	aha.grh.traffic_class = 0x28;
	aha.grh.flow_label = 0x12345;
	aha.port_num = 1;
	ah = ibv_create_ah(pd, &aha);
	REQUIRE(ah != NULL);
	memset(&obj, 0, sizeof(obj));
	obj.ah.in = ah;
	obj.ah.out = &dah;
	REQUIRE_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH), 0);
	CHECK_MEM(dah.av->rgid, gid.raw, 16);
	CHECK_EQ(dah.av->hop_limit, 7);
	CHECK_EQ(dah.av->tclass, 0x28);
	CHECK_EQ(be32toh(dah.av->grh_gid_fl) & 0xfffff, 0x12345);
	CHECK_EQ(ibv_destroy_ah(ah), 0);

	/* the program drives the rings itself */
	buf = aligned_alloc(4096, BUF);
	REQUIRE(buf != NULL);
	mr = ibv_reg_mr(pd, buf, BUF,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(mr != NULL);
	modify(a, b->qp_num);
	modify(b, a->qp_num);
	for (unsigned i = 0; i < 40; i++) {
		uint32_t len = 100 + i * 37;

		gdak_test_fill(buf, len, i);
		memset(buf + 16384, 0, len);
		memset(buf + 32768, 0, len);
		/* a: WRITE buf -> buf+16K by BlueFlame; b: READ buf+16K -> buf+32K
		 * by an 8-byte doorbell after the WRITE completed */
		post_rdma(a, &qa, (uint16_t)i, MLX5_OPCODE_RDMA_WRITE, buf, len, mr->lkey,
			  buf + 16384, mr->rkey, 1);
		take_cqe(&dcq, &c1);
		check_cqe(&c1, a->qp_num, (uint16_t)i, len);
		CHECK_MEM(buf + 16384, buf, len);
		post_rdma(b, &qb, (uint16_t)i, MLX5_OPCODE_RDMA_READ, buf + 32768, len, mr->lkey,
			  buf + 16384, mr->rkey, 0);
		take_cqe(&dcq, &c2);
		check_cqe(&c2, b->qp_num, (uint16_t)i, len);
		CHECK_MEM(buf + 32768, buf, len);
	}
	CHECK(cq_ci > dcq.cqe_cnt); /* the shared ring wrapped */

	CHECK_EQ(ibv_destroy_cq(cq), EBUSY); /* QPs still on it */
	gdak_vt_destroy(&(struct gdak_vt_objs){
		.ctx = ctx, .pd = pd, .cq = cq, .qp = { a, b }, .mr = { mr } });
	free(buf);
	return gdak_test_end();
}
