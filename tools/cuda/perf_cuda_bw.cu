/* SPDX-License-Identifier: MIT */
/*
 * perf_cuda_bw.cu - message rate and bandwidth.
 *
 * write_bw: C CTAs of one thread, CTA c owning QP c (served by NIC thread
 * c % T), each posting puts of S bytes back to back (the half-ring rule of
 * rma.h signals one WQE in every half ring; one doorbell per put) and a
 * quiet at the end - NVSHMEM shmem_put_bw's shape.  Rate = all puts /
 * (last CTA end - first CTA start), on the GPU clock.  Buffers in mapped
 * host memory (the NIC model copies them with memcpy); one row with GPU
 * memory shows the CUDA engine's per-copy cost instead.
 *
 * big_bw: 16 MiB RDMA_WRITE GPU -> GPU, one at a time (post, wait) and
 * pipelined (post all, quiet), against cudaMemcpy device-to-device of the
 * same buffers back to back (a D2D cudaMemcpy does not wait for the copy),
 * and cudaMemcpyAsync + synchronize per copy, whole or split over 4
 * streams, measured in the same run.  Every bandwidth here is PAYLOAD
 * bytes per second - the bytes a copy or a WRITE delivers, len x count /
 * time - on both sides of the ratio.  (CUDA's bandwidthTest reports
 * device-to-device copies as read + write, twice that; gdak does not.)
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_cuda.h"

#define HANG_S 300
#define MAX_CTAS 1024

__global__ void pc_k_rate(struct gdak_dev_qp *qps, uint64_t src, uint32_t lkey, uint64_t dst,
			  uint32_t rkey, uint32_t size, unsigned n, uint64_t *t0, uint64_t *t1,
			  int *rc)
{
	unsigned c = blockIdx.x;
	struct gdak_dev_qp *qp = &qps[c];
	struct gdak_dev_sge s = {src + (uint64_t)c * size, size, lkey};

	pc_timed_burst(qp, n, t0, t1, rc, [&](unsigned) {
		uint64_t t;

		return gdak_dev_put(qp, &s, dst + (uint64_t)c * size, rkey, 0, &t);
	});
}

struct rate_env {
	struct gdak_ctx *ctx;
	struct pc_pair *pairs;
	struct gdak_dev_qp *slots;	/* GPU array of descriptors */
	unsigned npairs;
	uint64_t *t0, *t1;		/* mapped */
	int *rc;			/* mapped */
};

/* src and dst: len bytes of kind, registered as ms and md; hs and hd: host
 * buffers of len, hs holding byte i = i * mul + add, which src then holds. */
static int bufs_make(struct gdak_ctx *ctx, size_t len, enum gdak_mem_kind kind, unsigned mul,
		     unsigned add, uint8_t **src, uint8_t **dst, struct gdak_mr **ms,
		     struct gdak_mr **md, uint8_t **hs, uint8_t **hd)
{
	PC_GDAK(gdak_mem_alloc(ctx, len, kind, (void **)src));
	PC_GDAK(gdak_mem_alloc(ctx, len, kind, (void **)dst));
	PC_GDAK(gdak_mr_reg(ctx, *src, len, GDAK_ACCESS_ALL, ms));
	PC_GDAK(gdak_mr_reg(ctx, *dst, len, GDAK_ACCESS_ALL, md));
	*hs = (uint8_t *)malloc(len);
	*hd = (uint8_t *)malloc(len);
	if (!*hs || !*hd)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		(*hs)[i] = (uint8_t)(i * mul + add);
	PC_CHECK(cudaMemcpy(*src, *hs, len, cudaMemcpyDefault));
	return 0;
}

static int rate_run(struct rate_env *e, unsigned ctas, unsigned nict, size_t size,
		    enum gdak_mem_kind kind, unsigned n, const char *note)
{
	size_t len = (size_t)ctas * size;
	uint8_t *src = NULL, *dst = NULL, *hs, *hd;
	struct gdak_mr *ms = NULL, *md = NULL;
	uint64_t lo = UINT64_MAX, hi = 0;
	struct pc_row r;
	cudaStream_t s;
	int bad = 0;

	int err = bufs_make(e->ctx, len, kind, 131, 7, &src, &dst, &ms, &md, &hs, &hd);

