/* SPDX-License-Identifier: MIT */
/*
 * verbs_lib.c - gdak's libibverbs.so.1 (nic_model/ibv/) through rdma-core's
 * own <infiniband/verbs.h>, as a verbs program sees it: the device, PD/MR,
 * one CQ shared by two RC QPs for send and receive, the modify state
 * machine with the kernel's mask rules, every RC opcode with data and
 * ibv_wc fields checked, the ibv_wr_* API, ibv_cq_ex polling, completion
 * channels, SRQ, dma-buf probing, and the error path (bad rkey ->
 * REM_ACCESS_ERR, QP in ERR, async event, later WRs flushed).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

#include <infiniband/verbs.h>

#include "gdak_test.h"
#include "gdak_verbs.h"

#define BUF 65536

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static uint8_t *lbuf, *rbuf;
static struct ibv_mr *lmr, *rmr;
static union ibv_gid gid;

/* Wait (bounded only by the test's timeout, never by a clock) for n completions. */
static int poll_n(struct ibv_cq *c, struct ibv_wc *wc, int n)
{
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(c, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
	}
	return got;
}

static struct ibv_qp *make_qp(struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq, int ex)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.srq = srq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = srq ? 0 : 64;
	a.cap.max_send_sge = 4;
	a.cap.max_recv_sge = 4;
	a.cap.max_inline_data = 128;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
				   IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	}
	return ibv_create_qp_ex(ctx, &a);
}

#define ACCESS_RWA (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static int to_init(struct ibv_qp *qp)
{
	return gdak_vt_to_init(qp, ACCESS_RWA);
}

/* This file's connections: loopback on the one GID, deep read queues. */
static struct gdak_vt_path path(uint32_t dqpn, uint32_t psn)
{
	return gdak_vt_path_1024(gid, dqpn, psn, 16);
}

static int to_rtr(struct ibv_qp *qp, uint32_t dqpn, uint32_t rq_psn, int mask_drop)
{
	struct gdak_vt_path p = path(dqpn, rq_psn);

	return gdak_vt_to_rtr(qp, &p, mask_drop);
}

static int to_rts(struct ibv_qp *qp, uint32_t sq_psn, int mask_drop)
{
	struct gdak_vt_path p = path(0, sq_psn);

	return gdak_vt_to_rts(qp, &p, mask_drop);
}

static void connect_pair(struct ibv_qp *a, struct ibv_qp *b, uint32_t psn_a, uint32_t psn_b)
{
	REQUIRE_EQ(to_init(a), 0);
	REQUIRE_EQ(to_init(b), 0);
	REQUIRE_EQ(to_rtr(a, b->qp_num, psn_b, 0), 0);
	REQUIRE_EQ(to_rtr(b, a->qp_num, psn_a, 0), 0);
	REQUIRE_EQ(to_rts(a, psn_a, 0), 0);
	REQUIRE_EQ(to_rts(b, psn_b, 0), 0);
}

static int post(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, unsigned flags,
		struct ibv_sge *sg, int nsge, uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = sg;
	wr.num_sge = nsge;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	wr.imm_data = htobe32(0xfeed0000u | (uint32_t)wr_id);
	return ibv_post_send(qp, &wr, &bad);
}

