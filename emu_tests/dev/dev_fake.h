/* SPDX-License-Identifier: MIT */
/*
 * dev_fake.h - a device descriptor in local memory, for the device API's
 * unit tests: an SQ ring, doorbell record, doorbell page, proxy word and
 * CQs, plus a writer of CQEs as the NIC writes them.  No NIC behind it.
 */
#ifndef GDAK_DEV_FAKE_H
#define GDAK_DEV_FAKE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/mlx5.h>
#include <gdak/dev/dev.h>

#include "dev_atomic.h"

struct dev_fake {
	struct gdak_dev_qp qp;
	uint32_t dbrec[2];		/* [0] receive, [1] send */
	uint32_t scq_dbrec[2];
	uint32_t rcq_dbrec[2];
	uint64_t db_page[32];		/* the "UAR" at +0x800: 256 bytes */
	uint64_t proxy_pi;
	uint64_t scratch;		/* put+signal's discarded atomic result */
};

__attribute__((unused)) static void fake_cq_init(struct gdak_dev_cq *cq, uint32_t log_ncqe, uint32_t cqn, uint32_t *dbrec)
{
	cq->version = GDAK_DEV_ABI_VERSION;
	cq->cqn = cqn;
	cq->ncqe = 1u << log_ncqe;
	cq->log_ncqe = log_ncqe;
	cq->cqes = aligned_alloc(64, (size_t)64 << log_ncqe);
	memset(cq->cqes, 0, (size_t)64 << log_ncqe);
	for (uint32_t i = 0; i < cq->ncqe; i++)
		((uint8_t *)cq->cqes)[i * 64 + 63] = GDAK_MLX5_CQE_INVALID_OP_OWN;
	cq->dbrec = dbrec;
}

__attribute__((unused)) static struct dev_fake *fake_new(uint32_t log_sq, uint32_t log_cq, uint32_t handler,
				 uint32_t sharing)
{
	struct dev_fake *f = (struct dev_fake *)aligned_alloc(64, (sizeof(*f) + 63) & ~(size_t)63);
	struct gdak_dev_qp *qp = &f->qp;
	memset(f, 0, sizeof(*f));
	qp->version = GDAK_DEV_ABI_VERSION;
	qp->qpn = 0x1234a5;
	qp->qpn_ds_be = gdak_htobe32(gdak_mlx5_ctrl_w1(qp->qpn, 0));
	qp->sq_wqebb_cnt = 1u << log_sq;
	qp->sq_log_cnt = log_sq;
	qp->handler = handler;
	qp->sharing = sharing;
	qp->max_inline = 220;
	qp->sq_buf = aligned_alloc(64, (size_t)64 << log_sq);
	memset(qp->sq_buf, 0, (size_t)64 << log_sq);
	qp->dbrec = f->dbrec;
	qp->db_reg = f->db_page;
	qp->proxy_pi = &f->proxy_pi;
	fake_cq_init(&qp->scq, log_cq, 0x77, f->scq_dbrec);
	fake_cq_init(&qp->rcq, log_cq, 0x78, f->rcq_dbrec);
	qp->scratch_addr = (uint64_t)(uintptr_t)&f->scratch;
	qp->scratch_lkey = 0x5c;
	return f;
}

__attribute__((unused)) static void fake_add_rq(struct dev_fake *f, uint32_t log_cnt, uint32_t log_stride)
{
	f->qp.rq_wqe_cnt = 1u << log_cnt;
	f->qp.rq_log_stride = log_stride;
	f->qp.rq_buf = aligned_alloc(64, (size_t)1 << (log_cnt + log_stride));
	memset(f->qp.rq_buf, 0, (size_t)1 << (log_cnt + log_stride));
}

__attribute__((unused)) static void fake_free(struct dev_fake *f)
{
	free(f->qp.sq_buf);
	free(f->qp.rq_buf);
	free(f->qp.scq.cqes);
	free(f->qp.rcq.cqes);
	free(f);
}

/* Write CQE number n as the NIC does: body first, op_own last (release). */
__attribute__((unused)) static void fake_cqe(struct gdak_dev_cq *cq, uint64_t n, uint8_t opcode, uint16_t wqe_counter,
		     uint32_t qpn, uint8_t syndrome, uint8_t vendor, uint8_t wqe_opcode,
		     uint32_t byte_cnt, uint32_t imm_host)
{
	uint8_t *c = (uint8_t *)cq->cqes + (n & (cq->ncqe - 1)) * 64;
	struct mlx5_cqe64 *q = (struct mlx5_cqe64 *)(void *)c;
	struct gdak_mlx5_err_cqe *e = (struct gdak_mlx5_err_cqe *)(void *)c;
	memset(c, 0, 63);
	if (opcode == MLX5_CQE_REQ_ERR || opcode == MLX5_CQE_RESP_ERR) {
		e->syndrome = syndrome;
		e->vendor_err_synd = vendor;
		e->s_wqe_opcode_qpn = gdak_htobe32((uint32_t)wqe_opcode << 24 | qpn);
	} else {
		q->sop_drop_qpn = gdak_htobe32(qpn);
		q->byte_cnt = gdak_htobe32(byte_cnt);
		q->imm_inval_pkey = gdak_htobe32(imm_host);
	}
	q->wqe_counter = gdak_htobe16(wqe_counter);
	__atomic_store_n(&c[63], gdak_mlx5_cqe_op_own(opcode, n, cq->ncqe), __ATOMIC_RELEASE);
}


