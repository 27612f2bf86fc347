/* SPDX-License-Identifier: MIT */
/*
 * gpu_batch.c - WRITEs into GPU memory as the CUDA engine batches them
 * (GDAK_CUDA_BATCH=kernel|memop|copy, docs/CUDA.md), host threads posting.
 * The same binary runs several ways (emu_tests/cuda/gpumem.cmake):
 *   gdak.nic.gpu_batch      against the stand-in driver (gpumem_fake.c,
 *                           asynchronous, chains run in adversarial order),
 *                           batching on: also checks that the copies went
 *                           through batch kernels and not one by one
 *   gdak.nic.gpu_batch_off  the same, GDAK_CUDA_BATCH=off (per-copy path);
 *                           _memop and _copy with those modes (copy: never a
 *                           kernel)
 *   gdak.cuda.gpu_batch     the real driver on a GPU machine (skips without)
 *
 * GPU memory is set and read back through RDMA READs (the engine's
 * synchronous per-copy path), so the checks do not trust the path tested.
 *
 *   small     200 WRITEs of 1..300 bytes under one doorbell, sources in GPU
 *             memory, host memory and inline, distinct destinations
 *   overlap   96 WRITEs to one 512-byte GPU range under one doorbell, every
 *             one different data and partly over earlier ones, some reading
 *             what an earlier one wrote: the range ends as applying them in
 *             WQE order gives
 *   readdep   READ into GPU memory, then a fenced WRITE of what it read,
 *             then a WRITE of that: every byte
 *   big       a 1 MiB WRITE, then small WRITEs into it, under one doorbell
 *   wrap      16-entry CQ, 600 signalled WRITEs (the CQ wraps 37 times)
 *   reopen    gdak_close, gdak_open with two NIC threads: WRITEs on the
 *             second; its batch engine built ahead when the GPU MR was
 *             registered (as the first context's was), none by a NIC thread
 *   qps       8 QP pairs on one NIC thread, 100 WRITEs each, one doorbell
 *             each, the same destination range per QP
 *   values    4/8-byte aligned inline WRITEs one by one, and four to one
 *             word under one doorbell (GDAK_CUDA_BATCH=memop: as stream
 *             write-values, no kernel)
 *   replace   256 8-byte puts to 16 addresses under one doorbell: the
 *             last one's bytes, the earlier ones replaced in their batch;
 *             a WRITE reading its own destination is not
 *   error     WRITEs, one with a bad rkey, more WRITEs under one doorbell:
 *             successes, the error CQE, flushes, in WQE order; the bytes
 *             of the first ones only
 *   visible   (stand-in) each CQE, the moment it shows, after the bytes of
 *             its WQE and those before it, in the stand-in's device memory;
 *             again on a collapsed CQ
 *   same      128 puts alternating between two GPU sources and
 *             destinations, a WRITE into one source, other sources in
 *             between, a self-overlapping WRITE twice: WQE order's bytes
 *   values_many  200 inline 8-byte WRITEs, one doorbell: with memop and
 *             copy a few cuStreamBatchMemOp calls, no kernel
 *   (gdak.nic.gpu_batch_gdr: all of it with a stand-in GDRCopy too, small
 *   host copies then CPU stores through its mapping; and user_mr: the
 *   caller's cuMemAlloc memory mapped while registered, WRITEs into it
 *   through the mapping, checked in the stand-in's memory; one GDRCopy
 *   cannot pin left on the driver's path, its WRITE landing too)
 *   hold      (stand-in driver, batching) no CQE while the copies cannot
 *             land; all of them, and the bytes, once they can; then small
 *             and overlap again with the kernel's completion word off
 *             (completions seen through the events alone)
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/types.h>
#include <gdak/env.h>

#include "gdak_test.h"
#include "nic_util.h"
#include "nm_cuda.h" /* the engine's counters */

#define TMO 20000
#define GLEN (2u << 20)

static struct gdak_ctx *ctx;
static int fake, batching, memop, copymode, cqe_stream;
static int engines; /* the engine batches (any GDAK_CUDA_BATCH but off; copy by default) */
static void (*fake_batch_calls)(unsigned long long *, unsigned long long *);
static void (*fake_hold)(int), (*fake_no_done)(int);
static void *(*fake_rw)(uint64_t, size_t);
static unsigned long long (*fake_memops)(void);
static unsigned long long (*fake_unfenced)(void);
static unsigned long long (*fake_copies_queued)(void);
static unsigned long long (*fake_dtod)(void);
static unsigned long long (*fake_big)(void);
static int fake_has_batch; /* the stand-in has cuMemcpyBatchAsync */
static void (*fake_stats)(unsigned long long *, unsigned long long *, unsigned long long *);

static uint8_t *g_dst, *g_src, *h_src, *h_got;
static struct gdak_mr *m_dst, *m_src, *m_hsrc, *m_hgot;

static struct gdak_mr *reg(void *p, size_t len)
{
	struct gdak_mr *mr = NULL;

	REQUIRE_EQ(gdak_mr_reg(ctx, p, len, GDAK_ACCESS_ALL, &mr), 0);
	return mr;
}

static unsigned long long replaced_since(const struct nm_cuda_stats *s0)
{
	struct nm_cuda_stats s1;

	nm_cuda_stats_get(&s1);
	return s1.copies_replaced - s0->copies_replaced;
}

static void stats(unsigned long long *l, unsigned long long *c, unsigned long long *d)
{
	*l = *c = *d = 0;
	if (fake_stats)
		fake_stats(l, c, d);
}