static void test_device(void)
{
	struct ibv_device **l;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int n = 0;

	l = ibv_get_device_list(&n);
	REQUIRE(l != NULL);
	REQUIRE(n >= 1);
	CHECK_STR(ibv_get_device_name(l[0]), "mlx5_0");
	CHECK_EQ(be64toh(ibv_get_device_guid(l[0])) >> 40, 0xb8cef6);
	ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	REQUIRE(ctx != NULL);
	REQUIRE_EQ(ibv_query_device(ctx, &da), 0);
	CHECK_EQ(da.vendor_id, 0x02c9);
	CHECK_EQ(da.vendor_part_id, 4129);
	CHECK_EQ(da.phys_port_cnt, 1);
	CHECK(da.max_qp_wr >= 1024);
	CHECK_EQ(da.atomic_cap, IBV_ATOMIC_HCA);
	REQUIRE_EQ(ibv_query_port(ctx, 1, &pa), 0);
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	CHECK_EQ(pa.active_mtu, IBV_MTU_4096);
	REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
	CHECK_EQ(gid.raw[10], 0xff);
	CHECK_EQ(gid.raw[11], 0xff);
	CHECK_EQ(gid.raw[12], 127);
	{
		struct ibv_gid_entry e;

		CHECK_EQ(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
		CHECK_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
		CHECK_MEM(e.gid.raw, gid.raw, 16);
	}
	{
		struct ibv_device_attr_ex x;

		CHECK_EQ(ibv_query_device_ex(ctx, NULL, &x), 0);
		CHECK_EQ(x.orig_attr.vendor_part_id, 4129);
	}
}

static void test_mr(void)
{
	struct ibv_mr *m;

	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd != NULL);
	lbuf = aligned_alloc(4096, BUF);
	rbuf = aligned_alloc(4096, BUF);
	REQUIRE(lbuf && rbuf);
	memset(lbuf, 0, BUF);
	memset(rbuf, 0, BUF);
	lmr = ibv_reg_mr(pd, lbuf, BUF,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_ATOMIC);
	rmr = ibv_reg_mr_iova2(pd, rbuf, BUF, (uintptr_t)rbuf,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	REQUIRE(lmr && rmr);
	CHECK(lmr->lkey != rmr->lkey);
	CHECK(lmr->addr == lbuf);
	/* remote write without local write: IBA 10.6.3.1 */
	errno = 0;
	m = ibv_reg_mr(pd, lbuf, 64, IBV_ACCESS_REMOTE_WRITE);
	CHECK(m == NULL);
	CHECK_EQ(errno, EINVAL);
	/* dma-buf: the capability probe, then a real fd it cannot resolve */
	errno = 0;
	CHECK(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE) == NULL);
	CHECK_EQ(errno, EBADF);
	errno = 0;
	CHECK(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 0, IBV_ACCESS_LOCAL_WRITE) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	m = ibv_reg_mr_iova(pd, lbuf, 64, (uintptr_t)lbuf, IBV_ACCESS_LOCAL_WRITE);
	CHECK(m != NULL);
	if (m)
		CHECK_EQ(ibv_dereg_mr(m), 0);
}

