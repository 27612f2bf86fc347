/* SPDX-License-Identifier: MIT */
/*
 * trace_write.c - the pcapng trace writer (format: gdak/trace_format.h).
 *
 * Each writer thread appends whole pcapng blocks to its own buffer; the
 * record path takes no lock.  A buffer is a few chunks: the owner fills one
 * and, when it is full, hands it to the trace's I/O thread (a queue under
 * t->lock and a condition variable - that thread sleeps, never spins) and
 * goes on in a free chunk, so the owner never waits for the file unless
 * every chunk is queued (then it waits, and the wait is counted).
 * With GDAK_TRACE_WRITER=inline (or opts.inline_io) there is no I/O thread
 * and the owner writes a full buffer itself, as before.
 *
 * gdak_trace_flush() from any thread waits until the queue is written, then
 * writes each buffer's committed part of its current chunk.  The file is
 * written by one party at a time: the I/O thread while it holds a chunk
 * (busy), anyone else only under t->lock with the queue empty and the I/O
 * thread idle.  The owner writes only past `committed` and resets a chunk
 * only under t->lock; a flusher reads only [flushed, committed).
 * A failed write loses that chunk: it is counted and a LOST record says so
 * as soon as a later write succeeds.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gdak/config.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <gdak/env.h>
#include <gdak/roce.h>

#include "gdak_log.h"
#include "trace_int.h"

#define DEFAULT_BUF (256u * 1024)
#define DEFAULT_CHUNKS 4u	/* per thread buffer, with the I/O thread */
#define MAX_CHUNKS 64u
#define MIN_BUF (128u * 1024)	/* holds the largest record (a 65000-byte packet) */

/* committed bytes (low 32 bits) and records (high 32) published together so
 * a flusher never sees a record count that does not match the bytes */
#define PACK(recs, bytes) (((uint64_t)(recs) << 32) | (uint32_t)(bytes))

/* A piece of a thread's buffer; queued for the I/O thread when full. */
struct chunk {
	struct chunk *next;	/* the I/O queue or the owner's free list */
	struct gdak_trace_buf *owner;
	uint8_t *data;
	size_t start, end;	/* queued: the bytes to write */
	uint32_t recs;		/* queued: the records in them */
};

/* A progression (docs/TRACE.md "REPEAT and OFF"): a base record as lanes
 * and the step from the one before it. */
struct prog {
	uint64_t v[8], s[8];	/* base, step */
	uint32_t key;		/* the base's QPN (WQEs) or CQN (CQEs) */
	uint32_t idx, step_idx;	/* the base's index, the index step (WQEs: mod 2^16) */
	bool base_ok, step_ok;
	bool conf;		/* a record matched the step */
	bool raw_stale;		/* wref/cref lag v: a run went on */
};

struct gdak_trace_buf {
	struct gdak_trace *t;
	struct gdak_trace_buf *next;
	uint32_t thread_id;
	uint64_t seq;		/* owner only */
	struct chunk *cur;	/* the chunk being filled (owner; swapped under t->lock) */
	struct chunk *free;	/* under t->lock */
	struct chunk *all;	/* every chunk of this buffer (freed at close) */
	unsigned nchunks;
	uint8_t *data;		/* cur->data */
	size_t cap;
	size_t used;		/* owner only: == committed bytes */
	uint32_t recs;		/* owner only: == committed records */
	_Atomic uint64_t committed; /* PACK(records, bytes) of whole blocks */
	size_t flushed;		/* under t->lock */
	uint32_t recs_flushed;	/* under t->lock */

	/* batching (owner only): an open BATCH block at data + used, not yet
	 * committed; the references its delta coding compares against */
	bool in_batch;		/* between gdak_trace_batch_begin and _end */
	bool bopen;		/* a BATCH block is being built */
	size_t blen;		/* its bytes so far (framing and headers included) */
	uint32_t bcount;	/* its sub-records */
	uint32_t bqpn;		/* QPN of its last sub-record */
	uint32_t wref_qpn;	/* the previous WQE sub-record: QPN, index, size */
	uint16_t wref_idx;
	uint32_t wref_bbs;	/* 0: none yet (the reference is zeros) */
	bool cref_valid;
	uint32_t cref_cqn, cref_idx;
	uint8_t wref[GDAK_TRACE_MAX_WQEBB * 64];
	uint8_t cref[64];
	/* runs (docs/TRACE.md "BATCH", REPEAT): the WQE (of one WQEBB) and
	 * CQE progressions - a base as lanes, the step from the one before it.
	 * A WQE/CQE that is its base advanced by that step is only counted
	 * (run_n); the run becomes one REPEAT sub-record when it ends */
	struct prog wp, cp;	/* WQEs (key: QPN), CQEs (key: CQN) */
	uint8_t run_type;	/* GDAK_TREC_WQE or GDAK_TREC_CQE while run_n */
	uint32_t run_n, run_qpn;
	/* the references carry over to the next batch (GDAK_TRACE_BATCH_CONT)
	 * while it lands in the same chunk right after this one: a chunk
	 * lost or dropped never leaves a later batch undecodable */
	bool ref_ok;
	uint64_t ref_last;	/* seq of the last record of the previous batch */
	_Atomic bool refs_stale; /* a flush of this buffer failed: start afresh */
	bool bcont;		/* the open batch is coded against the previous one */
};

struct gdak_trace {
	int fd;
	int regular;		/* a regular file: a failed write can be cut off */
	int fake_clock;
	size_t buf_size;
	unsigned nchunks;	/* per buffer; 1 = no I/O thread */
	pthread_mutex_t lock;	/* the buffer list, the queue, the counters below */
	pthread_cond_t work;	/* I/O thread: a chunk queued, or stop */
	pthread_cond_t done;	/* a chunk written: room for owners, progress for flushers */
	pthread_t io;
	bool io_on, io_stop, io_busy;
	bool io_paused;		/* test hook: the file is "slow" */
	pid_t pid;		/* the process the I/O thread runs in */
	struct chunk *q, **q_tail;	/* full chunks, in hand-off order */
	struct gdak_trace_buf *bufs;
	_Atomic uint64_t off;	/* file bytes written (all whole blocks); see file_write */
	int io_err;		/* first I/O-thread write error since the last flush */
	uint64_t waits;		/* an owner found every chunk queued and waited */
	bool lossy;		/* then drop the chunk instead (counted) */
	uint64_t dropped;	/* records dropped so */
	uint64_t records, packets, flushes;
	uint64_t lost_recs, lost_bytes;		/* in all */
	uint64_t pend_lost_recs, pend_lost_bytes; /* not yet reported by a LOST record */
	uint64_t writer_seq;
	_Atomic unsigned inject_errors;
	uint64_t generation;
	_Atomic uint64_t fake_now;
	struct gdak_trace *reg_next;	/* open traces (fork handlers) */
};

static _Atomic uint64_t generations;

/* ---- fork ---------------------------------------------------------------
 * A child forked with a trace open has one thread, the forking one: the
 * lock may have been held by a thread that is not there (the I/O thread,
 * another recorder) and the condition variables may count the parent's
 * waiters (glibc's pthread_cond_destroy then waits for them forever).  So
 * fork takes every open trace's lock first (no other thread is inside),
 * and the child starts from fresh condition variables; it writes inline
 * (io_here: its pid is not the I/O thread's). */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gdak_trace *reg_head;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
	for (struct gdak_trace *t = reg_head; t; t = t->reg_next)
		pthread_mutex_lock(&t->lock);
}

static void fork_parent(void)
{
	for (struct gdak_trace *t = reg_head; t; t = t->reg_next)
		pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&reg_lock);
}