/* Wait for n CQEs of q, all successful. */
static void reap(struct nu_qp *q, unsigned n)
{
	struct gdak_mlx5_cqe_fields f;

	for (unsigned i = 0; i < n; i++) {
		REQUIRE_EQ(nu_poll(q, 0, &f, TMO), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	}
}

/* gpu[off..off+len) <- host bytes, through a READ (the per-copy path). */
static void gpu_set(struct nu_qp *q, uint8_t *gpu, struct gdak_mr *gm, const void *bytes,
		    uint32_t len)
{
	memcpy(h_got, bytes, len);
	nu_post_rdma(q, MLX5_OPCODE_RDMA_READ, gpu, len, gdak_mr_lkey(gm),
		     (uint64_t)(uintptr_t)h_got, gdak_mr_rkey(m_hgot), 0, NU_SIG);
	nu_ring(q);
	reap(q, 1);
}

/* host <- gpu[0..len), through a READ. */
static void gpu_get(struct nu_qp *q, void *out, const uint8_t *gpu, struct gdak_mr *gm,
		    uint32_t len)
{
	memset(h_got, 0xee, len);
	nu_post_rdma(q, MLX5_OPCODE_RDMA_READ, h_got, len, gdak_mr_lkey(m_hgot),
		     (uint64_t)(uintptr_t)gpu, gdak_mr_rkey(gm), 0, NU_SIG);
	nu_ring(q);
	reap(q, 1);
	memcpy(out, h_got, len);
}

enum src_kind {
	S_GPU,
	S_HOST,
	S_INLINE
};

/* One WRITE of len bytes into g_dst + doff; the source picked by kind (and
 * at soff of g_src / h_src); model[] gets the same bytes. */
static void post_write(struct nu_qp *q, enum src_kind k, uint32_t soff, uint32_t doff, uint32_t len,
		       unsigned flags, uint8_t *model, const uint8_t *gpu_src_model)
{
	const uint8_t *bytes = k == S_GPU ? gpu_src_model + soff : h_src + soff;

	if (k == S_GPU)
		nu_post_rdma(q, MLX5_OPCODE_RDMA_WRITE, g_src + soff, len, gdak_mr_lkey(m_src),
			     (uint64_t)(uintptr_t)(g_dst + doff), gdak_mr_rkey(m_dst), 0, flags);
	else
		nu_post_rdma(q, MLX5_OPCODE_RDMA_WRITE, h_src + soff, len, gdak_mr_lkey(m_hsrc),
			     (uint64_t)(uintptr_t)(g_dst + doff), gdak_mr_rkey(m_dst), 0,
			     flags | (k == S_INLINE ? NU_INLINE : 0));
	memmove(model + doff, bytes, len);
}

static uint8_t *gsrc_model;

static void check_dst(struct nu_qp *q, const uint8_t *model, uint32_t len, const char *what)
{
	uint8_t *got = malloc(len);

	REQUIRE(got != NULL);
	gpu_get(q, got, g_dst, m_dst, len);
	if (memcmp(got, model, len)) {
		uint32_t i = 0;

		while (got[i] == model[i])
			i++;
		gdak_test_fail(__FILE__, __LINE__, "%s: GPU byte %u is 0x%02x, expected 0x%02x",
			       what, i, got[i], model[i]);
	} else {
		gdak_test_passed++;
	}
	free(got);
}

static void reset_dst(struct nu_qp *q, uint8_t *model, uint32_t len)
{
	memset(model, 0, len);
	for (uint32_t off = 0; off < len; off += 65536)
		gpu_set(q, g_dst + off, m_dst, model + off, len - off < 65536 ? len - off : 65536);
}

/* A zeroed model of g_dst[0..len), and g_dst zeroed to match it. */
static uint8_t *zeroed_model(struct nu_qp *q, uint32_t len)
{
	uint8_t *model = malloc(len);

	REQUIRE(model != NULL);
	reset_dst(q, model, len);
	return model;
}

/* Ring q's doorbell and reap n CQEs, all successful: then g_dst[0..len)
 * must hold model's bytes. */
static void ring_check(struct nu_qp *q, unsigned n, const uint8_t *model, uint32_t len,
		       const char *what)
{
	nu_ring(q);
	reap(q, n);
	check_dst(q, model, len, what);
}

static void test_small(struct nu_qp *a)
{
	enum {
		N = 200,
		LEN = 65536
	};
	uint8_t *model = zeroed_model(a, LEN);
	unsigned long long l0, c0, d0, l1, c1, d1;
	unsigned sig = 0;
	uint32_t doff = 0;

	stats(&l0, &c0, &d0);
	for (unsigned i = 0; i < N; i++) {
		enum src_kind k = (enum src_kind)(i % 3);
		uint32_t len = k == S_INLINE ? 1 + i % 40 : 1 + (i * 37) % 300;
		unsigned f = (i % 16 == 15 || i == N - 1) ? NU_SIG : 0;

		post_write(a, k, (i * 11) % 4096, doff, len, f, model, gsrc_model);
		sig += f != 0;
		doff += len + (i & 7);
	}
	nu_ring(a);
	reap(a, sig);
	stats(&l1, &c1, &d1);
	check_dst(a, model, LEN, "small writes");
	if (fake && copymode) {
		/* the copy engines only: no kernel, every WRITE one copy */
		CHECK_EQ(l1 - l0, 0);
		CHECK_EQ(c1 - c0, N);
	} else if (fake && batching) {
		/* every WRITE was a descriptor of a batch kernel, none a copy */
		CHECK_EQ(d1 - d0, N);
		CHECK_EQ(c1 - c0, 0);
		CHECK(l1 - l0 >= 1 && l1 - l0 <= N / 2);
		printf("small: %llu batch launches for %u WRITEs\n", l1 - l0, N);
	} else if (fake) {
		CHECK_EQ(l1 - l0, 0);
	}
	free(model);
}

static void test_overlap(struct nu_qp *a)
{
	enum {
		N = 96,
		LEN = 4096
	};
	uint8_t *model = zeroed_model(a, LEN);

	for (unsigned i = 0; i < N; i++) {
		uint32_t len = 8 + (i * 29) % 120, doff = (i * 53) % (512 - 128);

		if (i % 5 == 4) {
			/* from what an earlier WRITE put into the range: a
			 * source in GPU memory meeting a destination in flight */
			uint32_t soff = (i * 17) % (512 - 128);

			nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_dst + soff, len,
				     gdak_mr_lkey(m_dst),
				     (uint64_t)(uintptr_t)(g_dst + 1024 + doff),
				     gdak_mr_rkey(m_dst), 0, 0);
			memmove(model + 1024 + doff, model + soff, len);
			/* and back over the range */
			nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_dst + 1024 + doff, len,
				     gdak_mr_lkey(m_dst), (uint64_t)(uintptr_t)(g_dst + soff / 2),
				     gdak_mr_rkey(m_dst), 0, 0);
			memmove(model + soff / 2, model + 1024 + doff, len);
			continue;
		}
		post_write(a, (enum src_kind)(i % 3), (i * 97) % 3000, doff,
			   i % 3 == S_INLINE ? (len > 40 ? 40 : len) : len, 0, model, gsrc_model);
	}
	nu_post_nop(a, NU_SIG);
	ring_check(a, 1, model, LEN, "overlapping writes in WQE order");
	free(model);
}

static void test_readdep(struct nu_qp *a)
{
	enum {
		LEN = 8192
	};
	uint8_t *model = zeroed_model(a, LEN), *pat = malloc(3000);

	REQUIRE(pat != NULL);
	gdak_test_fill(pat, 3000, 77);
	memcpy(h_src + 8192, pat, 3000);
	/* READ host -> GPU dst[0..3000) */
	nu_post_rdma(a, MLX5_OPCODE_RDMA_READ, g_dst, 3000, gdak_mr_lkey(m_dst),
		     (uint64_t)(uintptr_t)(h_src + 8192), gdak_mr_rkey(m_hsrc), 0, 0);
	memcpy(model, pat, 3000);
	/* the WRITE of what it read (fenced, as IBA wants after a READ) */
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_dst + 100, 2000, gdak_mr_lkey(m_dst),
		     (uint64_t)(uintptr_t)(g_dst + 4000), gdak_mr_rkey(m_dst), 0, NU_FENCE);
	memmove(model + 4000, model + 100, 2000);
	/* and a WRITE of that */
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_dst + 4500, 64, gdak_mr_lkey(m_dst),
		     (uint64_t)(uintptr_t)(g_dst + 7000), gdak_mr_rkey(m_dst), 0, NU_SIG);
	memmove(model + 7000, model + 4500, 64);
	ring_check(a, 1, model, LEN, "READ then dependent WRITEs");
	free(model);
	free(pat);
}