	if (err)
		return err;
	PC_CHECK(cudaMemset(dst, 0, len));
	PC_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (unsigned c = 0; c < ctas; c++)
		e->rc[c] = -1;
	pc_k_rate<<<ctas, 1, 0, s>>>(e->slots, (uint64_t)(uintptr_t)src, gdak_mr_lkey(ms),
				  (uint64_t)(uintptr_t)dst, gdak_mr_rkey(md), (uint32_t)size, n,
				  e->t0, e->t1, e->rc);
	if (pc_wait(s, HANG_S, note))
		exit(1);
	for (unsigned c = 0; c < ctas; c++) {
		bad |= e->rc[c] != 0;
		lo = e->t0[c] < lo ? e->t0[c] : lo;
		hi = e->t1[c] > hi ? e->t1[c] : hi;
	}
	PC_CHECK(cudaMemcpy(hd, dst, len, cudaMemcpyDefault));
	memset(&r, 0, sizeof(r));
	strcpy(r.test, "write_bw");
	snprintf(r.note, sizeof(r.note), "%s", note);
	r.bytes = size;
	r.ctas = ctas;
	r.nic_threads = nict;
	r.ops = (uint64_t)ctas * n;
	r.msg_rate = (double)r.ops / ((double)(hi - lo) / 1e9);
	r.bw = r.msg_rate * (double)size;
	r.verified = !bad && !memcmp(hs, hd, len);
	if (!r.verified)
		fprintf(stderr, "gdak-perf-cuda: write_bw %u CTAs %u NIC threads %s: %s\n", ctas,
			nict, note, bad ? "a CTA's puts failed" : "destination bytes differ");
	pc_add_row(&r);
	cudaStreamDestroy(s);
	gdak_mr_dereg(ms);
	gdak_mr_dereg(md);
	gdak_mem_free(e->ctx, src);
	gdak_mem_free(e->ctx, dst);
	free(hs);
	free(hd);
	return r.verified ? 0 : -EIO;
}

static unsigned max_ctas(const struct pc_opts *o)
{
	unsigned m = 64;

	for (unsigned i = 0; i < o->nctas; i++)
		m = o->ctas[i] > m ? o->ctas[i] : m;
	return m;
}

/* Puts per CTA: the asked count, but at most ~1 M puts per configuration
 * (and at least 1000 per CTA). */
static unsigned per_cta(const struct pc_opts *o, unsigned ctas)
{
	unsigned n = 1000000u / ctas;

	if (n > o->bw_iters)
		n = o->bw_iters;
	return n < 1000 ? 1000 : n;
}

