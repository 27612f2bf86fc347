/* SPDX-License-Identifier: MIT */
/*
 * capture_cuda.c - the ring capture's GPU path (core/trace/capture_cuda.c)
 * against a real CUDA driver: the rings live in GPU memory (cuMemAlloc, as
 * hw_mlx5's DEVX path puts them), the test plays the device by writing
 * WQEs, doorbell records and CQEs there with cuMemcpyHtoD, and the capture
 * must read them back with its own DMA copies.  The file is read back with
 * the trace reader and compared byte for byte, as gdak.capture.rings does
 * for host rings (the same cases: basic stream, send-queue loss, CQ loss by
 * the doorbell record and by cons_idx, a CQE slot reused, the 16-bit
 * producer index wrapping, the receive CQ), plus what only the GPU path has:
 * CQ copies in chunks that split at the ring's end, the capture thread
 * reading while the test writes, the caller's own CUDA context left current
 * after a manual pass, and a ring freed under the capture (a read error,
 * counted, never a crash).
 *
 * Three layouts, each case in each:
 *   gpu    rings and doorbell records in GPU memory (DEVX path, DB handler)
 *   hostdb rings in GPU memory, doorbell records in pinned host memory
 *   proxy  as hw_devx.c lays out a CPU_PROXY QP: records in mapped host
 *          memory, the producer index in the host-side proxy word
 *
 * Exits 77 without libcuda.so.1 or a CUDA device.  The driver API is loaded
 * with dlopen, so the binary needs nothing from the CUDA toolkit at run time.
 *
 * usage: gdak_capture_cuda [GDAK_TRACE_BINARY]   (the decoder checks need it)
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <time.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "capture_ring.h"
#include "capture_util.h"
#include "gdak_test.h"

#define QPN 0x000456u
#define SCQN 0x90u
#define RCQN 0x91u

/* ---- the driver API, loaded at run time ---------------------------------- */

typedef int curesult;
typedef unsigned long long cudevptr;
typedef struct cuctx_st *cuctx;

static struct {
	curesult (*Init)(unsigned);
	curesult (*DriverGetVersion)(int *);
	curesult (*DeviceGetCount)(int *);
	curesult (*DeviceGet)(int *, int);
	curesult (*DeviceGetName)(char *, int, int);
	curesult (*DevicePrimaryCtxRetain)(cuctx *, int);
	curesult (*CtxSetCurrent)(cuctx);
	curesult (*CtxGetCurrent)(cuctx *);
	curesult (*CtxCreate)(cuctx *, unsigned, int);
	curesult (*CtxDestroy)(cuctx);
	curesult (*MemAlloc)(cudevptr *, size_t);
	curesult (*MemFree)(cudevptr);
	curesult (*MemcpyHtoD)(cudevptr, const void *, size_t);
	curesult (*MemcpyDtoH)(void *, cudevptr, size_t);
	curesult (*MemHostAlloc)(void **, size_t, unsigned);
	curesult (*MemFreeHost)(void *);
	curesult (*GetErrorString)(curesult, const char **);
} cu;

#define CU_MEMHOSTALLOC_PORTABLE 0x1
#define CU_MEMHOSTALLOC_DEVICEMAP 0x2

static cuctx primary;
static int cu_dev;
static int fake_driver;	/* libcuda.so.1 is capture_cuda_fake.c */
/* the fake driver's hook: the next copy of >= at bytes is split at at and
 * fn runs in between (a write landing during the capture's read) */
static void (*fake_tear)(size_t at, void (*fn)(void *), void *arg);
#define BOUNCE_LEN (64u << 10)
static uint8_t *bounce;	/* pinned: dev_write's source */

static const char *cu_err(curesult r)
{
	const char *s = NULL;

	if (cu.GetErrorString && !cu.GetErrorString(r, &s) && s)
		return s;
	return "?";
}

/* A driver call that must succeed: its name and error on failure. */
#define CU_OK(call)                                                                        \
	do {                                                                               \
		curesult r_ = (call);                                                      \
		if (r_) {                                                                  \
			gdak_test_fail(__FILE__, __LINE__, "%s: CUDA error %d (%s)", #call, r_, \
				       cu_err(r_));                                        \
			exit(gdak_test_end() ? 1 : 1);                                     \
		}                                                                          \
	} while (0)

