/* SPDX-License-Identifier: MIT */
/*
 * tr_udp_local.c - the udp transport's in-process wire: when both ends of a
 * connection are QPs of this process, their packets go from one QP's
 * transmit batch straight into the other's inbox instead of through two
 * system calls and the kernel's IPv4/UDP stack.  Linux rxe does the same
 * for a destination on its own device (rxe_net.c, the loopback path that
 * hands the skb to rxe_rcv without sending it).
 *
 * Nothing else changes: the packets are the same RoCEv2 packets (built,
 * ICRC'd, traced and put through GDAK_FAULTS exactly as before the socket),
 * the receiver checks their ICRC against the same IPv4/UDP addresses, and
 * a peer in another process still gets them over UDP.  GDAK_UDP_LOCAL=0
 * turns this off (every packet through the kernel).
 *
 * An inbox is a ring of packet slots with one consumer (the owning QP's NIC
 * thread, lock-free: it reads up to the published tail in place, then
 * releases the slots by moving the head) and producers serialised by a
 * mutex (normally one: the connected peer).  It is registered under the
 * QP's IPv4 address and UDP port, which are unique while its socket is
 * bound; a sender finds it at connect time and holds a reference.  The
 * slots are allocated when the first sender attaches, so QPs whose peers
 * are remote pay nothing.  When the owner goes away the inbox is marked
 * dead; a sender that finds it so drops its reference and falls back to the
 * socket (where the packets are lost, as on a wire to a closed port).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "nm_loc.h"
#include "tr_udp.h"

#define INBOX_SLOTS 64	/* >= the default window (32) plus the ACKs coming back */

struct inbox_slot {
	uint32_t len, sip;	/* sip: network order */
	uint16_t sport;		/* host order */
	uint8_t pkt[ROCE_MAX_PKT];
};

struct udp_inbox {
	struct udp_inbox *next;	/* registry */
	uint32_t addr;		/* network order */
	uint16_t port;		/* host order */
	_Atomic int refs;
	pthread_mutex_t lock;	/* producers, owner, slots */
	struct nm_qp *owner;	/* NULL: gone (push refuses) */
	struct inbox_slot *slots; /* NULL until a sender attaches */
	_Atomic uint32_t head;	/* consumer: next slot to read */
	_Atomic uint32_t tail;	/* producers: next slot to fill */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct udp_inbox *reg_head;

int udp_inbox_open(struct nm_qp *owner, uint32_t addr, uint16_t port, struct udp_inbox **out)
{
	struct udp_inbox *ib = calloc(1, sizeof(*ib));

	if (!ib)
		return -ENOMEM;
	ib->addr = addr;
	ib->port = port;
	ib->owner = owner;
	atomic_init(&ib->refs, 1);
	pthread_mutex_init(&ib->lock, NULL);
	pthread_mutex_lock(&reg_lock);
	ib->next = reg_head;
	reg_head = ib;
	pthread_mutex_unlock(&reg_lock);
	*out = ib;
	return 0;
}

void udp_inbox_put(struct udp_inbox *ib)
{
	if (!ib || atomic_fetch_sub_explicit(&ib->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_destroy(&ib->lock);
	free(ib->slots);
	free(ib);
}

void udp_inbox_close(struct udp_inbox *ib)
{
	struct udp_inbox **pp;

	if (!ib)
		return;
	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_head; *pp; pp = &(*pp)->next) {
		if (*pp == ib) {
			*pp = ib->next;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	pthread_mutex_lock(&ib->lock);
	ib->owner = NULL;
	pthread_mutex_unlock(&ib->lock);
	udp_inbox_put(ib);
}

struct udp_inbox *udp_inbox_attach(uint32_t addr, uint16_t port)
{
	struct udp_inbox *ib;

	pthread_mutex_lock(&reg_lock);
	for (ib = reg_head; ib; ib = ib->next)
		if (ib->addr == addr && ib->port == port)
			break;
	if (ib)
		atomic_fetch_add_explicit(&ib->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&reg_lock);
	if (!ib)
		return NULL;
	pthread_mutex_lock(&ib->lock);
	if (!ib->slots)
		ib->slots = malloc(INBOX_SLOTS * sizeof(*ib->slots));
	pthread_mutex_unlock(&ib->lock);
	if (!ib->slots) {
		/* no memory for the shortcut: the socket path still works */
		udp_inbox_put(ib);
		return NULL;
	}
	return ib;
}

int udp_inbox_push(struct udp_inbox *ib, uint32_t sip, uint16_t sport, const struct iovec *v,
		   unsigned n)
{
	uint32_t head, tail;
	unsigned i;

	pthread_mutex_lock(&ib->lock);
	if (!ib->owner) {
		pthread_mutex_unlock(&ib->lock);
		return -EPIPE;
	}
	/* acquire: the consumer is done with the slots before head */
	head = atomic_load_explicit(&ib->head, memory_order_acquire);
	tail = atomic_load_explicit(&ib->tail, memory_order_relaxed);
	for (i = 0; i < n && tail - head < INBOX_SLOTS; i++, tail++) {
		struct inbox_slot *s = &ib->slots[tail % INBOX_SLOTS];

		s->len = (uint32_t)v[i].iov_len;
		s->sip = sip;
		s->sport = sport;
		memcpy(s->pkt, v[i].iov_base, v[i].iov_len);
	}
	if (i) {
		/* release: the slots' contents before the consumer sees the tail */
		atomic_store_explicit(&ib->tail, tail, memory_order_release);
		/* under the lock: the owner cannot be finalised meanwhile */
		nm_thread_kick(ib->owner);
	}
	pthread_mutex_unlock(&ib->lock);
	return (int)i;
}

const uint8_t *udp_inbox_peek(struct udp_inbox *ib, uint32_t *len, uint32_t *sip, uint16_t *sport)
{
	uint32_t head = atomic_load_explicit(&ib->head, memory_order_relaxed);
	const struct inbox_slot *s;

	/* acquire: pairs with the producer's release of tail */
	if (head == atomic_load_explicit(&ib->tail, memory_order_acquire))
		return NULL;
	s = &ib->slots[head % INBOX_SLOTS];
	*len = s->len;
	*sip = s->sip;
	*sport = s->sport;
	return s->pkt;
}

void udp_inbox_pop(struct udp_inbox *ib)
{
	uint32_t head = atomic_load_explicit(&ib->head, memory_order_relaxed);

	atomic_store_explicit(&ib->head, head + 1, memory_order_release);
}

int udp_inbox_drain_here(struct udp_inbox *ib)
{
	struct nm_qp *qp;

	pthread_mutex_lock(&ib->lock);
	qp = ib->owner;
	/* the owner still watching, on this thread: its qp_fini stops the
	 * watching on this thread (nm_thread_call) before it closes the
	 * inbox and frees the QP, so neither happens while we run.  The
	 * owner is read under the lock the close takes. */
	if (qp && (!qp->on_thread || !nm_thread_is_current(qp->thr) || !nm_tr_udp_watching(qp)))
		qp = NULL;
	pthread_mutex_unlock(&ib->lock);
	if (!qp)
		return 0;
	nm_tr_udp_drain(qp);
	return 1;
}