static void test_modify_rules(void)
{
	struct ibv_qp *q = make_qp(cq, cq, NULL, 0), *bad;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_sge sg = { (uintptr_t)lbuf, 8, 0 };

	REQUIRE(q != NULL);
	sg.lkey = lmr->lkey;
	/* post to a QP in RESET */
	CHECK_EQ(post(q, IBV_WR_RDMA_WRITE, 1, IBV_SEND_SIGNALED, &sg, 1, (uintptr_t)rbuf,
		      rmr->rkey),
		 EINVAL);
	/* RESET -> INIT without access flags */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	/* RESET -> RTR: not a transition */
	CHECK_EQ(to_rtr(q, 0x100, 0, 0), EINVAL);
	CHECK_EQ(to_init(q), 0);
	/* INIT -> RTR without the destination QPN, or with an attribute RTR does not take */
	CHECK_EQ(to_rtr(q, q->qp_num, 0, IBV_QP_DEST_QPN), EINVAL);
	memset(&a, 0, sizeof(a));
	CHECK_EQ(ibv_query_qp(q, &a, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(a.qp_state, IBV_QPS_INIT);
	/* a QP connected to itself (loopback, as perftest's -l does) */
	CHECK_EQ(to_rtr(q, q->qp_num, 7, 0), 0);
	CHECK_EQ(to_rts(q, 7, IBV_QP_SQ_PSN), EINVAL);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 8; /* a 3-bit field */
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK_EQ(ibv_modify_qp(q, &a,
			       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
		 EINVAL);
	CHECK_EQ(to_rts(q, 7, 0), 0);
	CHECK_EQ(ibv_query_qp(q, &a, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(a.qp_state, IBV_QPS_RTS);
	CHECK_EQ(a.dest_qp_num, q->qp_num);
	CHECK_EQ(ia.cap.max_inline_data, 128);
	/* UD: not emulated */
	{
		struct ibv_qp_init_attr u = { .send_cq = cq,
					      .recv_cq = cq,
					      .qp_type = IBV_QPT_UD,
					      .cap = { .max_send_wr = 1,
						       .max_recv_wr = 1,
						       .max_send_sge = 1,
						       .max_recv_sge = 1 } };

		errno = 0;
		bad = ibv_create_qp(pd, &u);
		CHECK(bad == NULL);
		CHECK_EQ(errno, EOPNOTSUPP);
	}
	CHECK_EQ(ibv_destroy_qp(q), 0);
}

static void test_ops(struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_wc wc[8];
	struct ibv_sge sg[3];
	struct ibv_recv_wr rwr, *rbad;
	uint64_t *word;

	/* WRITE, two SGEs */
	gdak_test_fill(lbuf, 3000, 1);
	sg[0] = (struct ibv_sge){ (uintptr_t)lbuf, 1000, lmr->lkey };
	sg[1] = (struct ibv_sge){ (uintptr_t)lbuf + 1000, 2000, lmr->lkey };
	CHECK_EQ(post(a, IBV_WR_RDMA_WRITE, 11, IBV_SEND_SIGNALED, sg, 2, (uintptr_t)rbuf + 64,
		      rmr->rkey),
		 0);
	REQUIRE_EQ(poll_n(cq, wc, 1), 1);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].wr_id, 11);
	CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(wc[0].qp_num, a->qp_num);
	CHECK_MEM(rbuf + 64, lbuf, 3000);

	/* unsignalled inline WRITE, then a signalled READ: one CQE, RC order */
	memcpy(lbuf + 4096, "inline-bytes-0123456789", 24);
	sg[0] = (struct ibv_sge){ (uintptr_t)lbuf + 4096, 24, 0 };
	CHECK_EQ(post(a, IBV_WR_RDMA_WRITE, 12, IBV_SEND_INLINE, sg, 1, (uintptr_t)rbuf + 8192,
		      rmr->rkey),
		 0);
	sg[0] = (struct ibv_sge){ (uintptr_t)lbuf + 12288, 24, lmr->lkey };
	CHECK_EQ(post(a, IBV_WR_RDMA_READ, 13, IBV_SEND_SIGNALED, sg, 1, (uintptr_t)rbuf + 8192,
		      rmr->rkey),
		 0);
	REQUIRE_EQ(poll_n(cq, wc, 1), 1);
	CHECK_EQ(wc[0].wr_id, 13);
	CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
	CHECK_EQ(wc[0].byte_len, 24);
	CHECK_MEM(lbuf + 12288, "inline-bytes-0123456789", 24);
	CHECK_EQ(ibv_poll_cq(cq, 8, wc), 0);

	/* zero-length WRITE and READ: valid RC operations (IBA 9.4.3 / 9.4.4) */
	sg[0] = (struct ibv_sge){ (uintptr_t)lbuf, 0, lmr->lkey };
	CHECK_EQ(post(a, IBV_WR_RDMA_WRITE, 14, IBV_SEND_SIGNALED, sg, 1, (uintptr_t)rbuf,
		      rmr->rkey),
		 0);
	CHECK_EQ(
		post(a, IBV_WR_RDMA_READ, 15, IBV_SEND_SIGNALED, sg, 1, (uintptr_t)rbuf, rmr->rkey),
		0);
	REQUIRE_EQ(poll_n(cq, wc, 2), 2);
	CHECK_EQ(wc[0].wr_id, 14);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[1].wr_id, 15);
	CHECK_EQ(wc[1].status, IBV_WC_SUCCESS);

	/* SEND and SEND_IMM into b's receive WQEs (three SGEs scattered) */
	for (int i = 0; i < 2; i++) {
		sg[0] = (struct ibv_sge){ (uintptr_t)rbuf + 16384 + 4096 * (uint64_t)i, 100,
					  rmr->lkey };
		sg[1] = (struct ibv_sge){ (uintptr_t)rbuf + 16484 + 4096 * (uint64_t)i, 100,
					  rmr->lkey };
		sg[2] = (struct ibv_sge){ (uintptr_t)rbuf + 16584 + 4096 * (uint64_t)i, 3000,
					  rmr->lkey };
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = 100 + (uint64_t)i;
		rwr.sg_list = sg;
		rwr.num_sge = 3;
		CHECK_EQ(ibv_post_recv(b, &rwr, &rbad), 0);
	}
	gdak_test_fill(lbuf, 1500, 2);
	sg[0] = (struct ibv_sge){ (uintptr_t)lbuf, 1500, lmr->lkey };
	CHECK_EQ(post(a, IBV_WR_SEND, 21, IBV_SEND_SIGNALED, sg, 1, 0, 0), 0);
	CHECK_EQ(post(a, IBV_WR_SEND_WITH_IMM, 22, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, sg, 1, 0,
		      0),
		 0);
	REQUIRE_EQ(poll_n(cq, wc, 4), 4);
	{
		int sends = 0, recvs = 0;

		for (int i = 0; i < 4; i++) {
			CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
			if (wc[i].opcode == IBV_WC_SEND) {
				CHECK_EQ(wc[i].wr_id, 21 + (uint64_t)sends);
				sends++;
			} else if (wc[i].opcode == IBV_WC_RECV) {
				CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)recvs);
				CHECK_EQ(wc[i].byte_len, 1500);
				CHECK_EQ(wc[i].qp_num, b->qp_num);
				if (recvs == 1) {
					CHECK(wc[i].wc_flags & IBV_WC_WITH_IMM);
					CHECK_EQ(be32toh(wc[i].imm_data), 0xfeed0016u);
				} else {
					CHECK(!(wc[i].wc_flags & IBV_WC_WITH_IMM));
				}
				recvs++;
			}
		}
		CHECK_EQ(sends, 2);
		CHECK_EQ(recvs, 2);
		CHECK_MEM(rbuf + 16384, lbuf, 200);
		CHECK_MEM(rbuf + 16584, lbuf + 200, 1300);
		CHECK_MEM(rbuf + 16384 + 4096 + 200, lbuf + 200, 1300);
	}

	/* WRITE_IMM: data at the target, a receive completion with the immediate */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 200;
	CHECK_EQ(ibv_post_recv(b, &rwr, &rbad), 0);
	gdak_test_fill(lbuf, 512, 3);
	sg[0] = (struct ibv_sge){ (uintptr_t)lbuf, 512, lmr->lkey };
	CHECK_EQ(post(a, IBV_WR_RDMA_WRITE_WITH_IMM, 31, IBV_SEND_SIGNALED, sg, 1,
		      (uintptr_t)rbuf + 32768, rmr->rkey),
		 0);
	REQUIRE_EQ(poll_n(cq, wc, 2), 2);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
			CHECK_EQ(wc[i].wr_id, 200);
			CHECK_EQ(be32toh(wc[i].imm_data), 0xfeed001fu);
			CHECK(wc[i].wc_flags & IBV_WC_WITH_IMM);
		} else {
			CHECK_EQ(wc[i].opcode, IBV_WC_RDMA_WRITE);
			CHECK_EQ(wc[i].wr_id, 31);
		}
	}
	CHECK_MEM(rbuf + 32768, lbuf, 512);

	/* atomics: the original value comes back big-endian, as ConnectX writes it */
	word = (uint64_t *)(void *)(rbuf + 40960);
	*word = 1000;
	{
		struct ibv_send_wr wr, *bad;

		memset(&wr, 0, sizeof(wr));
		sg[0] = (struct ibv_sge){ (uintptr_t)lbuf + 40960, 8, lmr->lkey };
		wr.wr_id = 41;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = sg;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = (uintptr_t)word;
		wr.wr.atomic.rkey = rmr->rkey;
		wr.wr.atomic.compare_add = 23;
		CHECK_EQ(ibv_post_send(a, &wr, &bad), 0);
		REQUIRE_EQ(poll_n(cq, wc, 1), 1);
		CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[0].opcode, IBV_WC_FETCH_ADD);
		CHECK_EQ(be64toh(*(uint64_t *)(void *)(lbuf + 40960)), 1000);
		CHECK_EQ(*word, 1023);
		wr.wr_id = 42;
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 1023;
		wr.wr.atomic.swap = 77;
		CHECK_EQ(ibv_post_send(a, &wr, &bad), 0);
		REQUIRE_EQ(poll_n(cq, wc, 1), 1);
		CHECK_EQ(wc[0].opcode, IBV_WC_COMP_SWAP);
		CHECK_EQ(be64toh(*(uint64_t *)(void *)(lbuf + 40960)), 1023);
		CHECK_EQ(*word, 77);
	}

	/* a full queue of unsignalled WRs (only every 16th signalled) wraps the
	 * ring many times over; the data of the last one is there */
	for (int i = 0; i < 1024; i++) {
		uint32_t v = (uint32_t)i;

		memcpy(lbuf + 50000, &v, 4);
		sg[0] = (struct ibv_sge){ (uintptr_t)lbuf + 50000, 4, lmr->lkey };
		CHECK_EQ(
			post(a, IBV_WR_RDMA_WRITE, 1000 + (uint64_t)i,
			     (i % 16 == 15) ? IBV_SEND_SIGNALED | IBV_SEND_INLINE : IBV_SEND_INLINE,
			     sg, 1, (uintptr_t)rbuf + 50000 + 4 * ((uint64_t)i % 64), rmr->rkey),
			0);
		if (i % 16 == 15) {
			REQUIRE_EQ(poll_n(cq, wc, 1), 1);
			CHECK_EQ(wc[0].wr_id, 1000 + (uint64_t)i);
		}
	}
	{
		uint32_t last;

		memcpy(&last, rbuf + 50000 + 4 * 63, 4);
		CHECK_EQ(last, 1023);
	}
}

