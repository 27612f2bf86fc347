/* SPDX-License-Identifier: MIT */
/*
 * capture_util.h - reading a ring capture back for the capture tests
 * (emu_tests/capture_*.c): every record of the file, through the trace
 * reader, into an array; loss counts from the loss records; gdak-trace run
 * on the file (trace_emu.c uses that too).
 */
#ifndef GDAK_CAPTURE_TEST_UTIL_H
#define GDAK_CAPTURE_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdak/capture.h>
#include <gdak/trace_format.h>

#include "gdak_test.h"

struct cr_rec {
	uint8_t type;
	uint32_t qpn;
	uint32_t thread;
	uint16_t idx;		/* WQE: wqe_index; DOORBELL: dbrec_pi; FAULT/VIOLATION */
	uint32_t len;		/* WQE bytes */
	uint8_t bytes[16 * 64] __attribute__((aligned(16))); /* decoded in place */
	uint32_t cqn, cq_index;	/* CQE */
	uint64_t lost;		/* LOST: records */
	char name[64];		/* FAULT/VIOLATION name, QP transport */
	char text[256];		/* FAULT/VIOLATION/NOTE/QP text */
};

struct cr_file {
	struct cr_rec *r;
	size_t n;
	int clean;		/* read to its end, closing STATS present */
};

static inline void cr_str(char *dst, size_t cap, const struct gdak_trace_str *s)
{
	size_t n = s->len < cap - 1 ? s->len : cap - 1;

	memcpy(dst, s->s, n);
	dst[n] = '\0';
}

/* 0, or -1 when the file cannot be read at all. */
static inline int cr_read(const char *path, struct cr_file *f)
{
	struct gdak_trace_reader *rd;
	struct gdak_trace_item it;
	uint8_t *buf;
	size_t len, off = 0, used;
	int stats = 0, rc;

	memset(f, 0, sizeof(*f));
	buf = gdak_test_slurp(path, &len);
	if (!buf || gdak_trace_reader_new(&rd)) {
		free(buf);
		return -1;
	}
	f->r = calloc(len / 32 + 1, sizeof(*f->r));
	while (f->r && (rc = gdak_trace_reader_next(rd, buf + off, len - off, off, &it, &used)) == 1) {
		off += used;
		if (it.kind != GDAK_TITEM_RECORD)
			continue;
		struct cr_rec *r = &f->r[f->n++];
		r->type = it.hdr.type;
		r->qpn = it.hdr.qpn;
		r->thread = it.hdr.thread_id;
		switch (it.hdr.type) {
		case GDAK_TREC_WQE:
			r->idx = it.u.wqe.wqe_index;
			r->len = it.u.wqe.len < sizeof(r->bytes) ? it.u.wqe.len : sizeof(r->bytes);
			memcpy(r->bytes, it.u.wqe.bytes, r->len);
			break;
		case GDAK_TREC_DOORBELL:
			r->idx = it.u.db.dbrec_pi;
			break;
		case GDAK_TREC_CQE:
			r->cqn = it.u.cqe.cqn;
			r->cq_index = it.u.cqe.cq_index;
			memcpy(r->bytes, it.u.cqe.cqe, 64);
			r->len = 64;
			break;
		case GDAK_TREC_FAULT:
		case GDAK_TREC_VIOLATION:
			r->idx = it.u.viol.wqe_index;
			cr_str(r->name, sizeof(r->name), &it.u.viol.name);
			cr_str(r->text, sizeof(r->text), &it.u.viol.text);
			break;
		case GDAK_TREC_NOTE:
			cr_str(r->text, sizeof(r->text), &it.u.note.text);
			break;
		case GDAK_TREC_QP:
			cr_str(r->name, sizeof(r->name), &it.u.qp.transport);
			cr_str(r->text, sizeof(r->text), &it.u.qp.text);
			break;
		case GDAK_TREC_LOST:
			r->lost = it.u.lost.records;
			break;
		case GDAK_TREC_STATS:
			stats = 1;
			break;
		}
	}
	f->clean = f->r && rc == 0 && off == len && stats;
	gdak_trace_reader_free(rd);
	free(buf);
	return f->r ? 0 : -1;
}

