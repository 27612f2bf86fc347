/* SPDX-License-Identifier: MIT */
/*
 * verbs_devx_rmp.c - a DEVX RMP on gdak's libmlx5: CREATE_RMP over umem
 * (a linked-list ring whose free list the test lays out out of order, as
 * an SRQ's becomes after WQEs are freed in any order), the refusals
 * ConnectX gives for mailboxes it rejects, an RC QP created with rq_type
 * SRQ naming it, SENDs into it - the data byte for byte, scattered over
 * the WQE's segments, and each receive CQE naming the RMP WQE it used by
 * its ring index - QUERY_RMP's counters, MODIFY_RMP's limit, RNR when the
 * ring is empty (the requester's RNR_RETRY_EXC_ERR with rnr_retry 0), and
 * the destroy order the kernel enforces.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_prm.h"
#include "gdak_rmp.h"
#include "gdak_test.h"

#define CQC(off, w) 0x80 + (off), (w)
#define QPC(off, w) 0xc0 + (off), (w)
#define ADS(off, w) 0xc0 + 0xc0 + (off), (w)

enum {
	ST_BAD_OP = 0x02,
	ST_BAD_PARAM = 0x03,
	ST_BAD_RES = 0x05,
	ST_BAD_RES_STATE = 0x09,
	ST_BAD_INPUT_LEN = 0x50,
	SYND_RNR_RETRY_EXC = 0x16, /* MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR */
	LOG_SQ = 5,
	LOG_CQ = 5,
	LOG_RMP = 3,	    /* 8 WQEs */
	LOG_RMP_STRIDE = 6, /* 64 bytes: the next segment and 3 data segments */
};

static struct ibv_context *ctx;
static union ibv_gid gid;
static uint32_t pdn;

static void *page_alloc(size_t n)
{
	void *p = NULL;

	REQUIRE(posix_memalign(&p, 4096, n) == 0);
	memset(p, 0, n);
	return p;
}

struct tqp {
	struct mlx5dv_devx_uar *uar;
	uint8_t *sq, *cqb;
	uint32_t *dbr; /* [0..1] QP record, [16] CQ record */
	struct mlx5dv_devx_umem *sq_um, *cq_um, *dbr_um;
	struct mlx5dv_devx_obj *cq, *qp;
	uint32_t cqn, qpn, pi, ci;
};

/* An RC QP with no receive queue of its own: rq_type zero-length (the
 * sender) or SRQ naming rmpn (the receiver). */
static int tqp_create(struct tqp *q, uint32_t rmpn, uint8_t *out)
{
	uint8_t in[0x880 / 8];

	if (!q->uar) {
		q->uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
		q->sq = page_alloc((1u << LOG_SQ) * 64);
		q->cqb = page_alloc((1u << LOG_CQ) * 64);
		q->dbr = page_alloc(4096);
		REQUIRE(q->uar != NULL);
		for (unsigned i = 0; i < (1u << LOG_CQ); i++)
			q->cqb[i * 64 + 63] = 0xf1;
		q->sq_um = mlx5dv_devx_umem_reg(ctx, q->sq, (1u << LOG_SQ) * 64,
						IBV_ACCESS_LOCAL_WRITE);
		q->cq_um = mlx5dv_devx_umem_reg(ctx, q->cqb, (1u << LOG_CQ) * 64,
						IBV_ACCESS_LOCAL_WRITE);
		q->dbr_um = mlx5dv_devx_umem_reg(ctx, q->dbr, 4096, IBV_ACCESS_LOCAL_WRITE);
		REQUIRE(q->sq_um && q->cq_um && q->dbr_um);

		memset(in, 0, sizeof(in));
		prm_set(in, PRM_OPCODE, 0x400);
		prm_set(in, CQC(0x63, 5), LOG_CQ);
		prm_set(in, CQC(0x68, 24), q->uar->page_id);
		{
			uint32_t eqn = 0;

			CHECK_EQ(mlx5dv_devx_query_eqn(ctx, 0, &eqn), 0);
			prm_set(in, CQC(0xb8, 8), eqn);
		}
		prm_set(in, CQC(0x20, 32), q->dbr_um->umem_id);
		prm_set64(in, 0x80 + 0x1c0, 64);
		prm_set(in, 0x2c0, 32, q->cq_um->umem_id);
		q->cq = mlx5dv_devx_obj_create(ctx, in, 0x300 / 8, out, 16);
		REQUIRE(q->cq != NULL);
		q->cqn = prm_get(out, PRM_OBJ);
	}
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x500);
	prm_set(in, QPC(0x13, 2), 3);
	prm_set(in, QPC(0x28, 24), pdn);
	prm_set(in, QPC(0x51, 4), LOG_SQ);
	prm_set(in, QPC(0x68, 24), q->uar->page_id);
	prm_set(in, QPC(0x565, 3), rmpn ? 1 : 3);
	prm_set(in, QPC(0x568, 24), rmpn);
	prm_set(in, QPC(0x3e8, 24), q->cqn);
	prm_set(in, QPC(0x4e8, 24), q->cqn);
	prm_set(in, QPC(0x720, 32), q->dbr_um->umem_id);
	prm_set(in, 0x840, 32, q->sq_um->umem_id);
	q->qp = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, 16);
	if (!q->qp)
		return -1;
	q->qpn = prm_get(out, PRM_OBJ);
	return 0;
}

