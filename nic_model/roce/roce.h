/* SPDX-License-Identifier: MIT */
/*
 * roce.h - the RoCEv2 RC protocol engine (internal to nic_model/roce/).
 *
 * A self-contained implementation of the InfiniBand reliable-connection
 * transport (IBA vol. 1 ch. 9) in its RoCEv2 encapsulation (annex A17): it
 * builds and parses packets (BTH..ICRC, i.e. the UDP payload), keeps the
 * requester's PSN window with go-back-N retransmission, and plays the
 * responder with duplicate detection and a read/atomic replay cache.  It
 * owns no socket, no clock and no memory: everything outside the protocol
 * goes through struct roce_ops, so a unit test drives it with a fake wire
 * and fake memory, and nic_model/tr_udp.c glues it to UDP sockets, libev
 * timers and the NIC model's responder.
 *
 * Files (the opcode table and the ICRC are core's wire facts,
 * core/wire/roce_opcode.c and roce_icrc.c): roce_req.c (requester +
 * completer), roce_resp.c (responder), roce_qp.c (QP set-up, receive dispatch, timers), roce_fault.c (packet
 * fault injection).
 *
 * Threading: one roce_qp is driven by one thread at a time (its NIC
 * thread); a roce_ctx's fault state is shared by its QPs and must be used
 * from one thread too (tr_udp serves a context from one NIC thread or
 * gives each thread its own context).
 */
#ifndef GDAK_NM_ROCE_H
#define GDAK_NM_ROCE_H

#include <stddef.h>
#include <stdint.h>

#include <gdak/mlx5.h>	/* MLX5_CQE_SYNDROME_*: the engine reports these */
#include <gdak/roce.h>

/* The wire facts - constants, opcode table, header accessors, PSN
 * arithmetic, ICRC - are core's (<gdak/roce.h>, core/wire/). */

/* ---- engine objects ----------------------------------------------------------- */

enum roce_wr_op {
	ROCE_WR_SEND = 0,
	ROCE_WR_SEND_IMM,
	ROCE_WR_WRITE,
	ROCE_WR_WRITE_IMM,
	ROCE_WR_READ,
	ROCE_WR_CMP_SWAP,
	ROCE_WR_FETCH_ADD,
	ROCE_WR_XMASKED_CS, /* extended: masks and asize (4 or 8) */
	ROCE_WR_XMASKED_FA,
	ROCE_WR_NOPS
};
static inline int roce_wr_is_atomic(unsigned op)
{
	return op == ROCE_WR_CMP_SWAP || op == ROCE_WR_FETCH_ADD || op == ROCE_WR_XMASKED_CS ||
	       op == ROCE_WR_XMASKED_FA;
}
const char *roce_wr_op_name(unsigned op);

enum {
	ROCE_WRF_FENCE = 1u << 0,     /* wait until every earlier WR completed */
	ROCE_WRF_SOLICITED = 1u << 1, /* BTH SE on the last packet */
};

/* One work request as the requester keeps it until completion. */
struct roce_wr {
	uint64_t cookie;	/* the caller's (the NIC model: its struct nm_op *) */
	uint8_t op;		/* enum roce_wr_op */
	uint8_t flags;		/* ROCE_WRF_* */
	uint32_t len;		/* message bytes (atomics: 8) */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;		/* network order */
	uint64_t swap_add, cmp;	/* atomics, host order */
	uint64_t swap_mask, cmp_mask; /* extended atomics (FA: field boundary in swap_mask) */
	uint8_t asize;		      /* extended atomics: operand bytes, 4 or 8 */
	uint8_t dc_stream;	      /* DCI: the WQE's stream channel (DCETH) */
	uint64_t dc_key;	      /* DCI: the access key its AV presents (DCETH) */
	/* engine-owned */
	uint32_t first_psn;
	uint32_t npkts;		/* PSNs it occupies */
	uint32_t rx_pkts;	/* read: response packets taken */
	uint8_t sent;		/* PSNs assigned */
	uint8_t resumed;	/* read: re-requested from the middle (responses may
				 * restart with FIRST/ONLY there) */
};

