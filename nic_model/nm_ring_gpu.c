/* SPDX-License-Identifier: MIT */
/*
 * nm_ring_gpu.c - rings in GPU memory (GDAK_QP_F_QUEUES_GPU, and nm_ext.h
 * rings / records in cudaMalloc memory): the NIC model, a CPU without a
 * mapping of GPU memory, reaches them through the CUDA driver only.
 *
 * The NIC's pipeline keeps working on host memory: every GPU ring has a
 * host shadow (qp->sq, qp->rq, cq->cqes, the records point at it), so the
 * requester, responder, completer, trace, strict checks and faults are the
 * code host rings use.  Three hooks move bytes between shadow and GPU:
 *
 *   WQE fetch (nm_db_poll, the ERR flush): when the doorbell register or
 *     CPU-proxy word (host memory) announces a producer index beyond what
 *     the shadow holds, the WQEBBs in between come over in one
 *     device-to-host copy (two when the range wraps) and an event; the
 *     requester's producer (qp->pi) stays at what has landed, so the pass
 *     goes on with the other QPs and the QP executes the WQEs in a later
 *     pass, when the event has fired (the ERR flush waits).  The
 *     device's ordering (WQE stores, fence.acq_rel.sys / st.release.sys,
 *     then the host word) makes them visible before the copy starts.
 *   record read: a GPU-resident record is read only where no host word
 *     says the same: the SQ record when the QP goes idle (strict mode's
 *     record_without_ring / ring_without_record checks; the register is
 *     the producer while work runs, as no-record mode has it), the receive
 *     record when the shadow shows no posted receive WQE (the RQ has no
 *     register), the CQ consumer counter when the shadow shows the CQ full.
 *   CQE write (cq_publish): the CQE built in the shadow is queued; at the
 *     end of the NIC pass (at once outside a pass, or when the batch is
 *     full) the pass's CQEs go to the GPU on the thread's own non-blocking
 *     stream: the bodies first (one host-to-device copy per run of
 *     consecutive slots, owner byte of each left "not ready": opcode
 *     INVALID with the previous lap's owner bit), then every CQE's last
 *     4 bytes (wqe_counter, signature, op_own) as one cuStreamBatchMemOp
 *     (cuStreamWriteValue32 each, or 4-byte copies, where the driver lacks
 *     it).  Stream order puts each owner byte after its body.  A CQE is
 *     built only after its data landed (the batched data engine's order),
 *     so the delivery that follows it is after the data too.
 *
 * With GDRCopy (nm_cuda.c; its libgdrapi and driver present), the pages of a
 * GPU ring - the NIC's own GPU block, allocated mapped, or a caller's ring
 * pinned when the QP or CQ is created - are mapped for the CPU, and the
 * three hooks become CPU loads and stores through the mapping: a fetch or a
 * record read lands when it returns, a CQE is written at once, its first 60
 * bytes, a fence, then its last 4 (PCIe keeps the posted writes in order,
 * so the owner byte lands last).  Where GDRCopy refuses a pin, that ring
 * stays on the driver's path.
 *
 * Host rings pay one predicted branch per hook (qp->rg / cq->rg NULL).
 */
#include <errno.h>
#include <stdlib.h>

#include "gdak_mmio.h"
#include "nm_cuda.h"
#include "nm_loc.h"

#define NM_RG_BATCH 128 /* CQEs per delivery; cuStreamBatchMemOp takes < 256 */

struct rg_ent {
	uint8_t *gslot; /* the CQE's slot in GPU memory */
	uint8_t cqe[64];
	bool whole; /* the run's copy may cover its 64 bytes (not a collapsed CQ) */
};

struct rg_stage {
	uint8_t *cqe;	/* NM_RG_BATCH * 64, pinned */
	uint32_t *last; /* NM_RG_BATCH, pinned: the 4-byte words written last */
	nm_cu_event ev;
	bool busy;
};

struct rg_thread {
	nm_cu_stream s;
	struct rg_stage st[2];
	unsigned cur;
	unsigned n;
	struct rg_ent e[NM_RG_BATCH];
	struct nm_cu_memop mop[NM_RG_BATCH];
};

