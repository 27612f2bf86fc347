/* SPDX-License-Identifier: MIT */
/*
 * dev_shared.c - a SHARED QP under contention: 4 host threads post through
 * gdak/dev/rma.h (put, put inline, put+signal, get) while a fake NIC thread
 * in this test consumes the ring in doorbell-record order and writes CQEs
 * for signalled WQEs, lagging behind on purpose.  The NIC checks that
 *   - every WQE sits in the slot its ctrl index names (none lost or
 *     overwritten before it was consumed), and the record never goes back
 *     or more than a ring ahead;
 *   - no slot is reused before the CQE covering its previous WQE was
 *     written (idx + bbs - ring <= end of the last WQE a CQE covered);
 *   - each thread's operations arrive in its program order, all of them,
 *     once each;
 *   - DB: the register holds the ctrl's first 8 bytes of a published WQE;
 *     CPU_PROXY: the proxy word equals the published producer index.
 * Then the same with an error CQE in the middle: every thread gets the
 * sticky error (no hang), later posts fail at once.
 */
#include <pthread.h>
#include <sched.h>

#include "gdak_test.h"
#include "dev_fake.h"

#define NTHREADS 4
/* Hang guard only (a broken protocol must fail, not hang): far above what
 * any wait takes on a loaded machine. */
#define HANG_NS 20000000000ull
#define RING_LOG 6 /* 64 WQEBBs */

struct nic {
	struct dev_fake *f;
	pthread_t tid;
	int stop;
	uint64_t ops_expected;	/* WQEs the posters will post in all */
	uint64_t fail_at;	/* WQE count at which to fail (0: never) */
	/* results */
	uint64_t consumed, cqes, bad_index, bad_reuse, bad_order, bad_db, bad_dbrec, dup;
	uint64_t next_seq[NTHREADS];
};

struct poster {
	struct nic *nic;
	unsigned id;
	unsigned nops;
	int rc;		/* first error */
	unsigned done;	/* operations posted successfully */
	uint8_t buf[128]; /* inline payloads up to 121 bytes */
};

/* raddr encodes (thread, sequence); put+signal's FA carries thread in rkey
 * and its own tag in the high raddr bits. */
#define ENC(t, seq) (((uint64_t)(t) << 40) | (uint64_t)(seq) << 3)
#define DEC_T(a) ((unsigned)((a) >> 40) & 0xff)
#define DEC_SEQ(a) (((a) >> 3) & 0xffffffffull)
#define SIG_TAG (1ull << 60)

static void backoff(unsigned *spins)
{
	if ((*spins)++ < 16)
		return;
	sched_yield();
}

/* One consumed WQE: check and account it.  Returns its WQEBB count. */
static uint32_t nic_one(struct nic *n, uint64_t ci, int *signalled, int *fail)
{
	struct gdak_dev_qp *qp = &n->f->qp;
	const struct mlx5_wqe_ctrl_seg *w = (const struct mlx5_wqe_ctrl_seg *)gdak_dev_wqe_ptr(qp, ci);
	struct gdak_mlx5_ctrl c;
	uint64_t raddr;
	uint32_t rkey, bbs;

	gdak_mlx5_ctrl_decode(w, &c);
	bbs = gdak_mlx5_wqe_bbs(c.ds);
	if (c.wqe_index != (uint16_t)ci || c.qpn != qp->qpn || c.ds == 0) {
		n->bad_index++;
		*signalled = 1;
		return 1;
	}
	*signalled = (c.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) != 0;
	*fail = n->fail_at && n->consumed + 1 == n->fail_at;
	n->consumed++;
	if (c.opcode == MLX5_OPCODE_NOP)
		return bbs;
	gdak_mlx5_raddr_decode((const struct mlx5_wqe_raddr_seg *)gdak_dev_wqe_ds(qp, ci, 1),
			       &raddr, &rkey);
	if (c.opcode == MLX5_OPCODE_ATOMIC_FA) {
		/* put+signal's second half: must follow its write directly */
		if (!(raddr & SIG_TAG) || rkey >= NTHREADS ||
		    n->next_seq[rkey] == 0 || DEC_SEQ(raddr) != n->next_seq[rkey] - 1)
			n->bad_order++;
		return bbs;
	}
	{
		unsigned t = DEC_T(raddr);
		if (t >= NTHREADS || rkey != t) {
			n->bad_order++;
		} else if (DEC_SEQ(raddr) != n->next_seq[t]) {
			if (DEC_SEQ(raddr) < n->next_seq[t])
				n->dup++;
			else
				n->bad_order++;
			n->next_seq[t] = DEC_SEQ(raddr) + 1;
		} else {
			n->next_seq[t]++;
		}
	}
	return bbs;
}

