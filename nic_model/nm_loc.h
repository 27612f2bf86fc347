/* SPDX-License-Identifier: MIT */
/*
 * nm_loc.h - the NIC model's internal header: objects, the transport
 * interface, and every cross-file function grouped by the file defining it.
 *
 * Pipeline (DESIGN.md "NIC model pipeline"), one file per stage:
 *   nm_doorbell.c  watch the send doorbell record / register / proxy word
 *   nm_req.c       requester: fetch, decode, execute in order
 *   nm_check.c     checks: every rule, and how one that fires is reported
 *   nm_loop.c      the in-process transport (the others: tr_udp*.c, tr_verbs*.c)
 *   nm_resp.c      responder: applies requests, receive WQEs
 *   nm_comp.c      completer: op_done, in-order retire, CQEs, errors, flushes
 * around them nm_mem.c (memory, MRs), nm_qp.c (QP objects), nm_thread.c (NIC
 * threads, libev loops), nm_backend.c (the "emu" backend ops), nm_api.c
 * (gdak_nic_*), nm_fault.c (fault-injection hooks), nm_ring_gpu.c (rings in
 * GPU memory: host shadows and the driver calls that fill / drain them).
 *
 * Threading: a QP's send side (doorbell, requester, completer of its send
 * CQ) runs only on the NIC thread that serves it.  The responder side of a
 * QP (its RQ and receive CQ) is driven by whichever thread executes the
 * peer's requests; it is serialised by qp->resp_lock.  Control-path calls
 * reach a thread through nm_thread_call(); objects the data path can see
 * (MRs, QPs) are freed only after nm_engine_sync(), a grace period every
 * NIC thread passes between two polling passes.
 */
#ifndef NM_LOC_H
#define NM_LOC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/dev/types.h>
#include <gdak/mlx5.h>
#include <gdak/nic.h>
#include <gdak/trace.h>

#include "gdak_backend.h"
#include "gdak_log.h"
#include "nm_dma.h"

struct ev_loop;
struct nm_ctx;
struct nm_qp;
struct nm_thread;
struct nm_op;

/* The struct holding member (libev watchers live inside the objects that own
 * them).  Through void * so that clang's -Wcast-align accepts it. */
#define nm_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* ---- limits ----------------------------------------------------------- */

/* BlueFlame register halves: log2 of one half's bytes (gdak_dev_qp.bf_log_half) */
#define NM_BF_LOG_HALF 8

#define NM_MAX_INFLIGHT 64	/* ops between execution and their CQE, per QP */
#define NM_PASS_CAP 256		/* WQEs one QP may execute per pass */
#define NM_WRAP_BUF 1024	/* a WQE is at most 63 DS = 1008 bytes */
#define NM_MR_CHUNK 1024	/* MR table: chunks of this many slots */
#define NM_MR_CHUNKS 1024	/* ... and this many chunks (1M MRs per context) */

/* ---- memory: nm_dma.h has the DMA engine; MRs here --------------------- */

struct nm_mr {
	struct gdak_mr base;	/* must be first */
	uint32_t index;		/* slot in the context's table (key >> 8) */
	uint8_t kind;		/* enum gdak_mem_kind of the whole region */
	uintptr_t start, end;	/* [start, end) */
	/* set by the transport's mr_reg hook: its registration, and the keys
	 * the wire knows (base.rkey becomes wire_rkey, what a peer in another
	 * process needs) */
	void *tr_priv;
	uint32_t wire_lkey, wire_rkey;
	bool wire_keys;
	uint64_t gpu_map; /* nm_dma_ops.gpu_map's key (GDRCopy), 0: none */
};

/* ---- transport interface -------------------------------------------------- */

enum nm_tx_result {
	NM_TX_DONE = 0,	   /* completed now; op->status holds 0 or a syndrome */
	NM_TX_PENDING = 1, /* the transport calls nm_comp_op_done() later, on the QP's thread */
	NM_TX_BUSY = 2,	   /* window full / RNR: the requester offers the op again later */
};

/*
 * A transport moves requests to the peer QP.  Implementations: nm_loop.c
 * (nm_tr_loop_ops), tr_udp*.c (nm_tr_udp_ops) and tr_verbs*.c
 * (nm_tr_verbs_ops).  nic_model/CMakeLists.txt defines NM_HAVE_TR_UDP /
 * NM_HAVE_TR_VERBS when those files are part of gdak_nic, and nm_backend.c
 * then lists them: device strings "emu:<name>[:args]".
 *
 * ctx_init/ctx_fini/qp_init/qp_info/qp_connect/qp_fini run on the control
 * path (the caller's thread); post_send/rq_kick/qp_poll run on the QP's NIC
 * thread.  To run something on that thread (start an ev_io, an ev_timer),
 * use nm_thread_call(qp->thr, fn, arg) and nm_thread_loop(qp->thr).
 *
 * Completing work outside a polling pass: a transport's ev_io / ev_timer
 * callback that completes ops (nm_comp_op_done on NM_TX_PENDING ops), gets
 * a receive in, or frees window room MUST then call nm_thread_kick(qp) (or,
 * equivalently on the QP's thread, nm_thread_activate(qp)).  The callback
 * runs between passes: the QP may have left the active list and the thread
 * may be in its back-off (ev_idle stopped, a 1 ms timer armed), so without
 * the kick the retire step that writes the CQEs runs only at the next
 * sweep or timer, milliseconds late, and the device waits on its CQE that
 * long.  Ops completed inside post_send / qp_poll (during a pass) need
 * nothing more.
 */
struct nm_transport_ops {
	const char *name;
	int (*ctx_init)(struct nm_ctx *ctx, const char *args); /* args: after "emu:<name>:", or "" */
	void (*ctx_fini)(struct nm_ctx *ctx);
	int (*qp_init)(struct nm_qp *qp);
	void (*qp_fini)(struct nm_qp *qp); /* after the QP left its thread */
	int (*qp_info)(struct nm_qp *qp, struct gdak_qp_info *out);
	int (*qp_connect)(struct nm_qp *qp, const struct gdak_qp_info *peer); /* INIT -> RTR */
	/* Execute one decoded request (see struct nm_op). */
	enum nm_tx_result (*post_send)(struct nm_qp *qp, struct nm_op *op);
	/* Optional: asked before post_send while the transport has set
	 * qp->tr_gate (it holds ops later ones may have to follow: the loop
	 * transport's GPU copies); 1 when op must wait (offered again). */
	int (*exec_wait)(struct nm_qp *qp, const struct nm_op *op);
	/* Optional, on the QP's thread: the requester is reset (the QP went
	 * back to RESET); forget what is in flight.  Also runs once at create,
	 * before qp_init. */
	void (*req_reset)(struct nm_qp *qp);
	/* Optional: receive WQEs were posted on qp (RNR retry can go on). */
	void (*rq_kick)(struct nm_qp *qp);
	/* Optional: called every pass while the QP is active; returns work done. */
	int (*qp_poll)(struct nm_qp *qp);
	/* Optional, on the QP's thread: 1 when nothing of the transport's
	 * waits for a polling pass - every further event of the QP comes
	 * through its own ev_io / ev_timer callbacks or a kick - so a thread
	 * whose QPs are all doorbell-notified (nm_ext_qp_doorbell_notify) may
	 * block in the kernel.  Without it the thread never blocks so. */
	int (*qp_quiet)(struct nm_qp *qp);
	/* Optional: the QP went to ERR; abort what is in flight (complete the
	 * pending ops with WR_FLUSH_ERR through nm_comp_op_done). */
	void (*qp_error)(struct nm_qp *qp);
	/* Optional, control path: gdak_qp_modify moved the QP to ERR (the
	 * state is stored): nothing of the transport may still take a request
	 * for it when this returns (tr_udp: a sender of the direct path). */
	void (*qp_stopped)(struct nm_qp *qp);
	/* Optional, control path: the QP went back to RESET (what the next
	 * connect needs afresh - tr_udp: a new first PSN - is drawn here,
	 * before gdak_qp_info reports it). */
	void (*qp_reset)(struct nm_qp *qp);
	/* Optional, control path: a new MR (start/end/kind/access set, key not
	 * yet) - register it with the transport's device; may set tr_priv and
	 * the wire keys.  0, or -errno and the registration fails.  mr_dereg:
	 * after the grace period, before the MR is freed. */
	int (*mr_reg)(struct nm_ctx *ctx, struct nm_mr *mr);
	void (*mr_dereg)(struct nm_ctx *ctx, struct nm_mr *mr);
	/* The wire has 8-byte atomics only (plain verbs): the 4-byte extended
	 * forms fail before post_send (rule atomic_transport). */
	bool atomics_8b_only;
	/* Optional, control path: a DCI or DCT reached RTR (it connects to
	 * nobody; the transport starts serving it).  0 or -errno. */
	int (*dc_ready)(struct nm_qp *qp);
	/* Optional, NIC thread: a DCI still has requests out to its stream's
	 * target (a stream turns only when they are done). */
	int (*dc_busy)(struct nm_qp *qp);
};

