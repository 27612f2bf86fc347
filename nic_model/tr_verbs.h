/* SPDX-License-Identifier: MIT */
/*
 * tr_verbs.h - the verbs transport's internals (tr_verbs*.c only).
 *
 * Each emulated QP is backed by a real RC QP opened with libibverbs on a
 * verbs device (rxe, siw, an HCA): mlx5 WQEs become ibv_post_send work
 * requests, receive WQEs ibv_post_recv, and verbs completions mlx5 CQEs.
 *   tr_verbs.c        context, QPs, posting, completions
 *   tr_verbs_mr.c     memory registration (ibv_reg_mr, dma-buf for GPU memory)
 *   tr_verbs_stage.c  bounce buffers for memory the device cannot reach
 *   tr_verbs_map.c    the tables between the two vocabularies, and the
 *                     registration decision (pure functions, unit-tested)
 */
#ifndef TR_VERBS_H
#define TR_VERBS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ev.h>

#include "gdak_ibv.h"

struct nm_ctx;
struct nm_qp;
struct nm_mr;
struct nm_op;

#define TV_MAX_SGE 16		/* data segments per work request we ask for */
#define TV_BOUNCE_DEFAULT (256u << 10) /* bytes per bounce ring (GDAK_VERBS_BOUNCE) */
#define TV_BOUNCE_MIN 64u

/* ---- tr_verbs_map.c ---------------------------------------------------- */

/* MLX5_CQE_SYNDROME_* for a verbs completion status (0 for IBV_WC_SUCCESS);
 * statuses mlx5 has no syndrome for map to the nearest one (see the table). */
uint8_t tv_syndrome_of(enum ibv_wc_status st);

/* The verbs opcode for an mlx5 send opcode: 0 and *out set, or -EOPNOTSUPP
 * for what plain verbs cannot express (masked atomics, WAIT, DUMP, NOP). */
int tv_wr_opcode(uint8_t mlx5_opcode, enum ibv_wr_opcode *out);

/* mlx5 receive CQE opcode (MLX5_CQE_RESP_*) and the request's mlx5 opcode
 * for a successful receive completion. */
void tv_recv_cqe_opcode(const struct ibv_wc *wc, uint8_t *cqe_opcode, uint8_t *req_opcode);

/* IBV_MTU_* for a byte count: gdak_ibv_mtu_enum() (core/internal/gdak_ibv.h). */
uint32_t tv_mtu_bytes(enum ibv_mtu mtu);

/*
 * How a memory region meets the device (docs/RXE.md "GPU memory"):
 *   reg          TV_REG_NONE: no verbs MR; TV_REG_HOST: ibv_reg_mr;
 *                TV_REG_DMABUF: the dma-buf registration that was made
 *   stage_local  local data segments in it go through bounce buffers
 * kind: enum gdak_mem_kind (HOST_MAPPED counts as HOST); access:
 * GDAK_ACCESS_*; stage_all: GDAK_VERBS_STAGE=all (host memory handled as
 * GPU memory without dma-buf); dmabuf: a dma-buf registration of the region
 * succeeded.  0, or -EOPNOTSUPP with *why set: remote access to memory the
 * device cannot reach (staging cannot serve a passive side: nothing tells
 * it when a peer's WRITE has landed or what a READ will fetch).
 */
enum tv_reg { TV_REG_NONE = 0, TV_REG_HOST = 1, TV_REG_DMABUF = 2 };
struct tv_mem_plan {
	enum tv_reg reg;
	bool stage_local;
};
int tv_mem_plan(uint8_t kind, unsigned access, bool stage_all, bool dmabuf,
		struct tv_mem_plan *out, const char **why);

/* GDAK_VERBS_STAGE value: 0 off (unset, "", "0", "off"), 1 "all", -EINVAL else. */
int tv_parse_stage(const char *s);

/* ---- objects ------------------------------------------------------------- */

struct tv_mr {			/* nm_mr.tr_priv */
	struct ibv_mr *vmr;	/* NULL: staged only */
	enum tv_reg reg;
	bool staged;		/* local segments bounce */
	struct tv_mr *next, **pprev; /* the context's list (ctx_fini frees leftovers) */
};

struct tv_ctx {
	struct ibv_context *vctx;
	struct ibv_pd *pd;
	uint8_t port;
	int gid_index;		/* -1: InfiniBand link layer, LID addressing */
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu active_mtu;
	uint32_t max_sge, max_rd_atom;
	bool atomic_host_order;	/* the device returns an atomic's old value in host order */
	bool stage_all;		/* GDAK_VERBS_STAGE=all (test hook) */
	bool no_dmabuf;		/* GDAK_VERBS_DMABUF=0 */
	uint32_t bounce;	/* bytes per bounce ring */
	pthread_mutex_t lock;	/* mrs */
	struct tv_mr *mrs;
	uint32_t id;
};