__thread int nm_rg_in_pass;
__thread int nm_rg_pending;
static __thread struct rg_thread *tls_rg;
static pthread_key_t rg_key;
static pthread_once_t rg_once = PTHREAD_ONCE_INIT;
static _Atomic int memop_refused; /* cuStreamBatchMemOp failed once */

static struct {
	_Atomic uint64_t fetches, fetch_bytes, rec_reads, cqe_batches, cqes;
	_Atomic uint64_t gdr_reads, gdr_cqes;
} rgs;

static void rg_dtor(void *p)
{
	struct rg_thread *t = p;
	const struct nm_cu_api *cu = nm_cuda_api();

	if (!t || !cu)
		return;
	if (t->s)
		cu->StreamSynchronize(t->s);
	for (int i = 0; i < 2; i++) {
		if (t->st[i].ev)
			cu->EventDestroy(t->st[i].ev);
		if (t->st[i].cqe)
			cu->MemFreeHost(t->st[i].cqe);
	}
	if (t->s)
		cu->StreamDestroy(t->s);
	free(t);
}

static void rg_key_init(void)
{
	pthread_key_create(&rg_key, rg_dtor);
}

int nm_rg_available(void)
{
	return nm_cuda_api() != NULL;
}

/* The calling thread's state: its stream and staging, made on first use. */
static struct rg_thread *rg_self(void)
{
	const struct nm_cu_api *cu = nm_cuda_api();
	struct rg_thread *t = tls_rg;
	nm_cu_result r;

	if (__builtin_expect(t != NULL, 1))
		return t;
	if (!cu || nm_cuda_thread_ctx())
		return NULL;
	pthread_once(&rg_once, rg_key_init);
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	r = cu->StreamCreate(&t->s, NM_CU_STREAM_NON_BLOCKING);
	for (int i = 0; !r && i < 2; i++) {
		void *h = NULL;

		r = cu->MemHostAlloc(&h, NM_RG_BATCH * (64 + 4), NM_CU_MEMHOSTALLOC_PORTABLE);
		if (!r) {
			t->st[i].cqe = h;
			t->st[i].last = (uint32_t *)(void *)((uint8_t *)h + NM_RG_BATCH * 64);
			r = cu->EventCreate(&t->st[i].ev, NM_CU_EVENT_DISABLE_TIMING);
		}
	}
	if (r) {
		GDAK_ERR_RL("cuda", 0, "GPU-memory rings: stream / staging setup: %s",
			    nm_cuda_strerror(r));
		rg_dtor(t);
		return NULL;
	}
	tls_rg = t;
	pthread_setspecific(rg_key, t);
	return t;
}

/* A synchronous device-to-host copy: through a GDRCopy mapping, else on
 * the thread's stream.  0 or -EIO. */
static int rg_d2h(void *dst, const void *src, size_t len)
{
	const struct nm_cu_api *cu = nm_cuda_api();
	struct rg_thread *t;
	nm_cu_result r;
	int m = nm_cuda_gdr_rw((void *)(uintptr_t)src, dst, len, 0);

	if (m) {
		if (m < 0) {
			GDAK_ERR_RL("cuda", 0,
				    "GPU-memory ring read (%zu bytes at %p) through GDRCopy failed",
				    len, src);
			return -EIO;
		}
		atomic_fetch_add_explicit(&rgs.gdr_reads, 1, memory_order_relaxed);
		return 0;
	}
	t = rg_self();
	if (!t)
		return -EIO;
	r = cu->MemcpyAsync((nm_cu_ptr)(uintptr_t)dst, (nm_cu_ptr)(uintptr_t)src, len, t->s);
	if (!r)
		r = cu->StreamSynchronize(t->s);
	if (r) {
		GDAK_ERR_RL("cuda", 0, "GPU-memory ring read (%zu bytes at %p): %s", len, src,
			    nm_cuda_strerror(r));
		return -EIO;
	}
	return 0;
}