static void test_wr_api(struct ibv_qp *a)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(a);
	struct ibv_cq_init_attr_ex ca;
	struct ibv_cq_ex *cqx;
	struct ibv_wc wc;

	REQUIRE(x != NULL);
	gdak_test_fill(lbuf, 4096, 9);
	ibv_wr_start(x);
	x->wr_id = 51;
	x->wr_flags = 0;
	ibv_wr_rdma_write(x, rmr->rkey, (uintptr_t)rbuf);
	ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf, 2048);
	x->wr_id = 52;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, rmr->rkey, (uintptr_t)rbuf + 2048);
	ibv_wr_set_inline_data(x, lbuf + 2048, 100);
	CHECK_EQ(ibv_wr_complete(x), 0);
	REQUIRE_EQ(poll_n(cq, &wc, 1), 1);
	CHECK_EQ(wc.wr_id, 52);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_MEM(rbuf, lbuf, 2148);
	/* an aborted batch leaves nothing behind */
	ibv_wr_start(x);
	x->wr_id = 53;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, rmr->rkey, (uintptr_t)rbuf);
	ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf + 8192, 64);
	ibv_wr_abort(x);
	CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 0);
	CHECK_MEM(rbuf, lbuf, 64);

	/* ibv_cq_ex: a CQ of its own for a fresh loopback QP */
	memset(&ca, 0, sizeof(ca));
	ca.cqe = 64;
	ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
	cqx = ibv_create_cq_ex(ctx, &ca);
	REQUIRE(cqx != NULL);
	{
		struct ibv_qp *q = make_qp(ibv_cq_ex_to_cq(cqx), ibv_cq_ex_to_cq(cqx), NULL, 1);
		struct ibv_qp_ex *qx;
		struct ibv_poll_cq_attr pa = { 0 };
		int ret;

		REQUIRE(q != NULL);
		REQUIRE_EQ(to_init(q), 0);
		REQUIRE_EQ(to_rtr(q, q->qp_num, 99, 0), 0);
		REQUIRE_EQ(to_rts(q, 99, 0), 0);
		qx = ibv_qp_to_qp_ex(q);
		REQUIRE(qx != NULL);
		ibv_wr_start(qx);
		qx->wr_id = 61;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_read(qx, rmr->rkey, (uintptr_t)rbuf);
		ibv_wr_set_sge(qx, lmr->lkey, (uintptr_t)lbuf + 16384, 300);
		CHECK_EQ(ibv_wr_complete(qx), 0);
		while ((ret = ibv_start_poll(cqx, &pa)) == ENOENT)
			;
		CHECK_EQ(ret, 0);
		if (!ret) {
			CHECK_EQ(cqx->status, IBV_WC_SUCCESS);
			CHECK_EQ(cqx->wr_id, 61);
			CHECK_EQ(ibv_wc_read_opcode(cqx), IBV_WC_RDMA_READ);
			CHECK_EQ(ibv_wc_read_byte_len(cqx), 300);
			CHECK_EQ(ibv_wc_read_qp_num(cqx), q->qp_num);
			CHECK_EQ(ibv_next_poll(cqx), ENOENT);
			ibv_end_poll(cqx);
		}
		CHECK_MEM(lbuf + 16384, rbuf, 300);
		CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), EBUSY);
		CHECK_EQ(ibv_destroy_qp(q), 0);
	}
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
}

