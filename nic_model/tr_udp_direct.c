/* SPDX-License-Identifier: MIT */
/*
 * tr_udp_direct.c - the udp transport's direct path between processes of one
 * host: the requester does the responder's work itself, as Linux rxe's
 * sender does in its system call and softirq, so no thread of the receiving
 * process has to be woken for a message (docs/VERBS.md "Threads").
 *
 * A device of gdak's libibverbs (gv_addr.c) publishes, in a shared-memory
 * segment named by its IPv4 address and UDP port, what its responder needs
 * to take a request: per QP the connected peer (address, QPN), whether the
 * responder would take a new message now, and its sequence state - the
 * expected PSN and MSN, the one copy its engine (roce_qp.rseq) uses too -
 * and per MR the rkey, range and access.  The segment holds one process-
 * shared robust mutex; the owner holds it while its engine takes packets
 * for a published QP and while it changes a QP's or MR's entry, so a
 * deregistration or destroy cannot return while a sender writes.
 *
 * A sender whose requester is idle (everything acknowledged: the request
 * would be the only one the responder has to take) checks under that lock
 * what the responder checks - QP state and peer, PSN == expected, rkey,
 * access, bounds - copies the payload with process_vm_writev into the
 * owner's memory, advances the expected PSN and MSN and completes its WQE
 * as its ACK would.  Anything else (a check that fails, a WRITE with
 * immediate, a message in flight) goes over UDP, where the real responder
 * answers it: a NAK, an access error, the QP to ERR - exactly as before.
 *
 * The segment's name (address, port, network namespace) is unique while
 * its owner holds the address's port (the bind is the claim), so a segment
 * found at publication is a dead owner's and is replaced; it is unlinked at
 * exit.  A sender maps only a segment of its own user that nobody else can
 * write, whose pid lives in its pid namespace, and before every copy reads
 * two words of the owner's memory in one process_vm_readv: a random nonce
 * the segment names (only the process that made the segment holds it: not
 * after an exec, not another process that got the pid) and the responder
 * QP's own state word (RTR or RTS, or the request goes over UDP; a modify to
 * ERR takes the lock after it stores the state, so no copy that read the
 * old state outlives it), and two more words: the owner's trace and
 * injected-faults switches (either on, whenever it was turned on: the
 * request goes over UDP, so the owner's trace sees it; the sender checks
 * its own switches before it asks).  process_vm_* refused (Yama's
 * ptrace_scope): the path to that owner turns itself off and says so once.
 * A device that claims its address removes the segments of this user
 * whose owner is gone (killed, or exec'd: no atexit ran).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "gdak_log.h"
#include "nm_loc.h"
#include "tr_udp.h"

#define DIRECT_MAGIC UDP_DIRECT_MAGIC
#define DIRECT_QPS 1024
#define DIRECT_MRS 4096 /* rkey >> 8 below this: published */
/* The longest request copied under the owner's lock (which its receive
 * path and its deregistrations wait for); longer ones go over UDP. */
#define DIRECT_MAX_LEN ((uint32_t)4 << 20)

struct direct_mr {
	uint32_t rkey;
	uint32_t access; /* GDAK_ACCESS_* */
	uint64_t start, end;
	uint32_t valid;
};

struct udp_direct_qp {
	uint32_t used;
	uint32_t qpn;
	uint64_t state_addr; /* the owner's QP state (nm_qp base.state), in its memory */
	uint32_t ok;	     /* the responder takes a new message at rseq.epsn */
	uint32_t peer_addr;  /* network order: the connected requester, */
	uint32_t peer_port;  /* the port it receives on (our packets' destination), */
	uint32_t peer_qpn;   /* its QP */
	uint32_t mtu;	     /* path MTU */
	struct roce_rseq rseq;
	uint64_t direct_in; /* requests taken through here */
};

