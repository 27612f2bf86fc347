/* SPDX-License-Identifier: MIT */
/*
 * perf_emu_lat.c - latency tests (write_lat, read_lat, atomic_lat,
 * put_signal_lat): one operation at a time on the first connection, each
 * timed from just before its WQE is built to the moment the poster sees the
 * result - its CQE (write, read, atomic), or the signal word changing in the
 * target's memory (put_signal: what the peer waiting on it would see).
 * The NIC model polls in pure-spin mode unless --poll says otherwise.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/dev.h>

#include "perf.h"

#define STALL_NS (10ull * 1000000000ull)

struct lat_ctx {
	const struct perf_opts *o;
	struct perf_conn *c;
	size_t size, slots;
	uint64_t *signal;	/* put_signal_lat: in the target region, after the data */
};

/* Post operation k (one or two WQEs, the last signalled), one doorbell. */
static int post_op(const struct lat_ctx *lc, uint64_t k)
{
	struct perf_conn *c = lc->c;
	struct gdak_dev_qp *q = c->dqp;
	size_t off = (size_t)(k % lc->slots) * lc->size;
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)(c->lbuf + off), (uint32_t)lc->size,
				   gdak_mr_lkey(c->lmr)};
	uint64_t raddr = (uint64_t)(uintptr_t)(c->rbuf + off), idx;
	uint32_t rkey = gdak_mr_rkey(c->rmr), lkey = gdak_mr_lkey(c->lmr), bbs = 0;

	switch (lc->o->test->id) {
	case PERF_WRITE_LAT:
		idx = gdak_dev_sq_reserve(q, 1);
		bbs = gdak_dev_wqe_write(q, idx, GDAK_DEV_WQE_SIGNAL, raddr, rkey, &sge, 1);
		break;
	case PERF_READ_LAT:
		idx = gdak_dev_sq_reserve(q, 1);
		bbs = gdak_dev_wqe_read(q, idx, GDAK_DEV_WQE_SIGNAL, raddr, rkey, &sge, 1);
		break;
	case PERF_ATOMIC_LAT:
		idx = gdak_dev_sq_reserve(q, 1);
		bbs = gdak_dev_wqe_fetch_add(q, idx, GDAK_DEV_WQE_SIGNAL,
					     (uint64_t)(uintptr_t)c->rbuf, rkey, 1,
					     (uint64_t)(uintptr_t)(c->lbuf + (k % lc->slots) * 8),
					     lkey);
		break;
	case PERF_PUT_SIGNAL_LAT:
		/* the write, then a fetch-add on the signal word: RC executes
		 * them in order at the responder (IBA 9.5), so a peer that sees
		 * the signal sees the data; the fetched value lands after the
		 * local data slots, never on a source */
		idx = gdak_dev_sq_reserve(q, 1);
		if (!gdak_dev_wqe_write(q, idx, 0, raddr, rkey, &sge, 1))
			return -EINVAL;
		idx = gdak_dev_sq_reserve(q, 1);
		bbs = gdak_dev_wqe_fetch_add(q, idx, GDAK_DEV_WQE_SIGNAL,
					     (uint64_t)(uintptr_t)lc->signal, rkey, 1,
					     (uint64_t)(uintptr_t)(c->lbuf + lc->slots * lc->size),
					     lkey);
		break;
	default:
		return -EINVAL;
	}
	if (!bbs)
		return -EINVAL;
	gdak_dev_sq_submit(q, idx, q->sq_resv);
	return 0;
}

static int wait_signal(const struct lat_ctx *lc, uint64_t want)
{
	uint64_t deadline = 0;
	unsigned spins = 0;

	while (__atomic_load_n(lc->signal, __ATOMIC_ACQUIRE) != want) {
		/* a failed WQE never moves the signal: look at the CQ too */
		if (gdak_dev_sq_failed_below(lc->c->dqp, lc->c->dqp->sq_resv, NULL))
			return -EIO;
		if ((++spins & 1023) == 0) {
			uint64_t now = perf_now_ns();

			if (!deadline)
				deadline = now + STALL_NS;
			else if (now > deadline)
				return -ETIMEDOUT;
			gdak_dev_sq_progress(lc->c->dqp);
		}
	}
	return 0;
}

