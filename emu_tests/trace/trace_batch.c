/* SPDX-License-Identifier: MIT */
/*
 * trace_batch.c - BATCH records are exact: the same pseudo-random stream of
 * doorbells (DB, BF, none, over-long), WQEs (1..17 WQEBBs, NULL), CQEs
 * (NULL too) on several QPs, interleaved with records that cannot be
 * batched, written once record by record and once inside batches of random
 * length, reads back as the same records - type, QP, thread, sequence
 * number, flags, every raw byte - and only the timestamps may differ.  A
 * small buffer makes batches meet the end of a buffer; a second thread
 * batches concurrently; the fake clock shows one timestamp per batch.
 *
 * The same for the streams a device makes, where most WQEs and CQEs are
 * their predecessor advanced by a fixed step and go into REPEAT
 * sub-records (docs/TRACE.md): progressions with byte carries and index
 * wraps, one-off signaled WQEs and CQE blips (OFF), steps that change,
 * other QPs and multi-WQEBB WQEs cutting in, stretches of WQEs handed over
 * in one gdak_trace_wqes() call - written with the AVX2 run check and
 * without it; one run longer than a REPEAT holds; and REPEAT/OFF
 * sub-records damaged by hand, each rejected with its own message.
 */
#include <pthread.h>

#include "gdak_test.h"
#include "trace_int.h"
#include "trace_util.h"

#define NREC 60000

struct rec_list {
	struct gdak_trace_item *it;
	uint8_t **body;
	size_t n, cap;
	size_t batches;		/* items that came from a BATCH block */
	uint64_t last_ts;
	size_t ts_changes;
	unsigned cont, fresh;	/* BATCH blocks going on from the previous one, or not */
};

static void collect(const struct gdak_trace_item *it, void *arg)
{
	struct rec_list *l = arg;

	if (it->kind != GDAK_TITEM_RECORD || it->hdr.type == GDAK_TREC_STATS)
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->it = realloc(l->it, l->cap * sizeof(*l->it));
		l->body = realloc(l->body, l->cap * sizeof(*l->body));
		REQUIRE(l->it && l->body);
	}
	l->it[l->n] = *it;
	l->body[l->n] = malloc(it->hdr.body_len + 1);
	REQUIRE(l->body[l->n]);
	memcpy(l->body[l->n], it->body, it->hdr.body_len);
	if (it->batch_count)
		l->batches++;
	if (it->hdr.ts_ns != l->last_ts)
		l->ts_changes++;
	l->last_ts = it->hdr.ts_ns;
	l->n++;
}

static void list_free(struct rec_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->body[i]);
	free(l->body);
	free(l->it);
}

static __thread uint64_t rng, rng_b;	/* the stream; the batch spans (apart) */
static uint32_t step(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}
static uint32_t rnd(void) { return step(&rng); }

/* The stream: WQEs that look like a device's (mostly a base WQE with an
 * index and an address changed), sometimes random bytes. */