/* 0, or 77 (skip) with the reason printed. */
static int cu_load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	const char *env = getenv("GDAK_CUDA_DEVICE");
	char name[128] = "?";
	int n = 0, ver = 0, ordinal = env ? atoi(env) : 0;
	curesult r;

	if (!lib) {
		printf("SKIP: no CUDA driver (%s)\n", dlerror());
		return 77;
	}
#define SYM(f, s)                                                                         \
	do {                                                                              \
		*(void **)&cu.f = dlsym(lib, s);                                          \
		if (!cu.f) {                                                              \
			printf("SKIP: libcuda.so.1 lacks %s\n", s);                       \
			return 77;                                                        \
		}                                                                         \
	} while (0)
	SYM(Init, "cuInit");
	SYM(DriverGetVersion, "cuDriverGetVersion");
	SYM(DeviceGetCount, "cuDeviceGetCount");
	SYM(DeviceGet, "cuDeviceGet");
	SYM(DeviceGetName, "cuDeviceGetName");
	SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(CtxSetCurrent, "cuCtxSetCurrent");
	SYM(CtxGetCurrent, "cuCtxGetCurrent");
	/* optional: only own_context_kept needs them */
	*(void **)&cu.CtxCreate = dlsym(lib, "cuCtxCreate_v2");
	*(void **)&cu.CtxDestroy = dlsym(lib, "cuCtxDestroy_v2");
	SYM(MemAlloc, "cuMemAlloc_v2");
	SYM(MemFree, "cuMemFree_v2");
	SYM(MemcpyHtoD, "cuMemcpyHtoD_v2");
	SYM(MemcpyDtoH, "cuMemcpyDtoH_v2");
	SYM(MemHostAlloc, "cuMemHostAlloc");
	SYM(MemFreeHost, "cuMemFreeHost");
	SYM(GetErrorString, "cuGetErrorString");
#undef SYM
	if ((r = cu.Init(0))) {
		printf("SKIP: cuInit: %d (%s)\n", r, cu_err(r));
		return 77;
	}
	if (cu.DeviceGetCount(&n) || n <= 0) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	if (ordinal < 0 || ordinal >= n)
		ordinal = 0;	/* what capture_cuda.c does with a bad GDAK_CUDA_DEVICE */
	CU_OK(cu.DeviceGet(&cu_dev, ordinal));
	CU_OK(cu.DevicePrimaryCtxRetain(&primary, cu_dev));
	CU_OK(cu.CtxSetCurrent(primary));
	cu.DriverGetVersion(&ver);
	cu.DeviceGetName(name, sizeof(name), cu_dev);
	CU_OK(cu.MemHostAlloc((void **)&bounce, BOUNCE_LEN, CU_MEMHOSTALLOC_PORTABLE));
	fake_driver = dlsym(lib, "gdak_fake_cuda") != NULL;
	*(void **)&fake_tear = dlsym(lib, "gdak_fake_cuda_tear");
	printf("CUDA driver %d.%d, device %d of %d: %s%s\n", ver / 1000, ver % 1000 / 10, ordinal,
	       n, name, fake_driver ? " (gdak's fake driver: no GPU)" : "");
	return 0;
}

/* ---- rings in GPU memory -------------------------------------------------- */

enum layout { L_GPU, L_HOSTDB, L_PROXY };
static const char *const layout_names[] = {"gpu", "hostdb", "proxy"};

static enum layout lay;
static const char *bin;
static const char *cur_case = "start";
static unsigned case_failed0;	/* gdak_test_failed when the case began */
static char case_where[96];	/* "[layout/case] ", failure messages' prefix */

/* Doorbell records as hw_devx.c places them in their page. */
#define DBR_QP 0u
#define DBR_SCQ 64u
#define DBR_RCQ 128u
#define DBR_LEN 256u

struct gring {
	struct cr_ring cr;	/* cr.d in host memory, as hw_mlx5's descriptor */
	cudevptr sq, scq, rcq, rq, db;	/* GPU memory (db: L_GPU only) */
	uint8_t *hdb;		/* pinned host records (L_HOSTDB, L_PROXY) */
	uint64_t *proxy;	/* pinned host proxy word */
	uint8_t *scq_shadow, *rcq_shadow; /* what each CQ slot holds */
};

