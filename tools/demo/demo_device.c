/* SPDX-License-Identifier: MIT */
/*
 * demo_device.c - the demo's device code, built for host threads: thread A
 * (the initiator) and thread B (the target) use nothing but the high-level
 * device API (gdak/dev/rma.h, gdak/dev/recv.h) on the exported
 * descriptors, exactly as a CUDA kernel would.
 *
 * Every operation completes before the next starts, and every result is
 * checked: the bytes a put left at the target, the bytes a get brought
 * back, each fetched value of the fetch-adds, the data behind each signal
 * (checked by B once the signal moves), each received message.  Every wait
 * is bounded (a->timeout_ns): a lost operation is a failure, never a hang.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <gdak/dev/dev.h>
#include <gdak/dev/recv.h>
#include <gdak/dev/rma.h>

#include "demo.h"

/* A <-> B hand-shakes for put+signal and send/recv. */
struct demo_sync {
	struct demo_args *a;
	_Atomic uint32_t sig_checked;	/* B: signals whose data it checked */
	_Atomic uint32_t recv_posted;	/* B: receive WQEs posted */
	_Atomic int failed;	/* either side gave up: the other stops waiting */
};

static uint8_t pattern(uint32_t iter, uint32_t j) { return (uint8_t)(iter * 31u + j * 7u + 1u); }

static void account(struct demo_op_result *r, uint64_t ns)
{
	r->ns_sum += ns;
	if (!r->iters || ns < r->ns_min)
		r->ns_min = ns;
	if (ns > r->ns_max)
		r->ns_max = ns;
	r->iters++;
}

/* Say in r why a posting call or a wait failed. */
static int failed(const struct demo_args *a, struct demo_op_result *r, int rc,
		  const struct gdak_dev_cqe *err)
{
	if (rc == -ETIMEDOUT)
		snprintf(r->why, sizeof(r->why), "no completion within %llu ms (iteration %u)",
			 (unsigned long long)(a->timeout_ns / 1000000), r->iters);
	else if (err && err->opcode)
		snprintf(r->why, sizeof(r->why), "error CQE: %s, syndrome 0x%02x (%s), WQE %llu",
			 gdak_mlx5_cqe_opcode_name(err->opcode), err->syndrome,
			 gdak_mlx5_syndrome_name(err->syndrome),
			 (unsigned long long)err->wqe_index);
	else
		snprintf(r->why, sizeof(r->why), "iteration %u: device API error %d", r->iters, rc);
	return rc ? rc : -EIO;
}

/* Posted with a ticket: wait for it (bounded). */
static int wait_ticket(struct demo_args *a, struct demo_op_result *r, int rc, uint64_t ticket)
{
	struct gdak_dev_cqe err = {0};

	if (!rc)
		rc = gdak_dev_wait_timeout(a->a, ticket, a->timeout_ns, &err);
	return rc ? failed(a, r, rc, &err) : 0;
}

/* put (get == 0) and get: DEMO_*_LEN bytes move between the two buffers
 * every iteration, a new pattern each time, and arrive byte for byte. */
static int op_move(struct demo_args *a, int get)
{
	const uint32_t off = get ? DEMO_GET_OFF : DEMO_PUT_OFF;
	const uint32_t len = get ? DEMO_GET_LEN : DEMO_PUT_LEN;
	struct demo_op_result *r = &a->res[get ? DEMO_GET : DEMO_PUT];
	struct gdak_dev_sge sge = { (uint64_t)(uintptr_t)(a->abuf + off), len, a->alkey };
	uint64_t raddr = (uint64_t)(uintptr_t)(a->bbuf + off);
	/* the side whose bytes are the truth this iteration */
	uint8_t *src = get ? a->bbuf : a->abuf;
	uint32_t i, j;

	for (i = 0; i < a->iters; i++) {
		uint64_t t0, ticket = 0;
		int rc;

		for (j = 0; j < len; j++)
			src[off + j] = pattern(get ? i + 7 : i, j);
		/* a get's target bytes change every iteration; ours are cleared */
		if (get)
			memset(a->abuf + off, 0, len);
		t0 = gdak_dev_now_ns();
		rc = get ? gdak_dev_get(a->a, &sge, raddr, a->brkey, GDAK_DEV_WQE_SIGNAL, &ticket)
			 : gdak_dev_put(a->a, &sge, raddr, a->brkey, GDAK_DEV_WQE_SIGNAL, &ticket);
		if (wait_ticket(a, r, rc, ticket))
			return -EIO;
		account(r, gdak_dev_now_ns() - t0);
		if (memcmp(a->bbuf + off, a->abuf + off, len)) {
			snprintf(r->why, sizeof(r->why), "iteration %u: %s bytes differ", i,
				 get ? "fetched" : "target");
			return -EIO;
		}
	}
	snprintf(r->why, sizeof(r->why), "%u x %u B: %s, every iteration", a->iters, len,
		 get ? "fetched bytes == target" : "target bytes == source");
	r->ok = 1;
	return 0;
}

