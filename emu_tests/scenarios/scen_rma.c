/* SPDX-License-Identifier: MIT */
/*
 * scen_rma.c - one-sided scenarios: RDMA WRITE (gather and inline, batched
 * under one doorbell), RDMA READ, RDMA WRITE with immediate, and put+signal
 * (writes, then an atomic add on a signal word the target watches).
 */
#include <errno.h>
#include <string.h>

#include "gdak_test.h"
#include "scenarios.h"

#define FLAG_SIG GDAK_DEV_WQE_SIGNAL

static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

/* ---- write ------------------------------------------------------------------- */

struct write_job {
	int rc_single, rc_batch;
	uint32_t bbs_ok;
	struct gdak_dev_cqe err;
};

/* Region k of the batch: 512 bytes at 4096 + 1024 k in both buffers. */
#define BATCH_OFF(k) (4096u + 1024u * (k))

static void write_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct write_job *j = arg;
	struct gdak_dev_sge sge = {addr_of(p->buf[0]), 2048, gdak_mr_lkey(p->mr[0])};
	uint32_t rkey = gdak_mr_rkey(p->mr[1]), nbb = gdak_dev_wqe_bbs_sge(1, 1);
	int64_t idx;

	/* one signalled write */
	idx = scen_reserve(q, nbb);
	if (idx < 0)
		return;
	j->bbs_ok = gdak_dev_wqe_write(q, (uint64_t)idx, FLAG_SIG, addr_of(p->buf[1]) + 128, rkey,
				       &sge, 1) == nbb;
	j->rc_single = scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err);
	if (j->rc_single)
		return;

	/* three unsignalled writes and a signalled one under one doorbell: the
	 * last CQE retires all four (RC completes in order, IBA 10.8.3.1) */
	for (uint32_t k = 0; k < 4; k++) {
		struct gdak_dev_sge s = {addr_of(p->buf[0]) + BATCH_OFF(k), 512, sge.lkey};
		idx = scen_reserve(q, nbb);
		if (idx < 0)
			return;
		gdak_dev_wqe_write(q, (uint64_t)idx, k == 3 ? FLAG_SIG : 0,
				   addr_of(p->buf[1]) + BATCH_OFF(k), rkey, &s, 1);
		if (k < 3 && !scen_batch_ok(q))
			gdak_dev_sq_submit(q, (uint64_t)idx, (uint64_t)idx + nbb);
	}
	j->rc_batch = scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err);
}

int scen_write(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct write_job j = { .rc_single = -1, .rc_batch = -1 };
	static const uint8_t zero[128];

	if (scen_pair_open(cfg, &p, 0))
		return 0;
	gdak_test_fill(p.buf[0], SCEN_BUF_LEN, 1);
	scen_on_device(&p, write_dev, &j);
	CHECK(j.bbs_ok);
	CHECK_EQ(j.rc_single, 0);
	CHECK_MEM(p.buf[1] + 128, p.buf[0], 2048);
	CHECK_MEM(p.buf[1], zero, 128);		/* nothing before the target range */
	CHECK_MEM(p.buf[1] + 128 + 2048, zero, 128); /* nor after it */
	CHECK_EQ(j.rc_batch, 0);
	for (uint32_t k = 0; k < 4; k++)
		CHECK_MEM(p.buf[1] + BATCH_OFF(k), p.buf[0] + BATCH_OFF(k), 512);
	CHECK_EQ(p.dq[0]->sq_done, p.dq[0]->sq_resv);
	scen_pair_close(&p);
	return 0;
}

/* ---- inline write -------------------------------------------------------------- */

struct inline_job {
	uint32_t len[2];
	int rc;
	struct gdak_dev_cqe err;
};

