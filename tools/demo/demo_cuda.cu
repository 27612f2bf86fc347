/* SPDX-License-Identifier: MIT */
/*
 * demo_cuda.cu - the demo's device code as a CUDA kernel: block 0 is the
 * initiator (A), block 1 the target (B), one thread each, using nothing but
 * the high-level device API (gdak/dev/rma.h, recv.h) on the exported
 * descriptors - the same operations, iteration counts and checks as the
 * host-thread build (demo_device.c).
 *
 * The data lives in GPU memory (GDAK_MEM_GPU), so every WRITE/READ/SEND
 * and atomic goes through the NIC model's CUDA copy engine (docs/CUDA.md).
 * The kernel checks every iteration as the host path does; afterwards the
 * host copies both buffers back and checks the last iteration's bytes
 * itself.  Times are SM cycles (clock64) per operation, converted to ns
 * with the ratio of %globaltimer to clock64 over the whole kernel
 * (%globaltimer alone ticks too coarsely for single microseconds).
 *
 * GPU buffers need the context the QPs live in.  struct demo_args carries
 * it when the caller sets a->ctx; when it does not, this file opens its own
 * context and QP pair (same shapes as demo_main.c's) so the data can still
 * be in GPU memory.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gdak/gdak.h>
#include <gdak/dev/dev.h>
#include <gdak/dev/recv.h>
#include <gdak/dev/rma.h>

extern "C" {
#include "demo.h"
}

/* Why an operation failed, filled by the kernel, worded by the host. */
enum kfail {
	KF_NONE,
	KF_TIMEOUT,		/* no completion (rc -ETIMEDOUT) */
	KF_CQE,			/* error CQE in err */
	KF_API,			/* device API error rc */
	KF_BYTES,		/* iteration at: byte j differs */
	KF_FADD,		/* fetched got, want want */
	KF_COUNTER,		/* counter got, want want */
	KF_SIG_UNCONFIRMED,	/* target did not confirm signal at+1 */
	KF_TGT_SIG_NEVER,	/* target: signal at+1 never came */
	KF_TGT_SIG_DATA,	/* target: data byte j behind signal at+1 wrong */
	KF_TGT_POST,		/* target: cannot post receive at */
	KF_TGT_RECV,		/* target: receive at: rc */
	KF_TGT_RECV_CQE,	/* target: receive at: CQE opcode / byte_cnt in err */
	KF_TGT_MSG,		/* target: message at byte j wrong */
	KF_NO_RECV,		/* initiator: target posted no receive for message at */
};

struct kres {
	uint32_t iters, ok, fail, at, j;
	int rc;
	uint64_t cyc_sum, cyc_min, cyc_max, got, want;
	struct gdak_dev_cqe err;
};

struct kout {
	struct kres r[DEMO_NOPS];
	uint64_t t0, t1, c0, c1;	/* block 0: %globaltimer and clock64, start and end */
	volatile uint32_t sig_checked, recv_posted;	/* B -> A hand-shakes */
	volatile int failed;		/* either side gave up */
};

struct kargs {
	struct gdak_dev_qp *a, *b;
	uint8_t *abuf, *bbuf;		/* GPU memory */
	uint32_t alkey, blkey, brkey, iters;
	uint64_t timeout_ns;
	struct kout *o;			/* GPU memory */
};

__device__ static uint8_t kpattern(uint32_t iter, uint32_t j)
{
	return (uint8_t)(iter * 31u + j * 7u + 1u);
}

/* Host copy of the same pattern, for the check after the kernel. */
static uint8_t hpattern(uint32_t iter, uint32_t j) { return (uint8_t)(iter * 31u + j * 7u + 1u); }

__device__ static void kaccount(struct kres *r, uint64_t cyc)
{
	r->cyc_sum += cyc;
	if (!r->iters || cyc < r->cyc_min)
		r->cyc_min = cyc;
	if (cyc > r->cyc_max)
		r->cyc_max = cyc;
	r->iters++;
}

