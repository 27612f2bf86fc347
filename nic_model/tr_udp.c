/* SPDX-License-Identifier: MIT */
/*
 * tr_udp.c - the "udp" transport: each NIC-model QP is a RoCEv2 RC endpoint
 * (the engine in roce/) on its own UDP socket.
 *
 * Device strings: "emu:udp" (each QP on a loopback address of its own,
 * 127.0.0.N, port 4791, so that Wireshark's RoCE dissector decodes the
 * traffic as it is), "emu:udp:ephemeral" (127.0.0.1, ephemeral ports),
 * "emu:udp:ADDR" (ephemeral ports), "emu:udp:ADDR:PORT" (QPs bind PORT,
 * PORT+1, ... ; 4791 is RoCEv2's port).
 * One socket per QP gives every QP its own source port (flow entropy, as
 * ConnectX derives it from the QPN) and keeps all of a QP's packets on the
 * NIC thread that serves it: no cross-thread hand-off.  gdak_qp_info
 * carries the address (IPv4-mapped GID), the port, the QPN, the first PSN
 * and the MTU; the path MTU is the smaller of both ends.
 *
 * Sockets are unconnected, with DF set (IP_PMTUDISC_DO): the kernel then
 * sends IP ID 0, which is what the ICRC is computed over (core/wire/roce_icrc.c).
 * Packets go out in sendmmsg batches: the WQEs that one polling pass
 * executes for a QP leave in one system call (post_send builds the packets
 * and sends only when no further WQE is waiting; qp_poll sends what is left
 * at the next pass).  A full socket makes the engine wait (xmit -EAGAIN)
 * rather than drop.  Reception: recvmmsg from qp_poll, but an empty socket
 * is not read again at every pass: the reads back off (1, 2, 4 .. RX_GAP_MAX
 * passes) until a packet comes, while the ev_io watcher reads at once when
 * libev's epoll sees the socket readable (between polling passes, and as the
 * wakeup of a sleeping loop); an ev_timer does the same for the
 * retransmission timer.  Everything of a QP runs on its NIC thread.
 *
 * A peer QP in this process is reached without the kernel: packets go into
 * its inbox (tr_udp_local.c, as rxe loops back packets for its own device);
 * GDAK_UDP_LOCAL=0 sends them through the socket anyway.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "nm_dma.h"
#include <gdak/env.h>

#include "nm_loc.h"
#include "nm_rand.h"
#include "tr_udp.h"

#define BATCH 32
#define MAX_SEG 16
/* Most polling passes between two reads of a socket found empty: bounds the
 * added latency to a few microseconds of passes, and libev's epoll (run
 * every NM_INNER_PASSES passes) catches a readable socket before it. */
#define RX_GAP_MAX 32

/* nm_tr_udp_set_directory's lookup (NULL: none) */
static _Atomic(struct udp_inbox *(*)(uint32_t, uint16_t, uint32_t)) udp_directory;

struct udp_ctx {
	struct in_addr addr;
	uint8_t loopback;	/* "emu:udp": a 127.0.0.N of its own per QP, port 4791 */
	uint16_t base_port;	/* 0: ephemeral */
	uint16_t next_port;
	char faults[512];	/* GDAK_FAULTS, parsed again per QP (own generator) */
	uint64_t rto_ns;	/* retransmission timeout, GDAK_UDP_RTO_US */
	uint64_t min_rto_ns;	/* floor of the RTT-adaptive timer, GDAK_UDP_RTO_MIN_US */
	uint8_t retry_cnt;	/* GDAK_UDP_RETRY: 0..7, or 8 = "forever" (not IBA) */
	uint32_t window;	/* GDAK_UDP_WINDOW: unacknowledged PSNs in flight */
	uint8_t local;		/* GDAK_UDP_LOCAL: peers in this process through their inbox */
	uint8_t direct;		/* GDAK_IBV_DIRECT: peers in other processes of this host
				 * through tr_udp_direct.c */
};

/* What a posted op needs after its WQE slot may have been reused: the
 * resolved local segments, or a copy of the inline data. */
struct udp_op {
	uint8_t nseg;
	struct { uint8_t *addr; uint32_t len; uint8_t kind; } seg[MAX_SEG];
	uint8_t inl[NM_WRAP_BUF];
};

/* A DCT's responder context for one DCI (docs/UDP.md "DC"): an engine
 * QP of its own (PSNs, duplicates, replay cache, ACKs) whose callbacks
 * reach the DCT, with the message it is receiving. */
#define UDP_DC_FLOWS 64
struct udp_flow {
	struct roce_qp rqp; /* first: rm_of; ->priv = the DCT's udp_qp */
	struct nm_resp_msg rm;
	uint32_t sip, dci; /* the DCI: address, QPN, UDP port */
	uint16_t sport;
	uint64_t used; /* last packet, in the DCT's packet count (LRU) */
};

/* A transmit batch; each packet's destination (a DCT answers many DCIs,
 * a DCI turns from one DCT to the next). */
struct udp_txset {
	unsigned n;
	struct sockaddr_in a[BATCH];
	struct mmsghdr m[BATCH];
	struct iovec v[BATCH];
	uint8_t *buf; /* BATCH * ROCE_MAX_PKT */
};

struct udp_qp {
	struct roce_qp rqp;	/* engine; ->priv = this */
	struct roce_ctx rctx;	/* one per QP: its own fault generator, no sharing */
	struct nm_qp *qp;
	int fd;
	struct in_addr addr;
	uint16_t port;
	/* the destination port the packets in our inbox were sent to: our own
	 * port, or a shared one whose owner hands them on (nm_tr_udp_set_rx_port) */
	uint16_t rx_dport;
	uint32_t psn0;
	struct sockaddr_in peer;
	ev_io io;
	ev_timer timer;
	uint64_t timer_due;	/* deadline the ev_timer runs for; UINT64_MAX: stopped */
	int watching;
	/* socket reads: passes to skip before the next one, and the current gap */
	unsigned rx_skip, rx_gap;
	int more;		/* the engine stopped at its budget: more to send */
	/* the in-process wire (tr_udp_local.c) */
	struct udp_inbox *inbox;	/* ours: packets from QPs of this process */
	struct udp_inbox *peer_inbox;	/* the peer's, when it is one of them */
	/* the direct path (tr_udp_direct.c): our responder's entry in our
	 * device's segment, and the peer's segment when it published one */
	struct udp_dseg *dseg_own, *dseg_peer;
	struct udp_direct_qp *dq, *dpeer;
	/* responder message in progress */
	struct nm_resp_msg rm;
	/* DCT: responder contexts, one per DCI (allocated as DCIs come) */
	struct udp_flow *flows[UDP_DC_FLOWS];
	uint64_t dc_pkts;
	/* transmit batches: tx is filled by the engine (under its thread's
	 * engine lock); out is one that an inline run detached to send after
	 * it let go of that lock (inline_detach), older than everything in
	 * tx, sent under txlock before tx by whoever sends: out_busy 1 while
	 * that run sends it, 2 when the socket did not take all of it (the
	 * NIC thread's then), 0 when empty */
	struct udp_txset txs[2];
	struct udp_txset *tx, *out;
	_Atomic int out_busy;
	pthread_mutex_t txlock;
	struct udp_qp *defer_next; /* on this inline run's list (under the engine lock) */
	struct udp_qp *send_next;  /* on its send list (under txlock, after the lock) */
	bool deferred;
	/* receive batch */
	struct mmsghdr rxm[BATCH];
	struct iovec rxv[BATCH];
	struct sockaddr_in rxa[BATCH];
	uint8_t *rxbuf;
	struct udp_op ops[NM_MAX_INFLIGHT];
};

static struct udp_qp *uqp_of(struct roce_qp *r) { return r->priv; }

/* The last clock reading on this NIC thread.  A reading is not free (in the
 * qemu guest, whose clocksource is the HPET, clock_gettime is a system call
 * costing about 0.9 us), and half of a round trip's engine rounds do not
 * need one: see engine_now. */
static __thread uint64_t thr_now;

static uint64_t clock_now(void)
{
	return thr_now = nm_now_ns();
}

/* The time for an engine round.  The engine uses it for RTT samples and
 * deadlines, which exist only while its requester has work out, packets
 * are held by fault injection, or an RNR wait runs; otherwise (a pure
 * responder's round, e.g. the peer's side of every round trip) the
 * thread's last reading does, which is never later than the real time and
 * never earlier than any reading this QP has used before. */
static uint64_t engine_now(struct udp_qp *u)
{
	const struct roce_qp *r = &u->rqp;

	/* an inline run's thread (nm_thread_try_inline) has no reading of
	 * this QP's thread to share: its own may be older than the QP's */
	if (r->sq_una != r->sq_head || r->held || r->rnr_due_ns || u->rctx.faults || !thr_now ||
	    nm_thread_inline())
		return clock_now();
	return thr_now;
}

/* ---- engine callbacks: wire ---------------------------------------------------- */

/* Drop the first n packets of set s (sent), moving the unsent tail to the
 * front (rare: a full socket or inbox). */
static void set_drop_head(struct udp_txset *s, unsigned n)
{
	for (unsigned i = n; i < s->n; i++) {
		memcpy(s->buf + (size_t)(i - n) * ROCE_MAX_PKT, s->buf + (size_t)i * ROCE_MAX_PKT,
		       s->v[i].iov_len);
		s->v[i - n].iov_len = s->v[i].iov_len;
		s->a[i - n] = s->a[i];
	}
	s->n -= n;
}

/* Send set s through the socket; keep what it did not take.  0 or -EAGAIN. */
static int set_send(struct udp_qp *u, struct udp_txset *s)
{
	while (s->n) {
		int n = sendmmsg(u->fd, s->m, s->n, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == ENOBUFS)
				return -EAGAIN;
			/* unreachable peer etc.: the packets are lost, retransmission copes */
			GDAK_WARN_RL("qp", u->qp->id, "sendmmsg: %s", strerror(errno));
			n = 1;
		}
		set_drop_head(s, (unsigned)n);
	}
	return 0;
}

/* What an inline run detached and could not send all of goes first.  0, or
 * -EAGAIN while some of it is still there (or its sender still sends). */