/* Engine statistics (per QP; the context keeps those of packets that never
 * reached a QP).  One writer, the QP's NIC thread (ROCE_STAT); any thread may
 * read them (roce_stats_read), so every access is a relaxed atomic. */
struct roce_stats {
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	uint64_t retransmits;	/* packets sent again */
	uint64_t timeouts;	/* retransmission timer expiries (retry spent) */
	uint64_t early_timeouts; /* RTT-adaptive expiries before the IBA timeout */
	uint64_t seq_naks_sent, seq_naks_rcvd;
	uint64_t rnr_naks_sent, rnr_naks_rcvd;
	uint64_t err_naks_sent, err_naks_rcvd;
	uint64_t acks_sent, acks_rcvd;
	uint64_t dup_reqs;	/* duplicate requests seen by the responder */
	uint64_t bad_xatomics;	/* malformed extended atomics refused (NAK invalid request) */
	uint64_t dup_resps;	/* stale/duplicate responses dropped by the requester */
	uint64_t ooo_drops;	/* out-of-sequence packets dropped */
	uint64_t icrc_errors;	/* dropped: ICRC mismatch */
	uint64_t icrc_ip_id;	/* accepted with a non-zero IPv4 ID solved for */
	uint64_t bad_pkts;	/* dropped: malformed, wrong P_Key/TVer, unknown QP */
	uint64_t xmit_busy;	/* the wire said "later" (socket full) */
	uint64_t tx_local;	/* of tx_pkts, handed to a peer QP in this process (the
				 * owner's count: tr_udp's inbox, no kernel in between) */
	uint64_t foreign_pkts;	/* dropped: not from the connected peer's address/port */
	uint64_t unsolicited;	/* dropped: ACK/NAK/response with nothing outstanding */
	uint64_t direct_wqes;	/* requester: WQEs executed in the peer's memory by this
				 * thread, no packet (tr_udp_direct.c) */
	uint64_t direct_in;	/* responder: requests a peer's requester put in that way
				 * (the transport's count, filled in by nm_tr_udp_qp_stats) */
	uint64_t f_drop, f_dup, f_reorder, f_corrupt, f_delay; /* injected */
};

/* The single writer needs no read-modify-write: a relaxed load and store
 * keep a reader on another thread race-free and cost what a plain add does. */
static inline void roce_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

#define ROCE_STAT(st, field) roce_stat_add(&(st).field, 1)
#define ROCE_STAT_ADD(st, field, n) roce_stat_add(&(st).field, (n))

/* A snapshot of counters that the NIC thread may be updating: each field on
 * its own (the set as a whole is not one instant, which no reader needs). */
