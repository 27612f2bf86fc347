/* SPDX-License-Identifier: MIT */
/*
 * capture_rings.c - the ring capture against hand-built rings (no NIC, no
 * threads: GDAK_CAPTURE_F_MANUAL, one pass per gdak_capture_poll), so every
 * case is exact: WQE records sized by the DS count with the posted bytes,
 * CQE records by owner bit, the exact loss counts when the send queue or a
 * CQ went more than a ring ahead (with the resynchronisation on the next
 * ctrl segment after a loss in the middle of a WQE), a CQE slot reused
 * before the capture saw it, the 16-bit producer index wrapping, a WQE
 * published only in part, the index moving backwards, the CPU_PROXY word,
 * the receive CQ, and bad arguments.  gdak-trace decodes the files.
 *
 * usage: gdak_capture_rings GDAK_TRACE_BINARY
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "capture_int.h"
#include "capture_ring.h"
#include "capture_util.h"
#include "gdak_test.h"

#define QPN 0x000123u
#define SCQN 0x80u
#define RCQN 0x81u

struct ring {
	struct cr_ring cr;	/* the SQ and CQs as the test plays them */
	uint8_t *sq, *scq, *rcq, *rq;
	uint32_t dbrec[2];
	uint32_t scq_db, rcq_db;
	uint64_t proxy;
};

static const char *bin;
static unsigned ring_flags;	/* GDAK_CAPTURE_RINGS_GPU in the fake-GPU round */

static struct ring *ring_of(struct cr_ring *c)
{
	return (struct ring *)(void *)((char *)c - offsetof(struct ring, cr));
}

static void host_put_wqebb(struct cr_ring *c, uint32_t slot, const uint8_t *bb)
{
	memcpy(ring_of(c)->sq + (size_t)slot * 64, bb, 64);
}

/* Body first, op_own last with release: a poller that sees the new owner
 * bit sees the body too. */
static void host_put_cqe(struct cr_ring *c, int recv, uint32_t slot, const uint8_t *cqe)
{
	struct ring *r = ring_of(c);
	uint8_t *dst = (recv ? r->rcq : r->scq) + (size_t)slot * 64;

	memcpy(dst, cqe, 63);
	__atomic_store_n(dst + 63, cqe[63], __ATOMIC_RELEASE);
}

static void host_publish_pi(struct cr_ring *c, uint64_t pi)
{
	__atomic_store_n(&ring_of(c)->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)pi),
			 __ATOMIC_RELEASE);
}

static void host_consume(struct cr_ring *c, int recv, uint64_t ci)
{
	struct ring *r = ring_of(c);

	__atomic_store_n(recv ? &r->rcq_db : &r->scq_db, gdak_mlx5_cq_dbrec_value((uint32_t)ci),
			 __ATOMIC_RELEASE);
}

static const struct cr_ring_ops host_ops = {
	.put_wqebb = host_put_wqebb,
	.put_cqe = host_put_cqe,
	.publish_pi = host_publish_pi,
	.consume = host_consume,
};

static void *zalloc(size_t n)
{
	void *p = aligned_alloc(64, n);

	if (p)
		memset(p, 0, n);
	return p;
}

static void cq_fresh(uint8_t *cq, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		cq[(size_t)i * 64 + 63] = GDAK_MLX5_CQE_INVALID_OP_OWN;
}

static struct ring *ring_new(uint32_t sq_cnt, uint32_t ncqe, int with_rq)
{
	struct ring *r = calloc(1, sizeof(*r));
	struct gdak_dev_qp *d;

	if (!r)
		return NULL;
	d = &r->cr.d;
	r->sq = zalloc((size_t)sq_cnt * 64);
	r->scq = zalloc((size_t)ncqe * 64);
	cq_fresh(r->scq, ncqe);
	d->version = GDAK_DEV_ABI_VERSION;
	d->qpn = QPN;
	d->sq_wqebb_cnt = sq_cnt;
	d->sq_buf = r->sq;
	d->dbrec = r->dbrec;
	d->handler = GDAK_DEV_DB_DB;
	d->proxy_pi = &r->proxy;
	d->scq.version = GDAK_DEV_ABI_VERSION;
	d->scq.cqn = SCQN;
	d->scq.ncqe = ncqe;
	d->scq.cqes = r->scq;
	d->scq.dbrec = &r->scq_db;
	if (with_rq) {
		r->rq = zalloc(4096);
		r->rcq = zalloc((size_t)ncqe * 64);
		cq_fresh(r->rcq, ncqe);
		d->rq_buf = r->rq;
		d->rq_wqe_cnt = 16;
		d->rcq = d->scq;
		d->rcq.cqn = RCQN;
		d->rcq.cqes = r->rcq;
		d->rcq.dbrec = &r->rcq_db;
	}
	r->cr.ops = &host_ops;
	r->cr.where = "";
	r->cr.seed = 99;
	r->cr.scq_bytes = r->scq;
	r->cr.rcq_bytes = r->rcq;
	return r;
}

