/* SPDX-License-Identifier: MIT */
/*
 * perf_emu_rate.c - message-rate / bandwidth tests (write_bw, read_bw,
 * atomic_rate, send_bw) through the low-level device API, as device code
 * that cares about rate posts: reserve WQEBBs, build N WQEs, one doorbell for
 * the batch (gdak_dev_sq_submit), a CQE only every --signal-every WQEs and
 * on the last one, completions reaped only when the ring is full.
 *
 * Each posting thread owns the connections t, t+T, t+2T, ... and
 * round-robins batches over them.  The clock runs from the moment every
 * thread may start to the moment every WQE of every connection completed.
 * After the clock stops, the data the last iterations moved is verified.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/dev.h>
#include <gdak/dev/recv.h>

#include "perf.h"

/* No progress at all for this long means the NIC lost work: fail, never hang. */
#define STALL_NS (10ull * 1000000000ull)

struct rate_ctx {
	struct perf_env *env;
	const struct perf_opts *o;
	size_t size, slots;
	uint64_t iters;		/* per connection */
	_Atomic int go;
	_Atomic int stop;	/* a thread failed: the others give up */
	int recv_ret;		/* send_bw: the receiving thread's result */
};

struct rate_thread {
	struct rate_ctx *rc;
	unsigned first;		/* first connection; then every o->threads-th */
	int ret;
	struct perf_conn *failed;
	pthread_t tid;
};

/* Build the k-th operation of a connection at WQEBB idx; WQEBBs used, 0 if
 * the request could not be encoded. */
static uint32_t build(const struct rate_ctx *rc, struct perf_conn *c, uint64_t k, uint64_t idx,
		      uint32_t flags)
{
	size_t off = (size_t)(k % rc->slots) * rc->size;
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)(c->lbuf + off), (uint32_t)rc->size,
				   gdak_mr_lkey(c->lmr)};
	uint64_t raddr = c->raddr + off;
	uint32_t rkey = c->rkey;

	switch (rc->o->test->id) {
	case PERF_WRITE_BW:
		return gdak_dev_wqe_write(c->dqp, idx, flags, raddr, rkey, &sge, 1);
	case PERF_READ_BW:
		return gdak_dev_wqe_read(c->dqp, idx, flags, raddr, rkey, &sge, 1);
	case PERF_ATOMIC_RATE:
		/* every fetch-add hits the counter at the start of the target
		 * region; the fetched values land in consecutive local slots */
		return gdak_dev_wqe_fetch_add(c->dqp, idx, flags, c->raddr, rkey,
					      1, (uint64_t)(uintptr_t)(c->lbuf + (k % rc->slots) * 8),
					      gdak_mr_lkey(c->lmr));
	case PERF_SEND_BW:
		return gdak_dev_wqe_send(c->dqp, idx, flags, &sge, 1);
	default:
		return 0;
	}
}

/* Post one batch on c if the ring has room: WQEs posted, 0 when full, or
 * a negative errno (an error CQE, an unencodable WQE). */
static int post_batch(const struct rate_ctx *rc, struct perf_conn *c, uint64_t *k)
{
	const struct perf_opts *o = rc->o;
	struct gdak_dev_qp *q = c->dqp;
	uint64_t n = rc->iters - *k, j, idx, last = 0;

	if (n > o->wqes_per_db)
		n = o->wqes_per_db;
	if (o->test->id == PERF_SEND_BW) {
		/* a SEND needs a receive WQE at the target: post only against
		 * the receives it announced (credits), never into RNR */
		uint64_t credits = atomic_load_explicit(&c->recv_posted, memory_order_acquire) -
				   c->recv_base - *k;

		if (credits < n)
			n = credits;
		if (!n)
			return 0;
	}
	if (gdak_dev_sq_free_bbs(q) < n) {
		int r = gdak_dev_sq_drain(q);

		if (r < 0)
			return r;
		if (gdak_dev_sq_free_bbs(q) < n)
			return 0;
	}
	for (j = 0; j < n; j++) {
		uint64_t kk = *k + j;
		uint32_t flags = ((kk + 1) % o->signal_every == 0 || kk + 1 == rc->iters)
				 ? GDAK_DEV_WQE_SIGNAL : 0;

		idx = gdak_dev_sq_reserve(q, 1);
		if (!build(rc, c, kk, idx, flags))
			return -EINVAL;
		last = idx;
	}
	gdak_dev_sq_submit(q, last, q->sq_resv);
	*k += n;
	return (int)n;
}

