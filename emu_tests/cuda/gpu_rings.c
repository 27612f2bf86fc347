/* SPDX-License-Identifier: MIT */
/*
 * gpu_rings.c - QPs whose SQ, RQ, CQs and doorbell records are GPU memory
 * (GDAK_QP_F_QUEUES_GPU on emu, nic_model/nm_ring_gpu.c), host threads
 * playing the device.  The device writes its rings through the CUDA driver
 * (cuMemcpyAsync on a stream of its own): it keeps a host mirror of each
 * ring, builds WQEs there with nic_util.h, pushes them to GPU memory, then
 * rings the host register / proxy word; it polls CQEs by copying the slot
 * back.  Runs against the stand-in driver (gpumem_fake.c: GPU memory the
 * CPU cannot touch, asynchronous streams, an owner-byte write log; label
 * unit) and against a real GPU (gdak.cuda.gpu_rings; skips without one).
 *
 *   layout    the exported descriptor names GPU memory for the rings and
 *             records, host memory for the register and proxy word; the
 *             GPU rings after create hold byte for byte what host rings do
 *   handlers  DB, BF and CPU proxy: 300 signalled WRITEs, 1 or 5 per
 *             doorbell, through a 64-WQEBB SQ and a 16-entry CQ (both
 *             wrap), every byte and every CQE's index checked; 20 SENDs
 *             into receive WQEs posted in GPU memory
 *   owner     (stand-in) the owner byte of every CQE slot: copies only ever
 *             write it "not ready" (opcode INVALID), the stream write-value
 *             after them writes the real one - once per CQE
 *   fault     GDAK_FAULTS-style err rule on a GPU ring: the error CQE, then
 *             flushes, in the GPU CQ
 *   ext       nm_ext.h objects on GPU memory (what a DEVX umem in cudaMalloc
 *             memory becomes): CQ buffer and record, SQ, RQ and QP record
 *             in GPU memory, UAR page in host memory; the descriptor names
 *             the caller's memory, 40 WRITEs through an 8-entry CQ, a GPU
 *             UAR page refused
 *   (gdak.nic.gpu_rings_gdr: all of it with a stand-in GDRCopy too - the
 *   NIC's own GPU blocks allocated mapped, the caller's rings pinned: every
 *   CQE a CPU store through a mapping, none through the driver)
 *   strict    a BlueFlame copy that differs from the GPU ring (rule
 *             bf_mismatch, LOCAL_QP_OP_ERR CQE); a register rung past a
 *             GPU record that stays behind (ring_without_record, read from
 *             GPU memory at the idle check)
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/types.h>
#include <gdak/nic.h>

#include "gdak_test.h"
#include "nic_util.h"
#include "nm_ext.h"
#include "nm_loc.h" /* nm_rg_stats */

#define TMO 20000

typedef unsigned long long devptr;
static int (*cu_memcpy)(devptr, devptr, size_t, void *);
static int (*cu_sync)(void *);
static int (*cu_query)(void *);
static int (*cu_attr)(void *, int, devptr);
static void *ts;

struct fwatch {
	uint32_t slot;
	uint8_t val, by_value;
};
static void (*fake_watch)(devptr, size_t);
static unsigned (*fake_watched)(struct fwatch *, unsigned);
static int (*cu_alloc)(devptr *, size_t);
static int (*cu_free)(devptr);
/* gdak.nic.gpu_rings_gdr: a stand-in GDRCopy too - every ring hook is a CPU
 * load or store through a mapping, none a driver copy */
static int gdr;

static struct gdak_ctx *ctx;

static void h2d(void *g, const void *h, size_t len)
{
	REQUIRE_EQ(cu_memcpy((devptr)(uintptr_t)g, (devptr)(uintptr_t)h, len, ts), 0);
	REQUIRE_EQ(cu_sync(ts), 0);
}

static void d2h(void *h, const void *g, size_t len)
{
	REQUIRE_EQ(cu_memcpy((devptr)(uintptr_t)h, (devptr)(uintptr_t)g, len, ts), 0);
	REQUIRE_EQ(cu_sync(ts), 0);
}

static int is_dev(const void *p)
{
	unsigned t = 0;

	return !cu_attr(&t, 2, (devptr)(uintptr_t)p) && t == 2;
}

/* A QP as the test's device sees it: the real descriptor (GPU addresses)
 * and a mirror descriptor whose rings are host copies. */