static struct gring *gr_of(struct cr_ring *c)
{
	return (struct gring *)(void *)((char *)c - offsetof(struct gring, cr));
}

static void *dptr(cudevptr p) { return (void *)(uintptr_t)p; }

/*
 * The simulated device's store: done when it returns.  cuMemcpyHtoD from
 * pageable memory may return once the bytes are staged, before they reach
 * GPU memory, and the capture's copies on its non-blocking stream are not
 * ordered after that DMA; from pinned memory the copy is synchronous.  So
 * every write goes through a pinned bounce buffer.
 */
static void dev_write(cudevptr dst, const void *src, size_t len)
{
	REQUIRE(len <= BOUNCE_LEN);
	memcpy(bounce, src, len);
	CU_OK(cu.MemcpyHtoD(dst, bounce, len));
}

static void fresh_cq(cudevptr cq, uint8_t *shadow, uint32_t n)
{
	memset(shadow, 0, (size_t)n * 64);
	for (uint32_t i = 0; i < n; i++)
		shadow[(size_t)i * 64 + 63] = GDAK_MLX5_CQE_INVALID_OP_OWN;
	dev_write(cq, shadow, (size_t)n * 64);
}

/* A WQE's WQEBBs go into the GPU ring one by one. */
static void gpu_put_wqebb(struct cr_ring *c, uint32_t slot, const uint8_t *bb)
{
	dev_write(gr_of(c)->sq + (cudevptr)slot * 64, bb, 64);
}

/* The "HCA" writes a CQE: one 64-byte write, owner byte included, as the
 * HCA's own PCIe write of a CQE; the shadow keeps what the slot holds. */
static void gpu_put_cqe(struct cr_ring *c, int recv, uint32_t slot, const uint8_t *cqe)
{
	struct gring *r = gr_of(c);

	memcpy((recv ? r->rcq_shadow : r->scq_shadow) + (size_t)slot * 64, cqe, 64);
	dev_write((recv ? r->rcq : r->scq) + (cudevptr)slot * 64, cqe, 64);
}

/* The device makes WQEs up to pi visible: the send doorbell record (DB) or
 * the proxy word (CPU_PROXY, whose record the proxy thread writes later). */
static void gpu_publish_pi(struct cr_ring *c, uint64_t pi)
{
	struct gring *r = gr_of(c);
	uint32_t v = gdak_mlx5_sq_dbrec_value((uint32_t)pi);

	if (lay == L_PROXY)
		__atomic_store_n(r->proxy, pi, __ATOMIC_RELEASE);
	else if (lay == L_HOSTDB)
		__atomic_store_n(&r->cr.d.dbrec[MLX5_SND_DBR], v, __ATOMIC_RELEASE);
	else
		dev_write(r->db + DBR_QP + 4 * MLX5_SND_DBR, &v, 4);
}

/* The device consumed the CQ up to ci: its doorbell record. */
static void gpu_consume(struct cr_ring *c, int recv, uint64_t ci)
{
	struct gring *r = gr_of(c);
	uint32_t v = gdak_mlx5_cq_dbrec_value((uint32_t)ci);
	uint32_t off = recv ? DBR_RCQ : DBR_SCQ;

	if (lay == L_GPU)
		dev_write(r->db + off, &v, 4);
	else
		__atomic_store_n((uint32_t *)(void *)(r->hdb + off), v, __ATOMIC_RELEASE);
}

static const struct cr_ring_ops gpu_ops = {
	.put_wqebb = gpu_put_wqebb,
	.put_cqe = gpu_put_cqe,
	.publish_pi = gpu_publish_pi,
	.consume = gpu_consume,
};

static struct gring *gr_new(uint32_t sq_cnt, uint32_t ncqe, int with_rq)
{
	struct gring *r = calloc(1, sizeof(*r));
	uint8_t zero[DBR_LEN] = {0};

