/* SPDX-License-Identifier: MIT */
/*
 * fuzz_trace.c - the trace reader (core/trace/trace_read.c) and gdak-trace's
 * decoder, filter and summary (tools/trace_*.c) on arbitrary bytes.
 *
 * The input is a would-be pcapng file.  It is read twice, the way gdak-trace
 * reads: once whole, and once through a window that grows a few bytes at a
 * time (--follow), so blocks cut at every position are seen.  Every item is
 * printed as text and as JSON (to /dev/null), filtered and summarised.
 *
 * Invariants: no crash and no read outside the input (the sanitizers); the
 * reader always makes progress or stops; whatever an item points at lies
 * inside the bytes given; an error always comes with a message; both ways of
 * reading see the same items.
 */
#include <errno.h>
#include <string.h>

#include <gdak/gdak.h>

#include "fuzz.h"
#include "trace_tool.h"

static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the engine warns about every bad packet: keep the fuzzer's output readable */
	if (!getenv("GDAK_LOG"))
		gdak_set_log_level(GDAK_LOG_ERROR);
	sink = fopen("/dev/null", "w");
	return 0;
}

void fuzz_fini(void)
{
	if (sink)
		fclose(sink);
	sink = NULL;
}

static void within(const uint8_t *b, size_t n, const void *p, size_t len, const char *what)
{
	const uint8_t *q = p;

	if (!len)
		return;
	FUZZ_ASSERT(q && q >= b && q <= b + n && len <= (size_t)(b + n - q),
		    "%s [%p, +%zu) outside the buffer [%p, +%zu)", what, p, len, (const void *)b, n);
}

static void check_item(const uint8_t *b, size_t n, const struct gdak_trace_item *it)
{
	if (it->kind == GDAK_TITEM_RECORD) {
		within(b, n, it->body, it->hdr.body_len, "record body");
		switch (it->hdr.type) {
		case GDAK_TREC_DOORBELL:
			within(b, n, it->u.db.reg, it->u.db.reg_len, "doorbell register bytes");
			break;
		case GDAK_TREC_WQE:
		case GDAK_TREC_RECV_WQE:
			within(b, n, it->u.wqe.bytes, it->u.wqe.len, "WQE bytes");
			break;
		case GDAK_TREC_CQE:
			within(b, n, it->u.cqe.cqe, 64, "CQE");
			break;
		case GDAK_TREC_VIOLATION:
		case GDAK_TREC_FAULT:
			within(b, n, it->u.viol.name.s, it->u.viol.name.len, "rule name");
			within(b, n, it->u.viol.text.s, it->u.viol.text.len, "text");
			break;
		case GDAK_TREC_QP:
			within(b, n, it->u.qp.transport.s, it->u.qp.transport.len, "transport");
			within(b, n, it->u.qp.text.s, it->u.qp.text.len, "text");
			break;
		case GDAK_TREC_NOTE:
			within(b, n, it->u.note.text.s, it->u.note.text.len, "note");
			break;
		default:
			break;
		}
	} else if (it->kind == GDAK_TITEM_PACKET) {
		within(b, n, it->pkt.frame, it->pkt.caplen, "packet frame");
	}
}

/* One pass over b[0..n) in windows of `step` more bytes each time (0: all at
 * once).  Returns a checksum of what was seen, to compare the passes. */
static uint64_t read_pass(const uint8_t *b, size_t n, size_t step, struct trace_summary *sum)
{
	struct gdak_trace_reader *r;
	struct trace_out txt = {.f = sink, .json = 0}, js = {.f = sink, .json = 1};
	struct trace_filter flt;
	size_t off = 0, avail = step ? 0 : n;
	uint64_t seen = 0;
	unsigned guard = 0;

	trace_filter_init(&flt);
	flt.errors_only = 1;
	FUZZ_ASSERT(!gdak_trace_reader_new(&r), "reader_new");
	for (;;) {
		struct gdak_trace_item it;
		size_t used = 0;
		int rc;

		rc = gdak_trace_reader_next(r, b + off, avail - off, off, &it, &used);
		FUZZ_ASSERT(++guard < 10u * (unsigned)n + 100, "reader does not progress at %zu", off);
		FUZZ_ASSERT(used <= avail - off, "consumed %zu of %zu", used, avail - off);
		if (rc == 1) {
			/* a record unpacked from a BATCH: the block is consumed with
			 * its last record, and the body lives in the reader */
			int packed = it.batch_count != 0;

			FUZZ_ASSERT(packed ? (used == 0 || used == it.block_len)
					   : (used >= 12 && used == it.block_len),
				    "item of %zu bytes, block length %u", used, it.block_len);
			if (packed)
				check_item(it.body, it.hdr.body_len, &it);
			else
				check_item(b + off, avail - off, &it);
			trace_print_item(&txt, &it);
			trace_print_item(&js, &it);
			(void)trace_item_is_error(&it);
			(void)trace_item_qpn(&it);
			(void)trace_filter_match(&flt, &it);
			if (it.kind == GDAK_TITEM_RECORD && (it.hdr.type == GDAK_TREC_WQE ||
							     it.hdr.type == GDAK_TREC_RECV_WQE))
				(void)trace_wqe_data_len(&it);
			if (sum)
				trace_summary_add(sum, &it);
			seen = seen * 31 + (uint64_t)off * 7 + it.kind;
			off += used;
			continue;
		}
		if (rc < 0) {
			const char *e = gdak_trace_reader_error(r);
			FUZZ_ASSERT(rc == -EINVAL || rc == -EBADMSG, "reader returned %d", rc);
			FUZZ_ASSERT(e && *e, "error %d without a message", rc);
			seen = seen * 31 + (uint64_t)off * 7 + 100 + (unsigned)-rc;
			if (rc == -EBADMSG && used) {
				off += used;
				continue;
			}
			break;
		}
		/* rc == 0: no complete block in the window */
		FUZZ_ASSERT(!used, "consumed %zu bytes without an item", used);
		if (avail == n)
			break;
		avail = avail + step > n ? n : avail + step;
	}
	gdak_trace_reader_free(r);
	return seen;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_summary *sum = trace_summary_new(size & 1);
	struct trace_out o = {.f = sink, .json = (int)(size & 1)};
	uint64_t whole, window;

	if (!sink)
		LLVMFuzzerInitialize(NULL, NULL);
	whole = read_pass(data, size, 0, sum);
	window = read_pass(data, size, 1 + size % 61, NULL);
	FUZZ_ASSERT(whole == window, "whole-file and windowed reads disagree (%llx vs %llx)",
		    (unsigned long long)whole, (unsigned long long)window);
	trace_summary_print(sum, &o);
	trace_summary_free(sum);
	return 0;
}
