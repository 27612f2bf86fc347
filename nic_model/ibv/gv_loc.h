/* SPDX-License-Identifier: MIT */
/*
 * gv_loc.h - gdak's libibverbs.so.1 (the NIC model as an RDMA device for
 * unmodified verbs programs): objects and cross-file functions, grouped by
 * the file that defines them.
 *
 *   gv_device.c  device list, open/close, query_device/port/gid/pkey, sysfs
 *   gv_addr.c    the device's address (127.0.0.N), its QPN directory on UDP 4791
 *   gv_verbs.c   PD, MR, AH, SRQ, CQ, completion channels, async events
 *   gv_qp.c      QPs: create, modify (masks checked as the kernel does), query
 *   gv_post.c    the data path: mlx5 WQEs, doorbells, CQE parsing, ibv_wr_*
 *   gv_misc.c    *_str helpers, fork, rates, the rest of the exported names
 *
 * Every struct the program sees is rdma-core's (<infiniband/verbs.h>); ours
 * embed them first.  One NIC-model context (gdak_ctx on "emu:udp:ADDR") per
 * device per process, shared by every ibv_context opened on it.
 *
 * A verbs CQ is one NIC-model CQ (nic_model/nm_ext.h) on a ring this
 * library allocates, as libmlx5 does: every QP attached to it (send side,
 * receive side, any number of QPs) gets its CQEs there, and poll_cq maps
 * each CQE's QPN to the work queue it completes.  A verbs QP is one
 * NIC-model QP on rings this library allocates too (one buffer, RQ first
 * then SQ, and a doorbell record pair, as libmlx5 lays them out), so
 * mlx5dv_init_obj (gdak's libmlx5.so.1) can hand all of it to the program.
 */
#ifndef GV_LOC_H
#define GV_LOC_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <gdak/gdak.h>
#include <gdak/dev/types.h>

#include "gdak_log.h"

#define GV_EXPORT __attribute__((visibility("default")))

#define GV_MAX_DEVICES 8
#define GV_ROCE_PORT 4791
#define GV_GID_TBL_LEN 255
#define GV_MAX_QP_WR 32768
#define GV_MAX_SGE 16 /* receive WQEs of the NIC model hold 16 */
#define GV_MAX_INLINE 512
#define GV_MAX_RD_ATOM 16
#define GV_MAX_CQE 4194303

#define gv_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Exported names rdma-core declares only in headers it does not install
 * (driver.h, sysfs.h) - the same signatures. */
enum gv_gid_type_sysfs {
	GV_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	GV_GID_TYPE_SYSFS_ROCE_V2 = 1
};
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index,
		       enum gv_gid_type_sysfs *type);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
void ibv_register_driver(const char *name, void *init_func);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, void *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, void *src);
void ibv_copy_path_rec_from_kern(void *dst, void *src);
void ibv_copy_path_rec_to_kern(void *dst, void *src);

/* ---- gv_device.c / gv_addr.c ------------------------------------------------- */

struct gv_rx;
struct nm_ext_watch;

struct gv_device {
	struct ibv_device ibdev; /* what the program gets (must be first) */
	int index;
	uint64_t guid; /* host order */
	/* process-wide NIC-model side, set up at the first open */
	pthread_mutex_t lock;
	int refs;
	struct gdak_ctx *g;
	struct in_addr addr;	       /* network order */
	int claim_fd;		       /* UDP socket on addr:4791: every packet for the device */
	struct gv_rx *rx;	       /* its receive batch (gv_addr.c) */
	struct nm_ext_watch *rx_watch; /* NIC thread 0 reads it while open */
};

struct gv_context {
	struct verbs_context vctx; /* ibv_context is its last member */
	struct gv_device *dev;
	/* async events: a pipe whose read end is ibv_context.async_fd */
	int async_wr;
	pthread_mutex_t ev_lock;
	struct gv_async *ev_head, *ev_tail;
};

static inline struct gv_context *gv_ctx(struct ibv_context *c)
{
	return gv_container_of(c, struct gv_context, vctx.context);
}