	REQUIRE(r);
	CU_OK(cu.MemAlloc(&r->sq, (size_t)sq_cnt * 64));
	CU_OK(cu.MemAlloc(&r->scq, (size_t)ncqe * 64));
	r->scq_shadow = malloc((size_t)ncqe * 64);
	REQUIRE(r->scq_shadow);
	fresh_cq(r->scq, r->scq_shadow, ncqe);
	{
		uint8_t *z = calloc(sq_cnt, 64);
		REQUIRE(z);
		dev_write(r->sq, z, (size_t)sq_cnt * 64);
		free(z);
	}
	r->cr.d.version = GDAK_DEV_ABI_VERSION;
	r->cr.d.qpn = QPN;
	r->cr.d.qpn_ds_be = gdak_htobe32(QPN << 8);
	r->cr.d.sq_wqebb_cnt = sq_cnt;
	r->cr.d.sq_buf = dptr(r->sq);
	r->cr.d.handler = lay == L_PROXY ? GDAK_DEV_DB_CPU_PROXY : GDAK_DEV_DB_DB;
	if (lay == L_GPU) {
		CU_OK(cu.MemAlloc(&r->db, DBR_LEN));
		dev_write(r->db, zero, DBR_LEN);
		r->cr.d.dbrec = dptr(r->db + DBR_QP);
		r->cr.d.scq.dbrec = dptr(r->db + DBR_SCQ);
		r->cr.d.rcq.dbrec = dptr(r->db + DBR_RCQ);
	} else {
		/* hw_cuda_host_alloc's flags: the GPU reaches it too */
		CU_OK(cu.MemHostAlloc((void **)&r->hdb, 4096,
				      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
		memset(r->hdb, 0, 4096);
		r->proxy = (uint64_t *)(void *)(r->hdb + 1024);
		r->cr.d.dbrec = (uint32_t *)(void *)(r->hdb + DBR_QP);
		r->cr.d.scq.dbrec = (uint32_t *)(void *)(r->hdb + DBR_SCQ);
		r->cr.d.rcq.dbrec = (uint32_t *)(void *)(r->hdb + DBR_RCQ);
		r->cr.d.proxy_pi = r->proxy;
	}
	r->cr.d.scq.version = GDAK_DEV_ABI_VERSION;
	r->cr.d.scq.cqn = SCQN;
	r->cr.d.scq.ncqe = ncqe;
	r->cr.d.scq.log_ncqe = 31u - (uint32_t)__builtin_clz(ncqe);
	r->cr.d.scq.cqes = dptr(r->scq);
	if (with_rq) {
		CU_OK(cu.MemAlloc(&r->rq, 4096));
		CU_OK(cu.MemAlloc(&r->rcq, (size_t)ncqe * 64));
		r->rcq_shadow = malloc((size_t)ncqe * 64);
		REQUIRE(r->rcq_shadow);
		fresh_cq(r->rcq, r->rcq_shadow, ncqe);
		r->cr.d.rq_buf = dptr(r->rq);
		r->cr.d.rq_wqe_cnt = 16;
		r->cr.d.rq_log_stride = 6;
		r->cr.d.rcq.version = GDAK_DEV_ABI_VERSION;
		r->cr.d.rcq.cqn = RCQN;
		r->cr.d.rcq.ncqe = ncqe;
		r->cr.d.rcq.log_ncqe = r->cr.d.scq.log_ncqe;
		r->cr.d.rcq.cqes = dptr(r->rcq);
	} else {
		r->cr.d.rcq.dbrec = NULL;
	}
	r->cr.ops = &gpu_ops;
	r->cr.where = case_where;
	r->cr.seed = 77;
	r->cr.cqe_seed = 7;
	r->cr.scq_bytes = r->scq_shadow;
	r->cr.rcq_bytes = r->rcq_shadow;
	return r;
}

static void gr_free(struct gring *r)
{
	cu.MemFree(r->sq);
	cu.MemFree(r->scq);
	if (r->rcq)
		cu.MemFree(r->rcq);
	if (r->rq)
		cu.MemFree(r->rq);
	if (r->db)
		cu.MemFree(r->db);
	if (r->hdb)
		cu.MemFreeHost(r->hdb);
	free(r->scq_shadow);
	free(r->rcq_shadow);
	free(r);
}

static uint16_t post(struct gring *r, uint8_t opcode, unsigned ds)
{
	return cr_post(&r->cr, opcode, ds);
}

static void publish(struct gring *r) { cr_publish(&r->cr); }

static void hw_cqe(struct gring *r, int recv, uint8_t op, uint16_t wqe_counter, uint8_t syndrome)
{
	cr_hw_cqe(&r->cr, recv, op, wqe_counter, syndrome);
}

static void consume(struct gring *r, int recv, uint64_t ci) { gpu_consume(&r->cr, recv, ci); }

/* ---- reading back --------------------------------------------------------- */

static struct gdak_capture *cap_open(const char *path, unsigned flags)
{
	struct gdak_capture *c = NULL;

	REQUIRE_EQ(gdak_capture_open(NULL, path, flags, &c), 0);
	return c;
}

static void add(struct gdak_capture *c, struct gring *r)
{
	int ret = gdak_capture_add_dev_qp(c, &r->cr.d, GDAK_CAPTURE_RINGS_GPU);

	if (ret)
		printf("gdak_capture_add_dev_qp: %s (run with GDAK_LOG=debug for why)\n",
		       strerror(-ret));
	REQUIRE_EQ(ret, 0);
}

/* The capture said where it found the rings (its QP record). */
static void check_where(const struct cr_file *f)
{
	size_t from = 0;
	long i = cr_next(f, &from, GDAK_TREC_QP, QPN);
	const char *want = lay == L_GPU ? "rings in GPU memory, doorbell records in GPU memory"
					: "rings in GPU memory, doorbell records in host memory";

	REQUIRE(i >= 0);
	if (!strstr(f->r[i].text, want))
		gdak_test_fail(__FILE__, __LINE__, "[%s/%s] QP record '%s' lacks '%s'",
			       layout_names[lay], cur_case, f->r[i].text, want);
}

static void no_read_errors(struct gdak_capture *c)
{
	struct gdak_capture_stats st;

	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.read_errors, 0);
}

static void begin(const char *name)
{
	cur_case = name;
	case_failed0 = gdak_test_failed;
	snprintf(case_where, sizeof(case_where), "[%s/%s] ", layout_names[lay], name);
	printf("-- %s/%s\n", layout_names[lay], name);
	fflush(stdout);
}

static void done(char *path, struct cr_file *f, struct gring *r)
{
	cr_done(path, f, gdak_test_failed != case_failed0);
	if (r)
		gr_free(r);
}

/* A case begun: its name said, its file opened as a capture of the given
 * flags, ring r added to it. */
static void case_open(struct cr_run *x, const char *name, struct gring *r, unsigned flags)
{
	char tag[64];

	snprintf(tag, sizeof(tag), "cuda-%s", name);
	x->path = cr_tmpname(tag);
	x->c = cap_open(x->path, flags);
	begin(name);
	add(x->c, r);
}

/* ---- cases ---------------------------------------------------------------- */

/* One of the cases capture_rings.c runs on host rings (capture_ring.h), here
 * on rings in GPU memory: and no copy may have failed, and the QP record
 * says where the rings are. */
static void shared_case(const struct cr_case *k)
{
	struct gring *r = gr_new(k->sq_cnt, k->ncqe, 0);
	struct cr_run x;

	cr_case_start(&r->cr, k);
	case_open(&x, k->name, r, GDAK_CAPTURE_F_MANUAL);
	k->play(&r->cr, x.c, k->arg);
	no_read_errors(x.c);
	cr_run_read(&x);
	check_where(&x.f);
	k->check(&x.f, &r->cr, bin, x.path, case_failed0, k->arg);
	done(x.path, &x.f, r);
}

/* Round n of cq_chunks_and_rcq: send CQEs 100n..100n+99 and receive CQE n
 * of opcode rop, then one pass; the capture's statistics in *st. */
static void chunk_round(struct gdak_capture *c, struct gring *r, int n, uint8_t rop,
			struct gdak_capture_stats *st)
{
	for (int k = 100 * n; k < 100 * n + 100; k++)
		hw_cqe(r, 0, MLX5_CQE_REQ, (uint16_t)k, 0);
	hw_cqe(r, 1, rop, (uint16_t)n, 0);
	CHECK(gdak_capture_poll(c) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(c, st), 0);
}

/* A 128-entry CQ read in 64-CQE chunks: 100 CQEs, consumed, then 100 more
 * across the ring's end (the chunk at 100 splits into 28 + 36 slots); and
 * the receive CQ next to it. */
static void cq_chunks_and_rcq(void)
{
	struct gring *r = gr_new(16, 128, 1);
	struct gdak_capture_stats st;
	struct cr_run x;

	case_open(&x, "cq_chunks_and_rcq", r, GDAK_CAPTURE_F_MANUAL);
	chunk_round(x.c, r, 0, MLX5_CQE_RESP_SEND, &st);
	CHECK_EQ(st.cqes, 101);
	consume(r, 0, 100);
	consume(r, 1, 1);
	__atomic_store_n(&r->cr.d.scq.cons_idx, 100, __ATOMIC_RELEASE);
	chunk_round(x.c, r, 1, MLX5_CQE_RESP_SEND_IMM, &st);
	CHECK_EQ(st.cqes, 202);
	CHECK_EQ(st.lost_cqes, 0);
	CHECK_EQ(st.read_errors, 0);
	cr_run_read(&x);
	/* slots 0..71 now hold CQEs 128..199: compare those against the
	 * shadow, 0..71 only by their wqe_counter */
	{
		size_t from = 0;
		long i;
		uint64_t n = 0;

		while ((i = cr_next(&x.f, &from, GDAK_TREC_CQE, QPN)) >= 0) {
			const struct cr_rec *e = &x.f.r[i];
			struct gdak_mlx5_cqe_fields cf;

			if (e->cqn != SCQN)
				continue;
			gdak_mlx5_cqe_decode(e->bytes, &cf);
			CHECK_EQ(e->cq_index, (uint32_t)n);
			CHECK_EQ(cf.wqe_counter, (uint16_t)n);
			CHECK_EQ(cf.opcode, MLX5_CQE_REQ);
			if (n >= 72)
				CHECK_MEM(e->bytes, r->scq_shadow + (size_t)(n & 127) * 64, 64);
			n++;
		}
		CHECK_EQ(n, 200);
	}
	cr_check_cqes(&x.f, &r->cr, 1, 0, 2, -1);
	done(x.path, &x.f, r);
}

/*
 * The capture thread reads the GPU rings while the test writes them: WQEs
 * and CQEs in steps, each step waited for through the statistics (no
 * timing assumption: a step may take one pass or many), then everything
 * compared.  Afterwards a pass in the test thread while the test's own
 * (non-primary) CUDA context is current must leave that context current.
 */
static void wait_for(struct gdak_capture *c, uint64_t wqes, uint64_t cqes)
{
	struct gdak_capture_stats st;
	struct timespec ts = {0, 1000000};

	for (int tries = 0; tries < 60000; tries++) {	/* at least 60 s */
		REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
		if (st.wqes >= wqes && st.cqes >= cqes)
			return;
		nanosleep(&ts, NULL);
	}
	gdak_test_fail(__FILE__, __LINE__, "[%s/%s] capture thread: %" PRIu64 " WQEs, %" PRIu64
		       " CQEs after 60 s; wanted %" PRIu64 ", %" PRIu64 " (read errors %" PRIu64
		       ")", layout_names[lay], cur_case, st.wqes, st.cqes, wqes, cqes,
		       st.read_errors);
}

static void thread_mode(void)
{
	struct gring *r = gr_new(64, 64, 0);
	struct cr_run x;
	unsigned steps = 8, per = 4;

	case_open(&x, "thread", r, 0);
	for (unsigned s = 0; s < steps; s++) {
		for (unsigned k = 0; k < per; k++)
			post(r, k & 1 ? MLX5_OPCODE_SEND : MLX5_OPCODE_RDMA_WRITE, 1 + 2 * k);
		publish(r);
		for (unsigned k = 0; k < per; k++)
			hw_cqe(r, 0, MLX5_CQE_REQ, (uint16_t)(s * per + k), 0);
		consume(r, 0, r->cr.scq_n);
		__atomic_store_n(&r->cr.d.scq.cons_idx, r->cr.scq_n, __ATOMIC_RELEASE);
		/* the ring never gets a lap ahead: wait until the thread saw it */
		wait_for(x.c, (uint64_t)(s + 1) * per, (uint64_t)(s + 1) * per);
	}
	no_read_errors(x.c);
	cr_run_read(&x);
	check_where(&x.f);
	cr_check_wqes(&x.f, &r->cr, 0, steps * per);
	cr_check_cqes(&x.f, &r->cr, 0, 0, (uint64_t)steps * per, -1);
	CHECK_EQ(cr_lost(&x.f, QPN, "sq", NULL) + cr_lost(&x.f, QPN, "scq", NULL), 0);
	done(x.path, &x.f, r);
}

static void own_context_kept(void)
{
	struct gring *r;
	struct cr_run x;
	cuctx mine = NULL, now = NULL;

	if (!cu.CtxCreate || !cu.CtxDestroy) {
		begin("own_context_kept");
		printf("   skipped: libcuda.so.1 lacks cuCtxCreate_v2/cuCtxDestroy_v2\n");
		return;
	}
	r = gr_new(16, 16, 0);
	case_open(&x, "own_context_kept", r, GDAK_CAPTURE_F_MANUAL);
	post(r, MLX5_OPCODE_RDMA_WRITE, 3);
	publish(r);
	hw_cqe(r, 0, MLX5_CQE_REQ, 0, 0);
	CU_OK(cu.CtxCreate(&mine, 0, cu_dev));	/* current on this thread now */
	CHECK(gdak_capture_poll(x.c) > 0);
	CU_OK(cu.CtxGetCurrent(&now));
	if (now != mine)
		gdak_test_fail(__FILE__, __LINE__, "[%s/%s] gdak_capture_poll changed the "
			       "calling thread's CUDA context (%p, was %p)", layout_names[lay],
			       cur_case, (void *)now, (void *)mine);
	no_read_errors(x.c);
	CHECK_EQ(gdak_capture_close(x.c), 0);
	CU_OK(cu.CtxGetCurrent(&now));
	CHECK(now == mine);
	CU_OK(cu.CtxDestroy(mine));
	CU_OK(cu.CtxSetCurrent(primary));
	cr_read_back(x.path, &x.f);
	cr_check_wqes(&x.f, &r->cr, 0, 1);
	cr_check_cqes(&x.f, &r->cr, 0, 0, 1, -1);
	done(x.path, &x.f, r);
}

/*
 * A CQE landing while the capture reads its chunk (fake driver only: it can
 * split a copy and run the "device" in between).
 *   torn     the first read gets CQE 0's old body and its new owner byte:
 *            the record must still hold the new body (the second read's)
 *   rewrite  CQEs 0..15 written and consumed; CQE 16 lands in slot 0 between
 *            the two reads: CQE 0 is counted lost (its body in the second
 *            read is CQE 16's), 1..16 are recorded
 */
static struct gring *tear_ring;

static void land_cqe(void *arg)
{
	hw_cqe(tear_ring, 0, MLX5_CQE_REQ, (uint16_t)(uintptr_t)arg, 0);
}

static void torn_cqe(void)
{
	struct gdak_capture_stats st;
	struct gring *r;
	struct cr_run x;

	if (!fake_tear)
		return; /* a real driver cannot be made to tear on cue */
	r = gr_new(16, 16, 0);
	case_open(&x, "torn_cqe", r, GDAK_CAPTURE_F_MANUAL);
	tear_ring = r;
	CHECK_EQ(gdak_capture_poll(x.c), 0);
	/* the chunk read is the only copy of 64 bytes or more in the pass */
	fake_tear(63, land_cqe, (void *)(uintptr_t)0x1234);
	CHECK(gdak_capture_poll(x.c) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(x.c, &st), 0);
	CHECK_EQ(st.cqes, 1);
	CHECK_EQ(st.lost_cqes, 0);

	for (int k = 1; k < 16; k++)
		hw_cqe(r, 0, MLX5_CQE_REQ, (uint16_t)k, 0);
	consume(r, 0, 16);
	CHECK(gdak_capture_poll(x.c) > 0); /* 1..15 */
	cr_run_read(&x);
	cr_check_cqes(&x.f, &r->cr, 0, 0, 16, -1);
	done(x.path, &x.f, r);

	r = gr_new(16, 16, 0);
	case_open(&x, "rewrite_between_reads", r, GDAK_CAPTURE_F_MANUAL);
	tear_ring = r;
	for (int k = 0; k < 16; k++)
		hw_cqe(r, 0, MLX5_CQE_REQ, (uint16_t)k, 0);
	consume(r, 0, 16);
	/* after the whole first read of the chunk at 0 (16 CQEs) */
	fake_tear(16 * 64, land_cqe, (void *)(uintptr_t)16);
	CHECK(gdak_capture_poll(x.c) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(x.c, &st), 0);
	CHECK_EQ(st.lost_cqes, 1);
	CHECK_EQ(st.cqes, 16);
	CHECK_EQ(st.read_errors, 0);
	cr_run_read(&x);
	CHECK_EQ(cr_lost(&x.f, QPN, "scq", NULL), 1);
	cr_check_cqes(&x.f, &r->cr, 0, 1, 17, -1);
	done(x.path, &x.f, r);
}

/*
 * A ring freed under the capture (a QP destroyed before it was removed):
 * no crash, the file is complete, and close() reports an error exactly when
 * copies failed.  The fake driver refuses copies from freed memory, so there
 * the error path must run.  A real driver may keep a small allocation's
 * pages mapped in its pool after cuMemFree and serve the copy from them;
 * then the stale WQE is read, which is all a capture can do.
 */
static void freed_ring(void)
{
	struct gring *r = gr_new(16, 16, 0);
	struct gdak_capture_stats st;
	struct cr_run x;
	int ret;

	case_open(&x, "freed_ring", r, GDAK_CAPTURE_F_MANUAL);
	post(r, MLX5_OPCODE_NOP, 1);
	publish(r);
	CHECK(gdak_capture_poll(x.c) > 0);
	post(r, MLX5_OPCODE_NOP, 1);
	publish(r);
	CU_OK(cu.MemFree(r->sq));
	CU_OK(cu.MemFree(r->scq));
	r->sq = r->scq = 0;
	gdak_capture_poll(x.c);
	REQUIRE_EQ(gdak_capture_get_stats(x.c, &st), 0);
	if (fake_driver) {
		CHECK(st.read_errors > 0);
		CHECK_EQ(st.wqes, 1);
	} else {
		printf("   real driver: %" PRIu64 " failed copies after cuMemFree, %" PRIu64
		       " WQEs\n", st.read_errors, st.wqes);
		CHECK(st.wqes == 1 || st.wqes == 2);	/* the second one stale, or unread */
	}
	ret = gdak_capture_close(x.c);
	CHECK_EQ(ret, st.read_errors ? -EIO : 0);
	cr_read_back(x.path, &x.f);
	cr_check_wqes(&x.f, &r->cr, 0, (unsigned)st.wqes);
	done(x.path, &x.f, NULL);
	/* not checked: after a failed copy only cleanup is left to do */
	if (r->db)
		cu.MemFree(r->db);
	if (r->hdb)
		cu.MemFreeHost(r->hdb);
	free(r->scq_shadow);
	free(r);
}

int main(int argc, char **argv)
{
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2) {
		fprintf(stderr, "usage: %s [GDAK_TRACE_BINARY]\n", argv[0]);
		return 2;
	}
	bin = argc == 2 ? argv[1] : NULL;
	rc = cu_load();
	if (rc)
		return rc;
	if (!getenv("GDAK_LOG"))
		gdak_set_log_level(GDAK_LOG_ERROR);
	for (lay = L_GPU; lay <= L_PROXY; lay++) {
		for (size_t k = 0; k < sizeof(cr_cases) / sizeof(cr_cases[0]); k++)
			shared_case(&cr_cases[k]);
		cq_chunks_and_rcq();
		thread_mode();
		own_context_kept();
	}
	lay = L_GPU;
	torn_cqe();
	/* last: a failed copy must not poison what runs after it */
	lay = L_GPU;
	freed_ring();
	if (!bin)
		printf("note: no gdak-trace binary given; decoder checks skipped\n");
	return gdak_test_end();
}