static int out_flush(struct udp_qp *u)
{
	int r = 0;

	if (!atomic_load_explicit(&u->out_busy, memory_order_acquire))
		return 0;
	if (pthread_mutex_trylock(&u->txlock))
		return -EAGAIN; /* its sender is in sendmmsg: the tx batch waits */
	if (u->out->n)
		r = set_send(u, u->out);
	atomic_store_explicit(&u->out_busy, u->out->n ? 2 : 0, memory_order_release);
	pthread_mutex_unlock(&u->txlock);
	return r;
}

/* A batch's packet buffers and their message headers.  0 or -ENOMEM. */
static int set_init(struct udp_txset *t)
{
	t->buf = malloc((size_t)BATCH * ROCE_MAX_PKT);
	if (!t->buf)
		return -ENOMEM;
	for (unsigned i = 0; i < BATCH; i++) {
		t->v[i].iov_base = t->buf + (size_t)i * ROCE_MAX_PKT;
		t->m[i].msg_hdr = (struct msghdr){ .msg_name = &t->a[i],
						   .msg_namelen = sizeof(t->a[i]),
						   .msg_iov = &t->v[i],
						   .msg_iovlen = 1 };
	}
	return 0;
}

/* This inline run's QPs with packets to send once it lets go of the engine
 * lock (nm_tr_udp_inline_detach). */
static __thread struct udp_qp *defer_head;

static int tx_flush(struct udp_qp *u)
{
	struct udp_txset *s = u->tx;

	if (u->peer_inbox && s->n) {
		int n = udp_inbox_push(u->peer_inbox, u->addr.s_addr, u->port, s->v, s->n);

		if (n >= 0) {
			ROCE_STAT_ADD(u->rqp.stats, tx_local, (unsigned)n);
			set_drop_head(s, (unsigned)n);
			return s->n ? -EAGAIN : 0;
		}
		/* the peer QP is gone: what follows goes to its port, and is lost */
		udp_inbox_put(u->peer_inbox);
		u->peer_inbox = NULL;
	}
	if (!s->n)
		return nm_thread_inline() ? 0 : out_flush(u);
	/* In an inline run (the program's thread holding this QP's thread's
	 * engine lock) the system call waits until the run has let go of the
	 * lock: a sender preempted in sendmmsg - the peer it wakes tends to
	 * take its CPU - then holds up nobody.  A full batch goes now. */
	if (s->n < BATCH && nm_thread_inline() && nm_thread_is_current(u->qp->thr)) {
		if (!u->deferred) {
			u->deferred = true;
			u->defer_next = defer_head;
			defer_head = u;
		}
		return 0;
	}
	if (out_flush(u))
		return -EAGAIN;
	return set_send(u, s);
}

/* End of an inline run, still under the engine lock: each deferred QP's tx
 * batch becomes its out batch, with its txlock taken, so that nothing
 * later (the NIC thread, another run) sends before it.  The list of those
 * to send; *wake: some stay for the NIC thread. */
void *nm_tr_udp_inline_detach(int *wake)
{
	struct udp_qp *send = NULL, *u = defer_head, *next;

	defer_head = NULL;
	for (; u; u = next) {
		next = u->defer_next;
		u->deferred = false;
		if (!u->tx->n)
			continue;
		pthread_mutex_lock(&u->txlock);
		if (u->out->n) {
			/* an earlier run's batch the socket did not take all of:
			 * the NIC thread sends it, then this one */
			pthread_mutex_unlock(&u->txlock);
			*wake = 1;
			continue;
		}
		struct udp_txset *t = u->tx;

		if (!u->out->buf && set_init(u->out)) {
			/* no memory for a second batch: the NIC thread
			 * sends this one, as without inline runs */
			pthread_mutex_unlock(&u->txlock);
			*wake = 1;
			continue;
		}
		u->tx = u->out;
		u->out = t;
		atomic_store_explicit(&u->out_busy, 1, memory_order_release);
		u->send_next = send;
		send = u;
	}
	return send;
}

/* After the run let go of the engine lock: send what it detached, one
 * sendmmsg per QP.  1 when the socket did not take everything: the QP's
 * NIC thread has been kicked to send the rest. */
int nm_tr_udp_inline_send(void *list)
{
	struct udp_qp *u = list, *next;
	int left = 0;

	/* in reverse order of detaching: any order will do, each QP's own
	 * packets stay in theirs */
	for (; u; u = next) {
		next = u->send_next;
		if (set_send(u, u->out)) {
			left = 1;
			atomic_store_explicit(&u->out_busy, 2, memory_order_release);
			nm_thread_kick(u->qp);
		} else {
			atomic_store_explicit(&u->out_busy, 0, memory_order_release);
		}
		/* u may be destroyed once this is let go (udp_qp_fini takes it) */
		pthread_mutex_unlock(&u->txlock);
	}
	return left;
}

/* The engine builds its packets in the batch's next free slot: no copy in
 * xmit then (held, duplicated or out-of-batch packets are copied). */
static uint8_t *tx_buf(struct roce_qp *r)
{
	struct udp_qp *u = uqp_of(r);

	if (u->tx->n == BATCH && tx_flush(u))
		return r->pkt_own; /* full: xmit will say -EAGAIN */
	return u->tx->buf + (size_t)u->tx->n * ROCE_MAX_PKT;
}

static int xmit(struct roce_qp *r, const uint8_t *pkt, uint32_t len)
{
	struct udp_qp *u = uqp_of(r);
	uint8_t *slot;

	struct udp_txset *s;

	if (u->tx->n == BATCH && tx_flush(u))
		return -EAGAIN;
	s = u->tx;
	slot = s->buf + (size_t)s->n * ROCE_MAX_PKT;
	if (pkt != slot)
		memcpy(slot, pkt, len);
	s->v[s->n].iov_len = len;
	s->a[s->n] = (struct sockaddr_in){ .sin_family = AF_INET,
					   .sin_port = htons(r->path.dport),
					   .sin_addr.s_addr = r->path.dip };
	s->n++;
	return 0;
}

static struct roce_qp *lookup(struct roce_ctx *c, uint32_t qpn)
{
	struct udp_qp *u = c->priv;
	return u->rqp.qpn == qpn ? &u->rqp : NULL;
}

static void trace_pkt(struct roce_qp *r, int dir, const uint8_t *pkt, uint32_t len,
		      const struct roce_path *rx, uint16_t ip_id)
{
#ifdef NM_HAVE_TRACE
	struct udp_qp *u = uqp_of(r);
	struct gdak_trace_buf *tb = nm_tbuf(u->qp);

	/* received: as it came (the sender's address and port); sent: the QP's path */
	const struct roce_path *p = rx ? rx : &r->path;

	if (tb)
		gdak_trace_packet_id(tb, dir, p->sip, p->dip, p->sport, p->dport, pkt, len, ip_id);
#else
	(void)r; (void)dir; (void)pkt; (void)len; (void)rx; (void)ip_id;
#endif
}

/* ---- the direct path's share of the responder --------------------------------------- */

/* Whether the published responder takes a new message now (its sequence
 * state is the segment's: a sender may advance it under the lock). */
static int direct_ready(const struct udp_qp *u)
{
	int st = nm_qp_state(u->qp);

	return roce_resp_ready(&u->rqp) && (st == GDAK_QPS_RTR || st == GDAK_QPS_RTS);
}

/* One received packet; a published QP's engine runs under the segment's
 * lock, so a sender sees its expected PSN and state as they are. */
static void rx_one(struct udp_qp *u, const struct roce_path *p, const uint8_t *pkt, uint32_t len,
		   uint64_t now)
{
	if (u->dq && !udp_direct_lock(u->dseg_own)) {
		(void)roce_rx(&u->rctx, p, pkt, len, now);
		udp_direct_qp_ok(u->dq, direct_ready(u));
		udp_direct_unlock(u->dseg_own);
		return;
	}
	(void)roce_rx(&u->rctx, p, pkt, len, now);
}

static void direct_unpublish(struct udp_qp *u)
{
	if (u->dq)
		udp_direct_qp_del(u->dseg_own, u->dq, &u->rqp);
	u->dq = NULL;
	udp_direct_put(u->dseg_own);
	u->dseg_own = NULL;
	udp_direct_put(u->dseg_peer);
	u->dseg_peer = NULL;
	u->dpeer = NULL;
}

/* ---- engine callbacks: requester ------------------------------------------------ */

static struct udp_op *uop_of(struct udp_qp *u, struct roce_wr *wr)
{
	struct nm_op *op = (struct nm_op *)(uintptr_t)wr->cookie;
	return &u->ops[op - u->qp->inflight];
}

/* Walk the op's segments from byte off: copy len bytes out (dir 0) or in. */
static int seg_copy(struct udp_op *o, uint32_t off, void *buf, uint32_t len, int in)
{
	uint8_t *b = buf;

	for (unsigned i = 0; i < o->nseg && len; i++) {
		uint32_t l = o->seg[i].len, n;

		if (off >= l) {
			off -= l;
			continue;
		}
		n = l - off < len ? l - off : len;
		if (in ? nm_dma_copy(o->seg[i].addr + off, o->seg[i].kind, b, GDAK_MEM_HOST, n)
		       : nm_dma_copy(b, GDAK_MEM_HOST, o->seg[i].addr + off, o->seg[i].kind, n))
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		b += n;
		len -= n;
		off = 0;
	}
	return len ? MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR : 0;
}

static int req_gather(struct roce_qp *r, struct roce_wr *wr, uint32_t off, void *dst, uint32_t len)
{
	struct udp_qp *u = uqp_of(r);
	struct nm_op *op = (struct nm_op *)(uintptr_t)wr->cookie;
	struct udp_op *o = uop_of(u, wr);

	if (op->flags & NM_OPF_INLINE) {
		memcpy(dst, o->inl + off, len);
		return 0;
	}
	return seg_copy(o, off, dst, len, 0);
}