static void test_big(struct nu_qp *a)
{
	enum {
		LEN = 1 << 20
	};
	uint8_t *model = zeroed_model(a, LEN);

	/* 1 MiB from host memory (too big for a batch: a copy of its own) */
	post_write(a, S_HOST, 0, 0, LEN, 0, model, gsrc_model);
	for (unsigned i = 0; i < 20; i++)
		post_write(a, (enum src_kind)(i % 3), i * 100, (i * 40009) % (LEN - 512),
			   i % 3 == S_INLINE ? 24 : 300, 0, model, gsrc_model);
	/* and 1 MiB GPU -> GPU over all of it... */
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_src, LEN, gdak_mr_lkey(m_src),
		     (uint64_t)(uintptr_t)(g_dst + 4096), gdak_mr_rkey(m_dst), 0, 0);
	memmove(model + 4096, gsrc_model, LEN - 4096);
	/* ...then small ones again */
	for (unsigned i = 0; i < 10; i++)
		post_write(a, (enum src_kind)(i % 2), i * 64, 5000 + i * 20, 64, 0, model,
			   gsrc_model);
	nu_post_nop(a, NU_SIG);
	ring_check(a, 1, model, LEN, "big and small writes");
	free(model);
}

/* GDAK_CUDA_BIG's answer for this run: the engine's wide copy kernel
 * takes an aligned large GPU -> GPU copy (kernel, or auto with a batch mode
 * that launches kernels anyway), else the driver's copy. */
static int big_by_kernel(void)
{
	const char *b = gdak_env_raw("GDAK_CUDA_BIG");

	if (b && !strcmp(b, "kernel"))
		return 1;
	if (b && strcmp(b, "auto"))
		return 0;
	return batching && !copymode;
}

/*
 * GDAK_CUDA_CQE=stream: large WRITEs (too big for a batch: copies of their
 * own on the batch stream) in consecutive NIC passes, one doorbell each,
 * rung after the NIC has queued the previous copy, then a signalled NOP.
 * Every range lands and the NOP's CQE comes after them; with the stand-in,
 * no write-value between the copies (the pass end does not submit a batch
 * of copies already on the stream): the NOP's CQE word and the one
 * completion word are the only ones (one would run before the CQE shows
 * for every pass that submitted its copies' completion word).
 */
static void test_big_passes(struct nu_qp *a)
{
	enum {
		K = 6,
		LEN = 256 << 10
	};
	uint8_t *model = zeroed_model(a, K * LEN);
	unsigned long long v0 = 0, v1 = 0, d0 = 0, b0 = 0;
	struct nm_cuda_stats s0, s1;
	int bigk = big_by_kernel();
	const char *pw = gdak_env_raw("GDAK_CUDA_PASS_WORD");
	int count = fake && cqe_stream && fake_memops && fake_copies_queued &&
		    !(pw && !strcmp(pw, "1"));

	if (count)
		v0 = fake_memops();
	if (count && fake_dtod)
		d0 = fake_dtod();
	if (count && fake_big)
		b0 = fake_big();
	nm_cuda_stats_get(&s0);
	for (unsigned i = 0; i < K; i++) {
		unsigned long long q0 = count ? fake_copies_queued() : 0;
		uint64_t t0 = gdak_test_now_ns();

		nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_src + i * 4096, LEN, gdak_mr_lkey(m_src),
			     (uint64_t)(uintptr_t)(g_dst + (size_t)i * LEN), gdak_mr_rkey(m_dst), 0,
			     0);
		memcpy(model + (size_t)i * LEN, gsrc_model + i * 4096, LEN);
		nu_ring(a);
		/* the NIC has taken it (no CQE to say so: unsignalled) */
		while (count && fake_copies_queued() == q0 &&
		       gdak_test_now_ns() - t0 < TMO * 1000000ull)
			sched_yield();
		if (count)
			CHECK(fake_copies_queued() > q0);
	}
	nu_post_nop(a, NU_SIG);
	nu_ring(a);
	reap(a, 1);
	if (count)
		v1 = fake_memops();
	check_dst(a, model, K * LEN, "large WRITEs in consecutive passes");
	/* GPU -> GPU copies on the stream: the wide copy kernel (see
	 * big_by_kernel), else the device-to-device entry point
	 * (GDAK_CUDA_DTOD=0: cuMemcpyAsync), and the counters say so */
	if (count && fake_dtod && fake_big) {
		const char *dt = gdak_env_raw("GDAK_CUDA_DTOD");
		int on = !bigk && !(dt && !strcmp(dt, "0"));

		CHECK_EQ(fake_dtod() - d0, on ? (unsigned long long)K : 0ull);
		CHECK_EQ(fake_big() - b0, bigk ? (unsigned long long)K : 0ull);
		nm_cuda_stats_get(&s1);
		CHECK_EQ(s1.calls_dtod - s0.calls_dtod, on ? (uint64_t)K : 0);
		CHECK_EQ(s1.calls_big - s0.calls_big, bigk ? (uint64_t)K : 0);
		/* all but the first queued behind another of the same burst */
		CHECK(s1.calls_behind - s0.calls_behind <= K - 1);
	}
	if (count) {
		printf("big passes: %llu write-values for %u large WRITEs and a NOP\n", v1 - v0,
		       (unsigned)K);
		/* the CQE word has run; the completion word after it may not
		 * have yet (the stand-in's stream thread) */
		CHECK(v1 - v0 >= 1 && v1 - v0 <= 2);
	}
	/* equal large WRITEs under one doorbell (GDAK_CUDA_DIRECT_BATCH=1:
	 * one cuMemcpyBatchAsync at the pass end), a small WRITE into their
	 * range, another different large one over part of it, then the equal
	 * ones again: WQE order's bytes */
	nm_cuda_stats_get(&s0);
	for (unsigned i = 0; i < 4; i++)
		nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_src + 8192, LEN, gdak_mr_lkey(m_src),
			     (uint64_t)(uintptr_t)(g_dst + LEN), gdak_mr_rkey(m_dst), 0, 0);
	memcpy(model + LEN, gsrc_model + 8192, LEN);
	post_write(a, S_INLINE, 300, LEN + 4000, 16, 0, model, gsrc_model);
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_src + 64, LEN, gdak_mr_lkey(m_src),
		     (uint64_t)(uintptr_t)(g_dst + LEN + LEN / 2), gdak_mr_rkey(m_dst), 0, 0);
	memcpy(model + LEN + LEN / 2, gsrc_model + 64, LEN);
	for (unsigned i = 0; i < 3; i++)
		nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_src + 8192, LEN, gdak_mr_lkey(m_src),
			     (uint64_t)(uintptr_t)(g_dst + LEN), gdak_mr_rkey(m_dst), 0,
			     i == 2 ? NU_SIG : 0);
	memcpy(model + LEN, gsrc_model + 8192, LEN);
	ring_check(a, 1, model, K * LEN, "equal large WRITEs, others between");
	nm_cuda_stats_get(&s1);
	{
		const char *db = gdak_env_raw("GDAK_CUDA_DIRECT_BATCH");

		printf("equal large WRITEs: %llu copies batched together\n",
		       (unsigned long long)(s1.copies_dq_batched - s0.copies_dq_batched));
		if (cqe_stream && db && !strcmp(db, "1") && fake && fake_has_batch)
			CHECK(s1.copies_dq_batched - s0.copies_dq_batched >= 2);
		else if (!(db && !strcmp(db, "1")))
			CHECK_EQ(s1.copies_dq_batched - s0.copies_dq_batched, 0);
	}
	/* a value into the range of a large copy just before it (under one
	 * doorbell) lands after it: the first value after a copy keeps its
	 * barrier (the stand-in lands one without it before the copy) */
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_src, LEN, gdak_mr_lkey(m_src),
		     (uint64_t)(uintptr_t)g_dst, gdak_mr_rkey(m_dst), 0, 0);
	memcpy(model, gsrc_model, LEN);
	post_write(a, S_INLINE, 3000, 128, 8, NU_SIG, model, gsrc_model);
	ring_check(a, 1, model, K * LEN, "a value after a large copy into its range");
	/* the wide copy kernel's edges: a length that is no multiple of 16
	 * (its last bytes are block 0's), a source that is not 16-byte
	 * aligned (the driver's copy instead), each next to bytes that must
	 * stay as they are */
	nm_cuda_stats_get(&s0);
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_src + 16, LEN - 9, gdak_mr_lkey(m_src),
		     (uint64_t)(uintptr_t)(g_dst + 2 * LEN), gdak_mr_rkey(m_dst), 0, 0);
	memcpy(model + 2 * LEN, gsrc_model + 16, LEN - 9);
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_src + 3, LEN - 100, gdak_mr_lkey(m_src),
		     (uint64_t)(uintptr_t)(g_dst + 3 * LEN + 32), gdak_mr_rkey(m_dst), 0, NU_SIG);
	memcpy(model + 3 * LEN + 32, gsrc_model + 3, LEN - 100);
	ring_check(a, 1, model, K * LEN, "large WRITEs: an odd length, an unaligned source");
	nm_cuda_stats_get(&s1);
	printf("large WRITEs of odd length or alignment: %llu by the wide copy kernel\n",
	       (unsigned long long)(s1.calls_big - s0.calls_big));
	if (cqe_stream)
		CHECK_EQ(s1.calls_big - s0.calls_big, bigk ? (uint64_t)1 : 0);
	free(model);
}