static void test_channel(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *c, *ev_cq = NULL;
	struct ibv_qp *q;
	struct ibv_sge sg;
	struct ibv_wc wc;
	void *ev_ctx = NULL;
	struct pollfd p;

	REQUIRE(ch != NULL);
	c = ibv_create_cq(ctx, 16, (void *)0x1234, ch, 0);
	REQUIRE(c != NULL);
	q = make_qp(c, c, NULL, 0);
	REQUIRE(q != NULL);
	REQUIRE_EQ(to_init(q), 0);
	REQUIRE_EQ(to_rtr(q, q->qp_num, 5, 0), 0);
	REQUIRE_EQ(to_rts(q, 5, 0), 0);
	CHECK_EQ(ibv_req_notify_cq(c, 0), 0);
	/* nothing happened: the channel's fd is not readable */
	p = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	CHECK_EQ(poll(&p, 1, 0), 0);
	sg = (struct ibv_sge){ (uintptr_t)lbuf, 64, lmr->lkey };
	CHECK_EQ(post(q, IBV_WR_RDMA_WRITE, 71, IBV_SEND_SIGNALED, &sg, 1, (uintptr_t)rbuf,
		      rmr->rkey),
		 0);
	/* blocks until the notifier writes the event (the test's timeout bounds it) */
	CHECK_EQ(poll(&p, 1, -1), 1);
	CHECK_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	CHECK(ev_cq == c);
	CHECK(ev_ctx == (void *)0x1234);
	ibv_ack_cq_events(c, 1);
	CHECK_EQ(poll_n(c, &wc, 1), 1);
	CHECK_EQ(wc.wr_id, 71);
	CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY);
	CHECK_EQ(ibv_destroy_qp(q), 0);
	CHECK_EQ(ibv_destroy_cq(c), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
}