static void ring_free(struct ring *r)
{
	free(r->sq);
	free(r->scq);
	free(r->rcq);
	free(r->rq);
	free(r);
}

static uint16_t post(struct ring *r, uint8_t opcode, unsigned ds)
{
	return cr_post(&r->cr, opcode, ds);
}

static void publish_pi(struct ring *r, uint64_t pi) { host_publish_pi(&r->cr, pi); }

static void publish(struct ring *r) { cr_publish(&r->cr); }

static void hw_cqe(struct ring *r, int recv, uint8_t op, uint16_t wqe_counter, uint8_t syndrome)
{
	cr_hw_cqe(&r->cr, recv, op, wqe_counter, syndrome);
}

static struct gdak_capture *cap_open(const char *path)
{
	struct gdak_capture *c = NULL;

	REQUIRE_EQ(gdak_capture_open(NULL, path, GDAK_CAPTURE_F_MANUAL, &c), 0);
	return c;
}

/* A case's end: the file removed, all freed. */
static void done(char *path, struct cr_file *f, struct ring *r)
{
	cr_done(path, f, 0);
	ring_free(r);
}

/* A case's file opened as a capture, ring r (ready to be read) added. */
static void case_open(struct cr_run *x, const char *name, struct ring *r)
{
	x->path = cr_tmpname(name);
	x->c = cap_open(x->path);
	REQUIRE_EQ(gdak_capture_add_dev_qp(x->c, &r->cr.d, ring_flags), 0);
}

/* ---- cases --------------------------------------------------------------- */

/* One of the cases both ring tests run (capture_ring.h), on host rings. */
static void shared_case(const struct cr_case *k)
{
	struct ring *r = ring_new(k->sq_cnt, k->ncqe, 0);
	struct cr_run x;

	cr_case_start(&r->cr, k);
	case_open(&x, k->name, r);
	k->play(&r->cr, x.c, k->arg);
	cr_run_read(&x);
	k->check(&x.f, &r->cr, bin, x.path, 0, k->arg);
	done(x.path, &x.f, r);
}

/* A record that covers only part of a WQE: nothing until the rest is
 * published; then a record going backwards is a VIOLATION. */
static void partial_and_backwards(void)
{
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture_stats st;
	struct cr_run x;
	size_t from = 0;
	long i;

	case_open(&x, "partial", r);
	post(r, MLX5_OPCODE_RDMA_WRITE, 9);
	publish_pi(r, 1);
	gdak_capture_poll(x.c);
	REQUIRE_EQ(gdak_capture_get_stats(x.c, &st), 0);
	CHECK_EQ(st.wqes, 0);
	CHECK_EQ(st.doorbells, 1);
	publish(r);
	gdak_capture_poll(x.c);
	REQUIRE_EQ(gdak_capture_get_stats(x.c, &st), 0);
	CHECK_EQ(st.wqes, 1);
	publish_pi(r, 1);
	gdak_capture_poll(x.c);
	cr_run_read(&x);
	cr_check_wqes(&x.f, &r->cr, 0, 1);
	i = cr_next(&x.f, &from, GDAK_TREC_VIOLATION, QPN);
	CHECK(i >= 0 && !strcmp(x.f.r[i].name, "capture_pi_backwards"));
	done(x.path, &x.f, r);
}

