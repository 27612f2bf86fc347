/* SPDX-License-Identifier: MIT */
/*
 * trace_read.c - the pcapng trace reader (format: gdak/trace_format.h).
 *
 * The file is untrusted input (it may be truncated by a crash, cut by a full
 * disk, or fuzzed): every length is checked against the bytes that exist
 * before anything is read, and every error names the byte offset.  A bad
 * block length makes the rest of the file unreadable (-EINVAL); a well
 * framed block with a bad body is reported and skipped (-EBADMSG).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/mlx5.h>
#include "trace_int.h"

#define MAX_IFS 256
#define MAX_BLOCK (16u << 20) /* larger than anything a writer makes; a sanity bound */

struct iface {
	uint16_t linktype;
	uint8_t tsresol;	/* pcapng if_tsresol byte; 6 (microseconds) by default */
};

/* A thread's delta-coding references as its last BATCH left them: the
 * next one may go on from them (GDAK_TRACE_BATCH_CONT). */
struct thread_refs {
	uint32_t thread;
	int valid;		/* the batch ending at last_seq was decoded whole */
	uint64_t last_seq;
	uint32_t wref_bbs, wref_qpn;
	uint16_t wref_idx;
	int cref_valid;
	uint32_t cref_cqn, cref_idx;
	uint8_t wref[GDAK_TRACE_MAX_WQEBB * 64];
	uint8_t cref[64];
	uint16_t wref_fl;
	/* REPEAT: the WQE and CQE progressions - base and step, lane by lane */
	int wbase_ok, wstep_ok, cbase_ok, cstep_ok;
	uint16_t wbase_idx, wstep_idx;
	uint32_t wbase_qpn, cbase_cqn, cbase_idx, cstep_idx;
	uint64_t wbase[8], wstep[8], cbase[8], cstep[8];
};
#define MAX_THREAD_REFS 256	/* more threads than that: the oldest are forgotten */

/* A BATCH block being handed out one record at a time (positions are
 * relative to the block start in the caller's buffer). */
struct batch_state {
	int active;
	uint64_t off;		/* file offset of the block */
	uint32_t btype, blen;
	uint32_t end;		/* end of the body */
	uint32_t pos;		/* next sub-record */
	uint32_t count, index;
	struct gdak_trace_rec_hdr hdr;
	uint32_t qpn;		/* of the previous sub-record */
	uint32_t rep_left;	/* records of a REPEAT sub-record not handed out yet */
	uint8_t rep_type;
	struct thread_refs *tr;	/* the batch's thread's references, updated as it goes */
	uint8_t body[8 + GDAK_TRACE_MAX_WQEBB * 64]; /* the standalone body it stands for */
};

struct gdak_trace_reader {
	int have_shb;
	int swap;		/* section written big-endian */
	unsigned n_if;
	struct iface ifs[MAX_IFS];
	char err[256];
	struct batch_state bt;
	struct thread_refs *refs;
	unsigned n_refs, next_evict;
};

int gdak_trace_reader_new(struct gdak_trace_reader **r)
{
	if (!r)
		return -EINVAL;
	*r = calloc(1, sizeof(**r));
	return *r ? 0 : -ENOMEM;
}

void gdak_trace_reader_free(struct gdak_trace_reader *r)
{
	if (r)
		free(r->refs);
	free(r);
}

const char *gdak_trace_reader_error(const struct gdak_trace_reader *r)
{
	return r && r->err[0] ? r->err : "no error";
}

__attribute__((format(printf, 4, 5))) static int fail(struct gdak_trace_reader *r, int rc,
						      uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->err, sizeof(r->err), "offset %llu: ", (unsigned long long)off);

	if (n < 0 || (size_t)n >= sizeof(r->err))
		return rc;
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return rc;
}

/* Section-order loads (block framing); gdak record fields are always LE. */
static uint16_t s16(const struct gdak_trace_reader *r, const uint8_t *p)
{
	uint16_t v = trace_get16(p);
	return r->swap ? gdak_bswap16(v) : v;
}
static uint32_t s32(const struct gdak_trace_reader *r, const uint8_t *p)
{
	uint32_t v = trace_get32(p);
	return r->swap ? gdak_bswap32(v) : v;
}

static uint64_t pow10u(unsigned e)
{
	uint64_t v = 1;
	while (e--)
		v *= 10;
	return v;
}

/* Timestamp units of an interface to nanoseconds (pcapng if_tsresol). */
static uint64_t ts_to_ns(uint64_t ts, uint8_t res)
{
	unsigned v = res & 0x7f;

	if (res & 0x80) {	/* 2^-v seconds */
		if (v > 63)
			return 0;
		return (uint64_t)(((unsigned __int128)ts * 1000000000u) >> v);
	}
	if (v <= 9)
		return ts * pow10u(9 - v);
	if (v - 9 > 19)
		return 0;
	return ts / pow10u(v - 9);
}