__device__ static int kfailed(struct kres *r, int rc, const struct gdak_dev_cqe *err)
{
	r->rc = rc;
	r->at = r->iters;
	if (rc == -ETIMEDOUT) {
		r->fail = KF_TIMEOUT;
	} else if (err && err->opcode) {
		r->fail = KF_CQE;
		r->err = *err;
	} else {
		r->fail = KF_API;
	}
	return rc ? rc : -EIO;
}

__device__ static int kwait_ticket(const struct kargs *x, struct kres *r, int rc, uint64_t ticket)
{
	struct gdak_dev_cqe err = {};

	if (!rc)
		rc = gdak_dev_wait_timeout(x->a, ticket, x->timeout_ns, &err);
	return rc ? kfailed(r, rc, &err) : 0;
}

/* Bytes the NIC wrote are read with volatile loads: the copy engine wrote
 * them behind the SM's L1.  First differing byte, or -1. */
__device__ static int kdiff(const uint8_t *p, const uint8_t *q, uint32_t n)
{
	const volatile uint8_t *vp = p, *vq = q;

	for (uint32_t j = 0; j < n; j++)
		if (vp[j] != vq[j])
			return (int)j;
	return -1;
}

__device__ static int kbad(struct kres *r, uint32_t fail, uint32_t at, uint32_t j)
{
	r->fail = fail;
	r->at = at;
	r->j = j;
	return -EIO;
}

/* Spin (bounded) until *p >= want; 0, -ECANCELED or -ETIMEDOUT. */
__device__ static int kwait_u32(const struct kargs *x, volatile uint32_t *p, uint32_t want)
{
	uint64_t deadline = gdak_dev_deadline(x->timeout_ns);
	uint32_t spins = 0;

	while (*p < want) {
		if (x->o->failed)
			return -ECANCELED;
		if (gdak_dev_expired(deadline, spins))
			return -ETIMEDOUT;
		gdak_dev_backoff(&spins);
	}
	__threadfence();
	return 0;
}

/* put (get == 0) and get: DEMO_*_LEN bytes move between the two buffers
 * every iteration, a new pattern each time, and arrive byte for byte. */
__device__ static int kop_move(const struct kargs *x, int get)
{
	const uint32_t off = get ? DEMO_GET_OFF : DEMO_PUT_OFF;
	const uint32_t len = get ? DEMO_GET_LEN : DEMO_PUT_LEN;
	struct kres *r = &x->o->r[get ? DEMO_GET : DEMO_PUT];
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)(x->abuf + off), len, x->alkey};
	uint64_t raddr = (uint64_t)(uintptr_t)(x->bbuf + off);
	int d;

	for (uint32_t i = 0; i < x->iters; i++) {
		uint64_t c0, ticket = 0;
		int rc;

		/* a get's target bytes change every iteration; ours are cleared */
		for (uint32_t j = 0; j < len; j++) {
			if (get) {
				x->bbuf[off + j] = kpattern(i + 7, j);
				x->abuf[off + j] = 0;
			} else {
				x->abuf[off + j] = kpattern(i, j);
			}
		}
		c0 = clock64();
		rc = get ? gdak_dev_get(x->a, &sge, raddr, x->brkey, GDAK_DEV_WQE_SIGNAL, &ticket)
			 : gdak_dev_put(x->a, &sge, raddr, x->brkey, GDAK_DEV_WQE_SIGNAL, &ticket);
		if (kwait_ticket(x, r, rc, ticket))
			return -EIO;
		kaccount(r, clock64() - c0);
		d = kdiff(x->bbuf + off, x->abuf + off, len);
		if (d >= 0)
			return kbad(r, KF_BYTES, i, (uint32_t)d);
	}
	r->ok = 1;
	return 0;
}

