/* SPDX-License-Identifier: MIT */
/*
 * perf_cuda_lat.cu - latency: the raw GPU <-> CPU ping-pong and write_lat.
 *
 * Both are timed on the GPU around each round trip and both spin without
 * sleeping on both sides (the NIC model in GDAK_POLL=spin mode), so
 * write_lat / pingpong is the cost the NIC model and the device API add on
 * top of the unavoidable PCIe round trip.  %globaltimer ticks too coarsely
 * for single microseconds, so each sample is counted in SM cycles (clock64)
 * and converted with the ratio of both clocks over the whole kernel.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "perf_cuda.h"

#define WARM 200
#define HANG_S 120

/* ---- ping-pong ---------------------------------------------------------------- */

/* calib: globaltimer and clock64 at the start and at the end */
__device__ void calib_mark(uint64_t *calib, int end)
{
	calib[end * 2] = gdak_dev_now_ns();
	calib[end * 2 + 1] = (uint64_t)clock64();
}

/* Each round: ping i, spin until pong says i.  Check (the write-value
 * floors below): the GPU word must hold i once the host word does, a late
 * one counted in *bad; without it (the pingpong) the loop has nothing more. */
template <bool Check>
__global__ void k_pingpong(uint64_t *ping, const uint64_t *pong, const volatile uint64_t *gword,
			   unsigned n, uint32_t *cyc, uint64_t *calib, int *bad)
{
	calib_mark(calib, 0);
	for (unsigned i = 1; i <= n + WARM; i++) {
		long long t0 = clock64();
		gdak_dev_store_release_u64(ping, i);
		while (gdak_dev_load_acquire_u64(pong) != i)
			;
		if (Check && *gword != i)
			(*bad)++;
		if (i > WARM)
			cyc[i - WARM - 1] = (uint32_t)(clock64() - t0);
	}
	calib_mark(calib, 1);
}

struct pp_cpu {
	volatile uint64_t *ping, *pong;
	unsigned n;
	int timed_out;
};

/* Spin until the kernel's ping reaches i: 0, or -1 past deadline (the
 * clock read only every 2^20 spins, off the answer's path). */
static inline int wait_ping(volatile uint64_t *ping, uint64_t i, uint64_t deadline)
{
	unsigned spins = 0;

	while (__atomic_load_n(ping, __ATOMIC_ACQUIRE) != i) {
		__builtin_ia32_pause();
		if (++spins == 0x100000) {
			spins = 0;
			if (pc_now_ns() > deadline)
				return -1;
		}
	}
	return 0;
}

/* Every CPU side below: answer each of the kernel's n + WARM pings with
 * answer(arg, i); a hang guard, never a sleep.  0, or -1 once a ping came
 * late or an answer failed (the caller's timed_out). */
static inline int answer_pings(volatile uint64_t *ping, unsigned n,
			       int (*answer)(void *arg, uint64_t i), void *arg)
{
	uint64_t deadline = pc_now_ns() + (uint64_t)HANG_S * 1000000000ull;

	for (uint64_t i = 1; i <= n + WARM; i++)
		if (wait_ping(ping, i, deadline) || answer(arg, i))
			return -1;
	return 0;
}

static int pp_pong(void *arg, uint64_t i)
{
	__atomic_store_n(((struct pp_cpu *)arg)->pong, i, __ATOMIC_RELEASE);
	return 0;
}

/* The CPU side: answer each ping with a store of the pong word. */
static void *pp_answer(void *arg)
{
	struct pp_cpu *c = (struct pp_cpu *)arg;

	c->timed_out = answer_pings(c->ping, c->n, pp_pong, c) != 0;
	return NULL;
}

/* cycles -> ns with the kernel's own clock ratio */
static int samples_to(uint32_t *dev, unsigned n, double *out, const uint64_t *calib)
{
	double scale = calib[3] > calib[1] ? (double)(calib[2] - calib[0]) /
						     (double)(calib[3] - calib[1]) : 0.0;

	uint32_t *h = (uint32_t *)malloc(n * sizeof(*h));

	if (!h)
		return -ENOMEM;
	if (cudaMemcpy(h, dev, n * sizeof(*h), cudaMemcpyDeviceToHost) != cudaSuccess) {
		free(h);
		return -EIO;
	}
	for (unsigned i = 0; i < n; i++)
		out[i] = h[i] * scale;
	free(h);
	return scale > 0 ? 0 : -EIO;
}