static int req_scatter(struct roce_qp *r, struct roce_wr *wr, uint32_t off, const void *src,
		       uint32_t len)
{
	struct udp_qp *u = uqp_of(r);
	struct udp_op *o = uop_of(u, wr);

	if (roce_wr_is_atomic(wr->op)) {
		uint64_t v, be;
		uint32_t be32;

		memcpy(&v, src, 8);
		/* ConnectX returns the original value big-endian, in the
		 * operand's size */
		if (wr->asize == 4 &&
		    (wr->op == ROCE_WR_XMASKED_CS || wr->op == ROCE_WR_XMASKED_FA)) {
			be32 = gdak_htobe32((uint32_t)v);
			return seg_copy(o, 0, &be32, 4, 1);
		}
		be = gdak_htobe64(v);
		return seg_copy(o, 0, &be, 8, 1);
	}
	return seg_copy(o, off, (void *)(uintptr_t)src, len, 1);
}

static const char *status_rule(uint8_t status)
{
	return status == MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR ? "udp_retry_exceeded"
	       : status == MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR	   ? "udp_rnr_retry_exceeded"
	       : status == MLX5_CQE_SYNDROME_WR_FLUSH_ERR	   ? NULL
								   : "udp_remote_nak";
}

static void req_complete(struct roce_qp *r, struct roce_wr *wr, uint8_t status)
{
	struct udp_qp *u = uqp_of(r);
	struct nm_op *op = (struct nm_op *)(uintptr_t)wr->cookie;

	if (status && !op->rule)
		op->rule = status_rule(status);
	nm_comp_op_done(u->qp, op, status);
	nm_thread_activate(u->qp);
}

/* The engine went to ERR with no WR to carry it: the NIC model's QP goes
 * to ERR with the cause, so its state and gdak_qp_query_error tell the
 * truth and every WQE from now on gets its flush CQE. */
static void req_fatal(struct roce_qp *r, uint8_t syndrome, const char *why)
{
	struct udp_qp *u = uqp_of(r);
	const char *rule = status_rule(syndrome);

	nm_qp_set_error(u->qp, syndrome, 0, (uint16_t)u->qp->ci, rule ? rule : "udp_requester",
			"requester: %s (%s)", why, gdak_mlx5_syndrome_name(syndrome));
	nm_thread_activate(u->qp);
}

/* A packet to this QP from somebody else than its peer: dropped by the
 * engine; counted, traced as a violation, logged (rate-limited). */
static void rx_foreign(struct roce_qp *r, const struct roce_path *rx, const uint8_t *pkt,
		       uint32_t len)
{
	struct udp_qp *u = uqp_of(r);
	char from[INET_ADDRSTRLEN], want[INET_ADDRSTRLEN], text[160];

	__atomic_fetch_add(&u->qp->st.foreign, 1, __ATOMIC_RELAXED);
	inet_ntop(AF_INET, &rx->sip, from, sizeof(from));
	inet_ntop(AF_INET, &r->path.dip, want, sizeof(want));
	snprintf(text, sizeof(text), "%s PSN 0x%06x (%u bytes) from %s:%u, not the peer %s:%u",
		 gdak_roce_op_name(bth_opcode(pkt)), bth_psn(pkt), len, from, rx->sport, want,
		 r->peer_sport ? r->peer_sport : r->path.dport);
	GDAK_WARN_RL("qp", u->qp->id, "dropped %s", text);
	NM_TRACE(u->qp, gdak_trace_violation, u->qp->base.qpn, (uint16_t)u->qp->ci,
		 "udp_foreign_packet", 0, text);
}

/* ---- engine callbacks: responder ------------------------------------------------- */

/* The message a responder context is receiving: the QP's, or a DCT flow's. */
static struct nm_resp_msg *rm_of(struct roce_qp *r)
{
	struct udp_qp *u = uqp_of(r);

	return r == &u->rqp ? &u->rm : &((struct udp_flow *)r)->rm;
}

static int resp_begin(struct roce_qp *r, struct roce_rmsg *m)
{
	struct udp_qp *u = uqp_of(r);

	if (m->kind == ROCE_WR_SEND)
		/* the length is known at the last packet only: the responder
		 * checks the receive WQE's capacity as the data comes */
		return nm_resp_begin(u->qp, rm_of(r),
				     m->has_imm ? MLX5_OPCODE_SEND_IMM : MLX5_OPCODE_SEND, 0, 0,
				     NM_RESP_LEN_UNKNOWN, m->imm);
	return nm_resp_begin(u->qp, rm_of(r),
			     m->has_imm ? MLX5_OPCODE_RDMA_WRITE_IMM : MLX5_OPCODE_RDMA_WRITE,
			     m->va, m->rkey, m->dma_len, m->imm);
}

static int resp_imm(struct roce_qp *r, struct roce_rmsg *m)
{
	/* the rkey was checked at the first packet; now the receive WQE */
	return nm_resp_imm(rm_of(r), m->imm);
}

static int resp_data(struct roce_qp *r, struct roce_rmsg *m, uint32_t off, const void *src,
		     uint32_t len)
{
	return nm_resp_write(rm_of(r), off, src, GDAK_MEM_HOST, len);
}

static int resp_end(struct roce_qp *r, struct roce_rmsg *m, int status)
{
	struct nm_resp_msg *rm = rm_of(r);

	if (m->kind == ROCE_WR_SEND) {
		/* a multi-packet SEND learns of its immediate at SEND_LAST_IMM
		 * (IBA 9.2: ImmDt rides on the last packet only) */
		if (m->has_imm) {
			rm->opcode = MLX5_OPCODE_SEND_IMM;
			rm->imm = m->imm;
		}
		return nm_resp_end_len(rm, status, m->off);
	}
	return nm_resp_end(rm, status);
}

static int resp_read_check(struct roce_qp *r, uint32_t rkey, uint64_t va, uint32_t len)
{
	struct nm_resp_msg m;
	return nm_resp_begin(uqp_of(r)->qp, &m, MLX5_OPCODE_RDMA_READ, va, rkey, len, 0);
}

static int resp_read(struct roce_qp *r, uint32_t rkey, uint64_t va, void *dst, uint32_t len)
{
	struct nm_resp_msg m;
	int st = nm_resp_begin(uqp_of(r)->qp, &m, MLX5_OPCODE_RDMA_READ, va, rkey, len, 0);

	return st ? st : nm_resp_read(&m, 0, dst, GDAK_MEM_HOST, len);
}

static int resp_atomic(struct roce_qp *r, uint8_t opcode, uint32_t rkey, uint64_t va,
		       uint64_t swap_add, uint64_t cmp, uint64_t *orig)
{
	struct nm_op fop = {.swap_add = swap_add, .compare = cmp, .swap_mask = ~0ull,
			    .compare_mask = ~0ull};
	const char *rule = NULL;

	return nm_resp_atomic(uqp_of(r)->qp,
			      opcode == ROCE_FETCH_ADD ? MLX5_OPCODE_ATOMIC_FA : MLX5_OPCODE_ATOMIC_CS,
			      va, rkey, &fop, orig, &rule);
}

static int resp_xatomic(struct roce_qp *r, const struct roce_xatomic *x, uint64_t *orig)
{
	struct nm_op fop = { .swap_add = x->swap_add,
			     .compare = x->cmp,
			     .swap_mask = x->swap_mask,
			     .compare_mask = x->cmp_mask,
			     .asize = x->size };
	const char *rule = NULL;

	return nm_resp_atomic(uqp_of(r)->qp,
			      x->opcode == ROCE_XMASKED_FETCH_ADD ? MLX5_OPCODE_ATOMIC_MASKED_FA
								  : MLX5_OPCODE_ATOMIC_MASKED_CS,
			      x->va, x->rkey, &fop, orig, &rule);
}

static void resp_fatal(struct roce_qp *r, uint8_t syndrome, const char *why)
{
	struct udp_qp *u = uqp_of(r);

	if (r != &u->rqp) {
		/* a DCT's context for one DCI: that DCI got the NAK and goes to
		 * ERR, the DCT stays up for the others (as on the loop
		 * transport); the context is started over by the DCI's next
		 * connection */
		GDAK_WARN_RL("qp", u->qp->id, "DCT: request of DCI 0x%x refused: %s (%s)", r->dqpn,
			     why, gdak_mlx5_syndrome_name(syndrome));
		return;
	}
	/* IBA class C/D responder errors: the responder QP goes to ERR too */
	nm_qp_set_error(u->qp, syndrome, 0, 0, "udp_responder", "responder: %s", why);
}

/* ---- DC (docs/UDP.md "DC") ---------------------------------------------------------- */

static struct roce_cfg qp_cfg(const struct nm_qp *qp);

/* A DCT's context for the DCI that sent pkt (its DCETH checked for length
 * and MTU code by the engine): the DCT must be in RTR and the key its own
 * (else the request goes unanswered and the DCI sees its retries run out,
 * as ConnectX's DCT drops a connect it refuses: nm_dc_dct_check, the same
 * check as the loop transport's); a larger connection number than the
 * context's starts it over, a smaller one is a packet of a connection
 * that ended and is dropped. */
static struct roce_qp *dc_flow(struct roce_qp *r, const struct roce_path *rx, const uint8_t *pkt)
{
	struct udp_qp *u = uqp_of(r);
	const uint8_t *h = pkt + ROCE_BTH_LEN;
	uint32_t dci = dceth_dci(h), conn = dceth_conn(h);
	struct udp_flow *f = NULL;
	int slot = -1;

