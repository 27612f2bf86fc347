/* SPDX-License-Identifier: MIT */
/*
 * verbs_dc.c - the Dynamically Connected transport on gdak's libibverbs +
 * libmlx5, as NVSHMEM's IBGDA drives a ConnectX: DCTs made by
 * mlx5dv_create_qp (access key, SRQ, receive CQ; the kernel's DCT modify
 * masks) and by DEVX CREATE_DCT, DCIs made by mlx5dv_create_qp (rings from
 * mlx5dv_init_obj) and by DEVX CREATE_QP with qpc.st DCI over umem (an SRQ
 * named, as NVSHMEM names its own), then DC WQEs written by hand - ctrl,
 * the 48-byte address vector copied from an AH's mlx5dv_ah with the DC key
 * and the DCT number put in, raddr, atomic and data segments - to several
 * DCTs: WRITE, READ, fetch-add, CAS, SEND, the data checked byte for byte
 * and the CQEs read raw from the CQ rings; a SEND into the ring of a DEVX
 * RMP behind a DEVX DCT.  The error cases get the CQE
 * syndrome nm_dc.c gives (a DC connect that goes unanswered completes with
 * TRANSPORT_RETRY_EXC_ERR): a wrong access key (and the DCT's violation
 * count in QUERY_DCT), a DCT destroyed, a DCT in ERR, a drained DEVX DCT,
 * a compact AV on RoCE; and the DEVX statuses for bad DC mailboxes.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_cq_ring.h"
#include "gdak_dc_verbs.h"
#include "gdak_prm.h"
#include "gdak_prm_rc.h"
#include "gdak_rmp.h"
#include "gdak_test.h"
#include "gdak_test_wqe.h"
#include "gdak_verbs.h"

/* ---- PRM offsets (mlx5_ifc.h numbering, this test's own; accessors: gdak_prm.h) ---- */

#define CAP(off, w) 0x80 + (off), (w)
#define CQC(off, w) 0x80 + (off), (w)
#define QPC(off, w) 0xc0 + (off), (w)
#define ADS(off, w) 0xc0 + 0xc0 + (off), (w)
#define DCTC(off, w) 0x80 + (off), (w)
#define DCTC_KEY 0x80 + 0x100

enum {
	SYND_RETRY_EXC = 0x15, /* MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR */
	SYND_LOC_QP_OP = 0x02, /* MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR */
	LOG_SQ = 6,
	LOG_CQ = 6,
};

#define KEY0 0x1122334455667788ull
#define KEY1 0x0badc0ffee000001ull
#define KEYX 0x00000000cafef00dull /* the DEVX DCT's */

static struct ibv_context *ctx;
static union ibv_gid gid;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *buf; /* 64 KiB, the MR */

/* ---- a DCI as device code sees it: ring, record, register, CQ ring ---- */

struct dci {
	const char *name;
	uint32_t qpn;
	uint8_t *sq;
	uint32_t wqebbs, pi;
	__be32 *dbrec; /* the send record */
	void *reg;     /* the doorbell register (8-byte writes) */
	uint8_t *cqb;
	uint32_t ncqe, ci;
	__be32 *cq_dbrec;
};

/* Every DC WQE of this test is at most 112 bytes: two WQEBBs, so with an
 * even producer index none wraps the ring. */
static void post(struct dci *d, uint8_t opcode, const struct mlx5_wqe_av *av, int compact,
		 void *laddr, uint32_t len, uint64_t raddr, uint64_t add_swap, uint64_t cmp)
{
	uint8_t *w = d->sq + (d->pi % d->wqebbs) * 64, *p;
	struct mlx5_wqe_ctrl_seg *c = (void *)w;

	memset(w, 0, 128);
	p = w + 16;
	memcpy(p, av, compact ? 16 : sizeof(*av));
	p += compact ? 16 : sizeof(*av);
	p = gdak_tw_segs(p, opcode, raddr, mr->rkey, add_swap, cmp, (uintptr_t)laddr, mr->lkey,
			 len);
	gdak_tw_ctrl(w, d->pi, opcode, d->qpn, (unsigned)(p - w) / 16);
	d->pi += 2;
	/* the record, then the register: release stores (ThreadSanitizer
	 * does not model fences) */
	__atomic_store_n(d->dbrec, htobe32(d->pi & 0xffff), __ATOMIC_RELEASE);
	__atomic_store_n((uint64_t *)d->reg, *(uint64_t *)(void *)c, __ATOMIC_RELEASE);
}

/* The DCI's next CQE, its consumer counter advanced (bounded by the
 * test's timeout only). */
static struct mlx5_cqe64 *next_cqe(struct dci *d)
{
	struct mlx5_cqe64 *e = gdak_cq_ring_wait(d->cqb, d->ncqe, d->ci);

	d->ci++;
	__atomic_store_n(d->cq_dbrec, htobe32(d->ci & 0xffffff), __ATOMIC_RELEASE);
	return e;
}

/* A good completion of the WQE that started at index idx. */
static void check_ok(struct dci *d, uint32_t idx)
{
	struct mlx5_cqe64 *e = next_cqe(d);

	CHECK_EQ(e->op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e->wqe_counter), idx & 0xffff);
	CHECK_EQ(be32toh(e->sop_drop_qpn) & 0xffffff, d->qpn);
	if ((e->op_own >> 4) == MLX5_CQE_REQ_ERR) {
		struct mlx5_err_cqe *x = (void *)e;

		gdak_test_fail(__FILE__, __LINE__, "%s: error CQE, syndrome 0x%x vendor 0x%x",
			       d->name, x->syndrome, x->vendor_err_synd);
	}
}