extern const struct nm_transport_ops nm_tr_loop_ops;
#ifdef NM_HAVE_TR_UDP
extern const struct nm_transport_ops nm_tr_udp_ops;
#endif
#ifdef NM_HAVE_TR_VERBS
extern const struct nm_transport_ops nm_tr_verbs_ops;
#endif

/* ---- context ----------------------------------------------------------- */

struct nm_ctx {
	struct gdak_ctx base;	/* must be first */
	const struct nm_transport_ops *tr;
	void *tr_priv;		/* the transport's per-context state */
	uint64_t node;		/* NIC-model instance (this process) */
	pthread_mutex_t lock;	/* MR table growth, allocation list */
	_Atomic(struct nm_mr *) *mrt[NM_MR_CHUNKS]; /* MR slots, published with release */
	uint32_t mr_next;	/* next never-used slot */
	uint32_t mr_free_head;	/* recycled slots (index + 1), 0 = none */
	uint32_t *mr_free_next;
	uint32_t mr_free_cap;
	uint8_t mr_key;		/* 8-bit key variant, bumped per registration */
	struct gdak_mem_block *allocs; /* nm_mem.c: what gdak_mem_alloc handed out */
	_Atomic uint32_t nqps;
	_Atomic uint32_t nmrs;
	_Atomic uint32_t mr_gen;	/* bumped by every deregistration: key caches
					 * (struct nm_key_cache) holding an older
					 * value are stale */
	_Atomic int closed;	/* gdak_close came while QPs were alive: the
				 * context goes with the last QP and MR */
	_Atomic int freed;
};

static inline struct nm_ctx *nm_ctx_of(struct gdak_ctx *c) { return (struct nm_ctx *)c; }

/* One-entry key cache (the data path's last lkey / rkey): valid while the
 * context's mr_gen has not moved.  A deregistration clears the slot, bumps
 * mr_gen, then waits a grace period (nm_engine_sync), so a NIC thread never
 * uses an MR from the cache after its next quiescent point. */
struct nm_key_cache {
	struct nm_ctx *ctx;
	struct nm_mr *mr;
	uint32_t key, gen;
};

/* ---- queues --------------------------------------------------------------- */

/* CQ context bits (PRM "CQ context"): oi = overrun ignore, cc = collapsed */
enum nm_cq_flags {
	NM_CQ_OI = 1u << 0,
	NM_CQ_CC = 1u << 1
};

/*
 * A CQ.  Either embedded in its QP (nm_qp.own_scq / own_rcq: one producer
 * per ring, the QP's thread for the send CQ and its responder under
 * resp_lock for the receive CQ) or an object of its own (nm_ext.h: rings
 * the device allocated, shared by any number of QPs).  An external CQ can
 * get CQEs from several threads at once (a QP's NIC thread, the responders
 * of its other QPs), so its producers serialise on cq->lock (ext set);
 * the embedded ones never take it.
 */
struct nm_cq {
	struct mlx5_cqe64 *cqes;
	uint32_t *dbrec;	/* be32 consumer counter written by the device */
	uint32_t ncqe;		/* power of two */
	uint32_t cqn;
	uint64_t pi;		 /* CQEs written; stored with release after each CQE
				 * (a WAIT on another QP reads it: nm_cq_produced) */
	uint32_t flags;		 /* enum nm_cq_flags */
	struct mlx5_cqe64 stage; /* collapsed CQ: the next CQE, built here */
	/* external CQs only (nm_ext.c) */
	bool ext;
	pthread_spinlock_t lock; /* producers of an external CQ */
	_Atomic uint32_t users;	 /* QPs attached (destroy refuses while any) */
	struct nm_ctx *ctx;
	uint32_t *arm_dbrec; /* dbrec + 1: the device's arm word (be32) */
	uint64_t *arm_db;    /* optional UAR word the device rings to arm */
	struct nm_cq *next;  /* nm_ext.c's registry */
	/* CQEs and / or the consumer record in GPU memory (nm_ring_gpu.c):
	 * cqes / dbrec above are then host shadows; NULL for host CQs */
	struct nm_rg_cq *rg;
	/* the ring is memory the GPU can write (nm_comp.c: stream-ordered
	 * CQEs): 1 yes, -1 no, 0 not asked yet */
	_Atomic int8_t gpu_writable;
};

/* Producers of cq (nm_comp.c) hold this around one CQE. */
static inline void nm_cq_lock(struct nm_cq *cq)
{
	if (cq->ext)
		pthread_spin_lock(&cq->lock);
}
static inline void nm_cq_unlock(struct nm_cq *cq)
{
	if (cq->ext)
		pthread_spin_unlock(&cq->lock);
}

/* CQEs cq has produced, from any thread (a cross-channel WAIT's view). */
static inline uint64_t nm_cq_produced(const struct nm_cq *cq)
{
	return __atomic_load_n(&cq->pi, __ATOMIC_ACQUIRE);
}

/* One decoded send WQE on its way through the pipeline. */
enum nm_op_flags {
	NM_OPF_INLINE = 1u << 0,   /* data is inline (op->inl) */
	NM_OPF_SIGNALED = 1u << 1, /* CQ_UPDATE set: CQE wanted */
	NM_OPF_DONE = 1u << 2,	   /* completed; status valid */
	NM_OPF_FENCE = 1u << 3,
	NM_OPF_READS = 1u << 4,	   /* RDMA_READ / atomic (fence-relevant) */
	NM_OPF_VIOLATION = 1u << 5, /* status comes from a strict check */
	NM_OPF_WQE = 1u << 6,	   /* decoded from a send queue: wqe_index is real
				    * (not set on ops a packet transport rebuilds) */
};

struct nm_op {
	uint64_t ci;		/* 64-bit index of its first WQEBB */
	uint16_t wqe_index;	/* ci & 0xffff, what its CQE reports */
	uint8_t opcode;		/* MLX5_OPCODE_* */
	uint8_t fm_ce_se;
	uint8_t ds;
	uint8_t bbs;		/* WQEBBs it occupies */
	uint8_t status;		/* 0 or MLX5_CQE_SYNDROME_* */
	uint8_t nseg;		/* data segments (0 for inline) */
	uint16_t flags;		/* enum nm_op_flags */
	uint8_t asize;		/* atomics: operand bytes (4: extended 4-byte form, else 8) */
	uint8_t opmod;		/* ctrl opmod (extended atomics, WAIT mode) */
	uint32_t imm;		/* as stored: big-endian */
	uint32_t len;		/* message length in bytes */
	uint32_t rkey;
	uint64_t raddr;
	uint64_t swap_add, compare, swap_mask, compare_mask; /* atomics, host order;
				 * WAIT: compare = the CQE index waited for,
				 * rkey = the CQ number */
	const struct mlx5_wqe_data_seg *sge; /* data segments (ring or wrap buffer) */
	const uint8_t *inl;	/* inline payload */
	const char *rule;	/* the check that set status, or NULL */
	uint64_t tr_data[2];	/* free for the transport (e.g. first PSN) */
	/* DCI (nm_dc.c): the WQE's address vector, av_ds 16-byte units at av
	 * (0: none - an RC QP, or a NOP / DUMP / WAIT on a DCI) */
	const uint8_t *av;
	uint8_t av_ds;
	uint8_t dc_stream; /* ctrl dci_stream_channel_id, modulo the DCI's streams */
	uint32_t dc_dctn;  /* the DCT number the AV names */
	uint64_t dc_key;   /* the access key it presents (host order) */
};