static void inline_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct inline_job *j = arg;
	uint32_t rkey = gdak_mr_rkey(p->mr[1]);
	int64_t idx = 0;
	uint32_t nbb = 0;

	/* a one-WQEBB inline write, then one spilling into a second WQEBB */
	for (int k = 0; k < 2; k++) {
		nbb = gdak_dev_wqe_bbs_inline(1, j->len[k]);
		idx = scen_reserve(q, nbb);
		if (idx < 0)
			return;
		if (gdak_dev_wqe_write_inline(q, (uint64_t)idx, k ? FLAG_SIG : 0,
					      addr_of(p->buf[1]) + 256u * (uint32_t)k, rkey,
					      p->buf[0] + 256u * (uint32_t)k, j->len[k]) != nbb)
			return;
	}
	j->rc = scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err);
}

int scen_write_inline(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct inline_job j = { .rc = -1 };

	if (scen_pair_open(cfg, &p, 0))
		return 0;
	j.len[0] = 24;
	j.len[1] = p.dq[0]->max_inline < 60 ? p.dq[0]->max_inline : 60;
	if (j.len[1] <= 28) {
		scen_pair_close(&p);
		return 77;	/* the QP cannot carry a two-WQEBB inline write */
	}
	gdak_test_fill(p.buf[0], SCEN_BUF_LEN, 2);
	scen_on_device(&p, inline_dev, &j);
	CHECK_EQ(j.rc, 0);
	CHECK_MEM(p.buf[1], p.buf[0], j.len[0]);
	CHECK_MEM(p.buf[1] + 256, p.buf[0] + 256, j.len[1]);
	CHECK_EQ(p.buf[1][j.len[0]], 0);
	scen_pair_close(&p);
	return 0;
}

/* ---- read ---------------------------------------------------------------------- */

struct read_job {
	int rc;
	struct gdak_dev_cqe err;
};

static void read_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct read_job *j = arg;
	struct gdak_dev_sge sge = {addr_of(p->buf[0]) + 512, 2048, gdak_mr_lkey(p->mr[0])};
	uint32_t nbb = gdak_dev_wqe_bbs_sge(1, 1);
	int64_t idx = scen_reserve(q, nbb);

	if (idx < 0)
		return;
	gdak_dev_wqe_read(q, (uint64_t)idx, FLAG_SIG, addr_of(p->buf[1]) + 64,
			  gdak_mr_rkey(p->mr[1]), &sge, 1);
	j->rc = scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err);
}

int scen_read(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct read_job j = { .rc = -1 };
	static const uint8_t zero[512];

	if (scen_pair_open(cfg, &p, 0))
		return 0;
	gdak_test_fill(p.buf[1], SCEN_BUF_LEN, 3);
	scen_on_device(&p, read_dev, &j);
	CHECK_EQ(j.rc, 0);
	CHECK_MEM(p.buf[0] + 512, p.buf[1] + 64, 2048);
	CHECK_MEM(p.buf[0], zero, 512);
	CHECK_MEM(p.buf[0] + 512 + 2048, zero, 512);
	scen_pair_close(&p);
	return 0;
}

/* ---- write with immediate --------------------------------------------------------- */

struct imm_job {
	int rc, rrc;
	struct gdak_dev_cqe err, rc_cqe;
};

static void imm_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct imm_job *j = arg;
	struct gdak_dev_sge sge = {addr_of(p->buf[0]), 512, gdak_mr_lkey(p->mr[0])};
	uint32_t nbb = gdak_dev_wqe_bbs_sge(1, 1);
	int64_t idx;

	/* the target's receive WQE: WRITE_IMM consumes one (IBA 9.4.1.1);
	 * its buffer stays untouched */
	scen_rq_post(p->dq[1], addr_of(p->buf[1]) + 8192, 64, gdak_mr_lkey(p->mr[1]));
	idx = scen_reserve(q, nbb);
	if (idx < 0)
		return;
	gdak_dev_wqe_write_imm(q, (uint64_t)idx, FLAG_SIG, addr_of(p->buf[1]) + 1024,
			       gdak_mr_rkey(p->mr[1]), &sge, 1, 0x12345678u);
	j->rc = scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err);
	j->rrc = scen_rq_poll(p, p->dq[1], &j->rc_cqe);
}