__device__ static int kop_fadd(const struct kargs *x)
{
	struct kres *r = &x->o->r[DEMO_FADD];
	uint64_t *counter = (uint64_t *)(void *)(x->bbuf + DEMO_FADD_OFF);
	uint64_t *fetched = (uint64_t *)(void *)(x->abuf + DEMO_FADD_OFF);

	for (uint32_t i = 0; i < x->iters; i++) {
		uint64_t c0 = clock64(), got = 0;
		struct gdak_dev_cqe err = {};
		int rc;

		rc = gdak_dev_fetch_add_timeout(x->a, (uint64_t)(uintptr_t)counter, x->brkey, 1,
						fetched, x->alkey, &got, x->timeout_ns, &err);
		if (rc)
			return kfailed(r, rc, &err);
		kaccount(r, clock64() - c0);
		if (got != DEMO_FADD_START + i) {
			r->got = got;
			r->want = DEMO_FADD_START + i;
			return kbad(r, KF_FADD, i, 0);
		}
	}
	r->got = *(volatile uint64_t *)counter;
	r->want = DEMO_FADD_START + x->iters;
	if (r->got != r->want)
		return kbad(r, KF_COUNTER, x->iters, 0);
	r->ok = 1;
	return 0;
}

__device__ static int kop_put_signal(const struct kargs *x)
{
	struct kres *r = &x->o->r[DEMO_PUT_SIGNAL];
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)(x->abuf + DEMO_SIG_DATA_OFF),
				   DEMO_SIG_DATA_LEN, x->alkey};

	for (uint32_t i = 0; i < x->iters; i++) {
		uint64_t c0, ticket = 0;
		int rc;

		for (uint32_t j = 0; j < DEMO_SIG_DATA_LEN; j++)
			x->abuf[DEMO_SIG_DATA_OFF + j] = kpattern(i + 13, j);
		c0 = clock64();
		/* the data, then +1 on the target's signal word, one doorbell:
		 * RC executes them in order, so B seeing the signal sees the data */
		rc = gdak_dev_put_signal(x->a, &sge,
					 (uint64_t)(uintptr_t)(x->bbuf + DEMO_SIG_DATA_OFF), x->brkey,
					 (uint64_t)(uintptr_t)(x->bbuf + DEMO_SIG_OFF), x->brkey, 1,
					 GDAK_DEV_WQE_SIGNAL, &ticket);
		if (kwait_ticket(x, r, rc, ticket))
			return -EIO;
		kaccount(r, clock64() - c0);
		/* B checks the data behind signal i+1 before we overwrite it */
		if (kwait_u32(x, &x->o->sig_checked, i + 1)) {
			if (!r->fail)
				kbad(r, KF_SIG_UNCONFIRMED, i, 0);
			return -EIO;
		}
	}
	r->ok = 1;
	return 0;
}

__device__ static int kop_send(const struct kargs *x)
{
	struct kres *r = &x->o->r[DEMO_SENDRECV];
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)(x->abuf + DEMO_SEND_OFF), DEMO_SEND_LEN,
				   x->alkey};

	for (uint32_t i = 0; i < x->iters; i++) {
		uint64_t c0, ticket = 0;
		int rc;

		if (kwait_u32(x, &x->o->recv_posted, i + 1)) {
			if (!r->fail)
				kbad(r, KF_NO_RECV, i, 0);
			return -EIO;
		}
		for (uint32_t j = 0; j < DEMO_SEND_LEN; j++)
			x->abuf[DEMO_SEND_OFF + j] = kpattern(i + 29, j);
		c0 = clock64();
		rc = gdak_dev_send(x->a, &sge, GDAK_DEV_WQE_SIGNAL, &ticket);
		if (kwait_ticket(x, r, rc, ticket))
			return -EIO;
		kaccount(r, clock64() - c0);
	}
	return 0;
}