int nm_rg_read(void *dst, const void *gpu, size_t len)
{
	int ret = rg_d2h(dst, gpu, len);

	if (!ret)
		atomic_fetch_add_explicit(&rgs.fetches, 1, memory_order_relaxed);
	return ret;
}

/* A ring read failed: the QP cannot go on (what a ConnectX does when its
 * DMA read of a queue fails: a local QP operation error). */
static void rg_fail(struct nm_qp *qp, const char *what)
{
	nm_qp_set_error(qp, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, 0, (uint16_t)qp->ci, "gpu_ring_read",
			"reading the %s from GPU memory failed (CUDA driver error)", what);
}

/* ---- hook 1: WQE fetch ------------------------------------------------------ */

static void fetch_wait(struct nm_qp *qp)
{
	const struct nm_cu_api *cu = nm_cuda_api();
	struct nm_rg_qp *g = qp->rg;

	if (!g->fetch_to)
		return;
	nm_cu_result r;

	while ((r = cu->EventQuery((nm_cu_event)g->fetch_ev)) == NM_CU_ERROR_NOT_READY)
		;
	if (!r && g->fetch_to > g->sq_have)
		g->sq_have = g->fetch_to;
	g->fetch_to = 0;
}

void nm_rg_sq_fetch(struct nm_qp *qp, uint64_t to)
{
	struct nm_rg_qp *g = qp->rg;
	uint64_t from = g->sq_have > qp->ci ? g->sq_have : qp->ci;
	uint32_t n, first, k;

	fetch_wait(qp);
	if (g->sq_have > from)
		from = g->sq_have;
	if (to <= from)
		return;
	if (to - from > qp->sq_cnt)
		from = to - qp->sq_cnt; /* producer_ok refused such a ring already */
	n = (uint32_t)(to - from);
	first = (uint32_t)from & qp->sq_mask;
	k = qp->sq_cnt - first < n ? qp->sq_cnt - first : n;
	if (rg_d2h(qp->sq + (size_t)first * 64, g->sq + (size_t)first * 64, (size_t)k * 64) ||
	    (n > k && rg_d2h(qp->sq, g->sq, (size_t)(n - k) * 64))) {
		rg_fail(qp, "send queue");
		return;
	}
	g->sq_have = to;
	atomic_fetch_add_explicit(&rgs.fetches, 1 + (n > k), memory_order_relaxed);
	atomic_fetch_add_explicit(&rgs.fetch_bytes, (uint64_t)n * 64, memory_order_relaxed);
}

/* Start copying [from, to) of the SQ into the shadow; 0 or -EIO. */
static int fetch_start(struct nm_qp *qp, uint64_t from, uint64_t to)
{
	const struct nm_cu_api *cu = nm_cuda_api();
	struct nm_rg_qp *g = qp->rg;
	struct rg_thread *t = rg_self();
	uint32_t n = (uint32_t)(to - from), first = (uint32_t)from & qp->sq_mask, k;
	nm_cu_result r;

	if (!t)
		return -EIO;
	if (!g->fetch_ev) {
		nm_cu_event ev;

		r = cu->EventCreate(&ev, NM_CU_EVENT_DISABLE_TIMING);
		if (r)
			return -EIO;
		g->fetch_ev = ev;
	}
	k = qp->sq_cnt - first < n ? qp->sq_cnt - first : n;
	r = cu->MemcpyAsync((nm_cu_ptr)(uintptr_t)(qp->sq + (size_t)first * 64),
			    (nm_cu_ptr)(uintptr_t)(g->sq + (size_t)first * 64), (size_t)k * 64,
			    t->s);
	if (!r && n > k)
		r = cu->MemcpyAsync((nm_cu_ptr)(uintptr_t)qp->sq, (nm_cu_ptr)(uintptr_t)g->sq,
				    (size_t)(n - k) * 64, t->s);
	if (!r)
		r = cu->EventRecord((nm_cu_event)g->fetch_ev, t->s);
	if (r) {
		GDAK_ERR_RL("cuda", 0, "GPU-memory SQ fetch (%u WQEBBs): %s", n,
			    nm_cuda_strerror(r));
		return -EIO;
	}
	g->fetch_to = to;
	atomic_fetch_add_explicit(&rgs.fetches, 1 + (n > k), memory_order_relaxed);
	atomic_fetch_add_explicit(&rgs.fetch_bytes, (uint64_t)n * 64, memory_order_relaxed);
	return 0;
}

