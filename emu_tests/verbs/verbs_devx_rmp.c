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

#include "gdak_devx_qp.h"
#include "gdak_prm.h"
#include "gdak_prm_rc.h"
#include "gdak_rmp.h"
#include "gdak_test.h"
#include "gdak_verbs.h"

enum {
	SYND_RNR_RETRY_EXC = 0x16, /* MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR */
	LOG_RMP = 3,		   /* 8 WQEs */
	LOG_RMP_STRIDE = 6,	   /* 64 bytes: the next segment and 3 data segments */
};

static struct ibv_context *ctx;
static union ibv_gid gid;
static uint32_t pdn;

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
	uint8_t in[RMP_IN_LEN];

	/* a mailbox too short for the rmpc */
	rmp_fill(in, pdn, LOG_RMP, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 0);
	prm_refused(ctx, in, 0x400 / 8, ST_BAD_INPUT_LEN);
	/* a striding WQ; WQEs of 512 bytes; a 16-byte linked-list WQE */
	prm_set(in, RMPWQ(0x00, 4), 3);
	prm_refused(ctx, in, sizeof(in), ST_BAD_PARAM);
	rmp_fill(in, pdn, LOG_RMP, 9, wq_id, dbr_id, 0, 0);
	prm_refused(ctx, in, sizeof(in), ST_BAD_PARAM);
	rmp_fill(in, pdn, LOG_RMP, 4, wq_id, dbr_id, 0, 0);
	prm_refused(ctx, in, sizeof(in), ST_BAD_PARAM);
	/* a ring larger than its umem; no PD; no umem (a page list) */
	rmp_fill(in, pdn, LOG_RMP + 4, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 0);
	prm_refused(ctx, in, sizeof(in), ST_BAD_PARAM);
	rmp_fill(in, 0, LOG_RMP, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 0);
	prm_refused(ctx, in, sizeof(in), ST_BAD_RES);
	rmp_fill(in, pdn, LOG_RMP, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 0);
	prm_set(in, RMPWQ(0x121, 1), 0);
	prm_refused(ctx, in, sizeof(in), ST_BAD_PARAM);
	/* a limit beyond the ring */
	rmp_fill(in, pdn, LOG_RMP, LOG_RMP_STRIDE, wq_id, dbr_id, 0, 9);
	prm_refused(ctx, in, sizeof(in), ST_BAD_PARAM);
	/* CREATE_SRQ: its ring is a page list, which a DEVX program cannot
	 * give; gdak's device does not execute it */
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x700);
	prm_refused(ctx, in, sizeof(in), ST_BAD_OP);
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
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct mlx5dv_devx_obj *pdo, *rmp;
	struct mlx5dv_devx_umem *rwq_um, *rdbr_um;
	struct tqp a, b;
	struct trmp r;
	uint8_t *buf, in[RMP_IN_LEN], out[16];
	uint32_t rmpn;

	pd = gdak_vt_open_pd(&ctx, &gid);
	buf = gdak_test_pages(65536);
	mr = ibv_reg_mr(pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(mr != NULL);
	pdo = prm_alloc_pd(ctx, &pdn);

	/* the ring and its record, in the program's memory */
	memset(&r, 0, sizeof(r));
	r.log_sz = LOG_RMP;
	r.stride = 1u << LOG_RMP_STRIDE;
	r.ring = gdak_test_pages(4096);
	r.dbr = gdak_test_pages(4096);
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
	a.ctx = b.ctx = ctx;
	a.gid = b.gid = gid.raw;
	a.pdn = b.pdn = pdn;
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