struct nm_qp_err {
	uint8_t syndrome, vendor, opcode;
	uint16_t wqe_index;
	char rule[48];
	char text[160];
};

struct nm_qp {
	struct gdak_qp base;	/* must be first */
	struct nm_ctx *ctx;
	struct nm_thread *thr;
	uint32_t id;		/* object id for logs (the QPN) */

	/* device-visible block (one allocation): descriptor, rings, records */
	void *dmem;
	size_t dmem_len;
	uint8_t dmem_kind;
	/* attr.handler / attr.sharing, copied: core's gdak_qp_create rewrites
	 * base.attr after the QP is already served by its NIC thread */
	uint8_t handler, sharing;
	struct gdak_dev_qp *dqp;
	uint8_t *sq;		/* sq_cnt * 64 */
	uint32_t sq_cnt, sq_mask;
	uint32_t *dbrec;	/* [0] receive, [1] send, be32 */
	uint8_t *uar;		/* 4 KiB "UAR" page; register at +0x800 */
	uint64_t *proxy_pi;
	struct gdak_mr *scratch_mr; /* 8 bytes in dmem: put+signal's discarded fetch */
	uint8_t *rq;		/* receive WQEs */
	uint32_t rq_cnt, rq_stride, rq_max_sge;
	/* the send and receive CQ: &own_scq / &own_rcq, or external CQs
	 * (nm_ext.h; both may be the same object) */
	struct nm_cq *scq, *rcq;
	struct nm_cq own_scq, own_rcq;
	/* the rings are the device's (nm_ext_qp_create): the NIC never clears
	 * them (RESET included) and frees only its own block */
	bool ext;
	bool ext_uar; /* the UAR page is the device's too */
	/* rings / records in GPU memory (nm_ring_gpu.c): sq, rq, dbrec above
	 * are host shadows of them; NULL for host rings */
	struct nm_rg_qp *rg;

	/* doorbell stage (NIC thread) */
	uint64_t db_reg_last;	/* register contents seen last */
	uint64_t rung_pi;	/* producer index the last ring announced */
	uint64_t pi;		/* producer index the NIC works to */
	uint16_t rec_last;	/* record value seen last */
	bool rung_any;
	uint64_t bf_bad;	/* WQE whose BlueFlame copy differed (UINT64_MAX: none) */
	uint64_t bf_wait;	/* WQE whose BlueFlame copy is still to be verified */
	uint64_t bf_since_ns;
	uint8_t bf_seen[64];
	uint64_t db_odd_since_ns; /* record and ring disagree since (0: they agree) */
	uint64_t db_odd_reg;
	uint16_t db_odd_rec;
	bool db_odd_reported;
	bool no_dbrec; /* GDAK_QP_F_SQ_NO_DBREC: the register alone rings */
	/* the register has two halves (UAR + 0x800, + 0x900) that rdma-core
	 * alternates between (bf->offset ^= bf->buf_size); the doorbell stage
	 * watches both.  db_reg_last is the newest value, db_half_last[] each
	 * half's; reg_half the half written last (-1: none yet) */
	uint64_t db_half_last[2];
	int8_t reg_half;
	uint8_t bf_wait_half; /* the half holding the BlueFlame copy to verify */
	/* the device picks DB (8-byte) or BlueFlame (64-byte) per doorbell, as a
	 * ConnectX tells them apart by the write's size (nm_ext_qp_doorbell_any:
	 * a verbs QP handed out by mlx5dv_init_obj).  A single-WQE ring is then
	 * a BlueFlame copy only if the half's bytes past the first 8 moved:
	 * half_shadow holds each half as last resolved */
	_Atomic bool db_any;
	/* every doorbell of the QP is followed by nm_thread_kick (a verbs QP
	 * whose WQEs gdak's libibverbs posts): its thread may sleep in the
	 * kernel instead of polling the doorbell (nm_ext_qp_doorbell_notify) */
	_Atomic bool db_notify;
	bool bf_same_half; /* the copy being verified went to the half used last */
	uint8_t half_shadow[2][64];

	/* requester (NIC thread) */
	uint64_t ci;		/* next WQEBB to fetch */
	struct nm_op inflight[NM_MAX_INFLIGHT];
	uint32_t if_head, if_tail; /* ring of ops executed, not yet completed */
	uint32_t reads_outstanding;
	uint64_t busy_since_ns;	/* head op BUSY since (RNR timeout) */
	bool stopped;		/* an error op is queued: fetch no further */
	uint64_t traced_to;	/* WQEs below this index are in the trace already (a
				 * WQE decoded again after a wait is not recorded twice) */
	uint64_t wait_warned;	/* WAIT at index - 1 was reported (wait_index_ahead) */
	uint8_t req_state;	/* nm_req.c's enum nm_req_state: where it stopped last */
	uint8_t wrap[NM_WRAP_BUF] __attribute__((aligned(16)));

	/* thread scheduling */
	uint32_t idle_passes;
	bool active;
	bool on_thread;
	uint32_t thr_slot;	/* index in thread's qps[] */

	/* DCI / DCT state (nm_dc.c), NULL for an RC QP */
	struct nm_dc *dc;

	/* transport */
	void *tr_priv;
	/* set by the transport (QP's thread) while ops it holds may make later
	 * ones wait: the requester then asks tr->exec_wait before each op */
	bool tr_gate;
	struct gdak_qp_info peer_info;

	/* responder side (any thread, under resp_lock) */
	pthread_spinlock_t resp_lock;
	uint64_t rq_ci;		/* receive WQEs consumed */
	/* Optional: called under resp_lock when a message finds the RQ empty,
	 * before it is refused with RNR; it may post receive WQEs (gdak's
	 * libibverbs feeds a QP from its SRQ this way). */
	_Atomic(void (*)(void *arg)) rq_empty;
	void *rq_empty_arg;
	/* Optional, with rq_empty: the index the receive CQE names for each RQ
	 * slot (rq_cnt entries), written by the hook with the WQE it posts.  A
	 * DEVX RMP's WQEs complete with their index in the RMP's ring, not
	 * the position in this QP's RQ the hook copied them to. */
	uint16_t *rq_wqe_id;

	/* error state */
	pthread_mutex_t err_lock;
	struct nm_qp_err err;
	bool err_set;
	char viol_rule[48]; /* the last violation, failing or not (err_lock) */
	char viol_text[160];

	struct gdak_nic_stats st; /* single writer per field group; read relaxed */
};

/* base is the first member: the cast goes through void * because nm_qp is
 * more aligned than gdak_qp (its wrap buffer), which clang -Wcast-align flags */
static inline struct nm_qp *nm_qp_of(struct gdak_qp *q) { return (struct nm_qp *)(void *)q; }
static inline int nm_qp_state(const struct nm_qp *qp)
{
	return atomic_load_explicit(&((struct nm_qp *)qp)->base.state, memory_order_acquire);
}

/* statistics: one writer per counter, readers load relaxed */
static inline void nm_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* ---- engine-wide settings (nm_api.c) ---------------------------------------- */

struct nm_config {
	_Atomic int strict;	  /* 1 (default) or 0 */
	_Atomic int poll;	  /* enum gdak_nic_poll */
	_Atomic unsigned threads; /* NIC threads to start */
	_Atomic uint32_t rnr_timeout_ms;
	_Atomic(struct gdak_trace *) trace;
};
extern struct nm_config nm_cfg;
static inline int nm_strict(void) { return atomic_load_explicit(&nm_cfg.strict, memory_order_relaxed); }
void nm_config_init_env(void);
/* At every open: 0, or why GDAK_TRACE / GDAK_FAULTS make it fail (logged). */
int nm_config_env_check(void);
/* The last emu context closed: the NIC threads are gone; close the trace
 * (a trace covers one session of the engine). */
void nm_trace_engine_stopped(void);
/* process-wide counters of objects already gone (their stats survive) */
void nm_stats_retire(const struct gdak_nic_stats *st);

/* ---- nm_mem.c ---------------------------------------------------------------- */