static void tqp_modify(struct tqp *q, unsigned op, uint8_t *in)
{
	uint8_t out[16] = { 0 };

	prm_set(in, PRM_OPCODE, op);
	prm_set(in, PRM_OBJ, q->qpn);
	CHECK_EQ(mlx5dv_devx_obj_modify(q->qp, in, 0x800 / 8, out, sizeof(out)), 0);
}

static void tqp_connect(struct tqp *q, uint32_t peer, unsigned rnr_retry)
{
	uint8_t in[0x800 / 8];

	memset(in, 0, sizeof(in));
	prm_set(in, QPC(0x490, 1), 1);
	prm_set(in, QPC(0x491, 1), 1);
	prm_set(in, ADS(0x128, 8), 1);
	tqp_modify(q, 0x502, in);
	memset(in, 0, sizeof(in));
	prm_set(in, QPC(0x40, 3), 3);
	prm_set(in, QPC(0x43, 5), 30);
	prm_set(in, QPC(0xa8, 24), peer);
	prm_set(in, QPC(0x4a8, 24), 0x200);
	prm_set(in, QPC(0x4a3, 5), 1);
	prm_set(in, ADS(0x128, 8), 1);
	prm_set(in, ADS(0x28, 1), 1);
	prm_set(in, ADS(0x58, 8), 64);
	memcpy(in + (0xc0 + 0xc0 + 0x80) / 8, gid.raw, 16);
	tqp_modify(q, 0x503, in);
	memset(in, 0, sizeof(in));
	prm_set(in, QPC(0x3c8, 24), 0x200);
	prm_set(in, QPC(0x38d, 3), 7);
	prm_set(in, QPC(0x390, 3), rnr_retry);
	prm_set(in, ADS(0x40, 5), 14);
	tqp_modify(q, 0x504, in);
}

static void tqp_send(struct tqp *q, const void *laddr, uint32_t lkey, uint32_t len)
{
	uint8_t *w = q->sq + (q->pi % (1u << LOG_SQ)) * 64;
	struct mlx5_wqe_ctrl_seg *c = (void *)w;
	struct mlx5_wqe_data_seg *d = (void *)(w + 16);

	memset(w, 0, 64);
	c->opmod_idx_opcode = htobe32((q->pi & 0xffff) << 8 | MLX5_OPCODE_SEND);
	c->qpn_ds = htobe32(q->qpn << 8 | 2);
	c->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
	d->byte_count = htobe32(len);
	d->lkey = htobe32(lkey);
	d->addr = htobe64((uintptr_t)laddr);
	q->pi++;
	__atomic_store_n(&q->dbr[1], htobe32(q->pi & 0xffff), __ATOMIC_RELEASE);
	__atomic_store_n((uint64_t *)q->uar->reg_addr, *(uint64_t *)(void *)c, __ATOMIC_RELEASE);
}

