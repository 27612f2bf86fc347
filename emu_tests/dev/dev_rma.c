/* SPDX-License-Identifier: MIT */
/*
 * dev_rma.c - the high-level calls of gdak/dev/rma.h on an EXCLUSIVE and a
 * SHARED QP against the loopback fake NIC thread of dev_fake.h: data moved
 * by put / put_inline / put_value / get, put+signal's two WQEs and the
 * signal word, fetch-add / compare-swap results (big-endian from the NIC,
 * host order from the call), the half-ring signalling rule, wait() adding
 * a signalled NOP, quiet, bad arguments, bounded waits (-ETIMEDOUT) when
 * the NIC stalls, and a failure after a ticket not failing that ticket;
 * an exclusive owner's working copy of the descriptor.
 */
#include "gdak_test.h"
#include "dev_fake.h"

#define HANG_NS 20000000000ull

static void test_ops(uint32_t sharing)
{
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_DB, sharing);
	struct gdak_dev_qp *qp = &f->qp;
	struct fake_nic nic;
	uint64_t src[4] = {0x1111, 0x2222, 0x3333, 0x4444}, dst[4] = {0}, sig = 0, res = 0, old = 0;
	uint8_t big[100], big_dst[100];
	struct gdak_dev_sge s0 = {(uint64_t)(uintptr_t)&src[0], 16, 1};
	struct gdak_dev_sge d2 = {(uint64_t)(uintptr_t)&dst[2], 8, 1};
	uint64_t t = 0;

	qp->max_inline = 128;
	gdak_test_fill(big, sizeof(big), 5);
	fake_nic_start(&nic, f);

	CHECK_EQ(gdak_dev_put(qp, &s0, (uint64_t)(uintptr_t)&dst[0], 2, 0, &t), 0);
	CHECK_EQ(t, 1);
	CHECK_EQ(gdak_dev_wait_timeout(qp, t, HANG_NS, NULL), 0);
	CHECK_EQ(dst[0], 0x1111);
	CHECK_EQ(dst[1], 0x2222);
	/* nothing was signalled: wait() added a signalled NOP */
	CHECK_EQ(qp->sq_ready, 2);
	CHECK_EQ(qp->sq_sig, 2);

	CHECK_EQ(gdak_dev_get(qp, &d2, (uint64_t)(uintptr_t)&src[3], 2, 0, &t), 0);
	CHECK_EQ(gdak_dev_put_value(qp, 0xfeedull, 8, (uint64_t)(uintptr_t)&dst[3], 2, 0, &t), 0);
	CHECK_EQ(gdak_dev_put_inline(qp, big, 100, (uint64_t)(uintptr_t)big_dst, 2, 0, &t), 0);
	CHECK_EQ(gdak_dev_quiet_timeout(qp, HANG_NS, NULL), 0);
	CHECK_EQ(dst[2], 0x4444);
	CHECK_EQ(dst[3], 0xfeed);
	CHECK_MEM(big_dst, big, 100);
	CHECK_EQ(qp->sq_done, qp->sq_ready);

	/* put+signal: WRITE then ATOMIC_FA, one doorbell */
	dst[0] = 0;
	CHECK_EQ(gdak_dev_put_signal(qp, &s0, (uint64_t)(uintptr_t)&dst[0], 2,
				     (uint64_t)(uintptr_t)&sig, 3, 5, 0, &t), 0);
	CHECK_EQ(gdak_dev_signal_wait_timeout(&sig, GDAK_DEV_CMP_GE, 5, HANG_NS, &old), 0);
	CHECK_EQ(old, 5);
	CHECK_EQ(dst[0], 0x1111);
	CHECK_EQ(gdak_dev_signal_wait_timeout(&sig, GDAK_DEV_CMP_EQ, 6, 1000000, NULL), -ETIMEDOUT);
	CHECK_EQ(gdak_dev_signal_wait_ge(&sig, 5), 5);

	/* atomics: results in host order, the local word holds big-endian */
	dst[1] = 40;
	CHECK_EQ(gdak_dev_fetch_add(qp, (uint64_t)(uintptr_t)&dst[1], 2, 2, &res, 7, &old), 0);
	CHECK_EQ(old, 40);
	CHECK_EQ(res, gdak_htobe64(40));
	CHECK_EQ(dst[1], 42);
	CHECK_EQ(gdak_dev_compare_swap(qp, (uint64_t)(uintptr_t)&dst[1], 2, 41, 7, &res, 7, &old), 0);
	CHECK_EQ(old, 42);
	CHECK_EQ(dst[1], 42); /* compare failed: unchanged */
	CHECK_EQ(gdak_dev_compare_swap(qp, (uint64_t)(uintptr_t)&dst[1], 2, 42, 7, &res, 7, &old), 0);
	CHECK_EQ(old, 42);
	CHECK_EQ(dst[1], 7);

	/* many posts through a 16-slot ring: the half-ring rule keeps the
	 * poster from waiting for a completion nobody asked for */
	for (int i = 0; i < 1000; i++)
		if (gdak_dev_put_value(qp, (uint64_t)i, 4, (uint64_t)(uintptr_t)&dst[0], 2, 0, &t))
			break;
	CHECK_EQ(gdak_dev_quiet_timeout(qp, HANG_NS, NULL), 0);
	CHECK_EQ(dst[0] & 0xffffffff, 999);

	/* bad arguments */
	CHECK_EQ(gdak_dev_put_inline(qp, big, qp->max_inline + 1, 0, 0, 0, &t), -EINVAL);
	CHECK_EQ(gdak_dev_put_value(qp, 1, 3, 0, 0, 0, &t), -EINVAL);
	CHECK_EQ(gdak_dev_sq_acquire(qp, qp->sq_wqebb_cnt, &t), -EINVAL);
	qp->scratch_addr = 0;
	CHECK_EQ(gdak_dev_put_signal(qp, &s0, 0, 0, 0, 0, 1, 0, &t), -EINVAL);
	CHECK_EQ(qp->sq_resv, qp->sq_ready); /* nothing reserved by the refusals */

	fake_nic_stop(&nic);
	CHECK_EQ(nic.bad, 0);
	fake_free(f);
}