/* The index of one of this library's devices, -1 for any other pointer. */
int gv_device_index(const struct ibv_device *dev);
int gv_dev_get(struct gv_device *d); /* the NIC-model context, address, directory */
void gv_dev_put(struct gv_device *d);
/* the IPv4-mapped GID of the device */
void gv_dev_gid(const struct gv_device *d, union ibv_gid *gid);
int gv_addr_claim(struct gv_device *d);
/* QPs of this process, by QPN: where the 4791 reader hands their packets
 * (port: the NIC-model QP's own UDP port, whose inbox it is). */
int gv_dir_add(struct gv_device *d, uint32_t qpn, uint16_t port);
void gv_dir_del(uint32_t qpn);

/* ---- gv_verbs.c ---------------------------------------------------------------------- */

struct gv_async {
	struct gv_async *next;
	struct ibv_async_event ev;
};
/* Queue an async event on the context (any thread). */
void gv_async_post(struct gv_context *c, enum ibv_event_type type, void *obj);

struct gv_wq;

struct nm_cq;

struct gv_cq {
	struct ibv_cq_ex cqx; /* ibv_cq is its prefix */
	pthread_mutex_t lock; /* pollers; attach/detach */
	/* the ring: ncqe 64-byte CQEs, the record pair [0] consumer counter,
	 * [1] arm word (be32); ring.cons_idx is the poller's (under lock) */
	struct nm_cq *ncq;
	void *buf;
	uint32_t *dbrec;
	struct gdak_dev_cq ring;
	struct gv_wq **wq; /* work queues attached (CQE's QPN -> wq) */
	unsigned nwq, cap, next;
	_Atomic int armed; /* 0, 1 (all), 2 (solicited only) */
	uint32_t cqe;
	/* ibv_cq_ex polling: the entry start_poll/next_poll stand on */
	struct ibv_wc cur;
	_Atomic uint32_t empty_polls; /* in a row */
};

static inline struct gv_cq *gv_cq_of(struct ibv_cq *cq)
{
	return gv_container_of(cq, struct gv_cq, cqx);
}

int gv_cq_attach(struct gv_cq *cq, struct gv_wq *wq);
/* GDAK_IBV_INLINE (default off): post_send and empty polls run the engine
 * in the caller's thread when they can (gv_post.c) */
bool gv_inline(void);
/* An empty poll's engine run (gv_post.c); 1 when any ran. */
int gv_cq_progress(struct gv_cq *cq);
void gv_cq_detach(struct gv_cq *cq, struct gv_wq *wq);

/* An AH and the mlx5 address vector mlx5dv_init_obj(AH) returns. */
struct gv_ah {
	struct ibv_ah ah; /* must be first */
	struct mlx5_wqe_av av;
};

struct gv_srq {
	struct ibv_srq srq;
	struct gv_srq *next; /* every SRQ of the process, by number (gv_srq_hold) */
	uint32_t srqn;	     /* 24-bit, what mlx5dv_init_obj(SRQ) reports */
	pthread_mutex_t lock;
	uint32_t max_wr, max_sge, limit;
	/* WRs posted, not yet handed to a QP: a ring */
	struct ibv_recv_wr *wr; /* copies (sg_list points into sge) */
	struct ibv_sge *sge;
	uint32_t head, count;
	struct gv_qp **qps; /* attached QPs (destroy_srq refuses while any) */
	unsigned nqps, qcap;
	unsigned devx_users; /* DEVX QPs / DCTs naming it (under lock; destroy refuses) */
};

static inline struct gv_srq *gv_srq_of(struct ibv_srq *s)
{
	return gv_container_of(s, struct gv_srq, srq);
}

/* The SRQ of this number on a context of device d, counted in its
 * devx_users (ibv_destroy_srq refuses it until released), or NULL. */
struct gv_srq *gv_srq_hold(const struct gv_device *d, uint32_t srqn);

/* ---- gv_qp.c / gv_post.c --------------------------------------------------------------- */

enum gv_wq_kind {
	GV_WQ_SEND = 0,
	GV_WQ_RECV = 1
};

/* One work queue of a QP as its CQ sees it. */
struct gv_wq {
	struct gv_qp *qp;
	enum gv_wq_kind kind;
};