static void test_wrap(void)
{
	struct gdak_qp_attr at = { .sq_depth = 16, .cq_depth = 16, .mtu = 1024, .nic_thread = 0 };
	enum {
		ROUNDS = 50,
		PER = 12,
		LEN = 4096
	};
	uint8_t *model;
	struct nu_qp a, b;

	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	model = zeroed_model(&a, LEN);
	for (unsigned r = 0; r < ROUNDS; r++) {
		for (unsigned i = 0; i < PER; i++)
			post_write(&a, (enum src_kind)((r + i) % 3), (r * 7 + i) * 8 % 4000,
				   ((r * PER + i) * 8) % LEN, 8, NU_SIG, model, gsrc_model);
		nu_ring(&a);
		reap(&a, PER);
	}
	check_dst(&a, model, LEN, "CQ wrap-around");
	nu_destroy(&a);
	nu_destroy(&b);
	free(model);
}

static void test_qps(void)
{
	struct gdak_qp_attr at = { .sq_depth = 256, .mtu = 1024, .nic_thread = 0 };
	enum {
		NQ = 8,
		N = 100,
		SLICE = 1024
	};
	struct nu_qp a[NQ], b[NQ];
	uint8_t *model;
	unsigned long long l0, c0, d0, l1, c1, d1;

	struct nm_cuda_stats r0;

	for (unsigned q = 0; q < NQ; q++)
		REQUIRE_EQ(nu_pair(ctx, &at, &a[q], &b[q]), 0);
	model = zeroed_model(&a[0], NQ * SLICE);
	stats(&l0, &c0, &d0);
	nm_cuda_stats_get(&r0);
	for (unsigned q = 0; q < NQ; q++) {
		for (unsigned i = 0; i < N; i++)
			post_write(&a[q], (enum src_kind)((q + i) % 3), (q * 131 + i * 8) % 4000,
				   q * SLICE + (i * 24) % (SLICE - 64), 8 + i % 57,
				   i == N - 1 ? NU_SIG : 0, model, gsrc_model);
	}
	for (unsigned q = 0; q < NQ; q++)
		nu_ring(&a[q]);
	for (unsigned q = 0; q < NQ; q++)
		reap(&a[q], 1);
	stats(&l1, &c1, &d1);
	check_dst(&a[0], model, NQ * SLICE, "8 QPs, one destination range each");
	if (fake && copymode) {
		CHECK_EQ(l1 - l0, 0);
		CHECK_EQ(c1 - c0 + replaced_since(&r0), NQ * N);
	} else if (fake && batching) {
		CHECK_EQ(d1 - d0 + replaced_since(&r0), NQ * N);
		CHECK_EQ(c1 - c0, 0);
		printf("qps: %llu batch launches for %u WRITEs\n", l1 - l0, NQ * N);
	}
	for (unsigned q = 0; q < NQ; q++) {
		nu_destroy(&a[q]);
		nu_destroy(&b[q]);
	}
	free(model);
}

/*
 * The error path behind batched WRITEs: under one doorbell 12 signalled
 * WRITEs into GPU memory (GPU, host and inline sources), one with a bad
 * rkey, 6 more.  The CQEs come in WQE order - 12 successes whose bytes
 * have landed, the error CQE (REMOTE_ACCESS_ERR, its WQE), WR_FLUSH_ERR for
 * the rest - however the CQEs are written (by the CPU after the batch, or
 * by the stream behind it, GDAK_CUDA_CQE=stream); the flushed WRITEs write
 * nothing.  On a QP pair of its own (it ends in ERR).
 */
static void test_error(struct nu_qp *check)
{
	struct gdak_qp_attr at = { .sq_depth = 64, .mtu = 1024, .nic_thread = 0 };
	enum {
		N1 = 12,
		N2 = 6,
		LEN = 1024
	};
	uint8_t *model = calloc(1, LEN), *junk = calloc(1, LEN);
	struct gdak_mlx5_cqe_fields f;
	struct nu_qp a, b;
	uint16_t bad, idx[N1 + N2];

	REQUIRE(model != NULL && junk != NULL);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	reset_dst(check, model, LEN);
	for (unsigned i = 0; i < N1; i++) {
		idx[i] = (uint16_t)a.pi;
		post_write(&a, (enum src_kind)(i % 3), i * 40, i * 32, 8 + i, NU_SIG, model,
			   gsrc_model);
	}
	bad = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, g_src, 16, gdak_mr_lkey(m_src),
			   (uint64_t)(uintptr_t)(g_dst + 600), gdak_mr_rkey(m_dst) ^ 0x5a00, 0,
			   NU_SIG);
	for (unsigned i = 0; i < N2; i++) {
		idx[N1 + i] = (uint16_t)a.pi;
		post_write(&a, (enum src_kind)(i % 3), 700 + i * 8, 640 + i * 32, 16, NU_SIG, junk,
			   gsrc_model);
	}
	nu_ring(&a);
	for (unsigned i = 0; i < N1; i++) {
		REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		CHECK_EQ(f.wqe_counter, idx[i]);
	}
	REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(f.wqe_counter, bad);
	for (unsigned i = 0; i < N2; i++) {
		REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
		CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
		CHECK_EQ(f.wqe_counter, idx[N1 + i]);
	}
	CHECK_EQ(nu_cqe_ready(&a, 0), 0);
	check_dst(check, model, LEN, "WRITEs before an error, none after");
	nu_destroy(&a);
	nu_destroy(&b);
	free(model);
	free(junk);
}

/*
 * A CQE is never visible before its data (stand-in driver): 48 signalled
 * WRITEs of distinct bytes into GPU memory under one doorbell; the moment
 * a CQE shows up, the bytes of its WQE and of every WQE before it must be
 * in the stand-in's device memory (read through its own view, not with a
 * READ, which would make the NIC drain its queue first).  Then the same
 * on a collapsed CQ, whose entry 0 is rewritten whole for every CQE (by
 * the stream with GDAK_CUDA_CQE=stream): whichever WQE its wqe_counter and
 * opcode name, that WQE's bytes and those before it are there.
 */