struct gq {
	struct nu_qp q;	       /* q.d = &m */
	struct gdak_dev_qp *d; /* the exported one */
	struct gdak_dev_qp m;
	uint8_t *sq, *rq, *scq, *rcq;
	uint32_t rec[2], scq_rec[2], rcq_rec[2];
	uint64_t pushed; /* SQ WQEBBs pushed to GPU memory */
};

static void gq_init(struct gq *g, struct nu_qp *q)
{
	struct gdak_dev_qp *d = q->d;

	memset(g, 0, sizeof(*g));
	g->q = *q;
	g->d = d;
	g->m = *d;
	g->sq = calloc(d->sq_wqebb_cnt, 64);
	g->scq = calloc(d->scq.ncqe, 64);
	REQUIRE(g->sq && g->scq);
	d2h(g->scq, d->scq.cqes, (size_t)d->scq.ncqe * 64);
	g->m.sq_buf = g->sq;
	g->m.dbrec = g->rec;
	g->m.scq.cqes = g->scq;
	g->m.scq.dbrec = g->scq_rec;
	if (d->rq_buf) {
		g->rq = calloc(d->rq_wqe_cnt, (size_t)1 << d->rq_log_stride);
		g->rcq = calloc(d->rcq.ncqe, 64);
		REQUIRE(g->rq && g->rcq);
		d2h(g->rcq, d->rcq.cqes, (size_t)d->rcq.ncqe * 64);
		g->m.rq_buf = g->rq;
		g->m.rcq.cqes = g->rcq;
		g->m.rcq.dbrec = g->rcq_rec;
	}
	g->q.d = &g->m;
}

static void gq_fini(struct gq *g)
{
	free(g->sq);
	free(g->scq);
	free(g->rq);
	free(g->rcq);
}

/* The posted WQEs and the send record to GPU memory (wrap handled). */
static void gq_push(struct gq *g)
{
	uint32_t cnt = g->d->sq_wqebb_cnt;

	while (g->pushed < g->q.pi) {
		uint32_t s = (uint32_t)g->pushed & (cnt - 1);
		uint32_t n = (uint32_t)(g->q.pi - g->pushed);

		if (n > cnt - s)
			n = cnt - s;
		h2d((uint8_t *)g->d->sq_buf + (size_t)s * 64, g->sq + (size_t)s * 64,
		    (size_t)n * 64);
		g->pushed += n;
	}
	g->rec[MLX5_SND_DBR] = gdak_mlx5_sq_dbrec_value((uint32_t)g->q.pi);
	h2d(&g->d->dbrec[MLX5_SND_DBR], &g->rec[MLX5_SND_DBR], 4);
}

/* Push, then ring per handler (host register / proxy word). */
static void gq_ring(struct gq *g)
{
	gq_push(g);
	nu_ring(&g->q);
}

static void gq_recv(struct gq *g, void *addr, uint32_t len, uint32_t lkey)
{
	size_t stride = (size_t)1 << g->d->rq_log_stride;
	uint32_t s = (uint32_t)g->q.rq_pi & (g->d->rq_wqe_cnt - 1);

	nu_post_recv(&g->q, addr, len, lkey);
	h2d((uint8_t *)g->d->rq_buf + s * stride, g->rq + s * stride, stride);
	h2d(&g->d->dbrec[MLX5_RCV_DBR], &g->rec[MLX5_RCV_DBR], 4);
}

/* The next CQE, copied from GPU memory; the consumer record pushed back. */
static int gq_poll(struct gq *g, int rcq, struct gdak_mlx5_cqe_fields *f)
{
	struct gdak_dev_cq *dc = rcq ? &g->d->rcq : &g->d->scq;
	struct gdak_dev_cq *mc = rcq ? &g->m.rcq : &g->m.scq;
	uint64_t ci = rcq ? g->q.rcq_ci : g->q.scq_ci;
	uint32_t slot = (uint32_t)ci & (dc->ncqe - 1);
	uint64_t end = gdak_test_now_ns() + (uint64_t)TMO * 1000000;

	for (;;) {
		cu_query(ts); /* the stand-in runs streams' work when asked */
		d2h((uint8_t *)mc->cqes + (size_t)slot * 64,
		    (uint8_t *)dc->cqes + (size_t)slot * 64, 64);
		if (nu_cqe_ready(&g->q, rcq))
			break;
		if (gdak_test_now_ns() > end)
			return -ETIMEDOUT;
		sched_yield();
	}
	REQUIRE_EQ(nu_poll(&g->q, rcq, f, 10), 0);
	h2d(dc->dbrec, mc->dbrec, 4);
	return 0;
}