/* An error completion with this syndrome. */
static void check_err(struct dci *d, uint32_t idx, uint8_t synd)
{
	struct mlx5_err_cqe *x = (void *)next_cqe(d);

	CHECK_EQ(x->op_own >> 4, MLX5_CQE_REQ_ERR);
	CHECK_EQ(x->syndrome, synd);
	CHECK_EQ(be16toh(x->wqe_counter), idx & 0xffff);
	CHECK_EQ(be32toh(x->s_wqe_opcode_qpn) & 0xffffff, d->qpn);
}

/* ---- verbs objects ------------------------------------------------------------- */

static struct ibv_cq *rcq;
static struct ibv_srq *srq;
static uint32_t srqn, rcqn, pdn;

static struct ibv_qp *dct_create(uint64_t key)
{
	/* NVSHMEM passes its QP depth: a DCT sends nothing */
	return gdak_dcv_create(ctx, pd, 1, key, rcq, srq, 64, 64);
}

static void dct_ready(struct ibv_qp *q)
{
	struct ibv_qp_attr a;

	gdak_dcv_dct_init(&a);
	/* the kernel's DCT masks are exact: a mask bit more or less is EINVAL */
	CHECK_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	CHECK_EQ(ibv_modify_qp(q, &a, GDAK_DCV_DCT_INIT_MASK | IBV_QP_QKEY), EINVAL);
	CHECK_EQ(ibv_modify_qp(q, &a, GDAK_DCV_DCT_INIT_MASK), 0);
	gdak_dcv_dct_rtr(&a, &gid);
	CHECK_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU), EINVAL);
	CHECK_EQ(ibv_modify_qp(q, &a, GDAK_DCV_DCT_RTR_MASK), 0);
	/* RTR is a DCT's working state */
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE), EINVAL);
}

static struct ibv_qp *vdci;
static struct ibv_cq *vdci_cq;

static void vdci_up(struct dci *d)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_EQ(ibv_modify_qp(vdci, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), 0);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	CHECK_EQ(ibv_modify_qp(vdci, &a, IBV_QP_STATE | IBV_QP_PATH_MTU), 0);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	CHECK_EQ(ibv_modify_qp(vdci, &a,
			       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
		 0);
	d->pi = 0;
}

static void vdci_create(struct dci *d)
{
	struct ibv_qp_init_attr_ex x;
	struct mlx5dv_qp_init_attr dv;
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;

	vdci_cq = ibv_create_cq(ctx, 1u << LOG_CQ, NULL, NULL, 0);
	REQUIRE(vdci_cq != NULL);
	memset(&x, 0, sizeof(x));
	memset(&dv, 0, sizeof(dv));
	x.qp_type = IBV_QPT_DRIVER;
	x.comp_mask = IBV_QP_INIT_ATTR_PD;
	x.pd = pd;
	x.send_cq = x.recv_cq = vdci_cq;
	x.cap.max_send_wr = 16;
	x.cap.max_send_sge = 1;
	x.cap.max_recv_wr = 8; /* ignored: a DCI has no receive queue */
	dv.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC | MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS |
		       MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
	dv.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE;
	dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
	dv.dc_init_attr.dci_streams.log_num_concurent = 1;
	/* errored streams beyond dci_streams_caps: EOPNOTSUPP */
	dv.dc_init_attr.dci_streams.log_num_errored = 1;
	errno = 0;
	CHECK(mlx5dv_create_qp(ctx, &x, &dv) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	dv.dc_init_attr.dci_streams.log_num_errored = 0;
	vdci = mlx5dv_create_qp(ctx, &x, &dv);
	REQUIRE(vdci != NULL);
	CHECK_EQ(x.cap.max_recv_wr, 0);
	CHECK(x.cap.max_send_wr >= 16);
	CHECK_EQ(vdci->qp_type, IBV_QPT_DRIVER);

	REQUIRE_EQ(gdak_dcv_rings(vdci, vdci_cq, &dq, &dc), 0);
	CHECK_EQ(dq.sq.stride, 64);
	CHECK(dq.sq.wqe_cnt >= 32);
	CHECK_EQ(dq.rq.wqe_cnt, 0);
	CHECK(dq.bf.reg != NULL && dq.bf.size >= 256);
	CHECK_EQ(dc.cqe_size, 64);
	d->name = "verbs DCI";
	d->qpn = vdci->qp_num;
	d->sq = dq.sq.buf;
	d->wqebbs = dq.sq.wqe_cnt;
	d->dbrec = &dq.dbrec[MLX5_SND_DBR];
	d->reg = dq.bf.reg;
	d->cqb = dc.buf;
	d->ncqe = dc.cqe_cnt;
	d->cq_dbrec = dc.dbrec;
	vdci_up(d);
}

/* The AV NVSHMEM builds for a DCT: its AH's mlx5 address vector, the DC
 * key and the DCT number (bit 31: the full 48-byte form). */
static void make_av(struct mlx5_wqe_av *av, uint32_t dctn, uint64_t key)
{
	static struct ibv_ah *ah;
	static struct mlx5_wqe_av base;

	if (!ah) {
		ah = gdak_dcv_ah(pd, &gid, &base);
		REQUIRE(ah != NULL);
	}
	memcpy(av, &base, sizeof(*av));
	CHECK_MEM(av->rgid, gid.raw, 16);
	gdak_dcv_av_target(av, dctn, key);
}

/* A 64-byte WRITE or READ (opcode) from d to av completes with
 * TRANSPORT_RETRY_EXC_ERR. */
static void expect_retry_exc(struct dci *d, const struct mlx5_wqe_av *av, uint8_t opcode)
{
	uint32_t idx = d->pi;

	post(d, opcode, av, 0, buf, 64, (uintptr_t)(buf + 49152), 0, 0);
	check_err(d, idx, SYND_RETRY_EXC);
}

/* The verbs DCI, in ERR after an error, to RESET and up again, as a
 * program recovers. */
static void vdci_reset_up(struct dci *d)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	CHECK_EQ(ibv_query_qp(vdci, &qa, IBV_QP_STATE, &qi), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_ERR);
	qa.qp_state = IBV_QPS_RESET;
	CHECK_EQ(ibv_modify_qp(vdci, &qa, IBV_QP_STATE), 0);
	vdci_up(d);
}