static void test_visible(struct nu_qp *check)
{
	enum {
		N = 48,
		W = 16
	};
	uint8_t *model = calloc(1, N * W);
	const uint8_t *dev;

	REQUIRE(model != NULL);
	if (!fake || !fake_rw)
		goto out;
	dev = fake_rw((uint64_t)(uintptr_t)g_dst, N * W);
	REQUIRE(dev != NULL);
	for (int cc = 0; cc < 2; cc++) {
		struct gdak_qp_attr at = { .sq_depth = 128,
					   .cq_depth = 128,
					   .mtu = 1024,
					   .nic_thread = 0,
					   .flags = cc ? GDAK_QP_F_SCQ_COLLAPSED : 0 };
		struct gdak_mlx5_cqe_fields f;
		uint16_t idx[N];
		struct nu_qp a, b;
		unsigned seen = 0, bad = 0;

		REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
		reset_dst(check, model, N * W);
		for (unsigned i = 0; i < N; i++) {
			idx[i] = (uint16_t)a.pi;
			post_write(&a, (enum src_kind)(i % 3), 1000 + i * 24 + cc, i * W, W, NU_SIG,
				   model, gsrc_model);
		}
		nu_ring(&a);
		if (!cc) {
			for (unsigned i = 0; i < N; i++) {
				REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
				CHECK_EQ(f.wqe_counter, idx[i]);
				bad += memcmp(dev, model, (size_t)(i + 1) * W) != 0;
			}
		} else {
			const uint8_t *e0 = (const uint8_t *)a.d->scq.cqes;
			uint64_t t0 = gdak_test_now_ns();

			while (seen < N && gdak_test_now_ns() - t0 < TMO * 1000000ull) {
				uint64_t tail = __atomic_load_n(
					(const uint64_t *)(const void *)(e0 + 56),
					__ATOMIC_ACQUIRE);
				uint16_t wc = gdak_be16toh((uint16_t)(tail >> 32));
				unsigned k;

				if ((tail >> 60) != MLX5_CQE_REQ) {
					sched_yield();
					continue;
				}
				for (k = 0; k < N && idx[k] != wc; k++)
					;
				if (k == N || k + 1 <= seen) {
					/* nothing new yet: under valgrind (one thread
					 * runs at a time, unfairly) a poll that never
					 * yields starves the NIC thread */
					sched_yield();
					continue;
				}
				bad += memcmp(dev, model, (size_t)(k + 1) * W) != 0;
				seen = k + 1;
			}
			CHECK_EQ(seen, N);
		}
		CHECK_EQ(bad, 0);
		printf("visible%s: %u CQEs, each seen after its bytes\n",
		       cc ? " (collapsed CQ)" : "", cc ? seen : (unsigned)N);
		nu_destroy(&a);
		nu_destroy(&b);
	}
out:
	free(model);
}

/* Aligned 4/8-byte inline WRITEs (put_value, signals): waited for one by
 * one, and four to one word under one doorbell (the last one stays). */
static void test_values(struct nu_qp *a)
{
	enum {
		N = 64,
		LEN = 1024
	};
	uint8_t *model = zeroed_model(a, LEN);
	unsigned long long l0, c0, d0, l1, c1, d1, v0 = 0, v1 = 0, m0 = 0, m1 = 0, k0 = 0, k1 = 0;

	stats(&l0, &c0, &d0);
	if (fake_memops)
		v0 = fake_memops();
	if (fake_batch_calls)
		fake_batch_calls(&m0, &k0);
	for (unsigned i = 0; i < N; i++) {
		uint32_t len = i % 2 ? 4 : 8, doff = i * 8;

		post_write(a, S_INLINE, i * 16, doff, len, NU_SIG, model, gsrc_model);
		nu_ring(a);
		reap(a, 1);
	}
	stats(&l1, &c1, &d1);
	if (fake_memops)
		v1 = fake_memops();
	if (fake_batch_calls)
		fake_batch_calls(&m1, &k1);
	for (unsigned i = 0; i < 4; i++)
		post_write(a, S_INLINE, 600 + i * 8, 520, 8, i == 3 ? NU_SIG : 0, model,
			   gsrc_model);
	ring_check(a, 1, model, LEN, "4/8-byte values");
	if (fake && (memop || copymode)) {
		/* one by one: stream write-values (and their completion words),
		 * no kernel */
		CHECK_EQ(l1 - l0, 0);
		if (cqe_stream) {
			/* one submission each: the value, the CQE's last 8 bytes
			 * (unless its batch had landed before the completer got to
			 * it: then the CPU stores them), the completion word */
			CHECK_EQ(m1 - m0, N);
			CHECK(v1 - v0 >= 2 * N && v1 - v0 <= 3 * N);
			printf("values: %llu of %u CQEs written by the stream\n", v1 - v0 - 2 * N,
			       (unsigned)N);
		} else {
			CHECK_EQ(v1 - v0, 2 * N);
		}
	} else if (fake && batching) {
		CHECK_EQ(d1 - d0, N);
	}
	if (fake && batching)
		CHECK_EQ(c1 - c0, 0);
	free(model);
}

/*
 * One address put to over and over (a CTA's put_bw loop): 256 8-byte
 * WRITEs from GPU memory to 4 destinations under one doorbell; each
 * destination ends with its last WRITE's bytes, and the batches copy far
 * fewer than 256 (a copy with the same destination replaces the earlier
 * one of its batch).  Then a WRITE that reads its own destination after
 * one into it, and one that writes half over it: both must run.
 */
static void test_replace(struct nu_qp *a)
{
	enum {
		N = 256,
		NDST = 4,
		LEN = 1024
	};
	uint8_t *model = zeroed_model(a, LEN);
	struct nm_cuda_stats s0, s1;

	nm_cuda_stats_get(&s0);
	for (unsigned i = 0; i < N; i++)
		post_write(a, S_GPU, i * 8, (i % NDST) * 8, 8, i == N - 1 ? NU_SIG : 0, model,
			   gsrc_model);
	nu_ring(a);
	reap(a, 1);
	nm_cuda_stats_get(&s1);
	check_dst(a, model, LEN, "repeated puts to 4 addresses");
	if (batching) {
		printf("replace: %llu of %u copies replaced, %llu batches\n",
		       (unsigned long long)(s1.copies_replaced - s0.copies_replaced), N,
		       (unsigned long long)(s1.batches_kernel + s1.batches_copy + s1.batches_memop -
					    s0.batches_kernel - s0.batches_copy -
					    s0.batches_memop));
		CHECK_EQ(s1.copies_batched - s0.copies_batched, N);
		CHECK(s1.copies_replaced - s0.copies_replaced > 0);
		CHECK_EQ(s1.copies_submitted - s0.copies_submitted + s1.copies_replaced -
				 s0.copies_replaced,
			 N);
	}
	/* 64..71 <- src; 64..71 <- 64..71 (reads the WRITE before: kept, a
	 * no-op); 64..71 <- 68..75 (reads half of it) */
	post_write(a, S_GPU, 2000, 64, 8, 0, model, gsrc_model);
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_dst + 64, 8, gdak_mr_lkey(m_dst),
		     (uint64_t)(uintptr_t)(g_dst + 64), gdak_mr_rkey(m_dst), 0, 0);
	post_write(a, S_GPU, 3000, 72, 8, 0, model, gsrc_model);
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_dst + 68, 8, gdak_mr_lkey(m_dst),
		     (uint64_t)(uintptr_t)(g_dst + 64), gdak_mr_rkey(m_dst), 0, NU_SIG);
	memmove(model + 64, model + 68, 8);
	ring_check(a, 1, model, LEN, "a WRITE reading its own destination is not replaced");
	free(model);
}

