/* SPDX-License-Identifier: MIT */
/*
 * gdak_verbs.h - the verbs steps that every RC test takes the same way:
 * open the first device, create an RC QP, walk it RESET -> INIT -> RTR ->
 * RTS, wait for a completion, and load the CUDA driver API at run time.
 *
 * Built against rdma-core's <infiniband/verbs.h> only: a test links the
 * libibverbs it means (gdak's or the system's) and gdak_testlib_verbs.
 * The functions return what verbs returns, so each test keeps its own
 * REQUIRE/CHECK on every step.
 */
#ifndef GDAK_VERBS_H
#define GDAK_VERBS_H

#include <stdint.h>

#include <infiniband/verbs.h>

/* The far end of an RC connection and the limits each side states.  The
 * timeout (14) and retry count (7) are the same in every test; what is 0
 * here is left 0 in the attributes, as a memset'd ibv_qp_attr would be. */
struct gdak_vt_path {
	union ibv_gid dgid;
	uint32_t dqpn;
	uint32_t rq_psn, sq_psn;
	enum ibv_mtu mtu;
	uint8_t max_dest_rd_atomic, max_rd_atomic;
	uint8_t min_rnr_timer, hop_limit, rnr_retry;
};

/* The path most tests take: MTU 1024, RNR timer 12, hop limit 1, RNR retry 7
 * (endless), rq_psn = sq_psn = psn, rd_atomic reads in flight each way. */
struct gdak_vt_path gdak_vt_path_1024(union ibv_gid dgid, uint32_t dqpn, uint32_t psn,
				      uint8_t rd_atomic);

/* The first device of ibv_get_device_list(), opened; the test ends (REQUIRE)
 * when there is none or it does not open. */
struct ibv_context *gdak_vt_open_first(void);
/* gdak_vt_open_first() into *ctx, port 1's GID 0 into *gid and a PD on it;
 * the test ends (REQUIRE) when any of them fails. */
struct ibv_pd *gdak_vt_open_pd(struct ibv_context **ctx, union ibv_gid *gid);
/* buf [0, len) registered on pd for local write and every remote access;
 * the test ends (REQUIRE) when it cannot be. */
struct ibv_mr *gdak_vt_reg_all(struct ibv_pd *pd, void *buf, size_t len);
/* An RC QP on pd with cq for both queues, one SGE each way. */
struct ibv_qp *gdak_vt_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t send_wr,
			     uint32_t recv_wr);
/* RESET -> INIT on port 1, pkey 0, with the given remote access. */
int gdak_vt_to_init(struct ibv_qp *qp, unsigned access);
/* INIT -> RTR and RTR -> RTS along p; the bits of mask_drop are left out of
 * the attribute mask (a test of the kernel's mask rules). */
int gdak_vt_to_rtr(struct ibv_qp *qp, const struct gdak_vt_path *p, int mask_drop);
int gdak_vt_to_rts(struct ibv_qp *qp, const struct gdak_vt_path *p, int mask_drop);
/* Poll cq until it gives one completion (bounded by the test's timeout,
 * never by a clock); ibv_poll_cq's result. */
int gdak_vt_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc);
/* One SEND, RDMA WRITE or RDMA READ (op) of the one SGE sge, the RDMA ones
 * to or from raddr under rkey, with wr_id and IBV_SEND_SIGNALED | flags;
 * ibv_post_send's result. */
int gdak_vt_post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge,
		      uint64_t raddr, uint32_t rkey, unsigned flags);

/* What a test made, destroyed in the order verbs needs (QPs, SRQ, CQ, MRs,
 * PD, device), each destroy CHECKed to return 0; NULL entries are passed over. */
struct gdak_vt_objs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp[4];
	struct ibv_mr *mr[4];
};
void gdak_vt_destroy(const struct gdak_vt_objs *o);

/* What two processes swap (gdak_test_xfer) to connect one RC QP each, as
 * perftest swaps it over TCP. */
struct gdak_vt_info {
	uint32_t qpn, psn, rkey, pad;
	uint64_t addr;
	union ibv_gid gid;
};

/* One process's end of a two-process RC test: its device, PD, CQ, QP and
 * one MR over buf, what it tells the peer and what the peer told it. */
struct gdak_vt_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct gdak_vt_info me, peer;
};

/* The first device opened, a PD, a 64-entry CQ, len bytes of buf (filled
 * with gdak_test_fill's seed pattern) registered with mr_access, an RC QP
 * (16 WRs each way) in INIT with the remote part of mr_access; s->me says
 * QPN, psn, rkey, address and GID 0.  Every step REQUIREd. */
void gdak_vt_side_open(struct gdak_vt_side *s, size_t len, uint64_t seed, unsigned mr_access,
		       uint32_t psn);
/* Swap s->me for s->peer over fd, then INIT -> RTR -> RTS along
 * gdak_vt_path_1024 (one read or atomic in flight each way, the hop limit
 * left to the library); the two GIDs must differ (two processes, two
 * addresses).  Every step REQUIREd. */
void gdak_vt_side_connect(struct gdak_vt_side *s, int fd);
/* gdak_vt_destroy of the side's objects, then buf freed. */
void gdak_vt_side_close(struct gdak_vt_side *s);

/* The CUDA driver API, loaded at run time so that a test builds anywhere. */
struct gdak_vt_cuda {
	void *lib;
	void *ctx;
	int (*mem_alloc)(unsigned long long *dptr, size_t len);
	int (*mem_free)(unsigned long long dptr);
	int (*htod)(unsigned long long dst, const void *src, size_t len);
	int (*dtoh)(void *dst, unsigned long long src, size_t len);
};
/* libcuda.so.1 loaded, device 0's primary context current; exits 77 (skip)
 * saying why when there is no library, no entry point or no usable GPU. */
void gdak_vt_cuda_open(struct gdak_vt_cuda *cu);

#endif