	if (nm_dc_dct_check(u->qp, dceth_key(h), dci))
		return NULL;
	u->dc_pkts++;
	for (int i = 0; i < UDP_DC_FLOWS; i++) {
		struct udp_flow *g = u->flows[i];

		if (g && g->sip == rx->sip && g->sport == rx->sport && g->dci == dci) {
			int32_t d = (int32_t)(conn - g->rqp.dc_conn);

			g->used = u->dc_pkts;
			if (!d)
				return &g->rqp;
			if (d < 0 && !g->rqp.resp_err) {
				ROCE_STAT(r->stats, dup_reqs);
				GDAK_DBG("qp", u->qp->id,
					 "DCT: packet of DCI 0x%x's connection %u, now %u: dropped",
					 dci, conn, g->rqp.dc_conn);
				return NULL;
			}
			f = g;
			break;
		}
		/* a free slot, else the context idle longest */
		if (!g) {
			if (slot < 0 || u->flows[slot])
				slot = i;
		} else if (!roce_qp_busy(&g->rqp) &&
			   (slot < 0 || (u->flows[slot] && g->used < u->flows[slot]->used))) {
			slot = i;
		}
	}
	if (!f) {
		struct roce_cfg cfg = qp_cfg(u->qp);

		if (slot < 0) {
			GDAK_WARN_RL("qp", u->qp->id,
				     "DCT: %d DCIs busy, none of their contexts free: DCI 0x%x "
				     "waits (its packet dropped)",
				     UDP_DC_FLOWS, dci);
			return NULL;
		}
		f = u->flows[slot];
		if (!f) {
			f = calloc(1, sizeof(*f));
			if (!f)
				return NULL;
			if (roce_qp_init(&f->rqp, &u->rctx, u->qp->base.qpn, &cfg)) {
				free(f);
				return NULL;
			}
			f->rqp.priv = u;
			u->flows[slot] = f;
		} else if (f->rqp.rmsg.active) {
			f->rqp.rmsg.active = 0;
			resp_end(&f->rqp, &f->rqp.rmsg, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
		}
		f->sip = rx->sip;
		f->sport = rx->sport;
		f->dci = dci;
		f->used = u->dc_pkts;
	}
	{
		struct roce_path p = {
			.sip = u->addr.s_addr, .dip = rx->sip, .sport = u->port, .dport = rx->sport
		};

		GDAK_DBG("qp", u->qp->id, "DCT: DCI 0x%x connection %u from PSN 0x%06x", dci, conn,
			 dceth_psn0(h));
		roce_dc_accept(&f->rqp, dci, conn, dceth_psn0(h), 128u << dceth_mtu(h), &p,
			       rx->sport);
	}
	return &f->rqp;
}

static int flows_progress(struct udp_qp *u, uint64_t now)
{
	int n = 0;

	for (int i = 0; i < UDP_DC_FLOWS; i++)
		if (u->flows[i])
			n += roce_qp_progress(&u->flows[i]->rqp, now, 64);
	return n;
}

static uint64_t flows_deadline(const struct udp_qp *u, uint64_t d)
{
	for (int i = 0; i < UDP_DC_FLOWS; i++) {
		uint64_t e = u->flows[i] ? roce_qp_deadline(&u->flows[i]->rqp) : UINT64_MAX;

		if (e < d)
			d = e;
	}
	return d;
}

static void flows_free(struct udp_qp *u)
{
	for (int i = 0; i < UDP_DC_FLOWS; i++) {
		if (!u->flows[i])
			continue;
		roce_qp_fini(&u->flows[i]->rqp);
		free(u->flows[i]);
		u->flows[i] = NULL;
	}
}

/* The engine QP's side of DC, after every roce_qp_init.  A DCI's
 * connection numbers start from the clock in microseconds: a stream turns
 * at most once per round trip, so the numbers of a DCI reset and started
 * again are larger than any its DCTs saw before. */
static void dc_engine_init(struct udp_qp *u)
{
	uint32_t t = u->qp->base.attr.type;

	u->rqp.dc = t == GDAK_QPT_DCI	? ROCE_DC_INITIATOR
		    : t == GDAK_QPT_DCT ? ROCE_DC_TARGET
					: ROCE_DC_NONE;
	if (u->rqp.dc == ROCE_DC_INITIATOR)
		u->rqp.dc_conn = (uint32_t)(nm_now_ns() / 1000);
}

/* DCI: the stream of op goes to the DCT its AV names; the engine turns
 * there when it is idle (nm_dc_stream_enter waited for that).  The AV on
 * RoCE: the full form (a compact one has no GRH, nothing to route by),
 * the GID an IPv4-mapped address, the rlid the DCT's UDP port (gdak's
 * reading; 0: 4791). */
static enum nm_tx_result dc_route(struct udp_qp *u, struct nm_op *op, struct roce_wr *wr)
{
	struct nm_qp *qp = u->qp;
	struct roce_path path;
	uint16_t port;
	uint32_t dip;
	int r;

	if (nm_check_dc_av_route(qp, op))
		return NM_TX_DONE;
	memcpy(&dip, op->av + 44, 4);
	port = (uint16_t)(op->av[14] << 8 | op->av[15]);
	if (!port)
		port = ROCE_UDP_PORT;
	wr->dc_key = op->dc_key;
	wr->dc_stream = op->dc_stream;
	if (u->rqp.state == ROCE_QPS_RTS && u->rqp.dqpn == op->dc_dctn && u->rqp.path.dip == dip &&
	    u->rqp.path.dport == port)
		return NM_TX_PENDING;
	path = (struct roce_path){
		.sip = u->addr.s_addr, .dip = dip, .sport = u->port, .dport = port
	};
	/* A DCT on its own port answers from it; one behind a device's 4791
	 * (gdak's libibverbs, a ConnectX) answers from whatever source port
	 * its QP sends from - RoCEv2's source port is flow entropy, and rxe
	 * checks the address only */
	r = roce_dc_retarget(&u->rqp, op->dc_dctn, nm_rand_seq24(NM_RAND_PSN), &path,
			     port == ROCE_UDP_PORT ? 0 : port);
	if (r == -EBUSY)
		return NM_TX_BUSY;
	if (r) {
		op->status = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
		return NM_TX_DONE;
	}
	GDAK_DBG("qp", qp->id, "DCI stream to DCT 0x%x at %s:%u, connection %u", op->dc_dctn,
		 inet_ntoa((struct in_addr){ .s_addr = dip }), port, u->rqp.dc_conn);
	return NM_TX_PENDING;
}

static const struct roce_ops udp_roce_ops = {
	.dc_flow = dc_flow,
	.xmit = xmit,
	.tx_buf = tx_buf,
	.lookup = lookup,
	.trace_pkt = trace_pkt,
	.req_gather = req_gather,
	.req_scatter = req_scatter,
	.req_complete = req_complete,
	.resp_begin = resp_begin,
	.resp_imm = resp_imm,
	.resp_data = resp_data,
	.resp_end = resp_end,
	.resp_read_check = resp_read_check,
	.resp_read = resp_read,
	.resp_atomic = resp_atomic,
	.resp_xatomic = resp_xatomic,
	.resp_fatal = resp_fatal,
	.req_fatal = req_fatal,
	.rx_foreign = rx_foreign,
};

/* ---- the QP's thread: receive, timers, progress ------------------------------------ */

/* Packets from QPs of this process, read in place. */
static int rx_local(struct udp_qp *u, uint64_t now)
{
	const uint8_t *pkt;
	uint32_t len, sip;
	uint16_t sport;
	int n = 0;

	while (n < 4 * BATCH && (pkt = udp_inbox_peek(u->inbox, &len, &sip, &sport))) {
		struct roce_path p = {
			.sip = sip, .dip = u->addr.s_addr, .sport = sport, .dport = u->rx_dport
		};

		rx_one(u, &p, pkt, len, now);
		udp_inbox_pop(u->inbox);
		n++;
	}
	return n;
}

/* Read what has arrived: the inbox always (no system call), the socket when
 * force (libev saw it readable, or the timer needs every ACK) or when its
 * back-off allows.  A QP whose peer writes into its inbox leaves its socket
 * to the ev_io watcher alone: nothing is expected there. */
static int rx_drain(struct udp_qp *u, uint64_t now, int force)
{
	int total = rx_local(u, now), sock = 0;

	if (!force && (u->peer_inbox || u->rx_skip)) {
		if (!u->peer_inbox)
			u->rx_skip--;
		return total;
	}
	for (int round = 0; round < 4; round++) {
		int n;

		for (unsigned i = 0; i < BATCH; i++)
			u->rxm[i].msg_hdr.msg_namelen = sizeof(u->rxa[i]);
		n = recvmmsg(u->fd, u->rxm, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			struct roce_path p = {.sip = u->rxa[i].sin_addr.s_addr, .dip = u->addr.s_addr,
					      .sport = ntohs(u->rxa[i].sin_port), .dport = u->port};
			rx_one(u, &p, u->rxbuf + (size_t)i * ROCE_MAX_PKT, u->rxm[i].msg_len, now);
		}
		sock += n;
		if (n < BATCH)
			break;
	}
	if (sock) {
		u->rx_gap = 0;
	} else {
		u->rx_gap = u->rx_gap ? (2 * u->rx_gap < RX_GAP_MAX ? 2 * u->rx_gap : RX_GAP_MAX) : 1;
	}
	u->rx_skip = u->rx_gap;
	return total + sock;
}

static void arm_timer(struct udp_qp *u, uint64_t now)
{
	uint64_t d = roce_qp_deadline(&u->rqp);
	struct ev_loop *loop;

	if (u->rqp.dc == ROCE_DC_TARGET)
		d = flows_deadline(u, d);
	if (d == u->timer_due)
		return; /* most passes: nothing changed */
	loop = nm_thread_loop(u->qp->thr);
	ev_timer_stop(loop, &u->timer);
	u->timer_due = d;
	if (d == UINT64_MAX)
		return;
	ev_timer_set(&u->timer, d > now ? (double)(d - now) * 1e-9 : 0., 0.);
	ev_timer_start(loop, &u->timer);
	/* armed by an inline run while the thread waits in libev: that wait
	 * ends by its own bound, which may be later */
	nm_thread_deadline(u->qp->thr, d > now ? d - now : 0);
}

/* One round of engine work on the QP's thread; returns work done. */
static int engine_round(struct udp_qp *u, int force_rx)
{
	uint64_t now = engine_now(u);
	int work = rx_drain(u, now, force_rx);

	if (roce_qp_deadline(&u->rqp) <= now) {
		/* take every ACK that is already here before the timer may call
		 * them late (a burst can exceed one rx_drain's 4 batches) */
		int n = rx_drain(u, now, 1);

		work += n;
		for (int k = 0; k < 16 && n >= 4 * BATCH; k++) {
			n = rx_drain(u, now, 1);
			work += n;
		}
		roce_qp_timer(&u->rqp, now);
	}
	u->more = 1;
	for (int k = 0; k < 8; k++) {
		int n = roce_qp_progress(&u->rqp, now, 64);
		int busy;

		if (u->rqp.dc == ROCE_DC_TARGET)
			n += flows_progress(u, now);
		busy = tx_flush(u);

		work += n;
		if (n < 64 || busy) {
			u->more = 0;
			break;
		}
	}
	if (u->watching)
		arm_timer(u, now);
	return work;
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct udp_qp *u = nm_container_of(w, struct udp_qp, io);

	engine_round(u, 1);
	nm_thread_activate(u->qp);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct udp_qp *u = nm_container_of(w, struct udp_qp, timer);

	u->timer_due = UINT64_MAX; /* it fired: libev stopped it */
	engine_round(u, 1);
	nm_thread_activate(u->qp);
}

static int udp_qp_poll(struct nm_qp *qp)
{
	struct udp_qp *u = qp->tr_priv;
	uint32_t len, sip;
	uint16_t sport;

	if (!u->watching)
		return 0;
	/* Most passes: nothing arrived, nothing waits to go out, the socket is
	 * not due for a read - then the engine has nothing to do either (its
	 * deadlines are the ev_timer's), and the pass costs no clock read. */
	if (!u->tx->n && !u->more && (u->peer_inbox || u->rx_skip) &&
	    !atomic_load_explicit(&u->out_busy, memory_order_acquire) &&
	    !udp_inbox_peek(u->inbox, &len, &sip, &sport)) {
		if (!u->peer_inbox)
			u->rx_skip--;
		return 0;
	}
	return engine_round(u, 0);
}

int nm_tr_udp_watching(const struct nm_qp *qp)
{
	const struct udp_qp *u = qp->tr_priv;

	return u && u->watching;
}

void nm_tr_udp_drain(struct nm_qp *qp)
{
	struct udp_qp *u = qp->tr_priv;

	if (!u || !u->watching)
		return;
	engine_round(u, 0);
	nm_thread_activate(qp);
}

static int udp_qp_quiet(struct nm_qp *qp)
{
	struct udp_qp *u = qp->tr_priv;
	uint32_t len, sip;
	uint16_t sport;

	/* not watching: nothing happens before connect, which kicks.  A
	 * socket with packets keeps epoll (level-triggered) from blocking;
	 * the deadlines are the ev_timer's */
	if (!u || !u->watching)
		return 1;
	/* an out batch an inline run is sending is not the thread's to wait
	 * for: that run kicks it if the socket leaves some */
	return !u->tx->n && !u->more &&
	       atomic_load_explicit(&u->out_busy, memory_order_acquire) != 2 &&
	       !udp_inbox_peek(u->inbox, &len, &sip, &sport);
}

static void watch_on(void *arg)
{
	struct udp_qp *u = arg;
	struct ev_loop *loop = nm_thread_loop(u->qp->thr);

	ev_io_init(&u->io, io_cb, u->fd, EV_READ);
	ev_io_start(loop, &u->io);
	ev_init(&u->timer, timer_cb);
	u->timer_due = UINT64_MAX;
	u->rx_skip = u->rx_gap = 0;
	u->watching = 1;
}

static void watch_off(void *arg)
{
	struct udp_qp *u = arg;
	struct ev_loop *loop = nm_thread_loop(u->qp->thr);

	if (!u->watching)
		return;
	ev_io_stop(loop, &u->io);
	ev_timer_stop(loop, &u->timer);
	u->watching = 0;
}

/* ---- transport ops ---------------------------------------------------------------- */

/* The direct path (tr_udp_direct.c) for a WRITE or READ of an idle
 * requester: 1 when the peer took it, 0 when it goes over UDP. */
static int direct_rdma(struct udp_qp *u, const struct udp_op *o, const struct roce_wr *wr)
{
	struct iovec v[MAX_SEG];
	unsigned n = 0;
	uint32_t npkts = 0;
	int r;

	if (!o->nseg) {
		if (wr->op == ROCE_WR_READ)
			return 0; /* (no local segment: the responder's rules) */
		v[n].iov_base = (void *)o->inl;
		v[n++].iov_len = wr->len;
	} else {
		for (unsigned i = 0; i < o->nseg; i++) {
			if (o->seg[i].kind != GDAK_MEM_HOST)
				return 0; /* device memory: the copy engine's, over UDP */
			v[n].iov_base = o->seg[i].addr;
			v[n++].iov_len = o->seg[i].len;
		}
	}
	r = udp_direct_rdma(u->dseg_peer, &u->dpeer, wr->op == ROCE_WR_READ, u->rqp.dqpn,
			    u->addr.s_addr, u->rx_dport, u->rqp.qpn, u->rqp.tx_psn, u->rqp.cfg.mtu,
			    wr->rkey, wr->raddr, v, n, wr->len, &npkts);
	if (r < 0) {
		/* refused by the kernel: this QP stops asking */
		udp_direct_put(u->dseg_peer);
		u->dseg_peer = NULL;
		u->dpeer = NULL;
		return 0;
	}
	if (r == 0)
		return 0;
	roce_req_skip(&u->rqp, npkts);
	return 1;
}

static enum nm_tx_result udp_post_send(struct nm_qp *qp, struct nm_op *op)
{
	struct udp_qp *u = qp->tr_priv;
	struct udp_op *o = &u->ops[op - qp->inflight];
	unsigned need = 0;
	uint64_t now;
	struct roce_wr wr = {.cookie = (uintptr_t)op, .len = op->len, .raddr = op->raddr,
			     .rkey = op->rkey, .imm = op->imm, .swap_add = op->swap_add,
			     .cmp = op->compare};
	int r;