/* CPU_PROXY: the device's 64-bit word, not the record; and the receive CQ. */
static void proxy_and_rcq(void)
{
	struct ring *r = ring_new(16, 16, 1);
	struct cr_run x;
	size_t from = 0;
	long i;

	r->cr.d.handler = GDAK_DEV_DB_CPU_PROXY;
	case_open(&x, "proxy", r);
	post(r, MLX5_OPCODE_SEND, 2);
	post(r, MLX5_OPCODE_SEND_IMM, 2);
	__atomic_store_n(&r->proxy, r->cr.pi, __ATOMIC_RELEASE);	/* record stays 0 */
	hw_cqe(r, 1, MLX5_CQE_RESP_SEND, 0, 0);
	CHECK(gdak_capture_poll(x.c) > 0);
	cr_run_read(&x);
	cr_check_wqes(&x.f, &r->cr, 0, 2);
	i = cr_next(&x.f, &from, GDAK_TREC_CQE, QPN);
	REQUIRE(i >= 0);
	CHECK_EQ(x.f.r[i].cqn, RCQN);
	CHECK_MEM(x.f.r[i].bytes, r->rcq, 64);
	from = 0;
	i = cr_next(&x.f, &from, GDAK_TREC_DOORBELL, QPN);
	CHECK(i >= 0 && x.f.r[i].idx == 2);
	done(x.path, &x.f, r);
}

/* Bad arguments get an error, and the capture goes on. */
static void bad_args(void)
{
	char *path = cr_tmpname("args");
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture *c = NULL, *c2 = (struct gdak_capture *)1;
	struct gdak_dev_qp bad;
	struct cr_file f;
	void *lib;

	CHECK_EQ(gdak_capture_open(NULL, NULL, 0, &c2), -EINVAL);
	CHECK(c2 == NULL);
	CHECK_EQ(gdak_capture_open(NULL, path, 0x100, &c2), -EINVAL);
	CHECK_EQ(gdak_capture_open(NULL, "/nonexistent-dir/x.pcapng", 0, &c2), -ENOENT);
	CHECK_EQ(gdak_capture_open(NULL, path, 0, NULL), -EINVAL);
	c = cap_open(path);
	CHECK_EQ(gdak_capture_add_dev_qp(c, NULL, 0), -EINVAL);
	CHECK_EQ(gdak_capture_add_dev_qp(c, &r->cr.d, 0x80), -EINVAL);
	bad = r->cr.d;
	bad.scq.ncqe = 12;
	CHECK_EQ(gdak_capture_add_dev_qp(c, &bad, 0), -EINVAL);
	bad = r->cr.d;
	bad.version = 7;
	CHECK_EQ(gdak_capture_add_dev_qp(c, &bad, 0), -EINVAL);
	bad = r->cr.d;
	bad.sq_buf = NULL;
	CHECK_EQ(gdak_capture_add_dev_qp(c, &bad, 0), -EINVAL);
	CHECK_EQ(gdak_capture_remove_dev_qp(c, &r->cr.d), -ENOENT);
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		CHECK_EQ(gdak_capture_add_dev_qp(c, &r->cr.d, GDAK_CAPTURE_RINGS_GPU), -ENODEV);
	else
		dlclose(lib);
	CHECK_EQ(gdak_capture_add_dev_qp(c, &r->cr.d, 0), 0);
	CHECK_EQ(gdak_capture_add_dev_qp(c, &r->cr.d, 0), -EEXIST);
	post(r, MLX5_OPCODE_NOP, 1);
	publish(r);
	CHECK_EQ(gdak_capture_remove_dev_qp(c, &r->cr.d), 0);	/* last pass: the NOP */
	CHECK_EQ(gdak_capture_remove_dev_qp(c, &r->cr.d), -ENOENT);
	CHECK_EQ(gdak_capture_pause(c, 1), 0);	/* no thread: returns at once */
	CHECK_EQ(gdak_capture_poll(c), 0);
	CHECK_EQ(gdak_capture_close(c), 0);
	CHECK_EQ(gdak_capture_close(NULL), -EINVAL);
	CHECK_EQ(gdak_capture_poll(NULL), -EINVAL);
	cr_read_back(path, &f);
	cr_check_wqes(&f, &r->cr, 0, 1);
	done(path, &f, r);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s GDAK_TRACE_BINARY\n", argv[0]);
		return 2;
	}
	bin = argv[1];
	gdak_set_log_level(GDAK_LOG_ERROR);
	bad_args();
	/* host rings, then the same cases through the GPU path's staging
	 * (chunked CQ copies, doorbell records through a scratch word) with
	 * memcpy standing in for cuMemcpyDtoHAsync */
	for (int round = 0; round < 2; round++) {
		ring_flags = round ? GDAK_CAPTURE_RINGS_GPU : 0;
		gdak_capture_test_fake_gpu(round);
		for (size_t k = 0; k < sizeof(cr_cases) / sizeof(cr_cases[0]); k++)
			shared_case(&cr_cases[k]);
		partial_and_backwards();
		proxy_and_rcq();
	}
	gdak_capture_test_fake_gpu(0);
	return gdak_test_end();
}
