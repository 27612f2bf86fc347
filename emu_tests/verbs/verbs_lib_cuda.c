/* SPDX-License-Identifier: MIT */
/*
 * verbs_lib_cuda.c - gdak's libibverbs with cudaMalloc'd memory: an MR over
 * GPU memory (the NIC model's CUDA engine moves the bytes), a WRITE from
 * host memory into it and a READ from it back to the host, on a loopback RC
 * QP.  The CUDA driver API is loaded at run time, so this builds anywhere;
 * without a usable GPU it exits 77 (skipped).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_verbs.h"

#define LEN (1 << 20)

int main(void)
{
	struct gdak_vt_cuda cu;
	unsigned long long dptr = 0;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *hmr, *gmr;
	struct gdak_vt_path path = {
		.mtu = IBV_MTU_4096, .max_dest_rd_atomic = 1, .max_rd_atomic = 1, .rnr_retry = 7
	};
	struct ibv_sge sg;
	struct ibv_wc wc;
	uint8_t *h, *back;

	gdak_vt_cuda_open(&cu);
	REQUIRE_EQ(cu.mem_alloc(&dptr, LEN), 0);
	h = malloc(LEN);
	back = malloc(LEN);
	REQUIRE(h && back);
	gdak_test_fill(h, LEN, 5);
	memset(back, 0, LEN);
	REQUIRE_EQ(cu.htod(dptr, back, LEN), 0);

	ctx = gdak_vt_open_first();
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	REQUIRE(pd && cq);
	hmr = ibv_reg_mr(pd, h, LEN, IBV_ACCESS_LOCAL_WRITE);
	gmr = ibv_reg_mr(pd, (void *)(uintptr_t)dptr, LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(hmr != NULL);
	REQUIRE(gmr != NULL);
	qp = gdak_vt_rc_qp(pd, cq, 4, 0);
	REQUIRE(qp != NULL);
	REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &path.dgid), 0);
	path.dqpn = qp->qp_num;
	REQUIRE_EQ(gdak_vt_to_init(qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ), 0);
	REQUIRE_EQ(gdak_vt_to_rtr(qp, &path, 0), 0);
	REQUIRE_EQ(gdak_vt_to_rts(qp, &path, 0), 0);

	/* host -> GPU */
	sg = (struct ibv_sge){ (uintptr_t)h, LEN, hmr->lkey };
	REQUIRE_EQ(gdak_vt_post_rdma(qp, IBV_WR_RDMA_WRITE, 1, &sg, dptr, gmr->rkey, 0), 0);
	REQUIRE_EQ(gdak_vt_wait_wc(cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	REQUIRE_EQ(cu.dtoh(back, dptr, LEN), 0);
	CHECK_MEM(back, h, LEN);
	/* GPU -> host (second half of the host buffer) */
	memset(h + LEN / 2, 0, LEN / 2);
	sg = (struct ibv_sge){ (uintptr_t)h + LEN / 2, LEN / 2, hmr->lkey };
	REQUIRE_EQ(gdak_vt_post_rdma(qp, IBV_WR_RDMA_READ, 2, &sg, dptr, gmr->rkey, 0), 0);
	REQUIRE_EQ(gdak_vt_wait_wc(cq, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_MEM(h + LEN / 2, back, LEN / 2);

	gdak_vt_destroy(&(struct gdak_vt_objs){
		.ctx = ctx, .pd = pd, .cq = cq, .qp = { qp }, .mr = { gmr, hmr } });
	cu.mem_free(dptr);
	free(h);
	free(back);
	return gdak_test_end();
}