__device__ static void kinitiator(const struct kargs *x)
{
	struct kout *o = x->o;
	int rc;

	o->t0 = gdak_dev_now_ns();
	o->c0 = clock64();
	rc = kop_move(x, 0);
	if (!rc)
		rc = kop_move(x, 1);
	if (!rc)
		rc = kop_fadd(x);
	if (!rc)
		rc = kop_put_signal(x);
	if (!rc)
		rc = kop_send(x);
	o->c1 = clock64();
	o->t1 = gdak_dev_now_ns();
	if (rc) {
		o->failed = 1;
		__threadfence();
	}
}

/* ---- target side (B) ------------------------------------------------------ */

__device__ static int kpost_recv(const struct kargs *x, uint8_t *buf)
{
	struct gdak_dev_sge sge = {(uint64_t)(uintptr_t)buf, DEMO_SEND_LEN, x->blkey};

	return gdak_dev_recv_post(x->b, &sge, 1);
}

__device__ static void ktarget(const struct kargs *x)
{
	struct kout *o = x->o;
	struct kres *rs = &o->r[DEMO_PUT_SIGNAL], *rr = &o->r[DEMO_SENDRECV];
	const uint64_t *sig = (const uint64_t *)(void *)(x->bbuf + DEMO_SIG_OFF);
	const volatile uint8_t *vb = x->bbuf;
	uint32_t i, depth = x->b->rq_wqe_cnt, slots = (DEMO_BUF_LEN - DEMO_SEND_OFF) / DEMO_SEND_LEN;
	const uint64_t slice = 10000000;

	if (slots > depth)
		slots = depth;
	/* 1. put+signal: wait for each signal, then check the data behind it */
	for (i = 0; i < x->iters; i++) {
		uint64_t waited = 0;

		while (gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_GE, i + 1u, slice, NULL)) {
			waited += slice;
			if (o->failed)
				return;
			if (waited >= x->timeout_ns) {
				kbad(rs, KF_TGT_SIG_NEVER, i, 0);
				goto fail;
			}
		}
		for (uint32_t j = 0; j < DEMO_SIG_DATA_LEN; j++)
			if (vb[DEMO_SIG_DATA_OFF + j] != kpattern(i + 13, j)) {
				kbad(rs, KF_TGT_SIG_DATA, i, j);
				goto fail;
			}
		__threadfence();
		o->sig_checked = i + 1;
	}
	/* 2. send/recv: keep `slots` receives posted, check each message */
	for (i = 0; i < slots && i < x->iters; i++)
		if (kpost_recv(x, x->bbuf + DEMO_SEND_OFF + i * DEMO_SEND_LEN)) {
			kbad(rr, KF_TGT_POST, i, 0);
			goto fail;
		}
	__threadfence();
	o->recv_posted = i;
	for (i = 0; i < x->iters; i++) {
		struct gdak_dev_cqe c = {};
		uint8_t *m = x->bbuf + DEMO_SEND_OFF + (i % slots) * DEMO_SEND_LEN;
		uint64_t waited = 0;
		int rc;

		while ((rc = gdak_dev_recv_wait_timeout(x->b, &c, slice)) == -ETIMEDOUT) {
			waited += slice;
			if (o->failed) {
				rc = -ECANCELED;
				break;
			}
			if (waited >= x->timeout_ns)
				break;
		}
		if (rc) {
			rr->rc = rc;
			kbad(rr, KF_TGT_RECV, i, 0);
			goto fail;
		}
		if (c.opcode != MLX5_CQE_RESP_SEND || c.byte_cnt != DEMO_SEND_LEN) {
			rr->err = c;
			kbad(rr, KF_TGT_RECV_CQE, i, 0);
			goto fail;
		}
		for (uint32_t j = 0; j < DEMO_SEND_LEN; j++)
			if (((const volatile uint8_t *)m)[j] != kpattern(i + 29, j)) {
				kbad(rr, KF_TGT_MSG, i, j);
				goto fail;
			}
		if (i + slots < x->iters) {
			if (kpost_recv(x, m)) {
				kbad(rr, KF_TGT_POST, i + slots, 0);
				goto fail;
			}
			__threadfence();
			o->recv_posted = o->recv_posted + 1;
		}
	}
	rr->ok = 1;
	return;