/* Walk options at p[0..n): calls back for each; -1 if they overrun. */
typedef void (*opt_fn)(const struct gdak_trace_reader *r, uint16_t code, const uint8_t *v,
		       uint16_t len, void *arg);
static int walk_opts(const struct gdak_trace_reader *r, const uint8_t *p, size_t n, opt_fn fn,
		     void *arg)
{
	size_t i = 0;

	while (i + 4 <= n) {
		uint16_t code = s16(r, p + i), len = s16(r, p + i + 2);
		size_t room = ((size_t)len + 3) & ~(size_t)3;

		if (code == GDAK_PCAPNG_OPT_END)
			return 0;
		if (room > n - i - 4)
			return -1;
		fn(r, code, p + i + 4, len, arg);
		i += 4 + room;
	}
	return i == n ? 0 : -1; /* options may end without opt_endofopt */
}

static void idb_opt(const struct gdak_trace_reader *r, uint16_t code, const uint8_t *v,
		    uint16_t len, void *arg)
{
	struct iface *f = arg;

	if (code == GDAK_PCAPNG_IF_TSRESOL && len == 1)
		f->tsresol = v[0];
}

static void epb_opt(const struct gdak_trace_reader *r, uint16_t code, const uint8_t *v,
		    uint16_t len, void *arg)
{
	struct gdak_trace_item *it = arg;

	if (code == GDAK_PCAPNG_EPB_FLAGS && len == 4) {
		uint32_t fl = s32(r, v) & 3;
		it->pkt.dir = fl == GDAK_PCAPNG_EPB_INBOUND ? 1 : fl == GDAK_PCAPNG_EPB_OUTBOUND ? 0 : -1;
	} else if (code == GDAK_PCAPNG_OPT_CUSTOM_BIN && len == 8 &&
		   s32(r, v) == GDAK_TRACE_PEN) {
		it->pkt.thread_id = trace_get32(v + 4);
	}
}

static int parse_shb(struct gdak_trace_reader *r, const uint8_t *b, uint32_t blen, uint64_t off)
{
	if (blen < 28)
		return fail(r, -EINVAL, off, "Section Header Block of %u bytes is shorter than 28",
			    blen);
	if (s16(r, b + 12) != 1)
		return fail(r, -EINVAL, off, "pcapng major version %u is not 1", s16(r, b + 12));
	r->have_shb = 1;
	r->n_if = 0;	/* interfaces are per section */
	r->n_refs = 0;	/* and so are the threads a BATCH may go on from */
	return 0;
}

static int parse_idb(struct gdak_trace_reader *r, const uint8_t *b, uint32_t blen, uint64_t off)
{
	struct iface f = {.tsresol = 6};

	if (blen < 20)
		return fail(r, -EBADMSG, off, "Interface Description Block of %u bytes is shorter "
			    "than 20", blen);
	if (r->n_if >= MAX_IFS)
		return fail(r, -EBADMSG, off, "more than %d interfaces", MAX_IFS);
	f.linktype = s16(r, b + 8);
	/* register the interface even if its options are bad: packets refer to it */
	r->ifs[r->n_if++] = f;
	if (walk_opts(r, b + 16, blen - 20, idb_opt, &f))
		return fail(r, -EBADMSG, off, "interface %u: options overrun the block",
			    r->n_if - 1);
	r->ifs[r->n_if - 1] = f;
	return 0;
}

static int parse_epb(struct gdak_trace_reader *r, const uint8_t *b, uint32_t blen, uint64_t off,
		     struct gdak_trace_item *it)
{
	uint32_t ifid, cap, room;

	if (blen < 32)
		return fail(r, -EBADMSG, off, "Enhanced Packet Block of %u bytes is shorter than 32",
			    blen);
	ifid = s32(r, b + 8);
	if (ifid >= r->n_if)
		return fail(r, -EBADMSG, off, "packet on interface %u, but %u interfaces are "
			    "described", ifid, r->n_if);
	cap = s32(r, b + 20);
	if (cap > blen - 32)
		return fail(r, -EBADMSG, off, "captured length %u exceeds the block (%u bytes of "
			    "room)", cap, blen - 32);
	room = (cap + 3) & ~3u;
	if (room > blen - 32)
		room = blen - 32;
	it->pkt.if_id = ifid;
	it->pkt.ts_ns = ts_to_ns((uint64_t)s32(r, b + 12) << 32 | s32(r, b + 16),
				 r->ifs[ifid].tsresol);
	it->pkt.caplen = cap;
	it->pkt.origlen = s32(r, b + 24);
	it->pkt.frame = b + 28;
	it->pkt.dir = -1;
	it->pkt.thread_id = GDAK_TRACE_THREAD_WRITER;
	if (walk_opts(r, b + 28 + room, blen - 32 - room, epb_opt, it))
		return fail(r, -EBADMSG, off, "packet options overrun the block");
	it->kind = r->ifs[ifid].linktype == GDAK_PCAPNG_LINKTYPE_ETHERNET ? GDAK_TITEM_PACKET
									   : GDAK_TITEM_OTHER;
	return 0;
}