struct direct_seg {
	/* magic, pid, address, port; who the owner is: a sender reads
	 * nonce_addr in pid's memory before every copy and finds nonce there
	 * only while the process that made the segment runs it (not after an
	 * exec, not another process that got the pid); pidns: the pid
	 * namespace the pid means something in (tr_udp.h) */
	struct udp_direct_head h;
	pthread_mutex_t lock;
	struct udp_direct_qp qp[DIRECT_QPS];
	struct direct_mr mr[DIRECT_MRS];
};

struct udp_dseg {
	struct udp_dseg *next;
	uint32_t addr;
	uint16_t port;
	int own;
	int refs;
	_Atomic int refused; /* process_vm_* of this owner said EPERM once */
	uint64_t nonce;	     /* own: what s->h.nonce_addr points at */
	struct direct_seg *s;
	char name[64];
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct udp_dseg *reg_head;

static uint64_t pid_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) ? 0 : (uint64_t)st.st_ino;
}

/* The name: the address and port, in this network namespace (two
 * namespaces may each have a device at 127.0.0.230:4791). */
static void seg_name(char *buf, size_t n, uint32_t addr, uint16_t port)
{
	struct stat st;
	unsigned long ns = stat("/proc/self/ns/net", &st) ? 0 : (unsigned long)st.st_ino;

	snprintf(buf, n, "/gdak-direct-%lx-%08x-%u", ns, (unsigned)ntohl(addr), (unsigned)port);
}

static void unlink_own(void)
{
	pthread_mutex_lock(&reg_lock);
	/* not a forked child's: the segments are its parent's */
	for (struct udp_dseg *d = reg_head; d; d = d->next)
		if (d->own && d->s->h.pid == (int32_t)getpid())
			shm_unlink(d->name);
	pthread_mutex_unlock(&reg_lock);
}

/* ---- dead owners' segments ------------------------------------------------------------ */

/* A segment file a sender or the sweep may trust: this user's, nobody
 * else may read or write it (the senders' rule), a segment's size.  A
 * file another user planted under the name is not one (its lock, its pid
 * and its nonce would be theirs to set). */
static int seg_file_ours(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & 077) &&
	       (size_t)st->st_size == sizeof(struct direct_seg);
}

/* A complete head of an owner in our pid namespace. */
static int head_complete(const struct udp_direct_head *h)
{
	return __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == DIRECT_MAGIC && h->pid > 0 &&
	       h->pidns == pid_ns();
}

/* 1 when the owner of the segment whose head is h is gone: no process of
 * that pid in our pid namespace, or the process there holds no longer the
 * segment's nonce (it exec'd, or the pid went to another process).  0 when
 * it is alive or we cannot tell: an incomplete head (its owner may be
 * writing it), another pid namespace's, a pid of another user's, the
 * kernel refusing to let us read it (Yama's ptrace_scope). */
static int owner_gone(const struct udp_direct_head *h)
{
	uint64_t v = 0;
	struct iovec l = { &v, sizeof(v) }, r = { (void *)(uintptr_t)h->nonce_addr, sizeof(v) };
	ssize_t n;

	if (!head_complete(h) || h->pid == (int32_t)getpid())
		return 0;
	if (kill(h->pid, 0))
		return errno == ESRCH;
	n = process_vm_readv(h->pid, &l, 1, &r, 1, 0);
	if (n < 0)
		return errno == ESRCH || errno == EFAULT; /* gone, or no such word there */
	return n != (ssize_t)sizeof(v) || v != h->nonce;
}

/* Remove segment name (/gdak-direct-...) when it is a file of ours
 * (seg_file_ours) whose owner is gone.  Under flock: a publisher that
 * replaces a dead owner's segment of its own address (udp_direct_publish)
 * takes it too before it unlinks the name, so the name is removed only
 * while it still names the file judged here, never the new owner's. */
static void remove_if_gone(const char *name)
{
	struct udp_direct_head h;
	struct stat st, now;
	char path[96];
	int fd = shm_open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);

	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	if (!fstat(fd, &st) && seg_file_ours(&st) && !flock(fd, LOCK_EX) &&
	    pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && owner_gone(&h) &&
	    !stat(path, &now) && now.st_dev == st.st_dev && now.st_ino == st.st_ino) {
		if (!shm_unlink(name))
			GDAK_INFO(NULL, 0, "removed %s: its owner (pid %d) is gone", path,
				  (int)h.pid);
	}
	close(fd); /* (the flock goes with it) */
}