int pc_write_bw(const struct pc_opts *o)
{
	unsigned m = max_ctas(o);
	int rc = 0;

	for (unsigned ti = 0; ti < o->nnic; ti++) {
		unsigned T = o->nic_threads[ti];
		struct rate_env e;
		char note[48];

		memset(&e, 0, sizeof(e));
		PC_GDAK(gdak_nic_set_threads(T));
		PC_GDAK(gdak_nic_set_poll(GDAK_NIC_POLL_SPIN));
		PC_GDAK(gdak_open("emu", &e.ctx));
		e.pairs = (struct pc_pair *)calloc(m, sizeof(*e.pairs));
		PC_CHECK(cudaMalloc((void **)&e.slots, m * sizeof(struct gdak_dev_qp)));
		PC_CHECK(cudaHostAlloc((void **)&e.t0, m * 8, cudaHostAllocMapped));
		PC_CHECK(cudaHostAlloc((void **)&e.t1, m * 8, cudaHostAllocMapped));
		PC_CHECK(cudaHostAlloc((void **)&e.rc, m * sizeof(int), cudaHostAllocMapped));
		/* descriptors must be in one array for the kernel: always the GPU
		 * copies here */
		for (unsigned c = 0; c < m; c++) {
			rc = pc_pair_make(e.ctx, GDAK_DEV_DB_DB, 256, (int)(c % T), 1, &e.slots[c],
					  &e.pairs[c]);
			if (rc)
				return rc;
		}
		e.npairs = m;
		for (unsigned i = 0; i < o->nctas; i++) {
			snprintf(note, sizeof(note), "DB mapped put %zuB", o->bw_size);
			rc |= rate_run(&e, o->ctas[i], T, o->bw_size, GDAK_MEM_HOST_MAPPED,
				       per_cta(o, o->ctas[i]), note);
		}
		if (T == 1) {
			snprintf(note, sizeof(note), "DB gpu-mem put %zuB", o->bw_size);
			/* enough puts to time a batching engine (millions per second)
			 * without making the per-copy path take long */
			unsigned n = per_cta(o, 64);
			rc |= rate_run(&e, 64, T, o->bw_size, GDAK_MEM_GPU, n < 2000 ? n : 2000,
				       note);
			/* rings in GPU memory (GDAK_QP_F_QUEUES_GPU): 64 CTAs again,
			 * data in mapped memory, every WQE fetched and every CQE
			 * delivered through the driver */
			for (unsigned c = 0; c < m; c++)
				pc_pair_destroy(&e.pairs[c]);
			pc_qp_flags = GDAK_QP_F_QUEUES_GPU;
			for (unsigned c = 0; c < m && !rc; c++)
				rc = pc_pair_make(e.ctx, GDAK_DEV_DB_DB, 256, (int)(c % T), 1,
						  &e.slots[c], &e.pairs[c]);
			pc_qp_flags = 0;
			if (rc)
				return rc;
			snprintf(note, sizeof(note), "DB gpu-rings put %zuB", o->bw_size);
			rc |= rate_run(&e, 64, T, o->bw_size, GDAK_MEM_HOST_MAPPED, n, note);
		}
		for (unsigned c = 0; c < m; c++)
			pc_pair_destroy(&e.pairs[c]);
		gdak_close(e.ctx);
		cudaFree(e.slots);
		cudaFreeHost(e.t0);
		cudaFreeHost(e.t1);
		cudaFreeHost(e.rc);
		free(e.pairs);
	}
	gdak_nic_set_threads(1);
	gdak_nic_set_poll(GDAK_NIC_POLL_ADAPTIVE);
	return rc ? -EIO : 0;
}

/* ---- big_bw -------------------------------------------------------------------- */

/* window 1: post, wait, repeat; else post everything, quiet. */
__global__ void k_big(struct gdak_dev_qp *qp, uint64_t src, uint32_t lkey, uint64_t dst,
		      uint32_t rkey, uint32_t size, unsigned n, int window, uint64_t *t, int *rc)
{
	struct gdak_dev_sge s = {src, size, lkey};
	uint64_t tk = 0;
	int r = 0;

	t[0] = gdak_dev_now_ns();
	for (unsigned i = 0; i < n && !r; i++) {
		r = gdak_dev_put(qp, &s, dst, rkey, window == 1 ? GDAK_DEV_WQE_SIGNAL : 0, &tk);
		if (!r && window == 1)
			r = gdak_dev_wait_timeout(qp, tk, 30000000000ull, NULL);
		if (i == 0) /* where the time goes: the first and the last post */
			t[2] = gdak_dev_now_ns();
	}
	t[3] = gdak_dev_now_ns();
	if (!r)
		r = gdak_dev_quiet_timeout(qp, 30000000000ull, NULL);
	t[1] = gdak_dev_now_ns();
	*rc = r;
	/* the host waits on this word, not on the stream: no driver call of
	 * the main thread's meets the NIC's while the row runs */
	__threadfence_system();
	gdak_dev_store_release_u64(&t[4], 1);
}

/* The floor of the engine's 16 MiB path: the kernel stores a host word
 * (the doorbell) and spins on another; a CPU thread queues the copies on a
 * non-blocking stream and a write-value of that word behind them (the CQE
 * word), as the engine does with GDAK_CUDA_CQE=stream. */
__global__ void k_bigfloor(uint64_t *go, const uint64_t *done, uint64_t *t)
{
	t[0] = gdak_dev_now_ns();
	gdak_dev_store_release_u64(go, 1);
	while (gdak_dev_load_acquire_u64(done) != 1)
		;
	t[1] = gdak_dev_now_ns();
}

