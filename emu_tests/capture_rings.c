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

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "capture_int.h"
#include "capture_util.h"
#include "gdak_test.h"

#define QPN 0x000123u
#define SCQN 0x80u
#define RCQN 0x81u

struct ring {
	struct gdak_dev_qp d;
	uint8_t *sq, *scq, *rcq, *rq;
	uint32_t dbrec[2];
	uint32_t scq_db, rcq_db;
	uint64_t proxy;
	uint64_t pi;		/* device producer index */
	uint64_t scq_n, rcq_n;	/* CQEs the "HCA" wrote */
	uint64_t seed;
	/* what was posted: bytes of WQE k at exp + k * 1024 */
	uint8_t exp[64][1024];
	uint16_t exp_idx[64];
	uint32_t exp_bbs[64];
	unsigned nexp;
};

static const char *bin;
static unsigned ring_flags;	/* GDAK_CAPTURE_RINGS_GPU in the fake-GPU round */

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

	if (!r)
		return NULL;
	r->sq = zalloc((size_t)sq_cnt * 64);
	r->scq = zalloc((size_t)ncqe * 64);
	cq_fresh(r->scq, ncqe);
	r->d.version = GDAK_DEV_ABI_VERSION;
	r->d.qpn = QPN;
	r->d.sq_wqebb_cnt = sq_cnt;
	r->d.sq_buf = r->sq;
	r->d.dbrec = r->dbrec;
	r->d.handler = GDAK_DEV_DB_DB;
	r->d.proxy_pi = &r->proxy;
	r->d.scq.version = GDAK_DEV_ABI_VERSION;
	r->d.scq.cqn = SCQN;
	r->d.scq.ncqe = ncqe;
	r->d.scq.cqes = r->scq;
	r->d.scq.dbrec = &r->scq_db;
	if (with_rq) {
		r->rq = zalloc(4096);
		r->rcq = zalloc((size_t)ncqe * 64);
		cq_fresh(r->rcq, ncqe);
		r->d.rq_buf = r->rq;
		r->d.rq_wqe_cnt = 16;
		r->d.rcq = r->d.scq;
		r->d.rcq.cqn = RCQN;
		r->d.rcq.cqes = r->rcq;
		r->d.rcq.dbrec = &r->rcq_db;
	}
	r->seed = 99;
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

/* A WQE of ds DS at the producer index: a ctrl segment naming its index and
 * QP, pseudo-random segments after it (never a ctrl for their own index). */
static uint16_t post(struct ring *r, uint8_t opcode, unsigned ds)
{
	uint8_t w[1024] __attribute__((aligned(16)));
	struct gdak_mlx5_ctrl c = {.opcode = opcode, .wqe_index = (uint16_t)r->pi, .qpn = QPN,
				   .ds = (uint8_t)ds, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
	unsigned bbs = gdak_mlx5_wqebbs(ds);
	uint16_t idx = (uint16_t)r->pi;

	gdak_test_fill(w, sizeof(w), r->seed++);
	gdak_mlx5_ctrl_encode((struct mlx5_wqe_ctrl_seg *)(void *)w, &c);
	for (unsigned i = 0; i < bbs; i++) {
		uint32_t slot = (uint32_t)(r->pi + i) & (r->d.sq_wqebb_cnt - 1);
		memcpy(r->sq + (size_t)slot * 64, w + (size_t)i * 64, 64);
	}
	if (r->nexp < 64) {
		memcpy(r->exp[r->nexp], w, (size_t)bbs * 64);
		r->exp_idx[r->nexp] = idx;
		r->exp_bbs[r->nexp++] = bbs;
	}
	r->pi += bbs;
	return idx;
}

static void publish_pi(struct ring *r, uint64_t pi)
{
	__atomic_store_n(&r->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)pi),
			 __ATOMIC_RELEASE);
}

static void publish(struct ring *r) { publish_pi(r, r->pi); }

/* The "HCA" writes the next CQE: body first, op_own last with release. */
static void hw_cqe(struct ring *r, int recv, uint8_t op, uint16_t wqe_counter, uint8_t syndrome)
{
	uint64_t *n = recv ? &r->rcq_n : &r->scq_n;
	uint32_t ncqe = r->d.scq.ncqe;
	uint8_t *c = (recv ? r->rcq : r->scq) + (size_t)(*n & (ncqe - 1)) * 64;
	struct mlx5_cqe64 *q = (struct mlx5_cqe64 *)(void *)c;

	gdak_test_fill(c, 63, *n + 1000 * (uint64_t)recv);
	q->wqe_counter = gdak_htobe16(wqe_counter);
	if (op == MLX5_CQE_REQ_ERR) {
		struct gdak_mlx5_err_cqe *e = (struct gdak_mlx5_err_cqe *)(void *)c;
		e->syndrome = syndrome;
		e->s_wqe_opcode_qpn = gdak_htobe32((uint32_t)MLX5_OPCODE_RDMA_WRITE << 24 | QPN);
	} else {
		q->sop_drop_qpn = gdak_htobe32(QPN);
	}
	__atomic_store_n(c + 63, gdak_mlx5_cqe_op_own(op, *n, ncqe), __ATOMIC_RELEASE);
	(*n)++;
}