static int pair(enum gdak_dev_db_handler h, uint32_t sq, uint32_t cq, uint32_t rq, struct nu_qp *a,
		struct nu_qp *b)
{
	struct gdak_qp_attr at = { .sq_depth = sq,
				   .cq_depth = cq,
				   .rq_depth = rq,
				   .rcq_depth = rq ? 16 : 0,
				   .rq_max_sge = 1,
				   .handler = h,
				   .mtu = 1024,
				   .nic_thread = 0,
				   .flags = GDAK_QP_F_QUEUES_GPU };

	return nu_pair(ctx, &at, a, b);
}

/* ---- layout ----------------------------------------------------------------- */

static void test_layout(void)
{
	struct nu_qp a, b;
	struct gdak_dev_qp *d;
	uint8_t *buf;
	size_t n;

	REQUIRE_EQ(pair(GDAK_DEV_DB_DB, 64, 16, 32, &a, &b), 0);
	d = a.d;
	CHECK(is_dev(d->sq_buf));
	CHECK(is_dev(d->dbrec));
	CHECK(is_dev(d->rq_buf));
	CHECK(is_dev(d->scq.cqes));
	CHECK(is_dev(d->scq.dbrec));
	CHECK(is_dev(d->rcq.cqes));
	CHECK(is_dev(d->rcq.dbrec));
	CHECK(!is_dev(d->db_reg));
	CHECK(!is_dev(d->proxy_pi));
	CHECK(!is_dev(d));
	n = (size_t)64 * 64;
	buf = malloc(n);
	REQUIRE(buf);
	/* a fresh ring: zero WQEs, zero records, CQEs zero with op_own 0xf1 */
	d2h(buf, d->sq_buf, n);
	for (size_t i = 0; i < n; i++)
		if (buf[i])
			CHECK_EQ(buf[i], 0);
	d2h(buf, d->rq_buf, (size_t)32 << d->rq_log_stride);
	for (size_t i = 0; i < ((size_t)32 << d->rq_log_stride); i++)
		if (buf[i])
			CHECK_EQ(buf[i], 0);
	d2h(buf, d->scq.cqes, 16 * 64);
	for (size_t i = 0; i < 16 * 64; i++)
		if (buf[i] != ((i & 63) == 63 ? GDAK_MLX5_CQE_INVALID_OP_OWN : 0))
			CHECK_EQ(buf[i], (i & 63) == 63 ? GDAK_MLX5_CQE_INVALID_OP_OWN : 0);
	d2h(buf, d->dbrec, 8);
	CHECK_EQ(((uint32_t *)(void *)buf)[0] | ((uint32_t *)(void *)buf)[1], 0);
	d2h(buf, d->scq.dbrec, 4);
	CHECK_EQ(((uint32_t *)(void *)buf)[0], 0);
	free(buf);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* ---- every handler ------------------------------------------------------------ */

static void test_handler(enum gdak_dev_db_handler h)
{
	struct nu_qp qa, qb;
	struct gq a, b;
	struct gdak_mr *ms, *md;
	uint8_t *src, *dst, *exp;
	const size_t len = 300 * 64;
	struct gdak_mlx5_cqe_fields f;
	uint64_t seed = 1000 + h;
	unsigned done = 0;
	uint8_t rbuf[20][64], sbuf[20][64];

	printf("handler %d\n", (int)h);
	REQUIRE_EQ(pair(h, 64, 16, 32, &qa, &qb), 0);
	gq_init(&a, &qa);
	gq_init(&b, &qb);
	src = malloc(len);
	dst = calloc(1, len);
	exp = calloc(1, len);
	REQUIRE(src && dst && exp);
	gdak_test_fill(src, len, seed);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, len, GDAK_ACCESS_LOCAL_WRITE, &ms), 0);
	REQUIRE_EQ(
		gdak_mr_reg(ctx, dst, len, GDAK_ACCESS_LOCAL_WRITE | GDAK_ACCESS_REMOTE_WRITE, &md),
		0);
	while (done < 300) {
		unsigned k = done < 100 ? 1 : 5, first = done;

		for (unsigned i = 0; i < k; i++, done++) {
			uint32_t l = 8 + (uint32_t)(done * 7) % 57;

			nu_post_rdma(&a.q, MLX5_OPCODE_RDMA_WRITE, src + (size_t)done * 64, l,
				     gdak_mr_lkey(ms),
				     (uint64_t)(uintptr_t)(dst + (size_t)done * 64),
				     gdak_mr_rkey(md), 0, NU_SIG);
			memcpy(exp + (size_t)done * 64, src + (size_t)done * 64, l);
		}
		gq_ring(&a);
		for (unsigned i = first; i < done; i++) {
			REQUIRE_EQ(gq_poll(&a, 0, &f), 0);
			CHECK_EQ(f.opcode, MLX5_CQE_REQ);
			CHECK_EQ(f.wqe_counter, (uint16_t)i);
		}
	}
	CHECK_MEM(dst, exp, len);
	/* SENDs into receive WQEs that live in GPU memory */
	for (int i = 0; i < 20; i++) {
		gdak_test_fill(sbuf[i], 64, seed + 7 + (uint64_t)i);
		memset(rbuf[i], 0, 64);
	}
	{
		struct gdak_mr *mr_s, *mr_r;

		REQUIRE_EQ(gdak_mr_reg(ctx, sbuf, sizeof(sbuf), GDAK_ACCESS_LOCAL_WRITE, &mr_s), 0);
		REQUIRE_EQ(gdak_mr_reg(ctx, rbuf, sizeof(rbuf), GDAK_ACCESS_LOCAL_WRITE, &mr_r), 0);
		for (int i = 0; i < 20; i++)
			gq_recv(&b, rbuf[i], 64, gdak_mr_lkey(mr_r));
		for (int i = 0; i < 20; i++) {
			nu_post_send(&a.q, MLX5_OPCODE_SEND, sbuf[i], 16 + (uint32_t)i,
				     gdak_mr_lkey(mr_s), 0, NU_SIG);
			gq_ring(&a);
			REQUIRE_EQ(gq_poll(&a, 0, &f), 0);
			CHECK_EQ(f.opcode, MLX5_CQE_REQ);
			REQUIRE_EQ(gq_poll(&b, 1, &f), 0);
			CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND);
			CHECK_EQ(f.byte_cnt, 16u + (uint32_t)i);
			CHECK_EQ(f.wqe_counter, (uint16_t)i);
			CHECK_MEM(rbuf[i], sbuf[i], 16 + (size_t)i);
		}
		gdak_mr_dereg(mr_s);
		gdak_mr_dereg(mr_r);
	}
	CHECK_EQ(gdak_qp_state(qa.qp), GDAK_QPS_RTS);
	gdak_mr_dereg(ms);
	gdak_mr_dereg(md);
	nu_destroy(&qa);
	nu_destroy(&qb);
	gq_fini(&a);
	gq_fini(&b);
	free(src);
	free(dst);
	free(exp);
}