int nm_mem_alloc(struct gdak_ctx *ctx, size_t len, enum gdak_mem_kind kind, void **addr);
int nm_mem_free(struct gdak_ctx *ctx, void *addr);
enum gdak_mem_kind nm_mem_kind_of(struct gdak_ctx *ctx, const void *addr);
int nm_mr_reg(struct gdak_ctx *ctx, void *addr, size_t len, unsigned access, struct gdak_mr **mr);
/* The same with the key's low byte chosen by the caller (variant 0..255; -1:
 * random): a DEVX CREATE_MKEY's mkc.mkey_7_0, which the program ORs into
 * the key it computes from the mkey index. */
int nm_mr_reg_variant(struct gdak_ctx *ctx, void *addr, size_t len, unsigned access, int variant,
		      struct gdak_mr **mr);
int nm_mr_dereg(struct gdak_mr *mr);
void nm_mem_ctx_fini(struct nm_ctx *ctx);

/* Data path: the MR behind key, or NULL (unknown / deregistered).  Valid
 * until the calling NIC thread's next quiescent point. */
static inline struct nm_mr *nm_mr_get(struct nm_ctx *ctx, uint32_t key)
{
	uint32_t idx = key >> 8;
	_Atomic(struct nm_mr *) *chunk;
	struct nm_mr *mr;

	if (idx >= NM_MR_CHUNK * NM_MR_CHUNKS)
		return NULL;
	chunk = __atomic_load_n(&ctx->mrt[idx / NM_MR_CHUNK], __ATOMIC_ACQUIRE);
	if (!chunk)
		return NULL;
	mr = atomic_load_explicit(&chunk[idx % NM_MR_CHUNK], memory_order_acquire);
	if (!mr || mr->base.lkey != key)
		return NULL;
	return mr;
}

/* nm_mr_get through a one-entry cache (owned by the calling thread). */
static inline struct nm_mr *nm_mr_get_cached(struct nm_key_cache *c, struct nm_ctx *ctx,
					     uint32_t key)
{
	uint32_t gen = atomic_load_explicit(&ctx->mr_gen, memory_order_acquire);

	if (__builtin_expect(c->key == key && c->ctx == ctx && c->gen == gen && c->mr, 1))
		return c->mr;
	c->mr = nm_mr_get(ctx, key);
	c->ctx = ctx;
	c->key = key;
	c->gen = gen;
	return c->mr;
}

/* 1 when [addr, addr+len) lies inside mr (len 0 included). */
static inline int nm_mr_covers(const struct nm_mr *mr, uint64_t addr, uint64_t len)
{
	return addr >= mr->start && addr <= mr->end && len <= mr->end - addr;
}

/* ---- nm_qp.c --------------------------------------------------------------------- */

int nm_qp_create(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr, struct gdak_qp **qp);
int nm_qp_destroy(struct gdak_qp *qp);
int nm_qp_info(struct gdak_qp *qp, struct gdak_qp_info *out);
int nm_qp_modify(struct gdak_qp *qp, enum gdak_qp_state to, const struct gdak_qp_info *peer);
int nm_qp_export(struct gdak_qp *qp, struct gdak_dev_qp **dqp);
int nm_qp_query_error(struct gdak_qp *qp, struct gdak_qp_error *err);
/* An unordered array of QPs (the QPN registry, nm_dc.c's DCTs); whoever
 * uses one holds the lock that guards it. */
struct nm_qp_list {
	struct nm_qp **v;
	uint32_t n, cap;
};
/* Room for one more QP (the array doubles, from first): 0 or -ENOMEM. */
int nm_qp_list_reserve(struct nm_qp_list *l, uint32_t first);
/* Take qp out: the last one takes its place. */
void nm_qp_list_del(struct nm_qp_list *l, const struct nm_qp *qp);
/* The QP with this number in l, or NULL. */
struct nm_qp *nm_qp_list_find(const struct nm_qp_list *l, uint32_t qpn);
/* The loop transport's registry: the live QP with this number, or NULL.
 * Takes the registry lock; control path only. */
struct nm_qp *nm_qp_lookup(uint32_t qpn);
/* QP with rings the device allocated (nm_ext.c checks ext and builds qa). */
struct nm_ext_qp_attr;
int nm_qp_create_ext(struct gdak_ctx *ctx, const struct gdak_qp_attr *qa,
		     const struct nm_ext_qp_attr *ext, struct gdak_qp **qp);
/* The CQ with this number (send or receive CQ of a live QP), or NULL.
 * Takes the registry lock.  NIC threads may call it: the CQ stays valid
 * until the caller's next quiescent point (destroy waits a grace period). */
struct nm_cq *nm_cq_lookup(uint32_t cqn);
/* The embedded CQ (of a QP with NIC-allocated rings) with this number. */
struct nm_cq *nm_cq_lookup_own(uint32_t cqn);
/* nm_ext.c: the external CQ with this number, or NULL (same validity). */
struct nm_cq *nm_ext_cq_lookup(uint32_t cqn);
/* nm_ext.c: a CQ number no live CQ (embedded or external) has. */
int nm_ext_cqn_used(uint32_t cqn);
/* Record the first error of a QP (later ones are ignored) and move it to
 * ERR.  Any thread. */