int nm_rg_sq_step(struct nm_qp *qp)
{
	const struct nm_cu_api *cu = nm_cuda_api();
	struct nm_rg_qp *g = qp->rg;
	uint64_t old = qp->pi, from;

	if (qp->pi > g->sq_want)
		g->sq_want = qp->pi; /* what db_poll raised pi to */
	if (g->fetch_to) {
		nm_cu_result r = cu->EventQuery((nm_cu_event)g->fetch_ev);

		if (r == 0) {
			g->sq_have = g->fetch_to;
			g->fetch_to = 0;
		} else if (r != NM_CU_ERROR_NOT_READY) {
			g->fetch_to = 0;
			rg_fail(qp, "send queue");
			return 0;
		}
	}
	if (!g->fetch_to && g->sq_want > g->sq_have) {
		from = g->sq_have > qp->ci ? g->sq_have : qp->ci;
		if (g->sq_want - from > qp->sq_cnt)
			from = g->sq_want - qp->sq_cnt;
		if (from < g->sq_want && g->sq_mapped) {
			/* GDRCopy: the WQEBBs land when the loads return */
			nm_rg_sq_fetch(qp, g->sq_want);
			if (g->sq_have < g->sq_want)
				return 0; /* the read failed: the QP is in error */
		} else if (from < g->sq_want && fetch_start(qp, from, g->sq_want)) {
			rg_fail(qp, "send queue");
			return 0;
		}
		if (from >= g->sq_want)
			g->sq_have = g->sq_want;
	}
	/* the requester works to what has landed */
	qp->pi = g->sq_want < g->sq_have ? g->sq_want : g->sq_have;
	if (qp->pi < qp->ci)
		qp->pi = qp->ci;
	return qp->pi != old;
}

/* ---- hook 3: record reads ---------------------------------------------------- */

int nm_rg_sq_rec_read(struct nm_qp *qp)
{
	if (!qp->rg->dbrec)
		return 0;
	atomic_fetch_add_explicit(&rgs.rec_reads, 1, memory_order_relaxed);
	if (rg_d2h(&qp->dbrec[MLX5_SND_DBR], &qp->rg->dbrec[MLX5_SND_DBR], 4)) {
		rg_fail(qp, "send doorbell record");
		return -EIO;
	}
	return 0;
}

uint32_t nm_rg_rq_refresh(struct nm_qp *qp)
{
	struct nm_rg_qp *g = qp->rg;
	uint32_t avail, n, first, k, stride = qp->rq_stride;
	uint64_t from, to;

	/* a QP fed by an RMP (dx_rmp.c): its receive word is the hook's, kept
	 * in the shadow; the program's word there is unused and stays unread */
	if (g->dbrec && !atomic_load_explicit(&qp->rq_empty, memory_order_acquire)) {
		atomic_fetch_add_explicit(&rgs.rec_reads, 1, memory_order_relaxed);
		if (rg_d2h(&qp->dbrec[MLX5_RCV_DBR], &g->dbrec[MLX5_RCV_DBR], 4))
			return 0;
	}
	avail = (uint16_t)((uint16_t)gdak_be32toh(
				   __atomic_load_n(&qp->dbrec[MLX5_RCV_DBR], __ATOMIC_RELAXED)) -
			   (uint16_t)qp->rq_ci);
	if (!g->rq || !avail || avail > qp->rq_cnt)
		return avail; /* an overrun is the responder's to report */
	to = qp->rq_ci + avail;
	from = g->rq_have > qp->rq_ci ? g->rq_have : qp->rq_ci;
	if (to <= from)
		return avail;
	n = (uint32_t)(to - from);
	first = (uint32_t)from & (qp->rq_cnt - 1);
	k = qp->rq_cnt - first < n ? qp->rq_cnt - first : n;
	if (rg_d2h(qp->rq + (size_t)first * stride, g->rq + (size_t)first * stride,
		   (size_t)k * stride) ||
	    (n > k && rg_d2h(qp->rq, g->rq, (size_t)(n - k) * stride)))
		return 0; /* looks empty: the sender sees RNR and retries */
	g->rq_have = to;
	atomic_fetch_add_explicit(&rgs.fetches, 1 + (n > k), memory_order_relaxed);
	atomic_fetch_add_explicit(&rgs.fetch_bytes, (uint64_t)n * stride, memory_order_relaxed);
	return avail;
}