/* ---- a loopback NIC thread: executes WRITE (inline or SGE), READ and
 * 8-byte atomics on local memory, CQEs for signalled WQEs -------------- */
#include <pthread.h>
#include <sched.h>

struct fake_nic {
	struct dev_fake *f;
	pthread_t tid;
	int stop;
	int paused;		/* consume nothing while set */
	uint64_t consumed, bad;
	/* 1-based WQE number that gets an error CQE (0: none); set
	 * fail_syndrome first, then fail_at with a release store */
	uint64_t fail_at;
	uint8_t fail_syndrome;
};

static void *fake_nic_main(void *arg)
{
	struct fake_nic *n = (struct fake_nic *)arg;
	struct gdak_dev_qp *qp = &n->f->qp;
	uint64_t ci = 0, cqe_n = 0;
	int failed = 0;
	while (!__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE)) {
		uint16_t pi = (uint16_t)gdak_be32toh(
			__atomic_load_n(&n->f->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE));
		if (pi == (uint16_t)ci || __atomic_load_n(&n->paused, __ATOMIC_ACQUIRE)) {
			sched_yield();
			continue;
		}
		while ((uint16_t)ci != pi) {
			struct gdak_mlx5_ctrl c;
			uint64_t raddr = 0, la, sa, cmp, old;
			uint32_t rkey, len, lkey, bbs, b;
			int fail;
			gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)gdak_dev_wqe_ptr(qp, ci),
					      &c);
			if (c.wqe_index != (uint16_t)ci || !c.ds) {
				n->bad++;
				c.ds = 1;
			}
			bbs = gdak_mlx5_wqebbs(c.ds);
			{
				uint64_t fa = __atomic_load_n(&n->fail_at, __ATOMIC_ACQUIRE);
				fail = fa && ++n->consumed == fa;
				if (!fa)
					n->consumed++;
			}
			failed |= fail;
			if (c.opcode != MLX5_OPCODE_NOP)
				gdak_mlx5_raddr_decode((const struct mlx5_wqe_raddr_seg *)
							       gdak_dev_wqe_ds(qp, ci, 1), &raddr, &rkey);
			if (failed) {
				/* executes nothing */
			} else if (c.opcode == MLX5_OPCODE_RDMA_WRITE) {
				const uint8_t *seg = (const uint8_t *)gdak_dev_wqe_ds(qp, ci, 2);
				memcpy(&b, seg, 4);
				b = gdak_be32toh(b);
				if (b & MLX5_INLINE_SEG) {
					/* byte by byte through the DS, which may wrap */
					for (uint32_t i = 0; i < (b & ~MLX5_INLINE_SEG); i++)
						((uint8_t *)(uintptr_t)raddr)[i] = ((const uint8_t *)
							gdak_dev_wqe_ds(qp, ci, 2 + (4 + i) / 16))[(4 + i) % 16];
				} else {
					gdak_mlx5_data_decode((const struct mlx5_wqe_data_seg *)(const void *)seg, &la,
							      &len, &lkey);
					memcpy((void *)(uintptr_t)raddr, (void *)(uintptr_t)la, len);
				}
			} else if (c.opcode == MLX5_OPCODE_RDMA_READ) {
				gdak_mlx5_data_decode((const struct mlx5_wqe_data_seg *)
							      gdak_dev_wqe_ds(qp, ci, 2), &la, &len, &lkey);
				memcpy((void *)(uintptr_t)la, (void *)(uintptr_t)raddr, len);
			} else if (c.opcode == MLX5_OPCODE_ATOMIC_FA ||
				   c.opcode == MLX5_OPCODE_ATOMIC_CS) {
				gdak_mlx5_atomic_decode((const struct mlx5_wqe_atomic_seg *)
								gdak_dev_wqe_ds(qp, ci, 2), &sa, &cmp);
				gdak_mlx5_data_decode((const struct mlx5_wqe_data_seg *)
							      gdak_dev_wqe_ds(qp, ci, 3), &la, &len, &lkey);
				old = fake_atomic8(c.opcode, raddr, sa, cmp);
				__atomic_store_n((uint64_t *)(uintptr_t)la, gdak_htobe64(old),
						 __ATOMIC_RELEASE);
			} else if (c.opcode != MLX5_OPCODE_NOP) {
				n->bad++;
			}
			if ((c.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) || failed) {
				while (cqe_n - gdak_be32toh(__atomic_load_n(&n->f->scq_dbrec[0],
									    __ATOMIC_ACQUIRE)) >=
					       qp->scq.ncqe &&
				       !__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE))
					sched_yield();
				if (failed)
					fake_cqe(&qp->scq, cqe_n++, MLX5_CQE_REQ_ERR, (uint16_t)ci,
						 qp->qpn, fail ? n->fail_syndrome
							       : MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
						 0, c.opcode, 0, 0);
				else
					fake_cqe(&qp->scq, cqe_n++, MLX5_CQE_REQ, (uint16_t)ci, qp->qpn,
						 0, 0, 0, 0, 0);
			}
			ci += bbs;
		}
	}
	return NULL;
}

__attribute__((unused)) static void fake_nic_start(struct fake_nic *n, struct dev_fake *f)
{
	memset(n, 0, sizeof(*n));
	n->f = f;
	if (pthread_create(&n->tid, NULL, fake_nic_main, n) != 0)
		abort();
}

__attribute__((unused)) static void fake_nic_stop(struct fake_nic *n)
{
	__atomic_store_n(&n->stop, 1, __ATOMIC_RELEASE);
	pthread_join(n->tid, NULL);
}

#endif