/* The kernel did not end within HANG_S: it cannot be stopped, so the
 * process ends, saying what hung and what its CPU side was doing. */
static void lat_hung(const char *what, const char *cpu_side)
{
	fprintf(stderr, "gdak-perf-cuda: %s hung (cpu side %s)\n", what, cpu_side);
	exit(1);
}

/* A one-CTA latency row of n operations of the given size. */
static void lat_row_begin(struct pc_row *r, const char *test, size_t bytes, unsigned n)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->test, sizeof(r->test), "%s", test);
	r->bytes = bytes;
	r->ctas = 1;
	r->ops = n;
}

/* The row's percentiles of the n samples v (sorted on the way), read against
 * the pingpong of the same run (base NULL: the row is that pingpong). */
static void lat_row_add(struct pc_row *r, double *v, unsigned n, const double base[2])
{
	r->min_ns = pc_percentile(v, n, 0.0);
	r->p50_ns = pc_percentile(v, n, 0.5);
	r->p99_ns = pc_percentile(v, n, 0.99);
	r->base_p50_ns = base ? base[0] : r->p50_ns;
	r->base_p99_ns = base ? base[1] : r->p99_ns;
	pc_add_row(r);
}

/* What every ping-pong kind of run holds: the host words the kernel and
 * the CPU side meet on (4096 bytes, mapped, zeroed), the clock calibration,
 * the n samples on the GPU and in ns on the host, the kernel's stream. */
struct lat_run {
	uint64_t *flags, *calib;
	uint32_t *dev_ns;
	double *v;
	cudaStream_t s;
};

