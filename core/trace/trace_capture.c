/* SPDX-License-Identifier: MIT */
/*
 * trace_capture.c - the ring capture (gdak/capture.h, docs/CAPTURE.md):
 * the WQE/CQE stream reconstructed from the rings, for backends whose NIC
 * tells nobody what it fetched.
 *
 * One pass over a QP:
 *   send queue   read the send doorbell record (dbrec[1], the producer
 *                index; the CPU_PROXY handler's 64-bit proxy word instead),
 *                note a change as a DOORBELL record, stage every WQEBB between
 *                the last captured index and it, read the producer index
 *                again, and walk the staged WQEBBs WQE by WQE (size from the
 *                ctrl segment's DS count) into WQE records.
 *   CQs          from the next CQE number not yet captured, copy each CQE
 *                whose owner bit says "written this pass" into a CQE record.
 *
 * Losses.  Slot s of a ring of n entries is reused by entry i + n once the
 * producer (SQ) or the device's consumer index (CQ: the HCA may write CQE
 * i + n only after CQE i was consumed) has passed i + n or i respectively.
 * Everything the capture could not copy before its slot was reused is
 * counted exactly and written as a loss record; after a send-queue loss the
 * walk resynchronises on the next WQEBB that holds a ctrl segment for its own
 * index and QP (PRM "Send WQE ctrl segment": wqe_index, qpn), counting the
 * WQEBBs it skipped as lost too.
 *
 * Locking: each capture has one mutex, held for a whole pass and by every
 * call that changes its QP list, so a QP removed from a capture is never
 * read again.  The registry of captures (for the backends' destroy/close
 * hooks) has its own lock, always taken before a capture's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gdak/mlx5.h>
#include <gdak/trace.h>
#include <gdak/dev/types.h>
#include <gdak/trace_format.h>

#include <gdak/env.h>

#include "capture_int.h"
#include "gdak_backend.h"
#include "gdak_log.h"

#define MIN_SLEEP_NS 20000ull		/* after a pass that found something */
#define DEF_MAX_SLEEP_NS 1000000ull	/* idle back-off cap; $GDAK_CAPTURE_POLL_US */
#define CQ_CHUNK 64u			/* CQEs staged per GPU copy */
#define FLUSH_NS 100000000ull		/* records reach the file within this while busy */

/*
 * Losses are FAULT records of kind "capture_lost" naming the ring, the count
 * and the first index: LOST records are the writer's own count of records
 * that did not reach the file, a different thing.  gdak-trace --errors shows
 * them.
 */

struct cap_cq {
	const char *name;	/* "scq" / "rcq" */
	const struct gdak_dev_cq *dcq;	/* its descriptor (host memory) */
	const uint8_t *cqes;
	const uint32_t *dbrec;
	uint8_t gpu, db_gpu;	/* cqes / dbrec in GPU memory */
	uint32_t ncqe;
	uint32_t cqn;
	uint64_t ci;		/* next CQE number to capture */
	uint64_t lost, lost_first; /* not yet written as a loss record */
	/* GPU rings: CQEs [stage_base, stage_base + stage_n) staged: owner
	 * bytes from the first read, bodies from the second (fetch_cqe) */
	uint8_t *owners, *stage;
	int twice;		/* the second read was made */
	uint64_t stage_base;
	uint32_t stage_n;
	uint64_t stage_ci;	/* the device's consumer index read after staging */
};

struct cap_qp {
	struct cap_qp *next;
	struct gdak_qp *qp;	/* NULL when added as a bare descriptor */
	const struct gdak_dev_qp *dqp;
	uint32_t qpn;
	uint8_t handler;
	uint8_t sq_gpu, db_gpu;	/* sq_buf / dbrec in GPU memory */
	int any_gpu;		/* some ring of the QP is: stage in pinned memory */
	const uint8_t *sq_buf;
	uint32_t sq_cnt;
	const uint32_t *dbrec;
	const uint64_t *proxy_pi;
	uint64_t pi_seen;	/* producer index last observed */
	uint64_t sq_next;	/* next WQEBB to capture */
	int resync;		/* after a loss: the next WQE boundary is unknown */
	uint64_t lost, lost_first;
	uint8_t *stage;		/* sq_cnt WQEBBs (+ GPU: CQ stages, a scratch word) */
	uint32_t *scratch;	/* GPU: where doorbell records are copied to */
	struct cap_cq cq[2];
	int ncq;
};