void nm_rg_cq_rec_read(struct nm_cq *cq)
{
	if (!cq->rg->dbrec)
		return;
	atomic_fetch_add_explicit(&rgs.rec_reads, 1, memory_order_relaxed);
	rg_d2h(cq->dbrec, cq->rg->dbrec, 4); /* on failure the shadow stays: CQ full */
}

/* ---- hook 2: CQE delivery ----------------------------------------------------- */

static void rg_flush(struct rg_thread *t)
{
	const struct nm_cu_api *cu = nm_cuda_api();
	struct rg_stage *st = &t->st[t->cur];
	nm_cu_result r = 0;
	unsigned n = t->n, i, j;

	if (!n)
		return;
	t->n = 0;
	nm_rg_pending = 0;
	/* the staging this batch reuses was handed to the GPU two batches ago */
	if (st->busy) {
		while ((r = cu->EventQuery(st->ev)) == NM_CU_ERROR_NOT_READY)
			;
		st->busy = false;
	}
	for (i = 0; i < n; i++) {
		uint8_t *s = st->cqe + (size_t)i * 64;

		memcpy(s, t->e[i].cqe, 64);
		memcpy(&st->last[i], s + 60, 4);
		/* not ready until the last word lands: opcode INVALID, the
		 * previous lap's owner bit */
		s[63] = (uint8_t)(MLX5_CQE_INVALID << 4 | ((s[63] & 1) ^ 1));
	}
	/* bodies: one copy per run of consecutive slots */
	for (i = 0; !r && i < n; i = j) {
		for (j = i + 1; j < n && t->e[j].whole && t->e[j - 1].whole &&
				t->e[j].gslot == t->e[j - 1].gslot + 64;
		     j++)
			;
		r = cu->MemcpyAsync((nm_cu_ptr)(uintptr_t)t->e[i].gslot,
				    (nm_cu_ptr)(uintptr_t)(st->cqe + (size_t)i * 64),
				    j - i == 1 ? 60 : (size_t)(j - i) * 64, t->s);
	}
	/* then the owner words, in one call where the driver has it (a driver
	 * that refuses it once is not asked again: the words go one by one) */
	if (!r && cu->StreamBatchMemOp && !memop_refused) {
		for (i = 0; i < n; i++) {
			memset(&t->mop[i], 0, sizeof(t->mop[i]));
			t->mop[i].op = NM_CU_MEMOP_WRITE_VALUE_32;
			t->mop[i].addr = (uint64_t)(uintptr_t)(t->e[i].gslot + 60);
			t->mop[i].value = st->last[i];
		}
		r = cu->StreamBatchMemOp(t->s, n, t->mop, 0);
		if (r) {
			GDAK_WARN("cuda", 0,
				  "cuStreamBatchMemOp (%u CQE owner words): %s: one write-value "
				  "each from now on",
				  n, nm_cuda_strerror(r));
			memop_refused = 1;
			r = 0;
			for (i = 0; !r && i < n; i++)
				r = cu->StreamWriteValue32
					    ? cu->StreamWriteValue32(
						      t->s,
						      (nm_cu_ptr)(uintptr_t)(t->e[i].gslot + 60),
						      st->last[i], 0)
					    : cu->MemcpyAsync(
						      (nm_cu_ptr)(uintptr_t)(t->e[i].gslot + 60),
						      (nm_cu_ptr)(uintptr_t)&st->last[i], 4, t->s);
		}
	} else if (!r && cu->StreamWriteValue32) {
		for (i = 0; !r && i < n; i++)
			r = cu->StreamWriteValue32(t->s, (nm_cu_ptr)(uintptr_t)(t->e[i].gslot + 60),
						   st->last[i], 0);
	} else {
		for (i = 0; !r && i < n; i++)
			r = cu->MemcpyAsync((nm_cu_ptr)(uintptr_t)(t->e[i].gslot + 60),
					    (nm_cu_ptr)(uintptr_t)&st->last[i], 4, t->s);
	}
	if (!r)
		r = cu->EventRecord(st->ev, t->s);
	if (r) {
		GDAK_ERR_RL("cuda", 0, "GPU-memory CQ: delivering %u CQEs: %s", n,
			    nm_cuda_strerror(r));
		return;
	}
	st->busy = true;
	t->cur ^= 1;
	atomic_fetch_add_explicit(&rgs.cqe_batches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&rgs.cqes, n, memory_order_relaxed);
}