fail:
	o->failed = 1;
	__threadfence();
}

__global__ static void k_demo(struct kargs x)
{
	if (threadIdx.x)
		return;
	if (blockIdx.x == 0)
		kinitiator(&x);
	else
		ktarget(&x);
}

/* ---- host side ------------------------------------------------------------ */

int demo_cuda_available(const char **why)
{
	static char msg[160];
	cudaError_t e;
	int n = 0;

	/* Lazy module loading would load the kernel at its first launch;
	 * load it up front (the user's setting wins). */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	e = cudaGetDeviceCount(&n);
	if (e == cudaErrorInsufficientDriver) {
		/* the runtime says this both for an old driver and for none at
		 * all; tell them apart, "insufficient" misleads on a machine
		 * without an NVIDIA driver */
		void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

		if (!lib) {
			*why = "no usable GPU (no NVIDIA driver: libcuda.so.1 cannot be loaded)";
			return 0;
		}
		dlclose(lib);
	}
	if (e != cudaSuccess || n == 0) {
		snprintf(msg, sizeof(msg), "no usable GPU (%s)",
			 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		*why = msg;
		return 0;
	}
	*why = "";
	return 1;
}

static int cuda_err(const char *what, cudaError_t e)
{
	fprintf(stderr, "gdak-demo: --cuda: %s: %s\n", what, cudaGetErrorString(e));
	return -EIO;
}

/* Word a kernel's failure as demo_device.c words the host path's. */
static void explain(const struct demo_args *a, struct demo_op_result *r, const struct kres *k)
{
	char *w = r->why;
	size_t n = sizeof(r->why);

	switch (k->fail) {
	case KF_TIMEOUT:
		snprintf(w, n, "no completion within %llu ms (iteration %u)",
			 (unsigned long long)(a->timeout_ns / 1000000), k->at);
		break;
	case KF_CQE:
		snprintf(w, n, "error CQE: %s, syndrome 0x%02x (%s), WQE %llu",
			 gdak_mlx5_cqe_opcode_name(k->err.opcode), k->err.syndrome,
			 gdak_mlx5_syndrome_name(k->err.syndrome),
			 (unsigned long long)k->err.wqe_index);
		break;
	case KF_API:
		snprintf(w, n, "iteration %u: device API error %d", k->at, k->rc);
		break;
	case KF_BYTES:
		snprintf(w, n, "iteration %u: %s bytes differ (first at byte %u)", k->at,
			 r == &a->res[DEMO_GET] ? "fetched" : "target", k->j);
		break;
	case KF_FADD:
		snprintf(w, n, "iteration %u: fetched %llu, want %llu", k->at,
			 (unsigned long long)k->got, (unsigned long long)k->want);
		break;
	case KF_COUNTER:
		snprintf(w, n, "counter %llu, want %llu", (unsigned long long)k->got,
			 (unsigned long long)k->want);
		break;
	case KF_SIG_UNCONFIRMED:
		snprintf(w, n, "target did not confirm signal %u", k->at + 1);
		break;
	case KF_TGT_SIG_NEVER:
		snprintf(w, n, "target: signal %u never came", k->at + 1);
		break;
	case KF_TGT_SIG_DATA:
		snprintf(w, n, "target: signal %u arrived but data byte %u is wrong", k->at + 1,
			 k->j);
		break;
	case KF_TGT_POST:
		snprintf(w, n, "target: cannot post receive %u", k->at);
		break;
	case KF_TGT_RECV:
		snprintf(w, n, "target: receive %u: %s", k->at,
			 k->rc == -ETIMEDOUT ? "no receive CQE"
			 : k->rc == -ECANCELED ? "initiator failed" : "error CQE");
		break;
	case KF_TGT_RECV_CQE:
		snprintf(w, n, "target: receive %u: CQE %s, %u bytes", k->at,
			 gdak_mlx5_cqe_opcode_name(k->err.opcode), k->err.byte_cnt);
		break;
	case KF_TGT_MSG:
		snprintf(w, n, "target: message %u byte %u wrong", k->at, k->j);
		break;
	case KF_NO_RECV:
		snprintf(w, n, "target posted no receive for message %u", k->at);
		break;
	default:
		break;
	}
}

/* The host's own check of what the last iteration of each operation left
 * behind, on the buffers copied back from the GPU; NULL when all is well. */
static const char *host_check(const struct demo_args *a, int op, const uint8_t *ab,
			      const uint8_t *bb, uint32_t slots)
{
	uint32_t last = a->iters - 1, j, i;
	uint64_t v;

	switch (op) {
	case DEMO_PUT:
		for (j = 0; j < DEMO_PUT_LEN; j++)
			if (bb[DEMO_PUT_OFF + j] != hpattern(last, j))
				return "target bytes copied back differ from the last pattern";
		return NULL;
	case DEMO_GET:
		for (j = 0; j < DEMO_GET_LEN; j++)
			if (ab[DEMO_GET_OFF + j] != hpattern(last + 7, j))
				return "fetched bytes copied back differ from the last pattern";
		return NULL;
	case DEMO_FADD:
		memcpy(&v, bb + DEMO_FADD_OFF, 8);
		if (v != DEMO_FADD_START + a->iters)
			return "counter copied back is wrong";
		/* the fetched original value is big-endian, as an atomic
		 * response carries it (gdak_dev_amo_result) */
		memcpy(&v, ab + DEMO_FADD_OFF, 8);
		if (be64toh(v) != DEMO_FADD_START + a->iters - 1)
			return "last fetched value copied back is wrong";
		return NULL;
	case DEMO_PUT_SIGNAL:
		memcpy(&v, bb + DEMO_SIG_OFF, 8);
		if (v != a->iters)
			return "signal word copied back is wrong";
		for (j = 0; j < DEMO_SIG_DATA_LEN; j++)
			if (bb[DEMO_SIG_DATA_OFF + j] != hpattern(last + 13, j))
				return "data behind the last signal copied back is wrong";
		return NULL;
	case DEMO_SENDRECV:
		/* the last `slots` messages are still in their slots */
		for (i = a->iters > slots ? a->iters - slots : 0; i < a->iters; i++)
			for (j = 0; j < DEMO_SEND_LEN; j++)
				if (bb[DEMO_SEND_OFF + (i % slots) * DEMO_SEND_LEN + j] !=
				    hpattern(i + 29, j))
					return "a received message copied back is wrong";
		return NULL;
	}
	return NULL;
}

static void fill_results(struct demo_args *a, const struct kout *o, const uint8_t *ab,
			 const uint8_t *bb, uint32_t slots)
{
	static const char *const ok_fmt[DEMO_NOPS] = {
		"%u x %u B: target bytes == source, every iteration (GPU memory; host re-checked)",
		"%u x %u B: fetched bytes == target, every iteration (GPU memory; host re-checked)",
		NULL,
		"%u signals; target saw the %u B behind each (GPU memory; host re-checked)",
		"%u messages of %u B received intact, in order (GPU memory; host re-checked)",
	};
	static const uint32_t lens[DEMO_NOPS] = {DEMO_PUT_LEN, DEMO_GET_LEN, 8, DEMO_SIG_DATA_LEN,
						 DEMO_SEND_LEN};
	double ns_per_cyc = o->c1 > o->c0 ? (double)(o->t1 - o->t0) / (double)(o->c1 - o->c0) : 0;

	for (int i = 0; i < DEMO_NOPS; i++) {
		struct demo_op_result *r = &a->res[i];
		const struct kres *k = &o->r[i];
		const char *bad;

		r->iters = k->iters;
		r->ns_sum = (uint64_t)((double)k->cyc_sum * ns_per_cyc);
		r->ns_min = (uint64_t)((double)k->cyc_min * ns_per_cyc);
		r->ns_max = (uint64_t)((double)k->cyc_max * ns_per_cyc);
		if (!k->ok) {
			explain(a, r, k);
			continue;
		}
		bad = host_check(a, i, ab, bb, slots);
		if (bad) {
			snprintf(r->why, sizeof(r->why), "kernel saw it right, but host: %s", bad);
			continue;
		}
		if (i == DEMO_FADD)
			snprintf(r->why, sizeof(r->why),
				 "fetched %u..%u in order, counter == %u (GPU memory; host re-checked)",
				 DEMO_FADD_START, DEMO_FADD_START + a->iters - 1,
				 DEMO_FADD_START + a->iters);
		else
			snprintf(r->why, sizeof(r->why), ok_fmt[i], a->iters, lens[i]);
		r->ok = 1;
	}
}

/* Wait for the kernel without a blocking call: its waits are bounded, so
 * it ends; the guard is for a kernel wedged anyway. */
static int wait_kernel(cudaStream_t st, uint64_t guard_ns)
{
	struct timespec ts = {0, 1000000}, now, t0;
	cudaError_t e;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((e = cudaStreamQuery(st)) == cudaErrorNotReady) {
		nanosleep(&ts, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull + now.tv_nsec - t0.tv_nsec >
		    guard_ns) {
			fprintf(stderr, "gdak-demo: --cuda: the kernel did not end within %llu s\n",
				(unsigned long long)(guard_ns / 1000000000ull));
			return -ETIMEDOUT;
		}
	}
	return e == cudaSuccess ? 0 : cuda_err("the demo kernel", e);
}

int demo_cuda_run(struct demo_args *a)
{
	static const char *const names[DEMO_NOPS] = {"put", "get", "fetch_add",
						     "put_signal+wait", "send/recv"};
	static const uint32_t bytes[DEMO_NOPS] = {DEMO_PUT_LEN, DEMO_GET_LEN, 8,
						  DEMO_SIG_DATA_LEN, DEMO_SEND_LEN};
	struct demo_pair w = {}; /* our own, when the caller's context is unknown */
	struct gdak_ctx *ctx = a->ctx;
	struct gdak_dev_qp *da = a->a, *db = a->b;
	void *ag = NULL, *bg = NULL;
	struct gdak_mr *amr = NULL, *bmr = NULL;
	struct kout *o = NULL;
	static struct kout ho;
	static uint8_t ab[DEMO_BUF_LEN], bb[DEMO_BUF_LEN];
	cudaStream_t st = NULL;
	cudaError_t e;
	uint64_t v;
	uint32_t slots;
	int i, rc;

	for (i = 0; i < DEMO_NOPS; i++) {
		memset(&a->res[i], 0, sizeof(a->res[i]));
		a->res[i].name = names[i];
		a->res[i].bytes = bytes[i];
	}
	if (!ctx) {
		rc = demo_pair_open(&w, NULL, &da, &db);
		if (rc) {
			fprintf(stderr, "gdak-demo: --cuda: own QP pair: %s\n", gdak_strerror(rc));
			goto out;
		}
		ctx = w.ctx;
	}
	if ((rc = gdak_mem_alloc(ctx, DEMO_BUF_LEN, GDAK_MEM_GPU, &ag)) ||
	    (rc = gdak_mem_alloc(ctx, DEMO_BUF_LEN, GDAK_MEM_GPU, &bg)) ||
	    (rc = gdak_mr_reg(ctx, ag, DEMO_BUF_LEN, GDAK_ACCESS_ALL, &amr)) ||
	    (rc = gdak_mr_reg(ctx, bg, DEMO_BUF_LEN, GDAK_ACCESS_ALL, &bmr))) {
		fprintf(stderr, "gdak-demo: --cuda: GPU buffers: %s\n", gdak_strerror(rc));
		goto out;
	}
	/* put+signal discards the signal word's old value into the QP's
	 * scratch word: 8 registered bytes of A nobody else uses */
	da->scratch_addr = (uint64_t)(uintptr_t)((uint8_t *)ag + DEMO_SIG_OFF);
	da->scratch_lkey = gdak_mr_lkey(amr);
	/* everything that may synchronise happens before the launch
	 * (docs/CUDA.md: a kernel waiting for the NIC must not be behind it) */
	if ((e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)) != cudaSuccess ||
	    (e = cudaMalloc((void **)&o, sizeof(*o))) != cudaSuccess ||
	    (e = cudaMemset(o, 0, sizeof(*o))) != cudaSuccess ||
	    (e = cudaMemset(ag, 0, DEMO_BUF_LEN)) != cudaSuccess ||
	    (e = cudaMemset(bg, 0, DEMO_BUF_LEN)) != cudaSuccess) {
		rc = cuda_err("setup", e);
		goto out;
	}
	v = DEMO_FADD_START;
	if ((e = cudaMemcpy((uint8_t *)bg + DEMO_FADD_OFF, &v, 8, cudaMemcpyHostToDevice)) !=
	    cudaSuccess || (e = cudaDeviceSynchronize()) != cudaSuccess) {
		rc = cuda_err("setup", e);
		goto out;
	}
	{
		struct kargs x = {da, db, (uint8_t *)ag, (uint8_t *)bg, gdak_mr_lkey(amr),
				  gdak_mr_lkey(bmr), gdak_mr_rkey(bmr), a->iters, a->timeout_ns, o};

		/* two blocks, both resident at once (2 of an SM's many slots):
		 * the initiator and the target wait for each other */
		k_demo<<<2, 1, 0, st>>>(x);
	}
	if ((e = cudaGetLastError()) != cudaSuccess) {
		rc = cuda_err("launching the demo kernel", e);
		goto out;
	}
	rc = wait_kernel(st, 4 * a->timeout_ns + 30000000000ull);
	if (rc == -ETIMEDOUT) {
		/* a wedged kernel: freeing its memory would block; leave */
		fprintf(stderr, "gdak-demo: --cuda: giving up on the kernel\n");
		return rc;
	}
	if (rc)
		goto out;
	if ((e = cudaMemcpyAsync(&ho, o, sizeof(ho), cudaMemcpyDeviceToHost, st)) != cudaSuccess ||
	    (e = cudaMemcpyAsync(ab, ag, DEMO_BUF_LEN, cudaMemcpyDeviceToHost, st)) != cudaSuccess ||
	    (e = cudaMemcpyAsync(bb, bg, DEMO_BUF_LEN, cudaMemcpyDeviceToHost, st)) != cudaSuccess ||
	    (e = cudaStreamSynchronize(st)) != cudaSuccess) {
		rc = cuda_err("copying the results back", e);
		goto out;
	}
	slots = (DEMO_BUF_LEN - DEMO_SEND_OFF) / DEMO_SEND_LEN;
	if (slots > db->rq_wqe_cnt)
		slots = db->rq_wqe_cnt;
	fill_results(a, &ho, ab, bb, slots);
	for (i = 0; i < DEMO_NOPS && !rc; i++)
		if (!a->res[i].ok)
			rc = -EIO;
out:
	if (st)
		cudaStreamDestroy(st);
	if (o)
		cudaFree(o);
	if (amr)
		gdak_mr_dereg(amr);
	if (bmr)
		gdak_mr_dereg(bmr);
	if (ag)
		gdak_mem_free(ctx, ag);
	if (bg)
		gdak_mem_free(ctx, bg);
	if (!a->ctx) {
		/* the caller's QPs were not used; its descriptors keep their
		 * scratch word (demo_main.c set it) */
		demo_pair_close(&w);
	}
	return rc;
}
