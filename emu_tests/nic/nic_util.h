/* SPDX-License-Identifier: MIT */
/*
 * nic_util.h - a tiny "device side" for the NIC-model tests, written only
 * against the public headers (gdak.h, mlx5.h, dev/types.h): it builds mlx5
 * WQEs with the encode helpers, rings the doorbell the way each handler
 * does, and polls CQEs.  Host threads play the device.
 */
#ifndef GDAK_NIC_UTIL_H
#define GDAK_NIC_UTIL_H

#include <stdint.h>

#include <gdak/dev/types.h>
#include <gdak/gdak.h>
#include <gdak/mlx5.h>
#include <gdak/nic.h>

struct nu_qp {
	struct gdak_qp *qp;
	struct gdak_dev_qp *d;
	uint32_t qpn;
	uint64_t pi;		/* next WQEBB */
	uint64_t last;		/* first WQEBB of the last WQE posted */
	uint64_t scq_ci, rcq_ci, rq_pi;
};

/* Skip the test (exit 77, closing ctx) where the NIC model has no CUDA
 * memory engine, i.e. a 64-byte GPU allocation is refused with -ENOTSUP;
 * any other failure fails the test. */
void nu_need_gpu_mem(struct gdak_ctx *ctx);

/* Two QPs on ctx, connected to each other (attr may be NULL). */
int nu_pair(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr, struct nu_qp *a, struct nu_qp *b);
void nu_qp_from(struct nu_qp *q, struct gdak_qp *qp);
/* A DCI on ctx (64 WQEBBs, streams concurrent streams, 0 for the default),
 * connected (RTS checked) and exported into *d. */
struct gdak_qp *nu_dci(struct gdak_ctx *ctx, uint32_t streams, struct gdak_dev_qp **d);
void nu_destroy(struct nu_qp *q);

enum { NU_SIG = 1, NU_FENCE = 2, NU_INLINE = 4 };

/* Copy a WQE of ds DS into the ring at pi (wrapping), fixing nothing. */
void nu_put_raw(struct nu_qp *q, const void *wqe, unsigned ds);
/* Build and post one WQE; returns its WQE index. */
uint16_t nu_post_rdma(struct nu_qp *q, uint8_t opcode, void *laddr, uint32_t len, uint32_t lkey,
		      uint64_t raddr, uint32_t rkey, uint32_t imm_be, unsigned flags);
uint16_t nu_post_send(struct nu_qp *q, uint8_t opcode, void *laddr, uint32_t len, uint32_t lkey,
		      uint32_t imm_be, unsigned flags);
uint16_t nu_post_atomic(struct nu_qp *q, uint8_t opcode, void *laddr, uint32_t lkey,
			uint64_t raddr, uint32_t rkey, uint64_t swap_add, uint64_t compare,
			unsigned flags);
/* 8-byte masked atomic (ATOMIC_MASKED_CS / _FA): ctrl + raddr + the 32-byte
 * masked segment (swap_add, compare, swap_add_mask, compare_mask) + data:
 * 5 DS, two WQEBBs.  For masked FA, swap_add_mask holds the field boundaries. */
uint16_t nu_post_masked(struct nu_qp *q, uint8_t opcode, void *laddr, uint32_t lkey,
			uint64_t raddr, uint32_t rkey, uint64_t swap_add, uint64_t compare,
			uint64_t swap_add_mask, uint64_t compare_mask, unsigned flags);
uint16_t nu_post_nop(struct nu_qp *q, unsigned flags);
/* Doorbell record + register per the QP's handler. */
void nu_ring(struct nu_qp *q);
/* Post a receive WQE (one segment) and publish it. */
void nu_post_recv(struct nu_qp *q, void *addr, uint32_t len, uint32_t lkey);

/* Ring, then wait (bounded) for the send CQE of the WQE at idx and check
 * that it is a successful requester CQE (fails the test otherwise). */
void nu_ring_expect_ok(struct nu_qp *q, uint16_t idx, unsigned timeout_ms);
/* Wait (bounded) for the next CQE of the send (rcq=0) or receive CQ; 0,
 * or -ETIMEDOUT.  Consumes it and updates the CQ doorbell record. */
int nu_poll(struct nu_qp *q, int rcq, struct gdak_mlx5_cqe_fields *f, unsigned timeout_ms);
/* Peek without consuming: 1 if a CQE is ready. */
int nu_cqe_ready(struct nu_qp *q, int rcq);
/* Wait until the QP's state is s (bounded): 0 or -ETIMEDOUT. */
int nu_wait_state(struct nu_qp *q, enum gdak_qp_state s, unsigned timeout_ms);

#endif