/* Every dead owner's segment of this user (a process killed by a signal
 * leaves its own): looked for whenever a device claims its address. */
static void sweep(void)
{
	DIR *dir = opendir("/dev/shm");
	struct dirent *e;
	char name[80];

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		unsigned long ns;
		unsigned a, p;
		int end = 0;
		size_t len = strlen(e->d_name);

		if (sscanf(e->d_name, "gdak-direct-%lx-%8x-%u%n", &ns, &a, &p, &end) != 3 ||
		    e->d_name[end] || len >= sizeof(name) - 1)
			continue;
		/* (not snprintf: some -O levels then warn of truncation) */
		name[0] = '/';
		memcpy(name + 1, e->d_name, len + 1);
		remove_if_gone(name);
	}
	closedir(dir);
}

/* The segment at name is a dead owner's (we hold its address and port):
 * away with it, under its flock (see remove_if_gone). */
static void replace_dead(const char *name)
{
	int fd = shm_open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);

	if (fd >= 0)
		(void)flock(fd, LOCK_EX);
	shm_unlink(name);
	if (fd >= 0)
		close(fd);
}

int udp_direct_lock(struct udp_dseg *d)
{
	int r = pthread_mutex_lock(&d->s->lock);

	if (r == EOWNERDEAD) {
		/* a sender died holding it: what it changed is whole (the
		 * sequence state moves after the copy, in one go) */
		pthread_mutex_consistent(&d->s->lock);
		r = 0;
	}
	return -r;
}

void udp_direct_unlock(struct udp_dseg *d)
{
	pthread_mutex_unlock(&d->s->lock);
}