/* Two counted strings after an 8-byte fixed part. */
static int two_strs(const uint8_t *b, uint32_t n, uint16_t l1, uint16_t l2,
		    struct gdak_trace_str *s1, struct gdak_trace_str *s2)
{
	if ((uint32_t)l1 + l2 > n - 8)
		return -1;
	s1->s = (const char *)b + 8;
	s1->len = l1;
	s2->s = (const char *)b + 8 + l1;
	s2->len = l2;
	return 0;
}

static int parse_body(struct gdak_trace_reader *r, struct gdak_trace_item *it, uint64_t off)
{
	const uint8_t *b = it->body;
	uint32_t n = it->hdr.body_len;
	const char *what = gdak_trace_rec_name(it->hdr.type);
	static const uint32_t min_len[GDAK_TREC_MAX + 1] = {
		[GDAK_TREC_DOORBELL] = 8, [GDAK_TREC_WQE] = 8,	    [GDAK_TREC_CQE] = 72,
		[GDAK_TREC_VIOLATION] = 8, [GDAK_TREC_FAULT] = 8,   [GDAK_TREC_LOST] = 16,
		[GDAK_TREC_QP] = 8,	  [GDAK_TREC_RECV_WQE] = 8, [GDAK_TREC_NOTE] = 8,
		[GDAK_TREC_STATS] = 40,	  [GDAK_TREC_BATCH] = 8,
	};

	if (it->hdr.type > GDAK_TREC_MAX || !min_len[it->hdr.type])
		return 0; /* a record type from a newer writer: passed on raw */
	if (n < min_len[it->hdr.type])
		return fail(r, -EBADMSG, off, "%s record body of %u bytes is shorter than %u",
			    what, n, min_len[it->hdr.type]);
	switch (it->hdr.type) {
	case GDAK_TREC_DOORBELL:
		it->u.db.dbrec_pi = trace_get16(b);
		it->u.db.handler = b[2];
		it->u.db.reg_len = trace_get16(b + 4);
		it->u.db.reg = b + 8;
		if (it->u.db.reg_len > n - 8)
			return fail(r, -EBADMSG, off, "DOORBELL register length %u exceeds the body "
				    "(%u bytes)", it->u.db.reg_len, n - 8);
		break;
	case GDAK_TREC_WQE:
	case GDAK_TREC_RECV_WQE:
		it->u.wqe.wqe_index = trace_get16(b);
		it->u.wqe.flags = trace_get16(b + 2);
		it->u.wqe.len = trace_get32(b + 4);
		it->u.wqe.bytes = b + 8;
		if (it->u.wqe.len > n - 8)
			return fail(r, -EBADMSG, off, "%s length %u exceeds the body (%u bytes)", what,
				    it->u.wqe.len, n - 8);
		break;
	case GDAK_TREC_CQE:
		it->u.cqe.cqn = trace_get32(b);
		it->u.cqe.cq_index = trace_get32(b + 4);
		it->u.cqe.cqe = b + 8;
		break;
	case GDAK_TREC_VIOLATION:
	case GDAK_TREC_FAULT:
		it->u.viol.wqe_index = trace_get16(b);
		it->u.viol.syndrome = b[2];
		if (two_strs(b, n, trace_get16(b + 4), trace_get16(b + 6), &it->u.viol.name,
			     &it->u.viol.text))
			return fail(r, -EBADMSG, off, "%s strings (%u + %u bytes) exceed the body "
				    "(%u bytes)", what, trace_get16(b + 4), trace_get16(b + 6), n - 8);
		break;
	case GDAK_TREC_QP:
		it->u.qp.peer_qpn = trace_get32(b);
		if (two_strs(b, n, trace_get16(b + 4), trace_get16(b + 6), &it->u.qp.transport,
			     &it->u.qp.text))
			return fail(r, -EBADMSG, off, "QP strings (%u + %u bytes) exceed the body "
				    "(%u bytes)", trace_get16(b + 4), trace_get16(b + 6), n - 8);
		break;
	case GDAK_TREC_NOTE: {
		struct gdak_trace_str none;
		if (two_strs(b, n, trace_get16(b), 0, &it->u.note.text, &none))
			return fail(r, -EBADMSG, off, "NOTE text of %u bytes exceeds the body (%u "
				    "bytes)", trace_get16(b), n - 8);
		break;
	}
	case GDAK_TREC_LOST:
		it->u.lost.records = trace_get64(b);
		it->u.lost.bytes = trace_get64(b + 8);
		break;
	case GDAK_TREC_BATCH:
		break;	/* unpacked by batch_step() */
	case GDAK_TREC_STATS:
		it->u.stats.records = trace_get64(b);
		it->u.stats.bytes = trace_get64(b + 8);
		it->u.stats.lost = trace_get64(b + 16);
		it->u.stats.flushes = trace_get64(b + 24);
		it->u.stats.packets = trace_get64(b + 32);
		if (n >= 56) {	/* older writers stop at packets */
			it->u.stats.waits = trace_get64(b + 40);
			it->u.stats.dropped = trace_get64(b + 48);
		}
		break;
	}
	return 0;
}