struct gdak_capture {
	struct gdak_capture *next; /* registry */
	struct gdak_ctx *ctx;
	unsigned flags;
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* the thread's sleep; stop and pause requests */
	pthread_cond_t parked_cv;
	pthread_t thread;
	int have_thread;
	int stop, paused, parked;
	int dead;		/* stopped, file complete (ctx closed or close) */
	pid_t pid;		/* the process its thread runs in */
	uint64_t max_sleep_ns;
	struct gdak_trace *trace;
	struct gdak_trace_buf *buf;
	struct cap_qp *qps;
	struct cap_cuda *cuda;
	struct gdak_capture_stats st;
	int err;		/* first error, returned by close */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gdak_capture *reg_head;
/* fork: a child has none of the captures' threads (fork_init below) */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_init(void);

/* ---- reading the rings ------------------------------------------------- */

static void set_err(struct gdak_capture *c, int err)
{
	if (!c->err)
		c->err = err;
	c->st.read_errors++;
}

/* A big-endian doorbell-record word, as the NIC would read it. */
static int read_dbrec(struct gdak_capture *c, struct cap_qp *q, const uint32_t *p, int gpu,
		      uint32_t *v)
{
	int ret;

	if (!gpu) {
		/* acquire: the ring bytes the record publishes are read after it */
		*v = gdak_be32toh(__atomic_load_n(p, __ATOMIC_ACQUIRE));
		return 0;
	}
	ret = cap_cuda_read(c->cuda, q->scratch, p, sizeof(*p));
	if (ret) {
		set_err(c, ret);
		return ret;
	}
	*v = gdak_be32toh(*q->scratch);
	return 0;
}

/*
 * The producer index as a 64-bit count.  The send doorbell record carries
 * its low 16 bits (PRM: dbrec[1] = be32(pi & 0xffff)); it is extended from
 * the last value seen.  1 when it moved backwards (or 32768+ ahead, which
 * no legal ring of at most 32768 WQEBBs allows).
 */
static int read_pi(struct gdak_capture *c, struct cap_qp *q, uint64_t *pi)
{
	uint32_t v;
	uint16_t d;
	int ret;

	if (q->handler == GDAK_DEV_DB_CPU_PROXY && q->proxy_pi) {
		/* the device publishes the whole counter here; the proxy
		 * thread copies it into the record later, if at all */
		*pi = __atomic_load_n(q->proxy_pi, __ATOMIC_ACQUIRE);
		return *pi < q->pi_seen;
	}
	ret = read_dbrec(c, q, &q->dbrec[MLX5_SND_DBR], q->db_gpu, &v);
	if (ret)
		return ret;
	d = (uint16_t)((uint16_t)v - (uint16_t)q->pi_seen);
	if (d & 0x8000) {
		uint16_t back = (uint16_t)-d;

		*pi = q->pi_seen >= back ? q->pi_seen - back : (uint16_t)v;
		return 1;
	}
	*pi = q->pi_seen + d;
	return 0;
}

/* A 24-bit consumer count as a 64-bit count near ref. */
static uint64_t extend24(uint64_t ref, uint32_t v)
{
	uint32_t d = (v - (uint32_t)ref) & 0xffffff;

	if (d & 0x800000) {
		d = 0x1000000 - d;	/* behind ref: the device has not consumed that far */
		return ref >= d ? ref - d : 0;
	}
	return ref + d;
}

/*
 * How far the device has consumed the CQ, as a 64-bit count near ref: the
 * CQ doorbell record (dbrec[0] = be32(ci & 0xffffff)), or the descriptor's
 * cons_idx when that is ahead - gdak's device API advances cons_idx on every
 * poll but writes the record once per batch, and with the ignore-overrun CQs
 * hw_mlx5 creates the HCA does not wait for the record.
 */
static int read_cq_ci(struct gdak_capture *c, struct cap_qp *q, struct cap_cq *cq, uint64_t ref,
		      uint64_t *ci)
{
	uint32_t v;
	uint64_t a, b;
	int ret = read_dbrec(c, q, cq->dbrec, cq->db_gpu, &v);

	if (ret)
		return ret;
	a = extend24(ref, v);
	b = extend24(ref, (uint32_t)__atomic_load_n(&cq->dcq->cons_idx, __ATOMIC_RELAXED));
	*ci = a > b ? a : b;
	return 0;
}

/* WQEBBs [from, from + n) of the send queue into q->stage, in index order. */
static int stage_sq(struct gdak_capture *c, struct cap_qp *q, uint64_t from, uint32_t n)
{
	uint32_t slot = (uint32_t)from & (q->sq_cnt - 1);
	uint32_t first = n < q->sq_cnt - slot ? n : q->sq_cnt - slot;
	const uint8_t *src = q->sq_buf + (size_t)slot * 64;
	int ret = 0;

	if (!q->sq_gpu) {
		memcpy(q->stage, src, (size_t)first * 64);
		memcpy(q->stage + (size_t)first * 64, q->sq_buf, (size_t)(n - first) * 64);
		return 0;
	}
	ret = cap_cuda_read(c->cuda, q->stage, src, (size_t)first * 64);
	if (!ret && n > first)
		ret = cap_cuda_read(c->cuda, q->stage + (size_t)first * 64, q->sq_buf,
				    (size_t)(n - first) * 64);
	if (ret)
		set_err(c, ret);
	return ret;
}

/* k CQE slots from slot on (wrapping at the ring's end) into dst, by DMA. */
static int read_cq_chunk(struct gdak_capture *c, struct cap_cq *cq, uint8_t *dst, uint32_t slot,
			 uint32_t k)
{
	uint32_t first = k < cq->ncqe - slot ? k : cq->ncqe - slot;
	int ret;

	ret = cap_cuda_read(c->cuda, dst, cq->cqes + (size_t)slot * 64, (size_t)first * 64);
	if (!ret && k > first)
		ret = cap_cuda_read(c->cuda, dst + (size_t)first * 64, cq->cqes,
				    (size_t)(k - first) * 64);
	if (ret)
		set_err(c, ret);
	return ret;
}

/*
 * CQE number n into out (64 bytes).  Host rings: the owner byte is loaded
 * first with acquire (the NIC writes it last, with release) and again after
 * the copy; *changed says the slot was rewritten meanwhile.
 *
 * GPU rings: from a staged chunk of CQ_CHUNK entries.  One DMA read gives
 * no order between the bytes it reads, so a chunk read while a CQE lands
 * may hold the new owner byte and the old body.  The owner bytes therefore
 * come from a first read and the bodies from a second one that starts after
 * it: a CQE the first read saw handed to software was complete before that
 * read ended (the writer makes the body visible before the owner byte, as
 * device code polling it relies on too).  An owner byte that differs
 * between the two reads is a slot rewritten meanwhile (*changed).  The
 * second read is made only when the chunk's first CQE is new, so an idle
 * pass costs one read.
 */
static int fetch_cqe(struct gdak_capture *c, struct cap_qp *q, struct cap_cq *cq, uint64_t n,
		     uint8_t *out, int *changed)
{
	uint32_t slot = (uint32_t)n & (cq->ncqe - 1);
	const uint8_t *src = cq->cqes + (size_t)slot * 64;
	const uint8_t *a, *b;

	*changed = 0;
	if (!cq->gpu) {
		uint8_t op = __atomic_load_n(src + 63, __ATOMIC_ACQUIRE);

		out[63] = op;
		if (!gdak_mlx5_cqe_is_sw_owned(op, n, cq->ncqe))
			return 0;	/* not ours: the body may be mid-write */
		memcpy(out, src, 63);
		*changed = __atomic_load_n(src + 63, __ATOMIC_ACQUIRE) != op;
		return 0;
	}
	if (n < cq->stage_base || n >= cq->stage_base + cq->stage_n) {
		uint32_t k = cq->ncqe < CQ_CHUNK ? cq->ncqe : CQ_CHUNK;

		cq->stage_n = 0;
		if (read_cq_chunk(c, cq, cq->owners, slot, k))
			return -EIO;
		cq->twice = gdak_mlx5_cqe_is_sw_owned(cq->owners[63], n, cq->ncqe);
		if (cq->twice && read_cq_chunk(c, cq, cq->stage, slot, k))
			return -EIO;
		/* one record read per chunk, not per CQE: each is a DMA */
		if (read_cq_ci(c, q, cq, n, &cq->stage_ci))
			return -EIO;
		cq->stage_base = n;
		cq->stage_n = k;
	}
	a = cq->owners + (size_t)(n - cq->stage_base) * 64;
	b = cq->stage + (size_t)(n - cq->stage_base) * 64;
	if (!cq->twice) {
		memcpy(out, a, 64);
		return 0;
	}
	memcpy(out, b, 63);
	out[63] = a[63];
	*changed = b[63] != a[63];
	return 0;
}

/* ---- records ----------------------------------------------------------- */

static void emit_loss(struct gdak_capture *c, uint32_t qpn, const char *ring, uint64_t n,
		      uint64_t first, uint32_t ring_len, const char *unit)
{
	char text[200];

	snprintf(text, sizeof(text),
		 "%s lost=%" PRIu64 " %s first=%" PRIu64 " (ring of %u): overwritten before "
		 "the capture could copy them", ring, n, unit, first, ring_len);
	gdak_trace_fault(c->buf, qpn, (uint16_t)first, "capture_lost", text);
	c->st.loss_records++;
	GDAK_WARN_RL("capture", qpn, "%s", text);
}

static void flush_sq_loss(struct gdak_capture *c, struct cap_qp *q)
{
	if (!q->lost)
		return;
	emit_loss(c, q->qpn, "sq", q->lost, q->lost_first, q->sq_cnt, "WQEBBs");
	c->st.lost_wqebbs += q->lost;
	q->lost = 0;
}

static void flush_cq_loss(struct gdak_capture *c, struct cap_qp *q, struct cap_cq *cq)
{
	if (!cq->lost)
		return;
	emit_loss(c, q->qpn, cq->name, cq->lost, cq->lost_first, cq->ncqe, "CQEs");
	c->st.lost_cqes += cq->lost;
	cq->lost = 0;
}

static void sq_lose(struct cap_qp *q, uint64_t first, uint64_t n)
{
	if (!q->lost)
		q->lost_first = first;
	q->lost += n;
	q->resync = 1;
}

/* ---- one pass ------------------------------------------------------------ */

/*
 * Host rings: is the ctrl segment of WQEBB j still what was copied?  The
 * producer index read after the copy only reveals reuse by WQEs already
 * published; device code writing the next WQE into a slot it may reuse (the
 * WQE there completed) shows here if it has written the ctrl segment's first
 * 8 bytes.  (GPU rings: one more DMA per WQE; not done.)
 */
static int ctrl_changed(const struct cap_qp *q, uint64_t j, const uint8_t *copy)
{
	const uint64_t *ring;
	uint64_t now, then;

	if (q->sq_gpu)
		return 0;
	ring = (const uint64_t *)(const void *)(q->sq_buf +
						 (size_t)((uint32_t)j & (q->sq_cnt - 1)) * 64);
	now = __atomic_load_n(ring, __ATOMIC_ACQUIRE);
	memcpy(&then, copy, sizeof(then));
	return now != then;
}

static int sq_pass(struct gdak_capture *c, struct cap_qp *q)
{
	uint64_t pi, pi2, j, valid_from;
	int made = 0, ret;

	ret = read_pi(c, q, &pi);
	if (ret < 0)
		return 0;
	if (ret > 0) {
		char text[128];

		snprintf(text, sizeof(text), "producer index went from %" PRIu64 " to %" PRIu64
			 " (16-bit record 0x%04x): backwards, or more than 32768 ahead",
			 q->pi_seen, pi, (unsigned)(uint16_t)pi);
		gdak_trace_violation(c->buf, q->qpn, (uint16_t)pi, "capture_pi_backwards", 0, text);
		GDAK_WARN_RL("capture", q->qpn, "%s; capture restarts there", text);
		q->pi_seen = q->sq_next = pi;
		q->resync = 1;
		return 1;
	}
	if (pi != q->pi_seen) {
		gdak_trace_doorbell(c->buf, q->qpn, q->handler, (uint16_t)pi, NULL, 0);
		c->st.doorbells++;
		made++;
		q->pi_seen = pi;
	}
	/* the device got more than a ring ahead: the oldest are overwritten */
	if (pi - q->sq_next > q->sq_cnt) {
		sq_lose(q, q->sq_next, pi - q->sq_cnt - q->sq_next);
		q->sq_next = pi - q->sq_cnt;
	}
	if (q->sq_next == pi)
		goto out;
	if (stage_sq(c, q, q->sq_next, (uint32_t)(pi - q->sq_next)))
		return made;
	/* A WQEBB whose slot a newer published WQE reused while it was being
	 * copied is not trusted (reuse of slot j needs the index past j + n). */
	if (read_pi(c, q, &pi2))
		pi2 = pi;
	valid_from = pi2 > q->sq_cnt ? pi2 - q->sq_cnt : 0;

	for (j = q->sq_next; j < pi;) {
		const uint8_t *w = q->stage + (size_t)(j - q->sq_next) * 64;
		struct gdak_mlx5_ctrl ctl;
		uint32_t nbb;

		if (j < valid_from) {
			sq_lose(q, j, 1);
			j++;
			continue;
		}
		gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)(const void *)w, &ctl);
		if (q->resync) {
			if (ctl.wqe_index != (uint16_t)j || ctl.qpn != q->qpn) {
				sq_lose(q, j, 1);
				j++;
				continue;
			}
			q->resync = 0;
		}
		nbb = gdak_mlx5_wqe_bbs(ctl.ds);
		if (j + nbb > pi)
			break;	/* the rest of it is not published yet */
		if (ctrl_changed(q, j, w)) {
			/* rewritten since the copy by a WQE not yet published */
			sq_lose(q, j, nbb);
			j += nbb;
			continue;
		}
		flush_sq_loss(c, q);
		gdak_trace_wqe(c->buf, q->qpn, (uint16_t)j, w, nbb);
		c->st.wqes++;
		c->st.wqebbs += nbb;
		made++;
		j += nbb;
	}
	q->sq_next = j;
