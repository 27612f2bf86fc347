/* SPDX-License-Identifier: MIT */
/*
 * tr_udp.h - the "udp" transport of the NIC model (RoCEv2 over UDP sockets)
 * as far as other parts of gdak (tests, tools) need to see it.
 */
#ifndef NM_TR_UDP_H
#define NM_TR_UDP_H

#include <gdak/gdak.h>

#include "roce/roce.h"

/* The engine counters of a QP opened on "emu:udp..." (retransmissions,
 * NAKs, ICRC drops, injected faults).  0, or -EINVAL for another transport. */
int nm_tr_udp_qp_stats(struct gdak_qp *qp, struct roce_stats *st);
/* The first PSN the QP sends with (default: random per QP), before it
 * connects or after, while it has sent nothing.  0, -EINVAL for another
 * transport, -EBUSY when it has sent already. */
int nm_tr_udp_set_sq_psn(struct gdak_qp *qp, uint32_t psn);
/* The UDP port the packets handed to the QP's inbox were sent to (default:
 * its own), for a shared port demultiplexed by its owner; before connect. */
int nm_tr_udp_set_rx_port(struct gdak_qp *qp, uint16_t port);
/* A process-wide directory of QPs that receive on a shared port (gdak's
 * libibverbs: every QP of a device receives on its address's UDP 4791 and
 * the port's reader hands packets on by destination QPN): given the
 * address (network order), port and QPN a connect names, the inbox of that
 * QP of this process (a reference from udp_inbox_attach) or NULL.  With it
 * a connect to such a QP skips the kernel as one to a QP's own port does;
 * NULL unsets it. */
struct udp_inbox;
void nm_tr_udp_set_directory(struct udp_inbox *(*fn)(uint32_t addr, uint16_t port, uint32_t qpn));
/* 1 when the QP's WRITEs and READs may take the direct path (its peer is a
 * device of another process of this host that published itself), else 0;
 * any thread, no lock. */
int nm_tr_udp_qp_direct(struct gdak_qp *qp);
/* A connected QP's transport and RNR retry counts (0..7; RNR 7: forever). */
int nm_tr_udp_set_retry(struct gdak_qp *qp, uint8_t retry_cnt, uint8_t rnr_retry);

/* A consistent snapshot of a udp QP's engine, taken on its NIC thread (for
 * tests that must name the PSN a responder expects).  0 or -EINVAL. */
struct nm_tr_udp_peek {
	int state;			   /* enum roce_qp_state */
	uint32_t psn0;			   /* the first PSN gdak_qp_info reports */
	uint32_t epsn;			   /* responder: next PSN expected */
	uint32_t tx_psn, una_psn, max_psn; /* requester */
	uint32_t dqpn;
	uint16_t peer_sport;	  /* 0: any source port (address only) */
	struct roce_stats st;	  /* the QP's own (packets that reached it) */
	struct roce_stats ctx_st; /* packets dropped before reaching it (ICRC, malformed,
				   * unknown QPN) */
};
int nm_tr_udp_qp_peek(struct gdak_qp *qp, struct nm_tr_udp_peek *out);

/* An inline run (nm_thread_try_inline) defers its QPs' sendmmsg until it has
 * let go of the engine lock: detach (under the lock) hands back what to send
 * and sets *wake when the NIC thread has some of it to send; send (after the
 * lock) sends it, 1 when some stayed for the NIC thread (kicked). */
void *nm_tr_udp_inline_detach(int *wake);
int nm_tr_udp_inline_send(void *list);

/* The direct path between processes of one host (tr_udp_direct.c): the
 * device that holds addr:port (gdak's libibverbs, gv_addr.c) publishes its
 * responders' state; its MRs' entries (rkey, [start, end), GDAK_ACCESS_*)
 * come and go with them, and a clear returns only when no sender writes
 * into the region.  publish: 0 or -errno (the path stays off). */
int udp_direct_publish(uint32_t addr, uint16_t port);
/* The head of a segment (/dev/shm/gdak-direct-NS-ADDR-PORT, mode 0600):
 * complete once magic is set (last); the owner's pid, in pid namespace
 * pidns (the inode of /proc/PID/ns/pid), holds nonce at nonce_addr while it
 * runs the program that made it; off_addr: its words that say "no direct
 * path now" while non-zero (its trace, its injected faults: a sender reads
 * them before every copy).  Tests read and plant it. */
#define UDP_DIRECT_MAGIC 0x31726964616b6467ull /* "gdakdir1" */
struct udp_direct_head {
	uint64_t magic;
	int32_t pid;
	uint32_t addr; /* network order */
	uint32_t port;
	uint32_t pad;
	uint64_t nonce_addr, nonce, pidns;
	uint64_t off_addr[2]; /* an 8-byte word, a 4-byte word */
};
void udp_direct_mr_set(uint32_t addr, uint16_t port, uint32_t rkey, uintptr_t start, uintptr_t end,
		       unsigned access);
void udp_direct_mr_clear(uint32_t addr, uint16_t port, uint32_t rkey);