static void stream(struct gdak_trace_buf *b, int batched, uint64_t seed, int n)
{
	uint8_t big[20 * 64];	/* per thread: both threads run this */
	uint8_t base[64], cqe[64];
	uint16_t idx[4] = {0, 100, 65530, 7};
	uint32_t cq_i[4] = {0};
	int in_batch = 0, left = 0;

	rng = seed;
	rng_b = seed + 1;
	for (unsigned i = 0; i < 64; i++)
		base[i] = (uint8_t)rnd();
	memset(cqe, 0, sizeof(cqe));
	for (int k = 0; k < n; k++) {
		uint32_t qn = rnd() % 4, qpn = 0x100 + qn, r = rnd() % 100;

		if (batched && !in_batch && step(&rng_b) % 3) {
			gdak_trace_batch_begin(b);
			in_batch = 1;
			left = 1 + (int)(step(&rng_b) % 40);
		}
		if (r < 50) {		/* a WQE */
			uint32_t nbb = rnd() % 10 ? 1 : rnd() % 18;	/* 17: cut, flagged */
			int null = rnd() % 200 == 0;

			for (uint32_t j = 0; j < nbb; j++) {
				memcpy(big + 64 * j, base, 64);
				big[64 * j + 1] = (uint8_t)(idx[qn] >> 8);
				big[64 * j + 2] = (uint8_t)idx[qn];
				big[64 * j + 23] = (uint8_t)k;
				if (rnd() % 8 == 0)
					for (unsigned x = 0; x < 64; x++)
						big[64 * j + x] = (uint8_t)rnd();
			}
			gdak_trace_wqe(b, qpn, idx[qn], null ? NULL : big, nbb);
			idx[qn] = (uint16_t)(idx[qn] + (nbb ? nbb : 1) + (rnd() % 20 == 0));
		} else if (r < 75) {	/* a CQE */
			cqe[60] = (uint8_t)(cq_i[qn] >> 8);
			cqe[61] = (uint8_t)cq_i[qn];
			cqe[63] = (uint8_t)(rnd() % 16 << 4 | (cq_i[qn] & 1));
			if (rnd() % 10 == 0)
				cqe[rnd() % 64] = (uint8_t)rnd();
			gdak_trace_cqe(b, qpn, 0x80 + qn, cq_i[qn], rnd() % 300 ? cqe : NULL);
			cq_i[qn] += 1 + (rnd() % 10 == 0);
		} else if (r < 90) {	/* a doorbell */
			uint32_t len = (uint32_t[]){0, 8, 64, 65, 8}[rnd() % 5];

			for (unsigned x = 0; x < 65; x++)
				big[x] = (uint8_t)rnd();
			gdak_trace_doorbell(b, qpn, (uint8_t)(rnd() % 3), idx[qn], big, len);
		} else if (r < 95) {	/* not batched: ends the current batch */
			gdak_trace_violation(b, qpn, idx[qn], "rule", 0x13, "between batches");
		} else if (r < 98) {
			gdak_trace_recv_wqe(b, qpn, (uint16_t)k, base, 48);
		} else {
			gdak_trace_note(b, "note");
		}
		if (in_batch && --left == 0) {
			gdak_trace_batch_end(b);
			in_batch = 0;
		}
	}
	if (in_batch)
		gdak_trace_batch_end(b);
}

/* 64 bytes as 8 big-endian words, stepped */
static void lanes_step(uint8_t *w, const uint64_t *st)
{
	for (unsigned i = 0; i < 8; i++)
		trace_put_lane(w + 8 * i, trace_lane(w + 8 * i) + st[i]);
}

/* A device's streams: per QP a progression of RDMA_WRITEs (remote and
 * local address stepping by a random amount, so bytes carry; the 16-bit
 * index wraps), every 16th signaled (a one-off: OFF), now and then a new
 * step, a multi-WQEBB WQE or another QP; CQEs whose counter steps by 16 and
 * whose owner bit flips every 64, now and then a syndrome blip; doorbells.
 * Batches of up to 600 records, like a NIC pass's. */
