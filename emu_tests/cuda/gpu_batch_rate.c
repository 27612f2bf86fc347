/* SPDX-License-Identifier: MIT */
/*
 * gpu_batch_rate.c - what one NIC thread spends per WQE on the rate row of
 * gdak-perf-cuda ("64 CTAs x 8-byte puts, GPU-memory buffers, 1 NIC
 * thread"), measured without a GPU: the same stream of WQEs - Q QPs on one
 * NIC thread, each putting 8 bytes from its own slot of a source buffer to
 * its own slot of a destination buffer, P WQEs a round, the last one
 * signalled - posted by this host thread, once with both buffers in
 * host-mapped memory (the baseline, same process, same NIC thread) and
 * once in GPU memory (the CUDA engine against the stand-in driver,
 * gpumem_fake.c, or a real one).  Rounds alternate between the two.
 *
 * The cost is the NIC thread's own CPU time (its per-thread CPU clock)
 * from the doorbells of a round to its last CQE, divided by the WQEs (the
 * poster yields meanwhile; time the thread spends preempted by other
 * processes is not counted).  Printed: ns per WQE of each kind
 * (medians over the rounds), their ratio, and the engine's counters.
 * Every round's destination bytes are checked (a READ of the destination
 * after the last WQE of each QP), so it is a test too
 * (gdak.nic.gpu_batch_rate, a short run); timings are printed, never
 * checked.
 *
 * Usage: gdak_cuda_gpu_batch_rate [--rounds N] [--per P] [--qps Q] [--gpu-only 1]
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gdak_test.h"
#include "gdak_test_proc.h"
#include "nic_util.h"
#include "nm_cuda.h" /* the engine's counters */

#define TMO 60000
#define MAXQ 256

static struct gdak_ctx *ctx;
static int nic_tid;

/* The NIC thread's CPU time so far, ns: the kernel's per-thread CPU clock
 * of that task (what pthread_getcpuclockid builds: ~tid << 3 | per-thread
 * | sched), exact where schedstat only moves at scheduler ticks. */