static void *nic_main(void *arg)
{
	struct nic *n = (struct nic *)arg;
	struct gdak_dev_qp *qp = &n->f->qp;
	uint64_t ci = 0, retired = 0, cqe_n = 0, rng = 99;
	uint16_t last_pi = 0, prev_pi = 0;
	unsigned spins = 0;
	int failed = 0;

	while (!__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE)) {
		uint16_t pi = (uint16_t)gdak_be32toh(
			__atomic_load_n(&n->f->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE));
		uint64_t lag;
		if ((uint16_t)(pi - last_pi) > qp->sq_wqebb_cnt ||
		    (uint16_t)(pi - (uint16_t)ci) > qp->sq_wqebb_cnt)
			n->bad_dbrec++;
		last_pi = pi;
		if (pi == (uint16_t)ci) {
			backoff(&spins);
			continue;
		}
		spins = 0;
		if (qp->handler == GDAK_DEV_DB_CPU_PROXY) {
			uint64_t p = __atomic_load_n(&n->f->proxy_pi, __ATOMIC_ACQUIRE);
			/* written right after the record: within a ring of it */
			uint16_t d = (uint16_t)((uint16_t)p - pi);
			if (d > qp->sq_wqebb_cnt && d < 0x10000 - qp->sq_wqebb_cnt)
				n->bad_db++;
		} else {
			/* the register holds the ctrl head of some WQE below pi
			 * whose index matches its own slot */
			uint64_t reg = __atomic_load_n(&n->f->db_page[0], __ATOMIC_ACQUIRE);
			/* the decoder reads a whole 16-byte ctrl segment: the
			 * register holds only its first 8 bytes */
			struct mlx5_wqe_ctrl_seg seg;
			struct gdak_mlx5_ctrl c;
			memset(&seg, 0, sizeof(seg));
			memcpy(&seg, &reg, sizeof(reg));
			gdak_mlx5_ctrl_decode(&seg, &c);
			/* the record is published before the register is written:
			 * until the first ring lands the register is still 0 */
			if (reg != 0 && c.qpn != qp->qpn)
				n->bad_db++;
		}
		/* lag: while the posters are busy, leave a few published WQEs
		 * for later; once the record stops moving, take them all */
		lag = pi != prev_pi ? gdak_test_rand(&rng) & 7 : 0;
		prev_pi = pi;
		while ((uint16_t)ci != pi && (uint16_t)(pi - (uint16_t)ci) > lag) {
			int sig = 0, fail = 0;
			uint32_t bbs = nic_one(n, ci, &sig, &fail);
			if (ci + bbs > retired + qp->sq_wqebb_cnt)
				n->bad_reuse++;
			if (fail)
				failed = 1;
			if (sig || failed) {
				/* room in the CQ? (consumer index from its record) */
				unsigned s2 = 0;
				while (cqe_n - gdak_be32toh(__atomic_load_n(&n->f->scq_dbrec[0],
									    __ATOMIC_ACQUIRE)) >=
					       qp->scq.ncqe &&
				       !__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE))
					backoff(&s2);
				if (failed)
					fake_cqe(&qp->scq, cqe_n++, MLX5_CQE_REQ_ERR, (uint16_t)ci,
						 qp->qpn,
						 fail ? MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR
						      : MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
						 0, MLX5_OPCODE_RDMA_WRITE, 0, 0);
				else
					fake_cqe(&qp->scq, cqe_n++, MLX5_CQE_REQ, (uint16_t)ci,
						 qp->qpn, 0, 0, 0, 0, 0);
				retired = ci + bbs;
			}
			ci += bbs;
		}
	}
	n->cqes = cqe_n;
	return NULL;
}