out:
	if (q->lost) {
		flush_sq_loss(c, q);
		made++;
	}
	return made;
}

static int cq_pass(struct gdak_capture *c, struct cap_qp *q, struct cap_cq *cq)
{
	uint8_t cqe[64] __attribute__((aligned(8)));
	uint64_t dev_ci, ci2;
	int made = 0, changed;

	if (read_cq_ci(c, q, cq, cq->ci, &dev_ci))
		return 0;
	cq->stage_n = 0;
	/* The HCA writes CQE i + ncqe only after CQE i was consumed (else the CQ
	 * overruns), so every CQE below dev_ci - ncqe has been written over. */
	if (dev_ci > cq->ci + cq->ncqe) {
		if (!cq->lost)
			cq->lost_first = cq->ci;
		cq->lost += dev_ci - cq->ncqe - cq->ci;
		cq->ci = dev_ci - cq->ncqe;
	}
	/* At most a ring's worth of CQEs recorded per pass, and a bound on the
	 * slots looked at (a device rewriting slots under the copy could
	 * otherwise keep one pass going). */
	for (uint32_t budget = cq->ncqe, looks = 4 * cq->ncqe; budget && looks; looks--) {
		uint64_t n = cq->ci;

		if (fetch_cqe(c, q, cq, n, cqe, &changed))
			break;
		if (!gdak_mlx5_cqe_is_sw_owned(cqe[63], n, cq->ncqe)) {
			/* Consumed by the device, yet the owner bit is another
			 * pass's: CQE n + ncqe has been written over it. */
			if (n >= dev_ci)
				break;	/* not written yet */
			if (!cq->lost)
				cq->lost_first = n;
			cq->lost++;
			cq->ci++;
			continue;
		}
		/* An owner bit of this pass is CQE n - or n + 2 * ncqe, which
		 * needs the device to have consumed n + ncqe. */
		if (cq->gpu)
			ci2 = cq->stage_ci;
		else if (read_cq_ci(c, q, cq, n, &ci2))
			ci2 = dev_ci;
		if (ci2 > n + cq->ncqe)
			changed = 1;
		if (changed) {
			if (!cq->lost)
				cq->lost_first = n;
			cq->lost++;
			cq->ci++;
			continue;
		}
		flush_cq_loss(c, q, cq);
		gdak_trace_cqe(c->buf, q->qpn, cq->cqn, (uint32_t)n, cqe);
		c->st.cqes++;
		made++;
		cq->ci++;
		budget--;
	}
	if (cq->lost) {
		flush_cq_loss(c, q, cq);
		made++;
	}
	return made;
}