/* ---- owner byte last (stand-in driver) --------------------------------------- */

static void test_owner(void)
{
	struct nu_qp qa, qb;
	struct gq a;
	struct gdak_mr *mr;
	uint64_t word = 0;
	struct gdak_mlx5_cqe_fields f;
	static struct fwatch log[4096];
	unsigned n, vals = 0, bad = 0;

	if (!fake_watch) {
		printf("owner: real driver, skipped (needs the stand-in's write log)\n");
		return;
	}
	REQUIRE_EQ(pair(GDAK_DEV_DB_DB, 64, 8, 0, &qa, &qb), 0);
	gq_init(&a, &qa);
	REQUIRE_EQ(
		gdak_mr_reg(ctx, &word, 8, GDAK_ACCESS_LOCAL_WRITE | GDAK_ACCESS_REMOTE_WRITE, &mr),
		0);
	fake_watch((devptr)(uintptr_t)a.d->scq.cqes, 8 * 64);
	/* 40 CQEs through 8 slots, 4 per doorbell (one pass, one batch) */
	for (int r = 0; r < 10; r++) {
		for (int i = 0; i < 4; i++)
			nu_post_rdma(&a.q, MLX5_OPCODE_RDMA_WRITE, &word, 8, gdak_mr_lkey(mr),
				     (uint64_t)(uintptr_t)&word, gdak_mr_rkey(mr), 0, NU_SIG);
		gq_ring(&a);
		for (int i = 0; i < 4; i++)
			REQUIRE_EQ(gq_poll(&a, 0, &f), 0);
	}
	n = fake_watched(log, 4096);
	REQUIRE(n <= 4096);
	if (gdr) {
		/* the CPU wrote every CQE through the mapping: the driver none */
		printf("owner: %u owner-byte writes by the driver (GDRCopy)\n", n);
		CHECK_EQ(n, 0u);
		fake_watch(0, 0);
		gdak_mr_dereg(mr);
		nu_destroy(&qa);
		nu_destroy(&qb);
		gq_fini(&a);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		if (log[i].by_value) {
			vals++;
			if ((log[i].val >> 4) != MLX5_CQE_REQ)
				bad++;
		} else if ((log[i].val >> 4) != MLX5_CQE_INVALID) {
			bad++; /* a copy made a CQE look ready */
		}
	}
	printf("owner: %u owner-byte writes, %u by write-value\n", n, vals);
	CHECK_EQ(vals, 40u);
	CHECK_EQ(bad, 0u);
	fake_watch(0, 0);
	gdak_mr_dereg(mr);
	nu_destroy(&qa);
	nu_destroy(&qb);
	gq_fini(&a);
}