/* ---- DEVX objects -------------------------------------------------------------- */

struct devx_dci {
	struct mlx5dv_devx_uar *uar;
	uint8_t *wq, *cqb;
	uint32_t *dbr;
	struct mlx5dv_devx_umem *wq_um, *cq_um, *dbr_um;
	struct mlx5dv_devx_obj *cq, *qp;
	uint32_t cqn;
	void *alias; /* the UAR page mapped again through cmd_fd */
};

static int dx_modify(struct mlx5dv_devx_obj *o, uint32_t num, unsigned op, uint8_t *in,
		     size_t inlen, unsigned *status)
{
	uint8_t out[16] = { 0 };
	int ret;

	prm_set(in, PRM_OPCODE, op);
	prm_set(in, PRM_OBJ, num);
	ret = mlx5dv_devx_obj_modify(o, in, inlen, out, sizeof(out));
	*status = prm_get(out, PRM_STATUS);
	return ret;
}

static void ddci_create(struct devx_dci *x, struct dci *d)
{
	uint8_t in[0x880 / 8 + 16], out[16];
	unsigned st;

	x->uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_BF);
	REQUIRE(x->uar != NULL);
	prm_rc_host_umem(ctx, (1u << LOG_SQ) * 64, LOG_CQ, &x->wq, &x->wq_um, &x->cqb, &x->cq_um,
			 &x->dbr, &x->dbr_um);

	x->cq = prm_rc_create_cq(ctx, LOG_CQ, x->uar, x->dbr_um, x->cq_um, &x->cqn);

	/* CREATE_QP as NVSHMEM's ibgda_create_qp fills it for a DCI */
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x500);
	prm_set(in, 0x840, 32, x->wq_um->umem_id);
	prm_set(in, 0x860, 1, 1);
	prm_set(in, QPC(0x08, 8), 0x5); /* st DCI */
	prm_set(in, QPC(0x13, 2), 3);
	prm_set(in, QPC(0x28, 24), pdn);
	prm_set(in, QPC(0x68, 24), x->uar->page_id);
	prm_set(in, QPC(0x565, 3), 1); /* rq_type SRQ */
	prm_set(in, QPC(0x568, 24), srqn);
	prm_set(in, QPC(0x3e8, 24), x->cqn);
	prm_set(in, QPC(0x4e8, 24), rcqn);
	prm_set(in, QPC(0x51, 4), LOG_SQ);
	prm_set(in, QPC(0x683, 1), 1);
	prm_set64(in, 0xc0 + 0x500, 0);
	prm_set(in, QPC(0x720, 32), x->dbr_um->umem_id);

	/* refusals first: a DCI with a regular RQ, an SRQ that does not
	 * exist, a service type gdak does not execute (UD) */
	prm_set(in, QPC(0x565, 3), 0);
	prm_refused(ctx, in, 0x880 / 8, ST_BAD_PARAM);
	prm_set(in, QPC(0x565, 3), 1);
	prm_set(in, QPC(0x568, 24), 0xabcdef);
	prm_refused(ctx, in, 0x880 / 8, ST_BAD_RES);
	prm_set(in, QPC(0x568, 24), srqn);
	prm_set(in, QPC(0x08, 8), 0x3);
	prm_refused(ctx, in, 0x880 / 8, ST_BAD_PARAM);
	prm_set(in, QPC(0x08, 8), 0x5);

	x->qp = mlx5dv_devx_obj_create(ctx, in, 0x880 / 8, out, sizeof(out));
	REQUIRE(x->qp != NULL);
	d->name = "DEVX DCI";
	d->qpn = prm_get(out, PRM_OBJ);
	d->sq = x->wq;
	d->wqebbs = 1u << LOG_SQ;
	d->dbrec = (__be32 *)&x->dbr[1];
	/* rung through a second mapping of its UAR page, as a program maps it
	 * with mmap(cmd_fd, mmap_off): the same register */
	REQUIRE(ctx->cmd_fd >= 0);
	x->alias = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
			x->uar->mmap_off);
	REQUIRE(x->alias != MAP_FAILED);
	((volatile uint8_t *)x->uar->base_addr)[0x40] = 0x5a;
	CHECK_EQ(((volatile uint8_t *)x->alias)[0x40], 0x5a);
	((volatile uint8_t *)x->uar->base_addr)[0x40] = 0;
	d->reg = (uint8_t *)x->alias + ((uint8_t *)x->uar->reg_addr - (uint8_t *)x->uar->base_addr);
	d->cqb = x->cqb;
	d->ncqe = 1u << LOG_CQ;
	d->cq_dbrec = (__be32 *)&x->dbr[16];

	/* RST2INIT, INIT2RTR, RTR2RTS as NVSHMEM's: the key in the DCI's
	 * context, no peer, no port at INIT2RTR */
	memset(in, 0, 0x800 / 8);
	prm_set64(in, 0xc0 + 0x640, KEY0);
	prm_set(in, ADS(0x128, 8), 1);
	prm_set(in, QPC(0x13, 2), 3);
	CHECK_EQ(dx_modify(x->qp, d->qpn, 0x502, in, 0x800 / 8, &st), 0);
	memset(in, 0, 0x800 / 8);
	prm_set(in, QPC(0x40, 3), 5);
	prm_set(in, QPC(0x43, 5), 30);
	prm_set(in, ADS(0x64, 8), 0);
	CHECK_EQ(dx_modify(x->qp, d->qpn, 0x503, in, 0x800 / 8, &st), 0);
	memset(in, 0, 0x800 / 8);
	prm_set(in, QPC(0x388, 3), 4);
	prm_set(in, QPC(0x38d, 3), 7);
	prm_set(in, QPC(0x390, 3), 7);
	prm_set(in, ADS(0x40, 5), 20);
	CHECK_EQ(dx_modify(x->qp, d->qpn, 0x504, in, 0x800 / 8, &st), 0);
	/* QUERY_QP: RTS, st DCI, the key RST2INIT gave */
	{
		static uint8_t qout[0x880 / 8];

		memset(in, 0, 16);
		prm_set(in, PRM_OPCODE, 0x50b);
		prm_set(in, PRM_OBJ, d->qpn);
		CHECK_EQ(mlx5dv_devx_obj_query(x->qp, in, 16, qout, sizeof(qout)), 0);
		CHECK_EQ(prm_get(qout, QPC(0x0, 4)), 3);
		CHECK_EQ(prm_get(qout, QPC(0x08, 8)), 0x5);
		CHECK_EQ(prm_get64(qout, 0xc0 + 0x640), KEY0);
	}
}