static int qp_pass(struct gdak_capture *c, struct cap_qp *q)
{
	int made = sq_pass(c, q);

	for (int i = 0; i < q->ncq; i++)
		made += cq_pass(c, q, &q->cq[i]);
	return made;
}

/* Under c->lock. */
static int pass_locked(struct gdak_capture *c)
{
	int made = 0;

	if (c->dead)
		return 0;
	/* a pass's DOORBELL/WQE/CQE records share one block and one timestamp
	 * (the time of the pass: all the capture knows) */
	gdak_trace_batch_begin(c->buf);
	for (struct cap_qp *q = c->qps; q; q = q->next)
		made += qp_pass(c, q);
	gdak_trace_batch_end(c->buf);
	c->st.passes++;
	return made;
}

/* ---- the thread ---------------------------------------------------------- */

static void deadline(struct timespec *ts, uint64_t ns)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ns += (uint64_t)ts->tv_nsec;
	ts->tv_sec += (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Sleeps between passes, longer while nothing happens: the capture must not
 * take a core from the device's own polling (2-core CI machines).  What it
 * recorded goes to the file once the rings are quiet, and at least every
 * FLUSH_NS while they are not: the program being captured may be hung (the
 * reason to look) or killed, and gdak-trace --follow reads the file as it
 * grows.
 */
static void *cap_thread(void *arg)
{
	struct gdak_capture *c = arg;
	uint64_t sleep_ns = MIN_SLEEP_NS, last_flush = mono_ns();
	int dirty = 0;
	struct timespec ts;

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		if (c->paused) {
			c->parked = 1;
			pthread_cond_broadcast(&c->parked_cv);
			pthread_cond_wait(&c->wake, &c->lock);
			continue;
		}
		c->parked = 0;
		if (pass_locked(c)) {
			sleep_ns = MIN_SLEEP_NS;
			dirty = 1;
		} else if ((sleep_ns *= 2) > c->max_sleep_ns) {
			sleep_ns = c->max_sleep_ns;
		}
		if (dirty && c->trace &&
		    (sleep_ns > MIN_SLEEP_NS || mono_ns() - last_flush > FLUSH_NS)) {
			gdak_trace_flush(c->trace);
			last_flush = mono_ns();
			dirty = 0;
		}
		deadline(&ts, sleep_ns);
		pthread_cond_timedwait(&c->wake, &c->lock, &ts);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* ---- QPs --------------------------------------------------------------- */

static void qp_free(struct gdak_capture *c, struct cap_qp *q)
{
	if (q->any_gpu)
		cap_cuda_host_free(c->cuda, q->stage);
	else
		free(q->stage);
	free(q);
}

static int pow2(uint32_t v) { return v && !(v & (v - 1)); }

static int check_dqp(const struct gdak_dev_qp *d)
{
	const char *why = NULL;

	if (d->version != GDAK_DEV_ABI_VERSION)
		why = "descriptor version is not GDAK_DEV_ABI_VERSION";
	else if (!d->sq_buf || !d->dbrec || !pow2(d->sq_wqebb_cnt) || d->sq_wqebb_cnt > 32768)
		why = "send queue (sq_buf, dbrec, sq_wqebb_cnt a power of two <= 32768)";
	else if (!d->scq.cqes || !d->scq.dbrec || !pow2(d->scq.ncqe))
		why = "send CQ (cqes, dbrec, ncqe a power of two)";
	else if (d->rq_buf && (!d->rcq.cqes || !d->rcq.dbrec || !pow2(d->rcq.ncqe)))
		why = "receive CQ (cqes, dbrec, ncqe a power of two)";
	if (why)
		GDAK_ERR("capture", d->qpn, "descriptor %p unusable: %s", (const void *)d, why);
	return why ? -EINVAL : 0;
}

static int read_start(struct gdak_capture *c, struct cap_qp *q)
{
	uint32_t v;

	if (q->proxy_pi) {
		q->pi_seen = __atomic_load_n(q->proxy_pi, __ATOMIC_ACQUIRE);
	} else {
		if (read_dbrec(c, q, &q->dbrec[MLX5_SND_DBR], q->db_gpu, &v))
			return -EIO;
		q->pi_seen = v & 0xffff;
	}
	q->sq_next = q->pi_seen;
	for (int i = 0; i < q->ncq; i++) {
		if (read_dbrec(c, q, q->cq[i].dbrec, q->cq[i].db_gpu, &v) ||
		    read_cq_ci(c, q, &q->cq[i], v & 0xffffff, &q->cq[i].ci))
			return -EIO;
	}
	return 0;
}

static void cq_init(struct cap_cq *cq, const char *name, const struct gdak_dev_cq *d)
{
	cq->name = name;
	cq->dcq = d;
	cq->cqes = d->cqes;
	cq->dbrec = d->dbrec;
	cq->ncqe = d->ncqe;
	cq->cqn = d->cqn;
}

/* How add_locked() finds out where a ring pointer can be read from. */
enum loc_mode {
	LOC_HOST,	/* host memory at that address (the NIC model's rings) */
	LOC_PROBE,	/* ask CUDA when it is there; host memory otherwise */
	LOC_GPU,	/* said to be GPU memory: CUDA must be there to read it */
};

static int locate(const void *p, enum loc_mode loc, const void **host, uint8_t *gpu)
{
	int dev = 0, ret;

	*host = p;
	*gpu = 0;
	if (loc == LOC_HOST)
		return 0;
	ret = cap_cuda_classify(p, host, &dev);
	if (ret)
		return loc == LOC_GPU ? ret : 0;
	*gpu = (uint8_t)dev;
	return 0;
}

/* Under c->lock. */
static int add_locked(struct gdak_capture *c, const struct gdak_dev_qp *d, enum loc_mode loc,
		      struct gdak_qp *qp)
{
	struct cap_qp *q;
	size_t sq_bytes, len;
	char text[160];
	int ret;

	if (c->dead) {
		GDAK_ERR("capture", d->qpn, "the capture has stopped (its context was closed)");
		return -ESHUTDOWN;
	}
	if ((ret = check_dqp(d)))
		return ret;
	for (q = c->qps; q; q = q->next)
		if (q->dqp == d || (qp && q->qp == qp)) {
			GDAK_ERR("capture", d->qpn, "QP already captured");
			return -EEXIST;
		}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->qp = qp;
	q->dqp = d;
	q->qpn = d->qpn;
	q->handler = (uint8_t)d->handler;
	q->sq_cnt = d->sq_wqebb_cnt;
	q->proxy_pi = d->handler == GDAK_DEV_DB_CPU_PROXY ? d->proxy_pi : NULL;
	cq_init(&q->cq[q->ncq++], "scq", &d->scq);
	if (d->rq_buf)
		cq_init(&q->cq[q->ncq++], "rcq", &d->rcq);
	ret = locate(d->sq_buf, loc, (const void **)&q->sq_buf, &q->sq_gpu);
	if (!ret)
		ret = locate(d->dbrec, loc, (const void **)&q->dbrec, &q->db_gpu);
	for (int i = 0; i < q->ncq && !ret; i++) {
		const struct gdak_dev_cq *dc = i ? &d->rcq : &d->scq;

		ret = locate(dc->cqes, loc, (const void **)&q->cq[i].cqes, &q->cq[i].gpu);
		if (!ret)
			ret = locate(dc->dbrec, loc, (const void **)&q->cq[i].dbrec,
				     &q->cq[i].db_gpu);
	}
	q->any_gpu = q->sq_gpu || q->db_gpu;
	for (int i = 0; i < q->ncq; i++)
		q->any_gpu |= q->cq[i].gpu || q->cq[i].db_gpu;
	if (!ret && q->any_gpu && !c->cuda)
		ret = cap_cuda_open(&c->cuda);
	if (ret) {
		GDAK_ERR("capture", d->qpn, "the rings are GPU memory and no CUDA driver or GPU "
			 "is usable here: %s", gdak_strerror(ret));
		free(q);
		return ret;
	}

	sq_bytes = (size_t)q->sq_cnt * 64;
	if (q->any_gpu) {
		len = sq_bytes + (size_t)q->ncq * 2 * CQ_CHUNK * 64 + 64;
		ret = cap_cuda_host_alloc(c->cuda, len, (void **)&q->stage);
		if (ret) {
			free(q);
			return ret;
		}
		for (int i = 0; i < q->ncq; i++) {
			q->cq[i].owners = q->stage + sq_bytes + (size_t)i * 2 * CQ_CHUNK * 64;
			q->cq[i].stage = q->cq[i].owners + (size_t)CQ_CHUNK * 64;
		}
		q->scratch = (uint32_t *)(void *)(q->stage + len - 64);
	} else if (!(q->stage = malloc(sq_bytes))) {
		free(q);
		return -ENOMEM;
	}

	/* Start from where the rings are now: the counters' low bits are all
	 * the records hold, and all that slot and owner-bit arithmetic uses. */
	if (read_start(c, q)) {
		qp_free(c, q);
		return -EIO;
	}
	snprintf(text, sizeof(text), "ring capture: sq %u WQEBBs from %" PRIu64 ", scq %u, rcq %u, "
		 "handler %s, rings in %s memory, doorbell records in %s memory", q->sq_cnt,
		 q->sq_next, q->cq[0].ncqe, q->ncq > 1 ? q->cq[1].ncqe : 0,
		 gdak_trace_handler_name(q->handler), q->sq_gpu || q->cq[0].gpu ? "GPU" : "host",
		 q->db_gpu || q->cq[0].db_gpu ? "GPU" : "host");
	gdak_trace_qp(c->buf, q->qpn, GDAK_TRACE_QPN_NONE, "capture", text);
	q->next = c->qps;
	c->qps = q;
	GDAK_INFO("capture", q->qpn, "%s", text);
	return 0;
}

/* Last pass over q, then forget it.  Under c->lock. */
static void remove_locked(struct gdak_capture *c, struct cap_qp **pp)
{
	struct cap_qp *q = *pp;

	if (!c->dead) {
		gdak_trace_batch_begin(c->buf);
		qp_pass(c, q);
		gdak_trace_batch_end(c->buf);
	}
	*pp = q->next;
	qp_free(c, q);
}

/* ---- lifecycle -------------------------------------------------------- */

static void note_stats(struct gdak_capture *c)
{
	char text[256];

	snprintf(text, sizeof(text), "ring capture stopped: %" PRIu64 " passes, %" PRIu64
		 " doorbells, %" PRIu64 " WQEs (%" PRIu64 " WQEBBs), %" PRIu64 " CQEs, lost %"
		 PRIu64 " WQEBBs and %" PRIu64 " CQEs, %" PRIu64 " read errors",
		 c->st.passes, c->st.doorbells, c->st.wqes, c->st.wqebbs, c->st.cqes,
		 c->st.lost_wqebbs, c->st.lost_cqes, c->st.read_errors);
	gdak_trace_note(c->buf, text);
}

/* Stop the thread, make a last pass, complete the file.  The handle stays. */
static void shutdown_capture(struct gdak_capture *c)
{
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->lock);
	if (c->have_thread) {
		pthread_join(c->thread, NULL);
		c->have_thread = 0;
	}
	pthread_mutex_lock(&c->lock);
	if (!c->dead) {
		pass_locked(c);
		while (c->qps) {
			struct cap_qp *q = c->qps;
			c->qps = q->next;
			qp_free(c, q);
		}
		note_stats(c);
		gdak_trace_close(c->trace);
		c->trace = NULL;
		c->buf = NULL;
		c->dead = 1;
	}
	pthread_mutex_unlock(&c->lock);
}

/* core calls these before a QP or context of any backend goes (its object
 * observers): the captures following it make their last pass first */
static const struct gdak_obj_observer capture_observer = {
	.qp_destroy = gdak_capture_forget_qp,
	.ctx_close = gdak_capture_forget_ctx,
};

int gdak_capture_open(struct gdak_ctx *ctx, const char *path, unsigned flags,
		      struct gdak_capture **out)
{
	struct gdak_trace_opts topts = {0};
	pthread_condattr_t ca;
	struct gdak_capture *c;
	unsigned long long us;
	int ret;

	if (!out) {
		GDAK_ERR("capture", 0, "capture out-pointer is NULL");
		return -EINVAL;
	}
	*out = NULL;
	if (flags & ~(unsigned)(GDAK_CAPTURE_F_MANUAL | GDAK_CAPTURE_F_FAKE_CLOCK)) {
		GDAK_ERR("capture", 0, "unknown capture flags 0x%x", flags);
		return -EINVAL;
	}
	ret = gdak_observer_add(&capture_observer);
	if (ret)
		return ret;
	pthread_once(&fork_once, fork_init);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = getpid();
	c->ctx = ctx;
	c->flags = flags;
	c->max_sleep_ns = DEF_MAX_SLEEP_NS;
	if (gdak_env_uint("GDAK_CAPTURE_POLL_US", &us) == 0)
		c->max_sleep_ns = us * 1000ull;
	topts.fake_clock = !!(flags & GDAK_CAPTURE_F_FAKE_CLOCK);
	ret = gdak_trace_open_opts(path, &topts, &c->trace);
	if (ret) {
		free(c);
		return ret;
	}
	c->buf = gdak_trace_thread_buf(c->trace, GDAK_CAPTURE_THREAD_ID);
	if (!c->buf) {
		gdak_trace_close(c->trace);
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&c->parked_cv, NULL);
	if (!(flags & GDAK_CAPTURE_F_MANUAL)) {
		ret = pthread_create(&c->thread, NULL, cap_thread, c);
		if (ret) {
			GDAK_ERR("capture", 0, "cannot start the capture thread: %s", strerror(ret));
			gdak_trace_close(c->trace);
			pthread_cond_destroy(&c->wake);
			pthread_cond_destroy(&c->parked_cv);
			pthread_mutex_destroy(&c->lock);
			free(c);
			return -ret;
		}
		c->have_thread = 1;
	}
	pthread_mutex_lock(&reg_lock);
	c->next = reg_head;
	reg_head = c;
	pthread_mutex_unlock(&reg_lock);
	*out = c;
	return 0;
}

int gdak_capture_close(struct gdak_capture *c)
{
	struct gdak_capture **pp;
	int err;

	if (!c)
		return -EINVAL;
	if (c->pid != getpid()) {
		/* a forked child: the thread and the file are the parent's */
		GDAK_WARN("capture", 0, "capture belongs to process %d, not "
			  "to this (forked) one: left to it", (int)c->pid);
		return -EPERM;
	}
	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_head; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	shutdown_capture(c);
	err = c->err;
	if (c->cuda)
		cap_cuda_close(c->cuda);
	pthread_cond_destroy(&c->wake);
	pthread_cond_destroy(&c->parked_cv);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return err;
}

int gdak_capture_add_dev_qp(struct gdak_capture *c, const struct gdak_dev_qp *dqp, unsigned flags)
{
	int ret;

	if (!c || !dqp) {
		GDAK_ERR("capture", 0, "NULL argument (cap=%p dqp=%p)", (void *)c, (const void *)dqp);
		return -EINVAL;
	}
	if (flags & ~(unsigned)GDAK_CAPTURE_RINGS_GPU) {
		GDAK_ERR("capture", dqp->qpn, "unknown ring flags 0x%x", flags);
		return -EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	ret = add_locked(c, dqp, flags & GDAK_CAPTURE_RINGS_GPU ? LOC_GPU : LOC_HOST, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gdak_capture_add_qp(struct gdak_capture *c, struct gdak_qp *qp)
{
	enum loc_mode loc = LOC_HOST;
	struct gdak_dev_qp *d;
	int ret;

	if (!c || !qp) {
		GDAK_ERR("capture", 0, "NULL argument (cap=%p qp=%p)", (void *)c, (void *)qp);
		return -EINVAL;
	}
	if (c->ctx && qp->ctx != c->ctx) {
		GDAK_ERR("capture", qp->qpn, "QP belongs to context %u, the capture to %u",
			 qp->ctx->id, c->ctx->id);
		return -EINVAL;
	}
	ret = gdak_qp_export(qp, &d);
	if (ret)
		return ret;
	/* The NIC model's rings are host memory at host addresses.  Another
	 * backend's descriptor holds the addresses device code uses: GPU
	 * memory, or host memory mapped into the GPU, possibly elsewhere. */
	if (qp->attr.flags & GDAK_QP_F_QUEUES_GPU)
		loc = LOC_GPU;
	else if (strcmp(qp->ctx->ops->name, "emu"))
		loc = LOC_PROBE;
	pthread_mutex_lock(&c->lock);
	ret = add_locked(c, d, loc, qp);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* Stops capturing every QP that is @qp, has descriptor @d or belongs to @ctx (each NULL: no match
 * by it); returns whether there was one. */
static int remove_match(struct gdak_capture *c, struct gdak_qp *qp, const struct gdak_dev_qp *d,
			const struct gdak_ctx *ctx)
{
	int found = 0;

	pthread_mutex_lock(&c->lock);
	for (struct cap_qp **pp = &c->qps; *pp;) {
		struct gdak_qp *q = (*pp)->qp;

		if ((qp && q == qp) || (d && (*pp)->dqp == d) || (ctx && q && q->ctx == ctx)) {
			remove_locked(c, pp);
			found = 1;
		} else {
			pp = &(*pp)->next;
		}
	}
	if (found && c->trace)
		gdak_trace_flush(c->trace);
	pthread_mutex_unlock(&c->lock);
	return found;
}

/* The answer of the two remove calls: 0, or -ENOENT with why logged. */
static int removed(int found, uint32_t qpn, const char *why)
{
	if (found)
		return 0;
	GDAK_ERR("capture", qpn, "%s is not captured here", why);
	return -ENOENT;
}

int gdak_capture_remove_qp(struct gdak_capture *c, struct gdak_qp *qp)
{
	if (!c || !qp)
		return -EINVAL;
	return removed(remove_match(c, qp, NULL, NULL), qp->qpn, "QP");
}

int gdak_capture_remove_dev_qp(struct gdak_capture *c, const struct gdak_dev_qp *dqp)
{
	if (!c || !dqp)
		return -EINVAL;
	return removed(remove_match(c, NULL, dqp, NULL), dqp->qpn, "descriptor");
}

int gdak_capture_poll(struct gdak_capture *c)
{
	int made;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	made = c->dead ? -ESHUTDOWN : pass_locked(c);
	pthread_mutex_unlock(&c->lock);
	return made;
}

int gdak_capture_flush(struct gdak_capture *c)
{
	int ret;

	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (c->dead) {
		ret = 0;	/* the file is already complete */
	} else {
		pass_locked(c);
		ret = gdak_trace_flush(c->trace);
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int gdak_capture_get_stats(struct gdak_capture *c, struct gdak_capture_stats *st)
{
	if (!c || !st)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int gdak_capture_pause(struct gdak_capture *c, int on)
{
	if (!c)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	c->paused = !!on;
	pthread_cond_broadcast(&c->wake);
	while (on && c->have_thread && !c->parked && !c->stop)
		pthread_cond_wait(&c->parked_cv, &c->lock);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* ---- backend hooks ------------------------------------------------------ */

void gdak_capture_forget_qp(struct gdak_qp *qp)
{
	if (!qp)
		return;
	pthread_mutex_lock(&reg_lock);
	for (struct gdak_capture *c = reg_head; c; c = c->next)
		remove_match(c, qp, NULL, NULL);
	pthread_mutex_unlock(&reg_lock);
}

void gdak_capture_forget_ctx(struct gdak_ctx *ctx)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&reg_lock);
	for (struct gdak_capture *c = reg_head; c; c = c->next) {
		remove_match(c, NULL, NULL, ctx);
		if (c->ctx == ctx)
			shutdown_capture(c);	/* the capture thread never takes reg_lock */
	}
	pthread_mutex_unlock(&reg_lock);
}

/* $GDAK_TRACE with a backend whose NIC cannot trace itself: one capture for
 * the process, like the NIC model's one trace, closed at exit. */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gdak_capture *env_cap;
static int env_failed;

/* A forked child inherits the captures but none of their threads, and their
 * locks may be held by a thread it does not have: it forgets them all - its
 * QP destroys and context closes then find no capture to serve, its exit no
 * $GDAK_TRACE capture to close (joining a thread of the parent would hang).
 * The parent's captures and files go on unchanged. */
static void fork_child(void)
{
	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_init(&env_lock, NULL);
	reg_head = NULL;
	env_cap = NULL;
}

static void fork_init(void) { pthread_atfork(NULL, NULL, fork_child); }

static void env_atexit(void)
{
	struct gdak_capture *c;

	pthread_mutex_lock(&env_lock);
	c = env_cap;
	env_cap = NULL;
	pthread_mutex_unlock(&env_lock);
	if (c)
		gdak_capture_close(c);
}

void gdak_capture_env_add_qp(struct gdak_qp *qp)
{
	/* GDAK_CAPTURE_TRACE: another file than the NIC model's GDAK_TRACE, for
	 * a process that drives both backends */
	const char *path = gdak_env_raw("GDAK_CAPTURE_TRACE");

	if (!path)
		path = gdak_env_raw("GDAK_TRACE");
	struct gdak_capture *c;
	int ret;

	if (!qp || !path || !*path)
		return;
	pthread_mutex_lock(&env_lock);
	if (!env_cap && !env_failed) {
		ret = gdak_capture_open(NULL, path, 0, &env_cap);
		if (ret) {
			env_failed = 1;
			GDAK_ERR("capture", qp->qpn, "trace file %s: cannot start the ring capture: %s",
				 path, gdak_strerror(ret));
		} else {
			atexit(env_atexit);
		}
	}
	c = env_cap;
	ret = c ? gdak_capture_add_qp(c, qp) : 0;
	pthread_mutex_unlock(&env_lock);
	if (ret)
		GDAK_WARN("capture", qp->qpn, "GDAK_TRACE: QP not captured: %s", gdak_strerror(ret));
}