static void test_srq(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1, .srq_limit = 0 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_cq *c = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *s1, *s2, *r1, *r2;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_srq_attr at;
	struct ibv_async_event ev;
	struct ibv_sge sg;
	struct ibv_wc wc[4];
	int flags;

	REQUIRE(srq && c);
	s1 = make_qp(c, c, NULL, 0);
	s2 = make_qp(c, c, NULL, 0);
	r1 = make_qp(c, c, srq, 0);
	r2 = make_qp(c, c, srq, 0);
	REQUIRE(s1 && s2 && r1 && r2);
	connect_pair(s1, r1, 10, 20);
	connect_pair(s2, r2, 30, 40);
	/* a QP on an SRQ has no receive queue of its own */
	memset(&rwr, 0, sizeof(rwr));
	CHECK_EQ(ibv_post_recv(r1, &rwr, &rbad), EINVAL);
	for (int i = 0; i < 4; i++) {
		sg = (struct ibv_sge){ (uintptr_t)rbuf + 1024 * (uint64_t)i, 1024, rmr->lkey };
		rwr.wr_id = 300 + (uint64_t)i;
		rwr.sg_list = &sg;
		rwr.num_sge = 1;
		CHECK_EQ(ibv_post_srq_recv(srq, &rwr, &rbad), 0);
	}
	/* arm the limit: fires when fewer than 3 WRs are left */
	at.srq_limit = 3;
	CHECK_EQ(ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT), 0);
	/* both QPs' messages take the SRQ's WRs in posting order */
	memcpy(lbuf, "first", 6);
	memcpy(lbuf + 64, "second", 7);
	sg = (struct ibv_sge){ (uintptr_t)lbuf + 64, 7, lmr->lkey };
	CHECK_EQ(post(s2, IBV_WR_SEND, 81, IBV_SEND_SIGNALED, &sg, 1, 0, 0), 0);
	REQUIRE_EQ(poll_n(c, wc, 2), 2);
	sg = (struct ibv_sge){ (uintptr_t)lbuf, 6, lmr->lkey };
	CHECK_EQ(post(s1, IBV_WR_SEND, 82, IBV_SEND_SIGNALED, &sg, 1, 0, 0), 0);
	REQUIRE_EQ(poll_n(c, wc + 2, 2), 2);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		if (wc[i].opcode == IBV_WC_RECV && wc[i].qp_num == r2->qp_num)
			CHECK_EQ(wc[i].wr_id, 300);
		else if (wc[i].opcode == IBV_WC_RECV)
			CHECK_EQ(wc[i].wr_id, 301);
	}
	CHECK_MEM(rbuf, "second", 7);
	CHECK_MEM(rbuf + 1024, "first", 6);
	CHECK_EQ(ibv_query_srq(srq, &at), 0);
	CHECK_EQ(at.max_wr, 8);
	CHECK_EQ(at.srq_limit, 0); /* the event disarmed it */
	/* the limit event (the port-active one came first, at open) */
	flags = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	{
		int seen_limit = 0;

		while (ibv_get_async_event(ctx, &ev) == 0) {
			if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq)
				seen_limit++;
			ibv_ack_async_event(&ev);
		}
		CHECK_EQ(seen_limit, 1);
	}
	fcntl(ctx->async_fd, F_SETFL, flags);
	CHECK_EQ(ibv_destroy_srq(srq), EBUSY);
	gdak_vt_destroy(&(struct gdak_vt_objs){ .cq = c, .srq = srq, .qp = { s1, s2, r1, r2 } });
}