static struct mlx5_cqe64 *tqp_cqe(struct tqp *q)
{
	struct mlx5_cqe64 *e = (void *)(q->cqb + (q->ci % (1u << LOG_CQ)) * 64);
	unsigned owner = (q->ci >> LOG_CQ) & 1;

	for (;;) {
		uint8_t op_own = __atomic_load_n(&e->op_own, __ATOMIC_ACQUIRE);

		if ((op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == owner)
			break;
		sched_yield();
	}
	q->ci++;
	__atomic_store_n(&q->dbr[16], htobe32(q->ci & 0xffffff), __ATOMIC_RELEASE);
	return e;
}

static void tqp_destroy(struct tqp *q)
{
	if (q->qp)
		CHECK_EQ(mlx5dv_devx_obj_destroy(q->qp), 0);
	CHECK_EQ(mlx5dv_devx_obj_destroy(q->cq), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(q->sq_um), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(q->cq_um), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(q->dbr_um), 0);
	mlx5dv_devx_free_uar(q->uar);
	free(q->sq);
	free(q->cqb);
	free(q->dbr);
}

/* QUERY_RMP: RDY, the ring as created, the counters and the limit. */
static void rmp_query(struct mlx5dv_devx_obj *o, uint32_t rmpn, uint32_t taken, uint32_t posted,
		      uint32_t lwm)
{
	uint8_t in[16] = { 0 }, out[RMP_IN_LEN];

	prm_set(in, PRM_OPCODE, 0x90f);
	prm_set(in, PRM_OBJ, rmpn);
	memset(out, 0xee, sizeof(out));
	CHECK_EQ(mlx5dv_devx_obj_query(o, in, sizeof(in), out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, PRM_STATUS), 0);
	CHECK_EQ(prm_get(out, RMPC(0x08, 4)), 1);
	CHECK_EQ(prm_get(out, RMPWQ(0x11b, 5)), LOG_RMP);
	CHECK_EQ(prm_get(out, RMPWQ(0x10c, 4)), LOG_RMP_STRIDE);
	CHECK_EQ(prm_get(out, RMPWQ(0x48, 24)), pdn);
	CHECK_EQ(prm_get(out, RMPWQ(0xc0, 32)), taken);
	CHECK_EQ(prm_get(out, RMPWQ(0xe0, 32)), posted);
	CHECK_EQ(prm_get(out, RMPWQ(0x30, 16)), lwm);
	/* too small an output mailbox: the kernel's EINVAL is not it, the
	 * device's BAD_OUTPUT_LEN is */
	CHECK_EQ(mlx5dv_devx_obj_query(o, in, sizeof(in), out, 64), EREMOTEIO);
	CHECK_EQ(prm_get(out, PRM_STATUS), 0x51);
}

static void check_rmp_refusals(uint32_t wq_id, uint32_t dbr_id)
{
	uint8_t in[RMP_IN_LEN], out[16];

	/* a mailbox too short for the rmpc */
	rmp_fill(in, pdn, LOG_RMP, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 0);
	CHECK(mlx5dv_devx_obj_create(ctx, in, 0x400 / 8, out, sizeof(out)) == NULL);
	CHECK_EQ(errno, EREMOTEIO);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_INPUT_LEN);
	/* a striding WQ; WQEs of 512 bytes; a 16-byte linked-list WQE */
	prm_set(in, RMPWQ(0x00, 4), 3);
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_PARAM);
	rmp_fill(in, pdn, LOG_RMP, 9, wq_id, dbr_id, 0, 0);
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_PARAM);
	rmp_fill(in, pdn, LOG_RMP, 4, wq_id, dbr_id, 0, 0);
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_PARAM);
	/* a ring larger than its umem; no PD; no umem (a page list) */
	rmp_fill(in, pdn, LOG_RMP + 4, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 0);
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_PARAM);
	rmp_fill(in, 0, LOG_RMP, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 0);
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_RES);
	rmp_fill(in, pdn, LOG_RMP, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 0);
	prm_set(in, RMPWQ(0x121, 1), 0);
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_PARAM);
	/* a limit beyond the ring */
	rmp_fill(in, pdn, LOG_RMP, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 9);
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_PARAM);
	/* CREATE_SRQ: its ring is a page list, which a DEVX program cannot
	 * give; gdak's device does not execute it */
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x700);
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_OP);
}