/* A DEVX DCI in ERR: 2RST, then up again as a program recovers it. */
static void ddci_restart(struct devx_dci *x, struct dci *d)
{
	uint8_t in[0x800 / 8];
	unsigned st;

	memset(in, 0, sizeof(in));
	CHECK_EQ(dx_modify(x->qp, d->qpn, 0x50a, in, 16, &st), 0);
	/* The send record is the program's: libmlx5 zeroes a verbs QP's at
	 * RESET, a DEVX program must zero its own.  Left at the old producer,
	 * it announces WQEs the ring still holds from before the reset, and
	 * the NIC may run them as soon as the QP is in RTS - before the new
	 * WQE 0 is written. */
	__atomic_store_n(d->dbrec, 0, __ATOMIC_RELEASE);
	d->pi = 0;
	memset(in, 0, sizeof(in));
	prm_set(in, ADS(0x128, 8), 1);
	CHECK_EQ(dx_modify(x->qp, d->qpn, 0x502, in, sizeof(in), &st), 0);
	memset(in, 0, sizeof(in));
	prm_set(in, QPC(0x40, 3), 5);
	CHECK_EQ(dx_modify(x->qp, d->qpn, 0x503, in, sizeof(in), &st), 0);
	memset(in, 0, sizeof(in));
	CHECK_EQ(dx_modify(x->qp, d->qpn, 0x504, in, sizeof(in), &st), 0);
}

static void ddci_destroy(struct devx_dci *x)
{
	munmap(x->alias, 4096);
	prm_rc_destroy(x->qp, x->cq, x->wq_um, x->cq_um, x->dbr_um, x->uar);
	free(x->wq);
	free(x->cqb);
	free(x->dbr);
}

/* CREATE_DCT as UCX's uct_dc_mlx5_iface_devx_create_dct fills it. */
static void fill_dct(uint8_t *in, size_t len)
{
	memset(in, 0, len);
	prm_set(in, PRM_OPCODE, 0x710);
	prm_set(in, DCTC(0xc8, 24), pdn);
	prm_set(in, DCTC(0xa8, 24), srqn);
	prm_set(in, DCTC(0x48, 24), rcqn);
	prm_set64(in, DCTC_KEY, KEYX);
	prm_set(in, DCTC(0x6c, 1), 1);
	prm_set(in, DCTC(0x6d, 1), 1);
	prm_set(in, DCTC(0x6e, 1), 1);
	prm_set(in, DCTC(0x68, 4), 3);
	prm_set(in, DCTC(0x148, 8), 1);
	prm_set(in, DCTC(0x93, 5), 12);
	prm_set(in, DCTC(0x145, 3), 5);
	prm_set(in, DCTC(0x178, 8), 64);
}

static struct mlx5dv_devx_obj *ddct_create(uint32_t *dctn)
{
	uint8_t in[0x400 / 8], out[16];
	struct mlx5dv_devx_obj *o;

	/* the refusals ConnectX gives: a short mailbox, a bad MTU, no CQ, no
	 * SRQ, a port it lacks; and what gdak cannot execute (responder
	 * scatter to CQE) */
	static const struct {
		unsigned bit, w;
		uint32_t v;
		unsigned st;
	} bad[] = {
		{ DCTC(0x145, 3), 7, ST_BAD_PARAM }, /* mtu */
		{ DCTC(0x48, 24), 0, ST_BAD_RES },   /* cqn */
		{ DCTC(0xa8, 24), 0, ST_BAD_RES },   /* srqn */
		{ DCTC(0x148, 8), 2, ST_BAD_PARAM }, /* port */
		{ DCTC(0x88, 8), 2, ST_BAD_PARAM },  /* cs_res */
	};

	fill_dct(in, sizeof(in));
	prm_refused(ctx, in, 0x200 / 8, ST_BAD_INPUT_LEN);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fill_dct(in, sizeof(in));
		prm_set(in, bad[i].bit, bad[i].w, bad[i].v);
		prm_refused(ctx, in, sizeof(in), bad[i].st);
	}

	fill_dct(in, sizeof(in));
	o = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	REQUIRE(o != NULL);
	*dctn = prm_get(out, PRM_OBJ);
	CHECK(*dctn != 0);
	return o;
}