static int parse_cb(struct gdak_trace_reader *r, const uint8_t *b, uint32_t blen, uint64_t off,
		    struct gdak_trace_item *it)
{
	const uint8_t *h = b + 12;
	uint32_t avail;

	if (blen < 16)
		return fail(r, -EBADMSG, off, "Custom Block of %u bytes has no room for a PEN", blen);
	if (s32(r, b + 8) != GDAK_TRACE_PEN)
		return 0; /* someone else's custom block */
	avail = blen - 16;
	if (avail < sizeof(struct gdak_trace_rec_hdr))
		return fail(r, -EBADMSG, off, "gdak record of %u bytes is shorter than its 32-byte "
			    "header", avail);
	it->hdr.type = h[0];
	it->hdr.version = h[1];
	it->hdr.hdr_len = trace_get16(h + 2);
	it->hdr.body_len = trace_get32(h + 4);
	it->hdr.ts_ns = trace_get64(h + 8);
	it->hdr.thread_id = trace_get32(h + 16);
	it->hdr.qpn = trace_get32(h + 20);
	it->hdr.seq = trace_get64(h + 24);
	if (it->hdr.version < 1)
		return fail(r, -EBADMSG, off, "gdak record version 0 is not valid");
	if (it->hdr.hdr_len < sizeof(struct gdak_trace_rec_hdr) || it->hdr.hdr_len > avail)
		return fail(r, -EBADMSG, off, "gdak record header length %u is outside 32..%u",
			    it->hdr.hdr_len, avail);
	if (it->hdr.body_len > avail - it->hdr.hdr_len)
		return fail(r, -EBADMSG, off, "%s record body length %u exceeds the block (%u "
			    "bytes of room)", gdak_trace_rec_name(it->hdr.type), it->hdr.body_len,
			    avail - it->hdr.hdr_len);
	it->body = h + it->hdr.hdr_len;
	it->kind = GDAK_TITEM_RECORD;
	return parse_body(r, it, off);
}


/* ---- BATCH blocks (docs/TRACE.md) ------------------------------------- */

/* Undo the writer's delta64(): out = ref with the listed bytes replaced.
 * Returns the bytes read from p[0..n), or 0 if they run out. */
static uint32_t undelta64(uint8_t *out, const uint8_t *ref, const uint8_t *p, uint32_t n)
{
	uint32_t k = 1;
	uint8_t wm;

	if (n < 1)
		return 0;
	memcpy(out, ref, 64);
	wm = p[0];
	for (unsigned w = 0; w < 8; w++) {
		uint8_t bm;

		if (!(wm & (1u << w)))
			continue;
		if (k >= n)
			return 0;
		bm = p[k++];
		for (unsigned i = 0; i < 8; i++) {
			if (!(bm & (1u << i)))
				continue;
			if (k >= n)
				return 0;
			out[8 * w + i] = p[k++];
		}
	}
	return k;
}

static const uint8_t zero64[64];

/* 64 bytes as lanes (docs/TRACE.md "BATCH"). */
static void lanes_get(uint64_t *v, const uint8_t *p)
{
	for (unsigned i = 0; i < 8; i++)
		v[i] = trace_lane(p + 8 * i);
}