static void check_rmp_modify(struct mlx5dv_devx_obj *o, uint32_t rmpn)
{
	uint8_t in[RMP_IN_LEN], out[16];

	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x90d);
	prm_set(in, PRM_OBJ, rmpn);
	prm_set(in, 0x40, 4, 1);	 /* rmp_state RDY */
	prm_set(in, RMPC(0x08, 4), 1);	 /* to RDY */
	prm_set(in, 0x80 + 0x3f, 1, 1);	 /* bitmask: lwm */
	prm_set(in, RMPWQ(0x30, 16), 2); /* lwm */
	CHECK_EQ(mlx5dv_devx_obj_modify(o, in, sizeof(in), out, sizeof(out)), 0);
	/* a field MODIFY_RMP does not change; a wrong current state */
	prm_set(in, 0x80 + 0x3e, 1, 1);
	CHECK_EQ(mlx5dv_devx_obj_modify(o, in, sizeof(in), out, sizeof(out)), EREMOTEIO);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_PARAM);
	prm_set(in, 0x80 + 0x3e, 1, 0);
	prm_set(in, 0x40, 4, 3);
	CHECK_EQ(mlx5dv_devx_obj_modify(o, in, sizeof(in), out, sizeof(out)), EREMOTEIO);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_RES_STATE);
	/* a modify naming another object: the kernel's EINVAL */
	prm_set(in, 0x40, 4, 1);
	prm_set(in, PRM_OBJ, rmpn ^ 1);
	CHECK_EQ(mlx5dv_devx_obj_modify(o, in, sizeof(in), out, sizeof(out)), EINVAL);
}

