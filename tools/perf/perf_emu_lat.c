/* SPDX-License-Identifier: MIT */
/*
 * perf_emu_lat.c - latency tests (write_lat, read_lat, atomic_lat,
 * put_signal_lat) through the high-level device API (gdak/dev/rma.h: put,
 * get, fetch-add, put+signal, wait): one operation at a time on the first
 * connection, each
 * timed from just before its WQE is built to the moment the poster sees the
 * result - its CQE (write, read, atomic), or the signal word changing in the
 * target's memory (put_signal: what the peer waiting on it would see).
 * The NIC model polls in pure-spin mode unless --poll says otherwise.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/dev.h>
#include <gdak/dev/rma.h>

#include "perf.h"

#define STALL_NS (10ull * 1000000000ull)

struct lat_ctx {
	const struct perf_opts *o;
	struct perf_conn *c;
	size_t size, slots;
	uint64_t *signal;	/* put_signal_lat: in the target region, after the data */
};

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

/* Operation k, waited for, as device code that needs the result before it
 * goes on does it.  put_signal_lat waits on the target's signal word (what
 * the peer sees), then for its own completion. */
static int run_op(const struct lat_ctx *lc, uint64_t k)
{
	struct perf_conn *c = lc->c;
	struct gdak_dev_qp *q = c->dqp;
	size_t off = (size_t)(k % lc->slots) * lc->size;
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)(c->lbuf + off), (uint32_t)lc->size,
				   gdak_mr_lkey(c->lmr)};
	uint64_t raddr = c->raddr + off, ticket = 0, old;
	uint32_t rkey = c->rkey;
	struct gdak_dev_cqe err;
	int rc;

	switch (lc->o->test->id) {
	case PERF_WRITE_LAT:
		rc = gdak_dev_put(q, &sge, raddr, rkey, GDAK_DEV_WQE_SIGNAL, &ticket);
		break;
	case PERF_READ_LAT:
		rc = gdak_dev_get(q, &sge, raddr, rkey, GDAK_DEV_WQE_SIGNAL, &ticket);
		break;
	case PERF_ATOMIC_LAT:
		return gdak_dev_fetch_add_timeout(q, c->raddr, rkey, 1,
						  (uint64_t *)(void *)(c->lbuf + (k % lc->slots) * 8),
						  gdak_mr_lkey(c->lmr), &old, STALL_NS, &err);
	case PERF_PUT_SIGNAL_LAT:
		rc = gdak_dev_put_signal(q, &sge, raddr, rkey, (uint64_t)(uintptr_t)lc->signal, rkey,
					 1, GDAK_DEV_WQE_SIGNAL, &ticket);
		if (!rc)
			rc = wait_signal(lc, k + 1);
		break;
	default:
		return -EINVAL;
	}
	if (rc)
		return rc;
	return gdak_dev_wait_timeout(q, ticket, STALL_NS, &err);
}

/* the 8 bytes after the write tests' slots are the signal word: zeroed too */
static void prepare(const struct lat_ctx *lc)
{
	perf_prepare(lc->c, lc->slots, lc->size, lc->o->test->id == PERF_READ_LAT,
		     lc->o->test->id == PERF_ATOMIC_LAT, 8);
}

static int verify(struct perf_env *env, const struct lat_ctx *lc, uint64_t iters)
{
	struct perf_conn *c = lc->c;
	const char *name = lc->o->test->name;
	size_t off = (size_t)((iters - 1) % lc->slots) * lc->size;
	int rd = lc->o->test->id == PERF_READ_LAT;
	uint8_t *dst = (rd ? c->lbuf : c->rbuf) + off;
	const uint8_t *src = (rd ? c->rbuf : c->lbuf) + off;

	if (!c->rbuf)
		return perf_net_verify(env, lc->o, c, 0, lc->size, iters, lc->slots);
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
	uint64_t k;
	int ret = 0;

	/* put_signal_lat watches the target's memory: same process only
	 * (perf_net_setup refuses it between processes) */
	lc.signal = lc.c->rbuf ? (uint64_t *)(void *)(lc.c->rbuf + lc.slots * size) : NULL;
	/* put+signal's fetched value lands in the QP's scratch word: after the
	 * local data slots, never on a source; set every time, since a larger
	 * size may have brought a new local region and key */
	q->scratch_addr = (uint64_t)(uintptr_t)(lc.c->lbuf + lc.slots * size + 8);
	q->scratch_lkey = gdak_mr_lkey(lc.c->lmr);
	prepare(&lc);
	for (k = 0; k < iters; k++) {
		uint64_t t0 = perf_now_ns();

		ret = run_op(&lc, k);
		lat_ns[k] = (double)(perf_now_ns() - t0);
		if (ret)
			break;
	}
	if (ret) {
		perf_report_qp_error(o->test->name, lc.c, ret);
		return ret;
	}
	return verify(env, &lc, iters);
}