/* The NIC stops answering: posting waits and waits end with -ETIMEDOUT. */
static void test_stall(uint32_t sharing)
{
	struct dev_fake *f = fake_new(2, 2, GDAK_DEV_DB_DB, sharing);
	struct gdak_dev_qp *qp = &f->qp;
	uint64_t t = 0, v = 0;
	int rc = 0;

	qp->wait_timeout_ns = 1000000; /* 1 ms */
	for (int i = 0; i < 4; i++)
		CHECK_EQ(gdak_dev_put_value(qp, 1, 8, (uint64_t)(uintptr_t)&v, 1, 0, &t), 0);
	CHECK_EQ(gdak_dev_put_value(qp, 1, 8, (uint64_t)(uintptr_t)&v, 1, 0, &t), -ETIMEDOUT);
	rc = gdak_dev_put_value(qp, 1, 8, (uint64_t)(uintptr_t)&v, 1, 0, &t);
	if (sharing == GDAK_DEV_SHARED) {
		/* the abandoned slots make the queue dead for device code */
		CHECK_EQ(rc, -ECANCELED);
		CHECK(qp->scq.err & GDAK_DEV_CQ_ERR_ABORT);
		CHECK_EQ(gdak_dev_quiet_timeout(qp, 1000000, NULL), -ECANCELED);
	} else {
		/* the exclusive owner just gave its slots back */
		CHECK_EQ(rc, -ETIMEDOUT);
		CHECK_EQ(gdak_dev_quiet_timeout(qp, 1000000, NULL), -ETIMEDOUT);
		CHECK_EQ(qp->sq_resv, 4);
		CHECK_EQ(qp->scq.err, 0);
	}
	fake_free(f);
}

/* A failure after a ticket does not fail the wait for that ticket; waits
 * covering the failed WQE and later posts fail with its syndrome. */
static void test_failure(void)
{
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_DB, GDAK_DEV_SHARED);
	struct gdak_dev_qp *qp = &f->qp;
	struct fake_nic nic;
	struct gdak_dev_cqe err = {0};
	uint64_t v = 0, t1 = 0, t2 = 0;

	fake_nic_start(&nic, f);
	nic.fail_syndrome = MLX5_CQE_SYNDROME_REMOTE_OP_ERR;
	__atomic_store_n(&nic.fail_at, 2, __ATOMIC_RELEASE);
	CHECK_EQ(gdak_dev_put_value(qp, 1, 8, (uint64_t)(uintptr_t)&v, 1, 0, &t1), 0);
	CHECK_EQ(gdak_dev_put_value(qp, 2, 8, (uint64_t)(uintptr_t)&v, 1, 0, &t2), 0);
	CHECK_EQ(gdak_dev_wait_timeout(qp, t1, HANG_NS, &err), 0);
	CHECK_EQ(gdak_dev_wait_timeout(qp, t2, HANG_NS, &err), -EIO);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
	CHECK_EQ(err.wqe_index, 1);
	CHECK_EQ(gdak_dev_put_value(qp, 3, 8, (uint64_t)(uintptr_t)&v, 1, 0, &t2), -EIO);
	CHECK_EQ(v, 1);
	fake_nic_stop(&nic);
	fake_free(f);
}