static inline void cr_free(struct cr_file *f)
{
	free(f->r);
	memset(f, 0, sizeof(*f));
}

/* The file of a closed capture: read to its end, the closing STATS there. */
static inline void cr_read_back(const char *path, struct cr_file *f)
{
	REQUIRE_EQ(cr_read(path, f), 0);
	CHECK(f->clean);
}

/* What a case works on: its capture file, the capture, the file read back. */
struct cr_run {
	char *path;
	struct gdak_capture *c;
	struct cr_file f;
};

/* The case's capture closed (the last pass sees the rest), its file read
 * back. */
static inline void cr_run_read(struct cr_run *x)
{
	REQUIRE_EQ(gdak_capture_close(x->c), 0);
	cr_read_back(x->path, &x->f);
}

/* A case's end: f (may be NULL) freed; the file removed, or kept for a look
 * when the case failed. */
static inline void cr_done(char *path, struct cr_file *f, int failed)
{
	if (f)
		cr_free(f);
	if (!path)
		return;
	if (failed)
		printf("   (trace kept: %s)\n", path);
	else
		unlink(path);
	free(path);
}

/* How many records of a type the file holds, all QPs. */
static inline unsigned cr_count(const struct cr_file *f, uint8_t type)
{
	unsigned n = 0;

	for (size_t i = 0; i < f->n; i++)
		n += f->r[i].type == type;
	return n;
}

/*
 * Entries of `ring` ("sq", "scq", "rcq") of qpn the loss records report:
 * the "<ring> lost=N" text of a FAULT capture_lost record, or of the NOTE
 * next to a LOST record.  *lost_recs (may be NULL) gets the sum of the LOST
 * records' counts of that QP, all rings together.
 */
static inline uint64_t cr_lost(const struct cr_file *f, uint32_t qpn, const char *ring,
			       uint64_t *lost_recs)
{
	uint64_t sum = 0, recs = 0;
	size_t rl = strlen(ring);

	for (size_t i = 0; i < f->n; i++) {
		const struct cr_rec *r = &f->r[i];
		const char *t = r->text;

		if (r->type == GDAK_TREC_LOST && r->qpn == qpn)
			recs += r->lost;
		if (!((r->type == GDAK_TREC_FAULT && !strcmp(r->name, "capture_lost") &&
		       r->qpn == qpn) ||
		      r->type == GDAK_TREC_NOTE))
			continue;
		if (r->type == GDAK_TREC_NOTE && (i == 0 || f->r[i - 1].type != GDAK_TREC_LOST ||
						  f->r[i - 1].qpn != qpn))
			continue;
		if (!strncmp(t, ring, rl) && !strncmp(t + rl, " lost=", 6))
			sum += strtoull(t + rl + 6, NULL, 10);
	}
	if (lost_recs)
		*lost_recs = recs;
	return sum;
}

/* Index of the next record at or after *from of type (and qpn unless
 * GDAK_TRACE_QPN_NONE); -1 when none.  *from moves past it. */
static inline long cr_next(const struct cr_file *f, size_t *from, uint8_t type, uint32_t qpn)
{
	for (size_t i = *from; i < f->n; i++)
		if (f->r[i].type == type && (qpn == GDAK_TRACE_QPN_NONE || f->r[i].qpn == qpn)) {
			*from = i + 1;
			return (long)i;
		}
	*from = f->n;
	return -1;
}

/* Run `bin args path`; its stdout (malloc'ed) and exit status. */
static inline char *cr_tool(const char *bin, const char *args, const char *path, int *rc)
{
	char cmd[2048], buf[4096], *o = NULL;
	size_t n = 0, r;
	FILE *p, *m;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s '%s'", bin, args, path);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	m = open_memstream(&o, &n);
	while ((r = fread(buf, 1, sizeof(buf), p)) > 0)
		fwrite(buf, 1, r, m);
	fclose(m);
	st = pclose(p);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return o;
}

/* A fresh temporary file name; free() it. */
static inline char *cr_tmpname(const char *tag) { return gdak_test_tmpname("capture", tag); }

#endif