static void fork_child(void)
{
	for (struct gdak_trace *t = reg_head; t; t = t->reg_next) {
		pthread_cond_init(&t->work, NULL);
		pthread_cond_init(&t->done, NULL);
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_unlock(&reg_lock);
}

static void reg_init(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

static void reg_add(struct gdak_trace *t)
{
	pthread_once(&reg_once, reg_init);
	pthread_mutex_lock(&reg_lock);
	t->reg_next = reg_head;
	reg_head = t;
	pthread_mutex_unlock(&reg_lock);
}

static void reg_del(struct gdak_trace *t)
{
	pthread_mutex_lock(&reg_lock);
	for (struct gdak_trace **pp = &reg_head; *pp; pp = &(*pp)->reg_next) {
		if (*pp == t) {
			*pp = t->reg_next;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

/* ---- time ------------------------------------------------------------- */

static uint64_t now_ns(struct gdak_trace *t)
{
	struct timespec ts;

	if (t->fake_clock)
		return 1000 * (atomic_fetch_add_explicit(&t->fake_now, 1, memory_order_relaxed) + 1);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- file writes (under t->lock) ------------------------------------- */

/* Write all of p or nothing: on failure a regular file is cut back to its
 * last whole block so readers never meet half a block. */
static int file_write(struct gdak_trace *t, const void *p, size_t n)
{
	const uint8_t *c = p;
	size_t done = 0;
	int err = 0;

	if (!n)
		return 0;
	{
		unsigned ie = atomic_load_explicit(&t->inject_errors, memory_order_relaxed);
		while (ie && !atomic_compare_exchange_weak(&t->inject_errors, &ie, ie - 1))
			;
		if (ie)
			err = EIO;
	}
	while (!err && done < n) {
		ssize_t w = write(t->fd, c + done, n - done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
		} else if (w == 0) {
			err = EIO;
		} else {
			done += (size_t)w;
		}
	}
	/* only the one party writing at a time changes off: plain add */
	uint64_t off = atomic_load_explicit(&t->off, memory_order_relaxed);

	if (!err) {
		atomic_store_explicit(&t->off, off + n, memory_order_relaxed);
		return 0;
	}
	if (done && t->regular) {
		if (ftruncate(t->fd, (off_t)off) || lseek(t->fd, (off_t)off, SEEK_SET) < 0)
			GDAK_ERR_RL("trace", 0, "cannot cut the trace back to %llu bytes: %s",
				    (unsigned long long)off, strerror(errno));
	} else if (done) {
		/* a pipe: the reader will see a torn block */
		atomic_store_explicit(&t->off, off + done, memory_order_relaxed);
	}
	GDAK_WARN_RL("trace", 0, "trace write of %zu bytes failed: %s", n, strerror(err));
	return -err;
}

static size_t pad4(size_t n) { return (n + 3) & ~(size_t)3; }

/* Build the writer's own record (LOST, STATS) in a small stack buffer. */
static size_t build_writer_rec(struct gdak_trace *t, uint8_t *blk, uint8_t type, const void *body,
			       uint32_t body_len)
{
	size_t total = 12 + 4 + sizeof(struct gdak_trace_rec_hdr) + pad4(body_len);
	uint8_t *h = blk + 12;

	trace_put32(blk, GDAK_PCAPNG_CB_COPY);
	trace_put32(blk + 4, (uint32_t)total);
	trace_put32(blk + 8, GDAK_TRACE_PEN);
	h[0] = type;
	h[1] = GDAK_TRACE_REC_VERSION;
	trace_put16(h + 2, sizeof(struct gdak_trace_rec_hdr));
	trace_put32(h + 4, body_len);
	trace_put64(h + 8, now_ns(t));
	trace_put32(h + 16, GDAK_TRACE_THREAD_WRITER);
	trace_put32(h + 20, GDAK_TRACE_QPN_NONE);
	trace_put64(h + 24, t->writer_seq++);
	memcpy(h + 32, body, body_len);
	memset(h + 32 + body_len, 0, pad4(body_len) - body_len);
	trace_put32(blk + total - 4, (uint32_t)total);
	return total;
}

/* After a successful write, tell the reader what was lost before it. */
static void report_lost(struct gdak_trace *t)
{
	uint8_t blk[128];
	uint8_t body[16];
	size_t n;

	if (!t->pend_lost_recs && !t->pend_lost_bytes)
		return;
	trace_put64(body, t->pend_lost_recs);
	trace_put64(body + 8, t->pend_lost_bytes);
	n = build_writer_rec(t, blk, GDAK_TREC_LOST, body, sizeof(body));
	if (file_write(t, blk, n) == 0) {
		t->pend_lost_recs = 0;
		t->pend_lost_bytes = 0;
		t->records++;
	}
}

/* Counters after writing nrec records in n bytes (rc: the write).  Under t->lock. */
static void account(struct gdak_trace *t, int rc, size_t n, uint32_t nrec)
{
	t->flushes++;
	if (rc) {
		t->lost_recs += nrec;
		t->lost_bytes += n;
		t->pend_lost_recs += nrec;
		t->pend_lost_bytes += n;
	} else {
		t->records += nrec;
		report_lost(t);
	}
}

/* Write what b has committed and not yet written.  Under t->lock, with the
 * I/O queue empty and the I/O thread idle. */
static int flush_buf_locked(struct gdak_trace_buf *b)
{
	struct gdak_trace *t = b->t;
	uint64_t c = atomic_load_explicit(&b->committed, memory_order_acquire);
	size_t bytes = (uint32_t)c;
	uint32_t recs = (uint32_t)(c >> 32);
	size_t n = bytes - b->flushed;
	uint32_t nrec = recs - b->recs_flushed;
	int rc;

	if (!n)
		return 0;
	rc = file_write(t, b->data + b->flushed, n);
	account(t, rc, n, nrec);
	if (rc)	/* the owner's next batch must not refer to what was lost */
		atomic_store_explicit(&b->refs_stale, true, memory_order_relaxed);
	b->flushed = bytes;
	b->recs_flushed = recs;
	return rc;
}

/* The I/O thread serves this process: a child forked with the trace open
 * has no such thread (and must not wait for one): it writes inline. */
static bool io_here(struct gdak_trace *t)
{
	return t->io_on && t->pid == getpid();
}

/* Under t->lock: until the I/O thread has written everything queued. */
static void wait_io_idle(struct gdak_trace *t)
{
	while (io_here(t) && (t->q || t->io_busy))
		pthread_cond_wait(&t->done, &t->lock);
}

static void *io_main(void *arg)
{
	struct gdak_trace *t = arg;

	pthread_setname_np(pthread_self(), "gdak-trace-io");
	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct chunk *c;
		int rc;

		while ((!t->q && !t->io_stop) || t->io_paused)
			pthread_cond_wait(&t->work, &t->lock);
		c = t->q;
		if (!c)
			break;	/* stop, and nothing left */
		t->q = c->next;
		if (!t->q)
			t->q_tail = &t->q;
		t->io_busy = true;
		pthread_mutex_unlock(&t->lock);

		rc = file_write(t, c->data + c->start, c->end - c->start);

		pthread_mutex_lock(&t->lock);
		account(t, rc, c->end - c->start, c->recs);
		if (rc && !t->io_err)
			t->io_err = rc;
		c->next = c->owner->free;
		c->owner->free = c;
		t->io_busy = false;
		pthread_cond_broadcast(&t->done);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* Owner: make room for n bytes (n <= cap). */
static void buf_make_room(struct gdak_trace_buf *b, size_t n)
{
	struct gdak_trace *t = b->t;
	struct chunk *c = b->cur;

	if (b->used + n <= b->cap)
		return;
	b->ref_ok = false;	/* the next batch starts a chunk: it decodes on its own */
	pthread_mutex_lock(&t->lock);
	if (io_here(t)) {
		size_t end = (uint32_t)atomic_load_explicit(&b->committed, memory_order_relaxed);

		if (end > b->flushed && !b->free && t->lossy) {
			/* every chunk queued and the user would rather lose records
			 * than wait: drop this one, counted, reported by a LOST */
			uint32_t nrec = b->recs - b->recs_flushed;

			t->dropped += nrec;
			t->lost_recs += nrec;
			t->lost_bytes += end - b->flushed;
			t->pend_lost_recs += nrec;
			t->pend_lost_bytes += end - b->flushed;
		} else if (end > b->flushed) {
			/* hand the chunk to the I/O thread, go on in a free one */
			c->start = b->flushed;
			c->end = end;
			c->recs = b->recs - b->recs_flushed;
			c->next = NULL;
			*t->q_tail = c;
			t->q_tail = &c->next;
			pthread_cond_signal(&t->work);
			/* queued: a flusher must not write these bytes too while we wait */
			b->flushed = end;
			b->recs_flushed = b->recs;
			if (!b->free)
				t->waits++;
			while (!b->free)
				pthread_cond_wait(&t->done, &t->lock);
			c = b->free;
			b->free = c->next;
			b->cur = c;
			b->data = c->data;
		}
	} else {
		flush_buf_locked(b);
	}
	b->used = 0;
	b->recs = 0;
	b->flushed = 0;
	b->recs_flushed = 0;
	atomic_store_explicit(&b->committed, 0, memory_order_release);
	pthread_mutex_unlock(&t->lock);
}

static void buf_commit_n(struct gdak_trace_buf *b, size_t n, uint32_t recs)
{
	b->used += n;
	b->recs += recs;
	atomic_store_explicit(&b->committed, PACK(b->recs, b->used), memory_order_release);
}

static void buf_commit(struct gdak_trace_buf *b, size_t n) { buf_commit_n(b, n, 1); }

/* ---- records -------------------------------------------------------- */

struct rec {
	uint8_t *blk;	/* block start */
	uint8_t *body;	/* where the body goes */
	size_t total;
};

/* Reserve a custom block for a record of body_len bytes and fill its
 * headers; the caller fills the body and calls rec_end(). */
static void batch_close(struct gdak_trace_buf *b);

static void rec_begin(struct gdak_trace_buf *b, struct rec *r, uint8_t type, uint32_t qpn,
		      uint32_t body_len)
{
	uint8_t *h;

	if (b->bopen)
		batch_close(b);	/* the batch's records come first */

	r->total = 12 + 4 + sizeof(struct gdak_trace_rec_hdr) + pad4(body_len);
	buf_make_room(b, r->total);
	r->blk = b->data + b->used;
	h = r->blk + 12;
	trace_put32(r->blk, GDAK_PCAPNG_CB_COPY);
	trace_put32(r->blk + 4, (uint32_t)r->total);
	trace_put32(r->blk + 8, GDAK_TRACE_PEN);
	h[0] = type;
	h[1] = GDAK_TRACE_REC_VERSION;
	trace_put16(h + 2, sizeof(struct gdak_trace_rec_hdr));
	trace_put32(h + 4, body_len);
	trace_put64(h + 8, now_ns(b->t));
	trace_put32(h + 16, b->thread_id);
	trace_put32(h + 20, qpn);
	trace_put64(h + 24, b->seq++);
	r->body = h + sizeof(struct gdak_trace_rec_hdr);
	/* zero the padding now; the body overwrites the rest */
	memset(r->blk + r->total - 8, 0, 4);
}

static void rec_end(struct gdak_trace_buf *b, struct rec *r)
{
	trace_put32(r->blk + r->total - 4, (uint32_t)r->total);
	buf_commit(b, r->total);
}

/* ---- batches (docs/TRACE.md "BATCH") ---------------------------------- */

enum { BATCH_HDR = 12 + sizeof(struct gdak_trace_rec_hdr) + sizeof(struct gdak_trace_batch_body) };

static void batch_open(struct gdak_trace_buf *b, uint32_t qpn)
{
	uint8_t *blk, *h;

	/* room for the headers, one sub-record of any size and the trailer */
	buf_make_room(b, BATCH_HDR + 8 + GDAK_TRACE_SUB_MAX + 8);
	blk = b->data + b->used;
	h = blk + 12;
	trace_put32(blk, GDAK_PCAPNG_CB_COPY);
	trace_put32(blk + 8, GDAK_TRACE_PEN);
	h[0] = GDAK_TREC_BATCH;
	h[1] = GDAK_TRACE_REC_VERSION;
	trace_put16(h + 2, sizeof(struct gdak_trace_rec_hdr));
	trace_put32(h + 16, b->thread_id);
	trace_put32(h + 20, qpn);
	trace_put64(h + 24, b->seq);
	b->bopen = true;
	b->blen = BATCH_HDR;
	b->bcount = 0;
	b->bqpn = qpn;
	/* (a locked exchange only when set: this is on every pass) */
	if (atomic_load_explicit(&b->refs_stale, memory_order_relaxed) &&
	    atomic_exchange_explicit(&b->refs_stale, false, memory_order_relaxed))
		b->ref_ok = false;
	b->bcont = b->ref_ok;
	if (b->ref_ok) {
		/* WQEs and CQEs go on being coded against the previous batch's */
		trace_put32(h + 36, GDAK_TRACE_BATCH_CONT);
		trace_put64(h + 40, b->ref_last);
		b->blen += 8;
	} else {
		trace_put32(h + 36, 0);
		b->wref_bbs = 0;
		b->cref_valid = false;
		b->wp.base_ok = b->wp.step_ok = b->wp.conf = false;
		b->cp.base_ok = b->cp.step_ok = b->cp.conf = false;
		b->wp.raw_stale = b->cp.raw_stale = false;
	}
}

static void run_flush(struct gdak_trace_buf *b);

/* Time, framing, lengths and count, then commit: the readers see it from
 * here.  The time is read now, after the records: a NIC pass publishes its
 * CQEs before it ends, so the clock read is not between a doorbell and the
 * CQE the device waits for. */
static void batch_close_locked(struct gdak_trace_buf *b, bool locked)
{
	uint8_t *blk = b->data + b->used;
	size_t total;

	run_flush(b);
	total = pad4(b->blen) + 4;
	if (b->bcont && atomic_load_explicit(&b->refs_stale, memory_order_relaxed)) {
		/* the batch it is coded against was lost by a failed flush after
		 * it began: no reader could decode it - counted lost, like it
		 * (a LOST record follows), never written (its records' sequence
		 * numbers stay a gap); the next batch starts afresh */
		struct gdak_trace *t = b->t;

		if (!locked)
			pthread_mutex_lock(&t->lock);
		t->lost_recs += b->bcount;
		t->lost_bytes += total;
		t->pend_lost_recs += b->bcount;
		t->pend_lost_bytes += total;
		if (!locked)
			pthread_mutex_unlock(&t->lock);
		b->bopen = false;
		b->ref_ok = false;
		return;
	}

	trace_put64(blk + 12 + 8, now_ns(b->t));
	memset(blk + b->blen, 0, pad4(b->blen) - b->blen);
	trace_put32(blk + 4, (uint32_t)total);
	trace_put32(blk + 12 + 4, (uint32_t)(b->blen - 12 - sizeof(struct gdak_trace_rec_hdr)));
	trace_put32(blk + 12 + 32, b->bcount);
	trace_put32(blk + total - 4, (uint32_t)total);
	b->bopen = false;
	b->ref_ok = true;
	b->ref_last = b->seq - 1;
	buf_commit_n(b, total, b->bcount);
}

static void batch_close(struct gdak_trace_buf *b) { batch_close_locked(b, false); }

/* Start a sub-record for qpn: returns where its tag byte goes. */
static uint8_t *batch_sub(struct gdak_trace_buf *b, uint32_t qpn)
{
	run_flush(b);
	if (b->bopen && b->used + b->blen + GDAK_TRACE_SUB_MAX + 8 > b->cap)
		batch_close(b);
	if (!b->bopen)
		batch_open(b, qpn);
	/* the buffer's next lines, for writing: a chunk comes back from the I/O
	 * thread out of this core's cache, and a first store to each line
	 * otherwise waits for it (measured: the largest cost of a WQE record) */
	__builtin_prefetch(b->data + b->used + b->blen + 256, 1, 3);
	b->seq++;
	b->bcount++;
	return b->data + b->used + b->blen;
}

/*
 * Delta-code 64 bytes against ref: a mask of the 8-byte words that differ,
 * then for each such word a mask of the bytes stored and their values.
 * Consecutive WQEs/CQEs differ in a few bytes (an address, a counter); their
 * fields are big-endian, so a changed value changes the END of its word in
 * memory.  The writer therefore stores each changed word from its first
 * differing byte to its end (mask 0xff << f) - a superset of the changed
 * bytes, which the format allows, found with one count-trailing-zeros and
 * copied with one 8-byte store instead of a loop over the bytes.
 */
static inline __attribute__((always_inline)) size_t
delta64(uint8_t *out, const uint8_t *cur, const uint8_t *ref, uint64_t pmask, uint64_t pval)
{
	uint8_t *o = out + 1;
	unsigned wm = 0;

	for (unsigned w = 0; w < 8; w++) {
		uint64_t a, z, x;
		unsigned f;

		memcpy(&a, cur + 8 * w, 8);
		memcpy(&z, ref + 8 * w, 8);
		if (w == 0)	/* patched in a register: byte stores + a word load stall */
			z = (z & ~pmask) | pval;
		x = a ^ z;
		if (!x)
			continue;
		wm |= 1u << w;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		/* memory byte i is bits 8i..8i+7 of the load */
		f = (unsigned)__builtin_ctzll(x) >> 3;
		a >>= 8 * f;
		o[0] = (uint8_t)(0xffu << f);
		memcpy(o + 1, &a, 8);	/* room: GDAK_TRACE_SUB_MAX counts 9 per word */
		o += 1 + 8 - f;
#else
		for (f = 0; cur[8 * w + f] == ref[8 * w + f]; f++)
			;
		o[0] = (uint8_t)(0xffu << f);
		memcpy(o + 1, cur + 8 * w + f, 8 - f);
		o += 1 + 8 - f;
#endif
	}
	out[0] = (uint8_t)wm;
	return (size_t)(o - out);
}

static const uint8_t zero64[64];

static uint8_t *put_qpn(struct gdak_trace_buf *b, uint8_t *tag, uint32_t qpn)
{
	if (qpn == b->bqpn)
		return tag + 1;
	*tag |= GDAK_TRACE_SUB_QPN;
	trace_put32(tag + 1, qpn);
	b->bqpn = qpn;
	return tag + 5;
}

/* ---- runs (docs/TRACE.md "BATCH", REPEAT) ----------------------------- */

enum { RUN_MAX = 0xffff, REPEAT_MAX = 1 + 4 + 2 };

/* The pending run as one REPEAT sub-record: its records are counted here
 * (their sequence numbers are taken: nothing else is recorded while a run
 * is pending), its room was reserved when it began.  The previous WQE/CQE
 * is the run's last one now, which its progression's base holds. */
static void run_flush(struct gdak_trace_buf *b)
{
	uint8_t *tag, *p;

	if (!b->run_n)
		return;
	tag = b->data + b->used + b->blen;
	*tag = (uint8_t)(b->run_type | GDAK_TRACE_SUB_REPEAT);
	p = put_qpn(b, tag, b->run_qpn);
	trace_put16(p, (uint16_t)b->run_n);
	b->blen += (size_t)(p + 2 - tag);
	b->seq += b->run_n;
	b->bcount += b->run_n;
	if (b->run_type == GDAK_TREC_WQE) {
		b->wref_idx = b->wp.idx;
		b->wref_bbs = 1;
		b->wref_qpn = b->wp.key;
		b->wp.raw_stale = true;
		b->wp.conf = true;
	} else {
		b->cref_idx = b->cp.idx;
		b->cref_cqn = b->cp.key;
		b->cref_valid = true;
		b->cp.raw_stale = true;
		b->cp.conf = true;
	}
	b->run_n = 0;
	b->run_type = 0;
}

/* Is cur (64 bytes) the lanes v advanced by the step s?  One pass over the
 * 8 words, no branch per word. */
static inline __attribute__((always_inline)) bool match_generic(const uint64_t *v,
								const uint64_t *s,
								const uint8_t *cur)
{
	uint64_t d = 0;

#pragma GCC unroll 8
	for (unsigned i = 0; i < 8; i++)
		d |= (trace_lane(cur + 8 * i) - v[i]) ^ s[i];
	return !d;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define TRACE_AVX2 1
/* The same in two 32-byte vectors: a byte shuffle turns the big-endian
 * words into numbers (measured, whole fast path of a steady stream: 5.3 ns
 * per WQE against 8.5 with the loop above).  On a match, c0 and c1 hold
 * cur's lanes: the caller stores them as the new base. */
static inline __attribute__((always_inline, target("avx2"))) bool
lanes_next_avx2(const uint8_t *cur, __m256i v0, __m256i v1, __m256i s0, __m256i s1, __m256i *c0,
		__m256i *c1)
{
	const __m256i bswap = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
					       7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
	const __m256i *cv = (const __m256i *)(const void *)cur;
	__m256i d;

	*c0 = _mm256_shuffle_epi8(_mm256_loadu_si256(cv), bswap);
	*c1 = _mm256_shuffle_epi8(_mm256_loadu_si256(cv + 1), bswap);
	d = _mm256_or_si256(_mm256_xor_si256(_mm256_sub_epi64(*c0, v0), s0),
			    _mm256_xor_si256(_mm256_sub_epi64(*c1, v1), s1));
	return _mm256_testz_si256(d, d);
}

static inline __attribute__((always_inline, target("avx2"))) __m256i lanes_load(const uint64_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

static inline __attribute__((always_inline, target("avx2"))) bool
match_avx2(const uint64_t *v, const uint64_t *s, const uint8_t *cur, __m256i *c0, __m256i *c1)
{
	return lanes_next_avx2(cur, lanes_load(v), lanes_load(v + 4), lanes_load(s),
			       lanes_load(s + 4), c0, c1);
}
static bool trace_use_avx2;	/* set once, at the first open */
#endif

/* v advanced by s: the record a match accepted (no copy of it: gcc makes
 * a 64-byte copy `rep movs`, which cost more than the rest). */
static inline __attribute__((always_inline)) void run_advance(uint64_t *v, const uint64_t *s)
{
#pragma GCC unroll 8
	for (unsigned i = 0; i < 8; i++)
		v[i] += s[i];
}

/* Begin a run of type on qpn with a record that matched its progression
 * (ending the run pending): false if the record must be coded as a
 * sub-record of its own after all (the batch it opens starts afresh,
 * without the step).  The caller advances the progression. */
static __attribute__((noinline)) bool run_begin(struct gdak_trace_buf *b, uint8_t type,
						uint32_t qpn)
{
	run_flush(b);
	if (b->bopen && b->used + b->blen + REPEAT_MAX + 8 > b->cap)
		batch_close(b);
	if (!b->bopen) {
		batch_open(b, qpn);
		if (!(type == GDAK_TREC_WQE ? b->wp.step_ok : b->cp.step_ok))
			return false;
	}
	b->run_type = type;
	b->run_qpn = qpn;
	b->run_n = 1;
	return true;
}

/* The fast paths (x_fast_generic, x_fast_avx2): a WQE of one WQEBB and flags
 * 0, or a CQE, that is its progression's next: FAST_DONE when it went
 * on with the pending run, FAST_START when a run must begin with it
 * (run_begin(), outside: no call in here, so no stack frame), else FAST_NO.
 * The NIC thread's whole cost for a WQE of a steady stream. */
enum { FAST_NO, FAST_DONE, FAST_START };

/* The checks of a record against its progression p, but for the bytes:
 * key a QPN (WQEs) or CQN (CQEs), idx its index, mask 0xffff for WQEs. */
static inline __attribute__((always_inline)) bool prog_on(const struct prog *p, uint32_t key,
							  uint32_t idx, uint32_t mask)
{
	return p->step_ok && key == p->key && idx == ((p->idx + p->step_idx) & mask);
}

/* Whether a record that matched goes on with the pending run (a WQE run's
 * QP is its progression's key). */
static inline __attribute__((always_inline)) bool run_goes_on(const struct gdak_trace_buf *b,
							      uint8_t type, uint32_t qpn)
{
	return b->run_type == type && (type == GDAK_TREC_WQE || b->run_qpn == qpn) &&
	       b->run_n < RUN_MAX;
}

static inline __attribute__((always_inline)) int
fast_generic(struct gdak_trace_buf *b, struct prog *p, uint8_t type, uint32_t qpn, uint32_t key,
	     uint32_t idx, uint32_t mask, const uint8_t *bytes)
{
	if (!prog_on(p, key, idx, mask) || !match_generic(p->v, p->s, bytes))
		return FAST_NO;
	if (!run_goes_on(b, type, qpn))
		return FAST_START;
	b->run_n++;
	run_advance(p->v, p->s);
	p->idx = idx;
	return FAST_DONE;
}

/* Each instance with its constants: one call, six arguments in registers
 * (measured: the shared function's eight cost 2.7 ns per WQE). */
static int wqe_fast_generic(struct gdak_trace_buf *b, uint32_t qpn, uint32_t idx, const uint8_t *w)
{
	return fast_generic(b, &b->wp, GDAK_TREC_WQE, qpn, qpn, idx, 0xffff, w);
}

static int cqe_fast_generic(struct gdak_trace_buf *b, uint32_t qpn, uint32_t cqn, uint32_t idx,
			    const uint8_t *cqe)
{
	return fast_generic(b, &b->cp, GDAK_TREC_CQE, qpn, cqn, idx, 0xffffffff, cqe);
}

#ifdef TRACE_AVX2
static inline __attribute__((always_inline, target("avx2"))) int
fast_avx2(struct gdak_trace_buf *b, struct prog *p, uint8_t type, uint32_t qpn, uint32_t key,
	  uint32_t idx, uint32_t mask, const uint8_t *bytes)
{
	__m256i c0, c1;

	if (!prog_on(p, key, idx, mask) || !match_avx2(p->v, p->s, bytes, &c0, &c1))
		return FAST_NO;
	if (!run_goes_on(b, type, qpn))
		return FAST_START;
	b->run_n++;
	_mm256_storeu_si256((__m256i *)(void *)p->v, c0);
	_mm256_storeu_si256((__m256i *)(void *)(p->v + 4), c1);
	p->idx = idx;
	return FAST_DONE;
}

static __attribute__((target("avx2"))) int wqe_fast_avx2(struct gdak_trace_buf *b, uint32_t qpn,
							 uint32_t idx, const uint8_t *w)
{
	return fast_avx2(b, &b->wp, GDAK_TREC_WQE, qpn, qpn, idx, 0xffff, w);
}

static __attribute__((target("avx2"))) int cqe_fast_avx2(struct gdak_trace_buf *b, uint32_t qpn,
							 uint32_t cqn, uint32_t idx,
							 const uint8_t *cqe)
{
	return fast_avx2(b, &b->cp, GDAK_TREC_CQE, qpn, cqn, idx, 0xffffffff, cqe);
}
#define WQE_FAST(...) (trace_use_avx2 ? wqe_fast_avx2(__VA_ARGS__) : wqe_fast_generic(__VA_ARGS__))
#define CQE_FAST(...) (trace_use_avx2 ? cqe_fast_avx2(__VA_ARGS__) : cqe_fast_generic(__VA_ARGS__))
#else
#define WQE_FAST(...) wqe_fast_generic(__VA_ARGS__)
#define CQE_FAST(...) cqe_fast_generic(__VA_ARGS__)
#endif

/* gdak_trace_wqes(): how many of the n WQEs at w (consecutive slots and
 * indexes from idx) go on with the pending WQE run, checked in one loop with
 * the base and step in registers. */
static inline __attribute__((always_inline)) uint32_t wqes_limit(const struct gdak_trace_buf *b,
								uint32_t qpn, uint32_t idx,
								uint32_t n)
{
	if (!prog_on(&b->wp, qpn, idx, 0xffff) || b->wp.step_idx != 1 ||
	    b->run_type != GDAK_TREC_WQE || b->run_n >= RUN_MAX)
		return 0;
	return RUN_MAX - b->run_n < n ? RUN_MAX - b->run_n : n;
}

/* k of them went on with the run: the last one is the base now */
static inline __attribute__((always_inline)) uint32_t wqes_took(struct gdak_trace_buf *b,
								uint32_t idx, uint32_t k)
{
	if (k) {
		b->run_n += k;
		b->wp.idx = (idx + k - 1) & 0xffff;
	}
	return k;
}

static uint32_t wqes_fast_generic(struct gdak_trace_buf *b, uint32_t qpn, uint32_t idx,
				  const uint8_t *w, uint32_t n)
{
	uint32_t k = 0, lim = wqes_limit(b, qpn, idx, n);

	while (k < lim && match_generic(b->wp.v, b->wp.s, w + 64 * (size_t)k)) {
		run_advance(b->wp.v, b->wp.s);
		k++;
	}
	return wqes_took(b, idx, k);
}

#ifdef TRACE_AVX2
static __attribute__((target("avx2"))) uint32_t wqes_fast_avx2(struct gdak_trace_buf *b,
								uint32_t qpn, uint32_t idx,
								const uint8_t *w, uint32_t n)
{
	uint32_t k = 0, lim = wqes_limit(b, qpn, idx, n);
	__m256i v0, v1, s0, s1, c0, c1;

	if (!lim)
		return 0;
	v0 = lanes_load(b->wp.v);
	v1 = lanes_load(b->wp.v + 4);
	s0 = lanes_load(b->wp.s);
	s1 = lanes_load(b->wp.s + 4);
	for (; k < lim && lanes_next_avx2(w + 64 * (size_t)k, v0, v1, s0, s1, &c0, &c1); k++) {
		v0 = c0;	/* the base in registers through the stretch */
		v1 = c1;
	}
	if (k) {
		_mm256_storeu_si256((__m256i *)(void *)b->wp.v, v0);
		_mm256_storeu_si256((__m256i *)(void *)(b->wp.v + 4), v1);
	}
	return wqes_took(b, idx, k);
}
#define WQES_FAST(...) (trace_use_avx2 ? wqes_fast_avx2(__VA_ARGS__) : wqes_fast_generic(__VA_ARGS__))
#else
#define WQES_FAST(...) wqes_fast_generic(__VA_ARGS__)
#endif

static pthread_once_t simd_once = PTHREAD_ONCE_INIT;

static void simd_init(void)
{
#ifdef TRACE_AVX2
	__builtin_cpu_init();
	trace_use_avx2 = __builtin_cpu_supports("avx2");
#endif
}

void gdak_trace_inject_simd(int on)
{
	pthread_once(&simd_once, simd_init);
#ifdef TRACE_AVX2
	trace_use_avx2 = on && __builtin_cpu_supports("avx2");
#else
	(void)on;
#endif
}

static void lanes_put(uint8_t *p, const uint64_t *v)
{
	for (unsigned i = 0; i < 8; i++)
		trace_put_lane(p + 8 * i, v[i]);
}

static void batch_doorbell(struct gdak_trace_buf *b, uint32_t qpn, uint8_t handler,
			   uint16_t pi, const void *reg, uint32_t reg_len, uint8_t flags)
{
	uint8_t *tag = batch_sub(b, qpn), *p;

	*tag = GDAK_TREC_DOORBELL;
	p = put_qpn(b, tag, qpn);
	trace_put16(p, pi);
	p[2] = handler;
	p[3] = flags;
	p[4] = (uint8_t)reg_len;
	if (reg_len)
		memcpy(p + 5, reg, reg_len);
	b->blen += (size_t)(p + 5 + reg_len - tag);
}

/* A WQE that is not the next of the progression (or could not join the
 * run): its own sub-record, delta-coded against the previous WQE.  off: it
 * is on the progression's place but off it - a one-off (a signaled WQE in
 * an unsignaled stream) - so the progression steps past it and the next
 * WQE may go on with the run. */
static __attribute__((noinline)) void batch_wqe_sub(struct gdak_trace_buf *b, uint32_t qpn,
						    uint16_t idx, const uint8_t *w, uint32_t nbb,
						    uint16_t flags, bool off)
{
	uint8_t *tag = batch_sub(b, qpn), *p, pred[64];
	const uint8_t *ref0;

	off = off && b->wp.step_ok;	/* a batch that starts afresh has no step */
	if (off) {	/* coded against what the progression predicted */
		for (unsigned i = 0; i < 8; i++)
			trace_put_lane(pred + 8 * i, b->wp.v[i] + b->wp.s[i]);
		ref0 = pred;
	} else {
		if (b->wp.raw_stale)	/* the run's last WQE, from its lanes */
			lanes_put(b->wref, b->wp.v);
		ref0 = b->wref_bbs ? b->wref : zero64;
	}
	b->wp.raw_stale = false;	/* wref is this WQE below */
	*tag = (uint8_t)(GDAK_TREC_WQE | (off ? GDAK_TRACE_SUB_OFF : 0));
	p = put_qpn(b, tag, qpn);
	if (b->wref_bbs == 1 && nbb == 1 && !flags && qpn == b->wref_qpn &&
	    idx == (uint16_t)(b->wref_idx + 1)) {
		*tag |= GDAK_TRACE_SUB_PRED;
	} else {
		trace_put16(p, idx);
		p[2] = (uint8_t)nbb;
		p[3] = (uint8_t)flags;
		p += 4;
	}
	/* the ctrl segment's WQE index (bytes 1..2, big-endian) is known from
	 * the sub-record: compare against it */
	{
		const uint8_t pm[8] = {0, 0xff, 0xff}, pv[8] = {0, (uint8_t)(idx >> 8), (uint8_t)idx};
		uint64_t pmask, pval;

		memcpy(&pmask, pm, 8);
		memcpy(&pval, pv, 8);
		if (nbb)
			p += delta64(p, w, ref0, pmask, pval);
		for (uint32_t j = 1; j < nbb; j++)
			p += delta64(p, w + 64 * j, j < b->wref_bbs ? b->wref + 64 * j : zero64, 0, 0);
	}
	b->blen += (size_t)(p - tag);
	/* the progression: stepped past a one-off, or restarted here */
	if (off) {
		for (unsigned i = 0; i < 8; i++)
			b->wp.v[i] += b->wp.s[i];
		b->wp.idx = (uint16_t)(b->wp.idx + b->wp.step_idx);
		b->wp.conf = false;
	} else if (nbb == 1 && !flags) {
		for (unsigned i = 0; i < 8; i++) {
			uint64_t c = trace_lane(w + 8 * i);

			b->wp.s[i] = c - b->wp.v[i];
			b->wp.v[i] = c;
		}
		b->wp.step_ok = b->wp.base_ok && qpn == b->wp.key;
		b->wp.step_idx = (uint16_t)(idx - b->wp.idx);
		b->wp.idx = idx;
		b->wp.key = qpn;
		b->wp.base_ok = true;
		b->wp.conf = false;
	} else {
		b->wp.base_ok = b->wp.step_ok = false;
	}
	/* fixed-size copies: a variable-length memcpy becomes `rep movsq`,
	 * whose start-up cost was a third of this function */
	for (uint32_t j = 0; j < nbb; j++)
		memcpy(b->wref + 64 * j, w + 64 * j, 64);
	b->wref_bbs = nbb;
	b->wref_idx = idx;
	b->wref_qpn = qpn;
}

/* A record through its progression's fast path: true when it went into a
 * run; else *off says whether its own sub-record is OFF (it is at the
 * progression's place, and a record matched the step before it - maybe in
 * the run still pending). */
static inline __attribute__((always_inline)) bool
prog_record(struct gdak_trace_buf *b, struct prog *p, uint8_t type, uint32_t qpn, uint32_t key,
	    uint32_t idx, uint32_t mask, const uint8_t *bytes, bool *off)
{
	int f = type == GDAK_TREC_WQE ? WQE_FAST(b, qpn, idx, bytes) :
					 CQE_FAST(b, qpn, key, idx, bytes);

	if (f == FAST_DONE)
		return true;
	if (f == FAST_START && run_begin(b, type, qpn)) {
		run_advance(p->v, p->s);
		p->idx = idx;
		return true;
	}
	*off = prog_on(p, key, idx, mask) && (p->conf || (b->run_n && b->run_type == type));
	return false;
}

/* A WQE: counted into the run when it is the progression's next, else a
 * sub-record. */
static inline void batch_wqe(struct gdak_trace_buf *b, uint32_t qpn, uint16_t idx,
			     const uint8_t *w, uint32_t nbb, uint16_t flags)
{
	bool off = false;

	if (nbb == 1 && !flags &&
	    prog_record(b, &b->wp, GDAK_TREC_WQE, qpn, qpn, idx, 0xffff, w, &off))
		return;
	batch_wqe_sub(b, qpn, idx, w, nbb, flags, off);
}

/* As batch_wqe_sub, for a CQE. */
static __attribute__((noinline)) void batch_cqe_sub(struct gdak_trace_buf *b, uint32_t qpn,
						    uint32_t cqn, uint32_t cq_index,
						    const uint8_t *cqe, bool off)
{
	uint8_t *tag = batch_sub(b, qpn), *p, pred[64];
	const uint8_t *ref;

	off = off && b->cp.step_ok;
	if (off) {
		for (unsigned i = 0; i < 8; i++)
			trace_put_lane(pred + 8 * i, b->cp.v[i] + b->cp.s[i]);
		ref = pred;
	} else {
		if (b->cp.raw_stale)
			lanes_put(b->cref, b->cp.v);
		ref = b->cref_valid ? b->cref : zero64;
	}
	b->cp.raw_stale = false;
	*tag = (uint8_t)(GDAK_TREC_CQE | (off ? GDAK_TRACE_SUB_OFF : 0));
	p = put_qpn(b, tag, qpn);
	if (b->cref_valid && cqn == b->cref_cqn && cq_index == b->cref_idx + 1) {
		*tag |= GDAK_TRACE_SUB_PRED;
	} else {
		trace_put32(p, cqn);
		trace_put32(p + 4, cq_index);
		p += 8;
	}
	p += delta64(p, cqe, ref, 0, 0);
	b->blen += (size_t)(p - tag);
	if (off) {
		for (unsigned i = 0; i < 8; i++)
			b->cp.v[i] += b->cp.s[i];
		b->cp.idx += b->cp.step_idx;
		b->cp.conf = false;
	} else {
		for (unsigned i = 0; i < 8; i++) {
			uint64_t c = trace_lane(cqe + 8 * i);

			b->cp.s[i] = c - b->cp.v[i];
			b->cp.v[i] = c;
		}
		b->cp.step_ok = b->cp.base_ok && cqn == b->cp.key;
		b->cp.step_idx = cq_index - b->cp.idx;
		b->cp.idx = cq_index;
		b->cp.key = cqn;
		b->cp.base_ok = true;
		b->cp.conf = false;
	}
	memcpy(b->cref, cqe, 64);
	b->cref_valid = true;
	b->cref_cqn = cqn;
	b->cref_idx = cq_index;
}

static inline void batch_cqe(struct gdak_trace_buf *b, uint32_t qpn, uint32_t cqn,
			     uint32_t cq_index, const uint8_t *cqe)
{
	bool off;

	if (!prog_record(b, &b->cp, GDAK_TREC_CQE, qpn, cqn, cq_index, 0xffffffff, cqe, &off))
		batch_cqe_sub(b, qpn, cqn, cq_index, cqe, off);
}

void gdak_trace_batch_begin(struct gdak_trace_buf *b)
{
	if (b)
		b->in_batch = true;
}

void gdak_trace_batch_end(struct gdak_trace_buf *b)
{
	if (!b)
		return;
	b->in_batch = false;
	if (b->bopen)
		batch_close(b);
}

static uint32_t str_len(const char *s)
{
	size_t n = s ? strnlen(s, GDAK_TRACE_MAX_STR) : 0;
	return (uint32_t)n;
}

void gdak_trace_doorbell(struct gdak_trace_buf *b, uint32_t qpn, uint8_t handler,
			 uint16_t dbrec_pi, const void *reg, uint32_t reg_len)
{
	struct rec r;
	uint8_t flags = 0;

	if (!b)
		return;
	if (!reg)
		reg_len = 0;
	if (reg_len > GDAK_TRACE_MAX_REG) {
		reg_len = GDAK_TRACE_MAX_REG;
		flags |= GDAK_TRACE_F_TRUNC;
	}
	if (b->in_batch) {
		batch_doorbell(b, qpn, handler, dbrec_pi, reg, reg_len, flags);
		return;
	}
	rec_begin(b, &r, GDAK_TREC_DOORBELL, qpn, 8 + reg_len);
	trace_put16(r.body, dbrec_pi);
	r.body[2] = handler;
	r.body[3] = flags;
	trace_put16(r.body + 4, (uint16_t)reg_len);
	trace_put16(r.body + 6, 0);
	if (reg_len)
		memcpy(r.body + 8, reg, reg_len);
	rec_end(b, &r);
}

static void wqe_rec(struct gdak_trace_buf *b, uint8_t type, uint32_t qpn, uint16_t idx,
		    const void *bytes, uint32_t len, uint32_t max)
{
	struct rec r;
	uint16_t flags = 0;

	if (!bytes)
		len = 0;
	if (len > max) {
		len = max;
		flags |= GDAK_TRACE_F_TRUNC;
	}
	rec_begin(b, &r, type, qpn, 8 + len);
	trace_put16(r.body, idx);
	trace_put16(r.body + 2, flags);
	trace_put32(r.body + 4, len);
	if (len)
		memcpy(r.body + 8, bytes, len);
	rec_end(b, &r);
}

void gdak_trace_wqe(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
		    const void *wqebbs, uint32_t n_wqebb)
{
	if (!b)
		return;
	if (n_wqebb > GDAK_TRACE_MAX_WQEBB + 1)
		n_wqebb = GDAK_TRACE_MAX_WQEBB + 1; /* flagged TRUNC below */
	if (b->in_batch) {
		uint16_t flags = 0;

		if (!wqebbs)
			n_wqebb = 0;
		if (n_wqebb > GDAK_TRACE_MAX_WQEBB) {
			n_wqebb = GDAK_TRACE_MAX_WQEBB;
			flags = GDAK_TRACE_F_TRUNC;
		}
		batch_wqe(b, qpn, wqe_index, wqebbs, n_wqebb, flags);
		return;
	}
	wqe_rec(b, GDAK_TREC_WQE, qpn, wqe_index, wqebbs, n_wqebb * 64,
		GDAK_TRACE_MAX_WQEBB * 64);
}

void gdak_trace_wqes(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
		     const void *wqes, uint32_t n)
{
	const uint8_t *w = wqes;
	uint32_t idx = wqe_index;

	if (!b || !w)
		return;
	while (n) {
		/* the rest of a run in one loop; a WQE that is not (or begins
		 * the run) the one-by-one way */
		uint32_t k = b->in_batch ? WQES_FAST(b, qpn, idx, w, n) : 0;

		if (!k) {
			gdak_trace_wqe(b, qpn, (uint16_t)idx, w, 1);
			k = 1;
		}
		idx = (idx + k) & 0xffff;
		w += 64 * (size_t)k;
		n -= k;
	}
}

void gdak_trace_recv_wqe(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
			 const void *wqe, uint32_t len)
{
	if (!b)
		return;
	wqe_rec(b, GDAK_TREC_RECV_WQE, qpn, wqe_index, wqe, len, GDAK_TRACE_MAX_RECV);
}

void gdak_trace_cqe(struct gdak_trace_buf *b, uint32_t qpn, uint32_t cqn, uint32_t cq_index,
		    const void *cqe64)
{
	struct rec r;

	if (!b)
		return;
	if (b->in_batch) {
		batch_cqe(b, qpn, cqn, cq_index, cqe64 ? cqe64 : zero64);
		return;
	}
	rec_begin(b, &r, GDAK_TREC_CQE, qpn, 8 + 64);
	trace_put32(r.body, cqn);
	trace_put32(r.body + 4, cq_index);
	if (cqe64)
		memcpy(r.body + 8, cqe64, 64);
	else
		memset(r.body + 8, 0, 64);
	rec_end(b, &r);
}

/* VIOLATION and FAULT share a body: index, syndrome, name, text. */
static void named_rec(struct gdak_trace_buf *b, uint8_t type, uint32_t qpn, uint16_t idx,
		      uint8_t syndrome, const char *name, const char *text)
{
	uint32_t nl = str_len(name), tl = str_len(text);
	struct rec r;

	rec_begin(b, &r, type, qpn, 8 + nl + tl);
	trace_put16(r.body, idx);
	r.body[2] = syndrome;
	r.body[3] = 0;
	trace_put16(r.body + 4, (uint16_t)nl);
	trace_put16(r.body + 6, (uint16_t)tl);
	memcpy(r.body + 8, name ? name : "", nl);
	memcpy(r.body + 8 + nl, text ? text : "", tl);
	rec_end(b, &r);
}

void gdak_trace_violation(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
			  const char *rule, uint8_t syndrome, const char *text)
{
	if (b)
		named_rec(b, GDAK_TREC_VIOLATION, qpn, wqe_index, syndrome, rule, text);
}

void gdak_trace_fault(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
		      const char *kind, const char *text)
{
	if (b)
		named_rec(b, GDAK_TREC_FAULT, qpn, wqe_index, 0, kind, text);
}

void gdak_trace_qp(struct gdak_trace_buf *b, uint32_t qpn, uint32_t peer_qpn,
		   const char *transport, const char *text)
{
	uint32_t nl = str_len(transport), tl = str_len(text);
	struct rec r;

	if (!b)
		return;
	rec_begin(b, &r, GDAK_TREC_QP, qpn, 8 + nl + tl);
	trace_put32(r.body, peer_qpn);
	trace_put16(r.body + 4, (uint16_t)nl);
	trace_put16(r.body + 6, (uint16_t)tl);
	memcpy(r.body + 8, transport ? transport : "", nl);
	memcpy(r.body + 8 + nl, text ? text : "", tl);
	rec_end(b, &r);
}

void gdak_trace_note(struct gdak_trace_buf *b, const char *text)
{
	uint32_t tl = str_len(text);
	struct rec r;

	if (!b)
		return;
	rec_begin(b, &r, GDAK_TREC_NOTE, GDAK_TRACE_QPN_NONE, 8 + tl);
	trace_put16(r.body, (uint16_t)tl);
	memset(r.body + 2, 0, 6);
	memcpy(r.body + 8, text ? text : "", tl);
	rec_end(b, &r);
}

/* ---- packets ------------------------------------------------------- */

enum {
	IP_LEN = GDAK_ROCE_IPV4_LEN,
	UDP_LEN = GDAK_ROCE_UDP_LEN,
	HDRS = GDAK_ROCE_FRAME_HDRS
};

void gdak_trace_packet(struct gdak_trace_buf *b, int dir, uint32_t src_ip, uint32_t dst_ip,
		       uint16_t src_port, uint16_t dst_port, const void *udp_payload, uint32_t len)
{
	gdak_trace_packet_id(b, dir, src_ip, dst_ip, src_port, dst_port, udp_payload, len, 0);
}

void gdak_trace_packet_id(struct gdak_trace_buf *b, int dir, uint32_t src_ip, uint32_t dst_ip,
			  uint16_t src_port, uint16_t dst_port, const void *udp_payload,
			  uint32_t len, uint16_t ip_id)
{
	const struct roce_path path = {
		.sip = src_ip, .dip = dst_ip, .sport = src_port, .dport = dst_port
	};
	uint32_t keep, orig;
	size_t frame, total;
	uint8_t *p, *f, *udp, *o;
	uint64_t ts;

	if (!b)
		return;
	if (b->bopen)
		batch_close(b);
	if (!udp_payload)
		len = 0;
	keep = len > GDAK_TRACE_MAX_PKT ? GDAK_TRACE_MAX_PKT : len;
	orig = len > 0xffff - IP_LEN - UDP_LEN ? 0xffff - IP_LEN - UDP_LEN : len;
	frame = HDRS + keep;
	/* EPB: 28 fixed, frame, epb_flags (8), custom option (4 + 8), end (4), trailer (4) */
	total = 28 + pad4(frame) + 8 + 12 + 4 + 4;
	buf_make_room(b, total);
	p = b->data + b->used;
	ts = now_ns(b->t);
	b->seq++;	/* packets count in the thread's sequence too */

	trace_put32(p, GDAK_PCAPNG_EPB);
	trace_put32(p + 4, (uint32_t)total);
	trace_put32(p + 8, 0); /* interface 0: Ethernet */
	trace_put32(p + 12, (uint32_t)(ts >> 32));
	trace_put32(p + 16, (uint32_t)ts);
	trace_put32(p + 20, (uint32_t)frame);
	trace_put32(p + 24, (uint32_t)(HDRS + orig));

	f = p + 28;
	gdak_roce_frame_hdrs(f, &path, orig, ip_id);
	udp = f + GDAK_ROCE_ETH_LEN + IP_LEN;
	if (keep)
		memcpy(udp + UDP_LEN, udp_payload, keep);
	memset(f + frame, 0, pad4(frame) - frame);

	o = p + 28 + pad4(frame);
	trace_put16(o, GDAK_PCAPNG_EPB_FLAGS);
	trace_put16(o + 2, 4);
	trace_put32(o + 4, dir ? GDAK_PCAPNG_EPB_INBOUND : GDAK_PCAPNG_EPB_OUTBOUND);
	trace_put16(o + 8, GDAK_PCAPNG_OPT_CUSTOM_BIN);
	trace_put16(o + 10, 8);
	trace_put32(o + 12, GDAK_TRACE_PEN);
	trace_put32(o + 16, b->thread_id);
	trace_put32(o + 20, 0); /* opt_endofopt */
	trace_put32(o + 24, (uint32_t)total);
	buf_commit(b, total);
	__atomic_fetch_add(&b->t->packets, 1, __ATOMIC_RELAXED);
}

/* ---- file, buffers, statistics -------------------------------------- */

static size_t put_opt(uint8_t *p, uint16_t code, const void *v, uint16_t len)
{
	trace_put16(p, code);
	trace_put16(p + 2, len);
	memcpy(p + 4, v, len);
	memset(p + 4 + len, 0, pad4(len) - len);
	return 4 + pad4(len);
}

static int write_headers(struct gdak_trace *t)
{
	uint8_t blk[256];
	size_t n;
	int rc;
	static const char appl[] = "gdak " GDAK_VERSION_STRING;
	static const char ifname[] = "gdak-roce";
	uint8_t tsresol = 9;

	/* SHB: BOM, version 1.0, section length unknown (-1) */
	trace_put32(blk, GDAK_PCAPNG_SHB);
	trace_put32(blk + 8, GDAK_PCAPNG_BOM);
	trace_put16(blk + 12, 1);
	trace_put16(blk + 14, 0);
	trace_put64(blk + 16, UINT64_MAX);
	n = 24;
	n += put_opt(blk + n, GDAK_PCAPNG_SHB_USERAPPL, appl, sizeof(appl) - 1);
	trace_put32(blk + n, 0);
	n += 4 + 4;
	trace_put32(blk + 4, (uint32_t)n);
	trace_put32(blk + n - 4, (uint32_t)n);
	if ((rc = file_write(t, blk, n)))
		return rc; /* the file's own error: ENOSPC, EBADF, ... */

	/* IDB 0: Ethernet, no snaplen limit, nanosecond timestamps */
	trace_put32(blk, GDAK_PCAPNG_IDB);
	trace_put16(blk + 8, GDAK_PCAPNG_LINKTYPE_ETHERNET);
	trace_put16(blk + 10, 0);
	trace_put32(blk + 12, 0);
	n = 16;
	n += put_opt(blk + n, GDAK_PCAPNG_IF_NAME, ifname, sizeof(ifname) - 1);
	n += put_opt(blk + n, GDAK_PCAPNG_IF_TSRESOL, &tsresol, 1);
	trace_put32(blk + n, 0);
	n += 4 + 4;
	trace_put32(blk + 4, (uint32_t)n);
	trace_put32(blk + n - 4, (uint32_t)n);
	return file_write(t, blk, n);
}

/*
 * Open the trace file for writing, truncated, unless another trace writer
 * has it open now: one process can hold two copies of this writer (a gdak
 * program on the hardware backend under gdak-run loads gdak's libibverbs,
 * which carries its own NIC model and writer, and both read GDAK_TRACE),
 * and two writers on one file corrupt it.  Each writer holds an exclusive
 * flock on its file; one that finds the file locked writes PATH-2 (-3, ...)
 * instead and says so.  Where flock is not available (pipes, some network
 * file systems) the file is used as before.
 */
static int open_exclusive(const char *path)
{
	char alt[4096];
	const char *p = path;

	for (int n = 1; n <= 16; n++) {
		int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		struct stat st;

		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !flock(fd, LOCK_EX | LOCK_NB) ||
		    errno != EWOULDBLOCK) {
			if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0)) {
				int e = -errno;
				close(fd);
				return e;
			}
			if (p != path)
				GDAK_WARN("trace", 0,
					  "trace file %s is being written by another "
					  "gdak trace writer: this one writes %s",
					  path, p);
			return fd;
		}
		close(fd);
		snprintf(alt, sizeof(alt), "%s-%d", path, n + 1);
		p = alt;
	}
	return -EBUSY;
}

int gdak_trace_open_opts(const char *path, const struct gdak_trace_opts *opts,
			 struct gdak_trace **tp)
{
	struct gdak_trace *t;
	/* choices: real|fake, thread|inline, wait|drop (a bad value was
	 * reported by the table; the first choice stands) */
	int fake_clk = 0, inline_wr = 0, drop_full = 0;
	struct stat st;
	int rc;

	if (!tp)
		return -EINVAL;
	*tp = NULL;
	pthread_once(&simd_once, simd_init);
	if (!path || !*path || !strcmp(path, "-")) {
		GDAK_ERR("trace", 0, "trace path '%s' is not a file name", path ? path : "(null)");
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->buf_size = opts && opts->buf_size ? opts->buf_size : DEFAULT_BUF;
	if (t->buf_size < MIN_BUF)
		t->buf_size = MIN_BUF;
	if (t->buf_size > UINT32_MAX / 2)
		t->buf_size = UINT32_MAX / 2; /* the byte count is packed in 32 bits */
	if (gdak_env_choice("GDAK_TRACE_CLOCK", &fake_clk) < 0)
		fake_clk = 0;
	if (gdak_env_choice("GDAK_TRACE_WRITER", &inline_wr) < 0)
		inline_wr = 0;
	if (gdak_env_choice("GDAK_TRACE_FULL", &drop_full) < 0)
		drop_full = 0;
	t->fake_clock = (opts && opts->fake_clock) || fake_clk;
	t->nchunks = opts && opts->chunks ? opts->chunks : DEFAULT_CHUNKS;
	if (!(opts && opts->chunks) && inline_wr)
		t->nchunks = 1;
	t->lossy = (opts && opts->lossy) || drop_full;
	if (t->nchunks > MAX_CHUNKS)
		t->nchunks = MAX_CHUNKS;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->work, NULL);
	pthread_cond_init(&t->done, NULL);
	t->q_tail = &t->q;
	t->fd = open_exclusive(path);
	if (t->fd < 0) {
		rc = t->fd;
		GDAK_ERR("trace", 0, "cannot open trace file %s: %s", path, strerror(-rc));
		goto fail;
	}
	t->regular = !fstat(t->fd, &st) && S_ISREG(st.st_mode);
	t->generation = atomic_fetch_add(&generations, 1) + 1;
	rc = write_headers(t);
	if (rc) {
		GDAK_ERR("trace", 0, "cannot write the pcapng headers to %s: %s", path,
			 strerror(-rc));
		goto fail_fd;
	}
	if (t->nchunks > 1) {
		rc = -pthread_create(&t->io, NULL, io_main, t);
		if (rc) {
			GDAK_ERR("trace", 0, "cannot start the trace I/O thread: %s", strerror(-rc));
			goto fail_fd;
		}
		t->io_on = true;
		t->pid = getpid();
	}
	reg_add(t);
	*tp = t;
	return 0;
fail_fd:
	close(t->fd);
fail:
	pthread_cond_destroy(&t->done);
	pthread_cond_destroy(&t->work);
	pthread_mutex_destroy(&t->lock);
	free(t);
	return rc;
}

int gdak_trace_open(const char *path, struct gdak_trace **t)
{
	return gdak_trace_open_opts(path, NULL, t);
}

int gdak_trace_open_env(struct gdak_trace **t)
{
	const char *p = gdak_env_raw("GDAK_TRACE");

	if (!t)
		return -EINVAL;
	*t = NULL;
	if (!p)
		return 0;
	return gdak_trace_open(p, t);
}

struct gdak_trace_buf *gdak_trace_thread_buf(struct gdak_trace *t, uint32_t thread_id)
{
	struct gdak_trace_buf *b;
	struct chunk *chunks;

	if (!t)
		return NULL;
	pthread_mutex_lock(&t->lock);
	for (b = t->bufs; b; b = b->next)
		if (b->thread_id == thread_id)
			goto out;
	b = calloc(1, sizeof(*b));
	chunks = calloc(t->nchunks, sizeof(*chunks));
	if (!b || !chunks)
		goto nomem;
	b->all = chunks;
	b->nchunks = t->nchunks;
	for (unsigned i = 0; i < t->nchunks; i++) {
		chunks[i].owner = b;
		chunks[i].data = malloc(t->buf_size);
		if (!chunks[i].data)
			goto nomem;
		if (i) {
			chunks[i].next = b->free;
			b->free = &chunks[i];
		}
	}
	b->cur = &chunks[0];
	b->data = chunks[0].data;
	b->t = t;
	b->thread_id = thread_id;
	b->cap = t->buf_size;
	b->next = t->bufs;
	t->bufs = b;
out:
	pthread_mutex_unlock(&t->lock);
	return b;
nomem:
	GDAK_ERR("trace", thread_id, "no memory for %u trace buffers of %zu bytes", t->nchunks,
		 t->buf_size);
	for (unsigned i = 0; chunks && i < t->nchunks; i++)
		free(chunks[i].data);
	free(chunks);
	free(b);
	b = NULL;
	goto out;
}

int gdak_trace_flush(struct gdak_trace *t)
{
	int rc = 0;

	if (!t)
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	wait_io_idle(t);
	rc = t->io_err;
	t->io_err = 0;
	for (struct gdak_trace_buf *b = t->bufs; b; b = b->next) {
		int r = flush_buf_locked(b);
		if (r && !rc)
			rc = r;
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

uint64_t gdak_trace_generation(const struct gdak_trace *t) { return t ? t->generation : 0; }

void gdak_trace_get_stats(struct gdak_trace *t, struct gdak_trace_stats *st)
{
	if (!t || !st)
		return;
	pthread_mutex_lock(&t->lock);
	st->records = t->records;
	st->bytes = atomic_load_explicit(&t->off, memory_order_relaxed);
	st->lost = t->lost_recs;
	st->flushes = t->flushes;
	st->waits = t->waits;
	st->dropped = t->dropped;
	pthread_mutex_unlock(&t->lock);
}

void gdak_trace_inject_io_pause(struct gdak_trace *t, int pause)
{
	pthread_mutex_lock(&t->lock);
	t->io_paused = pause;
	pthread_cond_broadcast(&t->work);
	pthread_mutex_unlock(&t->lock);
}

void gdak_trace_inject_write_errors(struct gdak_trace *t, unsigned n)
{
	atomic_store(&t->inject_errors, n);
}

/* Writers must have stopped (the NIC threads joined) before this. */
void gdak_trace_close(struct gdak_trace *t)
{
	struct gdak_trace_buf *b, *next;
	uint8_t blk[128], body[56];
	size_t n;

	if (!t)
		return;
	reg_del(t);
	/* the writers have stopped: a batch one left open is theirs no more */
	pthread_mutex_lock(&t->lock);
	if (io_here(t)) {
		t->io_stop = true;
		t->io_paused = false;
		pthread_cond_signal(&t->work);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->io, NULL);	/* it writes what is queued first */
		pthread_mutex_lock(&t->lock);
		t->io_on = false;
	}
	for (b = t->bufs; b; b = b->next) {
		b->in_batch = false;
		if (b->bopen)
			batch_close_locked(b, true);
	}
	pthread_mutex_unlock(&t->lock);
	gdak_trace_flush(t);
	pthread_mutex_lock(&t->lock);
	report_lost(t);
	trace_put64(body, t->records);
	trace_put64(body + 8, atomic_load_explicit(&t->off, memory_order_relaxed));
	trace_put64(body + 16, t->lost_recs);
	trace_put64(body + 24, t->flushes);
	trace_put64(body + 32, __atomic_load_n(&t->packets, __ATOMIC_RELAXED));
	trace_put64(body + 40, t->waits);
	trace_put64(body + 48, t->dropped);
	n = build_writer_rec(t, blk, GDAK_TREC_STATS, body, sizeof(body));
	if (file_write(t, blk, n))
		GDAK_ERR("trace", 0, "cannot write the closing statistics");
	if (t->lost_recs)
		GDAK_WARN("trace", 0, "%llu trace records are not in the file (%llu dropped by the "
			  "lossy mode, the rest failed writes); LOST records say where",
			  (unsigned long long)t->lost_recs, (unsigned long long)t->dropped);
	if (t->waits)
		GDAK_INFO("trace", 0, "recording threads waited %llu times for the trace file",
			  (unsigned long long)t->waits);
	pthread_mutex_unlock(&t->lock);
	if (close(t->fd))
		GDAK_ERR("trace", 0, "closing the trace file: %s", strerror(errno));
	for (b = t->bufs; b; b = next) {
		next = b->next;
		for (unsigned i = 0; i < b->nchunks; i++)
			free(b->all[i].data);
		free(b->all);
		free(b);
	}
	pthread_cond_destroy(&t->done);
	pthread_cond_destroy(&t->work);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