/* A SEND to a QP with a receive queue but no WR posted: with RNR retry 0
 * the first RNR NAK ends it, RNR_RETRY_EXC_ERR (IBA 9.7.5.2.8). */
static void test_rnr(void)
{
	struct ibv_cq *c = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *s, *r;
	struct gdak_vt_path at;
	struct ibv_sge sg = { (uintptr_t)lbuf, 64, 0 };
	struct ibv_wc wc;

	REQUIRE(c != NULL);
	s = make_qp(c, c, NULL, 0);
	r = make_qp(c, c, NULL, 0);
	REQUIRE(s && r);
	sg.lkey = lmr->lkey;
	REQUIRE_EQ(to_init(s), 0);
	REQUIRE_EQ(to_init(r), 0);
	REQUIRE_EQ(to_rtr(s, r->qp_num, 0x77, 0), 0);
	REQUIRE_EQ(to_rtr(r, s->qp_num, 0x66, 0), 0);
	REQUIRE_EQ(to_rts(r, 0x77, 0), 0);
	/* the sender gives up at the first RNR NAK */
	at = path(0, 0x66);
	at.rnr_retry = 0;
	at.max_rd_atomic = 1;
	REQUIRE_EQ(gdak_vt_to_rts(s, &at, 0), 0);
	CHECK_EQ(post(s, IBV_WR_SEND, 111, IBV_SEND_SIGNALED, &sg, 1, 0, 0), 0);
	REQUIRE_EQ(poll_n(c, &wc, 1), 1);
	CHECK_EQ(wc.wr_id, 111);
	CHECK_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	CHECK_EQ(ibv_destroy_qp(s), 0);
	CHECK_EQ(ibv_destroy_qp(r), 0);
	CHECK_EQ(ibv_destroy_cq(c), 0);
}