static void prepare(const struct lat_ctx *lc)
{
	struct perf_conn *c = lc->c;
	size_t len = lc->slots * lc->size;

	if (lc->o->test->id == PERF_READ_LAT) {
		perf_fill(c->rbuf, len, lc->size + 11);
		memset(c->lbuf, 0, len);
	} else if (lc->o->test->id == PERF_ATOMIC_LAT) {
		memset(c->rbuf, 0, 8);
		memset(c->lbuf, 0, lc->slots * 8);
	} else {
		perf_fill(c->lbuf, len, lc->size + 11);
		memset(c->rbuf, 0, len + 8);
	}
}

static int verify(const struct lat_ctx *lc, uint64_t iters)
{
	struct perf_conn *c = lc->c;
	const char *name = lc->o->test->name;
	size_t off = (size_t)((iters - 1) % lc->slots) * lc->size;
	int rd = lc->o->test->id == PERF_READ_LAT;
	uint8_t *dst = (rd ? c->lbuf : c->rbuf) + off;
	const uint8_t *src = (rd ? c->rbuf : c->lbuf) + off;

	if (perf_test_corrupt())
		dst[0] ^= 0xff;
	if (lc->o->test->id == PERF_ATOMIC_LAT) {
		uint64_t counter, fetched;

		memcpy(&counter, c->rbuf, 8);
		memcpy(&fetched, c->lbuf + ((iters - 1) % lc->slots) * 8, 8);
		fetched = gdak_be64toh(fetched);
		if (counter != iters || fetched != iters - 1) {
			perf_verify_fail(name, 8, "counter %llu (want %llu), last fetched %llu "
					 "(want %llu)", (unsigned long long)counter,
					 (unsigned long long)iters, (unsigned long long)fetched,
					 (unsigned long long)(iters - 1));
			return -EIO;
		}
		return 0;
	}
	if (memcmp(dst, src, lc->size)) {
		perf_verify_fail(name, lc->size, "the last message's bytes differ from the source");
		return -EIO;
	}
	if (lc->o->test->id == PERF_PUT_SIGNAL_LAT && *lc->signal != iters) {
		perf_verify_fail(name, lc->size, "signal word %llu, want %llu",
				 (unsigned long long)*lc->signal, (unsigned long long)iters);
		return -EIO;
	}
	return 0;
}

int perf_emu_lat(struct perf_env *env, const struct perf_opts *o, size_t size, uint64_t iters,
		 double *lat_ns)
{
	struct lat_ctx lc = {.o = o, .c = &env->conn[0], .size = size,
			     .slots = perf_region_slots(size)};
	struct gdak_dev_qp *q = lc.c->dqp;
	struct gdak_dev_cqe err;
	uint64_t k;
	int ret = 0;

	lc.signal = (uint64_t *)(void *)(lc.c->rbuf + lc.slots * size);
	prepare(&lc);
	for (k = 0; k < iters; k++) {
		uint64_t t0 = perf_now_ns();

		ret = post_op(&lc, k);
		if (ret)
			break;
		if (o->test->id == PERF_PUT_SIGNAL_LAT) {
			ret = wait_signal(&lc, k + 1);
			lat_ns[k] = (double)(perf_now_ns() - t0);
			/* reap the CQE outside the timed part */
			if (!ret)
				ret = gdak_dev_sq_wait_timeout(q, q->sq_resv, STALL_NS, &err);
		} else {
			ret = gdak_dev_sq_wait_timeout(q, q->sq_resv, STALL_NS, &err);
			lat_ns[k] = (double)(perf_now_ns() - t0);
		}
		if (ret)
			break;
	}
	if (ret) {
		perf_report_qp_error(o->test->name, lc.c, ret);
		return ret;
	}
	return verify(&lc, iters);
}