static void consume(uint32_t *db, uint64_t ci)
{
	__atomic_store_n(db, gdak_mlx5_cq_dbrec_value((uint32_t)ci), __ATOMIC_RELEASE);
}

static struct gdak_capture *cap_open(const char *path)
{
	struct gdak_capture *c = NULL;

	REQUIRE_EQ(gdak_capture_open(NULL, path, GDAK_CAPTURE_F_MANUAL, &c), 0);
	return c;
}

static void read_back(const char *path, struct cr_file *f)
{
	REQUIRE_EQ(cr_read(path, f), 0);
	CHECK(f->clean);
}

/* The WQE records of the file equal posted WQEs k0..k1-1 (bytes, index). */
static void check_wqes(const struct cr_file *f, const struct ring *r, unsigned k0, unsigned k1)
{
	size_t from = 0;
	long i;
	unsigned k = k0;

	while ((i = cr_next(f, &from, GDAK_TREC_WQE, QPN)) >= 0) {
		const struct cr_rec *w = &f->r[i];

		if (k >= k1) {
			gdak_test_fail(__FILE__, __LINE__, "extra WQE record idx %u", w->idx);
			break;
		}
		CHECK_EQ(w->idx, r->exp_idx[k]);
		CHECK_EQ(w->len, r->exp_bbs[k] * 64);
		CHECK_EQ(w->thread, GDAK_CAPTURE_THREAD_ID);
		if (w->len == r->exp_bbs[k] * 64)
			CHECK_MEM(w->bytes, r->exp[k], w->len);
		k++;
	}
	CHECK_EQ(k, k1);
}

static unsigned count(const struct cr_file *f, uint8_t type)
{
	unsigned n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += f->r[i].type == type;
	return n;
}

/* ---- cases --------------------------------------------------------------- */