static uint64_t nic_ns(void)
{
	clockid_t id = (clockid_t)((~(unsigned)nic_tid << 3) | 6);
	struct timespec ts;

	REQUIRE_EQ(clock_gettime(id, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct side {
	enum gdak_mem_kind kind;
	const char *name;
	uint8_t *src, *dst;
	struct gdak_mr *ms, *md;
	double ns[1024];
	unsigned n;
};

static unsigned nq = 64, per = 128, rounds = 6, gpu_only;
static struct nu_qp qa[MAXQ], qb[MAXQ];
static uint8_t *h_buf;
static struct gdak_mr *m_h;

/* Wait for the next CQE of q: a successful requester one. */
static void reap(struct nu_qp *q)
{
	struct gdak_mlx5_cqe_fields f;

	REQUIRE_EQ(nu_poll(q, 0, &f, TMO), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
}

/*
 * The NIC thread's clock once it has built the round's last CQE: every
 * QP's CQE shows, or (stream-ordered CQEs) the engine has queued one per
 * QP - the stand-in's stream thread may show them much later on a loaded
 * machine, and the NIC thread's idle spinning meanwhile is not its work.
 * This thread yields between looks.
 */
static uint64_t nic_done(uint64_t cqes0)
{
	uint64_t t0 = gdak_test_now_ns();

	for (;;) {
		struct nm_cuda_stats st;
		unsigned c = 0;

		nm_cuda_stats_get(&st);
		if (st.cqes_stream - cqes0 >= nq)
			return nic_ns();
		while (c < nq && nu_cqe_ready(&qa[c], 0))
			c++;
		if (c == nq)
			return nic_ns();
		REQUIRE(gdak_test_now_ns() - t0 < TMO * 1000000ull);
		sched_yield();
	}
}

/* len bytes between host h_buf and p (either way) through a READ. */
static void xfer(void *to, uint32_t lk, const void *from, uint32_t rk, uint32_t len)
{
	nu_post_rdma(&qa[0], MLX5_OPCODE_RDMA_READ, to, len, lk, (uint64_t)(uintptr_t)from, rk, 0,
		     NU_SIG);
	nu_ring(&qa[0]);
	reap(&qa[0]);
}

static void side_init(struct side *s)
{
	size_t len = (size_t)nq * 8;

	REQUIRE_EQ(gdak_mem_alloc(ctx, len, s->kind, (void **)&s->src), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, len, s->kind, (void **)&s->dst), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, s->src, len, GDAK_ACCESS_ALL, &s->ms), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, s->dst, len, GDAK_ACCESS_ALL, &s->md), 0);
}

static void side_fini(struct side *s)
{
	gdak_mr_dereg(s->ms);
	gdak_mr_dereg(s->md);
	gdak_mem_free(ctx, s->src);
	gdak_mem_free(ctx, s->dst);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/* One round on side s: a new source pattern, P puts per QP, the NIC
 * thread's time from the doorbells to the last CQE; the bytes checked. */
static void round_run(struct side *s, unsigned r)
{
	size_t len = (size_t)nq * 8;
	struct nm_cuda_stats st;
	uint64_t t0, t1;

	gdak_test_fill(h_buf, len, 1000 + r);
	xfer(s->src, gdak_mr_lkey(s->ms), h_buf, gdak_mr_rkey(m_h), (uint32_t)len);
	for (unsigned c = 0; c < nq; c++)
		for (unsigned i = 0; i < per; i++)
			nu_post_rdma(&qa[c], MLX5_OPCODE_RDMA_WRITE, s->src + (size_t)c * 8, 8,
				     gdak_mr_lkey(s->ms), (uint64_t)(uintptr_t)(s->dst + c * 8),
				     gdak_mr_rkey(s->md), 0, i == per - 1 ? NU_SIG : 0);
	nm_cuda_stats_get(&st);
	t0 = nic_ns();
	for (unsigned c = 0; c < nq; c++)
		nu_ring(&qa[c]);
	t1 = nic_done(st.cqes_stream);
	for (unsigned c = 0; c < nq; c++)
		reap(&qa[c]);
	s->ns[s->n++ % 1024] = (double)(t1 - t0) / ((double)nq * per);
	memset(h_buf + len, 0xee, len);
	xfer(h_buf + len, gdak_mr_lkey(m_h), s->dst, gdak_mr_rkey(s->md), (uint32_t)len);
	if (memcmp(h_buf, h_buf + len, len)) {
		size_t i = 0;

		while (h_buf[i] == h_buf[len + i])
			i++;
		gdak_test_fail(__FILE__, __LINE__,
			       "%s round %u: destination byte %zu is 0x%02x, "
			       "expected 0x%02x",
			       s->name, r, i, h_buf[len + i], h_buf[i]);
	} else {
		gdak_test_passed++;
	}
}

int main(int argc, char **argv)
{
	struct gdak_qp_attr at = { .sq_depth = 256, .mtu = 1024, .nic_thread = 0 };
	struct side sd[2] = { { .kind = GDAK_MEM_HOST_MAPPED, .name = "host-mapped" },
			      { .kind = GDAK_MEM_GPU, .name = "gpu" } };
	struct nm_cuda_stats st0, st1;
	double mh, mg;

	for (int i = 1; i + 1 < argc; i += 2) {
		unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 0);

		if (!strcmp(argv[i], "--rounds"))
			rounds = v;
		else if (!strcmp(argv[i], "--per"))
			per = v;
		else if (!strcmp(argv[i], "--qps"))
			nq = v;
		else if (!strcmp(argv[i], "--gpu-only")) /* for a profile of that side */
			gpu_only = v;
	}
	if (!rounds || !per || per > 255 || !nq || nq > MAXQ) {
		fprintf(stderr, "usage: %s [--rounds N] [--per 1..255] [--qps 1..%d]\n", argv[0],
			MAXQ);
		return 2;
	}
	REQUIRE_EQ(gdak_nic_set_threads(1), 0);
	REQUIRE_EQ(gdak_nic_set_poll(GDAK_NIC_POLL_SPIN), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	nu_need_gpu_mem(ctx);
	printf("path: %s\n", nm_cuda_path());
	REQUIRE_EQ(gdak_mem_alloc(ctx, (size_t)nq * 16, GDAK_MEM_HOST, (void **)&h_buf), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, h_buf, (size_t)nq * 16, GDAK_ACCESS_ALL, &m_h), 0);
	for (unsigned c = 0; c < nq; c++)
		REQUIRE_EQ(nu_pair(ctx, &at, &qa[c], &qb[c]), 0);
	nic_tid = gdak_test_nic_tid();
	REQUIRE(nic_tid > 0);
	for (int k = 0; k < 2; k++)
		side_init(&sd[k]);
	/* a round of each first: the batch engine and the pages exist */
	round_run(&sd[0], 0);
	round_run(&sd[1], 0);
	sd[0].n = sd[1].n = 0;
	nm_cuda_stats_get(&st0);
	for (unsigned i = 0; i < rounds; i++) {
		if (!gpu_only)
			round_run(&sd[0], 1 + 2 * i);
		round_run(&sd[1], 2 + 2 * i);
	}
	nm_cuda_stats_get(&st1);
	mh = median(sd[0].ns, sd[0].n);
	mg = median(sd[1].ns, sd[1].n);
	printf("rate: %u QPs x %u 8-byte WRITEs a round, 1 NIC thread, %u rounds each: "
	       "NIC thread ns/WQE host-mapped %.1f, gpu %.1f (min %.1f .. max %.1f); gpu/host "
	       "%.2fx\n",
	       nq, per, rounds, mh, mg, sd[1].ns[0], sd[1].ns[sd[1].n - 1], mh > 0 ? mg / mh : 0);
	printf("engine: batched %llu (replaced %llu), submitted %llu, batches %llu, memop calls "
	       "%llu, launches %llu, memcpy-batch %llu, stream cqes %llu, queries %llu, slot waits %llu "
	       "(the GPU behind: the NIC thread waited)\n",
	       (unsigned long long)(st1.copies_batched - st0.copies_batched),
	       (unsigned long long)(st1.copies_replaced - st0.copies_replaced),
	       (unsigned long long)(st1.copies_submitted - st0.copies_submitted),
	       (unsigned long long)(st1.batches_kernel + st1.batches_memop + st1.batches_copy -
				    st0.batches_kernel - st0.batches_memop - st0.batches_copy),
	       (unsigned long long)(st1.calls_memop - st0.calls_memop),
	       (unsigned long long)(st1.calls_launch - st0.calls_launch),
	       (unsigned long long)(st1.calls_memcpy_batch - st0.calls_memcpy_batch),
	       (unsigned long long)(st1.cqes_stream - st0.cqes_stream),
	       (unsigned long long)(st1.queries - st0.queries),
	       (unsigned long long)(st1.slot_waits - st0.slot_waits));
	/* every GPU WRITE went through the batches */
	if (getenv("GDAK_CUDA_BATCH") && strcmp(getenv("GDAK_CUDA_BATCH"), "off"))
		CHECK(st1.copies_batched - st0.copies_batched >= (uint64_t)rounds * nq * per);
	for (int k = 0; k < 2; k++)
		side_fini(&sd[k]);
	for (unsigned c = 0; c < nq; c++) {
		nu_destroy(&qa[c]);
		nu_destroy(&qb[c]);
	}
	gdak_mr_dereg(m_h);
	gdak_mem_free(ctx, h_buf);
	gdak_close(ctx);
	return gdak_test_end();
}