/* QUERY_DCT: state, key, CQ, SRQ as created, the violation count. */
static void ddct_query(struct mlx5dv_devx_obj *o, uint32_t dctn, unsigned state,
		       uint32_t violations)
{
	uint8_t in[16] = { 0 }, out[0x280 / 8];

	prm_set(in, PRM_OPCODE, 0x713);
	prm_set(in, PRM_OBJ, dctn);
	memset(out, 0xee, sizeof(out));
	CHECK_EQ(mlx5dv_devx_obj_query(o, in, sizeof(in), out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, PRM_STATUS), 0);
	CHECK_EQ(prm_get(out, DCTC(0x04, 4)), state);
	CHECK_EQ(prm_get64(out, DCTC_KEY), KEYX);
	CHECK_EQ(prm_get(out, DCTC(0x48, 24)), rcqn);
	CHECK_EQ(prm_get(out, DCTC(0xa8, 24)), srqn);
	CHECK_EQ(prm_get(out, DCTC(0x145, 3)), 5);
	CHECK_EQ(prm_get(out, DCTC(0x180, 32)), violations);
	/* a query naming another object: the kernel's EINVAL */
	prm_set(in, PRM_OBJ, dctn ^ 1);
	CHECK_EQ(mlx5dv_devx_obj_query(o, in, sizeof(in), out, sizeof(out)), EINVAL);
}

/* A DEVX DCT on a DEVX RMP (its own CQ): a SEND from the DCI lands in the
 * RMP's ring, the receive CQE names the DCT and the RMP WQE. */
static void rmp_dct_send(struct devx_dci *x, struct dci *d)
{
	uint8_t in[RMP_IN_LEN], out[16], *cqb = gdak_test_pages(4096);
	struct mlx5dv_devx_umem *ring_um, *rec_um, *cq_um;
	struct mlx5dv_devx_obj *cq, *rmp, *dct;
	static const uint16_t link[8] = { 1, 2, 3, 4, 5, 6, 7, 0 };
	struct mlx5_wqe_av av;
	struct mlx5_cqe64 *e;
	struct trmp r;
	uint32_t cqn, rmpn, dctn, idx;
	uint8_t *dst = buf + 20480;

	memset(&r, 0, sizeof(r));
	r.log_sz = 3;
	r.stride = 64;
	r.ring = gdak_test_pages(4096);
	r.dbr = gdak_test_pages(4096);
	for (unsigned i = 0; i < (1u << LOG_CQ); i++)
		cqb[i * 64 + 63] = 0xf1;
	ring_um = mlx5dv_devx_umem_reg(ctx, r.ring, 512, IBV_ACCESS_LOCAL_WRITE);
	rec_um = mlx5dv_devx_umem_reg(ctx, r.dbr, 4096, IBV_ACCESS_LOCAL_WRITE);
	cq_um = mlx5dv_devx_umem_reg(ctx, cqb, (1u << LOG_CQ) * 64, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(ring_um && rec_um && cq_um);

	/* the CQ's record at +64, the RMP's at 0 */
	cq = prm_rc_create_cq(ctx, LOG_CQ, x->uar, rec_um, cq_um, &cqn);

	rmp_link(&r, link);
	rmp_fill(in, pdn, 3, 6, ring_um->umem_id, rec_um->umem_id, 0, 0);
	rmp = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	REQUIRE(rmp != NULL);
	rmpn = prm_get(out, PRM_OBJ);
	fill_dct(in, 0x400 / 8);
	prm_set(in, DCTC(0xa8, 24), rmpn);
	prm_set(in, DCTC(0x48, 24), cqn);
	dct = mlx5dv_devx_obj_create(ctx, in, 0x400 / 8, out, sizeof(out));
	REQUIRE(dct != NULL);
	dctn = prm_get(out, PRM_OBJ);
	CHECK_EQ(mlx5dv_devx_obj_destroy(rmp), EBUSY); /* the DCT's */

	/* one WQE of two 512-byte segments; a 700-byte SEND spans both */
	memset(dst, 0, 1100);
	gdak_test_fill(buf + 8192, 700, 7);
	CHECK_EQ(rmp_post(&r, dst, mr->lkey, 512, 2), 0);
	make_av(&av, dctn, KEYX);
	idx = d->pi;
	post(d, MLX5_OPCODE_SEND, &av, 0, buf + 8192, 700, 0, 0, 0);
	check_ok(d, idx);
	{
		struct dci rc = { .name = "RMP DCT CQ",
				  .cqb = cqb,
				  .ncqe = 1u << LOG_CQ,
				  .cq_dbrec = (__be32 *)(void *)(r.dbr + 16) };

		e = next_cqe(&rc);
		CHECK_EQ(e->op_own >> 4, MLX5_CQE_RESP_SEND);
		CHECK_EQ(be32toh(e->byte_cnt), 700);
		CHECK_EQ(be16toh(e->wqe_counter), 0);
		CHECK_EQ(be32toh(e->sop_drop_qpn) & 0xffffff, dctn);
	}
	CHECK_MEM(dst, buf + 8192, 700);
	CHECK_EQ(dst[700], 0);

	CHECK_EQ(mlx5dv_devx_obj_destroy(dct), 0);
	CHECK_EQ(mlx5dv_devx_obj_destroy(rmp), 0);
	CHECK_EQ(mlx5dv_devx_obj_destroy(cq), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(ring_um), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(rec_um), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(cq_um), 0);
	free(r.ring);
	free(r.dbr);
	free(cqb);
}

/* ---- the traffic ----------------------------------------------------------------- */

static void check_caps(void)
{
	static uint8_t out[16 + 4096];
	uint8_t in[16] = { 0 };
	struct mlx5dv_context dv;

	prm_set(in, PRM_OPCODE, 0x100);
	prm_set(in, PRM_OP_MOD, 0x0 << 1 | 1);
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, CAP(0x21a, 1)), 1); /* dct */
	CHECK_EQ(prm_get(out, CAP(0x20c, 1)), 0); /* dc_req_scat_data_cqe */
	CHECK_EQ(prm_get(out, CAP(0x58b, 5)), 4); /* log_max_dci_stream_channels */
	CHECK_EQ(prm_get(out, CAP(0x593, 5)), 0); /* log_max_dci_errored_streams */
	prm_set(in, PRM_OP_MOD, 0x3 << 1 | 1);
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, CAP(0xd0, 16)), 0xc); /* atomic_size_dc: 4 and 8 bytes */
	memset(&dv, 0, sizeof(dv));
	dv.comp_mask = MLX5DV_CONTEXT_MASK_DCI_STREAMS;
	CHECK_EQ(mlx5dv_query_device(ctx, &dv), 0);
	CHECK_EQ(dv.comp_mask, MLX5DV_CONTEXT_MASK_DCI_STREAMS);
	CHECK_EQ(dv.dci_streams_caps.max_log_num_concurent, 4);
	CHECK_EQ(dv.dci_streams_caps.max_log_num_errored, 0);
}