static inline void roce_stats_read(struct roce_stats *dst, const struct roce_stats *src)
{
	_Static_assert(sizeof(struct roce_stats) % sizeof(uint64_t) == 0,
		       "roce_stats: uint64_t counters only");
	const uint64_t *s = (const uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;

	for (size_t i = 0; i < sizeof(*src) / sizeof(uint64_t); i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

static inline void roce_stats_zero(struct roce_stats *st)
{
	uint64_t *d = (uint64_t *)st;

	for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
		__atomic_store_n(&d[i], 0, __ATOMIC_RELAXED);
}

enum roce_qp_state { ROCE_QPS_RESET = 0, ROCE_QPS_RTS, ROCE_QPS_ERR };

/* The responder's sequence state: what a request must match to be taken. */
struct roce_rseq {
	uint32_t epsn; /* next PSN expected */
	uint32_t msn;  /* messages completed (AETH MSN) */
};

/* roce_qp.dc: which side of gdak's DC wire (docs/UDP.md "DC") a QP is */
enum {
	ROCE_DC_NONE = 0,  /* RC */
	ROCE_DC_INITIATOR, /* DCI: requester, its requests carry the DCETH */
	ROCE_DC_TARGET,	   /* DCT: takes DC requests, hands each to dc_flow */
	ROCE_DC_FLOW,	   /* a DCT's responder context for one DCI */
};

/* Settings of one QP (roce_qp_init fills the defaults for zeros). */
struct roce_cfg {
	uint32_t mtu;		/* path MTU: 256..4096, min of both ends */
	uint32_t sq_size;	/* WRs in flight at the engine, power of two (default 256) */
	uint32_t window;	/* unacknowledged PSNs the requester may have out (default 256) */
	uint32_t max_rd_atomic;	/* outstanding READ/atomic (default 16); also the
				 * responder's replay-cache depth */
	uint8_t retry_cnt;	/* transport retries, 0..7 (default 7) */
	uint8_t rnr_retry;	/* RNR retries, 0..7; 7 = forever (default 7) */
	uint8_t min_rnr_timer;	/* the code our RNR NAKs carry (table 45; default 1 = 10 us) */
	uint8_t cfg_set;	/* internal: defaults applied */
	uint8_t retry_forever;	/* emulator extension, not IBA: the timer never gives up
				 * (for tests at loss rates where 7 retries do not suffice) */
	uint64_t timeout_ns;	/* retransmission timeout (default 20 ms): the IBA
				 * timeout, after which each expiry spends a retry */
	uint64_t min_rto_ns;	/* floor of the RTT-adaptive early timeout (default
				 * timeout_ns / 10); == timeout_ns: not adaptive */
	uint16_t pkey;
};

struct roce_qp;
struct roce_ctx;

/* Status values from the responder callbacks: 0, a syndrome
 * (MLX5_CQE_SYNDROME_REMOTE_*: mapped to the NAK code), or ROCE_RNR. */
#define ROCE_RNR 0x100

/* A message the responder is receiving (SEND, WRITE). */
struct roce_rmsg {
	uint8_t kind;		/* ROCE_WR_SEND or ROCE_WR_WRITE */
	uint8_t has_imm;
	uint8_t active;
	uint32_t imm;		/* network order */
	uint64_t va;		/* WRITE: target, from the RETH */
	uint32_t rkey;
	uint32_t dma_len;	/* WRITE: total length; SEND: 0 (unknown until the last packet) */
	uint32_t off;		/* bytes taken so far */
	void *priv;		/* the callbacks' state */
};

struct roce_xatomic;
struct roce_ops {
	/* Transmit one packet (UDP payload, ICRC included) on qp's path.
	 * 0 = sent (or consumed), -EAGAIN = not now (try again after the
	 * wire drains), other <0 = lost (counted; retransmission recovers). */
	int (*xmit)(struct roce_qp *qp, const uint8_t *pkt, uint32_t len);
	/* Receive dispatch: the QP with this number, or NULL. */
	struct roce_qp *(*lookup)(struct roce_ctx *ctx, uint32_t qpn);

	/* requester: read len bytes of wr's local data at byte offset off
	 * (SEND/WRITE payload), or store the result of a READ (data) or an
	 * atomic (8 bytes, host order).  0 or a local syndrome. */
	int (*req_gather)(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, void *dst,
			  uint32_t len);
	int (*req_scatter)(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, const void *src,
			   uint32_t len);
	/* requester: wr finished with status 0 or a syndrome (TRANSPORT_RETRY_EXC,
	 * RNR_RETRY_EXC, REMOTE_*, WR_FLUSH_ERR for what follows an error). */
	void (*req_complete)(struct roce_qp *qp, struct roce_wr *wr, uint8_t status);

	/* responder, SEND / WRITE: m->kind, va, rkey, dma_len are set.  For a
	 * SEND, or a WRITE with immediate, a receive WQE is needed: ROCE_RNR
	 * when none is posted. */
	int (*resp_begin)(struct roce_qp *qp, struct roce_rmsg *m);
	int (*resp_data)(struct roce_qp *qp, struct roce_rmsg *m, uint32_t off, const void *src,
			 uint32_t len);
	/* A multi-packet WRITE turned out to carry an immediate (its last
	 * packet is WRITE_LAST_IMM; m->has_imm/imm are set now): it needs a
	 * receive WQE after all.  0 or ROCE_RNR; called before that packet's
	 * data is applied. */
	int (*resp_imm)(struct roce_qp *qp, struct roce_rmsg *m);
	/* Message complete (status 0) or aborted (status: the syndrome the
	 * responder's receive CQE shows).  0 or a syndrome. */
	int (*resp_end)(struct roce_qp *qp, struct roce_rmsg *m, int status);
	/* responder, READ: check rights once, then copy per response packet. */
	int (*resp_read_check)(struct roce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len);
	int (*resp_read)(struct roce_qp *qp, uint32_t rkey, uint64_t va, void *dst, uint32_t len);
	/* responder, atomic (8-byte aligned checked by the engine): apply, *orig
	 * = the value before (host order). */
	int (*resp_atomic)(struct roce_qp *qp, uint8_t opcode, uint32_t rkey, uint64_t va,
			   uint64_t swap_add, uint64_t cmp, uint64_t *orig);
	/* Optional: responder, extended atomic (ExtAtomicETH checked, x->va
	 * aligned to x->size): apply, *orig = the value before (host order,
	 * the low x->size bytes).  NULL: the opcodes are refused (NAK invalid
	 * request) as a responder without them refuses them. */
	int (*resp_xatomic)(struct roce_qp *qp, const struct roce_xatomic *x, uint64_t *orig);
	/* responder hit a fatal error (IBA class B/C/D: the QP goes to ERR). */
	void (*resp_fatal)(struct roce_qp *qp, uint8_t syndrome, const char *why);
	/* Optional: the requester moved the QP to ERR with no WR to carry the
	 * syndrome (req_complete saw none), so the owner learns of it here:
	 * a QP is never dead inside while its owner thinks it healthy. */
	void (*req_fatal)(struct roce_qp *qp, uint8_t syndrome, const char *why);
	/* Optional: a packet for this QP came from somebody else than the
	 * connected peer (rx: where from) and was dropped. */
	void (*rx_foreign)(struct roce_qp *qp, const struct roce_path *rx, const uint8_t *pkt,
			   uint32_t len);

	/* Optional: where to build the next packet (ROCE_MAX_PKT bytes), so that
	 * it needs no copy when xmit gets the same pointer back (the
	 * transport's send batch).  NULL: the QP's own buffer. */
	uint8_t *(*tx_buf)(struct roce_qp *qp);
	/* DCT (qp->dc == ROCE_DC_TARGET): a DC request packet (BTH + DCETH
	 * checked for length) came from rx: the responder context that serves
	 * its DCI (the owner checks the access key and the DCT's state, keeps
	 * one context per DCI and starts it over with roce_dc_accept at a new
	 * connection), or NULL to drop it unanswered, as a ConnectX DCT drops
	 * a connect it refuses. */
	struct roce_qp *(*dc_flow)(struct roce_qp *dct, const struct roce_path *rx,
				   const uint8_t *pkt);
	/* Optional: every packet sent (dir 0) or received (dir 1), for traces. */
	/* For a received packet, rx is the path it came on (the sender's own
	 * UDP source port: the ICRC covers it) and ip_id the IPv4 ID its ICRC
	 * matched with (a UDP socket does not show the sender's); the trace's
	 * frame carries both so that its ICRC checks out.  Sent: NULL, 0. */
	void (*trace_pkt)(struct roce_qp *qp, int dir, const uint8_t *pkt, uint32_t len,
			  const struct roce_path *rx, uint16_t ip_id);
};

struct roce_fault;	/* roce_fault.c */

struct roce_ctx {
	const struct roce_ops *ops;
	void *priv;		/* the owner's */
	uint32_t id;		/* for logs */
	struct roce_fault *faults; /* NULL: none */
	struct roce_stats stats;   /* packets that reached no QP */
};

/* An extended atomic as the responder received it (host order). */
struct roce_xatomic {
	uint8_t opcode; /* ROCE_XMASKED_CMP_SWAP / ROCE_XMASKED_FETCH_ADD */
	uint8_t size;	/* 4 or 8 */
	uint32_t rkey;
	uint64_t va, swap_add, cmp, swap_mask, cmp_mask;
};

/* A read or atomic the responder executed: what a duplicate of it gets. */
struct roce_rd_res {
	uint8_t valid;
	uint8_t opcode;		/* ROCE_READ_REQ / ROCE_CMP_SWAP / ROCE_FETCH_ADD */
	uint32_t psn;		/* first PSN */
	uint32_t npkts;
	uint64_t va;
	uint32_t rkey, len;
	uint64_t orig;		/* atomics: the reply */
};

/* A response the responder still has to send (read data, atomic ACK). */
struct roce_job {
	uint8_t opcode;		/* of the request */
	uint32_t psn;		/* next response PSN */
	uint64_t va;		/* next byte to read */
	uint32_t rkey;
	uint32_t left;		/* bytes still to send */
	uint8_t first;		/* next packet is the first of the response */
	uint64_t orig;
};

/* A packet held back by fault injection (reorder / delay). */
struct roce_held {
	struct roce_held *next;
	uint64_t due_ns;	/* delay: when; reorder: 0 (after the next packet) */
	uint32_t len;
	uint8_t pkt[];
};

struct roce_qp {
	struct roce_ctx *ctx;
	void *priv;		/* the owner's */
	uint32_t qpn, dqpn;
	uint8_t dc;		/* ROCE_DC_*: RC or a side of DC */
	uint32_t dc_conn;	/* DCI: connection number of the stream; flow: the one it serves */
	uint32_t dc_psn0;	/* DCI: the connection's first PSN */
	struct roce_path path;	/* our packets' IPv4/UDP headers */
	/* Peer binding (rxe's check_addr): in RTS only packets from path.dip
	 * are taken, and from UDP port peer_sport when it is not 0 (a peer
	 * that sends from the port it advertised; a kernel or hardware RoCE
	 * stack picks its source port per flow, so 0 checks the address only). */
	uint16_t peer_sport;
	struct roce_cfg cfg;
	int state;		/* enum roce_qp_state */
	uint8_t err_syn;	/* why the QP went to ERR (0: the owner moved it) */
	const char *err_why;

	/* requester (roce_req.c) */
	struct roce_wr *sq;	/* ring of cfg.sq_size */
	uint32_t sq_head;	/* posted */
	uint32_t sq_una;	/* oldest not completed */
	uint32_t sq_tx;		/* next to (re)transmit */
	uint32_t tx_pkt;	/* packet index inside sq[sq_tx] */
	uint32_t tx_psn;	/* next PSN to send */
	uint32_t una_psn;	/* oldest PSN not acknowledged */
	uint32_t max_psn;	/* one past the highest PSN ever sent */
	uint32_t rd_inflight;	/* READ/atomic WRs sent, not completed */
	uint8_t retry_left, rnr_left;
	uint8_t retry_armed;	/* a NAK/gap may start a go-back (cleared until progress) */
	uint64_t rto_due_ns;	/* retransmission timer; 0 = stopped */
	uint64_t rto_ns;	/* current timeout: RTT-adaptive, doubled per expiry,
				 * never above cfg.timeout_ns */
	uint64_t srtt_ns, rttvar_ns; /* smoothed RTT and its variation (0: no sample) */
	uint64_t rtt_t0;	/* send time of rtt_psn (0: no sample running) */
	uint32_t rtt_psn;
	uint64_t rnr_due_ns;	/* RNR wait; 0 = none */
	uint64_t now_ns;	/* time of the current engine call */

	/* responder (roce_resp.c); rseq: rseq_own, or where the transport
	 * keeps them for a peer that takes requests in without packets
	 * (tr_udp_direct.c: the one copy both paths advance) */
	struct roce_rseq *rseq;
	struct roce_rseq rseq_own;
	uint8_t last_op;	/* opcode of the last accepted request packet */
	uint8_t nak_sent;	/* a NAK went out for the current gap / RNR */
	uint8_t resp_err;	/* fatal: the responder takes nothing more */
	struct roce_rmsg rmsg;
	struct {
		uint8_t pending;
		uint8_t syn;	/* AETH syndrome */
		uint32_t psn;
	} ack;
	struct roce_rd_res *res; /* ring of cfg.max_rd_atomic */
	uint32_t res_next;
	struct roce_job *jobs;	/* FIFO of 2 * cfg.max_rd_atomic */
	uint32_t job_head, job_tail;

	/* fault injection */
	struct roce_held *held;	/* reorder/delay queue, due order not kept */
	uint32_t nheld;

	uint8_t *pkt;		/* where the packet being built is: pkt_own or ops->tx_buf's */
	uint8_t pkt_own[ROCE_MAX_PKT] __attribute__((aligned(8)));
	struct roce_stats stats;
};

/* ---- roce_qp.c ------------------------------------------------------------------ */

void roce_ctx_init(struct roce_ctx *ctx, const struct roce_ops *ops, void *priv);
void roce_ctx_fini(struct roce_ctx *ctx);
/* Allocate the rings; cfg zeros mean defaults.  0 or -errno. */
int roce_qp_init(struct roce_qp *qp, struct roce_ctx *ctx, uint32_t qpn,
		 const struct roce_cfg *cfg);
void roce_qp_fini(struct roce_qp *qp);
/* RESET -> RTS: peer QPN, our first send PSN, the peer's first PSN, the
 * path MTU (already the minimum of both ends) and our path. */
int roce_qp_connect(struct roce_qp *qp, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn,
		    uint32_t mtu, const struct roce_path *path);
/* DCI: the stream now goes to DCT dqpn on path (requester idle: -EBUSY
 * otherwise), a new connection starting at PSN sq_psn; responses are taken
 * from path->dip and UDP port peer_sport (0: any). */
int roce_dc_retarget(struct roce_qp *qp, uint32_t dqpn, uint32_t sq_psn,
		     const struct roce_path *path, uint16_t peer_sport);
/* DCT flow: serve DCI dqpn at path from connection conn on, expecting
 * rq_psn, its read responses cut to mtu; what the context held of an
 * earlier connection is dropped. */
void roce_dc_accept(struct roce_qp *qp, uint32_t dqpn, uint32_t conn, uint32_t rq_psn, uint32_t mtu,
		    const struct roce_path *path, uint16_t peer_sport);
/* Move to ERR: every WR not completed completes with WR_FLUSH_ERR. */
void roce_qp_error(struct roce_qp *qp);

/* One received packet (the UDP payload) seen on path (sip = the sender).
 * Checks the ICRC and the headers, then hands it to the QP's requester
 * or responder.  Returns 0, or -EPROTO/-EBADMSG/-ENOENT when dropped,
 * -EPERM when it did not come from the connected peer. */
int roce_rx(struct roce_ctx *ctx, const struct roce_path *path, const uint8_t *pkt,
	    uint32_t len, uint64_t now_ns);
/* Send what may be sent now: requester packets within the window, read
 * responses, atomic ACKs, the coalesced ACK/NAK, held fault packets that
 * are due.  budget caps the packets (one QP cannot hog a thread).  Returns
 * packets sent; call again while it returns budget. */
int roce_qp_progress(struct roce_qp *qp, uint64_t now_ns, int budget);
/* The next time roce_qp_timer must run (retransmission, RNR wait, delayed
 * packets), or UINT64_MAX. */
uint64_t roce_qp_deadline(const struct roce_qp *qp);
void roce_qp_timer(struct roce_qp *qp, uint64_t now_ns);
/* 1 while the QP has work in flight (WRs not completed, responses or an
 * ACK not yet sent, held packets). */
int roce_qp_busy(const struct roce_qp *qp);
const char *roce_qp_state_name(int state);

/* ---- roce_req.c ----------------------------------------------------------------- */

/* Queue wr (copied).  0, -EAGAIN when the engine's ring is full, -EINVAL
 * for a malformed WR, -EIO when the QP is in ERR. */
int roce_post(struct roce_qp *qp, const struct roce_wr *wr);
int roce_req_send(struct roce_qp *qp, int budget);
/* 1 when the requester has nothing posted, unacknowledged or waiting (RTS,
 * every PSN sent acknowledged): a request now would carry tx_psn and be the
 * only one the responder has to take. */
int roce_req_idle(const struct roce_qp *qp);
/* The requester's next npkts PSNs were taken by the responder without
 * packets (an idle requester only): they count as sent and acknowledged. */
void roce_req_skip(struct roce_qp *qp, uint32_t npkts);
void roce_req_rx(struct roce_qp *qp, const uint8_t *pkt, uint32_t payload_len);
void roce_req_timer(struct roce_qp *qp);
void roce_req_flush(struct roce_qp *qp, uint8_t status);
uint32_t roce_wr_npkts(const struct roce_qp *qp, const struct roce_wr *wr);

/* ---- roce_resp.c ---------------------------------------------------------------- */

void roce_resp_rx(struct roce_qp *qp, const uint8_t *pkt, uint32_t payload_len);
int roce_resp_send(struct roce_qp *qp, int budget);
int roce_resp_busy(const struct roce_qp *qp);
/* 1 when the responder would take a new request at rseq->epsn as the first
 * packet of a message: RTS, no fatal error, no message in progress. */
int roce_resp_ready(const struct roce_qp *qp);

/* ---- roce_fault.c --------------------------------------------------------------- */

/* Parse the packet-level part of a GDAK_FAULTS spec (docs/UDP.md); entries
 * of other kinds are left to their owners.  *out is NULL when the spec has
 * none.  0 or -EINVAL (with a message naming the problem). */
int roce_fault_parse(const char *spec, struct roce_fault **out);
void roce_fault_free(struct roce_fault *f);
/* Send pkt through the fault injector and the wire (every packet goes
 * through here).  Returns what ops->xmit returned, 0 for a dropped one. */
int roce_emit(struct roce_qp *qp, uint8_t *pkt, uint32_t len);
/* Release held packets that are due (all of them with force). */
int roce_fault_release(struct roce_qp *qp, int force);
uint64_t roce_fault_deadline(const struct roce_qp *qp);
void roce_fault_qp_fini(struct roce_qp *qp);

/* Internal (roce_qp.c): complete the packet in qp->pkt whose extension
 * headers and plen payload bytes are in place: BTH, pad, ICRC.  Returns
 * its length. */
uint32_t roce_pkt_finish(struct roce_qp *qp, uint8_t opcode, int se, int ackreq, uint32_t psn,
			 uint32_t plen);
/* Internal: point qp->pkt at the buffer the next packet is built in. */
static inline uint8_t *roce_tx_begin(struct roce_qp *qp)
{
	qp->pkt = qp->ctx->ops->tx_buf ? qp->ctx->ops->tx_buf(qp) : qp->pkt_own;
	return qp->pkt;
}
/* Internal: build the BTH and send a bare ACK/NAK (roce_resp.c). */
int roce_send_ack(struct roce_qp *qp, uint8_t syn, uint32_t psn);

#endif /* GDAK_NM_ROCE_H */