/* A CQE through the CQ's GDRCopy mapping (write-combining): its first 60
 * bytes, a flush, its last 4 (the owner byte), a flush.  0 or -EIO. */
static int rg_gdr_cqe(uint8_t *g, const struct mlx5_cqe64 *cqe)
{
	uint8_t b[64];

	memcpy(b, cqe, 64);
	if (nm_cuda_gdr_rw(g, b, 60, 1) != 1)
		return -EIO;
	gdak_wc_flush();
	if (nm_cuda_gdr_rw(g + 60, b + 60, 4, 1) != 1)
		return -EIO;
	gdak_wc_flush();
	atomic_fetch_add_explicit(&rgs.gdr_cqes, 1, memory_order_relaxed);
	return 0;
}

void nm_rg_cqe(struct nm_cq *cq, const struct mlx5_cqe64 *cqe, uint32_t slot)
{
	struct rg_thread *t;
	uint8_t *g = cq->rg->cqes + (size_t)slot * 64;
	bool cc = !!(cq->flags & NM_CQ_CC);
	unsigned i;

	if (cq->rg->mapped) {
		if (rg_gdr_cqe(g, cqe))
			GDAK_ERR_RL("cuda", 0,
				    "CQ 0x%x in GPU memory: writing CQE slot %u through GDRCopy "
				    "failed, CQE lost",
				    cq->cqn, slot);
		return;
	}
	t = rg_self();
	if (!t) {
		GDAK_ERR_RL("cuda", 0, "CQ 0x%x in GPU memory: no CUDA stream, CQE lost", cq->cqn);
		return;
	}
	for (i = 0; i < t->n; i++) {
		if (t->e[i].gslot != g)
			continue;
		if (cc) {
			/* each CQE of a collapsed CQ replaces the last: keep the newest */
			memcpy(t->e[i].cqe, cqe, 64);
			goto out;
		}
		rg_flush(t); /* a slot twice in one batch: the first goes first */
		break;
	}
	t->e[t->n].gslot = g;
	t->e[t->n].whole = !cc;
	memcpy(t->e[t->n].cqe, cqe, 64);
	t->n++;
	nm_rg_pending = 1;
out:
	if (!nm_rg_in_pass || t->n == NM_RG_BATCH)
		rg_flush(t);
}

void nm_rg_pass_end(void)
{
	if (tls_rg)
		rg_flush(tls_rg);
	if (nm_cuda_pass_pending)
		nm_cuda_pass_end();
}

/* ---- setup ---------------------------------------------------------------- */

static void rg_push(void *gpu, const void *host, size_t len)
{
	if (gpu && len)
		nm_dma_copy(gpu, GDAK_MEM_GPU, host, GDAK_MEM_HOST, len);
}