/* ---- nm_ext.h on GPU memory ---------------------------------------------------- */

#define EXT_PAGE ((size_t)64 << 10)

struct ext_side {
	devptr raw; /* cuMemAlloc'd: three 64 KiB GPU pages */
	uint8_t *g; /* GPU: cq (8 x 64), cq record (+512), QP record (+576), sq (+1024), rq */
	uint8_t *uar;
	struct nm_cq *cq;
	struct nu_qp q;
};

static void ext_make(struct ext_side *e)
{
	struct nm_ext_cq_attr ca;
	struct nm_ext_qp_attr qa;
	struct gdak_qp *qp;
	uint8_t init[1024];

	devptr raw = 0;

	/* the caller's GPU memory (cuMemAlloc, as a DEVX umem in cudaMalloc
	 * memory), the rings in a 64 KiB GPU page of it: GDRCopy can pin that */
	REQUIRE_EQ(cu_alloc(&raw, 3 * EXT_PAGE), 0);
	e->raw = raw;
	e->g = (uint8_t *)(uintptr_t)((raw + EXT_PAGE - 1) & ~(devptr)(EXT_PAGE - 1));
	e->uar = aligned_alloc(4096, 4096);
	REQUIRE(e->uar);
	memset(e->uar, 0, 4096);
	/* what libmlx5 does to a fresh CQ and records, through the driver */
	memset(init, 0, sizeof(init));
	for (int i = 0; i < 8; i++)
		init[64 * i + 63] = GDAK_MLX5_CQE_INVALID_OP_OWN;
	h2d(e->g, init, sizeof(init));
	{
		uint8_t *z = calloc(1, 64 * 64 + 16 * 16);

		REQUIRE(z);
		h2d(e->g + 1024, z, 64 * 64 + 16 * 16);
		free(z);
	}
	CHECK_EQ(nm_ext_ring_kind(ctx, e->g, 512, "test ring"), 1);
	CHECK_EQ(nm_ext_ring_kind(ctx, e->uar, 4096, "test page"), 0);
	memset(&ca, 0, sizeof(ca));
	ca.buf = e->g;
	ca.ncqe = 8;
	ca.cqe_size = 64;
	ca.dbrec = (uint32_t *)(void *)(e->g + 512);
	REQUIRE_EQ(nm_ext_cq_create(ctx, &ca, &e->cq), 0);
	memset(&qa, 0, sizeof(qa));
	qa.sq = e->g + 1024;
	qa.sq_wqebb_cnt = 64;
	qa.rq = e->g + 1024 + 64 * 64;
	qa.rq_wqe_cnt = 16;
	qa.rq_stride = 16;
	qa.dbrec = (uint32_t *)(void *)(e->g + 576);
	qa.scq = qa.rcq = e->cq;
	qa.nic_thread = 0;
	/* the register page must stay host memory */
	{
		uint8_t *gp;

		REQUIRE_EQ(gdak_mem_alloc(ctx, 8192, GDAK_MEM_GPU, (void **)&gp), 0);
		qa.uar = (void *)(((uintptr_t)gp + 4095) & ~(uintptr_t)4095);
		gdak_set_log_level(GDAK_LOG_ERROR);
		CHECK_EQ(nm_ext_qp_create(ctx, &qa, &qp), -ENOTSUP);
		gdak_set_log_level(GDAK_LOG_WARN);
		gdak_mem_free(ctx, gp);
	}
	qa.uar = e->uar;
	REQUIRE_EQ(nm_ext_qp_create(ctx, &qa, &qp), 0);
	nu_qp_from(&e->q, qp);
	CHECK(e->q.d->sq_buf == (void *)(e->g + 1024));
	CHECK(e->q.d->rq_buf == (void *)(e->g + 1024 + 64 * 64));
	CHECK(e->q.d->dbrec == (uint32_t *)(void *)(e->g + 576));
	CHECK(e->q.d->scq.cqes == (void *)e->g);
	CHECK(e->q.d->scq.dbrec == (uint32_t *)(void *)(e->g + 512));
	CHECK((uint8_t *)(void *)e->q.d->db_reg == e->uar + 0x800);
}

