/* SPDX-License-Identifier: MIT */
/*
 * trace_bench.c - what a trace record costs the recording (NIC) thread, in
 * the shape of the NIC model's write_bw stream: per doorbell one DOORBELL,
 * 16 RDMA_WRITE WQEs (consecutive indexes and addresses) and one CQE,
 * written to a file
 *   - one record per block, the recording thread writing the file (inline),
 *   - the same with the I/O thread writing the file (thread),
 *   - each doorbell's records as one batch (gdak_trace_batch_begin/end:
 *     what a NIC pass does), I/O thread;
 *   - the same with one WQE per doorbell (the latency test's passes);
 * and with tracing off (a NULL buffer: the caller's one branch).
 *
 * Prints the recording thread's CPU time per record (and wall time), bytes
 * per WQE and how often it had to wait for the I/O thread; asserts only that every record
 * reached the file and reads back as written (a timing assertion would fail
 * on a loaded 2-core CI machine).  GDAK_TRACE_BENCH_N sets the number of
 * doorbells (default 20000, i.e. 360000 records per mode).
 */
#include <gdak/mlx5.h>
#include "gdak_test.h"
#include "trace_util.h"
#include "trace_int.h"

static volatile uint64_t sink;

/* This thread's CPU time: what the records cost the recording thread, not
 * counting the time other processes held the CPU (a shared machine). */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

enum { PER_DB = 16 };

struct mode {
	const char *name;
	unsigned chunks;	/* 1: inline */
	int batch;
	unsigned per_db;	/* WQEs per doorbell (and CQE) */
	unsigned dbs_per_pass;	/* doorbells per batch (a NIC pass), 0: 1 */
	int simd;		/* the AVX2 run check where the CPU has it */
};

static void make_wqe(uint8_t *w, uint16_t idx, int last)
{
	struct gdak_mlx5_ctrl c = {.opcode = MLX5_OPCODE_RDMA_WRITE, .wqe_index = idx,
				   .qpn = 0x100, .ds = 3, .fm_ce_se = last ? MLX5_WQE_CTRL_CQ_UPDATE : 0};
	uint64_t raddr = gdak_htobe64(0x7f0000100000ull + (uint64_t)(idx % 1024) * 64);
	uint64_t laddr = gdak_htobe64(0x7f0000200000ull + (uint64_t)(idx % 1024) * 64);
	uint32_t v;

	memset(w, 0, 64);
	gdak_mlx5_ctrl_encode((struct mlx5_wqe_ctrl_seg *)(void *)w, &c);
	memcpy(w + 16, &raddr, 8);
	v = gdak_htobe32(0x2002);
	memcpy(w + 24, &v, 4);
	v = gdak_htobe32(64);
	memcpy(w + 32, &v, 4);
	v = gdak_htobe32(0x1001);
	memcpy(w + 36, &v, 4);
	memcpy(w + 40, &laddr, 8);
}

static void make_cqe(uint8_t *c, uint16_t counter, uint32_t n)
{
	struct mlx5_cqe64 *q = (struct mlx5_cqe64 *)(void *)c;

	memset(c, 0, 64);
	q->wqe_counter = gdak_htobe16(counter);
	q->byte_cnt = gdak_htobe32(64);
	q->sop_drop_qpn = gdak_htobe32(0x100);
	q->op_own = (uint8_t)(MLX5_CQE_REQ << 4 | ((n / 256) & 1));
}

struct check {
	long wqes, cqes, dbs, other;
	long bad;
	uint16_t next_idx;
	uint64_t records, lost;
	uint8_t (*w)[64];	/* what was written */
	uint8_t (*cq)[64];
};

static void check_fn(const struct gdak_trace_item *it, void *arg)
{
	struct check *c = arg;

	if (it->kind != GDAK_TITEM_RECORD)
		return;
	switch (it->hdr.type) {
	case GDAK_TREC_WQE:
		if (it->u.wqe.wqe_index != c->next_idx % 1024 || it->u.wqe.len != 64 ||
		    memcmp(it->u.wqe.bytes, c->w[c->next_idx % 1024], 64))
			c->bad++;
		c->next_idx++;
		c->wqes++;
		break;
	case GDAK_TREC_CQE:
		if (it->u.cqe.cqn != 0x80 || it->u.cqe.cq_index != (uint32_t)c->cqes ||
		    memcmp(it->u.cqe.cqe, c->cq[c->cqes % 512], 64))
			c->bad++;
		c->cqes++;
		break;
	case GDAK_TREC_DOORBELL:
		c->dbs++;
		break;
	case GDAK_TREC_STATS:
		c->records = it->u.stats.records;
		c->lost = it->u.stats.lost;
		break;
	default:
		c->other++;
	}
}

