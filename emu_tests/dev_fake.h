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
	qp->qpn_ds_be = gdak_htobe32(qp->qpn << 8);
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
	struct mlx5_cqe64 *q = (struct mlx5_cqe64 *)c;
	struct gdak_mlx5_err_cqe *e = (struct gdak_mlx5_err_cqe *)c;
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

#endif