static void *poster_main(void *arg)
{
	struct poster *p = (struct poster *)arg;
	struct gdak_dev_qp *qp = &p->nic->f->qp;
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)p->buf, 64, 0x11};
	uint64_t t = 0;
	uint32_t seq = 0;

	for (unsigned i = 0; i < p->nops; i++) {
		int rc;
		uint64_t a = ENC(p->id, seq);
		switch (i % 5) {
		case 0:
			rc = gdak_dev_put(qp, &sge, a, p->id, 0, &t);
			break;
		case 1: /* 1..3 WQEBBs */
			rc = gdak_dev_put_inline(qp, p->buf, (i * 7) % 40 + 1 + (i & 1) * 80, a,
						 p->id, 0, &t);
			break;
		case 2:
			rc = gdak_dev_put_signal(qp, &sge, a, p->id, a | SIG_TAG, p->id, 1, 0,
						 &t);
			break;
		case 3:
			rc = gdak_dev_get(qp, &sge, a, p->id, GDAK_DEV_WQE_SIGNAL, &t);
			break;
		default:
			rc = gdak_dev_put_value(qp, i, 8, a, p->id, 0, &t);
			break;
		}
		if (rc) {
			p->rc = rc;
			return NULL;
		}
		seq++;
		p->done++;
		if (i % 97 == 96 && (rc = gdak_dev_wait_timeout(qp, t, HANG_NS, NULL)) != 0) {
			p->rc = rc;
			return NULL;
		}
	}
	p->rc = gdak_dev_quiet_timeout(qp, HANG_NS, NULL);
	return NULL;
}

static void run(uint32_t handler, unsigned nops, uint64_t fail_at)
{
	struct nic n;
	struct poster p[NTHREADS];
	pthread_t tid[NTHREADS];
	struct gdak_dev_cqe err = {0};
	uint64_t total = 0;

	memset(&n, 0, sizeof(n));
	n.f = fake_new(RING_LOG, RING_LOG, handler, GDAK_DEV_SHARED);
	n.f->qp.max_inline = 128;
	n.f->qp.wait_timeout_ns = HANG_NS;
	n.fail_at = fail_at;
	REQUIRE(pthread_create(&n.tid, NULL, nic_main, &n) == 0);
	for (unsigned i = 0; i < NTHREADS; i++) {
		memset(&p[i], 0, sizeof(p[i]));
		p[i].nic = &n;
		p[i].id = i;
		p[i].nops = nops;
		REQUIRE(pthread_create(&tid[i], NULL, poster_main, &p[i]) == 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(tid[i], NULL);
	__atomic_store_n(&n.stop, 1, __ATOMIC_RELEASE);
	pthread_join(n.tid, NULL);

	CHECK_EQ(n.bad_index, 0);
	CHECK_EQ(n.bad_reuse, 0);
	CHECK_EQ(n.bad_order, 0);
	CHECK_EQ(n.dup, 0);
	CHECK_EQ(n.bad_db, 0);
	CHECK_EQ(n.bad_dbrec, 0);
	for (unsigned i = 0; i < NTHREADS; i++)
		total += p[i].done;
	if (!fail_at) {
		for (unsigned i = 0; i < NTHREADS; i++) {
			CHECK_EQ(p[i].rc, 0);
			CHECK_EQ(p[i].done, nops);
			/* all of thread i's operations reached the NIC, in order */
			CHECK_EQ(n.next_seq[i], nops);
		}
		CHECK_EQ(n.f->qp.sq_done, n.f->qp.sq_ready);
		CHECK_EQ(n.f->qp.sq_resv, n.f->qp.sq_ready);
		CHECK_EQ(gdak_dev_cq_error(&n.f->qp.scq, NULL), 0);
	} else {
		/* everyone stopped with the sticky error, none hung */
		for (unsigned i = 0; i < NTHREADS; i++)
			CHECK_EQ(p[i].rc, -EIO);
		CHECK_EQ(gdak_dev_cq_error(&n.f->qp.scq, &err), -EIO);
		CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		CHECK(total < (uint64_t)NTHREADS * nops);
		/* posting after the failure fails at once */
		CHECK_EQ(gdak_dev_put_value(&n.f->qp, 1, 8, 0, 0, 0, NULL), -EIO);
	}
	printf("handler %u: %" PRIu64 " ops posted, %" PRIu64 " WQEs consumed, %" PRIu64
	       " CQEs, %" PRIu64 " WQEBBs\n",
	       handler, total, n.consumed, n.cqes, n.f->qp.sq_resv);
	fake_free(n.f);
}

int main(void)
{
	run(GDAK_DEV_DB_DB, 4000, 0);
	run(GDAK_DEV_DB_BF, 2000, 0);
	run(GDAK_DEV_DB_CPU_PROXY, 2000, 0);
	run(GDAK_DEV_DB_DB, 4000, 3000);
	return gdak_test_end();
}
