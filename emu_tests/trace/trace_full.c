/* SPDX-License-Identifier: MIT */
/*
 * trace_full.c - a file slower than the records (the I/O thread paused by
 * a test hook, so no timing is involved): by default the recording thread
 * waits for a free buffer - counted, nothing lost; in the lossy mode
 * (opts.lossy, GDAK_TRACE_FULL=drop) it drops the full buffer instead -
 * counted, written as a LOST record, visible as a gap in the sequence
 * numbers, and in the closing STATS.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "gdak_case.h"
#include "gdak_test.h"
#include "trace_int.h"
#include "trace_util.h"

enum { N = 12000 };	/* ~70-byte NOTE records: several 128 KiB buffers */

struct tally {
	uint64_t notes;		/* NOTE and WQE records */
	uint64_t lost_recs, lost_blocks, next_seq, gaps, bad_order;
	struct gdak_trace_stats_body stats;
	int have_stats;
};

static void tally_fn(const struct gdak_trace_item *it, void *arg)
{
	struct tally *t = arg;

	if (it->kind != GDAK_TITEM_RECORD)
		return;
	switch (it->hdr.type) {
	case GDAK_TREC_NOTE:
	case GDAK_TREC_WQE:
		if (it->hdr.seq < t->next_seq)
			t->bad_order++;
		t->gaps += it->hdr.seq - t->next_seq;
		t->next_seq = it->hdr.seq + 1;
		t->notes++;
		break;
	case GDAK_TREC_LOST:
		t->lost_recs += it->u.lost.records;
		t->lost_blocks++;
		break;
	case GDAK_TREC_STATS:
		t->stats = it->u.stats;
		t->have_stats = 1;
		break;
	}
}

static void read_tally(const char *path, struct tally *t)
{
	size_t len;
	uint8_t *file = tt_slurp(path, &len);

	REQUIRE(file);
	memset(t, 0, sizeof(*t));
	CHECK_EQ(tt_read_all(file, len, tally_fn, t, NULL, 0), 0);
	CHECK(t->have_stats);
	free(file);
}

static void *notes(void *p)
{
	struct gdak_trace_buf *b = p;

	for (int i = 0; i < N; i++)
		gdak_trace_note(b, "a record of about seventy bytes, more than fit in two buffers");
	return NULL;
}

/* Default: the thread waits for the file, nothing is lost. */
static void test_wait(void)
{
	struct gdak_trace_opts o = {.buf_size = 128 * 1024, .chunks = 2};
	char *path = tt_tmpname("wait");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct gdak_trace_stats st = {0};
	struct tally ty;
	pthread_t th;
	int polls = 0;

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	gdak_trace_inject_io_pause(t, 1);
	REQUIRE_EQ(pthread_create(&th, NULL, notes, b), 0);
	/* both buffers queued and not written: the thread must wait (bounded
	 * poll: a thread that never waits would mean records dropped) */
	while (st.waits == 0 && polls++ < 60000) {
		usleep(1000);
		gdak_trace_get_stats(t, &st);
	}
	CHECK_EQ(st.waits, 1);
	CHECK_EQ(st.lost, 0);
	gdak_trace_inject_io_pause(t, 0);
	pthread_join(th, NULL);
	gdak_trace_get_stats(t, &st);
	CHECK(st.waits >= 1);
	CHECK_EQ(st.dropped, 0);
	gdak_trace_close(t);

	read_tally(path, &ty);
	CHECK_EQ(ty.notes, N);
	CHECK_EQ(ty.gaps, 0);
	CHECK_EQ(ty.bad_order, 0);
	CHECK_EQ(ty.lost_blocks, 0);
	CHECK_EQ(ty.stats.lost, 0);
	CHECK(ty.stats.waits >= 1);
	CHECK_EQ(ty.stats.dropped, 0);
	unlink(path);
	free(path);
}

/* Lossy: the full buffer is dropped - counted, recorded, never silent. */
static void test_drop(int by_env)
{
	struct gdak_trace_opts o = {.buf_size = 128 * 1024, .chunks = 2, .lossy = !by_env};
	char *path = tt_tmpname("drop");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct gdak_trace_stats st;
	struct tally ty;

	REQUIRE(path);
	if (by_env)
		setenv("GDAK_TRACE_FULL", "drop", 1);
	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	unsetenv("GDAK_TRACE_FULL");
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	gdak_trace_inject_io_pause(t, 1);
	notes(b);	/* never blocks */
	gdak_trace_get_stats(t, &st);
	CHECK(st.dropped > 0);
	CHECK_EQ(st.lost, st.dropped);
	CHECK_EQ(st.waits, 0);
	gdak_trace_inject_io_pause(t, 0);
	gdak_trace_close(t);

	read_tally(path, &ty);
	CHECK(ty.notes < N);
	CHECK_EQ(ty.notes + st.dropped, N);
	CHECK_EQ(ty.gaps, st.dropped);		/* the sequence numbers show where */
	CHECK_EQ(ty.lost_recs, st.dropped);	/* and LOST records say how many */
	CHECK(ty.lost_blocks >= 1);
	CHECK_EQ(ty.stats.lost, st.dropped);
	CHECK_EQ(ty.stats.dropped, st.dropped);
	CHECK_EQ(ty.stats.waits, 0);
	unlink(path);
	free(path);
}