/* ---- internal to tr_udp*.c: the direct path (tr_udp_direct.c) --------------- */

struct udp_dseg;
struct udp_direct_qp;
struct iovec;
/* This process's published segment for addr:port / a peer process's (a
 * reference), or NULL. */
struct udp_dseg *udp_direct_own(uint32_t addr, uint16_t port);
struct udp_dseg *udp_direct_peer(uint32_t addr, uint16_t port);
/* Owner that publishes nothing (GDAK_IBV_DIRECT=0): remove a dead owner's
 * segment of its address, so no sender takes it for ours. */
void udp_direct_forget(uint32_t addr, uint16_t port);
void udp_direct_put(struct udp_dseg *d);
/* The segment's lock: held by the owner while its engine takes packets for
 * a published QP (the sequence state is shared).  0 or -errno. */
int udp_direct_lock(struct udp_dseg *d);
void udp_direct_unlock(struct udp_dseg *d);
/* Owner, at connect: publish responder r of QP qpn, connected to peer_qpn
 * at peer_addr:peer_port (the port our packets go to), its state word (a
 * sender reads it before each copy) at state; r->rseq moves into the
 * entry.  NULL when full. */
struct udp_direct_qp *udp_direct_qp_add(struct udp_dseg *d, uint32_t qpn, uint32_t peer_addr,
					uint16_t peer_port, uint32_t peer_qpn, uint32_t mtu,
					struct roce_qp *r, const void *state);
/* Owner, not under the lock, after the QP stopped taking requests (ERR):
 * closes its entry and returns once no sender that saw it open is still
 * copying. */
void udp_direct_qp_barrier(struct udp_dseg *d, struct udp_direct_qp *q);
/* Owner: withdraw it (r's sequence state comes back into r). */
void udp_direct_qp_del(struct udp_dseg *d, struct udp_direct_qp *q, struct roce_qp *r);
/* Owner, under the lock: whether the responder takes a new message now. */
void udp_direct_qp_ok(struct udp_direct_qp *q, int ok);
/* Requests its peer put in through the direct path. */
uint64_t udp_direct_qp_in(const struct udp_direct_qp *q);
/* Sender: a WRITE of len bytes from loc to QP dqpn of segment d at
 * rkey/va (read: a READ of them into loc), as QP my_qpn at my_addr:my_port
 * (the port it receives on: what its peer was connected to) whose
 * idle requester would send it at PSN psn, path MTU mtu.  1: done (the
 * responder's PSN and MSN advanced by it, *npkts its PSNs); 0: not taken -
 * send it over UDP; -EPERM: the kernel refuses the copy (said once): never
 * again to this owner.  *cache: the peer's entry found last time. */
int udp_direct_rdma(struct udp_dseg *d, struct udp_direct_qp **cache, int read, uint32_t dqpn,
		    uint32_t my_addr, uint16_t my_port, uint32_t my_qpn, uint32_t psn, uint32_t mtu,
		    uint32_t rkey, uint64_t va, const struct iovec *loc, unsigned nloc,
		    uint32_t len, uint32_t *npkts);

/* ---- internal to tr_udp*.c: the in-process wire (tr_udp_local.c) ---------- */

struct iovec;
struct nm_qp;
struct udp_inbox;

/* Register owner's inbox under its IPv4 address (network order) and UDP
 * port (host order).  0 or -ENOMEM. */
int udp_inbox_open(struct nm_qp *owner, uint32_t addr, uint16_t port, struct udp_inbox **out);
/* The owner goes away: unregister, refuse further packets, drop its reference. */
void udp_inbox_close(struct udp_inbox *ib);
/* A sender's reference to the inbox of the QP bound at addr:port in this
 * process, or NULL (none, or no memory for it). */
struct udp_inbox *udp_inbox_attach(uint32_t addr, uint16_t port);
void udp_inbox_put(struct udp_inbox *ib);
/* Queue packets v[0..n) from sip:sport and wake the owner.  Returns how
 * many were taken (fewer when the ring is full), or -EPIPE when the owner
 * is gone. */
int udp_inbox_push(struct udp_inbox *ib, uint32_t sip, uint16_t sport, const struct iovec *v,
		   unsigned n);
/* Owner's thread: the oldest packet (read in place until udp_inbox_pop), or NULL. */
const uint8_t *udp_inbox_peek(struct udp_inbox *ib, uint32_t *len, uint32_t *sip, uint16_t *sport);
void udp_inbox_pop(struct udp_inbox *ib);
/* A producer on the owner's own NIC thread found ib full and cannot wait
 * for it: the owner takes in what is there now.  1 when it did, 0 when
 * the owner is served by another thread or is going away. */
int udp_inbox_drain_here(struct udp_inbox *ib);
/* tr_udp.c, on the QP's thread: one engine round that reads its inbox. */
void nm_tr_udp_drain(struct nm_qp *qp);
/* 1 while the QP's watchers run (between connect and fini / reset). */
int nm_tr_udp_watching(const struct nm_qp *qp);

#endif /* NM_TR_UDP_H */