int main(void)
{
	/* the free list after WQEs came back out of order: 0 5 2 7 1 4 6 3 */
	static const uint16_t link[8] = { 5, 4, 7, 0, 6, 2, 3, 1 };
	static const uint32_t order[3] = { 0, 5, 2 };
	static const uint32_t lens[3] = { 100, 2500, 1 };
	struct ibv_device **l;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct mlx5dv_devx_obj *pdo, *rmp;
	struct mlx5dv_devx_umem *rwq_um, *rdbr_um;
	struct tqp a, b;
	struct trmp r;
	uint8_t *buf, in[RMP_IN_LEN], out[16];
	uint32_t rmpn;
	int n;

	l = ibv_get_device_list(&n);
	REQUIRE(l && n >= 1);
	ctx = ibv_open_device(l[0]);
	REQUIRE(ctx != NULL);
	ibv_free_device_list(l);
	REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd != NULL);
	buf = page_alloc(65536);
	mr = ibv_reg_mr(pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr != NULL);
	memset(in, 0, 16);
	prm_set(in, PRM_OPCODE, 0x800);
	pdo = mlx5dv_devx_obj_create(ctx, in, 16, out, sizeof(out));
	REQUIRE(pdo != NULL);
	pdn = prm_get(out, PRM_OBJ);

	/* the ring and its record, in the program's memory */
	memset(&r, 0, sizeof(r));
	r.log_sz = LOG_RMP;
	r.stride = 1u << LOG_RMP_STRIDE;
	r.ring = page_alloc(4096);
	r.dbr = page_alloc(4096);
	rwq_um = mlx5dv_devx_umem_reg(ctx, r.ring, (1u << LOG_RMP) << LOG_RMP_STRIDE,
				      IBV_ACCESS_LOCAL_WRITE);
	rdbr_um = mlx5dv_devx_umem_reg(ctx, r.dbr, 4096, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(rwq_um && rdbr_um);
	check_rmp_refusals(rwq_um->umem_id, rdbr_um->umem_id);
	rmp_link(&r, link);
	rmp_fill(in, pdn, LOG_RMP, LOG_RMP_STRIDE, rwq_um->umem_id, rdbr_um->umem_id, 0, 0);
	rmp = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	REQUIRE(rmp != NULL);
	rmpn = prm_get(out, PRM_OBJ);
	CHECK(rmpn != 0);
	rmp_query(rmp, rmpn, 0, 0, 0);

	/* a QP naming an RMP that does not exist: BAD_RES; then the real one */
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK_EQ(tqp_create(&b, rmpn ^ 0x7ff, out), -1);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_RES);
	REQUIRE_EQ(tqp_create(&b, rmpn, out), 0);
	REQUIRE_EQ(tqp_create(&a, 0, out), 0);
	/* the RMP and its umem are b's now */
	CHECK_EQ(mlx5dv_devx_obj_destroy(rmp), EBUSY);
	CHECK_EQ(mlx5dv_devx_umem_dereg(rwq_um), EBUSY);
	tqp_connect(&a, b.qpn, 0);
	tqp_connect(&b, a.qpn, 7);

	/* three SENDs into three posted WQEs (1024-byte segments: the second
	 * message spans three of them) */
	gdak_test_fill(buf, 8192, 21);
	memset(buf + 16384, 0, 3 * 4096);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(rmp_post(&r, buf + 16384 + i * 4096, mr->lkey, 1024, 3), order[i]);
	for (int i = 0; i < 3; i++) {
		struct mlx5_cqe64 *e;

		tqp_send(&a, buf + i * 2048, mr->lkey, lens[i]);
		e = tqp_cqe(&a);
		CHECK_EQ(e->op_own >> 4, MLX5_CQE_REQ);
		CHECK_EQ(be16toh(e->wqe_counter), i);
		e = tqp_cqe(&b);
		CHECK_EQ(e->op_own >> 4, MLX5_CQE_RESP_SEND);
		CHECK_EQ(be32toh(e->byte_cnt), lens[i]);
		CHECK_EQ(be16toh(e->wqe_counter), order[i]); /* the RMP's index */
		CHECK_EQ(be32toh(e->sop_drop_qpn) & 0xffffff, b.qpn);
		CHECK_MEM(buf + 16384 + i * 4096, buf + i * 2048, lens[i]);
		CHECK_EQ(buf[16384 + i * 4096 + lens[i]], 0);
	}
	rmp_query(rmp, rmpn, 3, 3, 0);
	check_rmp_modify(rmp, rmpn);
	rmp_query(rmp, rmpn, 3, 3, 2);

	/* nothing posted: RNR; a's rnr_retry is 0, so its SEND completes with
	 * RNR_RETRY_EXC_ERR and a goes to ERR; b is untouched */
	tqp_send(&a, buf, mr->lkey, 64);
	{
		struct mlx5_err_cqe *x = (void *)tqp_cqe(&a);

		CHECK_EQ(x->op_own >> 4, MLX5_CQE_REQ_ERR);
		CHECK_EQ(x->syndrome, SYND_RNR_RETRY_EXC);
		CHECK_EQ(be16toh(x->wqe_counter), 3);
		CHECK_EQ(be32toh(x->s_wqe_opcode_qpn) & 0xffffff, a.qpn);
	}
	rmp_query(rmp, rmpn, 3, 3, 2);

	/* teardown in the kernel's order */
	tqp_destroy(&a);
	CHECK_EQ(mlx5dv_devx_obj_destroy(b.qp), 0);
	b.qp = NULL;
	CHECK_EQ(mlx5dv_devx_obj_destroy(rmp), 0);
	tqp_destroy(&b);
	CHECK_EQ(mlx5dv_devx_umem_dereg(rwq_um), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(rdbr_um), 0);
	CHECK_EQ(mlx5dv_devx_obj_destroy(pdo), 0);
	free(r.ring);
	free(r.dbr);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	free(buf);
	ibv_close_device(ctx);
	return gdak_test_end();
}