void nm_rg_qp_reset(struct nm_qp *qp)
{
	struct nm_rg_qp *g = qp->rg;

	fetch_wait(qp);
	g->sq_have = 0;
	g->sq_want = 0;
	g->rq_have = 0;
	if (!g->gblock)
		return; /* the device's rings are the device's to clear */
	/* the NIC's own GPU rings start as its host rings do: zero WQEs and
	 * records, CQEs with opcode INVALID and owner 1 */
	rg_push(g->sq, qp->sq, (size_t)qp->sq_cnt * 64);
	rg_push(g->rq, qp->rq, (size_t)qp->rq_cnt * qp->rq_stride);
	rg_push(g->dbrec, qp->dbrec, 8);
	rg_push(g->scq.cqes, qp->own_scq.cqes, (size_t)qp->own_scq.ncqe * 64);
	rg_push(g->scq.dbrec, qp->own_scq.dbrec, 8);
	if (qp->rq_cnt) {
		rg_push(g->rcq.cqes, qp->own_rcq.cqes, (size_t)qp->own_rcq.ncqe * 64);
		rg_push(g->rcq.dbrec, qp->own_rcq.dbrec, 8);
	}
}

int nm_rg_qp_own(struct nm_qp *qp)
{
	struct nm_rg_qp *g;
	size_t sq_b = (size_t)qp->sq_cnt * 64, cq_b = (size_t)qp->own_scq.ncqe * 64;
	size_t rq_b = (size_t)qp->rq_cnt * qp->rq_stride, rcq_b = (size_t)qp->own_rcq.ncqe * 64;
	uint8_t *m;
	int ret;

	if (!nm_rg_available()) {
		GDAK_ERR("ctx", qp->ctx->base.id,
			 "GDAK_QP_F_QUEUES_GPU on the emulated NIC needs the CUDA memory engine "
			 "(a GPU and libcuda.so.1; GDAK_CUDA_DMA not 0)");
		return -ENOTSUP;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->glen = sq_b + cq_b + rq_b + rcq_b + 256;
	ret = nm_dma_get()->alloc(g->glen, GDAK_MEM_GPU, &g->gblock);
	if (ret) {
		free(g);
		return ret;
	}
	m = g->gblock;
	/* allocated mapped where GDRCopy is in use (nm_cuda.c gdr_alloc) */
	g->sq_mapped = nm_cuda_gdr_mapped(m, g->glen);
	g->scq.mapped = g->rcq.mapped = g->sq_mapped;
	g->sq = m;
	g->scq.cqes = m + sq_b;
	g->rq = qp->rq_cnt ? m + sq_b + cq_b : NULL;
	g->rcq.cqes = qp->rq_cnt ? m + sq_b + cq_b + rq_b : NULL;
	g->dbrec = (uint32_t *)(void *)(m + g->glen - 256);
	g->scq.dbrec = (uint32_t *)(void *)(m + g->glen - 192);
	g->rcq.dbrec = (uint32_t *)(void *)(m + g->glen - 128);
	qp->rg = g;
	qp->own_scq.rg = &g->scq;
	if (qp->rq_cnt)
		qp->own_rcq.rg = &g->rcq;
	return 0;
}

static int is_gpu(struct nm_qp *qp, const void *p)
{
	return p && nm_mem_kind_of(&qp->ctx->base, p) == GDAK_MEM_GPU;
}

int nm_rg_qp_ext(struct nm_qp *qp)
{
	int sq = is_gpu(qp, qp->sq), rq = is_gpu(qp, qp->rq), rec = is_gpu(qp, qp->dbrec);
	size_t sq_b = (size_t)qp->sq_cnt * 64, rq_b = (size_t)qp->rq_cnt * qp->rq_stride;
	struct nm_rg_qp *g;
	uint8_t *sh;

	if (!sq && !rq && !rec)
		return 0;
	if (!nm_rg_available())
		return -ENOTSUP;
	g = calloc(1, sizeof(*g));
	sh = aligned_alloc(64, sq_b + rq_b + 64);
	if (!g || !sh) {
		free(g);
		free(sh);
		return -ENOMEM;
	}
	memset(sh, 0, sq_b + rq_b + 64);
	g->shadow = sh;
	/* GDRCopy where it pins the pages: the ring's hooks become loads and
	 * stores (nm_cuda_gdr_pin; a refusal leaves the driver's path) */
	if (sq) {
		g->sq = qp->sq;
		qp->sq = sh;
		g->sq_mapped = !nm_cuda_gdr_pin(g->sq, sq_b, &g->gdr[0]);
	}
	if (rq) {
		g->rq = qp->rq;
		qp->rq = sh + sq_b;
		(void)nm_cuda_gdr_pin(g->rq, rq_b, &g->gdr[1]);
	}
	if (rec) {
		g->dbrec = qp->dbrec;
		qp->dbrec = (uint32_t *)(void *)(sh + sq_b + rq_b);
		(void)nm_cuda_gdr_pin(g->dbrec, 8, &g->gdr[2]);
	}
	qp->rg = g;
	return 0;
}

void nm_rg_qp_fini(struct nm_qp *qp)
{
	struct nm_rg_qp *g = qp->rg;

	if (!g)
		return;
	if (g->fetch_ev) {
		fetch_wait(qp);
		nm_cuda_api()->EventDestroy((nm_cu_event)g->fetch_ev);
	}
	if (g->gblock)
		nm_dma_get()->free(g->gblock, g->glen, GDAK_MEM_GPU);
	for (int i = 0; i < 3; i++)
		nm_cuda_gdr_unpin(g->gdr[i]);
	free(g->shadow);
	free(g);
	qp->rg = NULL;
}

void *nm_rg_dev_addr(const struct nm_qp *qp, const void *host)
{
	const struct nm_rg_qp *g = qp->rg;

	if (!g)
		return (void *)(uintptr_t)host;
	if (host == qp->sq && g->sq)
		return g->sq;
	if (host && host == qp->rq && g->rq)
		return g->rq;
	if (host == qp->dbrec && g->dbrec)
		return g->dbrec;
	return (void *)(uintptr_t)host;
}

int nm_rg_cq_ext(struct nm_cq *cq, int buf_gpu, int rec_gpu)
{
	struct nm_rg_cq *g;
	void *sh;

	if (!buf_gpu && !rec_gpu)
		return 0;
	if (!nm_rg_available())
		return -ENOTSUP;
	g = calloc(1, sizeof(*g));
	sh = aligned_alloc(64, (size_t)cq->ncqe * 64 + 64);
	if (!g || !sh) {
		free(g);
		free(sh);
		return -ENOMEM;
	}
	memset(sh, 0, (size_t)cq->ncqe * 64 + 64);
	g->shadow = sh;
	if (buf_gpu) {
		g->cqes = (uint8_t *)cq->cqes;
		cq->cqes = sh;
		g->mapped = !nm_cuda_gdr_pin(g->cqes, (size_t)cq->ncqe * 64, &g->gdr[0]);
	}
	if (rec_gpu) {
		g->dbrec = cq->dbrec;
		cq->dbrec = (uint32_t *)(void *)((uint8_t *)sh + (size_t)cq->ncqe * 64);
		cq->arm_dbrec = cq->dbrec + 1;
		(void)nm_cuda_gdr_pin(g->dbrec, 8, &g->gdr[1]);
	}
	cq->rg = g;
	return 0;
}

void nm_rg_cq_fini(struct nm_cq *cq)
{
	if (!cq->rg)
		return;
	nm_cuda_gdr_unpin(cq->rg->gdr[0]);
	nm_cuda_gdr_unpin(cq->rg->gdr[1]);
	free(cq->rg->shadow);
	free(cq->rg);
	cq->rg = NULL;
}

void nm_rg_stats(uint64_t out[7])
{
	out[0] = atomic_load(&rgs.fetches);
	out[1] = atomic_load(&rgs.fetch_bytes);
	out[2] = atomic_load(&rgs.rec_reads);
	out[3] = atomic_load(&rgs.cqe_batches);
	out[4] = atomic_load(&rgs.cqes);
	out[5] = atomic_load(&rgs.gdr_reads);
	out[6] = atomic_load(&rgs.gdr_cqes);
}