static void *rate_thread_fn(void *arg)
{
	struct rate_thread *t = arg;
	struct rate_ctx *rc = t->rc;
	unsigned step = rc->o->threads, i, left;
	uint64_t *k = calloc(rc->env->nconn, sizeof(*k)), stall_since = 0;
	struct perf_backoff bo = {0};
	struct gdak_dev_cqe err;

	if (!k) {
		t->ret = -ENOMEM;
		return NULL;
	}
	while (!atomic_load_explicit(&rc->go, memory_order_acquire))
		perf_backoff(&bo);
	perf_backoff_reset(&bo);
	do {
		int progressed = 0;

		if (atomic_load_explicit(&rc->stop, memory_order_relaxed)) {
			t->ret = -ECANCELED;
			goto out;
		}

		left = 0;
		for (i = t->first; i < rc->env->nconn; i += step) {
			int r;

			if (k[i] == rc->iters)
				continue;
			r = post_batch(rc, &rc->env->conn[i], &k[i]);
			if (r < 0) {
				t->ret = r;
				t->failed = &rc->env->conn[i];
				goto out;
			}
			progressed |= r > 0;
			left += k[i] < rc->iters;
		}
		if (progressed) {
			perf_backoff_reset(&bo);
			stall_since = 0;
		} else if (left) {
			/* the clock only now and then: it costs as much as a poll */
			if ((bo.n & 255) == 255) {
				uint64_t now = perf_now_ns();

				if (!stall_since) {
					stall_since = now;
				} else if (now - stall_since > STALL_NS) {
					t->ret = -ETIMEDOUT;
					t->failed = &rc->env->conn[t->first];
					goto out;
				}
			}
			perf_backoff(&bo);
		}
	} while (left);
	for (i = t->first; i < rc->env->nconn; i += step) {
		struct gdak_dev_qp *q = rc->env->conn[i].dqp;
		int r = gdak_dev_sq_wait_timeout(q, q->sq_resv, STALL_NS, &err);

		if (r) {
			t->ret = r;
			t->failed = &rc->env->conn[i];
			break;
		}
	}
out:
	if (t->ret)
		atomic_store_explicit(&rc->stop, 1, memory_order_relaxed);
	free(k);
	return NULL;
}

/* ---- send_bw: the target side ------------------------------------------------ */

/* Post receive WQEs up to number `upto` (absolute), one receive doorbell
 * record for the batch, then announce them to the sender (credits). */
static int post_recvs(const struct rate_ctx *rc, struct perf_conn *c, uint64_t upto)
{
	struct gdak_dev_qp *q = c->dpeer;
	uint64_t j = atomic_load_explicit(&c->recv_posted, memory_order_relaxed);

	if (upto <= j)
		return 0;
	for (; j < upto; j++) {
		struct gdak_dev_sge sge = {
			(uint64_t)(uintptr_t)(c->rbuf + ((j - c->recv_base) % rc->slots) *
					      rc->size),
			(uint32_t)rc->size, gdak_mr_lkey(c->rmr)};
		int r = gdak_dev_rwqe_set(q, j, &sge, 1);

		if (r)
			return r;
	}
	q->rq_pi = upto;
	gdak_dev_rq_update_dbrec(q, upto);
	atomic_store_explicit(&c->recv_posted, upto, memory_order_release);
	return 0;
}

/* Before the clock: fill every target's receive queue. */
static int prepost_recvs(struct rate_ctx *rc)
{
	unsigned i;

	for (i = 0; i < rc->env->nconn; i++) {
		struct perf_conn *c = &rc->env->conn[i];
		uint64_t n = c->dpeer->rq_wqe_cnt < rc->iters ? c->dpeer->rq_wqe_cnt : rc->iters;
		int r;

		/* a fresh round starts where the last one left the queue */
		atomic_store(&c->recv_posted, c->dpeer->rq_pi);
		c->recv_base = c->dpeer->rq_pi;
		r = post_recvs(rc, c, c->recv_base + n);
		if (r)
			return r;
	}
	return 0;
}