static int big_floor(uint8_t *dst, const uint8_t *src, size_t len, unsigned n, double base_bw)
{
	int (*wv64)(void *s, unsigned long long addr, uint64_t v, unsigned flags) = NULL;
	uint64_t *w = NULL, deadline, call_ns = 0, call_max = 0, go_seen = 0;
	cudaStream_t ks, cs;
	struct pc_row r;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int bad = 0;

	if (lib)
		*(void **)(&wv64) = dlsym(lib, "cuStreamWriteValue64_v2");
	if (!wv64)
		return 0;
	PC_CHECK(cudaHostAlloc((void **)&w, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
	memset(w, 0, 4096);
	PC_CHECK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
	PC_CHECK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
	PC_CHECK(cudaDeviceSynchronize());
	k_bigfloor<<<1, 1, 0, ks>>>(w, w + 16, w + 32);
	deadline = pc_now_ns() + (uint64_t)HANG_S * 1000000000ull;
	while (__atomic_load_n((volatile uint64_t *)w, __ATOMIC_ACQUIRE) != 1 && !bad)
		bad = pc_now_ns() > deadline ? -1 : 0;
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		go_seen = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	for (unsigned i = 0; i < n && !bad; i++) {
		uint64_t c0 = pc_now_ns(), dt;

		bad = cudaMemcpyAsync(dst, src, len, cudaMemcpyDeviceToDevice, cs) != cudaSuccess;
		dt = pc_now_ns() - c0;
		call_ns += dt;
		call_max = dt > call_max ? dt : call_max;
	}
	/* what the same call costs without the NIC: against the engine's
	 * "direct behind another" times (GDAK_CUDA_STATS) */
	fprintf(stderr, "gdak-perf-cuda: big floor: %u cudaMemcpyAsync calls, %.2f us/call (max %.1f)\n",
		n, n ? (double)call_ns / 1e3 / n : 0.0, (double)call_max / 1e3);
	if (!bad)
		bad = wv64(cs, (unsigned long long)(uintptr_t)(w + 16), 1, 0);
	if (bad) {
		/* a floor the driver cannot run must not hang the kernel and
		 * every row after it: release it, leave the row out */
		cudaStreamSynchronize(cs);
		__atomic_store_n(&w[16], 1, __ATOMIC_RELEASE);
	}
	if (pc_wait(ks, HANG_S, "big floor")) {
		fprintf(stderr, "gdak-perf-cuda: big floor hung\n");
		exit(1);
	}
	if (bad) {
		fprintf(stderr, "gdak-perf-cuda: big floor: %s (%d); row left out\n",
			bad < 0 ? "the kernel did not start" : "the driver refused a call", bad);
		goto out;
	}
	/* the GPU's clock against the CPU's, for the NIC's timeline
	 * (GDAK_CUDA_STATS): the kernel started, then the CPU saw its word */
	fprintf(stderr,
		"gdak-perf-cuda: big floor: kernel start at globaltimer %llu ns, CPU saw it at "
		"realtime %llu ns (%+.1f us)\n",
		(unsigned long long)w[32], (unsigned long long)go_seen,
		((double)go_seen - (double)w[32]) / 1e3);
	memset(&r, 0, sizeof(r));
	strcpy(r.test, "big_base");
	strcpy(r.note, "thread copies+flag, kernel waits");
	r.bytes = len;
	r.ops = n;
	r.msg_rate = (double)n / ((double)(w[33] - w[32]) / 1e9);
	r.bw = r.msg_rate * (double)len;
	r.base_bw = base_bw;
	r.verified = 1;
	pc_add_row(&r);
out:
	cudaStreamDestroy(ks);
	cudaStreamDestroy(cs);
	cudaFreeHost(w);
	return 0;
}

/* A big_base row: n copies of len bytes since t0 (ns), what they were in
 * note. */
static void big_base_row(const char *note, size_t len, unsigned n, uint64_t t0, double base_bw)
{
	struct pc_row r;

	memset(&r, 0, sizeof(r));
	strcpy(r.test, "big_base");
	strcpy(r.note, note);
	r.bytes = len;
	r.ctas = 0;
	r.ops = n;
	r.msg_rate = (double)n / ((double)(pc_now_ns() - t0) / 1e9);
	r.bw = r.msg_rate * (double)len;
	r.base_bw = base_bw;
	r.verified = 1;
	pc_add_row(&r);
}

int pc_big_bw(const struct pc_opts *o)
{
	size_t len = o->big_size;
	unsigned n = o->big_iters;
	struct gdak_ctx *ctx = NULL;
	struct gdak_dev_qp *slot = NULL;
	struct pc_pair p;
	uint8_t *src = NULL, *dst = NULL, *dst2 = NULL, *hs, *hd;
	struct gdak_mr *ms = NULL, *md = NULL, *md2 = NULL;
	struct pc_row rows[2];
	uint64_t *t = NULL, t0;
	int *krc = NULL, krcs[2], rc = 0;
	double base_bw;
	cudaStream_t s;

	PC_GDAK(gdak_nic_set_threads(1));
	PC_GDAK(gdak_nic_set_poll(GDAK_NIC_POLL_SPIN));
	PC_GDAK(gdak_open("emu", &ctx));
	PC_CHECK(cudaMalloc((void **)&slot, sizeof(*slot)));
	PC_CHECK(cudaHostAlloc((void **)&t, 64, cudaHostAllocMapped));
	PC_CHECK(cudaHostAlloc((void **)&krc, sizeof(int), cudaHostAllocMapped));
	PC_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	rc = pc_pair_make(ctx, GDAK_DEV_DB_DB, 64, 0, o->gpu_desc, slot, &p);
	if (rc)
		return rc;
	rc = bufs_make(ctx, len, GDAK_MEM_GPU, 197, 3, &src, &dst, &ms, &md, &hs, &hd);
	if (rc)
		return rc;

	/* baseline: cudaMemcpy D2D, warm-up first.  A device-to-device
	 * cudaMemcpy returns before the copy is done, so this is copies back
	 * to back on the stream; the clock stops after the last one finished. */
	PC_CHECK(cudaMemcpy(dst, src, len, cudaMemcpyDeviceToDevice));
	PC_CHECK(cudaDeviceSynchronize());
	t0 = pc_now_ns();
	for (unsigned i = 0; i < n; i++)
		PC_CHECK(cudaMemcpy(dst, src, len, cudaMemcpyDeviceToDevice));
	PC_CHECK(cudaDeviceSynchronize());
	base_bw = (double)len * n / ((double)(pc_now_ns() - t0) / 1e9);
	/* what the NIC model's engine does per WQE: an async copy on a
	 * non-blocking stream, then a synchronize - the bound for one copy at
	 * a time; then the same copy split in 4 chunks on 4 streams, one
	 * synchronize per copy (GDAK_CUDA_COPY_STREAMS=4 in the engine) */
	for (int split = 1; split <= 4; split *= 4) {
		cudaStream_t ss[4];

		for (int k = 0; k < split; k++)
			PC_CHECK(cudaStreamCreateWithFlags(&ss[k], cudaStreamNonBlocking));
		PC_CHECK(cudaDeviceSynchronize());
		t0 = pc_now_ns();
		for (unsigned i = 0; i < n; i++) {
			size_t part = len / split;
			for (int k = 0; k < split; k++)
				PC_CHECK(cudaMemcpyAsync(dst + k * part, src + k * part,
							 k == split - 1 ? len - k * part : part,
							 cudaMemcpyDeviceToDevice, ss[k]));
			for (int k = 0; k < split; k++)
				PC_CHECK(cudaStreamSynchronize(ss[k]));
		}
		big_base_row(split == 1 ? "memcpyAsync+sync per op" : "4 streams+sync per op", len, n,
			     t0, base_bw);
		for (int k = 0; k < split; k++)
			cudaStreamDestroy(ss[k]);
	}
	/* what an asynchronous engine would do (nm_cuda_copy_start/_poll): up
	 * to 4 copies in flight on one stream, an event per copy, a copy's
	 * completion seen by polling its event - the bound for the NIC model
	 * once its requester keeps copies in flight */
	{
		enum { K = 4 };
		cudaEvent_t ev[K];

		for (int k = 0; k < K; k++)
			PC_CHECK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
		PC_CHECK(cudaDeviceSynchronize());
		t0 = pc_now_ns();
		for (unsigned i = 0; i < n + K; i++) {
			if (i >= K) /* retire copy i - K */
				while (cudaEventQuery(ev[i % K]) == cudaErrorNotReady)
					;
			if (i < n) {
				PC_CHECK(cudaMemcpyAsync(dst, src, len, cudaMemcpyDeviceToDevice, s));
				PC_CHECK(cudaEventRecord(ev[i % K], s));
			}
		}
		big_base_row("async, 4 in flight, events", len, n, t0, base_bw);
		for (int k = 0; k < K; k++)
			cudaEventDestroy(ev[k]);
	}
	rc = big_floor(dst, src, len, n, base_bw);
	if (rc)
		return rc;
	/* each row writes a destination of its own and both are checked
	 * after the second has run: a row's check (16 MiB to the host, a CPU
	 * compare) must not evict the caches the NIC thread's next driver call
	 * needs right before the next row is timed - the baseline above has its
	 * warm-up copy right before it (docs/BENCHMARKS-CUDA.md, "Fifteenth
	 * look") */
	PC_GDAK(gdak_mem_alloc(ctx, len, GDAK_MEM_GPU, (void **)&dst2));
	PC_GDAK(gdak_mr_reg(ctx, dst2, len, GDAK_ACCESS_ALL, &md2));
	PC_CHECK(cudaMemset(dst, 0, len));
	PC_CHECK(cudaMemset(dst2, 0, len));
	PC_CHECK(cudaDeviceSynchronize());

	for (int window = 1; window <= 2; window++) {
		/* the pipelined row on the baseline's buffers */
		uint8_t *d = window == 1 ? dst2 : dst;
		struct gdak_mr *m = window == 1 ? md2 : md;
		struct pc_row *r = &rows[window - 1];

		*krc = -1;
		__atomic_store_n(&t[4], 0, __ATOMIC_RELAXED);
		k_big<<<1, 1, 0, s>>>(p.dev, (uint64_t)(uintptr_t)src, gdak_mr_lkey(ms),
				      (uint64_t)(uintptr_t)d, gdak_mr_rkey(m), (uint32_t)len, n,
				      window, t, krc);
		for (uint64_t end = pc_now_ns() + (uint64_t)HANG_S * 1000000000ull;
		     !__atomic_load_n((volatile uint64_t *)&t[4], __ATOMIC_ACQUIRE) &&
		     pc_now_ns() < end;)
			usleep(50);
		if (pc_wait(s, HANG_S, "big_bw"))
			exit(1);
		memset(r, 0, sizeof(*r));
		strcpy(r->test, "big_bw");
		strcpy(r->note, window == 1 ? "gpu->gpu 1 in flight" : "gpu->gpu pipelined");
		r->bytes = len;
		r->ctas = 1;
		r->nic_threads = 1;
		r->ops = n;
		r->msg_rate = (double)n / ((double)(t[1] - t[0]) / 1e9);
		r->bw = r->msg_rate * (double)len;
		r->base_bw = base_bw;
		r->verified = *krc == 0;
		krcs[window - 1] = *krc;
		fprintf(stderr,
			"gdak-perf-cuda: big_bw %s: first post returned at %.1f us, last at %.1f "
			"us, all complete at %.1f us (%u x %zu bytes; kernel start at globaltimer "
			"%llu ns)\n",
			r->note, (double)(t[2] - t[0]) / 1e3, (double)(t[3] - t[0]) / 1e3,
			(double)(t[1] - t[0]) / 1e3, n, len, (unsigned long long)t[0]);
	}
	for (int w = 0; w < 2; w++) {
		struct pc_row *r = &rows[w];
		int same;

		PC_CHECK(cudaMemcpy(hd, w ? dst : dst2, len, cudaMemcpyDeviceToHost));
		same = !memcmp(hs, hd, len);
		r->verified &= same;
		if (!r->verified)
			fprintf(stderr, "gdak-perf-cuda: big_bw %s: kernel rc %d, data %s\n", r->note,
				krcs[w], same ? "right" : "differs");
		rc |= !r->verified;
		pc_add_row(r);
	}
	gdak_mr_dereg(md2);
	gdak_mem_free(ctx, dst2);
	gdak_mr_dereg(ms);
	gdak_mr_dereg(md);
	gdak_mem_free(ctx, src);
	gdak_mem_free(ctx, dst);
	pc_pair_destroy(&p);
	gdak_close(ctx);
	gdak_nic_set_poll(GDAK_NIC_POLL_ADAPTIVE);
	cudaStreamDestroy(s);
	cudaFree(slot);
	cudaFreeHost(t);
	cudaFreeHost(krc);
	free(hs);
	free(hd);
	return rc ? -EIO : 0;
}