	switch (op->opcode) {
	case MLX5_OPCODE_RDMA_WRITE: wr.op = ROCE_WR_WRITE; break;
	case MLX5_OPCODE_RDMA_WRITE_IMM: wr.op = ROCE_WR_WRITE_IMM; break;
	case MLX5_OPCODE_SEND: wr.op = ROCE_WR_SEND; break;
	case MLX5_OPCODE_SEND_IMM: wr.op = ROCE_WR_SEND_IMM; break;
	case MLX5_OPCODE_RDMA_READ: wr.op = ROCE_WR_READ; need = GDAK_ACCESS_LOCAL_WRITE; break;
	case MLX5_OPCODE_ATOMIC_CS: wr.op = ROCE_WR_CMP_SWAP; need = GDAK_ACCESS_LOCAL_WRITE; break;
	case MLX5_OPCODE_ATOMIC_FA: wr.op = ROCE_WR_FETCH_ADD; need = GDAK_ACCESS_LOCAL_WRITE; break;
	case MLX5_OPCODE_ATOMIC_MASKED_CS:
	case MLX5_OPCODE_ATOMIC_MASKED_FA:
		/* masked and 4-byte atomics: gdak's ExtAtomicETH (docs/UDP.md) */
		wr.op = op->opcode == MLX5_OPCODE_ATOMIC_MASKED_CS ? ROCE_WR_XMASKED_CS
								   : ROCE_WR_XMASKED_FA;
		wr.asize = op->asize;
		wr.swap_mask = op->swap_mask;
		wr.cmp_mask = op->compare_mask;
		need = GDAK_ACCESS_LOCAL_WRITE;
		break;
	default:
		op->status = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		op->rule = "udp_unsupported_opcode";
		GDAK_WARN_RL("qp", qp->id, "WQE %u: %s is not supported over udp", op->wqe_index,
			     gdak_mlx5_opcode_name(op->opcode));
		return NM_TX_DONE;
	}
	if (op->fm_ce_se & MLX5_WQE_CTRL_SOLICITED)
		wr.flags |= ROCE_WRF_SOLICITED;
	if (u->rqp.dc == ROCE_DC_INITIATOR) {
		enum nm_tx_result t;

		/* a DCT of this process: in place (nm_dc.c), else the wire */
		if (nm_dc_udp_local(qp, op))
			return nm_dc_udp_post_send(qp, op);
		t = dc_route(u, op, &wr);

		if (t != NM_TX_PENDING)
			return t;
	}
	/* resolve the local data now: the WQE slot (or the wrap buffer) holding
	 * the segments may be reused before the op completes */
	o->nseg = 0;
	if (op->flags & NM_OPF_INLINE) {
		if (op->len > sizeof(o->inl)) {
			op->status = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
			op->rule = "inline_length";
			return NM_TX_DONE;
		}
		memcpy(o->inl, op->inl, op->len);
	} else {
		if (op->nseg > MAX_SEG) {
			op->status = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
			op->rule = "udp_too_many_segments";
			return NM_TX_DONE;
		}
		for (unsigned i = 0; i < op->nseg; i++) {
			void *a;
			uint32_t l;
			struct nm_mr *mr;

			r = nm_check_local_sge(qp, op, i, need, &a, &l, &mr, &op->rule);
			if (r) {
				op->status = (uint8_t)r;
				return NM_TX_DONE;
			}
			o->seg[o->nseg].addr = a;
			o->seg[o->nseg].len = l;
			o->seg[o->nseg].kind = mr->kind;
			o->nseg++;
		}
	}
	/* (not while this process traces or injects faults: they must see
	 * every packet, whenever they were turned on) */
	if (u->dseg_peer && (wr.op == ROCE_WR_WRITE || wr.op == ROCE_WR_READ) &&
	    roce_req_idle(&u->rqp) && !atomic_load_explicit(&nm_cfg.trace, memory_order_relaxed) &&
	    !atomic_load_explicit(&nm_faults_on, memory_order_relaxed) && direct_rdma(u, o, &wr))
		return NM_TX_DONE; /* op->status 0: what its ACK would have given */
	r = roce_post(&u->rqp, &wr);
	if (r == -EAGAIN)
		return NM_TX_BUSY;
	if (r) {
		/* the engine is dead (its cause was reported when it died; this
		 * names it again should nothing have): the QP goes to ERR and
		 * this WQE, like every later one, is flushed */
		op->status = MLX5_CQE_SYNDROME_WR_FLUSH_ERR;
		nm_qp_set_error(qp,
				u->rqp.err_syn ? u->rqp.err_syn : MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
				op->opcode, op->wqe_index, "udp_engine_error",
				"WQE %u: the RoCE engine is in ERR (%s)", op->wqe_index,
				u->rqp.err_why ? u->rqp.err_why : "moved there by its owner");
		return NM_TX_DONE;
	}
	/* Build the packets now (the window permitting) but send them with
	 * those of the WQEs still waiting in this pass: one system call for
	 * the batch.  The requester executes in order, so a producer index
	 * beyond this WQE means more come right after; if the pass stops
	 * early (its cap, a full in-flight window), qp_poll sends them at
	 * the next pass. */
	now = clock_now();
	u->more = 1;
	for (int k = 0; k < 8; k++) {
		if (roce_qp_progress(&u->rqp, now, 64) < 64) {
			u->more = 0;
			break;
		}
	}
	if (qp->ci + op->bbs >= qp->pi || u->tx->n == BATCH)
		(void)tx_flush(u);
	if (u->watching)
		arm_timer(u, now);
	return NM_TX_PENDING;
}

/* gdak_qp_modify to ERR: a direct-path sender that read the old state has
 * finished its copy when this returns, and none takes the QP after. */
static void udp_qp_stopped(struct nm_qp *qp)
{
	struct udp_qp *u = qp->tr_priv;

	if (u->dq)
		udp_direct_qp_barrier(u->dseg_own, u->dq);
}

static void udp_qp_error(struct nm_qp *qp)
{
	struct udp_qp *u = qp->tr_priv;

	if (u->dq)
		udp_direct_qp_barrier(u->dseg_own, u->dq);
	roce_qp_error(&u->rqp);
	(void)tx_flush(u); /* a final NAK, if any */
}

/* The next loopback address to try ("emu:udp"): process-wide, so that
 * contexts of one process do not try the same ones again. */
static _Atomic uint32_t lo_next = 2;

/* 127.0.0.2, .3, ... .254, then 127.0.1.1 ..: the host part of 127/8 in
 * order, skipping .0 and .255 of each /24 (some tools take them for the
 * network and broadcast addresses). */
static struct in_addr lo_addr(uint32_t k)
{
	uint32_t n = k / 254, h = k % 254 + 1;