/* 200 aligned 8-byte inline WRITEs to distinct words under one doorbell:
 * with memop / copy, stream memory operations in a few cuStreamBatchMemOp
 * calls (not one call per value), most without a memory barrier (they
 * meet nothing), and no kernel.  Then values that meet under one doorbell:
 * an 8-byte word, then a 4-byte value into its upper half, 32 times side
 * by side - the second of each pair must keep its barrier (the stand-in
 * lands a value without one before everything since the last barrier). */
/*
 * same: 8-byte puts from one GPU source to one destination over and over
 * (the engine joins an equal copy without the granule table), under one
 * doorbell with what must break that: a WRITE into the source between two
 * equal puts (the later one carries the new bytes), another source to the
 * destination and then the first again, and a WRITE whose source meets
 * its destination posted twice (both run: the second reads what the first
 * wrote).
 */
static void test_same(struct nu_qp *a)
{
	enum {
		N = 64,
		LEN = 1024
	};
	uint8_t *model = zeroed_model(a, LEN);
	struct nm_cuda_stats s0;

	for (unsigned i = 0; i < LEN; i++)
		model[i] = (uint8_t)(i * 7 + 3);
	gpu_set(a, g_dst, m_dst, model, LEN);
	nm_cuda_stats_get(&s0);
	for (unsigned i = 0; i < N; i++) {
		post_write(a, S_GPU, 1000, 0, 8, 0, model, gsrc_model);
		post_write(a, S_GPU, 1016, 8, 8, 0, model, gsrc_model);
	}
	/* g_src[1000..1008) <- host bytes, then the equal put again */
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, h_src + 3000, 8, gdak_mr_lkey(m_hsrc),
		     (uint64_t)(uintptr_t)(g_src + 1000), gdak_mr_rkey(m_src), 0, 0);
	memcpy(gsrc_model + 1000, h_src + 3000, 8);
	post_write(a, S_GPU, 1000, 0, 8, 0, model, gsrc_model);
	post_write(a, S_GPU, 1000, 0, 8, 0, model, gsrc_model);
	/* another source into 8..16, then the first one's again */
	post_write(a, S_GPU, 1032, 8, 8, 0, model, gsrc_model);
	post_write(a, S_GPU, 1016, 8, 8, 0, model, gsrc_model);
	/* 68..76 <- 64..72, twice */
	for (int k = 0; k < 2; k++) {
		nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, g_dst + 64, 8, gdak_mr_lkey(m_dst),
			     (uint64_t)(uintptr_t)(g_dst + 68), gdak_mr_rkey(m_dst), 0,
			     k ? NU_SIG : 0);
		memmove(model + 68, model + 64, 8);
	}
	ring_check(a, 1, model, LEN,
		   "equal puts, a WRITE into their source, a self-overlapping pair");
	{
		uint8_t got[8];

		gpu_get(a, got, g_src + 1000, m_src, 8);
		CHECK_MEM(got, gsrc_model + 1000, 8);
	}
	if (batching) {
		printf("same: %llu of %u copies replaced\n", replaced_since(&s0), 2 * N + 7);
		CHECK(replaced_since(&s0) >= N);
	}
	free(model);
}

static void test_values_many(struct nu_qp *a)
{
	enum {
		N = 200,
		LEN = 2048,
		PAIRS = 32
	};
	uint8_t *model = zeroed_model(a, LEN);
	unsigned long long l0, c0, d0, l1, c1, d1, m0 = 0, m1 = 0, k0 = 0, k1 = 0;
	unsigned long long u0 = 0, u1 = 0, u2 = 0;
	const char *fences = gdak_env_raw("GDAK_CUDA_VALUE_FENCES");
	int fenced = fences && !strcmp(fences, "1");

	stats(&l0, &c0, &d0);
	if (fake_batch_calls)
		fake_batch_calls(&m0, &k0);
	if (fake_unfenced)
		u0 = fake_unfenced();
	for (unsigned i = 0; i < N; i++)
		post_write(a, S_INLINE, i * 8, i * 8, 8, i == N - 1 ? NU_SIG : 0, model,
			   gsrc_model);
	nu_ring(a);
	reap(a, 1);
	stats(&l1, &c1, &d1);
	if (fake_batch_calls)
		fake_batch_calls(&m1, &k1);
	if (fake_unfenced)
		u1 = fake_unfenced();
	check_dst(a, model, LEN, "200 values under one doorbell");
	if (fake && (memop || copymode) && fake_batch_calls) {
		printf("values: %llu cuStreamBatchMemOp calls for %u values, %llu without a "
		       "barrier\n",
		       m1 - m0, N, u1 - u0);
		CHECK_EQ(l1 - l0, 0);
		CHECK_EQ(c1 - c0, 0);
		CHECK(m1 - m0 >= 1 && m1 - m0 <= N / 4);
		/* all but (at most) the first of each batch */
		if (fake_unfenced && fenced)
			CHECK_EQ(u1 - u0, 0);
		else if (fake_unfenced)
			CHECK(u1 - u0 >= N - (m1 - m0) * 2 && u1 - u0 <= N);
	}
	reset_dst(a, model, LEN);
	for (unsigned i = 0; i < PAIRS; i++) {
		post_write(a, S_INLINE, 1000 + i * 8, i * 16, 8, 0, model, gsrc_model);
		post_write(a, S_INLINE, 1400 + i * 4, i * 16 + 4, 4, i == PAIRS - 1 ? NU_SIG : 0,
			   model, gsrc_model);
	}
	nu_ring(a);
	reap(a, 1);
	if (fake_unfenced)
		u2 = fake_unfenced();
	check_dst(a, model, LEN, "meeting values under one doorbell land in WQE order");
	if (fake && (memop || copymode) && fake_unfenced && !fenced) {
		printf("values: %llu of %u meeting values without a barrier\n", u2 - u1, 2 * PAIRS);
		/* memop: at most the first of each pair (copy mode closes the
		 * batch before the second: the completion word orders them) */
		if (memop)
			CHECK(u2 - u1 <= PAIRS);
		CHECK(u2 - u1 > 0);
	}
	free(model);
}

static void test_hold(struct nu_qp *a)
{
	enum {
		N = 16,
		LEN = 4096
	};
	uint8_t *model = zeroed_model(a, LEN);
	struct gdak_mlx5_cqe_fields f;

	fake_hold(1);
	for (unsigned i = 0; i < N; i++)
		post_write(a, (enum src_kind)(i % 3), i * 64, i * 100, 33, NU_SIG, model,
			   gsrc_model);
	nu_ring(a);
	/* the copies cannot land: no CQE may come (however long we look) */
	CHECK_EQ(nu_poll(a, 0, &f, 300), -ETIMEDOUT);
	fake_hold(0);
	reap(a, N);
	check_dst(a, model, LEN, "CQEs only after the data");
	free(model);
}

/* A second gdak_open after gdak_close: new NIC threads take the batch
 * engines the old ones left (their context must be made current again). */