static void progressions(struct gdak_trace_buf *b, int batched, uint64_t seed, int n)
{
	struct {
		uint8_t w[64], c[64];
		uint64_t ws[8], cs[8];
		uint16_t idx;
		uint32_t cqi;
	} q[3];
	uint8_t big[4 * 64], run[40][64], c[64];
	uint32_t qn = 0, g;
	int in_batch = 0, left = 0;

	rng = seed;
	rng_b = seed + 1;
	memset(q, 0, sizeof(q));
	for (unsigned j = 0; j < 3; j++) {
		q[j].idx = (uint16_t)(65536 - 300 * (j + 1));	/* wraps soon */
		q[j].w[3] = 0x08;				/* RDMA_WRITE */
		q[j].w[7] = 3;
		trace_put_lane(q[j].w + 16, 0x7f0000100000ull + rnd());
		q[j].w[27] = 0x22;
		q[j].w[35] = 8;
		trace_put_lane(q[j].w + 40, 0x7f0000200000ull + rnd());
		q[j].ws[2] = q[j].ws[5] = 8 * (1 + rnd() % 600);
		q[j].c[63] = 0x00;	/* REQ, owner 0 */
		q[j].cs[7] = 16 << 16;	/* wqe_counter, bytes 60..61 */
	}
	for (int k = 0; k < n; k++) {
		uint32_t r = rnd() % 100;

		if (batched && !in_batch) {
			gdak_trace_batch_begin(b);
			in_batch = 1;
			left = 1 + (int)(step(&rng_b) % 600);
		}
		if (rnd() % 50 == 0)
			qn = rnd() % 3;
		if (r < 85) {		/* a WQE */
			uint32_t qpn = 0x100 + qn;

			if (rnd() % 100 == 0) {	/* a large one: its own sub-record */
				uint32_t nbb = 2 + rnd() % 3;

				for (uint32_t x = 0; x < 64 * nbb; x++)
					big[x] = (uint8_t)rnd();
				big[1] = (uint8_t)(q[qn].idx >> 8);
				big[2] = (uint8_t)q[qn].idx;
				gdak_trace_wqe(b, qpn, q[qn].idx, big, nbb);
				q[qn].idx = (uint16_t)(q[qn].idx + nbb);
				goto next;
			}
			if (rnd() % 200 == 0)	/* a new step, from here on */
				q[qn].ws[2 + 3 * (rnd() % 2)] = rnd() % 3 ? 8 * (rnd() % 5000) : rnd();
			/* one WQE, or a stretch of up to 40 at consecutive slots
			 * handed over at once (gdak_trace_wqes: what a NIC pass
			 * does) - each counts as a record of the n */
			g = rnd() % 4 ? 1 : 1 + rnd() % 40;
			if (g > (uint32_t)(n - k))
				g = (uint32_t)(n - k);
			for (uint32_t j = 0; j < g; j++) {
				uint16_t ix = (uint16_t)(q[qn].idx + j);

				lanes_step(q[qn].w, q[qn].ws);
				q[qn].w[1] = (uint8_t)(ix >> 8);
				q[qn].w[2] = (uint8_t)ix;
				memcpy(run[j], q[qn].w, 64);
				if (ix % 16 == 15)
					run[j][11] = 0x08;	/* signaled: this one only */
			}
			if (g == 1)
				gdak_trace_wqe(b, qpn, q[qn].idx, run[0], 1);
			else
				gdak_trace_wqes(b, qpn, q[qn].idx, run, g);
			q[qn].idx = (uint16_t)(q[qn].idx + g);
			k += (int)g - 1;
			left -= (int)g - 1;
		} else if (r < 95) {	/* a CQE */
			lanes_step(q[qn].c, q[qn].cs);
			q[qn].c[63] = (uint8_t)((q[qn].c[63] & 0xf0) | ((q[qn].cqi / 64) & 1));
			memcpy(c, q[qn].c, 64);
			if (rnd() % 40 == 0)
				c[55] = (uint8_t)rnd();	/* a blip */
			gdak_trace_cqe(b, 0x100 + qn, 0x80 + qn, q[qn].cqi, c);
			q[qn].cqi++;
		} else {
			uint64_t reg = rnd();

			gdak_trace_doorbell(b, 0x100 + qn, 0, q[qn].idx, &reg, 8);
		}
next:
		if (in_batch && --left <= 0) {
			gdak_trace_batch_end(b);
			in_batch = 0;
		}
	}
	if (in_batch)
		gdak_trace_batch_end(b);
}

typedef void stream_fn(struct gdak_trace_buf *b, int batched, uint64_t seed, int n);

struct thr {
	struct gdak_trace *t;
	int batched;
	stream_fn *fn;
};

static void *second(void *p)
{
	struct thr *a = p;
	struct gdak_trace_buf *b = gdak_trace_thread_buf(a->t, 7);

	if (b)
		a->fn(b, a->batched, 99, NREC / 4);
	return NULL;
}

