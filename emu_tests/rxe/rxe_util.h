/* SPDX-License-Identifier: MIT */
/*
 * rxe_util.h - what the guest-side rxe tests share: host threads playing
 * the device on one QP (post a WQE, wait for its CQE, post and poll
 * receives), data patterns, and the "is there a verbs device" probe.
 */
#ifndef RXE_UTIL_H
#define RXE_UTIL_H

#include <errno.h>

#include <infiniband/verbs.h>

#include <gdak/gdak.h>
#include <gdak/dev/dev.h>

#include "gdak_test.h"

#define RX_TIMEOUT_NS 30000000000ull /* hang guard only */

struct rx {
	struct gdak_ctx *ctx;
	struct gdak_qp *qp;
	struct gdak_dev_qp *q;
};

static inline int rx_have_device(const char *name)
{
	int n = 0, found = 0;
	struct ibv_device **l = ibv_get_device_list(&n);

	for (int i = 0; l && i < n; i++)
		found |= !strcmp(ibv_get_device_name(l[i]), name);
	if (l)
		ibv_free_device_list(l);
	return found;
}

static inline void rx_pattern(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8) + (i >> 16));
}

/* 0 when p holds rx_pattern(seed) (else the first differing offset + 1). */
static inline size_t rx_pattern_diff(const uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 8) + (i >> 16)))
			return i + 1;
	return 0;
}

static inline int64_t rx_reserve(struct rx *x, uint32_t nbb)
{
	if (gdak_dev_sq_free_bbs(x->q) < nbb)
		return -1;
	return (int64_t)gdak_dev_sq_reserve(x->q, nbb);
}

static inline int rx_submit_wait(struct rx *x, int64_t first, int64_t last, uint32_t last_nbb,
				 struct gdak_dev_cqe *err)
{
	(void)first;
	gdak_dev_sq_submit(x->q, (uint64_t)last, (uint64_t)last + last_nbb);
	return gdak_dev_sq_wait_timeout(x->q, (uint64_t)last + last_nbb, RX_TIMEOUT_NS, err);
}

/* One signalled RDMA op (WRITE / READ / SEND / SEND_IMM / WRITE_IMM). */
static inline int rx_op(struct rx *x, uint8_t opcode, const struct gdak_dev_sge *s, uint32_t n,
			uint64_t raddr, uint32_t rkey, uint32_t imm, struct gdak_dev_cqe *err)
{
	int raddr_op = opcode != MLX5_OPCODE_SEND && opcode != MLX5_OPCODE_SEND_IMM;
	uint32_t nbb = gdak_dev_wqe_bbs_sge(raddr_op, n);
	int64_t i = rx_reserve(x, nbb);
	uint32_t f = GDAK_DEV_WQE_SIGNAL;

	if (i < 0)
		return -ENOSPC;
	switch (opcode) {
	case MLX5_OPCODE_RDMA_WRITE:
		gdak_dev_wqe_write(x->q, (uint64_t)i, f, raddr, rkey, s, n);
		break;
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		gdak_dev_wqe_write_imm(x->q, (uint64_t)i, f, raddr, rkey, s, n, imm);
		break;
	case MLX5_OPCODE_RDMA_READ:
		gdak_dev_wqe_read(x->q, (uint64_t)i, f, raddr, rkey, s, n);
		break;
	case MLX5_OPCODE_SEND:
		gdak_dev_wqe_send(x->q, (uint64_t)i, f, s, n);
		break;
	default:
		gdak_dev_wqe_send_imm(x->q, (uint64_t)i, f, s, n, imm);
		break;
	}
	return rx_submit_wait(x, i, i, nbb, err);
}

/* Fetch-add of a, or compare-swap: b compared, a swapped in. */
static inline int rx_atomic(struct rx *x, int cas, uint64_t raddr, uint32_t rkey, uint64_t a,
			    uint64_t b, uint64_t laddr, uint32_t lkey, struct gdak_dev_cqe *err)
{
	uint32_t nbb = gdak_dev_wqe_bbs_sge(1, 2);
	int64_t i = rx_reserve(x, nbb);

	if (i < 0)
		return -ENOSPC;
	if (cas)
		gdak_dev_wqe_cas(x->q, (uint64_t)i, GDAK_DEV_WQE_SIGNAL, raddr, rkey, b, a, laddr,
				 lkey);
	else
		gdak_dev_wqe_fetch_add(x->q, (uint64_t)i, GDAK_DEV_WQE_SIGNAL, raddr, rkey, a, laddr,
				       lkey);
	return rx_submit_wait(x, i, i, nbb, err);
}

/* Receive WQE (PRM "Receive WQE"): n data segments, the unused ones ending
 * the list with MLX5_INVALID_LKEY; then the receive doorbell record. */
static inline void rx_rq_post(struct rx *x, const struct gdak_dev_sge *s, uint32_t n)
{
	struct gdak_dev_qp *q = x->q;
	uint32_t nseg = (1u << q->rq_log_stride) / 16;
	struct mlx5_wqe_data_seg *seg = (struct mlx5_wqe_data_seg *)(void *)
		((char *)q->rq_buf + ((size_t)(q->rq_pi & (q->rq_wqe_cnt - 1)) << q->rq_log_stride));

	for (uint32_t i = 0; i < nseg; i++) {
		if (i < n)
			gdak_mlx5_data_encode(&seg[i], s[i].addr, s[i].len, s[i].lkey);
		else
			gdak_mlx5_data_encode(&seg[i], 0, 0, MLX5_INVALID_LKEY);
	}
	q->rq_pi++;
	gdak_dev_barrier_wqe_to_dbrec();
	gdak_dev_store_release_u32(&q->dbrec[MLX5_RCV_DBR],
				   gdak_htobe32((uint32_t)(q->rq_pi & 0xffff)));
}

/* 1 and *c: the next receive CQE; < 0 on error / timeout. */
static inline int rx_rq_poll(struct rx *x, struct gdak_dev_cqe *c)
{
	uint64_t deadline = gdak_dev_deadline(RX_TIMEOUT_NS);
	uint32_t spins = 0;

	for (;;) {
		int r = gdak_dev_cq_poll_one(&x->q->rcq, x->q->rq_done, c);
		if (r) {
			gdak_dev_cq_update_dbrec(&x->q->rcq);
			if (r > 0)
				x->q->rq_done++;
			return r;
		}
		if (gdak_dev_expired(deadline, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
}

static inline int rx_qp(struct rx *x, uint32_t rq_depth, uint32_t rq_sge)
{
	struct gdak_qp_attr qa = { .sq_depth = 64, .cq_depth = 64, .rq_depth = rq_depth,
				   .rq_max_sge = rq_sge, .handler = GDAK_DEV_DB_DB,
				   .sharing = GDAK_DEV_EXCLUSIVE, .mtu = 1024, .nic_thread = -1 };

	return gdak_qp_create(x->ctx, &qa, &x->qp);
}

#endif /* RXE_UTIL_H */