/*
 * GDAK_CUDA_CQE=stream, GDAK_CUDA_HOLD=2 (stand-in, its GPU stopped): two
 * batches submitted in two passes cannot land; the pass that takes a third
 * doorbell's WRITEs keeps its batch open (two still running), the next
 * pass, with nothing new, submits it.  Then the GPU runs: every CQE, in
 * order, after every byte - WQE order's bytes across the three batches
 * (the third overwrites part of the first two).
 */
static void test_hold_open(struct nu_qp *a)
{
	enum {
		LEN = 4096
	};
	uint8_t *model = zeroed_model(a, LEN);
	const char *hv = gdak_env_raw("GDAK_CUDA_HOLD");
	int on = hv && strcmp(hv, "0"); /* off by default */
	struct gdak_mlx5_cqe_fields f;
	struct nm_cuda_stats s0, s1;

	nm_cuda_stats_get(&s0);
	fake_hold(1);
	for (unsigned r = 0; r < 3; r++) {
		struct nm_cuda_stats st;
		uint64_t t0 = gdak_test_now_ns();

		nm_cuda_stats_get(&st);
		for (unsigned i = 0; i < 8; i++)
			post_write(a, (enum src_kind)((r + i) % 3), (r * 8 + i) * 40,
				   (r * 700 + i * 96) % (LEN - 64), 40, i == 7 ? NU_SIG : 0, model,
				   gsrc_model);
		nu_ring(a);
		/* the NIC has taken them: the CQE is queued behind the data */
		for (;;) {
			nm_cuda_stats_get(&s1);
			if (s1.cqes_stream > st.cqes_stream)
				break;
			REQUIRE(gdak_test_now_ns() - t0 < TMO * 1000000ull);
			sched_yield();
		}
	}
	CHECK_EQ(nu_poll(a, 0, &f, 100), -ETIMEDOUT);
	fake_hold(0);
	reap(a, 3);
	nm_cuda_stats_get(&s1);
	check_dst(a, model, LEN, "three batches, the last kept open a pass");
	printf("hold: %llu pass ends kept a batch open\n",
	       (unsigned long long)(s1.holds - s0.holds));
	if (on)
		CHECK(s1.holds - s0.holds >= 1);
	else
		CHECK_EQ(s1.holds - s0.holds, 0);
	free(model);
}

/*
 * (stand-in GDRCopy) GPU memory of the caller's - cuMemAlloc, not
 * gdak_mem_alloc, as NVSHMEM's heap or a GPUNetIO buffer - registered as an
 * MR: mapped at registration (SYNC_MEMOPS set first), so small WRITEs from
 * host memory into it are CPU stores (the counter moves); unmapped at
 * deregistration.  The bytes
 * are read through the stand-in driver's own view of its memory.
 */
static void test_user_mr(struct nu_qp *a)
{
	unsigned long long raw = 0;
	int (*cu_alloc)(unsigned long long *, size_t), (*cu_free)(unsigned long long);
	unsigned long long (*sync_memops)(void), sm0;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	struct nm_cuda_stats s0, s1;
	struct gdak_mr *mr;
	uint8_t *p, *view;

	REQUIRE(lib);
	*(void **)(&cu_alloc) = dlsym(lib, "cuMemAlloc_v2");
	*(void **)(&cu_free) = dlsym(lib, "cuMemFree_v2");
	*(void **)(&sync_memops) = dlsym(lib, "gdak_fake_gpu_sync_memops");
	REQUIRE(cu_alloc && cu_free && sync_memops);
	/* a 64 KiB GPU page of the allocation: what GDRCopy pins */
	REQUIRE_EQ(cu_alloc(&raw, (size_t)3 << 16), 0);
	p = (uint8_t *)(uintptr_t)((raw + 0xffff) & ~0xffffull);
	CHECK_EQ(nm_cuda_gdr_mapped(p, 4096), 0);
	sm0 = sync_memops();
	mr = reg(p, 4096);
	CHECK_EQ(nm_cuda_gdr_mapped(p, 4096), 1);
	/* SYNC_MEMOPS set on the pinned range first, as GDRCopy asks */
	CHECK_EQ(sync_memops() - sm0, 1);
	nm_cuda_stats_get(&s0);
	for (unsigned i = 0; i < 16; i++)
		nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, h_src + i * 256, 256, gdak_mr_lkey(m_hsrc),
			     (uint64_t)(uintptr_t)(p + i * 256), gdak_mr_rkey(mr), 0,
			     i == 15 ? NU_SIG : 0);
	nu_ring(a);
	reap(a, 1);
	nm_cuda_stats_get(&s1);
	printf("user MR: %llu copies through its GDRCopy mapping\n",
	       (unsigned long long)(s1.copies_gdr - s0.copies_gdr));
	CHECK(s1.copies_gdr - s0.copies_gdr >= 16);
	view = fake_rw((uint64_t)(uintptr_t)p, 4096);
	REQUIRE(view != NULL);
	CHECK_MEM(view, h_src, 4096);
	gdak_mr_dereg(mr);
	CHECK_EQ(nm_cuda_gdr_mapped(p, 4096), 0);
	CHECK_EQ(cu_free(raw), 0);

	/* an allocation smaller than a 64 KiB GPU page: GDRCopy refuses the
	 * pin, the MR stays on the driver's path, and its WRITEs land */
	REQUIRE_EQ(cu_alloc(&raw, 4096), 0);
	p = (uint8_t *)(uintptr_t)raw;
	mr = reg(p, 4096);
	CHECK_EQ(nm_cuda_gdr_mapped(p, 4096), 0);
	nm_cuda_stats_get(&s0);
	nu_post_rdma(a, MLX5_OPCODE_RDMA_WRITE, h_src + 4096, 256, gdak_mr_lkey(m_hsrc),
		     (uint64_t)(uintptr_t)p, gdak_mr_rkey(mr), 0, NU_SIG);
	nu_ring(a);
	reap(a, 1);
	nm_cuda_stats_get(&s1);
	CHECK_EQ(s1.copies_gdr - s0.copies_gdr, 0);
	view = fake_rw((uint64_t)(uintptr_t)p, 256);
	REQUIRE(view != NULL);
	CHECK_MEM(view, h_src + 4096, 256);
	gdak_mr_dereg(mr);
	CHECK_EQ(cu_free(raw), 0);
}

static void test_reopen(void)
{
	struct gdak_qp_attr at = { .sq_depth = 256, .mtu = 1024, .nic_thread = 1 };
	uint8_t *g, *h, *back, want[2048];
	struct gdak_mr *mg, *mh, *mb;
	struct nu_qp a, b;
	struct gdak_mlx5_cqe_fields f;
	struct nm_cuda_stats s0, s1;
	int gdr = getenv("GPU_BATCH_EXPECT_GDR") != NULL;

	/* two NIC threads now: the pool holds the first context's engine, the
	 * GPU MR builds one more ahead; the WRITEs go on thread 1 */
	REQUIRE_EQ(gdak_nic_set_threads(2), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 2048, GDAK_MEM_GPU, (void **)&g), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 2048, GDAK_MEM_HOST, (void **)&h), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 2048, GDAK_MEM_HOST, (void **)&back), 0);
	nm_cuda_stats_get(&s0);
	mg = reg(g, 2048);
	mh = reg(h, 2048);
	mb = reg(back, 2048);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	gdak_test_fill(h, 2048, 31);
	memcpy(want, h, 2048);
	for (unsigned i = 0; i < 16; i++)
		nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, h + i * 128, 128, gdak_mr_lkey(mh),
			     (uint64_t)(uintptr_t)(g + i * 128), gdak_mr_rkey(mg), 0,
			     i == 15 ? NU_SIG : 0);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_READ, back, 2048, gdak_mr_lkey(mb),
		     (uint64_t)(uintptr_t)g, gdak_mr_rkey(mg), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_MEM(back, want, 2048);
	nm_cuda_stats_get(&s1);
	if (!gdr) {
		CHECK_EQ(s1.engines_ahead - s0.engines_ahead, engines ? 1u : 0u);
		CHECK_EQ(s1.engines_built - s0.engines_built, 0);
	}
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(mg);
	gdak_mr_dereg(mh);
	gdak_mr_dereg(mb);
	gdak_mem_free(ctx, g);
	gdak_mem_free(ctx, h);
	gdak_mem_free(ctx, back);
	gdak_close(ctx);
	gdak_nic_set_threads(1);
}