/* One thread plays every target: reap each receive completion, check it,
 * post the next receive (a credit for the sender). */
static void *recv_thread_fn(void *arg)
{
	struct rate_ctx *rc = arg;
	unsigned n = rc->env->nconn, i, left = n;
	uint64_t *got = calloc(n, sizeof(*got)), stall_since = 0;
	struct perf_backoff bo = {0};
	int ret = 0;

	if (!got) {
		ret = -ENOMEM;
		goto out;
	}
	while (left) {
		int any = 0;

		if (atomic_load_explicit(&rc->stop, memory_order_relaxed)) {
			ret = -ECANCELED;
			goto out;
		}
		for (i = 0; i < n; i++) {
			struct perf_conn *c = &rc->env->conn[i];
			struct gdak_dev_cqe cqe;
			int r;

			if (got[i] == rc->iters)
				continue;
			while ((r = gdak_dev_recv_poll(c->dpeer, &cqe)) != 0) {
				if (r < 0 || cqe.opcode != MLX5_CQE_RESP_SEND ||
				    cqe.byte_cnt != rc->size) {
					fprintf(stderr, "gdak-perf: send_bw: receive %llu on QP 0x%x: "
						"%s, %u bytes (want RESP_SEND, %zu)\n",
						(unsigned long long)got[i], c->dpeer->qpn,
						gdak_mlx5_cqe_opcode_name(cqe.opcode), cqe.byte_cnt,
						rc->size);
					ret = -EIO;
					goto out;
				}
				any = 1;
				if (++got[i] == rc->iters) {
					left--;
					break;
				}
			}
			/* repost in batches, once half the queue was consumed:
			 * one doorbell record per batch, as the sender rings */
			if (got[i] < rc->iters) {
				uint64_t posted = atomic_load_explicit(&c->recv_posted,
								       memory_order_relaxed) - c->recv_base;
				uint64_t cnt = c->dpeer->rq_wqe_cnt;

				if (posted < rc->iters && posted - got[i] <= cnt / 2) {
					uint64_t upto = got[i] + cnt < rc->iters ? got[i] + cnt
										 : rc->iters;

					ret = post_recvs(rc, c, c->recv_base + upto);
					if (ret)
						goto out;
				}
			}
		}
		if (any) {
			perf_backoff_reset(&bo);
			stall_since = 0;
		} else {
			if ((bo.n & 255) == 255) {
				uint64_t now = perf_now_ns();

				if (!stall_since) {
					stall_since = now;
				} else if (now - stall_since > STALL_NS) {
					fprintf(stderr, "gdak-perf: send_bw: no receive completion for "
						"10 s\n");
					ret = -ETIMEDOUT;
					goto out;
				}
			}
			perf_backoff(&bo);
		}
	}
out:
	if (ret)
		atomic_store_explicit(&rc->stop, 1, memory_order_relaxed);
	rc->recv_ret = ret;
	free(got);
	return NULL;
}

static void prepare(const struct rate_ctx *rc, struct perf_conn *c)
{
	perf_prepare(c, rc->slots, rc->size, rc->o->test->id == PERF_READ_BW,
		     rc->o->test->id == PERF_ATOMIC_RATE, 0);
}