static int op_fadd(struct demo_args *a)
{
	struct demo_op_result *r = &a->res[DEMO_FADD];
	uint64_t *counter = (uint64_t *)(void *)(a->bbuf + DEMO_FADD_OFF);
	uint64_t *fetched = (uint64_t *)(void *)(a->abuf + DEMO_FADD_OFF);
	uint32_t i;

	for (i = 0; i < a->iters; i++) {
		uint64_t t0 = gdak_dev_now_ns(), got = 0;
		struct gdak_dev_cqe err = {0};
		int rc;

		rc = gdak_dev_fetch_add_timeout(a->a, (uint64_t)(uintptr_t)counter, a->brkey, 1,
						fetched,
						a->alkey, &got, a->timeout_ns, &err);
		if (rc)
			return failed(a, r, rc, &err);
		account(r, gdak_dev_now_ns() - t0);
		if (got != DEMO_FADD_START + i) {
			snprintf(r->why, sizeof(r->why), "iteration %u: fetched %llu, want %llu", i,
				 (unsigned long long)got, (unsigned long long)(DEMO_FADD_START + i));
			return -EIO;
		}
	}
	if (*counter != DEMO_FADD_START + a->iters) {
		snprintf(r->why, sizeof(r->why), "counter %llu, want %llu",
			 (unsigned long long)*counter,
			 (unsigned long long)(DEMO_FADD_START + a->iters));
		return -EIO;
	}
	snprintf(r->why, sizeof(r->why), "fetched %u..%u in order, counter == %u", DEMO_FADD_START,
		 DEMO_FADD_START + a->iters - 1, DEMO_FADD_START + a->iters);
	r->ok = 1;
	return 0;
}