	return (struct in_addr){ .s_addr = htonl(0x7f000000u | (n & 0xffff) << 8 | h) };
}

/* Bind a 127.0.0.N:4791 of our own.  bind() is the arbiter: an address
 * another process or context holds fails with EADDRINUSE and the next one
 * is tried, so two endpoints never share one. */
static int bind_loopback(struct udp_qp *u)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(ROCE_UDP_PORT) };

	for (int tries = 0; tries < 65536; tries++) {
		uint32_t k = atomic_fetch_add(&lo_next, 1) - 1;

		if (k >= 254u * 65536u) {
			atomic_store(&lo_next, 1);
			continue;
		}
		sa.sin_addr = lo_addr(k);
		if (!bind(u->fd, (struct sockaddr *)&sa, sizeof(sa))) {
			u->addr = sa.sin_addr;
			u->port = ROCE_UDP_PORT;
			return 0;
		}
		if (errno != EADDRINUSE)
			break;
	}
	{
		int e = errno;

		GDAK_ERR("qp", u->qp->id,
			 "cannot bind a loopback address on UDP port %u: %s (try "
			 "\"emu:udp:ephemeral\": 127.0.0.1, ephemeral ports)",
			 ROCE_UDP_PORT, strerror(e));
		return -e;
	}
}