/* The last iterations' data, after the clock stopped. */
static int verify(const struct rate_ctx *rc, struct perf_conn *c, unsigned ci)
{
	const char *name = rc->o->test->name;
	size_t n = (rc->iters < rc->slots ? rc->iters : rc->slots) * rc->size;
	uint8_t *dst = rc->o->test->id == PERF_READ_BW ? c->lbuf : c->rbuf;
	const uint8_t *src = rc->o->test->id == PERF_READ_BW ? c->rbuf : c->lbuf;

	if (!c->rbuf)
		return perf_net_verify(rc->env, rc->o, c, ci, rc->size, rc->iters, rc->slots);
	if (perf_test_corrupt())
		dst[0] ^= 0xff;
	if (rc->o->test->id == PERF_ATOMIC_RATE) {
		uint64_t counter, fetched, want = rc->iters - 1;

		memcpy(&counter, c->rbuf, 8);
		memcpy(&fetched, c->lbuf + ((rc->iters - 1) % rc->slots) * 8, 8);
		fetched = gdak_be64toh(fetched);	/* ConnectX returns it big-endian */
		if (counter != rc->iters || fetched != want) {
			perf_verify_fail(name, rc->size, "connection %u: counter %llu (want %llu), "
					 "last fetched value %llu (want %llu)", ci,
					 (unsigned long long)counter, (unsigned long long)rc->iters,
					 (unsigned long long)fetched, (unsigned long long)want);
			return -EIO;
		}
		return 0;
	}
	if (memcmp(dst, src, n)) {
		size_t i = 0;

		while (i < n && dst[i] == src[i])
			i++;
		perf_verify_fail(name, rc->size, "connection %u: byte %zu of the destination is "
				 "0x%02x, the source has 0x%02x", ci, i, dst[i], src[i]);
		return -EIO;
	}
	return 0;
}

int perf_emu_rate(struct perf_env *env, const struct perf_opts *o, size_t size, uint64_t iters,
		  struct perf_result *round)
{
	struct rate_ctx rc = {
		.env = env, .o = o, .size = size, .iters = iters,
		.slots = perf_region_slots(size),
	};
	struct rate_thread *th;
	unsigned i, started = 0;
	pthread_t rtid;
	int recv_started = 0;
	uint64_t t0, t1;
	int ret = 0;

	for (i = 0; i < env->nconn; i++)
		prepare(&rc, &env->conn[i]);
	if (o->test->id == PERF_SEND_BW) {
		ret = prepost_recvs(&rc);
		if (ret)
			return ret;
	}
	th = calloc(o->threads, sizeof(*th));
	if (!th)
		return -ENOMEM;
	if (o->test->id == PERF_SEND_BW) {
		if (pthread_create(&rtid, NULL, recv_thread_fn, &rc)) {
			free(th);
			return -EAGAIN;
		}
		recv_started = 1;
	}
	for (i = 0; i < o->threads; i++) {
		th[i].rc = &rc;
		th[i].first = i;
		/* the last thread is the caller itself: one posting thread, no extra thread */
		if (i + 1 < o->threads) {
			if (pthread_create(&th[i].tid, NULL, rate_thread_fn, &th[i])) {
				ret = -EAGAIN;
				break;
			}
			started++;
		}
	}
	t0 = perf_now_ns();
	atomic_store_explicit(&rc.go, 1, memory_order_release);
	if (!ret)
		rate_thread_fn(&th[o->threads - 1]);
	for (i = 0; i < started; i++)
		pthread_join(th[i].tid, NULL);
	if (recv_started) {
		/* the receiver runs until every message arrived (or stop) */
		if (ret)
			atomic_store(&rc.stop, 1);
		pthread_join(rtid, NULL);
	}
	t1 = perf_now_ns();
	/* the first real failure; -ECANCELED only says another thread failed */
	for (i = 0; i < o->threads && !ret; i++)
		if (th[i].ret && th[i].ret != -ECANCELED) {
			ret = th[i].ret;
			perf_report_qp_error(o->test->name, th[i].failed, ret);
		}
	if (!ret && rc.recv_ret)
		ret = rc.recv_ret;
	for (i = 0; i < o->threads && !ret; i++)
		ret = th[i].ret;
	free(th);
	if (ret)
		return ret;
	for (i = 0; i < env->nconn; i++) {
		ret = verify(&rc, &env->conn[i], i);
		if (ret)
			return ret;
	}
	round->msg_rate = (double)iters * env->nconn * 1e9 / (double)(t1 - t0 ? t1 - t0 : 1);
	round->bw = round->msg_rate * (double)size;
	round->verified = 1;
	return 0;
}