/* WRITE, READ, fetch-add, CAS and SEND from one DCI to three DCTs in turn
 * (the stream turns at every WQE), data and CQEs checked. */
static void traffic(struct dci *d, struct ibv_qp *const dct[3], const uint64_t key[3],
		    uint64_t seed)
{
	struct mlx5_wqe_av av[3];
	uint8_t *src = buf, *dst = buf + 8192, *rd = buf + 16384, *res = buf + 24576;
	uint64_t *ctr = (uint64_t *)(void *)(buf + 32768);
	uint32_t idx;

	for (int i = 0; i < 3; i++)
		make_av(&av[i], dct[i]->qp_num, key[i]);
	gdak_test_fill(src, 8192, seed);
	memset(dst, 0, 8192);
	memset(rd, 0, 8192);

	/* WRITE 1000 bytes through each DCT to its own slice */
	for (int i = 0; i < 3; i++) {
		idx = d->pi;
		post(d, MLX5_OPCODE_RDMA_WRITE, &av[i], 0, src + i * 1000, 1000,
		     (uintptr_t)(dst + i * 1000), 0, 0);
		check_ok(d, idx);
	}
	CHECK_MEM(dst, src, 3000);
	CHECK_EQ(dst[3000], 0);
	/* READ them back through the other DCTs */
	for (int i = 0; i < 3; i++) {
		struct mlx5_cqe64 *e;

		idx = d->pi;
		post(d, MLX5_OPCODE_RDMA_READ, &av[(i + 1) % 3], 0, rd + i * 1000, 1000,
		     (uintptr_t)(dst + i * 1000), 0, 0);
		e = next_cqe(d);
		CHECK_EQ(e->op_own >> 4, MLX5_CQE_REQ);
		CHECK_EQ(be16toh(e->wqe_counter), idx & 0xffff);
		CHECK_EQ(be32toh(e->byte_cnt), 1000);
	}
	CHECK_MEM(rd, src, 3000);
	/* fetch-add on DCT 0, CAS on DCT 1 (hit) and DCT 2 (miss) */
	*ctr = 1000;
	idx = d->pi;
	post(d, MLX5_OPCODE_ATOMIC_FA, &av[0], 0, res, 8, (uintptr_t)ctr, 24, 0);
	check_ok(d, idx);
	CHECK_EQ(*ctr, 1024);
	CHECK_EQ(be64toh(*(uint64_t *)(void *)res), 1000); /* the original, big-endian */
	idx = d->pi;
	post(d, MLX5_OPCODE_ATOMIC_CS, &av[1], 0, res + 8, 8, (uintptr_t)ctr, 7, 1024);
	check_ok(d, idx);
	CHECK_EQ(*ctr, 7);
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(res + 8)), 1024);
	idx = d->pi;
	post(d, MLX5_OPCODE_ATOMIC_CS, &av[2], 0, res + 16, 8, (uintptr_t)ctr, 99, 1024);
	check_ok(d, idx);
	CHECK_EQ(*ctr, 7);
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(res + 16)), 7);
	/* SEND to DCT 1: into the SRQ's WR, the receive CQE names the DCT */
	{
		struct ibv_sge sge = { (uintptr_t)(buf + 40960), 2048, mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 0x5eed ^ seed, .sg_list = &sge, .num_sge = 1 },
				   *bad;
		struct ibv_wc wc;
		int n;

		CHECK_EQ(ibv_post_srq_recv(srq, &rw, &bad), 0);
		idx = d->pi;
		post(d, MLX5_OPCODE_SEND, &av[1], 0, src + 4000, 777, 0, 0, 0);
		check_ok(d, idx);
		do
			n = ibv_poll_cq(rcq, 1, &wc);
		while (n == 0 && (sched_yield(), 1));
		CHECK_EQ(n, 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.opcode, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, 777);
		CHECK_EQ(wc.wr_id, 0x5eed ^ seed);
		CHECK_EQ(wc.qp_num, dct[1]->qp_num);
		CHECK_MEM(buf + 40960, src + 4000, 777);
	}
}

