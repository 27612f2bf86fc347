/* SPDX-License-Identifier: MIT */
/*
 * dev_cq.c - CQ polling of gdak/dev/cq.h across many ring wraps (of the CQ,
 * of the SQ and of the 16-bit wqe_counter), with unsignalled and
 * multi-WQEBB WQEs retired by a later CQE; error CQEs (syndrome, WQE index,
 * sticky error, later waits failing at once); -ETIMEDOUT from bounded waits;
 * a CQE naming a WQE never posted.  The test plays the NIC by writing CQEs.
 */
#include "gdak_case.h"
#include "gdak_test.h"
#include "dev_fake.h"

static const struct gdak_dev_sge sge = {0x1000, 64, 0x42};

/* Completes (writes a CQE for) the WQE at idx, CQE number n of the ring. */
static void nic_complete(struct dev_fake *f, uint64_t *n, uint64_t idx)
{
	fake_cqe(&f->qp.scq, (*n)++, MLX5_CQE_REQ, (uint16_t)idx, f->qp.qpn, 0, 0, 0, 0, 0);
}

static void test_wraps(void)
{
	/* SQ of 16 WQEBBs, CQ of 16 CQEs, starting 40 WQEBBs before the
	 * 16-bit counter wraps and far above 2^32 */
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	uint64_t base = 0x500000000ull + 0x10000 - 40, ncqe = 0, rng = 7;
	uint8_t data[100];
	unsigned bad = 0;

	qp->sq_resv = qp->sq_ready = qp->sq_done = qp->sq_db = base;
	for (int round = 0; round < 20000; round++) {
		uint64_t sig_end = 0, last = 0, sigs[16];
		unsigned nsig = 0;
		/* post WQEs (1 or 3 WQEBBs) while the ring has room */
		REQUIRE(gdak_dev_sq_free_bbs(qp) >= 3);
		while (gdak_dev_sq_free_bbs(qp) >= 3) {
			uint64_t r = gdak_test_rand(&rng);
			/* signal often, and always before the ring runs dry */
			uint32_t flags = ((r & 3) == 0 || gdak_dev_sq_free_bbs(qp) < 6)
						 ? GDAK_DEV_WQE_SIGNAL : 0;
			uint64_t idx = qp->sq_resv;
			uint32_t bbs = (r & 4) ? gdak_dev_wqe_write_inline(qp, idx, flags, 0x10, 1,
									 data, 100)
					       : gdak_dev_wqe_write(qp, idx, flags, 0x10, 1, &sge, 1);
			gdak_dev_sq_reserve(qp, bbs);
			last = idx;
			if (flags) {
				sigs[nsig++] = idx;
				sig_end = idx + bbs;
			}
			if ((r & 0x38) == 0)
				break;
		}
		gdak_dev_sq_submit(qp, last, qp->sq_resv);
		if (!nsig)
			continue; /* retired later, by a signalled WQE */
		for (unsigned i = 0; i < nsig; i++)
			nic_complete(f, &ncqe, sigs[i]);
		if (gdak_dev_sq_wait_timeout(qp, sig_end, 10000000000ull, NULL) != 0 ||
		    qp->sq_done != sig_end || qp->scq.cons_idx != ncqe)
			bad++;
		if (f->scq_dbrec[0] != gdak_htobe32((uint32_t)ncqe & 0xffffff))
			bad++;
	}
	CHECK_EQ(bad, 0);
	CHECK(ncqe > 1000 * 16); /* the CQ wrapped over a thousand times */
	CHECK(qp->sq_resv - base > 2 * 0x10000); /* the 16-bit counter twice */
	printf("%" PRIu64 " CQEs, %" PRIu64 " WQEBBs\n", ncqe, qp->sq_resv - base);
	CHECK_EQ(gdak_dev_cq_error(&qp->scq, NULL), 0);
	fake_free(f);
}

