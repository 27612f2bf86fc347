/* SPDX-License-Identifier: MIT */
/*
 * trace_bench.c - what a trace record costs the NIC thread: records/s and
 * ns per record for WQE (1 WQEBB) + CQE pairs written to a file, and the
 * cost with tracing off (a NULL buffer: the caller's one branch).
 *
 * Prints the numbers; asserts only that every record reached the file (a
 * timing assertion would fail on a loaded 2-core CI machine).
 * GDAK_TRACE_BENCH_N sets the number of WQE+CQE pairs (default 100000).
 */
#include "gdak_test.h"
#include "trace_util.h"

static volatile uint64_t sink;

int main(void)
{
	const char *e = getenv("GDAK_TRACE_BENCH_N");
	long n = e ? atol(e) : 100000;
	char *path = tt_tmpname("bench");
	struct gdak_trace *t;
	struct gdak_trace_buf *b, *off = NULL;
	struct gdak_trace_stats st = {0};
	uint8_t w[64], c[64];
	uint64_t t0, t1, t2, t3;

	REQUIRE(path && n > 0);
	gdak_test_fill(w, sizeof(w), 1);
	gdak_test_fill(c, sizeof(c), 2);
	REQUIRE_EQ(gdak_trace_open(path, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);

	t0 = gdak_test_now_ns();
	for (long i = 0; i < n; i++) {
		gdak_trace_wqe(b, 0x100, (uint16_t)i, w, 1);
		gdak_trace_cqe(b, 0x100, 0x80, (uint32_t)i, c);
	}
	t1 = gdak_test_now_ns();
	gdak_trace_close(t);
	t2 = gdak_test_now_ns();

	/* tracing off: the same calls with a NULL buffer return at once */
	for (long i = 0; i < n; i++) {
		gdak_trace_wqe(off, 0x100, (uint16_t)i, w, 1);
		gdak_trace_cqe(off, 0x100, 0x80, (uint32_t)i, c);
		sink += (uint64_t)i;
	}
	t3 = gdak_test_now_ns();

	{
		size_t len;
		uint8_t *file = tt_slurp(path, &len);
		struct gdak_trace_reader *r;
		struct gdak_trace_item it;
		size_t off_b = 0, used;
		long recs = 0;

		REQUIRE(file);
		REQUIRE_EQ(gdak_trace_reader_new(&r), 0);
		while (gdak_trace_reader_next(r, file + off_b, len - off_b, off_b, &it, &used) == 1) {
			if (it.kind == GDAK_TITEM_RECORD && it.hdr.type == GDAK_TREC_STATS) {
				st.records = it.u.stats.records;
				st.lost = it.u.stats.lost;
				st.flushes = it.u.stats.flushes;
				st.bytes = it.u.stats.bytes;
			} else if (it.kind == GDAK_TITEM_RECORD) {
				recs++;
			}
			off_b += used;
		}
		CHECK_EQ(off_b, len);
		CHECK_EQ(recs, 2 * n);
		CHECK_EQ(st.records, (uint64_t)(2 * n));
		CHECK_EQ(st.lost, 0);
		gdak_trace_reader_free(r);
		free(file);
	}
	printf("trace on : %ld records in %.1f ms = %.2f M records/s, %.1f ns/record "
	       "(%.1f MB/s into the buffer, %llu flushes)\n",
	       2 * n, (double)(t1 - t0) / 1e6, 2.0 * (double)n * 1e3 / (double)(t1 - t0),
	       (double)(t1 - t0) / (2.0 * (double)n), (double)st.bytes * 1e3 / (double)(t1 - t0),
	       (unsigned long long)st.flushes);
	printf("close    : %.1f ms (final flush + statistics)\n", (double)(t2 - t1) / 1e6);
	printf("trace off: %.2f ns/record (NULL buffer)\n", (double)(t3 - t2) / (2.0 * (double)n));
	unlink(path);
	free(path);
	return gdak_test_end();
}