static int lat_run_open(struct lat_run *l, unsigned n)
{
	memset(l, 0, sizeof(*l));
	l->v = (double *)malloc(n * sizeof(double));
	if (!l->v)
		return -ENOMEM;
	PC_CHECK(cudaHostAlloc((void **)&l->flags, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
	PC_CHECK(cudaHostAlloc((void **)&l->calib, 64, cudaHostAllocMapped));
	PC_CHECK(cudaMalloc((void **)&l->dev_ns, n * sizeof(uint32_t)));
	PC_CHECK(cudaStreamCreateWithFlags(&l->s, cudaStreamNonBlocking));
	memset(l->flags, 0, 4096);
	return 0;
}

/* Once the kernel ended: its n samples into ns (0, or the error), the row
 * of them begun. */
static int lat_run_row(struct lat_run *l, struct pc_row *r, const char *test, size_t bytes,
		       unsigned n)
{
	lat_row_begin(r, test, bytes, n);
	return samples_to(l->dev_ns, n, l->v, l->calib);
}

static void lat_run_close(struct lat_run *l)
{
	cudaStreamDestroy(l->s);
	cudaFree(l->dev_ns);
	cudaFreeHost(l->flags);
	cudaFreeHost(l->calib);
	free(l->v);
}

int pc_pingpong(unsigned iters, double *p50, double *p99)
{
	struct lat_run l;
	struct pp_cpu c;
	struct pc_row r;
	pthread_t tid;
	int rc = lat_run_open(&l, iters);

	if (rc)
		return rc;
	c.ping = l.flags;
	c.pong = l.flags + 16; /* another cache line */
	c.n = iters;
	c.timed_out = 0;
	pthread_create(&tid, NULL, pp_answer, &c);
	k_pingpong<false><<<1, 1, 0, l.s>>>(l.flags, l.flags + 16, NULL, iters, l.dev_ns, l.calib,
					    NULL);
	if (pc_wait(l.s, HANG_S, "pingpong"))
		lat_hung("pingpong", c.timed_out ? "timed out" : "waiting");
	pthread_join(tid, NULL);
	rc = lat_run_row(&l, &r, "pingpong", 8, iters);
	strcpy(r.note, "gpu<->cpu mapped word");
	r.verified = !rc && !c.timed_out && l.flags[16] == iters + WARM;
	lat_row_add(&r, l.v, iters, NULL);
	*p50 = r.p50_ns;
	*p99 = r.p99_ns;
	lat_run_close(&l);
	return rc;
}

/* ---- the floor of a CPU NIC without mappings ---------------------------------- */

__global__ void k_floor(uint64_t *ping, uint32_t *wqe, const uint32_t *cqe, unsigned n,
			uint32_t *cyc, uint64_t *calib)
{
	calib_mark(calib, 0);
	for (unsigned i = 1; i <= n + WARM; i++) {
		long long t0 = clock64();
		for (int k = 0; k < 16; k++)
			gdak_dev_store_relaxed_u32(wqe + k, i + (unsigned)k);
		/* what the device API does before ringing: the WQE reaches memory
		 * the copy engine reads before the host word says it is there */
		gdak_dev_barrier_wqe_to_dbrec();
		gdak_dev_store_release_u64(ping, i);
		while (gdak_dev_load_acquire_u32(cqe + 15) != i)
			;
		if (i > WARM)
			cyc[i - WARM - 1] = (uint32_t)(clock64() - t0);
	}
	calib_mark(calib, 1);
}

struct fl_cpu {
	volatile uint64_t *ping;
	uint32_t *wqe, *cqe; /* GPU */
	uint32_t *hw, *hc;   /* pinned host */
	unsigned n;
	int timed_out, bad;
	cudaStream_t s;
	int (*wv32)(void *s, unsigned long long addr, uint32_t v, unsigned flags);
};

/* Answer ping i: fetch the WQE (copy, wait), deliver the CQE (copy of the
 * body, then the last word as a stream write-value), as nm_ring_gpu.c. */
static int fl_cqe(void *arg, uint64_t i)
{
	struct fl_cpu *c = (struct fl_cpu *)arg;

	if (cudaMemcpyAsync(c->hw, c->wqe, 64, cudaMemcpyDeviceToHost, c->s) ||
	    cudaStreamSynchronize(c->s))
		return -1;
	if (c->hw[0] != (uint32_t)i || c->hw[15] != (uint32_t)i + 15)
		c->bad++;
	for (int k = 0; k < 15; k++)
		c->hc[k] = (uint32_t)i * 3 + (uint32_t)k;
	c->hc[15] = (uint32_t)i;
	cudaMemcpyAsync(c->cqe, c->hc, 60, cudaMemcpyHostToDevice, c->s);
	if (c->wv32)
		c->wv32(c->s, (unsigned long long)(uintptr_t)(c->cqe + 15), (uint32_t)i, 0);
	else
		cudaMemcpyAsync(c->cqe + 15, c->hc + 15, 4, cudaMemcpyHostToDevice, c->s);
	return 0;
}

static void *fl_answer(void *arg)
{
	struct fl_cpu *c = (struct fl_cpu *)arg;

	c->timed_out = answer_pings(c->ping, c->n, fl_cqe, c) != 0;
	if (!c->timed_out)
		cudaStreamSynchronize(c->s);
	return NULL;
}

int pc_floor(unsigned iters, double *p50, double *p99)
{
	uint32_t *g = NULL, *h = NULL;
	struct lat_run l;
	struct fl_cpu c;
	struct pc_row r;
	pthread_t tid;
	void *lib;
	int rc = lat_run_open(&l, iters);

	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	PC_CHECK(cudaHostAlloc((void **)&h, 256, cudaHostAllocPortable));
	PC_CHECK(cudaMalloc((void **)&g, 256));
	PC_CHECK(cudaMemset(g, 0, 256));
	PC_CHECK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (lib)
		*(void **)(&c.wv32) = dlsym(lib, "cuStreamWriteValue32_v2");
	c.ping = l.flags;
	c.wqe = g;
	c.cqe = g + 32;
	c.hw = h;
	c.hc = h + 32;
	c.n = iters;
	pthread_create(&tid, NULL, fl_answer, &c);
	k_floor<<<1, 1, 0, l.s>>>(l.flags, g, g + 32, iters, l.dev_ns, l.calib);
	if (pc_wait(l.s, HANG_S, "floor"))
		lat_hung("floor", c.timed_out ? "failed or timed out" : "waiting");
	pthread_join(tid, NULL);
	rc = lat_run_row(&l, &r, "floor", 64, iters);
	snprintf(r.note, sizeof(r.note), "d2h fetch + h2d cqe%s", c.wv32 ? "" : " (no memop)");
	r.verified = !rc && !c.timed_out && !c.bad;
	lat_row_add(&r, l.v, iters, NULL);
	*p50 = r.p50_ns;
	*p99 = r.p99_ns;
	cudaStreamDestroy(c.s);
	cudaFree(g);
	cudaFreeHost(h);
	lat_run_close(&l);
	return r.verified ? 0 : -EIO;
}

/* ---- the floor of a GPU-memory WRITE without a CPU mapping -------------------------
 *
 * What the CUDA engine's stream-ordered path costs at the least: a kernel
 * stores a host word (the doorbell), a CPU thread spinning on it submits
 * stream memory operations on a non-blocking stream of its own while the
 * kernel spins on a host word the stream writes (the CQE's last word).
 * Kinds: one write-value of the host word (the driver submission and the
 * GPU front end's pick-up alone); a value into GPU memory without a
 * barrier, then the host word with one (an 8-byte put and its CQE word);
 * the same plus a second host word with a barrier (the engine's batch of
 * value, CQE word, completion word).  The kernel (k_pingpong<true>) checks the
 * GPU word once it sees the host word: the value must have landed first. */

/* CUstreamBatchMemOpParams' writeValue member (the union is 48 bytes) */
struct wv_op {
	uint32_t op, pad0;
	uint64_t addr, value;
	uint32_t flags, pad1;
	uint64_t alias, pad2;
};

struct wv_cpu {
	volatile uint64_t *ping;
	uint64_t *pong, *done, *gword;
	unsigned n, kind;
	int failed, timed_out;
	int err;	  /* the driver's first error (CUresult) */
	int all_fenced;	  /* the driver refused a write-value without a barrier */
	cudaStream_t s;
	int (*wv64)(void *s, unsigned long long addr, uint64_t v, unsigned flags);
	int (*batch)(void *s, unsigned count, struct wv_op *ops, unsigned flags);
};

/* Answer ping i with the kind's write-values: 0, or the driver's error. */
static int wv_submit(struct wv_cpu *c, uint64_t i)
{
	struct wv_op op[3];
	unsigned k = 0;
	int r;

	if (c->kind == 0)
		return c->wv64(c->s, (unsigned long long)(uintptr_t)c->pong, i, 0);
	memset(op, 0, sizeof(op));
	op[k].op = 5; /* WRITE_VALUE_64 */
	op[k].addr = (uint64_t)(uintptr_t)c->gword;
	op[k].value = i;
	op[k++].flags = c->all_fenced ? 0 : 1; /* NO_MEMORY_BARRIER */
	op[k].op = 5;
	op[k].addr = (uint64_t)(uintptr_t)c->pong;
	op[k].value = i;
	op[k++].flags = 0;
	if (c->kind == 2) {
		op[k].op = 5;
		op[k].addr = (uint64_t)(uintptr_t)c->done;
		op[k].value = i;
		op[k++].flags = 0;
	}
	r = c->batch(c->s, k, op, 0);
	if (r && !c->all_fenced) {
		/* as the engine does: a driver that takes no barrier-less value */
		c->all_fenced = 1;
		op[0].flags = 0;
		r = c->batch(c->s, k, op, 0);
	}
	return r;
}

/* Answer ping i with the kind's write-values; once the driver refused one,
 * with a copy and a CPU store. */
static int wv_answer_one(void *arg, uint64_t i)
{
	struct wv_cpu *c = (struct wv_cpu *)arg;

	if (!c->failed) {
		int r = wv_submit(c, i);

		if (r) {
			c->err = r;
			c->failed = 1;
		}
	}
	if (c->failed) {
		if (c->gword)
			cudaMemcpyAsync(c->gword, &i, 8, cudaMemcpyHostToDevice, c->s);
		cudaStreamSynchronize(c->s);
		__atomic_store_n(c->pong, i, __ATOMIC_RELEASE);
	}
	return 0;
}

/* The CPU side.  Once the driver refuses a call, the kernel is answered
 * with CPU stores (the row is then left out): a floor the driver cannot
 * run must not hang the kernel, and with it every row after it. */
static void *wv_answer(void *arg)
{
	struct wv_cpu *c = (struct wv_cpu *)arg;

	/* the driver API calls below need the context current on this thread */
	cudaSetDevice(0);
	c->timed_out = answer_pings(c->ping, c->n, wv_answer_one, c) != 0;
	if (!c->timed_out)
		cudaStreamSynchronize(c->s);
	return NULL;
}

/* One kind (above); its p50 in *p50 (0 when the driver lacks the calls). */
static int wv_floor(unsigned iters, unsigned kind, double base_p50, double base_p99, double *p50)
{
	static const char *const note[] = { "wv host word", "wv gpu value + host word",
					    "wv value + cqe + done" };
	uint64_t *g = NULL;
	int *bad = NULL;
	struct lat_run l;
	struct wv_cpu c;
	struct pc_row r;
	const double base[2] = { base_p50, base_p99 };
	pthread_t tid;
	void *lib;
	int rc;

	*p50 = 0;
	memset(&c, 0, sizeof(c));
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (lib) {
		*(void **)(&c.wv64) = dlsym(lib, "cuStreamWriteValue64_v2");
		*(void **)(&c.batch) = dlsym(lib, "cuStreamBatchMemOp_v2");
	}
	if (!c.wv64 || !c.batch) {
		fprintf(stderr, "gdak-perf-cuda: floor %s: no stream memory operations\n",
			note[kind]);
		return 0;
	}
	rc = lat_run_open(&l, iters);
	if (rc)
		return rc;
	PC_CHECK(cudaHostAlloc((void **)&bad, 64, cudaHostAllocMapped));
	PC_CHECK(cudaMalloc((void **)&g, 64));
	PC_CHECK(cudaMemset(g, 0, 64));
	PC_CHECK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
	PC_CHECK(cudaDeviceSynchronize());
	*bad = 0;
	c.ping = l.flags;
	c.pong = l.flags + 16;
	c.done = l.flags + 32;
	c.gword = g;
	c.n = iters;
	c.kind = kind;
	pthread_create(&tid, NULL, wv_answer, &c);
	if (kind)
		k_pingpong<true><<<1, 1, 0, l.s>>>(l.flags, l.flags + 16, g, iters, l.dev_ns,
						   l.calib, bad);
	else
		k_pingpong<false><<<1, 1, 0, l.s>>>(l.flags, l.flags + 16, NULL, iters, l.dev_ns,
						    l.calib, bad);
	if (pc_wait(l.s, HANG_S, "floor")) {
		char what[64];

		snprintf(what, sizeof(what), "floor %s", note[kind]);
		lat_hung(what, c.timed_out ? "timed out" : c.failed ? "failed" : "waiting");
	}
	pthread_join(tid, NULL);
	if (c.failed || c.timed_out) {
		/* the driver cannot run this floor: say why, leave the row out */
		fprintf(stderr, "gdak-perf-cuda: floor %s: %s (CUresult %d); row left out\n",
			note[kind], c.timed_out ? "no ping from the kernel" : "the driver refused it",
			c.err);
		rc = 0;
		goto out;
	}
	if (c.all_fenced)
		fprintf(stderr, "gdak-perf-cuda: floor %s: the driver took no write-value "
			"without a barrier; every value has one\n", note[kind]);
	rc = lat_run_row(&l, &r, "floor", 8, iters);
	snprintf(r.note, sizeof(r.note), "%s", note[kind]);
	r.verified = !rc && !c.failed && !*bad && l.flags[16] == iters + WARM &&
		     (kind < 2 || l.flags[32] == iters + WARM);
	if (!r.verified)
		fprintf(stderr, "gdak-perf-cuda: floor %s: %d values late, cpu side %s\n",
			note[kind], *bad, c.failed ? "failed" : "ok");
	lat_row_add(&r, l.v, iters, base);
	*p50 = r.p50_ns;
	rc = r.verified ? 0 : -EIO;
out:
	cudaStreamDestroy(c.s);
	cudaFree(g);
	cudaFreeHost(bad);
	lat_run_close(&l);
	return rc;
}

int pc_wv_floors(unsigned iters, double base_p50, double base_p99, double *engine_p50)
{
	double p50;
	int rc = 0;

	*engine_p50 = 0;
	for (unsigned k = 0; k < 3; k++) {
		rc |= wv_floor(iters, k, base_p50, base_p99, &p50);
		if (k == 2)
			*engine_p50 = p50;
	}
	return rc ? -EIO : 0;
}

/* ---- write_lat ---------------------------------------------------------------- */

/* The high-level path: put_value (signalled), wait(ticket).  post[]: the
 * cycles until put_value returned (WQE written, doorbell rung).  local:
 * the kernel works on a copy of the descriptor in its own registers /
 * local memory (gdak_dev_qp_load ... gdak_dev_qp_store). */
__global__ void k_write_lat(struct gdak_dev_qp *gqp, uint64_t raddr, uint32_t rkey, unsigned n,
			    uint32_t *cyc, uint32_t *post, uint64_t *calib, int *rc, int local)
{
	struct gdak_dev_qp lqp, *qp = gqp;
	int r = 0;

	if (local) {
		gdak_dev_qp_load(&lqp, gqp);
		qp = &lqp;
	}

	calib_mark(calib, 0);
	for (unsigned i = 1; i <= n + WARM && !r; i++) {
		long long t0 = clock64(), t1;
		uint64_t t = 0;
		r = gdak_dev_put_value(qp, i, 8, raddr, rkey, GDAK_DEV_WQE_SIGNAL, &t);
		t1 = clock64();
		if (!r)
			r = gdak_dev_wait_timeout(qp, t, 5000000000ull, NULL);
		if (i > WARM) {
			cyc[i - WARM - 1] = (uint32_t)(clock64() - t0);
			post[i - WARM - 1] = (uint32_t)(t1 - t0);
		}
	}
	if (local)
		gdak_dev_qp_store(gqp, &lqp);
	calib_mark(calib, 1);
	*rc = r;
}

/* The low-level floor: build the inline WRITE in place, the doorbell record
 * (one release store), the DB ring with the ctrl bytes known, spin on the
 * CQE's last 8 bytes (gdak_dev_cq_poll_req), the CQ record.  What the
 * high-level path adds on top of this is the device API's bookkeeping. */
__global__ void k_write_lat_ll(struct gdak_dev_qp *qp, uint64_t raddr, uint32_t rkey, unsigned n,
			       uint32_t *cyc, uint32_t *post, uint64_t *calib, int *rc)
{
	struct gdak_dev_cq *cq = &qp->scq;
	uint64_t idx = qp->sq_resv;
	int r = 0;

	calib_mark(calib, 0);
	for (unsigned i = 1; i <= n + WARM && !r; i++, idx++) {
		long long t0 = clock64(), t1;
		uint64_t v = i, t2 = gdak_dev_now_ns();
		struct gdak_dev_cqe c;
		int got;
		gdak_dev_wqe_write_inline(qp, idx, GDAK_DEV_WQE_SIGNAL, raddr, rkey, &v, 8);
		gdak_dev_sq_update_dbrec(qp, idx + 1);
		gdak_dev_sq_ring_db(qp, idx, idx + 1, 1,
				    gdak_dev_wqe_ctrl_db(qp, idx, MLX5_OPCODE_RDMA_WRITE, 0, 3));
		t1 = clock64();
		while ((got = gdak_dev_cq_poll_req(cq, idx, &c)) == 0) {
			if (gdak_dev_now_ns() - t2 > 5000000000ull) {
				r = -ETIMEDOUT;
				break;
			}
		}
		if (!r && (got != 1 || c.wqe_index != idx))
			r = -EIO;
		gdak_dev_store_relaxed_u32(&cq->dbrec[0],
					   gdak_mlx5_cq_dbrec_value((uint32_t)cq->cons_idx));
		if (i > WARM) {
			cyc[i - WARM - 1] = (uint32_t)(clock64() - t0);
			post[i - WARM - 1] = (uint32_t)(t1 - t0);
		}
	}
	qp->sq_resv = qp->sq_ready = qp->sq_done = qp->sq_db = idx;
	qp->sq_sig = qp->sq_sig_start = 0;
	calib_mark(calib, 1);
	*rc = r;
}

/* One write_lat variant: handler, destination kind, descriptor placement. */
static int lat_variant(struct gdak_ctx *ctx, const struct pc_opts *o, enum gdak_dev_db_handler h,
		       enum gdak_mem_kind dst_kind, int gpu_desc, int low_level, int local,
		       const char *note, double base_p50, double base_p99)
{
	unsigned n = o->lat_iters;
	struct gdak_dev_qp *slot = NULL;
	struct pc_pair p;
	struct gdak_mr *mr = NULL;
	void *dst = NULL;
	uint32_t *dev_ns = NULL, *dev_post = NULL;
	uint64_t *calib = NULL;
	int *krc = NULL;
	double *v = (double *)malloc(n * sizeof(double));
	double *pv = (double *)malloc(n * sizeof(double));
	uint64_t last = 0;
	struct pc_row r;
	const double base[2] = { base_p50, base_p99 };
	cudaStream_t s;
	int rc;

	if (!v || !pv)
		return -ENOMEM;
	PC_CHECK(cudaMalloc((void **)&slot, sizeof(*slot)));
	PC_CHECK(cudaMalloc((void **)&dev_ns, n * sizeof(uint32_t)));
	PC_CHECK(cudaMalloc((void **)&dev_post, n * sizeof(uint32_t)));
	PC_CHECK(cudaHostAlloc((void **)&krc, sizeof(int), cudaHostAllocMapped));
	PC_CHECK(cudaHostAlloc((void **)&calib, 64, cudaHostAllocMapped));
	PC_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	rc = pc_pair_make(ctx, h, 64, 0, gpu_desc, slot, &p);
	if (rc)
		return rc;
	PC_GDAK(gdak_mem_alloc(ctx, 4096, dst_kind, &dst));
	PC_GDAK(gdak_mr_reg(ctx, dst, 4096, GDAK_ACCESS_ALL, &mr));
	*krc = -1;
	if (low_level)
		k_write_lat_ll<<<1, 1, 0, s>>>(p.dev, (uint64_t)(uintptr_t)dst, gdak_mr_rkey(mr), n,
					       dev_ns, dev_post, calib, krc);
	else
		k_write_lat<<<1, 1, 0, s>>>(p.dev, (uint64_t)(uintptr_t)dst, gdak_mr_rkey(mr), n,
					    dev_ns, dev_post, calib, krc, local);
	if (pc_wait(s, HANG_S, note))
		exit(1);
	rc = samples_to(dev_ns, n, v, calib);
	if (!rc)
		rc = samples_to(dev_post, n, pv, calib);
	PC_CHECK(cudaMemcpy(&last, dst, 8, cudaMemcpyDefault));
	lat_row_begin(&r, "write_lat", 8, n);
	snprintf(r.note, sizeof(r.note), "%s", note);
	r.nic_threads = 1;
	r.verified = !rc && *krc == 0 && last == n + WARM;
	if (!r.verified)
		fprintf(stderr, "gdak-perf-cuda: write_lat %s: kernel rc %d, target holds %llu, "
			"expected %u\n", note, *krc, (unsigned long long)last, n + WARM);
	r.post_p50_ns = pc_percentile(pv, n, 0.5);
	lat_row_add(&r, v, n, base);
	gdak_mr_dereg(mr);
	gdak_mem_free(ctx, dst);
	pc_pair_destroy(&p);
	cudaStreamDestroy(s);
	cudaFree(slot);
	cudaFree(dev_ns);
	cudaFree(dev_post);
	cudaFreeHost(krc);
	cudaFreeHost(calib);
	free(v);
	free(pv);
	return r.verified ? 0 : -EIO;
}

int pc_write_lat(const struct pc_opts *o, double base_p50, double base_p99)
{
	struct gdak_ctx *ctx = NULL;
	int rc = 0;

	double wv50 = 0;

	/* the floor of the gpu-dst rows, before the NIC threads exist */
	rc |= pc_wv_floors(o->lat_iters, base_p50, base_p99, &wv50);
	PC_GDAK(gdak_nic_set_threads(1));
	PC_GDAK(gdak_nic_set_poll(GDAK_NIC_POLL_SPIN));
	PC_GDAK(gdak_open("emu", &ctx));
	const char *d = o->gpu_desc ? "gpu-desc" : "host-desc";
	char note[48];
	static const struct {
		enum gdak_dev_db_handler h;
		enum gdak_mem_kind dst;
		int ll;
		const char *name;
	} var[] = {
		{GDAK_DEV_DB_DB, GDAK_MEM_HOST_MAPPED, 0, "DB mapped-dst"},
		{GDAK_DEV_DB_BF, GDAK_MEM_HOST_MAPPED, 0, "BF mapped-dst"},
		{GDAK_DEV_DB_CPU_PROXY, GDAK_MEM_HOST_MAPPED, 0, "PROXY mapped-dst"},
		{GDAK_DEV_DB_DB, GDAK_MEM_GPU, 0, "DB gpu-dst"},
		{GDAK_DEV_DB_DB, GDAK_MEM_HOST_MAPPED, 1, "DB mapped-dst lowlevel"},
	};

	for (unsigned i = 0; i < sizeof(var) / sizeof(var[0]); i++) {
		snprintf(note, sizeof(note), "%s %s", var[i].name, d);
		rc |= lat_variant(ctx, o, var[i].h, var[i].dst, o->gpu_desc, var[i].ll, 0, note,
				  base_p50, base_p99);
	}
	if (o->gpu_desc)
		rc |= lat_variant(ctx, o, GDAK_DEV_DB_DB, GDAK_MEM_HOST_MAPPED, 0, 0, 0,
				  "DB mapped-dst host-desc", base_p50, base_p99);
	/* the exported descriptor (mapped host memory), worked on through a
	 * copy in the kernel's registers: gdak_dev_qp_load / gdak_dev_qp_store */
	rc |= lat_variant(ctx, o, GDAK_DEV_DB_DB, GDAK_MEM_HOST_MAPPED, 0, 0, 1,
			  "DB mapped-dst local-desc", base_p50, base_p99);
	/* the same with the target in GPU memory: what the NIC model's GPU
	 * copy adds to the fastest posting path (issue 21's latency row) */
	rc |= lat_variant(ctx, o, GDAK_DEV_DB_DB, GDAK_MEM_GPU, 0, 0, 1, "DB gpu-dst local-desc",
			  base_p50, base_p99);
	/* rings in GPU memory (issue 21): judged by the floor of a CPU NIC
	 * without mappings, measured here with the driver calls themselves */
	{
		double f50 = 0, f99 = 0;
		static const struct {
			enum gdak_dev_db_handler h;
			const char *name;
		} gv[] = {
			{GDAK_DEV_DB_CPU_PROXY, "PROXY gpu-rings"},
			{GDAK_DEV_DB_DB, "DB gpu-rings"},
			{GDAK_DEV_DB_BF, "BF gpu-rings"},
		};

		rc |= pc_floor(o->lat_iters, &f50, &f99);
		pc_qp_flags = GDAK_QP_F_QUEUES_GPU;
		for (unsigned i = 0; i < sizeof(gv) / sizeof(gv[0]); i++) {
			snprintf(note, sizeof(note), "%s %s", gv[i].name, d);
			rc |= lat_variant(ctx, o, gv[i].h, GDAK_MEM_HOST_MAPPED, o->gpu_desc, 0, 0,
					  note, f50, f99);
		}
		pc_qp_flags = 0;
	}
	gdak_close(ctx);
	gdak_nic_set_poll(GDAK_NIC_POLL_ADAPTIVE);
	return rc ? -EIO : 0;
}