static void test_errors(void)
{
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp *qp = &f->qp;
	struct gdak_dev_cqe err;
	uint64_t w[5], n = 0, t0;
	int rc;

	qp->sq_resv = qp->sq_ready = qp->sq_done = qp->sq_db = 0xfffd;
	for (int i = 0; i < 5; i++) {
		w[i] = gdak_dev_sq_reserve(qp, 1);
		gdak_dev_wqe_write(qp, w[i], i == 1 ? 0 : GDAK_DEV_WQE_SIGNAL, 0x10, 1, &sge, 1);
	}
	gdak_dev_sq_submit(qp, w[4], w[4] + 1);

	/* w0 succeeds, w2 fails with REMOTE_ACCESS, w3 and w4 are flushed */
	nic_complete(f, &n, w[0]);
	fake_cqe(&qp->scq, n++, MLX5_CQE_REQ_ERR, (uint16_t)w[2], qp->qpn,
		 MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, 0x88, MLX5_OPCODE_RDMA_WRITE, 0, 0);
	fake_cqe(&qp->scq, n++, MLX5_CQE_REQ_ERR, (uint16_t)w[3], qp->qpn,
		 MLX5_CQE_SYNDROME_WR_FLUSH_ERR, 0, MLX5_OPCODE_RDMA_WRITE, 0, 0);

	CHECK_EQ(gdak_dev_sq_wait(qp, w[0] + 1, &err), 0);
	memset(&err, 0, sizeof(err));
	rc = gdak_dev_sq_wait_timeout(qp, w[2] + 1, 1000000000ull, &err);
	CHECK_EQ(rc, -EIO);
	CHECK_EQ(err.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(err.vendor_syndrome, 0x88);
	CHECK_EQ(err.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(err.wqe_counter, 0xffff);
	CHECK_EQ(err.wqe_index, w[2]);
	CHECK_EQ(err.qpn, qp->qpn);
	/* the poller consumed all three CQEs; the flush did not overwrite the
	 * first error */
	CHECK_EQ(qp->scq.cons_idx, 3);
	CHECK_EQ(qp->sq_done, w[3] + 1);
	CHECK_EQ(f->scq_dbrec[0], gdak_htobe32(3));

	/* sticky: a wait for later work fails at once, even with no CQE for
	 * it and an unbounded wait */
	memset(&err, 0, sizeof(err));
	CHECK_EQ(gdak_dev_sq_wait(qp, w[4] + 1, &err), -EIO);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(err.wqe_index, w[2]);
	CHECK_EQ(gdak_dev_cq_error(&qp->scq, NULL), -EIO);
	CHECK(qp->scq.err & GDAK_DEV_CQ_ERR_VALID);
	/* work that completed before the failure still reports success */
	CHECK_EQ(gdak_dev_sq_wait(qp, w[1] + 1, NULL), 0);

	/* bounded wait on a QP whose NIC never answers */
	fake_free(f);
	f = fake_new(4, 4, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	qp = &f->qp;
	w[0] = gdak_dev_sq_reserve(qp, 1);
	gdak_dev_wqe_nop(qp, w[0], GDAK_DEV_WQE_SIGNAL);
	gdak_dev_sq_submit(qp, w[0], w[0] + 1);
	t0 = gdak_test_now_ns();
	CHECK_EQ(gdak_dev_sq_wait_timeout(qp, 1, 2000000, NULL), -ETIMEDOUT);
	CHECK(gdak_test_now_ns() - t0 >= 2000000);
	CHECK_EQ(qp->sq_done, 0);
	n = 0;
	nic_complete(f, &n, w[0]);
	CHECK_EQ(gdak_dev_sq_wait_timeout(qp, 1, 0, NULL), 0);

	/* a CQE naming a slot nobody reserved: -EPROTO, sq_done unmoved */
	fake_cqe(&qp->scq, n++, MLX5_CQE_REQ, 9, qp->qpn, 0, 0, 0, 0, 0);
	memset(&err, 0, sizeof(err));
	CHECK_EQ(gdak_dev_sq_progress(qp), -EPROTO);
	CHECK_EQ(qp->sq_done, 1);
	CHECK_EQ(gdak_dev_sq_wait(qp, 1, &err), -EPROTO);
	CHECK_EQ(err.proto, 1);
	CHECK_EQ(err.wqe_counter, 9);
	fake_free(f);
}

static void test_poll_one(void)
{
	struct dev_fake *f = fake_new(4, 2, GDAK_DEV_DB_DB, GDAK_DEV_SHARED);
	struct gdak_dev_cq *cq = &f->qp.scq;
	struct gdak_dev_cqe c = {0};

	/* fresh ring (0xf1): nothing */
	CHECK_EQ(gdak_dev_cq_poll_one(cq, 0, &c), 0);
	/* a CQE written for pass 1 (wrong owner parity for n = 0): nothing */
	fake_cqe(cq, 4, MLX5_CQE_REQ, 0, 1, 0, 0, 0, 0, 0);
	CHECK_EQ(gdak_dev_cq_poll_one(cq, 0, &c), 0);
	fake_cqe(cq, 0, MLX5_CQE_RESP_SEND_IMM, 0xfffe, 0xabcdef, 0, 0, 0, 1234, 0xdeadbeef);
	CHECK_EQ(gdak_dev_cq_poll_one(cq, 0x1fff0, &c), 1);
	CHECK_EQ(c.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(c.byte_cnt, 1234);
	CHECK_EQ(c.imm, 0xdeadbeef);
	CHECK_EQ(c.qpn, 0xabcdef);
	CHECK_EQ(c.wqe_index, 0x1fffe);
	CHECK_EQ(cq->cons_idx, 1);
	/* 16-bit mapping across the wrap */
	CHECK_EQ(gdak_dev_wqe_counter_to_index(2, 0x2fff0), 0x30002);
	CHECK_EQ(gdak_dev_wqe_counter_to_index(0xfff0, 0x2fff0), 0x2fff0);

	/* shared mode: while another thread holds the CQ lock, progress
	 * leaves the CQ alone */
	fake_cqe(cq, 1, MLX5_CQE_REQ, 0, f->qp.qpn, 0, 0, 0, 0, 0);
	f->qp.sq_resv = 1;
	f->qp.scq.lock = 1;
	CHECK_EQ(gdak_dev_sq_progress(&f->qp), 0);
	CHECK_EQ(cq->cons_idx, 1);
	f->qp.scq.lock = 0;
	CHECK_EQ(gdak_dev_sq_progress(&f->qp), 1);
	CHECK_EQ(f->qp.sq_done, 1);
	CHECK_EQ(f->qp.scq.lock, 0);
	fake_free(f);
}

static const struct gdak_case cases[] = { GDAK_CASE(test_poll_one), GDAK_CASE(test_wraps),
					  GDAK_CASE(test_errors) };

int main(int argc, char **argv)
{
	return GDAK_TEST_CASES(argc, argv, cases);
}