/* The next record of a REPEAT sub-record into s->body: 0, or an error. */
static int repeat_one(struct gdak_trace_reader *r, struct batch_state *s, uint32_t i,
		      uint8_t type, uint32_t *body_len)
{
	struct thread_refs *tr = s->tr;
	uint8_t *o = s->body;

	if (type == GDAK_TREC_WQE) {
		if (!tr->wstep_ok || tr->wbase_qpn != s->qpn)
			return fail(r, -EBADMSG, s->off, "BATCH record %u of %u: a repeated WQE "
				    "without two one-WQEBB WQEs of QP 0x%x before it", i + 1, s->count,
				    s->qpn);
		tr->wbase_idx = (uint16_t)(tr->wbase_idx + tr->wstep_idx);
		for (unsigned k = 0; k < 8; k++) {
			tr->wbase[k] += tr->wstep[k];
			trace_put_lane(o + 8 + 8 * k, tr->wbase[k]);
		}
		trace_put16(o, tr->wbase_idx);
		trace_put16(o + 2, 0);
		trace_put32(o + 4, 64);
		memcpy(tr->wref, o + 8, 64);	/* and the previous WQE is this one */
		tr->wref_bbs = 1;
		tr->wref_fl = 0;
		tr->wref_idx = tr->wbase_idx;
		tr->wref_qpn = s->qpn;
	} else {
		if (!tr->cstep_ok)
			return fail(r, -EBADMSG, s->off, "BATCH record %u of %u: a repeated CQE "
				    "without two CQEs of one CQ before it", i + 1, s->count);
		tr->cbase_idx += tr->cstep_idx;
		for (unsigned k = 0; k < 8; k++) {
			tr->cbase[k] += tr->cstep[k];
			trace_put_lane(o + 8 + 8 * k, tr->cbase[k]);
		}
		trace_put32(o, tr->cbase_cqn);
		trace_put32(o + 4, tr->cbase_idx);
		memcpy(tr->cref, o + 8, 64);
		tr->cref_valid = 1;
		tr->cref_cqn = tr->cbase_cqn;
		tr->cref_idx = tr->cbase_idx;
	}
	*body_len = 8 + 64;
	return 0;
}

/* Hand out the next record of the batch at b (the block start) as the
 * standalone record it stands for. */
static int batch_step(struct gdak_trace_reader *r, const uint8_t *b, struct gdak_trace_item *it,
		      size_t *consumed)
{
	struct batch_state *s = &r->bt;
	struct thread_refs *tr = s->tr;
	const uint8_t *p = b + s->pos;
	uint32_t n = s->end - s->pos, k = 1, body_len = 0;
	uint8_t tag, type, *o = s->body;
	uint32_t i = s->index;
	int rc = 0;

	it->kind = GDAK_TITEM_RECORD;
	it->offset = s->off;
	it->block_type = s->btype;
	it->block_len = s->blen;
	it->batch_index = i;
	it->batch_count = s->count;
	*consumed = 0;
	if (s->rep_left) {	/* the rest of a REPEAT: no bytes of its own */
		type = s->rep_type;
		k = 0;
		goto repeat;
	}
	if (n < 1) {
		rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: the body ends before it", i + 1,
			  s->count);
		goto out;
	}
	tag = p[0];
	type = tag & GDAK_TRACE_SUB_TYPE;
	if (tag & GDAK_TRACE_SUB_QPN) {
		if (n < 5) {
			rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: QPN cut off", i + 1,
				  s->count);
			goto out;
		}
		s->qpn = trace_get32(p + 1);
		k = 5;
	}
	if (tag & GDAK_TRACE_SUB_REPEAT) {
		uint32_t rep;

		if ((type != GDAK_TREC_WQE && type != GDAK_TREC_CQE) ||
		    (tag & (GDAK_TRACE_SUB_PRED | GDAK_TRACE_SUB_OFF))) {
			rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: tag 0x%02x: only WQEs "
				  "and CQEs repeat, and neither predicted nor off-step", i + 1, s->count, tag);
			goto out;
		}
		if (n - k < 2)
			goto cut;
		rep = trace_get16(p + k);
		k += 2;
		if (!rep || rep > s->count - i) {
			rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: a REPEAT of %u records "
				  "(%u left in the batch)", i + 1, s->count, rep, s->count - i);
			goto out;
		}
		s->rep_left = rep;
		s->rep_type = type;