static void run(const struct mode *m, long n, uint8_t (*w)[64], uint8_t (*cq)[64])
{
	struct gdak_trace_opts o = {.chunks = m->chunks};
	char *path = tt_tmpname("bench");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct gdak_trace_stats st;
	struct check c = {.w = w, .cq = cq};
	unsigned dpp = m->dbs_per_pass ? m->dbs_per_pass : 1;
	uint64_t t0, t1, t2, c0, c1;
	unsigned per = m->per_db;
	long dbs = n * PER_DB / per;	/* the same WQEs in every mode */
	long recs = dbs * (per + 2);
	size_t len;
	uint8_t *file;

	REQUIRE(path);
	gdak_trace_inject_simd(m->simd);
	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	t0 = gdak_test_now_ns();
	c0 = cpu_ns();
	for (long i = 0; i < dbs; i++) {
		uint16_t base = (uint16_t)(i * per);
		uint64_t reg;

		if (m->batch && i % dpp == 0)
			gdak_trace_batch_begin(b);
		memcpy(&reg, w[(base + per - 1) % 1024], 8);
		gdak_trace_doorbell(b, 0x100, 0, (uint16_t)(base + per), &reg, 8);
		/* indexes wrap at 1024 here (the WQEs are made once, for 1024) */
		for (unsigned k = 0; k < per; k++)
			gdak_trace_wqe(b, 0x100, (uint16_t)((base + k) % 1024), w[(base + k) % 1024], 1);
		gdak_trace_cqe(b, 0x100, 0x80, (uint32_t)i, cq[i % 512]);	/* one per doorbell */
		if (m->batch && (i % dpp == dpp - 1 || i == dbs - 1))
			gdak_trace_batch_end(b);
	}
	c1 = cpu_ns();
	t1 = gdak_test_now_ns();
	gdak_trace_get_stats(t, &st);
	gdak_trace_close(t);
	t2 = gdak_test_now_ns();

	file = tt_slurp(path, &len);
	REQUIRE(file);
	CHECK_EQ(tt_read_all(file, len, check_fn, &c, NULL, 0), 0);
	CHECK_EQ(c.wqes, n * PER_DB);
	CHECK_EQ(c.cqes, dbs);
	CHECK_EQ(c.dbs, dbs);
	CHECK_EQ(c.bad, 0);
	CHECK_EQ(c.records, (uint64_t)recs);
	CHECK_EQ(c.lost, 0);
	printf("%-19s %6.1f ns/record CPU (%6.1f per WQE), %6.1f wall  %6.1f file bytes/WQE  "
	       "%llu waits  close %.1f ms\n",
	       m->name, (double)(c1 - c0) / (double)recs, (double)(c1 - c0) / (double)(n * PER_DB),
	       (double)(t1 - t0) / (double)recs,
	       (double)len / (double)(n * PER_DB), (unsigned long long)st.waits,
	       (double)(t2 - t1) / 1e6);
	free(file);
	unlink(path);
	free(path);
}

int main(void)
{
	const char *e = getenv("GDAK_TRACE_BENCH_N");
	const char *only = getenv("GDAK_TRACE_BENCH_MODE");
	long n = e ? atol(e) : 20000;
	static uint8_t w[1024][64], cq[512][64];
	static const struct mode modes[] = {
		{"records, inline", 1, 0, PER_DB, 0, 1},
		{"records, thread", 0, 0, PER_DB, 0, 1},
		{"batched, thread", 0, 1, PER_DB, 0, 1},
		/* the latency test's shape: one WQE per doorbell and pass */
		{"batched, 1/pass", 0, 1, 1, 0, 1},
		/* the NIC model's passes under write_bw: ~16 doorbells each */
		{"batched, 16 db/pass", 0, 1, PER_DB, 16, 1},
		{"  without AVX2", 0, 1, PER_DB, 16, 0},
	};
	uint64_t t0, t1;

	REQUIRE(n > 0);
	unsetenv("GDAK_TRACE_WRITER");
	unsetenv("GDAK_TRACE_FULL");
	for (unsigned i = 0; i < 1024; i++)
		make_wqe(w[i], (uint16_t)i, i % PER_DB == PER_DB - 1);
	for (unsigned i = 0; i < 512; i++)
		make_cqe(cq[i], (uint16_t)(i * PER_DB + PER_DB - 1), i);
	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!only || atoi(only) == (int)i)	/* GDAK_TRACE_BENCH_MODE: one, for a profiler */
			run(&modes[i], n, w, cq);

	/* tracing off: the same calls with a NULL buffer return at once */
	t0 = cpu_ns();
	for (long i = 0; i < n * PER_DB; i++) {
		gdak_trace_wqe(NULL, 0x100, (uint16_t)i, w[i % 1024], 1);
		sink += (uint64_t)i;
	}
	t1 = cpu_ns();
	printf("off (NULL buffer) %6.1f ns/record CPU\n", (double)(t1 - t0) / (double)(n * PER_DB));
	return gdak_test_end();
}