int scen_write_imm(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct imm_job j = { .rc = -1, .rrc = -1 };
	static const uint8_t zero[64];

	if (scen_pair_open(cfg, &p, 4))
		return 0;
	gdak_test_fill(p.buf[0], SCEN_BUF_LEN, 4);
	scen_on_device(&p, imm_dev, &j);
	CHECK_EQ(j.rc, 0);
	CHECK_EQ(j.rrc, 1);
	CHECK_EQ(j.rc_cqe.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(j.rc_cqe.imm, 0x12345678u);
	CHECK_EQ(j.rc_cqe.byte_cnt, 512);
	CHECK_EQ(j.rc_cqe.qpn, gdak_qp_num(p.qp[1]));
	CHECK_MEM(p.buf[1] + 1024, p.buf[0], 512);
	CHECK_MEM(p.buf[1] + 8192, zero, 64);
	scen_pair_close(&p);
	return 0;
}

/* ---- put + signal --------------------------------------------------------------------- */

#define SIG_OFF 8192u
#define PUT_LEN 1000u

struct sig_job {
	int rc;
	struct gdak_dev_cqe err;
	/* the watcher */
	int seen, data_ok;
};

static void sig_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct sig_job *j = arg;
	struct gdak_dev_sge sge = {addr_of(p->buf[0]), PUT_LEN, gdak_mr_lkey(p->mr[0])};
	uint32_t wbb = gdak_dev_wqe_bbs_sge(1, 1), abb = gdak_dev_wqe_bbs_sge(1, 2);
	int64_t w, a;

	w = scen_reserve(q, wbb);
	a = scen_reserve(q, abb);
	if (w < 0 || a < 0)
		return;
	gdak_dev_wqe_write(q, (uint64_t)w, 0, addr_of(p->buf[1]), gdak_mr_rkey(p->mr[1]), &sge, 1);
	if (!scen_batch_ok(q))
		gdak_dev_sq_submit(q, (uint64_t)w, (uint64_t)w + wbb);
	/* the atomic runs after the write's data is placed: an RC responder
	 * executes requests in order (IBA 9.5), so a signal of 1 vouches for
	 * the data */
	gdak_dev_wqe_fetch_add(q, (uint64_t)a, FLAG_SIG, addr_of(p->buf[1]) + SIG_OFF,
			       gdak_mr_rkey(p->mr[1]), 1, addr_of(p->buf[0]) + SIG_OFF,
			       gdak_mr_lkey(p->mr[0]));
	j->rc = scen_submit_wait(p, q, (uint64_t)a, (uint64_t)a + abb, &j->err);
}

static void sig_watch(struct scen_pair *p, void *arg)
{
	struct sig_job *j = arg;
	uint64_t *sig = (uint64_t *)(void *)(p->buf[1] + SIG_OFF);
	uint64_t deadline = gdak_dev_deadline(p->cfg->timeout_ns);
	uint32_t spins = 0;

	while (!gdak_dev_load_acquire_u64(sig)) {
		if (gdak_dev_expired(deadline, spins))
			return;
		gdak_dev_backoff(&spins);
	}
	j->seen = 1;
	j->data_ok = !memcmp(p->buf[1], p->buf[0], PUT_LEN);
}

int scen_put_signal(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct sig_job j = { .rc = -1 };

	if (scen_pair_open(cfg, &p, 0))
		return 0;
	gdak_test_fill(p.buf[0], PUT_LEN, 5);
	memset(p.buf[0] + SIG_OFF, 0xee, 8);
	scen_on_device_watched(&p, sig_dev, sig_watch, &j);
	CHECK_EQ(j.rc, 0);
	CHECK(j.seen);
	CHECK(j.data_ok);
	CHECK_MEM(p.buf[1], p.buf[0], PUT_LEN);
	CHECK_EQ(*(uint64_t *)(void *)(p.buf[1] + SIG_OFF), 1);
	CHECK_EQ(*(uint64_t *)(void *)(p.buf[0] + SIG_OFF), 0); /* fetched: the old value */
	scen_pair_close(&p);
	return 0;
}
