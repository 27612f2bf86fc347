/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "gdak_verbs.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "gdak_test.h"

struct ibv_context *gdak_vt_open_first(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	REQUIRE(l && l[0]);
	ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	REQUIRE(ctx != NULL);
	return ctx;
}

struct ibv_pd *gdak_vt_open_pd(struct ibv_context **ctx, union ibv_gid *gid)
{
	struct ibv_pd *pd;

	*ctx = gdak_vt_open_first();
	REQUIRE_EQ(ibv_query_gid(*ctx, 1, 0, gid), 0);
	pd = ibv_alloc_pd(*ctx);
	REQUIRE(pd != NULL);
	return pd;
}

struct ibv_mr *gdak_vt_reg_all(struct ibv_pd *pd, void *buf, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);

	REQUIRE(mr != NULL);
	return mr;
}

struct ibv_qp *gdak_vt_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t send_wr,
			     uint32_t recv_wr)
{
	struct ibv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = send_wr;
	qa.cap.max_recv_wr = recv_wr;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = recv_wr ? 1 : 0;
	return ibv_create_qp(pd, &qa);
}

struct gdak_vt_path gdak_vt_path_1024(union ibv_gid dgid, uint32_t dqpn, uint32_t psn,
				      uint8_t rd_atomic)
{
	struct gdak_vt_path p;

	memset(&p, 0, sizeof(p));
	p.dgid = dgid;
	p.dqpn = dqpn;
	p.rq_psn = p.sq_psn = psn;
	p.mtu = IBV_MTU_1024;
	p.max_dest_rd_atomic = p.max_rd_atomic = rd_atomic;
	p.min_rnr_timer = 12;
	p.hop_limit = 1;
	p.rnr_retry = 7;
	return p;
}

int gdak_vt_to_init(struct ibv_qp *qp, unsigned access)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int gdak_vt_to_rtr(struct ibv_qp *qp, const struct gdak_vt_path *p, int mask_drop)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = p->mtu;
	a.dest_qp_num = p->dqpn;
	a.rq_psn = p->rq_psn;
	a.max_dest_rd_atomic = p->max_dest_rd_atomic;
	a.min_rnr_timer = p->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = p->dgid;
	a.ah_attr.grh.hop_limit = p->hop_limit;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(qp, &a,
			     (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) &
				     ~mask_drop);
}

int gdak_vt_to_rts(struct ibv_qp *qp, const struct gdak_vt_path *p, int mask_drop)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = p->rnr_retry;
	a.sq_psn = p->sq_psn;
	a.max_rd_atomic = p->max_rd_atomic;
	return ibv_modify_qp(qp, &a,
			     (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) &
				     ~mask_drop);
}

int gdak_vt_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int r;

	while ((r = ibv_poll_cq(cq, 1, wc)) == 0)
		;
	return r;
}

int gdak_vt_post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge,
		      uint64_t raddr, uint32_t rkey, unsigned flags)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED | flags;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

void gdak_vt_side_open(struct gdak_vt_side *s, size_t len, uint64_t seed, unsigned mr_access,
		       uint32_t psn)
{
	unsigned remote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC;

	memset(s, 0, sizeof(*s));
	s->ctx = gdak_vt_open_first();
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, len);
	REQUIRE(s->pd && s->cq && s->buf);
	gdak_test_fill(s->buf, len, seed);
	s->mr = ibv_reg_mr(s->pd, s->buf, len, (int)mr_access);
	REQUIRE(s->mr != NULL);
	s->qp = gdak_vt_rc_qp(s->pd, s->cq, 16, 16);
	REQUIRE(s->qp != NULL);
	REQUIRE_EQ(gdak_vt_to_init(s->qp, mr_access & remote), 0);
	s->me.qpn = s->qp->qp_num;
	s->me.psn = psn;
	s->me.rkey = s->mr->rkey;
	s->me.addr = (uintptr_t)s->buf;
	REQUIRE_EQ(ibv_query_gid(s->ctx, 1, 0, &s->me.gid), 0);
}

void gdak_vt_side_connect(struct gdak_vt_side *s, int fd)
{
	struct gdak_vt_path p;

	REQUIRE_EQ(gdak_test_xfer(fd, &s->peer, &s->me, sizeof(s->me)), 0);
	CHECK(memcmp(s->me.gid.raw, s->peer.gid.raw, 16) != 0);
	p = gdak_vt_path_1024(s->peer.gid, s->peer.qpn, s->peer.psn, 1);
	p.sq_psn = s->me.psn;
	p.hop_limit = 0;
	REQUIRE_EQ(gdak_vt_to_rtr(s->qp, &p, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rts(s->qp, &p, 0), 0);
}

/* fn(x), CHECKed to return 0, when there is an x */
#define VT_GONE(fn, x)                      \
	do {                                \
		if (x)                      \
			CHECK_EQ(fn(x), 0); \
	} while (0)

void gdak_vt_destroy(const struct gdak_vt_objs *o)
{
	for (int i = 0; i < 4; i++)
		VT_GONE(ibv_destroy_qp, o->qp[i]);
	VT_GONE(ibv_destroy_srq, o->srq);
	VT_GONE(ibv_destroy_cq, o->cq);
	for (int i = 0; i < 4; i++)
		VT_GONE(ibv_dereg_mr, o->mr[i]);
	VT_GONE(ibv_dealloc_pd, o->pd);
	VT_GONE(ibv_close_device, o->ctx);
}

void gdak_vt_cuda_open(struct gdak_vt_cuda *cu)
{
	int (*init)(unsigned);
	int (*dev_get)(int *, int);
	int (*retain)(void **, int);
	int (*set)(void *);
	static const char *const names[] = {
		"cuInit",	 "cuDeviceGet",	 "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
		"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2",	     "cuMemcpyDtoH_v2"
	};
	void **slots[] = { (void **)&init,     (void **)&dev_get,	(void **)&retain,
			   (void **)&set,      (void **)&cu->mem_alloc, (void **)&cu->mem_free,
			   (void **)&cu->htod, (void **)&cu->dtoh };
	int dev = 0;

	memset(cu, 0, sizeof(*cu));
	cu->lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!cu->lib)
		GDAK_TEST_SKIP("no libcuda.so.1");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(*slots[i] = dlsym(cu->lib, names[i])))
			GDAK_TEST_SKIP("libcuda.so.1 lacks the driver API this test uses");
	if (init(0) || dev_get(&dev, 0) || retain(&cu->ctx, dev) || set(cu->ctx))
		GDAK_TEST_SKIP("no usable GPU");
}

void gdak_vt_side_close(struct gdak_vt_side *s)
{
	gdak_vt_destroy(&(struct gdak_vt_objs){
		.ctx = s->ctx, .pd = s->pd, .cq = s->cq, .qp = { s->qp }, .mr = { s->mr } });
	free(s->buf);
	s->buf = NULL;
}