static void basic(void)
{
	char *path = cr_tmpname("basic");
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture *c = cap_open(path);
	struct gdak_capture_stats st;
	struct cr_file f;
	size_t from = 0;
	long i;
	int rc;
	char *out;

	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &r->d, ring_flags), 0);
	CHECK_EQ(gdak_capture_poll(c), 0);	/* nothing yet */
	post(r, MLX5_OPCODE_NOP, 1);		/* 1 WQEBB */
	post(r, MLX5_OPCODE_RDMA_WRITE, 3);	/* 1 */
	post(r, GDAK_MLX5_OPCODE_WAIT, 5);	/* 2 */
	post(r, MLX5_OPCODE_RDMA_WRITE, 9);	/* 3 */
	publish(r);
	CHECK(gdak_capture_poll(c) > 0);
	hw_cqe(r, 0, MLX5_CQE_REQ, 1, 0);
	hw_cqe(r, 0, MLX5_CQE_REQ_ERR, 4, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK(gdak_capture_poll(c) > 0);
	CHECK_EQ(gdak_capture_poll(c), 0);	/* nothing new: nothing recorded twice */
	post(r, MLX5_OPCODE_SEND, 2);
	publish(r);
	consume(&r->scq_db, 2);
	hw_cqe(r, 0, MLX5_CQE_REQ, 7, 0);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(gdak_capture_close(c), 0);	/* the last pass sees the rest */

	read_back(path, &f);
	check_wqes(&f, r, 0, 5);
	CHECK_EQ(count(&f, GDAK_TREC_CQE), 3);
	for (unsigned k = 0; k < 3 && (i = cr_next(&f, &from, GDAK_TREC_CQE, QPN)) >= 0; k++) {
		struct gdak_mlx5_cqe_fields cf;

		gdak_mlx5_cqe_decode(f.r[i].bytes, &cf);
		CHECK_EQ(f.r[i].cqn, SCQN);
		CHECK_EQ(f.r[i].cq_index, k);
		CHECK_MEM(f.r[i].bytes, r->scq + (size_t)k * 64, 64);
		CHECK_EQ(cf.wqe_counter, k == 0 ? 1 : k == 1 ? 4 : 7);
		CHECK_EQ(cf.opcode, k == 1 ? MLX5_CQE_REQ_ERR : MLX5_CQE_REQ);
		if (k == 1)
			CHECK_EQ(cf.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	}
	/* one DOORBELL per producer-index change seen: 7, then 8 */
	from = 0;
	i = cr_next(&f, &from, GDAK_TREC_DOORBELL, QPN);
	CHECK(i >= 0 && f.r[i].idx == 7);
	i = cr_next(&f, &from, GDAK_TREC_DOORBELL, QPN);
	CHECK(i >= 0 && f.r[i].idx == 8);
	CHECK_EQ(count(&f, GDAK_TREC_QP), 1);
	CHECK_EQ(cr_lost(&f, QPN, "sq", NULL) + cr_lost(&f, QPN, "scq", NULL), 0);
	CHECK_EQ(st.wqes, 4);
	CHECK_EQ(st.wqebbs, 7);
	CHECK_EQ(st.cqes, 2);

	out = cr_tool(bin, "", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	{
		const char *w[] = {"t256", "qp 0x000123", "WQE idx=4 RDMA_WRITE", "ds=9", NULL};
		const char *e[] = {"t256", "CQE REQ_ERR", "wqe_counter=4",
				   "syndrome=REMOTE_ACCESS_ERR", NULL};
		const char *d[] = {"t256", "DOORBELL", "pi=7", NULL};
		CHECK(gdak_test_has_line(out, w));
		CHECK(gdak_test_has_line(out, e));
		CHECK(gdak_test_has_line(out, d));
	}
	if (gdak_test_failed)
		printf("gdak-trace output:\n%s", out);
	free(out);
	cr_free(&f);
	ring_free(r);
	unlink(path);
	free(path);
}

/* 30 WQEBBs (ten 3-WQEBB WQEs) into a 16-slot ring between two looks:
 * 14 were overwritten, the oldest slot left (index 14) is the last WQEBB of
 * the WQE at 12, so the walk skips it too: exactly 15 lost, and the WQEs at
 * 15, 18, ..., 27 captured whole. */
static void sq_loss(void)
{
	char *path = cr_tmpname("sqloss");
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture *c = cap_open(path);
	struct gdak_capture_stats st;
	struct cr_file f;
	uint64_t recs;
	int rc;
	char *out;

	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &r->d, ring_flags), 0);
	for (int k = 0; k < 10; k++)
		post(r, MLX5_OPCODE_RDMA_WRITE, 9);
	publish(r);
	CHECK(gdak_capture_poll(c) > 0);
	/* and the capture goes on normally afterwards */
	post(r, MLX5_OPCODE_NOP, 1);
	publish(r);
	CHECK(gdak_capture_poll(c) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.lost_wqebbs, 15);
	CHECK_EQ(st.loss_records, 1);
	CHECK_EQ(gdak_capture_close(c), 0);

	read_back(path, &f);
	check_wqes(&f, r, 5, 11);
	CHECK_EQ(cr_lost(&f, QPN, "sq", &recs), 15);
	CHECK(recs == 0 || recs == 15);
	out = cr_tool(bin, "--errors", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	CHECK(strstr(out, "sq lost=15 WQEBBs first=0") != NULL);
	CHECK(strstr(out, "WQE ") == NULL);
	if (gdak_test_failed)
		printf("gdak-trace --errors output:\n%s", out);
	free(out);
	cr_free(&f);
	ring_free(r);
	unlink(path);
	free(path);
}

/* 40 CQEs into a 16-entry CQ, all consumed by the device: 24 lost.  The
 * device says so through the CQ doorbell record, or (by_cons_idx) only
 * through the descriptor's cons_idx, as gdak's device API does between two
 * record updates. */
static void cq_loss_consumed(int by_cons_idx)
{
	char *path = cr_tmpname("cqloss");
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture *c = cap_open(path);
	struct cr_file f;
	size_t from = 0;
	long i;

	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &r->d, ring_flags), 0);
	for (int k = 0; k < 40; k++) {
		hw_cqe(r, 0, MLX5_CQE_REQ, (uint16_t)k, 0);
		if (by_cons_idx)
			r->d.scq.cons_idx = (uint64_t)k + 1;
		else
			consume(&r->scq_db, (uint64_t)k + 1);
	}
	CHECK(gdak_capture_poll(c) > 0);
	CHECK_EQ(gdak_capture_close(c), 0);
	read_back(path, &f);
	CHECK_EQ(cr_lost(&f, QPN, "scq", NULL), 24);
	for (unsigned k = 24; k < 40; k++) {
		i = cr_next(&f, &from, GDAK_TREC_CQE, QPN);
		REQUIRE(i >= 0);
		CHECK_EQ(f.r[i].cq_index, k);
		CHECK_EQ(gdak_be16toh(((struct mlx5_cqe64 *)(void *)f.r[i].bytes)->wqe_counter), k);
	}
	CHECK_EQ(cr_next(&f, &from, GDAK_TREC_CQE, QPN), -1);
	cr_free(&f);
	ring_free(r);
	unlink(path);
	free(path);
}