int udp_direct_publish(uint32_t addr, uint16_t port)
{
	static _Atomic int at_exit;
	struct udp_dseg *d = calloc(1, sizeof(*d));
	pthread_mutexattr_t ma;
	char txt[INET_ADDRSTRLEN];
	int fd, r;

	if (!d)
		return -ENOMEM;
	seg_name(d->name, sizeof(d->name), addr, port);
	inet_ntop(AF_INET, &addr, txt, sizeof(txt));
	sweep();
	/* we hold addr:port, so a segment of that name is a dead owner's */
	fd = shm_open(d->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 && errno == EEXIST) {
		replace_dead(d->name);
		fd = shm_open(d->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	}
	if (fd < 0 || ftruncate(fd, sizeof(struct direct_seg))) {
		r = -errno;
		GDAK_INFO(NULL, 0, "%s:%u: no direct path (shm %s: %s)", txt, port, d->name,
			  strerror(-r));
		if (fd >= 0) {
			close(fd);
			shm_unlink(d->name);
		}
		free(d);
		return r;
	}
	d->s = mmap(NULL, sizeof(struct direct_seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (d->s == MAP_FAILED) {
		r = -errno;
		shm_unlink(d->name);
		free(d);
		return r;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&d->s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	d->s->h.pid = (int32_t)getpid();
	d->s->h.addr = addr;
	d->s->h.port = port;
	if (getrandom(&d->nonce, sizeof(d->nonce), 0) != sizeof(d->nonce))
		d->nonce = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)d ^ (uint64_t)time(NULL);
	d->nonce |= 1; /* never 0, which a fresh page holds */
	d->s->h.nonce_addr = (uint64_t)(uintptr_t)&d->nonce;
	d->s->h.nonce = d->nonce;
	d->s->h.pidns = pid_ns();
	/* a trace or injected faults, started any time: every packet goes
	 * over UDP, where both sides' traces and faults see it */
	d->s->h.off_addr[0] = (uint64_t)(uintptr_t)&nm_cfg.trace;
	d->s->h.off_addr[1] = (uint64_t)(uintptr_t)&nm_faults_on;
	/* last: a sender maps only a segment that says it is complete */
	__atomic_store_n(&d->s->h.magic, DIRECT_MAGIC, __ATOMIC_RELEASE);
	d->addr = addr;
	d->port = port;
	d->own = 1;
	d->refs = 1;
	pthread_mutex_lock(&reg_lock);
	d->next = reg_head;
	reg_head = d;
	pthread_mutex_unlock(&reg_lock);
	if (!atomic_exchange(&at_exit, 1))
		atexit(unlink_own);
	GDAK_INFO(NULL, 0, "%s:%u: direct path published (%s)", txt, port, d->name);
	return 0;
}

void udp_direct_forget(uint32_t addr, uint16_t port)
{
	char name[64];

	/* we hold addr:port and publish nothing: a segment of that name is a
	 * dead owner's (shm_unlink refuses another user's) */
	seg_name(name, sizeof(name), addr, port);
	replace_dead(name);
	sweep();
}

static struct udp_dseg *find(uint32_t addr, uint16_t port, int own)
{
	struct udp_dseg *d;

	for (d = reg_head; d; d = d->next)
		if (d->addr == addr && d->port == port && d->own == own)
			break;
	return d;
}

struct udp_dseg *udp_direct_own(uint32_t addr, uint16_t port)
{
	struct udp_dseg *d;

	pthread_mutex_lock(&reg_lock);
	d = find(addr, port, 1);
	if (d)
		d->refs++;
	pthread_mutex_unlock(&reg_lock);
	return d;
}

struct udp_dseg *udp_direct_peer(uint32_t addr, uint16_t port)
{
	struct udp_dseg *d;
	struct stat st;
	int fd;

	pthread_mutex_lock(&reg_lock);
	/* a device of this process: its peers use the in-process inbox */
	if (find(addr, port, 1)) {
		pthread_mutex_unlock(&reg_lock);
		return NULL;
	}
	d = find(addr, port, 0);
	if (d && (__atomic_load_n(&d->s->h.pid, __ATOMIC_RELAXED) <= 0 || kill(d->s->h.pid, 0))) {
		/* its owner died: forget the mapping, look for a new owner's */
		struct udp_dseg **pp;

		for (pp = &reg_head; *pp != d; pp = &(*pp)->next)
			;
		*pp = d->next;
		d->next = NULL;
		if (--d->refs == 0) {
			munmap(d->s, sizeof(*d->s));
			free(d);
		}
		d = NULL;
	}
	if (d) {
		d->refs++;
		pthread_mutex_unlock(&reg_lock);
		return d;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out;
	seg_name(d->name, sizeof(d->name), addr, port);
	fd = shm_open(d->name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0 || fstat(fd, &st) || !seg_file_ours(&st)) {
		if (fd >= 0)
			close(fd);
		free(d);
		d = NULL;
		goto out;
	}
	d->s = mmap(NULL, sizeof(struct direct_seg), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	/* a dead owner's that nobody replaced (it crashed; nobody holds its
	 * address now): not a peer */
	if (d->s == MAP_FAILED || !head_complete(&d->s->h) || d->s->h.addr != addr ||
	    d->s->h.port != port || kill(d->s->h.pid, 0)) {
		if (d->s != MAP_FAILED)
			munmap(d->s, sizeof(*d->s));
		free(d);
		d = NULL;
		goto out;
	}
	d->addr = addr;
	d->port = port;
	d->refs = 2; /* the registry's and the caller's */
	d->next = reg_head;
	reg_head = d;
out:
	pthread_mutex_unlock(&reg_lock);
	return d;
}

void udp_direct_put(struct udp_dseg *d)
{
	int last;

	if (!d)
		return;
	pthread_mutex_lock(&reg_lock);
	last = --d->refs == 0;
	pthread_mutex_unlock(&reg_lock);
	if (last) {
		munmap(d->s, sizeof(*d->s));
		free(d);
	}
}

/* ---- the owner: QPs and MRs -------------------------------------------------------- */

struct udp_direct_qp *udp_direct_qp_add(struct udp_dseg *d, uint32_t qpn, uint32_t peer_addr,
					uint16_t peer_port, uint32_t peer_qpn, uint32_t mtu,
					struct roce_qp *r, const void *state)
{
	struct udp_direct_qp *q = NULL;

	if (udp_direct_lock(d))
		return NULL;
	for (unsigned i = 0; i < DIRECT_QPS; i++)
		if (!d->s->qp[i].used) {
			q = &d->s->qp[i];
			break;
		}
	if (q) {
		q->qpn = qpn;
		q->state_addr = (uint64_t)(uintptr_t)state;
		q->peer_addr = peer_addr;
		q->peer_port = peer_port;
		q->peer_qpn = peer_qpn;
		q->mtu = mtu;
		q->rseq = *r->rseq;
		q->direct_in = 0;
		q->ok = (uint32_t)roce_resp_ready(r);
		r->rseq = &q->rseq; /* the one copy from now on */
		q->used = 1;
	}
	udp_direct_unlock(d);
	return q;
}

void udp_direct_qp_del(struct udp_dseg *d, struct udp_direct_qp *q, struct roce_qp *r)
{
	/* a sender that holds the lock is done with the QP when we get it */
	(void)udp_direct_lock(d);
	if (r && r->rseq == &q->rseq) {
		r->rseq_own = q->rseq;
		r->rseq = &r->rseq_own;
	}
	q->ok = 0;
	q->used = 0;
	udp_direct_unlock(d);
}

void udp_direct_qp_ok(struct udp_direct_qp *q, int ok)
{
	q->ok = (uint32_t)ok;
}

uint64_t udp_direct_qp_in(const struct udp_direct_qp *q)
{
	return __atomic_load_n(&q->direct_in, __ATOMIC_RELAXED);
}

void udp_direct_mr_set(uint32_t addr, uint16_t port, uint32_t rkey, uintptr_t start, uintptr_t end,
		       unsigned access)
{
	struct udp_dseg *d = udp_direct_own(addr, port);
	uint32_t i = rkey >> 8;

	if (!d)
		return;
	if (i < DIRECT_MRS && !udp_direct_lock(d)) {
		struct direct_mr *m = &d->s->mr[i];

		m->rkey = rkey;
		m->access = access;
		m->start = start;
		m->end = end;
		m->valid = 1;
		udp_direct_unlock(d);
	}
	udp_direct_put(d);
}

void udp_direct_mr_clear(uint32_t addr, uint16_t port, uint32_t rkey)
{
	struct udp_dseg *d = udp_direct_own(addr, port);
	uint32_t i = rkey >> 8;

	if (!d)
		return;
	/* under the lock: a sender writing into the region is done when we
	 * have it, and none starts after */
	if (i < DIRECT_MRS && !udp_direct_lock(d)) {
		if (d->s->mr[i].rkey == rkey)
			d->s->mr[i].valid = 0;
		udp_direct_unlock(d);
	}
	udp_direct_put(d);
}

/* ---- the sender ---------------------------------------------------------------------- */

int udp_direct_rdma(struct udp_dseg *d, struct udp_direct_qp **cache, int read, uint32_t dqpn,
		    uint32_t my_addr, uint16_t my_port, uint32_t my_qpn, uint32_t psn, uint32_t mtu,
		    uint32_t rkey, uint64_t va, const struct iovec *loc, unsigned nloc,
		    uint32_t len, uint32_t *npkts_out)
{
	struct direct_seg *s = d->s;
	struct udp_direct_qp *q;
	const struct direct_mr *m;
	struct iovec rem, idl[4], idr[4];
	uint64_t nonce = 0, trace = 1;
	int32_t state = -1, faults = 1;
	uint32_t need = read ? GDAK_ACCESS_REMOTE_READ : GDAK_ACCESS_REMOTE_WRITE;
	uint32_t npkts = (len + mtu - 1) / mtu;
	ssize_t n;
	int ret = 0;

	if (atomic_load_explicit(&d->refused, memory_order_relaxed))
		return -EPERM;
	if (!len || len > DIRECT_MAX_LEN)
		return 0; /* (a zero-length request: the responder's own rules) */
	if (udp_direct_lock(d))
		return 0;
	q = *cache;
	if (!q || !q->used || q->qpn != dqpn) {
		q = NULL;
		for (unsigned i = 0; i < DIRECT_QPS; i++)
			if (s->qp[i].used && s->qp[i].qpn == dqpn) {
				q = &s->qp[i];
				break;
			}
		*cache = q;
	}
	/* what the responder checks of the packet: its state, that it comes
	 * from its peer - address, port and QPN: two processes on one address
	 * may have QPs of one number - the PSN; then the rkey (nm_check_rkey) */
	if (!q || !q->ok || q->peer_addr != my_addr || q->peer_port != my_port ||
	    q->peer_qpn != my_qpn || q->rseq.epsn != psn || q->mtu != mtu)
		goto out;
	if ((rkey >> 8) >= DIRECT_MRS)
		goto out;
	m = &s->mr[rkey >> 8];
	if (!m->valid || m->rkey != rkey || (m->access & need) != need || va < m->start ||
	    va > m->end || len > m->end - va)
		goto out; /* the responder's NAK comes over UDP */
	/* the owner is still the process that published the segment, its
	 * QP is in a state that takes requests now (its own word: a modify to
	 * ERR stores it, then waits for this lock), and it traces nothing and
	 * injects no faults (its trace must see the packet) */
	idl[0] = (struct iovec){ &nonce, sizeof(nonce) };
	idl[1] = (struct iovec){ &state, sizeof(state) };
	idl[2] = (struct iovec){ &trace, sizeof(trace) };
	idl[3] = (struct iovec){ &faults, sizeof(faults) };
	idr[0] = (struct iovec){ (void *)(uintptr_t)s->h.nonce_addr, sizeof(nonce) };
	idr[1] = (struct iovec){ (void *)(uintptr_t)q->state_addr, sizeof(state) };
	idr[2] = (struct iovec){ (void *)(uintptr_t)s->h.off_addr[0], sizeof(trace) };
	idr[3] = (struct iovec){ (void *)(uintptr_t)s->h.off_addr[1], sizeof(faults) };
	n = process_vm_readv(s->h.pid, idl, 4, idr, 4, 0);
	if (n < 0 && errno == EPERM)
		goto refused;
	if (n != (ssize_t)(sizeof(nonce) + sizeof(state) + sizeof(trace) + sizeof(faults)) ||
	    nonce != s->h.nonce || (state != GDAK_QPS_RTR && state != GDAK_QPS_RTS) || trace ||
	    faults)
		goto out;
	rem.iov_base = (void *)(uintptr_t)va;
	rem.iov_len = len;
	n = read ? process_vm_readv(s->h.pid, loc, nloc, &rem, 1, 0)
		 : process_vm_writev(s->h.pid, loc, nloc, &rem, 1, 0);
	if (n < 0 && errno == EPERM)
		goto refused;
	if (n < 0)
		goto out;
	if ((uint32_t)n != len)
		goto out; /* UDP moves it all again: the same bytes */
	q->rseq.epsn = psn_add(psn, (int32_t)npkts);
	q->rseq.msn = psn_add(q->rseq.msn, 1);
	q->direct_in++;
	*npkts_out = npkts;
	ret = 1;
out:
	udp_direct_unlock(d);
	return ret;
refused:
	if (!atomic_exchange(&d->refused, 1))
		GDAK_WARN(NULL, 0,
			  "direct path to pid %d off: process_vm_%sv refused (%s; "
			  "/proc/sys/kernel/yama/ptrace_scope): its requests go over UDP",
			  (int)s->h.pid, read ? "read" : "write", strerror(EPERM));
	udp_direct_unlock(d);
	return -EPERM;
}

/* The owner, not under the lock: a published QP stopped taking requests
 * (its state went to ERR, stored already): a sender that read the old state
 * is done when this returns. */
void udp_direct_qp_barrier(struct udp_dseg *d, struct udp_direct_qp *q)
{
	if (!udp_direct_lock(d)) {
		q->ok = 0;
		udp_direct_unlock(d);
	}
}