repeat:
		rc = repeat_one(r, s, i, type, &body_len);
		if (rc)
			goto out;
		s->rep_left--;
		goto done;
	}
	if ((tag & (GDAK_TRACE_SUB_PRED | GDAK_TRACE_SUB_OFF)) && type == GDAK_TREC_DOORBELL) {
		rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: tag 0x%02x: a doorbell is "
			  "neither predicted nor off-step", i + 1, s->count, tag);
		goto out;
	}
	switch (type) {
	case GDAK_TREC_DOORBELL: {
		uint8_t rl;

		if (n - k < 5 || (rl = p[k + 4]) > n - k - 5 || rl > GDAK_TRACE_MAX_REG)
			goto cut;
		trace_put16(o, trace_get16(p + k));
		o[2] = p[k + 2];
		o[3] = p[k + 3];
		trace_put16(o + 4, rl);
		trace_put16(o + 6, 0);
		memcpy(o + 8, p + k + 5, rl);
		k += 5 + rl;
		body_len = 8 + rl;
		break;
	}
	case GDAK_TREC_WQE: {
		uint16_t idx;
		uint32_t nbb;
		uint8_t fl = 0;

		if (tag & GDAK_TRACE_SUB_PRED) {
			if (tr->wref_bbs != 1 || tr->wref_qpn != s->qpn) {
				rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: a predicted WQE "
					  "without a one-WQEBB WQE of QP 0x%x before it", i + 1,
					  s->count, s->qpn);
				goto out;
			}
			idx = (uint16_t)(tr->wref_idx + 1);
			nbb = 1;
		} else {
			if (n - k < 4)
				goto cut;
			idx = trace_get16(p + k);
			nbb = p[k + 2];
			fl = p[k + 3];
			k += 4;
			if (nbb > GDAK_TRACE_MAX_WQEBB) {
				rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: WQE of %u WQEBBs "
					  "(at most %u)", i + 1, s->count, nbb, GDAK_TRACE_MAX_WQEBB);
				goto out;
			}
		}
		if ((tag & GDAK_TRACE_SUB_OFF) && (!tr->wstep_ok || tr->wbase_qpn != s->qpn)) {
			rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: an off-step WQE "
				  "without two one-WQEBB WQEs of QP 0x%x before it", i + 1, s->count,
				  s->qpn);
			goto out;
		}
		for (uint32_t j = 0; j < nbb; j++) {
			uint8_t ref[64];
			uint32_t used;

			if (j == 0 && (tag & GDAK_TRACE_SUB_OFF)) /* the progression's next */
				for (unsigned w = 0; w < 8; w++)
					trace_put_lane(ref + 8 * w, tr->wbase[w] + tr->wstep[w]);
			else
				memcpy(ref, j < tr->wref_bbs ? tr->wref + 64 * j : zero64, 64);
			if (j == 0) {	/* the index is known: see the writer */
				ref[1] = (uint8_t)(idx >> 8);
				ref[2] = (uint8_t)idx;
			}
			used = undelta64(o + 8 + 64 * j, ref, p + k, n - k);
			if (!used)
				goto cut;
			k += used;
		}
		trace_put16(o, idx);
		trace_put16(o + 2, fl);
		trace_put32(o + 4, nbb * 64);
		/* the progression a REPEAT goes on with: stepped past this one
		 * (OFF), or restarted here */
		if (tag & GDAK_TRACE_SUB_OFF) {
			tr->wbase_idx = (uint16_t)(tr->wbase_idx + tr->wstep_idx);
			for (unsigned w = 0; w < 8; w++)
				tr->wbase[w] += tr->wstep[w];
		} else if (nbb == 1 && !fl) {
			uint64_t c[8];

			lanes_get(c, o + 8);
			tr->wstep_ok = tr->wbase_ok && tr->wbase_qpn == s->qpn;
			for (unsigned w = 0; w < 8; w++)
				tr->wstep[w] = c[w] - tr->wbase[w];
			tr->wstep_idx = (uint16_t)(idx - tr->wbase_idx);
			memcpy(tr->wbase, c, sizeof(c));
			tr->wbase_idx = idx;
			tr->wbase_qpn = s->qpn;
			tr->wbase_ok = 1;
		} else {
			tr->wbase_ok = tr->wstep_ok = 0;
		}
		tr->wref_fl = fl;
		memcpy(tr->wref, o + 8, (size_t)nbb * 64);
		tr->wref_bbs = nbb;
		tr->wref_idx = idx;
		tr->wref_qpn = s->qpn;
		body_len = 8 + nbb * 64;
		break;
	}
	case GDAK_TREC_CQE: {
		uint32_t cqn, cqi, used;

		if (tag & GDAK_TRACE_SUB_PRED) {
			if (!tr->cref_valid) {
				rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: a predicted CQE "
					  "without a CQE before it", i + 1, s->count);
				goto out;
			}
			cqn = tr->cref_cqn;
			cqi = tr->cref_idx + 1;
		} else {
			if (n - k < 8)
				goto cut;
			cqn = trace_get32(p + k);
			cqi = trace_get32(p + k + 4);
			k += 8;
		}
		if (tag & GDAK_TRACE_SUB_OFF) {	/* against the progression's next */
			uint8_t ref[64];

			if (!tr->cstep_ok || tr->cbase_cqn != cqn) {
				rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: an off-step CQE "
					  "without two CQEs of CQ 0x%x before it", i + 1, s->count, cqn);
				goto out;
			}
			for (unsigned w = 0; w < 8; w++)
				trace_put_lane(ref + 8 * w, tr->cbase[w] + tr->cstep[w]);
			used = undelta64(o + 8, ref, p + k, n - k);
		} else {
			used = undelta64(o + 8, tr->cref_valid ? tr->cref : zero64, p + k, n - k);
		}
		if (!used)
			goto cut;
		k += used;
		trace_put32(o, cqn);
		trace_put32(o + 4, cqi);
		if (tag & GDAK_TRACE_SUB_OFF) {
			tr->cbase_idx += tr->cstep_idx;
			for (unsigned w = 0; w < 8; w++)
				tr->cbase[w] += tr->cstep[w];
		} else {
			uint64_t c[8];

			lanes_get(c, o + 8);
			tr->cstep_ok = tr->cbase_ok && tr->cbase_cqn == cqn;
			for (unsigned w = 0; w < 8; w++)
				tr->cstep[w] = c[w] - tr->cbase[w];
			tr->cstep_idx = cqi - tr->cbase_idx;
			memcpy(tr->cbase, c, sizeof(c));
			tr->cbase_idx = cqi;
			tr->cbase_cqn = cqn;
			tr->cbase_ok = 1;
		}
		memcpy(tr->cref, o + 8, 64);
		tr->cref_valid = 1;
		tr->cref_cqn = cqn;
		tr->cref_idx = cqi;
		body_len = 8 + 64;
		break;
	}
	default:
		rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u: type %u cannot be batched",
			  i + 1, s->count, type);
		goto out;
	}