int main(void)
{
	struct ibv_qp *dct[3];
	struct mlx5dv_devx_obj *ddct;
	struct devx_dci xd;
	struct dci vd, dd;
	struct mlx5_wqe_av av;
	uint64_t keys[3] = { KEY0, KEY1, KEY0 };
	uint32_t ddctn, idx;

	pd = gdak_vt_open_pd(&ctx, &gid);
	buf = gdak_test_pages(65536);
	mr = gdak_vt_reg_all(pd, buf, 65536);
	check_caps();

	/* what NVSHMEM's DCT side has: an SRQ, a receive CQ, their numbers */
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
		struct mlx5dv_srq ds;
		struct mlx5dv_cq dc;
		struct mlx5dv_pd dp;
		struct mlx5dv_obj o;

		rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
		srq = ibv_create_srq(pd, &sa);
		REQUIRE(rcq && srq);
		memset(&o, 0, sizeof(o));
		memset(&ds, 0, sizeof(ds));
		ds.comp_mask = MLX5DV_SRQ_MASK_SRQN;
		o.srq.in = srq;
		o.srq.out = &ds;
		o.cq.in = rcq;
		o.cq.out = &dc;
		o.pd.in = pd;
		o.pd.out = &dp;
		REQUIRE_EQ(mlx5dv_init_obj(&o, MLX5DV_OBJ_SRQ | MLX5DV_OBJ_CQ | MLX5DV_OBJ_PD), 0);
		srqn = ds.srqn;
		rcqn = dc.cqn;
		pdn = dp.pdn;
		CHECK(srqn != 0 && pdn != 0);
	}

	/* DCTs by mlx5dv_create_qp; one without its SRQ is refused */
	{
		struct ibv_qp_init_attr_ex x;
		struct mlx5dv_qp_init_attr d;

		gdak_dcv_attr(&x, &d, pd, 1, 0, rcq, NULL, 0, 0);
		errno = 0;
		CHECK(mlx5dv_create_qp(ctx, &x, &d) == NULL);
		CHECK_EQ(errno, EINVAL);
		d.dc_init_attr.dc_type = 7;
		x.srq = srq;
		errno = 0;
		CHECK(mlx5dv_create_qp(ctx, &x, &d) == NULL);
		CHECK_EQ(errno, EINVAL);
	}
	for (int i = 0; i < 3; i++) {
		dct[i] = dct_create(keys[i]);
		REQUIRE(dct[i] != NULL);
		dct_ready(dct[i]);
	}
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		CHECK_EQ(ibv_query_qp(dct[0], &qa, IBV_QP_STATE, &qi), 0);
		CHECK_EQ(qa.qp_state, IBV_QPS_RTR);
		CHECK_EQ(qi.qp_type, IBV_QPT_DRIVER);
		CHECK(qi.srq == srq);
	}
	/* the SRQ is theirs now */
	CHECK_EQ(ibv_destroy_srq(srq), EBUSY);

	/* a verbs DCI and a DEVX DCI, the same traffic */
	memset(&vd, 0, sizeof(vd));
	memset(&dd, 0, sizeof(dd));
	memset(&xd, 0, sizeof(xd));
	vdci_create(&vd);
	ddci_create(&xd, &dd);
	traffic(&vd, dct, keys, 1);
	traffic(&dd, dct, keys, 2);
	rmp_dct_send(&xd, &dd);

	/* a DEVX DCT: WRITE and READ through it; its violation count */
	ddct = ddct_create(&ddctn);
	ddct_query(ddct, ddctn, 0, 0);
	make_av(&av, ddctn, KEYX);
	gdak_test_fill(buf, 512, 3);
	idx = dd.pi;
	post(&dd, MLX5_OPCODE_RDMA_WRITE, &av, 0, buf, 512, (uintptr_t)(buf + 49152), 0, 0);
	check_ok(&dd, idx);
	CHECK_MEM(buf + 49152, buf, 512);
	/* a SEND to it: no receive queue to take a WQE from (a verbs SRQ has
	 * no ring a DEVX DCT could take from; rmp_dct_send's DCT on an RMP
	 * has one), answered as a responder without one answers */
	idx = dd.pi;
	post(&dd, MLX5_OPCODE_SEND, &av, 0, buf, 64, 0, 0, 0);
	check_err(&dd, idx, 0x12); /* REMOTE_INVAL_REQ_ERR: the DCT's no_rq */
	ddci_restart(&xd, &dd);
	CHECK_EQ(mlx5dv_devx_obj_destroy(xd.cq), EBUSY); /* the DCI's */
	CHECK_EQ(ibv_destroy_cq(rcq), EBUSY);		 /* the DCTs' */

	/* errors: each one the DCI's WQE completing TRANSPORT_RETRY_EXC_ERR
	 * and the DCI in ERR; RESET and up again, as a program recovers */
	/* 1. a wrong access key (the DEVX DCT counts it) */
	make_av(&av, ddctn, KEYX ^ 1);
	expect_retry_exc(&dd, &av, MLX5_OPCODE_RDMA_WRITE);
	ddct_query(ddct, ddctn, 0, 1);
	make_av(&av, dct[0]->qp_num, KEY1);
	expect_retry_exc(&vd, &av, MLX5_OPCODE_RDMA_WRITE);
	vdci_reset_up(&vd);
	/* 2. a DCT in ERR, then one destroyed */
	{
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

		CHECK_EQ(ibv_modify_qp(dct[2], &qa, IBV_QP_STATE), 0);
	}
	make_av(&av, dct[2]->qp_num, KEY0);
	expect_retry_exc(&vd, &av, MLX5_OPCODE_RDMA_READ);
	vdci_reset_up(&vd);
	/* the same DCI reaches a good DCT again */
	make_av(&av, dct[0]->qp_num, KEY0);
	idx = vd.pi;
	post(&vd, MLX5_OPCODE_RDMA_WRITE, &av, 0, buf, 256, (uintptr_t)(buf + 53248), 0, 0);
	check_ok(&vd, idx);
	CHECK_MEM(buf + 53248, buf, 256);
	{
		uint32_t gone = dct[2]->qp_num;

		CHECK_EQ(ibv_destroy_qp(dct[2]), 0);
		make_av(&av, gone, KEY0);
		expect_retry_exc(&vd, &av, MLX5_OPCODE_RDMA_WRITE);
		vdci_reset_up(&vd);
	}
	/* the verbs DCI brought up again by DEVX commands alone, as NVSHMEM
	 * drives verbs-created QPs (mlx5dv_devx_qp_modify); the DCT is not a
	 * QP object to QP commands: EINVAL */
	{
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };
		uint8_t in[0x800 / 8], out[16];

		CHECK_EQ(ibv_modify_qp(vdci, &qa, IBV_QP_STATE), 0);
		vd.pi = 0;
		memset(in, 0, sizeof(in));
		prm_set(in, PRM_OPCODE, 0x502);
		prm_set(in, PRM_OBJ, vdci->qp_num);
		prm_set(in, ADS(0x128, 8), 1);
		CHECK_EQ(mlx5dv_devx_qp_modify(vdci, in, sizeof(in), out, sizeof(out)), 0);
		memset(in, 0, sizeof(in));
		prm_set(in, PRM_OPCODE, 0x503);
		prm_set(in, PRM_OBJ, vdci->qp_num);
		prm_set(in, QPC(0x40, 3), 5);
		CHECK_EQ(mlx5dv_devx_qp_modify(vdci, in, sizeof(in), out, sizeof(out)), 0);
		prm_set(in, PRM_OPCODE, 0x504);
		CHECK_EQ(mlx5dv_devx_qp_modify(vdci, in, sizeof(in), out, sizeof(out)), 0);
		CHECK_EQ(ibv_query_qp(vdci, &qa, IBV_QP_STATE, &(struct ibv_qp_init_attr){ 0 }), 0);
		CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
		memset(in, 0, sizeof(in));
		prm_set(in, PRM_OPCODE, 0x502);
		prm_set(in, PRM_OBJ, dct[0]->qp_num);
		CHECK_EQ(mlx5dv_devx_qp_modify(dct[0], in, sizeof(in), out, sizeof(out)), EINVAL);
		make_av(&av, dct[1]->qp_num, KEY1);
		idx = vd.pi;
		post(&vd, MLX5_OPCODE_RDMA_WRITE, &av, 0, buf + 2048, 200, (uintptr_t)(buf + 61440),
		     0, 0);
		check_ok(&vd, idx);
		CHECK_MEM(buf + 61440, buf + 2048, 200);
	}
	/* 3. a compact AV on RoCE: no GID to route by (the udp transport's
	 * rule dc_av_compact, docs/UDP.md "DC") */
	make_av(&av, dct[0]->qp_num, KEY0);
	av.dqp_dct = htobe32(dct[0]->qp_num);
	idx = vd.pi;
	post(&vd, MLX5_OPCODE_RDMA_WRITE, &av, 1, buf, 64, (uintptr_t)(buf + 49152), 0, 0);
	check_err(&vd, idx, SYND_LOC_QP_OP);
	/* 4. the DEVX DCT drained: DRAINED, connects unanswered */
	{
		uint8_t in[16] = { 0 }, out[16];

		/* the DEVX DCI went to ERR at the key violation */
		ddci_restart(&xd, &dd);
		make_av(&av, ddctn, KEYX);
		idx = dd.pi;
		post(&dd, MLX5_OPCODE_RDMA_WRITE, &av, 0, buf + 1024, 128, (uintptr_t)(buf + 57344),
		     0, 0);
		check_ok(&dd, idx);
		CHECK_MEM(buf + 57344, buf + 1024, 128);

		prm_set(in, PRM_OPCODE, 0x714); /* ARM_DCT_FOR_KEY_VIOLATION: no events here */
		prm_set(in, PRM_OBJ, ddctn);
		CHECK_EQ(mlx5dv_devx_obj_modify(ddct, in, sizeof(in), out, sizeof(out)), EREMOTEIO);
		CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_OP);
		prm_set(in, PRM_OPCODE, 0x712);
		CHECK_EQ(mlx5dv_devx_obj_modify(ddct, in, sizeof(in), out, sizeof(out)), 0);
		ddct_query(ddct, ddctn, 2, 1);
		expect_retry_exc(&dd, &av, MLX5_OPCODE_RDMA_WRITE);
	}

	/* teardown in the kernel's order; the SRQ is free once its DCTs are */
	CHECK_EQ(mlx5dv_devx_obj_destroy(ddct), 0);
	ddci_destroy(&xd);
	CHECK_EQ(ibv_destroy_qp(vdci), 0);
	CHECK_EQ(ibv_destroy_cq(vdci_cq), 0);
	CHECK_EQ(ibv_destroy_qp(dct[0]), 0);
	CHECK_EQ(ibv_destroy_srq(srq), EBUSY);
	CHECK_EQ(ibv_destroy_qp(dct[1]), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_destroy_cq(rcq), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	ibv_dealloc_pd(pd);
	free(buf);
	ibv_close_device(ctx);
	return gdak_test_end();
}