/* Lossy with batches whose WQEs are coded against the previous batch's: a
 * dropped buffer never leaves a later batch undecodable (the first batch of
 * every buffer starts afresh). */
static void test_drop_batched(void)
{
	struct gdak_trace_opts o = {.buf_size = 128 * 1024, .chunks = 2, .lossy = 1};
	char *path = tt_tmpname("dropb");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct gdak_trace_stats st;
	struct tally ty;
	uint8_t w[64];
	enum { NB = 20000, PER = 8 };

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	gdak_test_fill(w, sizeof(w), 3);
	gdak_trace_inject_io_pause(t, 1);
	for (int i = 0; i < NB; i++) {
		gdak_trace_batch_begin(b);
		for (int k = 0; k < PER; k++) {
			w[2] = (uint8_t)(i * PER + k);
			w[20] = (uint8_t)k;	/* something else changes too */
			gdak_trace_wqe(b, 0x100, (uint16_t)(i * PER + k), w, 1);
		}
		gdak_trace_batch_end(b);
	}
	gdak_trace_get_stats(t, &st);
	CHECK(st.dropped > 0);
	gdak_trace_inject_io_pause(t, 0);
	gdak_trace_close(t);

	read_tally(path, &ty);	/* no reader errors: every batch left decodes */
	CHECK_EQ(ty.notes + st.dropped, (uint64_t)NB * PER);
	CHECK_EQ(ty.gaps, st.dropped);
	CHECK_EQ(ty.lost_recs, st.dropped);
	CHECK_EQ(ty.stats.dropped, st.dropped);
	unlink(path);
	free(path);
}

/* A child forked with the trace open has no I/O thread: it writes inline
 * instead of waiting for one forever. */
static void test_fork(void)
{
	struct gdak_trace_opts o = {.buf_size = 128 * 1024, .chunks = 2};
	char *path = tt_tmpname("fork");
	struct gdak_trace *t;
	int status = 0;
	pid_t pid;

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct gdak_trace_buf *b = gdak_trace_thread_buf(t, 1);

		if (b)
			notes(b);	/* several times both buffers */
		gdak_trace_close(t);
		free(path);	/* valgrind checks the child's leaks too */
		_exit(b ? 0 : 3);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gdak_trace_close(t);
	unlink(path);
	free(path);
}

/* A failed flush loses the batch that an open batch is coded against: the
 * open one cannot be decoded either - it is counted lost too (LOST, STATS,
 * a gap), never written as a batch that refers to nothing; the next batch
 * starts afresh and decodes. */
static void test_flush_fails_under_open_batch(void)
{
	struct gdak_trace_opts o = {.buf_size = 128 * 1024, .chunks = 2};
	char *path = tt_tmpname("stale");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct gdak_trace_stats st;
	struct tally ty;
	uint8_t w[64];

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	gdak_test_fill(w, sizeof(w), 4);
	/* P: committed, not written yet */
	gdak_trace_batch_begin(b);
	gdak_trace_wqe(b, 0x100, 0, w, 1);
	gdak_trace_wqe(b, 0x100, 1, w, 1);
	gdak_trace_batch_end(b);
	/* B opens coded against P ... */
	gdak_trace_batch_begin(b);
	gdak_trace_wqe(b, 0x100, 2, w, 1);
	/* ... and P's write fails (a flush from any thread) */
	gdak_trace_inject_write_errors(t, 1);
	CHECK(gdak_trace_flush(t) < 0);
	gdak_trace_wqe(b, 0x100, 3, w, 1);
	gdak_trace_wqe(b, 0x100, 4, w, 1);
	gdak_trace_batch_end(b);
	/* C: afresh, written */
	gdak_trace_batch_begin(b);
	gdak_trace_wqe(b, 0x100, 5, w, 1);
	gdak_trace_batch_end(b);
	gdak_trace_get_stats(t, &st);
	CHECK_EQ(st.lost, 2 + 3);	/* P's two records and B's three */
	gdak_trace_close(t);

	read_tally(path, &ty);	/* no reader error: no batch refers to a lost one */
	CHECK_EQ(ty.notes, 1);	/* C */
	CHECK_EQ(ty.gaps, 5);
	CHECK_EQ(ty.lost_recs, 5);
	CHECK_EQ(ty.stats.lost, 5);
	unlink(path);
	free(path);
}

static const struct gdak_case cases[] = { GDAK_CASE(test_drop_batched),
					  GDAK_CASE(test_flush_fails_under_open_batch),
					  GDAK_CASE(test_fork) };

int main(int argc, char **argv)
{
	unsetenv("GDAK_TRACE_WRITER");
	unsetenv("GDAK_TRACE_FULL");
	test_wait();
	test_drop(0);
	test_drop(1);
	return GDAK_TEST_CASES(argc, argv, cases);
}
