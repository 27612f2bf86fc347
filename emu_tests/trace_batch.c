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

struct thr {
	struct gdak_trace *t;
	int batched;
};

static void *second(void *p)
{
	struct thr *a = p;
	struct gdak_trace_buf *b = gdak_trace_thread_buf(a->t, 7);

	if (b)
		stream(b, a->batched, 99, NREC / 4);
	return NULL;
}

static void write_file(const char *path, int batched, unsigned chunks)
{
	struct gdak_trace_opts o = {.buf_size = 128 * 1024, .chunks = chunks};
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct thr a;
	pthread_t th;

	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	a = (struct thr){.t = t, .batched = batched};
	REQUIRE_EQ(pthread_create(&th, NULL, second, &a), 0);
	stream(b, batched, 1, NREC);
	pthread_join(th, NULL);
	gdak_trace_close(t);
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

int main(void)
{
	char *p1 = tt_tmpname("plain"), *p2 = tt_tmpname("batched"), *p3 = tt_tmpname("inline");
	struct rec_list plain = {0}, batched = {0}, inl = {0};
	size_t l1, l2;

	REQUIRE(p1 && p2 && p3);
	unsetenv("GDAK_TRACE_WRITER");
	unsetenv("GDAK_TRACE_FULL");
	setenv("GDAK_TRACE_CLOCK", "fake", 1);
	write_file(p1, 0, 0);
	write_file(p2, 1, 0);
	write_file(p3, 1, 1);	/* no I/O thread */
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
	unlink(p1);
	unlink(p2);
	unlink(p3);
	free(p1);
	free(p2);
	free(p3);
	return gdak_test_end();
}