/* 20 CQEs in a 16-entry CQ with the device's consumer index at 4: CQEs 16..19
 * legally overwrote 0..3, which are lost; 4..19 are captured. */
static void cq_loss_slot_reused(void)
{
	char *path = cr_tmpname("cqreuse");
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture *c = cap_open(path);
	struct gdak_capture_stats st;
	struct cr_file f;
	size_t from = 0;
	long i;

	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &r->d, ring_flags), 0);
	consume(&r->scq_db, 4);
	for (int k = 0; k < 20; k++)
		hw_cqe(r, 0, MLX5_CQE_REQ, (uint16_t)(100 + k), 0);
	CHECK(gdak_capture_poll(c) > 0);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.lost_cqes, 4);
	CHECK_EQ(st.cqes, 16);
	CHECK_EQ(gdak_capture_close(c), 0);
	read_back(path, &f);
	CHECK_EQ(cr_lost(&f, QPN, "scq", NULL), 4);
	for (unsigned k = 4; k < 20; k++) {
		i = cr_next(&f, &from, GDAK_TREC_CQE, QPN);
		REQUIRE(i >= 0);
		CHECK_EQ(f.r[i].cq_index, k);
		CHECK_EQ(gdak_be16toh(((struct mlx5_cqe64 *)(void *)f.r[i].bytes)->wqe_counter),
			 100 + k);
	}
	cr_free(&f);
	ring_free(r);
	unlink(path);
	free(path);
}

/* The 16-bit record wraps: indices 65530..65535, 0..5. */
static void pi_wrap(void)
{
	char *path = cr_tmpname("wrap");
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture *c = cap_open(path);
	struct cr_file f;

	r->pi = 65530;
	publish(r);
	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &r->d, ring_flags), 0);
	for (int k = 0; k < 12; k++) {
		post(r, MLX5_OPCODE_RDMA_WRITE, 3);
		if (k % 5 == 4) {
			publish(r);
			gdak_capture_poll(c);
		}
	}
	publish(r);
	CHECK_EQ(gdak_capture_close(c), 0);
	read_back(path, &f);
	check_wqes(&f, r, 0, 12);
	CHECK_EQ(r->exp_idx[6], 0);
	CHECK_EQ(cr_lost(&f, QPN, "sq", NULL), 0);
	cr_free(&f);
	ring_free(r);
	unlink(path);
	free(path);
}

/* A record that covers only part of a WQE: nothing until the rest is
 * published; then a record going backwards is a VIOLATION. */
static void partial_and_backwards(void)
{
	char *path = cr_tmpname("partial");
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture *c = cap_open(path);
	struct gdak_capture_stats st;
	struct cr_file f;
	size_t from = 0;
	long i;

	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &r->d, ring_flags), 0);
	post(r, MLX5_OPCODE_RDMA_WRITE, 9);
	publish_pi(r, 1);
	gdak_capture_poll(c);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.wqes, 0);
	CHECK_EQ(st.doorbells, 1);
	publish(r);
	gdak_capture_poll(c);
	REQUIRE_EQ(gdak_capture_get_stats(c, &st), 0);
	CHECK_EQ(st.wqes, 1);
	publish_pi(r, 1);
	gdak_capture_poll(c);
	CHECK_EQ(gdak_capture_close(c), 0);
	read_back(path, &f);
	check_wqes(&f, r, 0, 1);
	i = cr_next(&f, &from, GDAK_TREC_VIOLATION, QPN);
	CHECK(i >= 0 && !strcmp(f.r[i].name, "capture_pi_backwards"));
	cr_free(&f);
	ring_free(r);
	unlink(path);
	free(path);
}