static void test_ext(void)
{
	struct ext_side A, B;
	struct gdak_qp_info ia, ib;
	struct gq a;
	struct gdak_mr *ms, *md;
	uint8_t src[40 * 16], dst[40 * 16];
	struct gdak_mlx5_cqe_fields f;
	uint64_t s0[7], s1[7];

	ext_make(&A);
	ext_make(&B);
	nm_rg_stats(s0);
	REQUIRE_EQ(gdak_qp_info(A.q.qp, &ia), 0);
	REQUIRE_EQ(gdak_qp_info(B.q.qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(A.q.qp, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(B.q.qp, &ia), 0);
	gq_init(&a, &A.q);
	gdak_test_fill(src, sizeof(src), 77);
	memset(dst, 0, sizeof(dst));
	REQUIRE_EQ(gdak_mr_reg(ctx, src, sizeof(src), GDAK_ACCESS_LOCAL_WRITE, &ms), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, sizeof(dst),
			       GDAK_ACCESS_LOCAL_WRITE | GDAK_ACCESS_REMOTE_WRITE, &md),
		   0);
	for (int r = 0; r < 10; r++) {
		for (int i = 0; i < 4; i++)
			nu_post_rdma(&a.q, MLX5_OPCODE_RDMA_WRITE, src + 16 * (4 * r + i), 16,
				     gdak_mr_lkey(ms),
				     (uint64_t)(uintptr_t)(dst + 16 * (4 * r + i)),
				     gdak_mr_rkey(md), 0, NU_SIG);
		gq_ring(&a);
		for (int i = 0; i < 4; i++) {
			REQUIRE_EQ(gq_poll(&a, 0, &f), 0);
			CHECK_EQ(f.opcode, MLX5_CQE_REQ);
			CHECK_EQ(f.wqe_counter, (uint16_t)(4 * r + i));
		}
	}
	CHECK_MEM(dst, src, sizeof(dst));
	CHECK_EQ(nm_ext_cq_produced(A.cq), 40u);
	nm_rg_stats(s1);
	printf("ext: CQEs %llu through the driver, %llu through GDRCopy\n",
	       (unsigned long long)(s1[4] - s0[4]), (unsigned long long)(s1[6] - s0[6]));
	if (gdr) {
		CHECK_EQ(s1[4] - s0[4], 0);
		CHECK_EQ(s1[6] - s0[6], 40);
		CHECK(s1[5] > s0[5]);
	} else {
		CHECK_EQ(s1[4] - s0[4], 40);
		CHECK_EQ(s1[6] - s0[6], 0);
	}
	gdak_mr_dereg(ms);
	gdak_mr_dereg(md);
	gdak_qp_destroy(A.q.qp);
	gdak_qp_destroy(B.q.qp);
	CHECK_EQ(nm_ext_cq_destroy(A.cq), 0);
	CHECK_EQ(nm_ext_cq_destroy(B.cq), 0);
	gq_fini(&a);
	CHECK_EQ(cu_free(A.raw), 0);
	CHECK_EQ(cu_free(B.raw), 0);
	free(A.uar);
	free(B.uar);
}

/* ---- faults and strict checks -------------------------------------------------- */

static void test_fault(void)
{
	struct nu_qp qa, qb;
	struct gq a;
	struct gdak_mr *mr;
	uint64_t word = 0;
	struct gdak_mlx5_cqe_fields f;
	char spec[96];

	REQUIRE_EQ(pair(GDAK_DEV_DB_DB, 64, 16, 0, &qa, &qb), 0);
	gq_init(&a, &qa);
	REQUIRE_EQ(
		gdak_mr_reg(ctx, &word, 8, GDAK_ACCESS_LOCAL_WRITE | GDAK_ACCESS_REMOTE_WRITE, &mr),
		0);
	snprintf(spec, sizeof(spec), "err:qp=%u,wqe=2,syndrome=REMOTE_ACCESS", qa.qpn);
	REQUIRE_EQ(gdak_nic_set_faults(spec), 0);
	for (int i = 0; i < 4; i++)
		nu_post_rdma(&a.q, MLX5_OPCODE_RDMA_WRITE, &word, 8, gdak_mr_lkey(mr),
			     (uint64_t)(uintptr_t)&word, gdak_mr_rkey(mr), 0, NU_SIG);
	gq_ring(&a);
	for (int i = 0; i < 4; i++) {
		REQUIRE_EQ(gq_poll(&a, 0, &f), 0);
		CHECK_EQ(f.wqe_counter, (uint16_t)i);
		if (i < 2) {
			CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		} else {
			CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
			CHECK_EQ(f.syndrome, i == 2 ? MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR
						    : MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
		}
	}
	CHECK_EQ(gdak_qp_state(qa.qp), GDAK_QPS_ERR);
	REQUIRE_EQ(gdak_nic_set_faults(""), 0);
	gdak_mr_dereg(mr);
	nu_destroy(&qa);
	nu_destroy(&qb);
	gq_fini(&a);
}

static void test_strict(void)
{
	struct nu_qp qa, qb;
	struct gq a;
	struct gdak_mr *mr;
	uint64_t word = 0;
	struct gdak_mlx5_cqe_fields f;
	struct gdak_qp_error e;
	uint64_t end;

	/* BlueFlame copy != the ring in GPU memory */
	REQUIRE_EQ(pair(GDAK_DEV_DB_BF, 64, 16, 0, &qa, &qb), 0);
	gq_init(&a, &qa);
	REQUIRE_EQ(
		gdak_mr_reg(ctx, &word, 8, GDAK_ACCESS_LOCAL_WRITE | GDAK_ACCESS_REMOTE_WRITE, &mr),
		0);
	nu_post_rdma(&a.q, MLX5_OPCODE_RDMA_WRITE, &word, 8, gdak_mr_lkey(mr),
		     (uint64_t)(uintptr_t)&word, gdak_mr_rkey(mr), 0, NU_SIG);
	gq_push(&a);
	a.sq[40] ^= 0x5a; /* the mirror (what BlueFlame copies) differs from GPU memory */
	nu_ring(&a.q);
	REQUIRE_EQ(gq_poll(&a, 0, &f), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	REQUIRE_EQ(gdak_qp_query_error(qa.qp, &e), 0);
	CHECK_STR(e.rule, "bf_mismatch");
	nu_destroy(&qa);
	nu_destroy(&qb);
	gq_fini(&a);

	/* the register rung past a GPU record that stays behind */
	REQUIRE_EQ(pair(GDAK_DEV_DB_DB, 64, 16, 0, &qa, &qb), 0);
	gq_init(&a, &qa);
	nu_post_rdma(&a.q, MLX5_OPCODE_RDMA_WRITE, &word, 8, gdak_mr_lkey(mr),
		     (uint64_t)(uintptr_t)&word, gdak_mr_rkey(mr), 0, NU_SIG);
	gq_push(&a);
	nu_post_rdma(&a.q, MLX5_OPCODE_RDMA_WRITE, &word, 8, gdak_mr_lkey(mr),
		     (uint64_t)(uintptr_t)&word, gdak_mr_rkey(mr), 0, NU_SIG);
	{
		uint32_t rec = a.rec[MLX5_SND_DBR]; /* the record of the first WQE */

		gq_push(&a);
		a.rec[MLX5_SND_DBR] = rec;
		h2d(&a.d->dbrec[MLX5_SND_DBR], &rec, 4);
		/* the register alone (nu_ring would write the mirror's record) */
		{
			uint64_t v;

			memcpy(&v, a.sq + 64, 8);
			__atomic_store_n(a.d->db_reg, v, __ATOMIC_RELEASE);
		}
	}
	REQUIRE_EQ(gq_poll(&a, 0, &f), 0);
	REQUIRE_EQ(gq_poll(&a, 0, &f), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	end = gdak_test_now_ns() + (uint64_t)TMO * 1000000;
	do {
		REQUIRE_EQ(gdak_qp_query_error(qa.qp, &e), 0);
		if (!strcmp(e.last_rule, "ring_without_record"))
			break;
		sched_yield();
	} while (gdak_test_now_ns() < end);
	CHECK_STR(e.last_rule, "ring_without_record");
	CHECK_EQ(gdak_qp_state(qa.qp), GDAK_QPS_RTS);
	gdak_mr_dereg(mr);
	nu_destroy(&qa);
	nu_destroy(&qb);
	gq_fini(&a);
}

int main(void)
{
	struct nu_qp qa, qb;
	int (*ctx_retain)(void **, int), (*ctx_set)(void *), (*stream_create)(void **, unsigned);
	void *lib, *cctx = NULL;
	int r;

	REQUIRE_EQ(gdak_nic_set_threads(1), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	gdak_set_log_level(GDAK_LOG_ERROR);
	r = pair(GDAK_DEV_DB_DB, 64, 16, 0, &qa, &qb);
	gdak_set_log_level(GDAK_LOG_WARN);
	if (r == -ENOTSUP) {
		gdak_close(ctx);
		GDAK_TEST_SKIP("the NIC model has no CUDA memory engine here (no GPU or driver)");
	}
	REQUIRE_EQ(r, 0);
	nu_destroy(&qa);
	nu_destroy(&qb);
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	REQUIRE(lib);
	*(void **)(&cu_memcpy) = dlsym(lib, "cuMemcpyAsync");
	*(void **)(&cu_sync) = dlsym(lib, "cuStreamSynchronize");
	*(void **)(&cu_query) = dlsym(lib, "cuStreamQuery");
	*(void **)(&cu_attr) = dlsym(lib, "cuPointerGetAttribute");
	*(void **)(&ctx_retain) = dlsym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)(&ctx_set) = dlsym(lib, "cuCtxSetCurrent");
	*(void **)(&stream_create) = dlsym(lib, "cuStreamCreate");
	*(void **)(&fake_watch) = dlsym(lib, "gdak_fake_gpu_watch");
	*(void **)(&fake_watched) = dlsym(lib, "gdak_fake_gpu_watched");
	*(void **)(&cu_alloc) = dlsym(lib, "cuMemAlloc_v2");
	*(void **)(&cu_free) = dlsym(lib, "cuMemFree_v2");
	gdr = getenv("GPU_RINGS_EXPECT_GDR") != NULL;
	REQUIRE(cu_memcpy && cu_sync && cu_query && cu_attr && ctx_retain && ctx_set &&
		stream_create && cu_alloc && cu_free);
	{
		const char *dev = getenv("GDAK_CUDA_DEVICE");

		REQUIRE_EQ(ctx_retain(&cctx, dev ? atoi(dev) : 0), 0);
	}
	REQUIRE_EQ(ctx_set(cctx), 0);
	REQUIRE_EQ(stream_create(&ts, 1), 0);
	printf("driver: %s%s\n", fake_watch ? "stand-in" : "real", gdr ? ", GDRCopy stand-in" : "");

	test_layout();
	{
		uint64_t s0[7], s1[7];

		nm_rg_stats(s0);
		test_handler(GDAK_DEV_DB_DB);
		test_handler(GDAK_DEV_DB_BF);
		test_handler(GDAK_DEV_DB_CPU_PROXY);
		nm_rg_stats(s1);
		/* the NIC's own GPU blocks: allocated mapped with GDRCopy.
		 * nm_rg_stats (nm_loc.h): [4] CQEs through the driver, [5]
		 * reads and [6] CQEs through GDRCopy mappings */
		printf("handlers: CQEs %llu through the driver, %llu through GDRCopy; "
		       "%llu reads through GDRCopy\n",
		       (unsigned long long)(s1[4] - s0[4]), (unsigned long long)(s1[6] - s0[6]),
		       (unsigned long long)(s1[5] - s0[5]));
		if (gdr) {
			CHECK_EQ(s1[4] - s0[4], 0);
			CHECK(s1[6] - s0[6] >= 3 * 300);
			CHECK(s1[5] > s0[5]);
		} else {
			CHECK(s1[4] - s0[4] >= 3 * 300);
			CHECK_EQ(s1[6] - s0[6], 0);
			CHECK_EQ(s1[5] - s0[5], 0);
		}
	}
	test_owner();
	test_ext();
	test_fault();
	test_strict();
	gdak_close(ctx);
	return gdak_test_end();
}