struct gv_slot {
	uint64_t wr_id;
	uint8_t bbs;	/* WQEBBs of the WQE starting here */
	uint8_t opcode; /* enum ibv_wc_opcode */
	uint8_t signaled;
	uint8_t pad;
	uint32_t len; /* bytes, for byte_len of READ / atomics */
};

struct gv_qp {
	struct ibv_qp_ex qpx; /* ibv_qp is its prefix (must be first) */
	struct gv_context *ctx;
	struct gdak_qp *g;
	struct gdak_dev_qp *d;
	/* the rings: one buffer, RQ (rq_cnt * rq_stride) at 0, SQ after it
	 * (sq_wqebb_cnt * 64), and the doorbell records [0] receive, [1] send */
	void *qbuf;
	size_t qbuf_len, sq_off;
	uint32_t rq_stride;
	uint32_t *dbrec;
	bool ex;	 /* created with send_ops_flags: ibv_qp_to_qp_ex answers */
	uint8_t dc_type; /* 0 (RC), GDAK_QPT_DCI, GDAK_QPT_DCT (mlx5dv_create_qp) */
	bool sig_all;
	enum ibv_qp_state state; /* as last modified (the NIC may have moved it to ERR) */
	struct ibv_qp_attr attr; /* what modify_qp set, for query_qp */
	struct ibv_qp_cap cap;
	bool connected;
	uint16_t peer_port; /* the peer QP's UDP port (resolved at RTR) */

	/* send queue: poster under sq_lock; sq_done advanced by the send CQ's poller */
	pthread_spinlock_t sq_lock;
	uint64_t sq_pi;
	_Atomic uint64_t sq_done;
	uint32_t sq_wrs;	      /* WRs posted (poster) */
	_Atomic uint32_t sq_wrs_done; /* WRs retired (poller) */
	struct gv_slot *slots;	      /* per WQEBB slot */
	/* ibv_wr_* batch */
	uint64_t wr_start_pi;
	uint32_t wr_start_wrs;
	bool wr_other; /* the batch has a WR the direct path does not take */
	int wr_err;
	uint64_t wr_last; /* start index of the last WQE built */
	struct {
		int opcode; /* enum ibv_wr_opcode, -1: none */
		uint64_t raddr, cmp_add, swap;
		uint32_t rkey, imm;
	} wr_pend;

	/* receive queue */
	pthread_spinlock_t rq_lock;
	uint64_t rq_pi;
	_Atomic uint64_t rq_done;
	uint64_t *rwrid;
	uint32_t rq_cnt;
	struct gv_srq *srq;

	uint64_t sq_pi_seen; /* sq_pi as last rung (the poller's bound) */
	int err_event;	     /* the QP's error was reported as an async event */

	struct gv_wq swq, rwq;
	struct gv_cq *scq, *rcq;
};

static inline struct gv_qp *gv_qp_of(struct ibv_qp *q)
{
	return gv_container_of(q, struct gv_qp, qpx.qp_base);
}

int gv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int gv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int gv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int gv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
/* Poll one completion of the CQ (caller holds cq->lock): 1 (*wc filled), 0. */
int gv_cq_poll1(struct gv_cq *cq, struct ibv_wc *wc);
/* A QP went to RESET: its CQEs still waiting on cq are dropped (QPN
 * 0xffffff, which no QP has), as libmlx5's __mlx5_cq_clean does. */
void gv_cq_clean(struct gv_cq *cq, uint32_t qpn);
/* 1 when a CQE is waiting on the CQ's ring (no consumption). */
int gv_cq_peek(struct gv_cq *cq);
void gv_qp_init_wr_ops(struct gv_qp *q);
/* Let the QP's responder take receive WRs from its SRQ (nm_qp.rq_empty). */
void gv_srq_hook(struct gv_qp *q);
struct ibv_qp *gv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a);

/* ---- gv_verbs.c: the verbs_context ops table; gv_device.c: queries ------------------------ */

void gv_ops_init(struct gv_context *c);
int gv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
int gv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *pa, size_t len);
int gv_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *v);

#endif /* GV_LOC_H */