done:
	it->hdr = s->hdr;
	it->hdr.type = type;
	it->hdr.hdr_len = sizeof(struct gdak_trace_rec_hdr);
	it->hdr.body_len = body_len;
	it->hdr.qpn = s->qpn;
	it->hdr.seq = s->hdr.seq + i;
	it->body = s->body;
	rc = parse_body(r, it, s->off);
	s->pos += k;
	s->index++;
	if (rc == 0 && s->index < s->count)
		return 1;	/* *consumed 0: the same block again */
	if (rc == 0) {		/* decoded whole: the next batch may go on from here */
		tr->valid = 1;
		tr->last_seq = s->hdr.seq + s->count - 1;
	}
	goto out;
cut:
	rc = fail(r, -EBADMSG, s->off, "BATCH record %u of %u (%s): its bytes run past the body",
		  i + 1, s->count, gdak_trace_rec_name(type));
out:
	s->active = 0;
	s->rep_left = 0;
	*consumed = s->blen;
	if (rc) {
		tr->valid = 0;	/* its references are not what the writer had */
		it->kind = GDAK_TITEM_OTHER;
		return rc;
	}
	return 1;
}

/* The references of thread th: its entry, or a new one (NULL: no memory). */
static struct thread_refs *thread_refs(struct gdak_trace_reader *r, uint32_t th)
{
	struct thread_refs *t;

	for (unsigned i = 0; i < r->n_refs; i++)
		if (r->refs[i].thread == th)
			return &r->refs[i];
	if (!r->refs) {
		r->refs = calloc(MAX_THREAD_REFS, sizeof(*r->refs));
		if (!r->refs)
			return NULL;
	}
	if (r->n_refs < MAX_THREAD_REFS)
		t = &r->refs[r->n_refs++];
	else	/* a file of many threads (or a fuzzed one): forget one */
		t = &r->refs[r->next_evict++ % MAX_THREAD_REFS];
	memset(t, 0, sizeof(*t));
	t->thread = th;
	return t;
}

/* A BATCH block just parsed (hdr checked, body in the block): start on it. */
static int batch_start(struct gdak_trace_reader *r, const uint8_t *b, uint64_t off,
		       struct gdak_trace_item *it, size_t *consumed)
{
	struct batch_state *s = &r->bt;
	uint32_t body = (uint32_t)(it->body - b);
	uint32_t flags = trace_get32(it->body + 4);
	uint32_t fixed = (uint32_t)sizeof(struct gdak_trace_batch_body);
	struct thread_refs *tr;