void nm_qp_set_error(struct nm_qp *qp, uint8_t syndrome, uint8_t opcode, uint16_t wqe_index,
		     const char *rule, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Sum of the counters of every live QP. */
void nm_qp_stats_sum(struct gdak_nic_stats *st);

/* ---- nm_thread.c ---------------------------------------------------------------- */

int nm_engine_get(void);	/* start the NIC threads (refcounted by contexts) */
void nm_engine_put(void);
unsigned nm_engine_nthreads(void);
/* Wait until every NIC thread has passed a quiescent point (grace period):
 * after it, no thread holds a pointer loaded before the call.  Control path
 * only; returns at once when no NIC thread runs. */
void nm_engine_sync(void);
/* The thread for a new QP (nic_thread < 0: round robin). */
struct nm_thread *nm_engine_pick(int nic_thread);
/* Run fn(arg) on thr's loop and wait for it (from a thread other than thr). */
void nm_thread_call(struct nm_thread *thr, void (*fn)(void *arg), void *arg);
struct ev_loop *nm_thread_loop(struct nm_thread *thr);
/* 1 when called on thr itself. */
bool nm_thread_is_current(const struct nm_thread *thr);
/* The thread was started before the last fork() of this process: a child
 * must not run, kick or send for it (nm_thread.c). */
bool nm_thread_inherited(const struct nm_thread *thr);
uint32_t nm_thread_id(const struct nm_thread *thr);
/* The trace buffer of the calling NIC thread (NULL on other threads). */
struct gdak_trace_buf *nm_thread_tbuf_cur(void);
/* On thr: serve / stop serving qp. */
void nm_thread_add_qp(struct nm_thread *thr, struct nm_qp *qp);
void nm_thread_del_qp(struct nm_thread *thr, struct nm_qp *qp);
/* On the QP's thread: put it on the active list now and end the thread's
 * back-off sleep (same as nm_thread_kick from the QP's own thread). */
void nm_thread_activate(struct nm_qp *qp);
/* Any thread: make the QP's thread look at it soon (async wakeup).  On
 * the QP's own thread (a transport's ev_io / ev_timer callback that
 * completed ops with nm_comp_op_done) it reactivates the QP and ends the
 * thread's back-off sleep, so the CQEs are written without delay. */
void nm_thread_kick(struct nm_qp *qp);
/* Thread thr's engine work run in the calling thread when thr's engine
 * lock is free (try-lock: never waits): pre(arg), then qp (may be NULL)
 * activated and a few passes.  1 done, 0 not run (the caller kicks).
 * nm_thread.c "inline runs". */
int nm_thread_try_inline(struct nm_thread *thr, struct nm_qp *qp, void (*pre)(void *), void *arg);
/* A transport armed a deadline in_ns from now (ev_timer): in an inline
 * run, wakes the thread afterwards if its wait would end later. */
void nm_thread_deadline(struct nm_thread *thr, uint64_t in_ns);
/* Test hook: take (on) / give back the engine lock of thr from a thread
 * that is not a NIC thread; while held, thr runs nothing. */
void nm_thread_hold(struct nm_thread *thr, int on);
/* Test hook: park (on) / unpark thr: parked, it runs nothing and leaves
 * its engine lock free, so only inline runs drive the engine.  One thread
 * parked at a time: 0, -EALREADY, -errno. */
int nm_thread_park(struct nm_thread *thr, int on);
/* The calling thread is in an inline run (not the NIC thread itself). */
bool nm_thread_inline(void);
uint64_t nm_now_ns(void);

/* ---- nm_doorbell.c -------------------------------------------------------------- */

/* Producer index to work to (checks the record, register and proxy word);
 * returns 1 when new work was announced. */
int nm_db_poll(struct nm_qp *qp);
/* BlueFlame copy of the WQE at qp->bf_wait: 0 go on, 1 wait, -1 mismatch. */
int nm_db_bf_verify(struct nm_qp *qp);
/* Cheap test for an idle QP: anything changed since last look? */
int nm_db_peek(const struct nm_qp *qp);
/* Called when a QP has been idle a while: record without ring etc.
 * Returns 1 to keep it on the active list (a disagreement still settling). */
int nm_db_idle_check(struct nm_qp *qp);
void nm_db_reset(struct nm_qp *qp);
/* FLUSH in ERR: the producer index everything posted reaches (record,
 * register or proxy word, rung or not), the doorbells taken as seen; the
 * consumer itself when the device's producer is garbage. */
uint64_t nm_db_flush_producer(struct nm_qp *qp);

/* ---- nm_req.c --------------------------------------------------------------------- */

/* One pass of a QP: doorbell, requester, completer, flush.  Returns the
 * work done (0 = nothing happened). */
int nm_req_progress(struct nm_qp *qp);
/* 1 while the QP must stay on the active list (work in flight). */
int nm_req_busy(const struct nm_qp *qp);
void nm_req_reset(struct nm_qp *qp);

/* ---- nm_resp.c ---------------------------------------------------------------------- */

/*
 * A message as the responder applies it.  A packet transport calls
 * nm_resp_begin at the first packet (rkey, va, total length and receive WQE
 * checked/consumed there), nm_resp_write / nm_resp_read per segment at its
 * byte offset, and nm_resp_end at the last; the loop transport does all of
 * it in one go.  Every call returns 0 or the syndrome the REQUESTER must see
 * (REMOTE_ACCESS_ERR, REMOTE_INVAL_REQ_ERR, REMOTE_OP_ERR, ...), or
 * NM_RESP_RNR when no receive WQE is posted (retry later).
 */
#define NM_RESP_RNR 0x100
#define NM_WQE_NONE 0xffffffffu	/* the requester's WQE index is not known */
/* len at nm_resp_begin of a SEND whose total a packet transport learns only
 * at its last packet: data is checked against the receive WQE as it comes,
 * the length given to nm_resp_end_len */
#define NM_RESP_LEN_UNKNOWN 0xffffffffu
struct nm_resp_msg {
	struct nm_qp *qp;	/* the responder QP */
	uint32_t req_wqe;	/* requester's WQE index, for logs and violations
				 * (the loop transport knows it; NM_WQE_NONE from a
				 * packet transport, which sees PSNs only) */
	uint8_t opcode;		/* MLX5_OPCODE_* of the request */
	uint32_t len;		/* total message length */
	uint32_t imm;		/* big-endian, as in the WQE */
	/* RDMA: target */
	struct nm_mr *mr;
	uint8_t *va;
	/* SEND / WRITE_IMM: the receive WQE consumed */
	bool has_rwqe;
	uint16_t rwqe_index;
	uint8_t nrsge;
	bool len_unknown;	/* begun with NM_RESP_LEN_UNKNOWN */
	uint32_t cap;		/* bytes the receive WQE holds */
	struct { uint8_t *addr; uint32_t len; struct nm_mr *mr; } rsge[16];
	const char *rule;
};
int nm_resp_begin(struct nm_qp *qp, struct nm_resp_msg *m, uint8_t opcode, uint64_t va,
		  uint32_t rkey, uint32_t len, uint32_t imm);
/* The same, naming the requester's WQE (req_wqe, or NM_WQE_NONE): responder
 * logs and violation records then carry it instead of no index at all. */
int nm_resp_begin_wqe(struct nm_qp *qp, struct nm_resp_msg *m, uint32_t req_wqe, uint8_t opcode,
		      uint64_t va, uint32_t rkey, uint32_t len, uint32_t imm);
/* RDMA_WRITE: start copying len bytes from src into the target at offset off
 * on the DMA engine's asynchronous path (t: nm_dma.h).  0 once started
 * (t->done may be 1 already), or a syndrome. */
int nm_resp_write_start(struct nm_resp_msg *m, uint32_t off, const void *src, uint8_t src_kind,
			uint32_t len, struct nm_dma_ticket *t);
/* Copy len bytes from src (kind src_kind) into the message at byte offset off. */
int nm_resp_write(struct nm_resp_msg *m, uint32_t off, const void *src, uint8_t src_kind,
		  uint32_t len);
/* RDMA_READ: copy len bytes of the target at offset off to dst (kind dst_kind). */
int nm_resp_read(struct nm_resp_msg *m, uint32_t off, void *dst, uint8_t dst_kind, uint32_t len);
/* A multi-packet RDMA_WRITE turned out, at its last packet, to carry an
 * immediate (WRITE_LAST_IMM, IBA 9.2): consume the receive WQE now (the
 * rkey checked at begin stands; no second begin).  0, NM_RESP_RNR (the
 * packet is retried: call again), or a syndrome. */
int nm_resp_imm(struct nm_resp_msg *m, uint32_t imm);
/* Completes the message: receive CQE for SEND / WRITE_IMM.  status != 0
 * aborts it (responder error CQE as IBA wants for the case). */
int nm_resp_end(struct nm_resp_msg *m, int status);
/* The same for a message begun with NM_RESP_LEN_UNKNOWN: len is its total
 * (more than the receive WQE holds: LOCAL_LENGTH_ERR on the responder,
 * REMOTE_INVAL_REQ_ERR returned for the requester). */
int nm_resp_end_len(struct nm_resp_msg *m, int status, uint32_t len);
/* Atomic on the responder: returns 0 or a syndrome; *orig is the value
 * before the operation (host order).  op->wqe_index names the requester's
 * WQE when op->flags has NM_OPF_WQE. */
int nm_resp_atomic(struct nm_qp *qp, uint8_t opcode, uint64_t va, uint32_t rkey,
		   const struct nm_op *op, uint64_t *orig, const char **rule);
/* Flush posted receive WQEs with WR_FLUSH_ERR (QP in ERR).  Returns count. */
int nm_resp_flush(struct nm_qp *qp);
/* Posted, not consumed receive WQEs. */
uint32_t nm_resp_rq_avail(struct nm_qp *qp);

/* ---- nm_dc.c: the Dynamically Connected transport ------------------------------------ */

struct nm_dc;
/* nm_qp_create: a DCI / DCT (attr.type) gets its DC state; 0 or -errno
 * (-ENOTSUP on a transport DC is not modelled on).  fini: destroy, before
 * the grace period (the DCT leaves the DC registry). */
int nm_dc_qp_init(struct nm_qp *qp, const struct gdak_qp_attr *a);
int nm_dc_qp_publish(struct nm_qp *qp); /* after the QPN is drawn */
void nm_dc_qp_fini(struct nm_qp *qp);
void nm_dc_qp_free(struct nm_qp *qp); /* after the grace period */
/* nm_qp_info: the DC fields (type, key, LID) */
void nm_dc_qp_info(struct nm_qp *qp, struct gdak_qp_info *out);
/* nm_qp_modify: a DCI went to RESET / ERR - its streams close */
void nm_dc_streams_close(struct nm_qp *qp, const char *why);
/* Requester decode (FETCH + CHECK) on a DCI: read the address vector at w
 * + 16 into op.  Returns its DS count (1 or 3), 0 when the opcode takes
 * none, or -1 with op->status set. */
int nm_dc_decode_av(struct nm_qp *qp, struct nm_op *op, const uint8_t *w, uint32_t ds);
int nm_dc_udp_local(struct nm_qp *qp, const struct nm_op *op);
enum nm_tx_result nm_dc_udp_post_send(struct nm_qp *qp, struct nm_op *op);
/* Before EXECUTE: the op's stream is open to its target (opening it, or
 * closing the stream's previous target first).  1 while it must wait for
 * the ops still in flight on the old target. */
int nm_dc_stream_enter(struct nm_qp *qp, struct nm_op *op);
/* Loop transport: the DCT op's AV names, checked (number, address, state,
 * access key), or NULL with op->status / op->rule set. */
struct nm_qp *nm_dc_target(struct nm_qp *qp, struct nm_op *op);
/* A transport's DCT got a DC request from DCI dci presenting key: 0 when the
 * DCT answers it; -EAGAIN when it is not in RTR, -EACCES for a wrong key
 * (counted as a key violation); logged, rate-limited. */
int nm_dc_dct_check(struct nm_qp *dct, uint64_t key, uint32_t dci);
/* The LID the loop transport gives a context's QPs (nonzero, per process). */
uint16_t nm_dc_loop_lid(const struct nm_ctx *ctx);
/* udp transport, a DCI's request: executed in place on the DCT of this
 * process its AV names (as the loop transport executes it) */

/* ---- nm_comp.c ---------------------------------------------------------------------- */

/* Write a requester CQE for op (success when op->status == 0 and only if
 * signalled; error CQE otherwise, moving the QP to ERR). */
void nm_comp_send(struct nm_qp *qp, struct nm_op *op);
/* 1 when cq has room for one more CQE (the device consumed enough). */
int nm_comp_cq_room(struct nm_qp *qp, struct nm_cq *cq);
/* Flush CQE for a send WQE that will not execute. */
void nm_comp_flush(struct nm_qp *qp, uint16_t wqe_index, uint8_t opcode);
/* A receive completion (or receive error / flush when syndrome != 0). */
void nm_comp_recv(struct nm_qp *qp, uint8_t cqe_opcode, uint16_t wqe_index, uint32_t byte_cnt,
		  uint32_t imm, uint8_t syndrome, uint8_t opcode);
/* Transport: op (in qp->inflight) completed with status. */
void nm_comp_op_done(struct nm_qp *qp, struct nm_op *op, uint8_t status);
/* RETIRE: CQEs in WQE order for the done ops at the head of qp->inflight;
 * returns how many retired. */
int nm_comp_retire(struct nm_qp *qp);
/* FLUSH (QP in ERR): in-flight ops and posted WQEs complete with
 * WR_FLUSH_ERR; returns the work done. */
int nm_comp_flush_sq(struct nm_qp *qp);

/* ---- nm_check.c --------------------------------------------------------------------- */

/* The rules (each function's comment: the rule, what ConnectX does, what
 * gdak does).  A check returns 1 when its rule fired: op->status and
 * op->rule are set (warnings: reported only).  Requester, at DECODE: */
int nm_check_bad_opcode_rule(struct nm_qp *qp, struct nm_op *op,
			     const struct gdak_mlx5_op_info *info);
/* atomic_opmod, bad_ds, wqe_past_producer, wqe_index_mismatch,
 * qpn_mismatch, bf_mismatch (in that order).  The DS range comes from the
 * opcode's info row (a masked atomic's from its opmod, which also sets
 * op->asize and *seg, its atomic segment's bytes), widened by a DCI's
 * address vector of av_ds. */
int nm_check_ctrl_rule(struct nm_qp *qp, struct nm_op *op, const struct gdak_mlx5_op_info *info,
		       const struct gdak_mlx5_ctrl *c, uint32_t av_ds, uint32_t *seg);
int nm_check_wait_opmod(struct nm_qp *qp, struct nm_op *op);
/* inline_not_allowed, inline_overflow: inline data of len bytes, rem DS left */
int nm_check_inline(struct nm_qp *qp, struct nm_op *op, const struct gdak_mlx5_op_info *info,
		    uint32_t len, uint32_t rem);
/* length, atomic_length: data segments of total bytes (sets op->len) */
int nm_check_sges_rule(struct nm_qp *qp, struct nm_op *op, const struct gdak_mlx5_op_info *info,
		       uint64_t total);
/* Requester, around EXECUTE: */
int nm_check_wait_bad_cq(struct nm_qp *qp, struct nm_op *op, const struct nm_cq *cq);
void nm_check_wait_index_ahead(struct nm_qp *qp, const struct nm_op *op, const struct nm_cq *cq,
			       uint32_t produced);
int nm_check_atomic_transport(struct nm_qp *qp, struct nm_op *op);
/* the transport said BUSY: 1 while it is retried, 0 once the op failed */
int nm_check_rnr_retry(struct nm_qp *qp, struct nm_op *op);
/* Doorbell stage: */
int nm_check_producer_overrun(struct nm_qp *qp, uint64_t p, const char *what_db);
void nm_check_bf_not_alternated(struct nm_qp *qp, uint64_t idx, unsigned half, int same_half);
void nm_check_bf_mismatch(struct nm_qp *qp, uint64_t idx, const uint8_t copy[64],
			  const uint8_t ring[64]);
enum {
	NM_DB_REC_AHEAD = 1,
	NM_DB_RING_AHEAD = 2
};
/* record_without_ring / ring_without_record: which (or 0), then its report */
int nm_check_db_disagree(const struct nm_qp *qp, uint64_t rec_pi);
void nm_check_db_disagree_report(struct nm_qp *qp, int which, uint64_t rec_pi, uint64_t half0,
				 uint64_t half1);
/* Responder: */
int nm_check_rkey_rule(struct nm_qp *qp, uint32_t need, uint64_t va, uint32_t rkey, uint64_t len,
		       struct nm_mr **mrp, const char **rule, char *why, size_t why_len);
int nm_check_rq_overrun(struct nm_qp *qp, uint32_t avail, uint8_t opcode);
const char *nm_check_recv_sge(struct nm_qp *qp, uint16_t rwqe, uint32_t i, const struct nm_mr *mr,
			      uint32_t lkey, uint64_t a, uint32_t l);
int nm_check_atomic_unaligned_rule(struct nm_qp *qp, uint16_t idx, uint32_t req_wqe, uint8_t opcode,
				   uint64_t va, uint32_t sz);
/* responder_not_ready, bad_request, no_rq, rnr, recv_too_small, length:
 * the syndrome for the requester (0: passed), *rule and why set */
int nm_check_resp_ready_rule(struct nm_qp *qp, const char **rule, char *why, size_t why_len);
int nm_check_resp_opcode(uint8_t opcode, const char **rule, char *why, size_t why_len);
int nm_check_no_rq(const struct nm_qp *qp, uint8_t opcode, const char **rule, char *why,
		   size_t why_len);
int nm_check_resp_rnr(struct nm_qp *qp, uint32_t avail, const char **rule);
int nm_check_recv_too_small(const struct nm_resp_msg *m, uint64_t need, const char **rule,
			    char *why, size_t why_len);
int nm_check_resp_length(const struct nm_resp_msg *m, uint32_t off, uint32_t len, bool need_mr,
			 bool read, const char **rule, char *why, size_t why_len);
int nm_check_resp_len_known(const struct nm_resp_msg *m, const char **rule, char *why,
			    size_t why_len);
/* Completer: */
int nm_check_cq_overrun(struct nm_qp *qp, struct nm_cq *cq, uint16_t wqe_index);
/* DC (nm_dc.c, tr_udp.c): the DCI's AV and the DCT it names.  The DCT
 * checks take op NULL on the DCT side (the request is dropped, 1 returned). */
int nm_check_dc_av_size(struct nm_qp *qp, struct nm_op *op);
void nm_check_dc_av_reserved(struct nm_qp *qp, const struct nm_op *op, uint32_t dqp);
int nm_check_dc_no_av(struct nm_op *op);
int nm_check_dc_no_dct(struct nm_qp *qp, struct nm_op *op, const struct nm_qp *dct);
int nm_check_dc_av_target_loop(struct nm_qp *qp, struct nm_op *op, uint16_t lid, uint16_t dct_lid,
			       const uint8_t gid[16]);
int nm_check_dc_av_target_gid(struct nm_qp *qp, struct nm_op *op, const uint8_t gid[16],
			      const uint8_t *dct_gid);
/* dc_av_compact, dc_av_target: an AV the udp wire can route */
int nm_check_dc_av_route(struct nm_qp *qp, struct nm_op *op);
int nm_check_dc_dct_state(struct nm_qp *dct, uint32_t dci, struct nm_qp *qp, struct nm_op *op);
int nm_check_dc_key_violation(struct nm_qp *dct, uint64_t want, uint64_t key, uint64_t *count,
			      uint32_t dci, struct nm_op *op);
/* emu:verbs (tr_verbs.c): verbs_opcode, verbs_too_many_sge, verbs_reg_mr
 * (op failed: 1), its rq_overrun and recv_bad_lkey (reported: 1), recv_bounce */
int nm_check_verbs_opcode(struct nm_qp *qp, struct nm_op *op, bool has_wr);
int nm_check_verbs_nseg(struct nm_qp *qp, struct nm_op *op, unsigned max_sge);
int nm_check_verbs_reg_mr(struct nm_qp *qp, struct nm_op *op, bool registered);
int nm_check_verbs_rq_overrun(struct nm_qp *qp, uint64_t posted, uint16_t prod, uint32_t n);
int nm_check_verbs_recv_sge(struct nm_qp *qp, uint16_t rwqe, uint32_t i, const struct nm_mr *mr,
			    bool registered, uint32_t lkey, uint64_t a, uint32_t l);
void nm_check_verbs_recv_bounce(struct nm_qp *qp, uint16_t rwqe, uint32_t len);
/* Report a strict-mode violation: counter, rate-limited log, trace record. */
void nm_violation(struct nm_qp *qp, uint16_t wqe_index, const char *rule, uint8_t syndrome,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A check failed: the op carries the syndrome; strict-mode rules count as
 * violations (log, counter, trace).  Returns 1 (the check fired). */
int nm_check_fail(struct nm_qp *qp, struct nm_op *op, uint8_t synd, const char *rule, int violation,
		  const char *what);
/* Resolve local data segment i of op: host pointer + MR, with the lkey,
 * access and bounds checks.  Returns 0 or a syndrome (rule set). */
int nm_check_local_sge_rule(struct nm_qp *qp, const struct nm_op *op, unsigned i,
			    unsigned need_access, void **addr, uint32_t *len, struct nm_mr **mr,
			    const char **rule);

/* The hottest rules' pass conditions, inline: every WQE meets them, and an
 * out-of-line call per rule was a fifth of the NIC thread's work per WQE
 * (docs/BENCHMARKS.md, "Session 12").  When a condition does not hold, the
 * rule's own function in nm_check.c (nm_check_<rule>_rule, the same
 * arguments) decides, sets the op's status and reports; these only let
 * what certainly passes skip the call. */
static inline int nm_check_bad_opcode(struct nm_qp *qp, struct nm_op *op,
				      const struct gdak_mlx5_op_info *info)
{
	if (__builtin_expect(info && (info->flags & GDAK_OPF_SUPPORTED), 1))
		return 0;
	return nm_check_bad_opcode_rule(qp, op, info);
}

/* (a masked atomic's DS range depends on its opmod, a DCI's on its AV:
 * those go to the rule function) */
static inline int nm_check_ctrl(struct nm_qp *qp, struct nm_op *op,
				const struct gdak_mlx5_op_info *info,
				const struct gdak_mlx5_ctrl *c, uint32_t av_ds, uint32_t *seg)
{
	if (__builtin_expect(!(info->flags & GDAK_OPF_MASKED) && !av_ds && op->opmod != 0xff &&
				     op->ds >= info->min_ds && op->ds <= info->max_ds &&
				     op->bbs <= qp->pi - qp->ci && c->wqe_index == op->wqe_index &&
				     c->qpn == qp->base.qpn && qp->bf_bad != qp->ci,
			     1))
		return 0;
	return nm_check_ctrl_rule(qp, op, info, c, av_ds, seg);
}

static inline int nm_check_sges(struct nm_qp *qp, struct nm_op *op,
				const struct gdak_mlx5_op_info *info, uint64_t total)
{
	if (__builtin_expect(total <= 0x80000000ull &&
				     (!(info->flags & (GDAK_OPF_ATOMIC | GDAK_OPF_MASKED)) ||
				      (op->nseg == 1 && total == op->asize)),
			     1)) {
		op->len = (uint32_t)total;
		return 0;
	}
	return nm_check_sges_rule(qp, op, info, total);
}

static inline int nm_check_rkey(struct nm_qp *qp, uint32_t need, uint64_t va, uint32_t rkey,
				uint64_t len, struct nm_mr **mrp, const char **rule, char *why,
				size_t why_len)
{
	struct nm_mr *mr = nm_mr_get(qp->ctx, rkey);

	if (__builtin_expect(mr && (mr->base.access & need) == need && nm_mr_covers(mr, va, len),
			     1)) {
		*mrp = mr;
		return 0;
	}
	return nm_check_rkey_rule(qp, need, va, rkey, len, mrp, rule, why, why_len);
}

static inline int nm_check_atomic_unaligned(struct nm_qp *qp, uint16_t idx, uint32_t req_wqe,
					    uint8_t opcode, uint64_t va, uint32_t sz)
{
	if (__builtin_expect(!(va & (sz - 1)), 1))
		return 0;
	return nm_check_atomic_unaligned_rule(qp, idx, req_wqe, opcode, va, sz);
}

static inline int nm_check_resp_ready(struct nm_qp *qp, const char **rule, char *why,
				      size_t why_len)
{
	int st = nm_qp_state(qp);

	if (__builtin_expect(st == GDAK_QPS_RTR || st == GDAK_QPS_RTS, 1))
		return 0;
	return nm_check_resp_ready_rule(qp, rule, why, why_len);
}

static inline int nm_check_local_sge(struct nm_qp *qp, const struct nm_op *op, unsigned i,
				     unsigned need, void **addr, uint32_t *len, struct nm_mr **mrp,
				     const char **rule)
{
	uint64_t a;
	uint32_t l, lkey;
	struct nm_mr *mr;

	gdak_mlx5_data_decode(&op->sge[i], &a, &l, &lkey);
	mr = nm_mr_get(qp->ctx, lkey);
	if (__builtin_expect(mr && (mr->base.access & need) == need && nm_mr_covers(mr, a, l), 1)) {
		*addr = (void *)(uintptr_t)a;
		*len = l;
		*mrp = mr;
		return 0;
	}
	return nm_check_local_sge_rule(qp, op, i, need, addr, len, mrp, rule);
}

/* ---- nm_fault.c ---------------------------------------------------------------------- */

/* 1 when any fault is configured (GDAK_FAULTS / gdak_nic_set_faults). */
extern _Atomic int nm_faults_on;
/* Before executing op: may set op->status (injected error). */
void nm_fault_wqe_slow(struct nm_qp *qp, struct nm_op *op);
/* acquire: the rule table written before nm_faults_on was set is seen */
static inline void nm_fault_wqe(struct nm_qp *qp, struct nm_op *op)
{
	if (__builtin_expect(atomic_load_explicit(&nm_faults_on, memory_order_acquire), 0))
		nm_fault_wqe_slow(qp, op);
}
/* Before writing a CQE: returns 1 to delay it (retry next pass). */
int nm_fault_cqe_slow(struct nm_qp *qp, struct nm_op *op);
static inline int nm_fault_cqe(struct nm_qp *qp, struct nm_op *op)
{
	if (__builtin_expect(atomic_load_explicit(&nm_faults_on, memory_order_acquire), 0))
		return nm_fault_cqe_slow(qp, op);
	return 0;
}
/* Before looking at a QP's doorbells: returns 1 while a stall rule holds it. */
int nm_fault_db_stall_slow(struct nm_qp *qp);
static inline int nm_fault_db_stall(struct nm_qp *qp)
{
	if (__builtin_expect(atomic_load_explicit(&nm_faults_on, memory_order_acquire), 0))
		return nm_fault_db_stall_slow(qp);
	return 0;
}
int nm_fault_parse(const char *spec);
/* GDAK_FAULTS from the environment (once, nm_api.c), and at every open: its
 * verdict (0, or -EINVAL with a message naming the bad entry). */
void nm_fault_env(const char *spec);
int nm_fault_env_check(void);

/* ---- nm_dma.h is the memory engine; trace wrappers: one branch when off ------- */

/* nm_thread.c: the buffer of the trace batch the calling NIC thread's
 * current pass has begun (NULL outside a pass, before its first record, and
 * on other threads) - the data path's records skip the lookup. */
extern __thread struct gdak_trace_buf *nm_tbuf_pass;

/* nm_thread.c: WQEs the pass has fetched and not traced yet - one stretch
 * of single-WQEBB WQEs at consecutive slots of one QP's ring, handed to
 * gdak_trace_wqes() in one call (a few instructions per WQE of a steady
 * stream, against a call each) before the pass's next record of any other
 * kind, before it publishes a CQE (until then the device may not reuse
 * those slots, so their bytes are still the ones fetched) and at its end. */
struct nm_wqe_pend {
	struct nm_qp *qp;
	const uint8_t *w;	/* the first one's slot */
	uint16_t idx;
	uint32_t n;
};
extern __thread struct nm_wqe_pend nm_pend;
void nm_trace_pend_flush(void);
void nm_trace_wqe_slow(struct nm_qp *qp, uint16_t idx, const uint8_t *w, uint32_t bbs);

static inline void nm_trace_pend_flush_if(void)
{
	if (__builtin_expect(nm_pend.n != 0, 0))
		nm_trace_pend_flush();
}

static inline struct gdak_trace_buf *nm_tbuf(struct nm_qp *qp)
{
	if (__builtin_expect(!atomic_load_explicit(&nm_cfg.trace, memory_order_relaxed), 1))
		return NULL;
	nm_trace_pend_flush_if();	/* the fetched WQEs come first */
	if (nm_tbuf_pass)
		return nm_tbuf_pass;
	return nm_thread_tbuf_cur();
}

/* A WQE the requester fetched (bbs WQEBBs at w, its ring index idx). */
static inline void nm_trace_wqe(struct nm_qp *qp, uint16_t idx, const uint8_t *w, uint32_t bbs)
{
	struct nm_wqe_pend *p = &nm_pend;

	if (__builtin_expect(!atomic_load_explicit(&nm_cfg.trace, memory_order_relaxed), 1))
		return;
	if (p->n && p->qp == qp && bbs == 1 && w == p->w + 64 * (size_t)p->n &&
	    idx == (uint16_t)(p->idx + p->n)) {
		p->n++;
		return;
	}
	nm_trace_wqe_slow(qp, idx, w, bbs);
}
/* NM_TRACE(qp, gdak_trace_wqe, qpn, ...): the record when tracing is on.
 * NM_HAVE_TRACE is defined when core/ carries the trace writer. */
#ifdef NM_HAVE_TRACE
#define NM_TRACE(qp, fn, ...)                                      \
	do {                                                       \
		struct gdak_trace_buf *tb_ = nm_tbuf(qp);          \
		if (tb_)                                           \
			fn(tb_, __VA_ARGS__);                      \
	} while (0)
/* One NIC pass is one trace batch: its doorbells, WQEs and CQEs share a
 * timestamp and a block.  nm_thread_tbuf_cur() begins it at the pass's
 * first record (nm_tbuf_pass); the pass ends it. */
#define NM_TRACE_PASS_END(batch)                                   \
	do {                                                       \
		if (batch) {                                       \
			nm_trace_pend_flush_if();                  \
			gdak_trace_batch_end(batch);               \
			(batch) = NULL;                            \
		}                                                  \
	} while (0)
#else
#define NM_TRACE(qp, fn, ...) ((void)(qp))
#define NM_TRACE_PASS_END(batch) ((void)0)
#endif

/* ---- nm_ring_gpu.c: rings in GPU memory ------------------------------------ */

/* GPU addresses of a CQ's rings (NULL: that part is host memory) */
struct nm_rg_cq {
	uint8_t *cqes;
	uint32_t *dbrec;
	void *shadow;	 /* external CQs: the host shadow (malloc) */
	uint64_t gdr[2]; /* external CQs: GDRCopy pins of buffer and record */
	bool mapped;	 /* the buffer is under a GDRCopy mapping: CQEs are stores */
};
struct nm_rg_qp {
	uint8_t *sq, *rq;
	uint32_t *dbrec;
	uint64_t sq_have;  /* the SQ shadow holds the WQEBBs below this index */
	uint64_t sq_want;  /* the producer the doorbells announced (qp->pi is held
			   * at sq_have until the fetch lands) */
	uint64_t fetch_to; /* a fetch in flight up to here (0: none) */
	void *fetch_ev;	   /* its event (nm_cu_event) */
	uint64_t rq_have;  /* the RQ shadow: receive WQEs below this index */
	void *gblock;	   /* GDAK_QP_F_QUEUES_GPU: the NIC's own GPU block */
	size_t glen;
	void *shadow;		  /* external rings: the host shadow (malloc) */
	uint64_t gdr[3];	  /* external rings: GDRCopy pins of SQ, RQ, record */
	bool sq_mapped;		  /* the SQ is under a GDRCopy mapping: fetches are loads */
	struct nm_rg_cq scq, rcq; /* the embedded CQs' part of gblock */
};
/* 1 while the calling NIC thread is inside a pass (CQEs wait for its end) */
extern __thread int nm_rg_in_pass;
extern __thread int nm_rg_pending;
int nm_rg_available(void);
/* WQE fetch: the SQ shadow up to WQEBB index `to`, waited for (QP to ERR
 * on failure); nm_rg_sq_step: the doorbell stage's asynchronous form,
 * every pass - starts the fetch of what the doorbells announced, and holds
 * qp->pi at what has landed (returns 1 when qp->pi moved) */
void nm_rg_sq_fetch(struct nm_qp *qp, uint64_t to);
int nm_rg_sq_step(struct nm_qp *qp);
static inline void nm_rg_sq_need(struct nm_qp *qp, uint64_t to)
{
	if (__builtin_expect(qp->rg != NULL, 0) && qp->rg->sq && to > qp->rg->sq_have)
		nm_rg_sq_fetch(qp, to);
}
/* record reads: the SQ record (idle check), the receive record and newly
 * posted receive WQEs (returns receive WQEs available), the CQ consumer */
int nm_rg_sq_rec_read(struct nm_qp *qp);
/* len bytes of GPU memory into dst, waited for (DEVX RMP rings); 0 or -EIO */
int nm_rg_read(void *dst, const void *gpu, size_t len);
uint32_t nm_rg_rq_refresh(struct nm_qp *qp);
void nm_rg_cq_rec_read(struct nm_cq *cq);
/* CQE write: cqe (in the shadow, complete) to GPU slot `slot` */
void nm_rg_cqe(struct nm_cq *cq, const struct mlx5_cqe64 *cqe, uint32_t slot);
/* the end of a NIC pass: deliver its CQEs (and submit the CUDA engine's
 * open batch when it holds stream-ordered CQEs: nm_cuda_pass_pending) */
void nm_rg_pass_end(void);
extern __thread int nm_cuda_pass_pending;
void nm_cuda_pass_end(void);
static inline void nm_rg_pass_end_if(void)
{
	if (__builtin_expect(nm_rg_pending | nm_cuda_pass_pending, 0))
		nm_rg_pass_end();
}
/* QP setup: GDAK_QP_F_QUEUES_GPU (own GPU block), external rings found in
 * GPU memory (swaps sq/rq/dbrec for shadows), reset (own block: the
 * initial contents pushed), teardown, and the address the device uses for
 * a shadow pointer */
int nm_rg_qp_own(struct nm_qp *qp);
int nm_rg_qp_ext(struct nm_qp *qp);
void nm_rg_qp_reset(struct nm_qp *qp);
void nm_rg_qp_fini(struct nm_qp *qp);
void *nm_rg_dev_addr(const struct nm_qp *qp, const void *host);
/* external CQ whose buffer / record is GPU memory */
int nm_rg_cq_ext(struct nm_cq *cq, int buf_gpu, int rec_gpu);
void nm_rg_cq_fini(struct nm_cq *cq);
/* ring fetches, fetch bytes, record reads (either path); CQE batches and
 * CQEs through the driver; reads (fetches and records) and CQEs through
 * GDRCopy mappings */
void nm_rg_stats(uint64_t out[7]);

/* ---- nm_backend.c ---------------------------------------------------------------------- */

const struct nm_transport_ops *nm_transport_find(const char *name, size_t n);
uint64_t nm_node_id(void);
/* A QP or MR of ctx went away: finish a deferred close once nothing is left. */
void nm_ctx_maybe_free(struct nm_ctx *ctx);

#endif /* NM_LOC_H */