/*
 * An EXCLUSIVE owner's working copy (gdak_dev_qp_load / _store), and the
 * retire of the last signalled WQE from sq_sig_start / sq_sig: no NIC
 * thread; CQEs written by hand, the ring's ctrl segment spoiled after
 * posting so that a read-back would retire the wrong amount.
 */
static void test_local_copy(void)
{
	struct dev_fake *f = fake_new(4, 4, GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE);
	struct gdak_dev_qp l, *qp = &f->qp;
	uint8_t data[40] = {1, 2, 3};
	uint64_t t = 0;
	uint32_t *ctrl;

	qp->max_inline = 128;
	gdak_dev_qp_load(&l, qp);
	/* 40 inline bytes: ctrl + raddr + 3 inline DS = 5 DS, 2 WQEBBs */
	CHECK_EQ(gdak_dev_put_inline(&l, data, 40, 0x1000, 2, GDAK_DEV_WQE_SIGNAL, &t), 0);
	CHECK_EQ(t, 2);
	CHECK_EQ(l.sq_sig_start, 0);
	CHECK_EQ(l.sq_sig, 2);
	/* the shared descriptor is untouched until the store; the record and
	 * the doorbell are not (they are the NIC's) */
	CHECK_EQ(qp->sq_ready, 0);
	CHECK_EQ(gdak_be32toh(f->dbrec[MLX5_SND_DBR]), 2);
	CHECK_EQ(f->db_page[0], *(uint64_t *)qp->sq_buf);
	/* spoil the DS count: a read-back would say 1 WQEBB */
	ctrl = (uint32_t *)qp->sq_buf;
	ctrl[1] = qp->qpn_ds_be | gdak_htobe32(1);
	fake_cqe(&l.scq, 0, MLX5_CQE_REQ, 0, qp->qpn, 0, 0, 0, 0, 0);
	CHECK_EQ(gdak_dev_wait_timeout(&l, t, HANG_NS, NULL), 0);
	CHECK_EQ(l.sq_done, 2);
	CHECK_EQ(l.scq.cons_idx, 1);
	CHECK_EQ(gdak_be32toh(f->scq_dbrec[0]), 1);
	gdak_dev_qp_store(qp, &l);
	CHECK_EQ(qp->sq_ready, 2);
	CHECK_EQ(qp->sq_resv, 2);
	CHECK_EQ(qp->sq_done, 2);
	CHECK_EQ(qp->sq_sig, 2);
	CHECK_EQ(qp->scq.cons_idx, 1);
	CHECK_EQ(qp->scq.err, 0);

	/* an unsignalled WQE completed by an error CQE: its size comes from
	 * the ring (it is not the last signalled one), the error is sticky
	 * and reaches the descriptor through the store */
	CHECK_EQ(gdak_dev_put_value(qp, 7, 8, 0x2000, 2, 0, &t), 0);
	CHECK_EQ(t, 3);
	fake_cqe(&qp->scq, 1, MLX5_CQE_REQ_ERR, 2, qp->qpn, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
		 0x88, MLX5_OPCODE_RDMA_WRITE, 0, 0);
	gdak_dev_qp_load(&l, qp);
	CHECK_EQ(gdak_dev_sq_drain(&l), -EIO);
	CHECK_EQ(l.sq_done, 3);
	gdak_dev_qp_store(qp, &l);
	CHECK_EQ(gdak_dev_cq_error(&qp->scq, NULL), -EIO);
	CHECK_EQ(qp->scq.err_wqe_index, 2);
	CHECK_EQ(qp->sq_done, 3);
	fake_free(f);
}

int main(void)
{
	test_local_copy();
	test_ops(GDAK_DEV_EXCLUSIVE);
	test_ops(GDAK_DEV_SHARED);
	test_stall(GDAK_DEV_EXCLUSIVE);
	test_stall(GDAK_DEV_SHARED);
	test_failure();
	return gdak_test_end();
}
