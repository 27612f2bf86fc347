/* SPDX-License-Identifier: MIT */
/*
 * gv_private.h - what gdak's libibverbs.so.1 exports to gdak's own
 * libmlx5.so.1 (and nothing else) under the private version node
 * GDAK_PRIVATE_1, as rdma-core's libibverbs exports IBVERBS_PRIVATE_* to
 * its providers.  Not an API: both libraries are built from one tree and
 * installed side by side (lib/gdak/); the node's name changes when an
 * entry's meaning does.  README.md here lists the entries.
 *
 * Every call takes objects of this libibverbs and answers 0 or a positive
 * errno (EINVAL: not one of ours); pointers returned stay valid for the
 * object's life.  Any thread.
 */
#ifndef GV_PRIVATE_H
#define GV_PRIVATE_H

#include <stdint.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

struct gdak_ctx;
struct nm_cq;

/* A verbs QP's rings as libmlx5 lays them out. */
struct gdak_ibv_qp_rings {
	uint32_t qpn;
	uint32_t *dbrec; /* be32 [0] receive, [1] send */
	void *sq;	 /* sq_cnt * 64 */
	uint32_t sq_cnt; /* WQEBBs, power of two */
	void *rq;	 /* rq_cnt * rq_stride, at the buffer's start; NULL: none */
	uint32_t rq_cnt, rq_stride;
	void *uar;	     /* 4 KiB register page; BlueFlame halves at +0x800 / +0x900 */
	uint32_t bf_size;    /* bytes of one half */
	uint32_t max_inline; /* what create granted */
};

/* A verbs CQ's ring. */
struct gdak_ibv_cq_ring {
	uint32_t cqn;
	void *buf; /* cqe_cnt * cqe_size */
	uint32_t cqe_cnt, cqe_size;
	uint32_t *dbrec;   /* be32 [0] consumer counter, [1] arm word */
	void *uar;	   /* the page whose +0x20 word arms it (writes are ignored:
			  * completion channels are served from the ring itself) */
	struct nm_cq *ncq; /* the NIC-model CQ (nic_model/nm_ext.h) */
};

/* 1 when dev is one of this library's devices (all are). */
int gdak_ibv_is_device(struct ibv_device *dev);
int gdak_ibv_qp_rings(struct ibv_qp *qp, struct gdak_ibv_qp_rings *out);
/* The QP's direct-path counts (docs/VERBS.md "Threads"): WQEs its requester
 * did in a peer process's memory, requests a peer did in ours.  0 or EINVAL. */
int gdak_ibv_qp_direct(struct ibv_qp *qp, uint64_t *out, uint64_t *in);
/* gdak_nic_set_trace: trace into path from now on (NULL: close the trace,
 * complete on disk); 0 or an errno value. */
int gdak_ibv_set_trace(const char *path);
int gdak_ibv_cq_ring(struct ibv_cq *cq, struct gdak_ibv_cq_ring *out);
/* The 24-bit protection domain number. */
int gdak_ibv_pd_num(struct ibv_pd *pd, uint32_t *pdn);
/* The AH's mlx5 address vector (owned by the AH). */
int gdak_ibv_ah_av(struct ibv_ah *ah, struct mlx5_wqe_av **av);
/* The NIC-model context behind a verbs context (nic_model/nm_ext.h takes it). */
int gdak_ibv_nic_ctx(struct ibv_context *ctx, struct gdak_ctx **out);

/* A Dynamically Connected QP (mlx5dv_create_qp's dc_init_attr).  The
 * types are gdak_qp_type's values (gv_qp.c checks). */
enum {
	GDAK_IBV_DCI = 1,
	GDAK_IBV_DCT = 2
};
struct gdak_ibv_dc_attr {
	uint32_t type;	  /* GDAK_IBV_DCI or GDAK_IBV_DCT */
	uint32_t streams; /* DCI: concurrent streams, power of two 1..16 */
	uint64_t key;	  /* DCT: the access key (host order) */
};
/* qp_type IBV_QPT_DRIVER; a DCT needs the SRQ and the receive CQ, a DCI its
 * send CQ (its receive side is ignored, as ConnectX has none).  The QP or
 * NULL with errno, as ibv_create_qp_ex. */
struct ibv_qp *gdak_ibv_create_dc_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a,
				     const struct gdak_ibv_dc_attr *dc);
/* The 24-bit SRQ number (what a DEVX QP or DCT names in srqn). */
int gdak_ibv_srq_num(struct ibv_srq *srq, uint32_t *srqn);

/* The engine in the caller's thread (docs/VERBS.md "Threads"), for tests
 * and tools: post_send calls whose WQEs the caller executed itself, empty
 * polls that ran the engine, and attempts that found it busy (the NIC
 * thread running, or held) and kicked the thread instead; counted since
 * the process began. */
struct gdak_ibv_engine_stats {
	uint64_t post_inline, poll_inline, busy;
};
void gdak_ibv_engine_stats(struct gdak_ibv_engine_stats *st);
/* Test hook: on = 1 takes the engine lock of the NIC thread that reads
 * ctx's device (blocking: the thread stops between its passes), on = 0
 * gives it back, from the same thread.  While held nothing executes: posts
 * and polls fall back to kicking the thread, which runs once it is given
 * back.  0, or EINVAL (not one of gdak's contexts). */
int gdak_ibv_engine_hold(struct ibv_context *ctx, int on);
/* Test hook: on = 1 parks that NIC thread (it runs nothing until on = 0),
 * so only the program's own post_send / poll_cq calls drive the engine:
 * with GDAK_IBV_INLINE=0 nothing completes then.  0, EINVAL, EALREADY. */
int gdak_ibv_engine_park(struct ibv_context *ctx, int on);

/* One info line "gdak I func: why" when GDAK_LOG is info or debug (the
 * level the configuration table read), for gdak's libmlx5 and libefa, which
 * read no environment themselves (ibv_note.c). */
void gdak_ibv_note(const char *func, const char *why);

#endif /* GV_PRIVATE_H */