/* CPU_PROXY: the device's 64-bit word, not the record; and the receive CQ. */
static void proxy_and_rcq(void)
{
	char *path = cr_tmpname("proxy");
	struct ring *r = ring_new(16, 16, 1);
	struct gdak_capture *c = cap_open(path);
	struct cr_file f;
	size_t from = 0;
	long i;

	r->d.handler = GDAK_DEV_DB_CPU_PROXY;
	REQUIRE_EQ(gdak_capture_add_dev_qp(c, &r->d, ring_flags), 0);
	post(r, MLX5_OPCODE_SEND, 2);
	post(r, MLX5_OPCODE_SEND_IMM, 2);
	__atomic_store_n(&r->proxy, r->pi, __ATOMIC_RELEASE);	/* record stays 0 */
	hw_cqe(r, 1, MLX5_CQE_RESP_SEND, 0, 0);
	CHECK(gdak_capture_poll(c) > 0);
	CHECK_EQ(gdak_capture_close(c), 0);
	read_back(path, &f);
	check_wqes(&f, r, 0, 2);
	i = cr_next(&f, &from, GDAK_TREC_CQE, QPN);
	REQUIRE(i >= 0);
	CHECK_EQ(f.r[i].cqn, RCQN);
	CHECK_MEM(f.r[i].bytes, r->rcq, 64);
	from = 0;
	i = cr_next(&f, &from, GDAK_TREC_DOORBELL, QPN);
	CHECK(i >= 0 && f.r[i].idx == 2);
	cr_free(&f);
	ring_free(r);
	unlink(path);
	free(path);
}

/* Bad arguments get an error, and the capture goes on. */
static void bad_args(void)
{
	char *path = cr_tmpname("args");
	struct ring *r = ring_new(16, 16, 0);
	struct gdak_capture *c = NULL, *c2 = (struct gdak_capture *)1;
	struct gdak_dev_qp bad;
	void *lib;

	CHECK_EQ(gdak_capture_open(NULL, NULL, 0, &c2), -EINVAL);
	CHECK(c2 == NULL);
	CHECK_EQ(gdak_capture_open(NULL, path, 0x100, &c2), -EINVAL);
	CHECK_EQ(gdak_capture_open(NULL, "/nonexistent-dir/x.pcapng", 0, &c2), -ENOENT);
	CHECK_EQ(gdak_capture_open(NULL, path, 0, NULL), -EINVAL);
	c = cap_open(path);
	CHECK_EQ(gdak_capture_add_dev_qp(c, NULL, 0), -EINVAL);
	CHECK_EQ(gdak_capture_add_dev_qp(c, &r->d, 0x80), -EINVAL);
	bad = r->d;
	bad.scq.ncqe = 12;
	CHECK_EQ(gdak_capture_add_dev_qp(c, &bad, 0), -EINVAL);
	bad = r->d;
	bad.version = 7;
	CHECK_EQ(gdak_capture_add_dev_qp(c, &bad, 0), -EINVAL);
	bad = r->d;
	bad.sq_buf = NULL;
	CHECK_EQ(gdak_capture_add_dev_qp(c, &bad, 0), -EINVAL);
	CHECK_EQ(gdak_capture_remove_dev_qp(c, &r->d), -ENOENT);
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		CHECK_EQ(gdak_capture_add_dev_qp(c, &r->d, GDAK_CAPTURE_RINGS_GPU), -ENODEV);
	else
		dlclose(lib);
	CHECK_EQ(gdak_capture_add_dev_qp(c, &r->d, 0), 0);
	CHECK_EQ(gdak_capture_add_dev_qp(c, &r->d, 0), -EEXIST);
	post(r, MLX5_OPCODE_NOP, 1);
	publish(r);
	CHECK_EQ(gdak_capture_remove_dev_qp(c, &r->d), 0);	/* last pass: the NOP */
	CHECK_EQ(gdak_capture_remove_dev_qp(c, &r->d), -ENOENT);
	CHECK_EQ(gdak_capture_pause(c, 1), 0);	/* no thread: returns at once */
	CHECK_EQ(gdak_capture_poll(c), 0);
	CHECK_EQ(gdak_capture_close(c), 0);
	CHECK_EQ(gdak_capture_close(NULL), -EINVAL);
	CHECK_EQ(gdak_capture_poll(NULL), -EINVAL);
	{
		struct cr_file f;
		read_back(path, &f);
		check_wqes(&f, r, 0, 1);
		cr_free(&f);
	}
	ring_free(r);
	unlink(path);
	free(path);
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
		basic();
		sq_loss();
		cq_loss_consumed(0);
		cq_loss_consumed(1);
		cq_loss_slot_reused();
		pi_wrap();
		partial_and_backwards();
		proxy_and_rcq();
	}
	gdak_capture_test_fake_gpu(0);
	return gdak_test_end();
}