/* Spin (bounded) until *p >= want; 0 or -ETIMEDOUT. */
static int wait_u32(const struct demo_args *a, _Atomic uint32_t *p, uint32_t want,
		    _Atomic int *abort)
{
	uint64_t deadline = gdak_dev_deadline(a->timeout_ns);
	uint32_t spins = 0;

	while (atomic_load_explicit(p, memory_order_acquire) < want) {
		if (abort && atomic_load_explicit(abort, memory_order_relaxed))
			return -ECANCELED;
		if (gdak_dev_expired(deadline, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
	return 0;
}

static int op_put_signal(struct demo_args *a, struct demo_sync *s)
{
	struct demo_op_result *r = &a->res[DEMO_PUT_SIGNAL];
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)(a->abuf + DEMO_SIG_DATA_OFF),
				   DEMO_SIG_DATA_LEN, a->alkey};
	uint32_t i, j;

	for (i = 0; i < a->iters; i++) {
		uint64_t t0, ticket = 0;
		int rc;

		for (j = 0; j < DEMO_SIG_DATA_LEN; j++)
			a->abuf[DEMO_SIG_DATA_OFF + j] = pattern(i + 13, j);
		t0 = gdak_dev_now_ns();
		/* the data, then +1 on the target's signal word, one doorbell:
		 * RC executes them in order, so B seeing the signal sees the data */
		rc = gdak_dev_put_signal(a->a, &sge, (uint64_t)(uintptr_t)(a->bbuf + DEMO_SIG_DATA_OFF),
					 a->brkey, (uint64_t)(uintptr_t)(a->bbuf + DEMO_SIG_OFF),
					 a->brkey, 1, GDAK_DEV_WQE_SIGNAL, &ticket);
		if (wait_ticket(a, r, rc, ticket))
			return -EIO;
		account(r, gdak_dev_now_ns() - t0);
		/* B checks the data behind signal i+1 before we overwrite it */
		if (wait_u32(a, &s->sig_checked, i + 1, &s->failed)) {
			if (!r->why[0])
				snprintf(r->why, sizeof(r->why), "target did not confirm signal %u",
					 i + 1);
			return -EIO;
		}
	}
	snprintf(r->why, sizeof(r->why), "%u signals; target saw the %u B behind each", a->iters,
		 DEMO_SIG_DATA_LEN);
	r->ok = 1;
	return 0;
}

static int op_send(struct demo_args *a, struct demo_sync *s)
{
	struct demo_op_result *r = &a->res[DEMO_SENDRECV];
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)(a->abuf + DEMO_SEND_OFF), DEMO_SEND_LEN,
				   a->alkey};
	uint32_t i, j;

	for (i = 0; i < a->iters; i++) {
		uint64_t t0, ticket = 0;
		int rc;

		if (wait_u32(a, &s->recv_posted, i + 1, &s->failed)) {
			snprintf(r->why, sizeof(r->why), "target posted no receive for message %u", i);
			return -EIO;
		}
		for (j = 0; j < DEMO_SEND_LEN; j++)
			a->abuf[DEMO_SEND_OFF + j] = pattern(i + 29, j);
		t0 = gdak_dev_now_ns();
		rc = gdak_dev_send(a->a, &sge, GDAK_DEV_WQE_SIGNAL, &ticket);
		if (wait_ticket(a, r, rc, ticket))
			return -EIO;
		account(r, gdak_dev_now_ns() - t0);
	}
	return 0;
}

/* ---- target side (B) ------------------------------------------------------ */

static int post_recv(struct demo_args *a, uint8_t *buf)
{
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)buf, DEMO_SEND_LEN, a->blkey};

	return gdak_dev_recv_post(a->b, &sge, 1);
}

/* One receive completion, bounded, in slices so a failed initiator stops us. */
static int recv_wait(struct demo_args *a, struct gdak_dev_cqe *c, _Atomic int *abort)
{
	uint64_t waited = 0, slice = 10000000;
	int rc;

	while ((rc = gdak_dev_recv_wait_timeout(a->b, c, slice)) == -ETIMEDOUT) {
		waited += slice;
		if (atomic_load_explicit(abort, memory_order_relaxed))
			return -ECANCELED;
		if (waited >= a->timeout_ns)
			return -ETIMEDOUT;
	}
	return rc;
}

