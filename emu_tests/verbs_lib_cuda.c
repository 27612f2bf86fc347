/* SPDX-License-Identifier: MIT */
/*
 * verbs_lib_cuda.c - gdak's libibverbs with cudaMalloc'd memory: an MR over
 * GPU memory (the NIC model's CUDA engine moves the bytes), a WRITE from
 * host memory into it and a READ from it back to the host, on a loopback RC
 * QP.  The CUDA driver API is loaded at run time, so this builds anywhere;
 * without a usable GPU it exits 77 (skipped).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"

#define LEN (1 << 20)

typedef int (*cu_init_t)(unsigned);
typedef int (*cu_dev_get_t)(int *, int);
typedef int (*cu_ctx_retain_t)(void **, int);
typedef int (*cu_ctx_set_t)(void *);
typedef int (*cu_alloc_t)(unsigned long long *, size_t);
typedef int (*cu_free_t)(unsigned long long);
typedef int (*cu_htod_t)(unsigned long long, const void *, size_t);
typedef int (*cu_dtoh_t)(void *, unsigned long long, size_t);

static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int r;

	while ((r = ibv_poll_cq(cq, 1, wc)) == 0)
		;
	return r;
}

int main(void)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW);
	cu_init_t init;
	cu_dev_get_t dev_get;
	cu_ctx_retain_t retain;
	cu_ctx_set_t set;
	cu_alloc_t alloc;
	cu_free_t cfree;
	cu_htod_t htod;
	cu_dtoh_t dtoh;
	unsigned long long dptr = 0;
	void *cctx = NULL;
	int dev = 0;
	struct ibv_device **l;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *hmr, *gmr;
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	union ibv_gid gid;
	struct ibv_sge sg;
	struct ibv_send_wr w, *bad;
	struct ibv_wc wc;
	uint8_t *h, *back;

	if (!cu)
		GDAK_TEST_SKIP("no libcuda.so.1");
	init = (cu_init_t)dlsym(cu, "cuInit");
	dev_get = (cu_dev_get_t)dlsym(cu, "cuDeviceGet");
	retain = (cu_ctx_retain_t)dlsym(cu, "cuDevicePrimaryCtxRetain");
	set = (cu_ctx_set_t)dlsym(cu, "cuCtxSetCurrent");
	alloc = (cu_alloc_t)dlsym(cu, "cuMemAlloc_v2");
	cfree = (cu_free_t)dlsym(cu, "cuMemFree_v2");
	htod = (cu_htod_t)dlsym(cu, "cuMemcpyHtoD_v2");
	dtoh = (cu_dtoh_t)dlsym(cu, "cuMemcpyDtoH_v2");
	if (!init || !dev_get || !retain || !set || !alloc || !cfree || !htod || !dtoh)
		GDAK_TEST_SKIP("libcuda.so.1 lacks the driver API this test uses");
	if (init(0) || dev_get(&dev, 0) || retain(&cctx, dev) || set(cctx))
		GDAK_TEST_SKIP("no usable GPU");
	REQUIRE_EQ(alloc(&dptr, LEN), 0);
	h = malloc(LEN);
	back = malloc(LEN);
	REQUIRE(h && back);
	gdak_test_fill(h, LEN, 5);
	memset(back, 0, LEN);
	REQUIRE_EQ(htod(dptr, back, LEN), 0);

	l = ibv_get_device_list(NULL);
	REQUIRE(l && l[0]);
	ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	REQUIRE(ctx != NULL);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	REQUIRE(pd && cq);
	hmr = ibv_reg_mr(pd, h, LEN, IBV_ACCESS_LOCAL_WRITE);
	gmr = ibv_reg_mr(pd, (void *)(uintptr_t)dptr, LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(hmr != NULL);
	REQUIRE(gmr != NULL);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	REQUIRE(qp != NULL);
	REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	REQUIRE_EQ(
		ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.port_num = 1;
	REQUIRE_EQ(ibv_modify_qp(qp, &a,
				 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_MIN_RNR_TIMER),
		   0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	REQUIRE_EQ(ibv_modify_qp(qp, &a,
				 IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					 IBV_QP_MAX_QP_RD_ATOMIC),
		   0);

	/* host -> GPU */
	sg = (struct ibv_sge){ (uintptr_t)h, LEN, hmr->lkey };
	memset(&w, 0, sizeof(w));
	w.wr_id = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.sg_list = &sg;
	w.num_sge = 1;
	w.wr.rdma.remote_addr = dptr;
	w.wr.rdma.rkey = gmr->rkey;
	REQUIRE_EQ(ibv_post_send(qp, &w, &bad), 0);
	REQUIRE_EQ(wait_wc(cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	REQUIRE_EQ(dtoh(back, dptr, LEN), 0);
	CHECK_MEM(back, h, LEN);
	/* GPU -> host (second half of the host buffer) */
	memset(h + LEN / 2, 0, LEN / 2);
	sg = (struct ibv_sge){ (uintptr_t)h + LEN / 2, LEN / 2, hmr->lkey };
	w.wr_id = 2;
	w.opcode = IBV_WR_RDMA_READ;
	REQUIRE_EQ(ibv_post_send(qp, &w, &bad), 0);
	REQUIRE_EQ(wait_wc(cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_MEM(h + LEN / 2, back, LEN / 2);

	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_dereg_mr(gmr), 0);
	CHECK_EQ(ibv_dereg_mr(hmr), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	cfree(dptr);
	free(h);
	free(back);
	return gdak_test_end();
}