int main(void)
{
	struct gdak_qp_attr at = { .sq_depth = 1024, .mtu = 1024, .nic_thread = 0 };
	struct nu_qp a, b;
	void *lib;
	struct nm_cuda_stats st0, st1;
	const char *mode;
	int gdr;

	REQUIRE_EQ(gdak_nic_set_threads(1), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	nu_need_gpu_mem(ctx);
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (lib) {
		*(void **)(&fake_hold) = dlsym(lib, "gdak_fake_gpu_hold");
		*(void **)(&fake_stats) = dlsym(lib, "gdak_fake_gpu_stats");
		*(void **)(&fake_no_done) = dlsym(lib, "gdak_fake_gpu_no_done");
		*(void **)(&fake_memops) = dlsym(lib, "gdak_fake_gpu_memops");
		*(void **)(&fake_unfenced) = dlsym(lib, "gdak_fake_gpu_unfenced");
		*(void **)(&fake_copies_queued) = dlsym(lib, "gdak_fake_gpu_copies_queued");
		*(void **)(&fake_rw) = dlsym(lib, "gdak_fake_gpu_rw");
		*(void **)(&fake_dtod) = dlsym(lib, "gdak_fake_gpu_dtod");
		*(void **)(&fake_big) = dlsym(lib, "gdak_fake_gpu_big");
		fake_has_batch = dlsym(lib, "cuMemcpyBatchAsync_v2") != NULL;
		fake = fake_hold && fake_stats;
	}
	mode = gdak_env_raw("GDAK_CUDA_BATCH");
	memop = mode && !strcmp(mode, "memop");
	copymode = mode && !strcmp(mode, "copy");
	batching = mode && (!strcmp(mode, "kernel") || memop || copymode);
	engines = !mode || strcmp(mode, "off");
	cqe_stream = batching && gdak_env_raw("GDAK_CUDA_CQE") &&
		     !strcmp(gdak_env_raw("GDAK_CUDA_CQE"), "stream");
	if (lib)
		*(void **)(&fake_batch_calls) = dlsym(lib, "gdak_fake_gpu_batch_calls");
	/* with the stand-in GDRCopy (gdak.nic.gpu_batch_gdr) the small host
	 * copies bypass the batches: only the bytes are checked, as on a GPU */
	gdr = getenv("GPU_BATCH_EXPECT_GDR") != NULL;
	if (gdr)
		fake = batching = memop = copymode = 0;
	printf("driver: %s, GDAK_CUDA_BATCH=%s%s%s\n", fake ? "stand-in" : "real",
	       mode ? mode : "(default)", cqe_stream ? ", GDAK_CUDA_CQE=stream" : "",
	       gdr ? ", GDRCopy stand-in" : "");
	nm_cuda_stats_get(&st0);

	REQUIRE_EQ(gdak_mem_alloc(ctx, GLEN, GDAK_MEM_GPU, (void **)&g_dst), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, GLEN, GDAK_MEM_GPU, (void **)&g_src), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, GLEN, GDAK_MEM_HOST, (void **)&h_src), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, GLEN, GDAK_MEM_HOST, (void **)&h_got), 0);
	m_dst = reg(g_dst, GLEN);
	/* the first MR on GPU memory builds the NIC thread's batch engine
	 * ahead, on this thread; the NIC thread never builds one */
	nm_cuda_stats_get(&st1);
	if (!gdr) {
		CHECK_EQ(st1.engines_ahead - st0.engines_ahead, engines ? 1u : 0u);
		CHECK_EQ(st1.engines_built - st0.engines_built, 0);
	}
	m_src = reg(g_src, GLEN);
	m_hsrc = reg(h_src, GLEN);
	m_hgot = reg(h_got, GLEN);
	gdak_test_fill(h_src, GLEN, 5);
	gsrc_model = malloc(GLEN);
	REQUIRE(gsrc_model != NULL);
	gdak_test_fill(gsrc_model, GLEN, 9);
	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	for (uint32_t off = 0; off < GLEN; off += 65536)
		gpu_set(&a, g_src + off, m_src, gsrc_model + off, 65536);
	/* one batched WRITE first: the NIC thread's batch engine exists (its
	 * setup's copy is not counted in the tests' statistics) */
	nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, g_src, 8, gdak_mr_lkey(m_src),
		     (uint64_t)(uintptr_t)g_dst, gdak_mr_rkey(m_dst), 0, NU_SIG);
	nu_ring(&a);
	reap(&a, 1);

	test_small(&a);
	test_overlap(&a);
	test_readdep(&a);
	test_big(&a);
	test_big_passes(&a);
	test_wrap();
	test_qps();
	test_values(&a);
	test_error(&a);
	test_visible(&a);
	test_replace(&a);
	test_same(&a);
	test_values_many(&a);
	if (fake && batching) {
		test_hold(&a);
		if (cqe_stream)
			test_hold_open(&a);
		/* completions through the events alone (no completion word) */
		if (fake_no_done) {
			fake_no_done(1);
			test_small(&a);
			test_overlap(&a);
			fake_no_done(0);
		}
	}

	if (gdr && fake_rw)
		test_user_mr(&a);

	nm_cuda_stats_get(&st1);
	printf("GDRCopy copies: %llu\n", (unsigned long long)(st1.copies_gdr - st0.copies_gdr));
	printf("batch engines: %llu built ahead, %llu by the NIC thread\n",
	       (unsigned long long)(st1.engines_ahead - st0.engines_ahead),
	       (unsigned long long)(st1.engines_built - st0.engines_built));
	if (!gdr) {
		CHECK_EQ(st1.engines_ahead - st0.engines_ahead, engines ? 1u : 0u);
		CHECK_EQ(st1.engines_built - st0.engines_built, 0);
	}
	if (gdr)
		CHECK(st1.copies_gdr - st0.copies_gdr > 0);
	else if (fake)
		CHECK_EQ(st1.copies_gdr - st0.copies_gdr, 0);
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(m_dst);
	gdak_mr_dereg(m_src);
	gdak_mr_dereg(m_hsrc);
	gdak_mr_dereg(m_hgot);
	gdak_mem_free(ctx, g_dst);
	gdak_mem_free(ctx, g_src);
	gdak_mem_free(ctx, h_src);
	gdak_mem_free(ctx, h_got);
	free(gsrc_model);
	gdak_close(ctx);
	test_reopen();
	return gdak_test_end();
}