static void *target_main(void *arg)
{
	struct demo_sync *s = arg;
	struct demo_args *a = s->a;
	struct demo_op_result *rs = &a->res[DEMO_PUT_SIGNAL], *rr = &a->res[DEMO_SENDRECV];
	const uint64_t *sig = (const uint64_t *)(void *)(a->bbuf + DEMO_SIG_OFF);
	uint32_t i, j, depth = a->b->rq_wqe_cnt, slots = (DEMO_BUF_LEN - DEMO_SEND_OFF) / DEMO_SEND_LEN;

	if (slots > depth)
		slots = depth;
	/* 1. put+signal: wait for each signal, then check the data behind it */
	for (i = 0; i < a->iters; i++) {
		/* bounded in slices so a failed initiator stops us early */
		uint64_t waited = 0, slice = 10000000;

		while (gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_GE, i + 1u, slice, NULL)) {
			waited += slice;
			if (atomic_load_explicit(&s->failed, memory_order_relaxed))
				return NULL;
			if (waited >= a->timeout_ns) {
				snprintf(rs->why, sizeof(rs->why), "target: signal %u never came",
					 i + 1);
				goto fail;
			}
		}
		for (j = 0; j < DEMO_SIG_DATA_LEN; j++)
			if (a->bbuf[DEMO_SIG_DATA_OFF + j] != pattern(i + 13, j)) {
				snprintf(rs->why, sizeof(rs->why), "target: signal %u arrived but data "
					 "byte %u is wrong", i + 1, j);
				goto fail;
			}
		atomic_store_explicit(&s->sig_checked, i + 1, memory_order_release);
	}
	/* 2. send/recv: keep `slots` receives posted, check each message */
	for (i = 0; i < slots && i < a->iters; i++)
		if (post_recv(a, a->bbuf + DEMO_SEND_OFF + i * DEMO_SEND_LEN)) {
			snprintf(rr->why, sizeof(rr->why), "target: cannot post receive %u", i);
			goto fail;
		}
	atomic_store_explicit(&s->recv_posted, i, memory_order_release);
	for (i = 0; i < a->iters; i++) {
		struct gdak_dev_cqe c = {0};
		const uint8_t *m = a->bbuf + DEMO_SEND_OFF + (i % slots) * DEMO_SEND_LEN;
		int rc = recv_wait(a, &c, &s->failed);

		if (rc) {
			snprintf(rr->why, sizeof(rr->why), "target: receive %u: %s", i,
				 rc == -ETIMEDOUT ? "no receive CQE"
				 : rc == -ECANCELED ? "initiator failed" : "error CQE");
			goto fail;
		}
		if (c.opcode != MLX5_CQE_RESP_SEND || c.byte_cnt != DEMO_SEND_LEN) {
			snprintf(rr->why, sizeof(rr->why), "target: receive %u: CQE %s, %u bytes", i,
				 gdak_mlx5_cqe_opcode_name(c.opcode), c.byte_cnt);
			goto fail;
		}
		for (j = 0; j < DEMO_SEND_LEN; j++)
			if (m[j] != pattern(i + 29, j)) {
				snprintf(rr->why, sizeof(rr->why), "target: message %u byte %u wrong",
					 i, j);
				goto fail;
			}
		if (i + slots < a->iters) {
			if (post_recv(a, (uint8_t *)m)) {
				snprintf(rr->why, sizeof(rr->why), "target: cannot repost receive");
				goto fail;
			}
			atomic_fetch_add_explicit(&s->recv_posted, 1, memory_order_release);
		}
	}
	snprintf(rr->why, sizeof(rr->why), "%u messages of %u B received intact, in order",
		 a->iters, DEMO_SEND_LEN);
	rr->ok = 1;
	return NULL;
fail:
	atomic_store_explicit(&s->failed, 1, memory_order_relaxed);
	return NULL;
}

int demo_device_run(struct demo_args *a)
{
	static const char *const names[DEMO_NOPS] = {"put", "get", "fetch_add",
						     "put_signal+wait", "send/recv"};
	static const uint32_t bytes[DEMO_NOPS] = {DEMO_PUT_LEN, DEMO_GET_LEN, 8,
						  DEMO_SIG_DATA_LEN, DEMO_SEND_LEN};
	struct demo_sync s = {.a = a};
	pthread_t tb;
	int i, rc;

	for (i = 0; i < DEMO_NOPS; i++) {
		memset(&a->res[i], 0, sizeof(a->res[i]));
		a->res[i].name = names[i];
		a->res[i].bytes = bytes[i];
	}
	*(uint64_t *)(void *)(a->bbuf + DEMO_FADD_OFF) = DEMO_FADD_START;
	*(uint64_t *)(void *)(a->bbuf + DEMO_SIG_OFF) = 0;
	/* B starts when its first part (put+signal) does: a target thread
	 * polling for a signal through put, get and fetch-add would be one more
	 * runnable thread on the CPUs that A and the NIC thread take turns on,
	 * and on two cores the turns are what one-at-a-time operations cost */
	rc = op_move(a, 0);
	if (!rc)
		rc = op_move(a, 1);
	if (!rc)
		rc = op_fadd(a);
	if (rc)
		return rc;
	if (pthread_create(&tb, NULL, target_main, &s))
		return -EAGAIN;
	rc = op_put_signal(a, &s);
	if (!rc)
		rc = op_send(a, &s);
	if (rc)
		atomic_store(&s.failed, 1);
	pthread_join(tb, NULL);
	for (i = 0; i < DEMO_NOPS && !rc; i++)
		if (!a->res[i].ok)
			rc = -EIO;
	return rc;
}