static void test_errors(struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_async_event ev;
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;
	struct ibv_sge sg = { (uintptr_t)lbuf, 64, lmr->lkey };
	struct ibv_wc wc[2];
	int flags, fatal = 0;

	CHECK_EQ(post(a, IBV_WR_RDMA_WRITE, 91, IBV_SEND_SIGNALED, &sg, 1, (uintptr_t)rbuf,
		      rmr->rkey ^ 0x5500),
		 0);
	CHECK_EQ(post(a, IBV_WR_RDMA_WRITE, 92, 0, &sg, 1, (uintptr_t)rbuf, rmr->rkey), 0);
	REQUIRE_EQ(poll_n(cq, wc, 2), 2);
	CHECK_EQ(wc[0].wr_id, 91);
	CHECK_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	/* the WR after it: flushed, reported although unsignalled */
	CHECK_EQ(wc[1].wr_id, 92);
	CHECK_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(ibv_query_qp(a, &at, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(at.qp_state, IBV_QPS_ERR);
	flags = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	while (ibv_get_async_event(ctx, &ev) == 0) {
		if ((ev.event_type == IBV_EVENT_QP_ACCESS_ERR ||
		     ev.event_type == IBV_EVENT_QP_FATAL) &&
		    ev.element.qp == a)
			fatal++;
		ibv_ack_async_event(&ev);
	}
	fcntl(ctx->async_fd, F_SETFL, flags);
	CHECK_EQ(fatal, 1);
	/* back to RESET and up again, both ends: the QPs work */
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RESET;
	CHECK_EQ(ibv_modify_qp(a, &at, IBV_QP_STATE), 0);
	CHECK_EQ(ibv_modify_qp(b, &at, IBV_QP_STATE), 0);
	CHECK_EQ(ibv_query_qp(a, &at, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(at.qp_state, IBV_QPS_RESET);
	CHECK_EQ(ibv_poll_cq(cq, 2, wc), 0);
	connect_pair(a, b, 0x500, 0x600);
	gdak_test_fill(lbuf, 8192, 11);
	sg = (struct ibv_sge){ (uintptr_t)lbuf, 8192, lmr->lkey };
	CHECK_EQ(post(a, IBV_WR_RDMA_WRITE, 93, IBV_SEND_SIGNALED, &sg, 1, (uintptr_t)rbuf,
		      rmr->rkey),
		 0);
	REQUIRE_EQ(poll_n(cq, wc, 1), 1);
	CHECK_EQ(wc[0].wr_id, 93);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_MEM(rbuf, lbuf, 8192);
}

/* int ibv_read_sysfs_file(...) is exported (ibv_devinfo imports it) but not
 * declared by the installed headers */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

static void test_misc(void)
{
	struct ibv_device_attr_ex x;
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_gid_entry tbl[4];
	struct ibv_mr *m;
	__be16 pkey;
	char buf[64];

	CHECK_EQ(ibv_query_device_ex(ctx, NULL, &x), 0);
	CHECK(x.odp_caps.general_caps & IBV_ODP_SUPPORT);
	CHECK(!(x.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT));
	CHECK(x.odp_caps.per_transport_caps.rc_odp_caps & IBV_ODP_SUPPORT_WRITE);
	CHECK(x.completion_timestamp_mask != 0);
	CHECK(x.hca_core_clock != 0);
	CHECK_EQ(ibv_query_rt_values_ex(ctx, &v), 0);
	CHECK(v.raw_clock.tv_sec != 0 || v.raw_clock.tv_nsec != 0);
	/* explicit ODP registers; implicit (the whole address space) does not */
	m = ibv_reg_mr(pd, lbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	CHECK(m != NULL);
	if (m)
		CHECK_EQ(ibv_dereg_mr(m), 0);
	errno = 0;
	CHECK(ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) ==
	      NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	/* the GID table has exactly the one RoCE v2 entry */
	CHECK_EQ(ibv_query_gid_table(ctx, tbl, 4, 0), 1);
	CHECK_EQ(tbl[0].gid_type, IBV_GID_TYPE_ROCE_V2);
	CHECK_EQ(ibv_query_gid_ex(ctx, 1, 1, &tbl[1], 0), ENODATA);
	CHECK_EQ(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	CHECK_EQ(be16toh(pkey), 0xffff);
	CHECK_EQ(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), 0);
	CHECK_STR(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), "remote access error");
	CHECK_STR(ibv_event_type_str(IBV_EVENT_SRQ_LIMIT_REACHED), "SRQ limit reached");
	CHECK_STR(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
	CHECK_EQ(ibv_rate_to_mbps(IBV_RATE_400_GBPS), 425000);
	CHECK_EQ(ibv_fork_init(), 0);
	CHECK_EQ(ibv_get_device_index(ctx->device), 0);
	CHECK_EQ(ibv_read_sysfs_file(ctx->device->ibdev_path, "fw_ver", buf, sizeof(buf)),
		 (int)strlen("28.39.1002"));
	CHECK_STR(buf, "28.39.1002");
	CHECK_EQ(ibv_read_sysfs_file(ctx->device->ibdev_path, "ports/1/gid_attrs/types/0", buf,
				     sizeof(buf)),
		 7);
	CHECK_STR(buf, "RoCE v2");
}

int main(void)
{
	struct ibv_qp *a, *b;

	test_device();
	test_mr();
	test_misc();
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	REQUIRE(cq != NULL);
	test_modify_rules();
	a = make_qp(cq, cq, NULL, 1);
	b = make_qp(cq, cq, NULL, 0);
	REQUIRE(a && b);
	connect_pair(a, b, 0x123456, 0xabcdef);
	test_ops(a, b);
	test_wr_api(a);
	test_channel();
	test_srq();
	test_rnr();
	test_errors(a, b);
	gdak_vt_destroy(&(struct gdak_vt_objs){
		.ctx = ctx, .pd = pd, .cq = cq, .qp = { a, b }, .mr = { lmr, rmr } });
	free(lbuf);
	free(rbuf);
	return gdak_test_end();
}