static void write_file(const char *path, int batched, unsigned chunks, stream_fn *fn, int simd)
{
	struct gdak_trace_opts o = {.buf_size = 128 * 1024, .chunks = chunks};
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct thr a;
	pthread_t th;

	gdak_trace_inject_simd(simd);
	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	a = (struct thr){.t = t, .batched = batched, .fn = fn};
	REQUIRE_EQ(pthread_create(&th, NULL, second, &a), 0);
	fn(b, batched, 1, NREC);
	pthread_join(th, NULL);
	gdak_trace_close(t);
	gdak_trace_inject_simd(1);
}

/* BATCH blocks of the file: how many go on from the previous one's
 * references (GDAK_TRACE_BATCH_CONT) and how many start afresh. */
static void count_batches(const uint8_t *f, size_t len, unsigned *cont, unsigned *fresh)
{
	size_t off = 0;

	*cont = *fresh = 0;
	while (off + 12 + 40 <= len) {
		uint32_t bl = trace_get32(f + off + 4);

		if (trace_get32(f + off) == GDAK_PCAPNG_CB_COPY && f[off + 12] == GDAK_TREC_BATCH) {
			if (trace_get32(f + off + 12 + 32 + 4) & GDAK_TRACE_BATCH_CONT)
				(*cont)++;
			else
				(*fresh)++;
		}
		if (bl < 12)
			break;
		off += bl;
	}
}

static void read_file(const char *path, struct rec_list *l)
{
	size_t len;
	uint8_t *file = tt_slurp(path, &len);
	char err[256];

	REQUIRE(file);
	CHECK_EQ(tt_read_all(file, len, collect, l, err, sizeof(err)), 0);
	count_batches(file, len, &l->cont, &l->fresh);
	free(file);
}

/* Same records, thread by thread, in order (threads interleave by buffer). */
static void compare(struct rec_list *a, struct rec_list *z)
{
	unsigned bad = 0;

	CHECK_EQ(a->n, z->n);
	for (uint32_t th = 0; th < 8; th += 7) {
		size_t i = 0, j = 0;

		for (;;) {
			while (i < a->n && a->it[i].hdr.thread_id != th)
				i++;
			while (j < z->n && z->it[j].hdr.thread_id != th)
				j++;
			if (i == a->n || j == z->n)
				break;
			const struct gdak_trace_rec_hdr *x = &a->it[i].hdr, *y = &z->it[j].hdr;
			if (x->type != y->type || x->qpn != y->qpn || x->seq != y->seq ||
			    x->body_len != y->body_len || x->version != y->version ||
			    memcmp(a->body[i], z->body[j], x->body_len)) {
				if (!bad) {
					size_t d = 0;

					while (d < x->body_len && d < y->body_len &&
					       a->body[i][d] == z->body[j][d])
						d++;
					printf("thread %u record seq %llu (%s) differs: body %u vs %u "
					       "bytes, first at byte %zu\n", th,
					       (unsigned long long)x->seq, gdak_trace_rec_name(x->type),
					       x->body_len, y->body_len, d);
				}
				bad++;
			}
			i++;
			j++;
		}
		CHECK(i == a->n && j == z->n);
	}
	CHECK_EQ(bad, 0);
}

/* The progressions written record by record, batched with and without the
 * AVX2 run check, and batched inline: the same records; the batched file a
 * fraction of the size (most records are in REPEATs). */
static void test_progressions(void)
{
	char *p[4] = {tt_tmpname("pplain"), tt_tmpname("psimd"), tt_tmpname("pgeneric"),
		      tt_tmpname("pinline")};
	struct rec_list l[4] = {{0}};
	size_t len[4];

	for (unsigned i = 0; i < 4; i++)
		REQUIRE(p[i]);
	write_file(p[0], 0, 0, progressions, 1);
	write_file(p[1], 1, 0, progressions, 1);
	write_file(p[2], 1, 0, progressions, 0);
	write_file(p[3], 1, 1, progressions, 1);
	for (unsigned i = 0; i < 4; i++) {
		read_file(p[i], &l[i]);
		free(tt_slurp(p[i], &len[i]));
	}
	CHECK_EQ(l[0].n, (size_t)(NREC + NREC / 4));
	for (unsigned i = 1; i < 4; i++) {
		compare(&l[0], &l[i]);
		CHECK(len[i] < len[0] / 15);
	}
	printf("progressions: %zu records, %zu bytes one by one, %zu batched (%.2f per record)\n",
	       l[0].n, len[0], len[1], (double)len[1] / (double)l[0].n);
	for (unsigned i = 0; i < 4; i++) {
		list_free(&l[i]);
		unlink(p[i]);
		free(p[i]);
	}
}