static int open_socket(struct udp_qp *u, struct udp_ctx *c)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = c->addr};
	socklen_t sl = sizeof(sa);
	int one = 1, pmtu = IP_PMTUDISC_DO, buf = 8 << 20;

	u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0)
		return -errno;
	(void)one;
	setsockopt(u->fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	if (setsockopt(u->fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)))
		setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (setsockopt(u->fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (c->loopback) {
		int r = bind_loopback(u);

		if (r) {
			close(u->fd);
			u->fd = -1;
		}
		return r;
	}
	for (int tries = 0;; tries++) {
		uint16_t port = 0;

		if (c->base_port) {
			pthread_mutex_lock(&u->qp->ctx->lock);
			port = c->next_port++;
			pthread_mutex_unlock(&u->qp->ctx->lock);
		}
		sa.sin_port = htons(port);
		if (!bind(u->fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		if (errno != EADDRINUSE || !c->base_port || tries == 64) {
			int e = errno;
			GDAK_ERR("qp", u->qp->id, "cannot bind UDP %s:%u: %s", inet_ntoa(c->addr), port,
				 strerror(e));
			close(u->fd);
			u->fd = -1;
			return -e;
		}
	}
	getsockname(u->fd, (struct sockaddr *)&sa, &sl);
	u->addr = c->addr;
	u->port = ntohs(sa.sin_port);
	return 0;
}

/* The RoCE engine's settings for @qp: its MTU, the context's timers, window and retry count */
static struct roce_cfg qp_cfg(const struct nm_qp *qp)
{
	const struct udp_ctx *c = qp->ctx->tr_priv;

	return (struct roce_cfg){.mtu = qp->base.attr.mtu, .sq_size = 2 * NM_MAX_INFLIGHT,
				 .timeout_ns = c->rto_ns, .min_rto_ns = c->min_rto_ns,
				 .window = c->window,
				 .retry_cnt = c->retry_cnt > 7 ? 7 : c->retry_cnt,
				 .retry_forever = c->retry_cnt > 7, .rnr_retry = 7,
				 .min_rnr_timer = 1, .cfg_set = 1};
}

static int udp_qp_init(struct nm_qp *qp)
{
	struct udp_ctx *c = qp->ctx->tr_priv;
	struct udp_qp *u = calloc(1, sizeof(*u));
	struct roce_cfg cfg = qp_cfg(qp);
	int ret;

	if (!u)
		return -ENOMEM;
	u->qp = qp;
	/* the second batch only once an inline run detaches one (most QPs
	 * never do: inline runs are off by default) */
	set_init(&u->txs[0]);
	u->rxbuf = malloc((size_t)BATCH * ROCE_MAX_PKT);
	u->tx = &u->txs[0];
	u->out = &u->txs[1];
	pthread_mutex_init(&u->txlock, NULL);
	if (!u->txs[0].buf || !u->rxbuf) {
		ret = -ENOMEM;
		goto err;
	}
	ret = open_socket(u, c);
	if (ret)
		goto err;
	u->rx_dport = u->port;
	ret = udp_inbox_open(qp, u->addr.s_addr, u->port, &u->inbox);
	if (ret)
		goto err_sock;
	roce_ctx_init(&u->rctx, &udp_roce_ops, u);
	u->rctx.id = qp->base.qpn;
	ret = roce_fault_parse(c->faults, &u->rctx.faults);
	if (ret)
		goto err_fd;
	ret = roce_qp_init(&u->rqp, &u->rctx, qp->base.qpn, &cfg);
	if (ret)
		goto err_fd;
	u->rqp.priv = u;
	dc_engine_init(u);
	for (unsigned i = 0; i < BATCH; i++) {
		u->rxv[i].iov_base = u->rxbuf + (size_t)i * ROCE_MAX_PKT;
		u->rxv[i].iov_len = ROCE_MAX_PKT;
		u->rxm[i].msg_hdr = (struct msghdr){.msg_name = &u->rxa[i],
						     .msg_namelen = sizeof(u->rxa[i]),
						     .msg_iov = &u->rxv[i], .msg_iovlen = 1};
	}
	/* a random first PSN (IBA 9.7.1 recommends it), drawn again at RESET:
	 * a stranger cannot guess it, and packets of an earlier connection
	 * fall outside the new one's window */
	u->psn0 = nm_rand_seq24(NM_RAND_PSN);
	qp->tr_priv = u;
	GDAK_DBG("qp", qp->id, "udp endpoint %s:%u", inet_ntoa(u->addr), u->port);
	return 0;

err_fd:
	roce_ctx_fini(&u->rctx);
	udp_inbox_close(u->inbox);
err_sock:
	close(u->fd);
err:
	pthread_mutex_destroy(&u->txlock);
	free(u->txs[0].buf);
	free(u->txs[1].buf);
	free(u->rxbuf);
	free(u);
	return ret;
}

static void udp_qp_fini(struct nm_qp *qp)
{
	struct udp_qp *u = qp->tr_priv;

	if (!u)
		return;
	if (qp->thr)
		nm_thread_call(qp->thr, watch_off, u);
	/* A forked child's copy of the parent's QP: its batches are the
	 * parent's to send, and an inline sender's txlock may have been
	 * copied held (nm_thread_inherited): leave both alone. */
	bool parents = qp->thr && nm_thread_inherited(qp->thr);

	if (!parents) {
		/* an inline run's sendmmsg of this QP's out batch ends first;
		 * then what the engine already put out (the ACK of the peer's
		 * last request, which an inline run left for later) leaves
		 * before the QP goes, as an HCA's would: the peer would
		 * otherwise retry into a closed port (best effort: a full
		 * socket keeps the rest) */
		pthread_mutex_lock(&u->txlock);
		if (u->out->n)
			(void)set_send(u, u->out);
		atomic_store_explicit(&u->out_busy, 0, memory_order_release);
		pthread_mutex_unlock(&u->txlock);
		(void)tx_flush(u);
	}
	direct_unpublish(u);
	roce_qp_fini(&u->rqp);
	flows_free(u);
	roce_ctx_fini(&u->rctx);
	udp_inbox_close(u->inbox);
	udp_inbox_put(u->peer_inbox);
	if (!parents)
		pthread_mutex_destroy(&u->txlock);
	close(u->fd);
	free(u->txs[0].buf);
	free(u->txs[1].buf);
	free(u->rxbuf);
	free(u);
	qp->tr_priv = NULL;
}

/* Back to RESET: the engine forgets the connection (packets still coming
 * for it are dropped: not in RTS), and the next one starts at a new PSN. */
static void reset_on_thread(void *arg)
{
	struct udp_qp *u = arg;
	struct roce_cfg cfg = qp_cfg(u->qp);

	watch_off(u);
	direct_unpublish(u);
	roce_qp_fini(&u->rqp);
	flows_free(u);
	if (roce_qp_init(&u->rqp, &u->rctx, u->qp->base.qpn, &cfg))
		GDAK_ERR("qp", u->qp->id, "cannot reset the RoCE engine: out of memory");
	u->rqp.priv = u;
	dc_engine_init(u);
	u->tx->n = 0;
	pthread_mutex_lock(&u->txlock);
	u->out->n = 0;
	atomic_store_explicit(&u->out_busy, 0, memory_order_release);
	pthread_mutex_unlock(&u->txlock);
	u->more = 0;
	u->psn0 = nm_rand_seq24(NM_RAND_PSN);
}

static void udp_qp_reset(struct nm_qp *qp)
{
	struct udp_qp *u = qp->tr_priv;

	if (u)
		nm_thread_call(qp->thr, reset_on_thread, u);
}

/* A DCI or DCT in RTR: served from now on (it connects to nobody). */
static int udp_dc_ready(struct nm_qp *qp)
{
	struct udp_qp *u = qp->tr_priv;

	if (!u->rqp.sq)
		return -ENOMEM; /* the engine's reset found no memory */
	if (!u->watching)
		nm_thread_call(qp->thr, watch_on, u);
	return 0;
}

static int udp_dc_busy(struct nm_qp *qp)
{
	const struct udp_qp *u = qp->tr_priv;

	return u->rqp.sq_una != u->rqp.sq_head;
}

static int udp_qp_info(struct nm_qp *qp, struct gdak_qp_info *out)
{
	struct udp_qp *u = qp->tr_priv;

	out->transport = GDAK_QPI_UDP;
	out->psn = u->psn0;
	memset(out->gid, 0, 10);
	out->gid[10] = out->gid[11] = 0xff; /* IPv4-mapped (RoCEv2 GID of an IPv4 address) */
	memcpy(out->gid + 12, &u->addr.s_addr, 4);
	out->udp_port = u->port;
	return 0;
}

/* At connect: our responder into our device's segment, when it has one
 * (gdak's libibverbs), and the peer's segment, when it is another process
 * of this host that published one.  Off where the direct path could not be
 * faithful: a trace (it would miss the packets), injected faults, DC. */
static void direct_publish(struct udp_qp *u, const struct gdak_qp_info *peer, uint32_t mtu)
{
	const struct udp_ctx *c = u->qp->ctx->tr_priv;

	if (!c->direct || c->faults[0] || u->rqp.dc != ROCE_DC_NONE)
		return;
	/* (the trace is on for the process: this control-path thread has no
	 * trace buffer of its own to ask) */
	if (atomic_load_explicit(&nm_cfg.trace, memory_order_relaxed))
		return;
	u->dseg_own = udp_direct_own(u->addr.s_addr, u->rx_dport);
	if (u->dseg_own) {
		u->dq = udp_direct_qp_add(u->dseg_own, u->rqp.qpn, u->peer.sin_addr.s_addr,
					  peer->udp_port, peer->qpn, mtu, &u->rqp,
					  &u->qp->base.state);
		if (u->dq && !udp_direct_lock(u->dseg_own)) {
			udp_direct_qp_ok(u->dq,
					 direct_ready(u) || nm_qp_state(u->qp) == GDAK_QPS_INIT);
			udp_direct_unlock(u->dseg_own);
		}
	}
	if (!u->peer_inbox)
		u->dseg_peer = udp_direct_peer(u->peer.sin_addr.s_addr, peer->udp_port);
}

static int udp_qp_connect(struct nm_qp *qp, const struct gdak_qp_info *peer)
{
	static const uint8_t v4map[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	struct udp_qp *u = qp->tr_priv;
	uint32_t mtu = qp->base.attr.mtu;
	struct roce_path path;
	int ret;

	if (peer->transport != GDAK_QPI_UDP || memcmp(peer->gid, v4map, 12) || !peer->udp_port) {
		GDAK_ERR("qp", qp->id, "peer QP 0x%x is not a udp endpoint (transport %u, port %u): "
			 "open both sides with \"emu:udp...\"", peer->qpn, peer->transport,
			 peer->udp_port);
		return -EINVAL;
	}
	/* path MTU: the smaller of both ends (never assume 4096) */
	if (peer->mtu < mtu)
		mtu = peer->mtu;
	if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
		GDAK_ERR("qp", qp->id, "peer MTU %u is not one of 256..4096", peer->mtu);
		return -EINVAL;
	}
	if (u->watching)
		nm_thread_call(qp->thr, watch_off, u);
	direct_unpublish(u); /* not served meanwhile: watch_off */
	if (u->rqp.state != ROCE_QPS_RESET || !u->rqp.sq) {
		/* reconnecting after RESET: a fresh engine */
		struct roce_cfg cfg = qp_cfg(qp);

		roce_qp_fini(&u->rqp);
		ret = roce_qp_init(&u->rqp, &u->rctx, qp->base.qpn, &cfg);
		if (ret)
			return ret;
		u->rqp.priv = u;
	}
	u->peer = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(peer->udp_port)};
	memcpy(&u->peer.sin_addr, peer->gid + 12, 4);
	path = (struct roce_path){.sip = u->addr.s_addr, .dip = u->peer.sin_addr.s_addr,
				  .sport = u->port, .dport = peer->udp_port};
	ret = roce_qp_connect(&u->rqp, peer->qpn, u->psn0, peer->psn, mtu, &path);
	if (ret)
		return ret;
	/* a gdak NIC model (node set) sends from the port it advertised, one
	 * socket per QP; a kernel or hardware RoCE stack picks its source
	 * port per flow, so only its address can be checked (as rxe does) */
	u->rqp.peer_sport = peer->node ? peer->udp_port : 0;
	/* the QP is not served meanwhile (INIT): the thread sees the new
	 * pointer after nm_thread_call below */
	udp_inbox_put(u->peer_inbox);
	u->peer_inbox = NULL;
	if (((struct udp_ctx *)qp->ctx->tr_priv)->local) {
		struct udp_inbox *(*dir)(uint32_t, uint16_t, uint32_t) = atomic_load_explicit(
			&udp_directory, memory_order_acquire);

		u->peer_inbox = udp_inbox_attach(u->peer.sin_addr.s_addr, peer->udp_port);
		/* a QP behind a shared port (gdak's libibverbs' 4791) of this
		 * process: the same packets, straight into its inbox */
		if (!u->peer_inbox && dir)
			u->peer_inbox = dir(u->peer.sin_addr.s_addr, peer->udp_port, peer->qpn);
	}
	direct_publish(u, peer, mtu);
	nm_thread_call(qp->thr, watch_on, u);
	GDAK_INFO("qp", qp->id, "udp %s:%u -> QP 0x%x at %s:%u, path MTU %u%s%s%s",
		  inet_ntoa(u->addr), u->port, peer->qpn, inet_ntoa(u->peer.sin_addr),
		  peer->udp_port, mtu,
		  u->peer_inbox ? " (in this process: no kernel in between)" : "",
		  u->dq ? "; responder published for the direct path" : "",
		  u->dseg_peer ? "; peer's device published: direct path" : "");
	return 0;
}

/*
 * The number of configuration variable @name (its range is the table's,
 * core/src/env.c) at most @hi, into *@v: 1 when it is set, 0 when it is unset
 * (the caller's default stands), -EINVAL with a message saying what is wanted
 * when it is anything else.
 */
static int env_ulong(const char *name, unsigned long hi, const char *want, unsigned long *v)
{
	unsigned long long x;
	int r = gdak_env_uint(name, &x);

	if (r < 0)
		return -EINVAL;
	if (r)
		return 0;
	if (x > hi) {
		GDAK_ERR(NULL, 0, "%s='%llu': want %s", name, x, want);
		return -EINVAL;
	}
	*v = (unsigned long)x;
	return 1;
}

static int udp_ctx_init(struct nm_ctx *ctx, const char *args)
{
	struct udp_ctx *c = calloc(1, sizeof(*c));
	char host[64] = "127.0.0.1";
	const char *colon = strrchr(args, ':'), *env;
	char want[64];
	unsigned long num;
	int v;
	int ret = 0;

	if (!c)
		return -ENOMEM;
	if (!*args)
		c->loopback = 1; /* its address per QP: see bind_loopback */
	else if (!strcmp(args, "ephemeral"))
		args = ""; /* the former default: 127.0.0.1, ephemeral ports */
	if (*args) {
		size_t n = colon ? (size_t)(colon - args) : strlen(args);
		if (n >= sizeof(host) || !n) {
			GDAK_ERR(NULL, 0,
				 "emu:udp: bad address in '%s' (emu:udp, emu:udp:ephemeral, "
				 "emu:udp:ADDR[:PORT])",
				 args);
			ret = -EINVAL;
			goto err;
		}
		memcpy(host, args, n);
		host[n] = 0;
		if (colon) {
			char *end;
			unsigned long p = strtoul(colon + 1, &end, 10);
			if (*end || !colon[1] || p > 65535) {
				GDAK_ERR(NULL, 0, "emu:udp: bad port '%s'", colon + 1);
				ret = -EINVAL;
				goto err;
			}
			c->base_port = c->next_port = (uint16_t)p;
		}
	}
	if (inet_pton(AF_INET, host, &c->addr) != 1 || c->addr.s_addr == htonl(INADDR_ANY)) {
		GDAK_ERR(NULL, 0, "emu:udp: '%s' is not an IPv4 address of this host (the ICRC "
			 "covers it, so 0.0.0.0 will not do)", host);
		ret = -EINVAL;
		goto err;
	}
	/* Retransmission timeout.  Hardware defaults are tens of ms (IBA
	 * timeout 4.096 us * 2^14); 10 ms suits loopback and LANs alike. */
	c->rto_ns = 10 * 1000 * 1000ull;
	ret = env_ulong("GDAK_UDP_RTO_US", 60000000, "microseconds, 10..60000000", &num);
	if (ret < 0)
		goto err;
	if (ret)
		c->rto_ns = num * 1000ull;
	/* The RTT-adaptive timer's floor (roce_req.c): default a tenth of the
	 * timeout; equal to it turns adaptation off. */
	c->min_rto_ns = c->rto_ns / 10;
	snprintf(want, sizeof(want), "microseconds, 10..the timeout (%llu)",
		 (unsigned long long)(c->rto_ns / 1000));
	/* rto_ns is whole microseconds, so "us <= rto_ns / 1000" is "us * 1000 <= rto_ns" */
	ret = env_ulong("GDAK_UDP_RTO_MIN_US", c->rto_ns / 1000, want, &num);
	if (ret < 0)
		goto err;
	if (ret)
		c->min_rto_ns = num * 1000ull;
	/* Go-back-N resends everything after a loss: a window about the
	 * bandwidth-delay product of loopback/LAN keeps that cheap. */
	c->window = 32;
	ret = env_ulong("GDAK_UDP_WINDOW", 65536, "packets, 1..65536", &num);
	if (ret < 0)
		goto err;
	if (ret)
		c->window = (uint32_t)num;
	/* A peer QP in this process gets its packets through its inbox
	 * (tr_udp_local.c); 0 sends them through the kernel like any other. */
	if (gdak_env_bool("GDAK_UDP_LOCAL", &v) < 0) {
		ret = -EINVAL;
		goto err;
	}
	c->local = (uint8_t)v;
	/* the direct path (tr_udp_direct.c): on unless told 0 */
	v = 1;
	if (gdak_env_bool("GDAK_IBV_DIRECT", &v) < 0) {
		ret = -EINVAL;
		goto err;
	}
	c->direct = (uint8_t)v;
	/* choices 0..7 (the IBA retry count), then "forever" (index 8: an
	 * emulator extension the engine reads as retry_cnt 8) */
	if (gdak_env_choice("GDAK_UDP_RETRY", &v) < 0) {
		ret = -EINVAL;
		goto err;
	}
	c->retry_cnt = (uint8_t)v;
	/* checked by nm_fault_parse when the context opened (one parser for
	 * every transport); each QP parses its packet entries again for a
	 * generator of its own */
	env = gdak_env_raw("GDAK_FAULTS");
	if (env) {
		if (strlen(env) >= sizeof(c->faults)) {
			GDAK_ERR(NULL, 0, "GDAK_FAULTS longer than %zu characters", sizeof(c->faults) - 1);
			ret = -EINVAL;
			goto err;
		}
		strcpy(c->faults, env);
	}
	ctx->tr_priv = c;
	return 0;
err:
	free(c);
	return ret;
}

static void udp_ctx_fini(struct nm_ctx *ctx)
{
	free(ctx->tr_priv);
	ctx->tr_priv = NULL;
}

int nm_tr_udp_qp_direct(struct gdak_qp *bqp)
{
	struct nm_qp *qp = nm_qp_of(bqp);
	struct udp_qp *u = qp->ctx->tr == &nm_tr_udp_ops ? qp->tr_priv : NULL;

	return u && __atomic_load_n(&u->dseg_peer, __ATOMIC_RELAXED) != NULL;
}

/* The emulated QP behind an API QP, and its udp state; NULL when it is not
 * an emu QP on this transport (the entry points below answer -EINVAL). */
static struct udp_qp *udp_of(struct gdak_qp *bqp, struct nm_qp **qpp)
{
	struct nm_qp *qp;

	if (!bqp || strcmp(gdak_ctx_backend(bqp->ctx), "emu"))
		return NULL;
	qp = nm_qp_of(bqp);
	if (qp->ctx->tr != &nm_tr_udp_ops)
		return NULL;
	*qpp = qp;
	return qp->tr_priv;
}

int nm_tr_udp_qp_stats(struct gdak_qp *bqp, struct roce_stats *st)
{
	struct nm_qp *qp;
	struct udp_qp *u = udp_of(bqp, &qp);

	if (!u)
		return -EINVAL;
	/* called from any thread while the NIC thread counts: relaxed loads */
	roce_stats_read(st, &u->rqp.stats);
	st->icrc_errors += __atomic_load_n(&u->rctx.stats.icrc_errors, __ATOMIC_RELAXED);
	st->icrc_ip_id += __atomic_load_n(&u->rctx.stats.icrc_ip_id, __ATOMIC_RELAXED);
	st->bad_pkts += __atomic_load_n(&u->rctx.stats.bad_pkts, __ATOMIC_RELAXED);
	st->direct_in = u->dq ? udp_direct_qp_in(u->dq) : 0;
	return 0;
}

struct peek_call {
	struct udp_qp *u;
	struct nm_tr_udp_peek *out;
};

static void peek_on_thread(void *arg)
{
	struct peek_call *c = arg;
	const struct roce_qp *r = &c->u->rqp;

	*c->out = (struct nm_tr_udp_peek){ .state = r->state,
					   .psn0 = c->u->psn0,
					   .epsn = r->rseq->epsn,
					   .tx_psn = r->tx_psn,
					   .una_psn = r->una_psn,
					   .max_psn = r->max_psn,
					   .dqpn = r->dqpn,
					   .peer_sport = r->peer_sport,
					   .st = r->stats,
					   .ctx_st = c->u->rctx.stats };
}

int nm_tr_udp_qp_peek(struct gdak_qp *bqp, struct nm_tr_udp_peek *out)
{
	struct nm_qp *qp;
	struct peek_call c;
	struct udp_qp *u = udp_of(bqp, &qp);

	if (!u || !out)
		return -EINVAL;
	c = (struct peek_call){ .u = u, .out = out };
	nm_thread_call(qp->thr, peek_on_thread, &c);
	return 0;
}

const struct nm_transport_ops nm_tr_udp_ops = {
	.name = "udp",
	.ctx_init = udp_ctx_init,
	.ctx_fini = udp_ctx_fini,
	.qp_init = udp_qp_init,
	.qp_fini = udp_qp_fini,
	.qp_info = udp_qp_info,
	.qp_connect = udp_qp_connect,
	.post_send = udp_post_send,
	.qp_poll = udp_qp_poll,
	.qp_quiet = udp_qp_quiet,
	.qp_error = udp_qp_error,
	.qp_stopped = udp_qp_stopped,
	.qp_reset = udp_qp_reset,
	.dc_ready = udp_dc_ready,
	.dc_busy = udp_dc_busy,
};

/* The PSN the QP's requester starts at.  A verbs program chooses its own
 * send PSN and tells it to the peer itself; modify to RTS carries it (IBA
 * 11.2.5.3), after RTR has connected the QP (a responder-only QP, perftest's
 * bandwidth server, stays in RTR).  So gdak's libibverbs sets it here, before
 * the connect or after it while the requester has sent nothing. */
struct set_psn {
	struct udp_qp *u;
	uint32_t psn;
	int ret;
};

static void set_psn_on_thread(void *arg)
{
	struct set_psn *a = arg;
	struct roce_qp *r = &a->u->rqp;

	if (r->tx_psn != r->una_psn || r->tx_psn != r->max_psn || r->tx_psn != a->u->psn0) {
		a->ret = -EBUSY;
		return;
	}
	r->tx_psn = r->una_psn = r->max_psn = a->psn;
	a->u->psn0 = a->psn;
	a->ret = 0;
}

/* 0, -EINVAL when the QP is not on this transport, -EBUSY when it sent already. */
int nm_tr_udp_set_sq_psn(struct gdak_qp *bqp, uint32_t psn)
{
	struct set_psn a;
	struct nm_qp *qp;
	struct udp_qp *u = udp_of(bqp, &qp);

	if (!u)
		return -EINVAL;
	if (!u->watching) {
		u->psn0 = psn & ROCE_PSN_MASK;
		return 0;
	}
	a = (struct set_psn){ .u = u, .psn = psn & ROCE_PSN_MASK, .ret = -EINVAL };
	nm_thread_call(qp->thr, set_psn_on_thread, &a);
	return a.ret;
}

/* Packets reaching this QP's inbox were sent to UDP port @port of its
 * address (their ICRC covers it): a shared port - RoCEv2's 4791 - whose
 * owner (gdak's libibverbs) reads it and hands each packet to the QP its
 * BTH names.  Before the QP connects.  0, or -EINVAL. */
void nm_tr_udp_set_directory(struct udp_inbox *(*fn)(uint32_t addr, uint16_t port, uint32_t qpn))
{
	atomic_store_explicit(&udp_directory, fn, memory_order_release);
}

int nm_tr_udp_set_rx_port(struct gdak_qp *bqp, uint16_t port)
{
	struct nm_qp *qp;
	struct udp_qp *u = udp_of(bqp, &qp);

	if (!u || !port || u->watching)
		return -EINVAL;
	u->rx_dport = port;
	return 0;
}

/* The IBA retry counts of a connected QP (modify to RTS carries them,
 * after RTR connected it): transport retries 0..7, RNR retries 0..7 (7:
 * forever, IBA 9.7.5.2.8).  GDAK_UDP_RETRY=forever keeps its way.  On the
 * QP's NIC thread.  0, or -EINVAL. */
struct set_retry {
	struct udp_qp *u;
	uint8_t retry_cnt, rnr_retry;
};

static void set_retry_on_thread(void *arg)
{
	struct set_retry *a = arg;
	struct roce_qp *r = &a->u->rqp;

	if (!r->cfg.retry_forever) {
		r->cfg.retry_cnt = a->retry_cnt;
		r->retry_left = a->retry_cnt;
	}
	r->cfg.rnr_retry = a->rnr_retry;
	r->rnr_left = a->rnr_retry;
}

int nm_tr_udp_set_retry(struct gdak_qp *bqp, uint8_t retry_cnt, uint8_t rnr_retry)
{
	struct set_retry a;
	struct nm_qp *qp;
	struct udp_qp *u = udp_of(bqp, &qp);

	if (!u || retry_cnt > 7 || rnr_retry > 7 || !u->watching)
		return -EINVAL;
	a = (struct set_retry){ .u = u, .retry_cnt = retry_cnt, .rnr_retry = rnr_retry };
	nm_thread_call(qp->thr, set_retry_on_thread, &a);
	return 0;
}