	s->count = trace_get32(it->body);
	if (!s->count)
		return 1;	/* nothing packed: passed on as a BATCH record */
	*consumed = it->block_len;
	it->kind = GDAK_TITEM_OTHER;
	if (flags & ~GDAK_TRACE_BATCH_CONT)
		return fail(r, -EBADMSG, off, "BATCH flags 0x%x: unknown bits", flags);
	tr = thread_refs(r, it->hdr.thread_id);
	if (!tr)
		return fail(r, -EBADMSG, off, "BATCH: no memory for the thread's references");
	if (flags & GDAK_TRACE_BATCH_CONT) {
		uint64_t ref;

		if (it->hdr.body_len < fixed + 8)
			return fail(r, -EBADMSG, off, "BATCH body of %u bytes has no room for its "
				    "reference sequence number", it->hdr.body_len);
		ref = trace_get64(it->body + fixed);
		fixed += 8;
		if (!tr->valid || tr->last_seq != ref) {
			tr->valid = 0;
			return fail(r, -EBADMSG, off, "BATCH of thread %u goes on from its record "
				    "%llu, which is not in the file before it (lost or damaged): its "
				    "%u records cannot be decoded", it->hdr.thread_id,
				    (unsigned long long)ref, s->count);
		}
	} else {
		tr->wref_bbs = 0;
		tr->wref_fl = 0;
		tr->cref_valid = 0;
		tr->wbase_ok = tr->wstep_ok = tr->cbase_ok = tr->cstep_ok = 0;
	}
	tr->valid = 0;		/* until this batch is decoded whole */
	*consumed = 0;
	it->kind = GDAK_TITEM_RECORD;
	s->tr = tr;
	s->active = 1;
	s->off = off;
	s->blen = it->block_len;
	s->btype = it->block_type;
	s->pos = body + fixed;
	s->end = body + it->hdr.body_len;
	s->index = 0;
	s->rep_left = 0;
	s->hdr = it->hdr;
	s->qpn = it->hdr.qpn;
	return batch_step(r, b, it, consumed);
}

int gdak_trace_reader_next(struct gdak_trace_reader *r, const void *buf, size_t len,
			   uint64_t file_off, struct gdak_trace_item *it, size_t *consumed)
{
	const uint8_t *b = buf;
	uint32_t type, blen;
	int rc = 0;

	if (!r || !it || !consumed || (!buf && len))
		return -EINVAL;
	*consumed = 0;
	memset(it, 0, sizeof(*it));
	it->offset = file_off;
	it->kind = GDAK_TITEM_OTHER;
	if (r->bt.active) {
		/* the rest of a batch, unless the caller moved on */
		if (file_off == r->bt.off && len >= r->bt.blen &&
		    s32(r, b + 4) == r->bt.blen)
			return batch_step(r, b, it, consumed);
		r->bt.active = 0;
		r->bt.tr->valid = 0;	/* abandoned half way */
	}
	if (len < 12)
		return 0;
	type = trace_get32(b);
	if (type == GDAK_PCAPNG_SHB) {
		/* the byte-order magic decides how the rest of the section reads */
		uint32_t bom = trace_get32(b + 8);
		if (bom == GDAK_PCAPNG_BOM)
			r->swap = 0;
		else if (bom == gdak_bswap32(GDAK_PCAPNG_BOM))
			r->swap = 1;
		else
			return fail(r, -EINVAL, file_off, "Section Header Block byte-order magic "
				    "0x%08x is neither 0x1a2b3c4d nor its byte swap", bom);
	} else if (!r->have_shb) {
		return fail(r, -EINVAL, file_off, "not a pcapng file: the first block (type 0x%08x) "
			    "is not a Section Header Block", type);
	} else {
		type = s32(r, b);
	}
	blen = s32(r, b + 4);
	it->block_type = type;
	it->block_len = blen;
	if (blen < 12 || blen % 4)
		return fail(r, -EINVAL, file_off, "block type 0x%08x has length %u (must be >= 12 and "
			    "a multiple of 4)", type, blen);
	if (blen > MAX_BLOCK)
		return fail(r, -EINVAL, file_off, "block type 0x%08x has length %u, over the %u-byte "
			    "limit", type, blen, MAX_BLOCK);
	if (blen > len)
		return 0;
	if (s32(r, b + blen - 4) != blen)
		return fail(r, -EINVAL, file_off, "block type 0x%08x: trailing length %u differs from "
			    "the leading length %u", type, s32(r, b + blen - 4), blen);
	*consumed = blen;
	switch (type) {
	case GDAK_PCAPNG_SHB:
		rc = parse_shb(r, b, blen, file_off);
		if (rc)
			*consumed = 0;
		break;
	case GDAK_PCAPNG_IDB:
		rc = parse_idb(r, b, blen, file_off);
		break;
	case GDAK_PCAPNG_EPB:
		rc = parse_epb(r, b, blen, file_off, it);
		break;
	case GDAK_PCAPNG_CB_COPY:
	case GDAK_PCAPNG_CB_NOCOPY:
		rc = parse_cb(r, b, blen, file_off, it);
		if (!rc && it->kind == GDAK_TITEM_RECORD && it->hdr.type == GDAK_TREC_BATCH)
			return batch_start(r, b, file_off, it, consumed);
		break;
	default:
		break;
	}
	if (rc) {
		it->kind = GDAK_TITEM_OTHER;
		return rc;
	}
	return 1;
}