/* A run longer than one REPEAT holds (65535): split, read back whole. */
static void test_long_run(void)
{
	enum { N = 150000 };
	char *path = tt_tmpname("longrun");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct rec_list l = {0};
	uint8_t w[64] = {0}, x[64];
	uint64_t st[8] = {0, 0, 64, 0, 0, 64, 0, 0};
	size_t len, bad = 0;

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open(path, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	w[3] = 0x08;
	gdak_trace_batch_begin(b);
	for (uint32_t i = 0; i < N; i++) {
		w[1] = (uint8_t)(i >> 8);
		w[2] = (uint8_t)i;
		gdak_trace_wqe(b, 0x11, (uint16_t)i, w, 1);
		lanes_step(w, st);
	}
	gdak_trace_batch_end(b);
	gdak_trace_close(t);
	read_file(path, &l);
	free(tt_slurp(path, &len));
	CHECK_EQ(l.n, (size_t)N);
	memset(x, 0, sizeof(x));
	x[3] = 0x08;
	for (size_t i = 0; i < l.n && i < N; i++) {
		x[1] = (uint8_t)(i >> 8);
		x[2] = (uint8_t)i;
		if (l.it[i].hdr.type != GDAK_TREC_WQE || l.it[i].u.wqe.wqe_index != (uint16_t)i ||
		    l.it[i].u.wqe.len != 64 || memcmp(l.body[i] + 8, x, 64))
			bad++;
		lanes_step(x, st);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(l.batches, (size_t)N);
	/* the file's headers, the STATS record and one batch of a few REPEATs
	 * (the 16-bit index wraps twice: a new progression each time) */
	CHECK(len < 1024);
	printf("%d WQEs in one pass: %zu file bytes\n", N, len);
	list_free(&l);
	unlink(path);
	free(path);
}

/* Damaged REPEAT and OFF sub-records: each named, the block skipped, the
 * records before it handed out, the rest of the file read. */
static void test_damage(void)
{
	char *path = tt_tmpname("damage");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	uint8_t w[64] = {0}, *file, *m;
	size_t len, bat = 0, off = 0;
	static const struct {
		size_t at;		/* from the first sub-record */
		uint8_t v[3];
		unsigned n;
		const char *msg;
	} cases[] = {
		{8, {0x22, 0}, 2, "BATCH record 3 of 5: a REPEAT of 0 records (3 left in the batch)"},
		{8, {0x22, 9}, 2, "BATCH record 3 of 5: a REPEAT of 9 records (3 left in the batch)"},
		{8, {0x62}, 1, "BATCH record 3 of 5: tag 0x62: only WQEs and CQEs repeat"},
		{6, {0x22, 1, 0}, 3, "BATCH record 2 of 5: a repeated WQE without two one-WQEBB WQEs "
				  "of QP 0x11 before it"},
		{6, {0x52}, 1, "BATCH record 2 of 5: an off-step WQE without two one-WQEBB WQEs"},
		{0, {0x11}, 1, "BATCH record 1 of 5: tag 0x11: a doorbell is neither predicted nor "
			       "off-step"},
	};

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open(path, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	gdak_trace_note(b, "before");
	/* WQE 0 (6 bytes: tag, index, size, flags, an empty word mask - its
	 * bytes are its index's), WQE 1 (predicted: 2 bytes), WQEs 2..4 (the
	 * step from 0 to 1 again: REPEAT, 3 bytes) */
	gdak_trace_batch_begin(b);
	for (uint16_t i = 0; i < 5; i++) {
		w[2] = (uint8_t)i;
		gdak_trace_wqe(b, 0x11, i, w, 1);
	}
	gdak_trace_batch_end(b);
	gdak_trace_note(b, "after");
	gdak_trace_close(t);
	file = tt_slurp(path, &len);
	REQUIRE(file);
	while (off + 12 + 40 <= len) {	/* the BATCH block */
		if (trace_get32(file + off) == GDAK_PCAPNG_CB_COPY && file[off + 12] == GDAK_TREC_BATCH) {
			bat = off;
			break;
		}
		off += trace_get32(file + off + 4);
	}
	REQUIRE(bat);
	{	/* the layout the cases assume */
		static const uint8_t want[] = {0x02, 0, 0, 1, 0, 0, 0x42, 0, 0x22, 3, 0};
		const uint8_t *sub = file + bat + 12 + 32 + 8;

		CHECK_EQ(trace_get32(file + bat + 12 + 32), 5);
		CHECK(!memcmp(sub, want, sizeof(want)));
	}
	m = malloc(len);
	REQUIRE(m);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rec_list l = {0};
		char err[256] = "";
		uint8_t *sub = m + bat + 12 + 32 + 8 + cases[i].at;

		memcpy(m, file, len);
		memcpy(sub, cases[i].v, cases[i].n);
		CHECK(tt_read_all(m, len, collect, &l, err, sizeof(err)) != 0);
		if (!strstr(err, cases[i].msg)) {
			printf("case %zu: got \"%s\"\n", i, err);
			CHECK(0);
		}
		/* NOTE before, the records before the damage, NOTE after */
		CHECK(l.n >= 2);
		CHECK(l.n && l.it[l.n - 1].hdr.type == GDAK_TREC_NOTE);
		list_free(&l);
	}
	free(m);
	free(file);
	unlink(path);
	free(path);
}

int main(void)
{
	char *p1 = tt_tmpname("plain"), *p2 = tt_tmpname("batched"), *p3 = tt_tmpname("inline");
	struct rec_list plain = {0}, batched = {0}, inl = {0};
	size_t l1, l2;

	REQUIRE(p1 && p2 && p3);
	unsetenv("GDAK_TRACE_WRITER");
	unsetenv("GDAK_TRACE_FULL");
	setenv("GDAK_TRACE_CLOCK", "fake", 1);
	write_file(p1, 0, 0, stream, 1);
	write_file(p2, 1, 0, stream, 1);
	write_file(p3, 1, 1, stream, 1);	/* no I/O thread */
	read_file(p1, &plain);
	read_file(p2, &batched);
	read_file(p3, &inl);
	CHECK_EQ(plain.n, (size_t)(NREC + NREC / 4));
	CHECK_EQ(plain.batches, 0);
	CHECK(batched.batches > plain.n / 3);	/* most went into batches */
	/* both kinds: references carried from batch to batch, and reset where
	 * a buffer (128 KiB here) starts */
	CHECK(batched.cont > 100);
	CHECK(batched.fresh >= 2);
	CHECK(inl.cont > 100);
	printf("batches: %u going on from the previous one, %u starting afresh\n", batched.cont,
	       batched.fresh);
	/* one fake-clock tick per batch, not per record */
	CHECK(batched.ts_changes < plain.ts_changes * 2 / 3);
	compare(&plain, &batched);
	compare(&plain, &inl);
	free(tt_slurp(p1, &l1));
	free(tt_slurp(p2, &l2));
	CHECK(l2 < l1 * 3 / 4);	/* this stream is a third random bytes */
	printf("%zu records: %zu bytes one by one, %zu batched (%zu in batches)\n", plain.n, l1,
	       l2, batched.batches);
	list_free(&plain);
	list_free(&batched);
	list_free(&inl);
	test_progressions();
	test_long_run();
	test_damage();
	unlink(p1);
	unlink(p2);
	unlink(p3);
	free(p1);
	free(p2);
	free(p3);
	return gdak_test_end();
}