/* A ring of registered host memory handed out in completion order: ops
 * (and receive WQEs) complete in the order posted (IBA C10-4 / o10-4 for
 * one RC send or receive queue), so freeing is moving tail to the end of
 * the oldest completed allocation. */
struct tv_ring {
	uint8_t *buf;
	struct ibv_mr *mr;
	uint32_t size;
	uint64_t head, tail;	/* byte counters; [tail, head) in use */
};

/* One staged request or receive WQE. */
struct tv_stage {
	uint8_t *buf;		/* bounce bytes (ring or one-off) */
	uint32_t lkey;
	uint32_t len;
	uint64_t ring_end;	/* where the ring's tail moves at completion (0: one-off) */
	uint64_t ring_prev;	/* the ring's head before this take (tv_stage_undo) */
	struct ibv_mr *oneoff;	/* larger than the ring: registered for this one */
	bool used;
	uint8_t nseg;
	struct { uintptr_t addr; uint32_t len; uint8_t kind; } seg[TV_MAX_SGE];
};

struct tv_qp {
	struct nm_qp *qp;
	struct tv_ctx *tc;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *vqp;
	uint32_t psn;
	uint8_t *stage;		/* NM_MAX_INFLIGHT slots of NM_WRAP_BUF: inline payloads */
	struct ibv_mr *stage_mr;
	uint64_t rq_posted;	/* receive WQEs handed to ibv_post_recv */
	/* bounce buffers (tr_verbs_stage.c), set up on first use */
	struct tv_ring sring, rring;
	struct tv_stage *sst;	/* NM_MAX_INFLIGHT, by op slot */
	struct tv_stage *rst;	/* rq_cnt, by receive WQE index */
	bool watching;
	ev_io io;
	ev_timer rq_timer;
};

/* ---- tr_verbs_mr.c ----------------------------------------------------- */

int tv_mr_reg(struct nm_ctx *ctx, struct nm_mr *mr);
void tv_mr_dereg(struct nm_ctx *ctx, struct nm_mr *mr);
/* ctx_fini: deregister what is still registered. */
void tv_mr_fini_all(struct tv_ctx *tc);

/* ---- tr_verbs_stage.c --------------------------------------------------- */

/*
 * Send side.  tv_stage_out: op's local segments resolved (addr/len/kind per
 * segment, need_in: the data comes back - READ, atomics) - take bounce room,
 * gather the source bytes into it for an outbound op, and give the one SGE
 * the work request carries.  0; NM_TX_BUSY-like 1 when the ring is full
 * with earlier ops (try again later); or a syndrome (> 1, rule set).
 * tv_stage_undo: the post failed, give the room back.  tv_stage_in: the
 * op's completion arrived: scatter the returned bytes (swap: the atomic's
 * old value to big-endian first) and free the room; 0 or a syndrome.
 */
/* The ring allocator (pure, unit-tested): len contiguous bytes at *off,
 * *end for tv_ring_put; 1 while earlier allocations leave no room, -E2BIG
 * when len exceeds the ring.  tv_ring_put(end): the allocation ending at
 * end and every earlier one are free again. */
int tv_ring_take(struct tv_ring *r, uint32_t len, uint64_t *off, uint64_t *end);
void tv_ring_put(struct tv_ring *r, uint64_t end);
int tv_stage_out(struct tv_qp *tq, unsigned slot, struct tv_stage *plan, bool need_in,
		 struct ibv_sge *sge, const char **rule);
void tv_stage_undo(struct tv_qp *tq, unsigned slot);
int tv_stage_in(struct tv_qp *tq, unsigned slot, bool copy, bool swap);
/* Receive side, by receive WQE index: room for a staged receive WQE (0, 1
 * when full, or -ENOMEM), and its data scattered at completion. */
int tv_stage_recv(struct tv_qp *tq, uint64_t idx, struct tv_stage *plan, struct ibv_sge *sge);
int tv_stage_recv_done(struct tv_qp *tq, uint64_t idx, uint32_t bytes);
/* QP reset (reconnect) / destroy: forget every staged allocation. */
void tv_stage_reset(struct tv_qp *tq);
void tv_stage_fini(struct tv_qp *tq);

#endif /* TR_VERBS_H */
