/* SPDX-License-Identifier: MIT */
/*
 * gv_addr.c - where a device lives on the wire.
 *
 * Each device of each process is one RoCEv2 endpoint with its own IPv4
 * address: GDAK_IBV_ADDR, or the first 127.0.0.N (N = 2 ..) whose UDP port
 * 4791 nobody holds - holding it is what claims the address, so processes
 * on one host never collide and need no coordination.  Its GID is the
 * IPv4-mapped ::ffff:a.b.c.d.
 *
 * Every packet for the device arrives on that one socket, as on a ConnectX:
 * RoCEv2's destination port is always 4791, and the BTH's destination QP
 * says which QP it is for.  The NIC model's udp transport gives each QP a
 * socket of its own (the source port its packets leave from, the flow
 * entropy ConnectX derives from the QPN) and an inbox; NIC thread 0 watches
 * 4791 (nm_ext_watch_fd: in its epoll, no thread of its own to wake) and
 * puts each packet in the inbox of the QP its BTH names, which checks its ICRC against port
 * 4791 (nm_tr_udp_set_rx_port).  So a peer needs only GID and QPN - what a
 * verbs program exchanges - and Wireshark's RoCE dissector, which claims
 * port 4791, decodes the traffic as it is.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <endian.h>

#include <gdak/env.h>
#include <gdak/nic.h>

#include "gv_loc.h"
#include "nm_ext.h"
#include "tr_udp.h"
#include "roce/roce.h"

#define RX_BATCH 32

/* ---- this process's QPs: QPN -> the inbox of its NIC-model QP --------------------- */

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t qpn;
	uint32_t addr; /* the device's, network order */
	uint16_t port; /* the QP's own UDP port, where its inbox is registered */
	struct udp_inbox *ib;
} * dir;
static unsigned ndir, capdir;
/* counters (dir_lock): packets for no QP of ours, waits for a full inbox,
 * packets dropped after waiting; GDAK_LOG=info prints them as a QP goes */
static uint64_t rx_unknown, rx_full_waits, rx_dropped;

/*
 * The udp transport's directory lookup (nm_tr_udp_set_directory): a connect
 * to a device's 4791 and a QPN of this process gets that QP's inbox, so the
 * packets between two QPs of one process skip the kernel and the reader
 * thread, as the native emu:udp path's do; the packets are the same.
 */
static struct udp_inbox *dir_lookup(uint32_t addr, uint16_t port, uint32_t qpn)
{
	uint16_t own = 0;

	if (port != GV_ROCE_PORT)
		return NULL;
	pthread_mutex_lock(&dir_lock);
	for (unsigned i = 0; i < ndir; i++)
		if (dir[i].qpn == qpn && dir[i].addr == addr) {
			own = dir[i].port;
			break;
		}
	pthread_mutex_unlock(&dir_lock);
	return own ? udp_inbox_attach(addr, own) : NULL;
}

int gv_dir_add(struct gv_device *d, uint32_t qpn, uint16_t port)
{
	struct udp_inbox *ib = udp_inbox_attach(d->addr.s_addr, port);

	if (!ib)
		return -ENOMEM;
	pthread_mutex_lock(&dir_lock);
	if (ndir == capdir) {
		unsigned cap = capdir ? 2 * capdir : 64;
		void *n = realloc(dir, cap * sizeof(*dir));

		if (!n) {
			pthread_mutex_unlock(&dir_lock);
			udp_inbox_put(ib);
			return -ENOMEM;
		}
		dir = n;
		capdir = cap;
	}
	dir[ndir].qpn = qpn;
	dir[ndir].addr = d->addr.s_addr;
	dir[ndir].port = port;
	dir[ndir].ib = ib;
	ndir++;
	pthread_mutex_unlock(&dir_lock);
	return 0;
}

void gv_dir_del(uint32_t qpn)
{
	struct udp_inbox *ib = NULL;

	pthread_mutex_lock(&dir_lock);
	for (unsigned i = 0; i < ndir; i++) {
		if (dir[i].qpn == qpn) {
			ib = dir[i].ib;
			dir[i] = dir[--ndir];
			break;
		}
	}
	if (ib)
		GDAK_INFO("qp", qpn,
			  "device 4791 reader so far: %llu packets for unknown QPs, %llu "
			  "waits for a full inbox, %llu dropped",
			  (unsigned long long)rx_unknown, (unsigned long long)rx_full_waits,
			  (unsigned long long)rx_dropped);
	pthread_mutex_unlock(&dir_lock);
	if (ib)
		udp_inbox_put(ib);
}

static uint32_t bth_dqpn(const struct mmsghdr *m)
{
	const uint8_t *pkt = m->msg_hdr.msg_iov->iov_base;

	if (m->msg_len < ROCE_BTH_LEN)
		return UINT32_MAX;
	return ((uint32_t)pkt[5] << 16) | ((uint32_t)pkt[6] << 8) | pkt[7];
}

/* Hand n packets from one sender to the QP qpn (dir_lock held: the inbox
 * reference cannot go meanwhile), in one push - one lock and one wakeup of
 * its NIC thread for the run.  A full inbox of a QP served by this thread
 * is drained on the spot; another thread's is waited on briefly (the owner
 * drains it at its next pass), then the rest is dropped, which RC recovers
 * from as from any loss on a wire. */
static void deliver(uint32_t qpn, const struct sockaddr_in *from, struct iovec *v, unsigned n)
{
	unsigned i;

	for (i = 0; i < ndir && dir[i].qpn != qpn; i++)
		;
	if (i == ndir) {
		rx_unknown += n;
		return;
	}
	for (int tries = 0; n && tries < 1000; tries++) {
		int k = udp_inbox_push(dir[i].ib, from->sin_addr.s_addr, ntohs(from->sin_port), v,
				       n);

		if (k < 0)
			return; /* the QP is going away */
		v += k;
		n -= (unsigned)k;
		if (!n)
			return;
		rx_full_waits++;
		/* the QP is this thread's: it cannot drain while we wait */
		if (udp_inbox_drain_here(dir[i].ib))
			continue;
		pthread_mutex_unlock(&dir_lock);
		sched_yield();
		pthread_mutex_lock(&dir_lock);
		for (i = 0; i < ndir && dir[i].qpn != qpn; i++)
			;
		if (i == ndir)
			return;
	}
	rx_dropped += n;
}

/* What the device's packets are read into (allocated at the first open,
 * kept with the address). */
struct gv_rx {
	uint8_t *buf; /* RX_BATCH * ROCE_MAX_PKT */
	struct sockaddr_in from[RX_BATCH];
	struct iovec iov[RX_BATCH];
	struct mmsghdr m[RX_BATCH];
};

static struct gv_rx *rx_alloc(void)
{
	struct gv_rx *r = calloc(1, sizeof(*r));

	if (r)
		r->buf = malloc((size_t)RX_BATCH * ROCE_MAX_PKT);
	if (!r || !r->buf) {
		free(r);
		return NULL;
	}
	for (unsigned i = 0; i < RX_BATCH; i++)
		r->m[i].msg_hdr = (struct msghdr){ .msg_name = &r->from[i],
						   .msg_iov = &r->iov[i],
						   .msg_iovlen = 1 };
	return r;
}

/* On NIC thread 0, when 4791 is readable (nm_ext_watch_fd): what is there
 * now, a bounded number of batches (the watcher calls again while more
 * is left), each handed to its QPs' inboxes - which, for QPs of this
 * thread, activates them without a system call. */
static void rx_ready(void *arg)
{
	struct gv_device *d = arg;
	struct gv_rx *r = d->rx;

	for (int round = 0; round < 8; round++) {
		int n;

		for (unsigned i = 0; i < RX_BATCH; i++) {
			r->iov[i] = (struct iovec){ .iov_base = r->buf + (size_t)i * ROCE_MAX_PKT,
						    .iov_len = ROCE_MAX_PKT };
			r->m[i].msg_hdr.msg_namelen = sizeof(r->from[i]);
		}
		n = recvmmsg(d->claim_fd, r->m, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++)
			r->iov[i].iov_len = r->m[i].msg_len;
		pthread_mutex_lock(&dir_lock);
		/* runs of packets for one QP from one sender go in one push */
		for (int i = 0, j; i < n; i = j) {
			uint32_t q = bth_dqpn(&r->m[i]);

			for (j = i + 1; j < n && bth_dqpn(&r->m[j]) == q &&
					r->from[j].sin_addr.s_addr == r->from[i].sin_addr.s_addr &&
					r->from[j].sin_port == r->from[i].sin_port;
			     j++)
				;
			if (q != UINT32_MAX)
				deliver(q, &r->from[i], &r->iov[i], (unsigned)(j - i));
		}
		pthread_mutex_unlock(&dir_lock);
		if (n < RX_BATCH)
			return;
	}
}

/* ---- claiming the address --------------------------------------------------------- */

static int bind_port(struct in_addr a, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr = a };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), buf = 8 << 20;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	return fd;
}

/* The address given for device idx in GDAK_IBV_ADDR (comma-separated), 1
 * when there is one, 0 when not, -EINVAL when it is not an address. */
static int env_addr(int idx, struct in_addr *a)
{
	const char *env = gdak_env_raw("GDAK_IBV_ADDR"), *p;
	char buf[64];
	size_t n;

	if (!env || !*env)
		return 0;
	p = env;
	for (int i = 0; i < idx; i++) {
		p = strchr(p, ',');
		if (!p)
			return 0;
		p++;
	}
	n = strcspn(p, ",");
	if (!n || n >= sizeof(buf))
		return 0;
	memcpy(buf, p, n);
	buf[n] = 0;
	if (inet_pton(AF_INET, buf, a) != 1 || a->s_addr == htonl(INADDR_ANY)) {
		GDAK_ERR(NULL, 0, "GDAK_IBV_ADDR: '%s' is not an IPv4 address of this host", buf);
		return -EINVAL;
	}
	return 1;
}

int gv_addr_claim(struct gv_device *d)
{
	char txt[INET_ADDRSTRLEN];
	struct in_addr a;
	int ret = env_addr(d->index, &a), fd;

	if (ret < 0)
		return ret;
	if (ret) {
		fd = bind_port(a, GV_ROCE_PORT);
		if (fd < 0) {
			inet_ntop(AF_INET, &a, txt, sizeof(txt));
			GDAK_ERR(NULL, 0, "%s: cannot bind %s:%d (GDAK_IBV_ADDR): %s",
				 d->ibdev.name, txt, GV_ROCE_PORT, strerror(-fd));
			return fd;
		}
	} else {
		fd = -EADDRINUSE;
		for (unsigned n = 2; n < 255 && fd < 0; n++) {
			a.s_addr = htonl(0x7f000000u | n);
			fd = bind_port(a, GV_ROCE_PORT);
			if (fd < 0 && fd != -EADDRINUSE)
				break;
		}
		if (fd < 0) {
			GDAK_ERR(NULL, 0, "%s: no free 127.0.0.N:%d to claim: %s", d->ibdev.name,
				 GV_ROCE_PORT, strerror(-fd));
			return fd;
		}
	}
	d->addr = a;
	d->claim_fd = fd;
	nm_tr_udp_set_directory(dir_lookup);
	/* the direct path (tr_udp_direct.c): what a sender of another process
	 * on this host needs to do our responder's work */
	{
		int v = 1;

		if (gdak_env_bool("GDAK_IBV_DIRECT", &v) < 0) {
			close(fd);
			d->claim_fd = -1;
			return -EINVAL;
		}
		if (v)
			(void)udp_direct_publish(a.s_addr, GV_ROCE_PORT);
		else
			udp_direct_forget(a.s_addr, GV_ROCE_PORT);
	}
	inet_ntop(AF_INET, &a, txt, sizeof(txt));
	GDAK_INFO(NULL, 0, "%s: RoCEv2 endpoint %s:%d (GID ::ffff:%s)", d->ibdev.name, txt,
		  GV_ROCE_PORT, txt);
	return 0;
}

int gv_dev_get(struct gv_device *d)
{
	char spec[64], txt[INET_ADDRSTRLEN];
	int ret = 0;

	pthread_mutex_lock(&d->lock);
	if (d->refs++ > 0)
		goto out;
	/* the address, once claimed, stays the process's until it exits: the
	 * device keeps its GID across close and open (ibv_devinfo opens the
	 * devices one after the other, and each must show its own) */
	if (d->claim_fd < 0) {
		ret = gv_addr_claim(d);
		if (ret)
			goto fail;
	}
	/* The retransmission timeout a verbs program asks for is the IBA
	 * timeout attribute, 14 in every program we know (4.096 us * 2^14 =
	 * 67 ms), not the udp transport's 10 ms default meant for gdak's own
	 * tests: under a loaded CPU a peer's NIC thread can be off the CPU for
	 * tens of ms, and 7 retries of 10 ms then fail a healthy connection.
	 * A GDAK_UDP_RTO_US the user set wins. */
	setenv("GDAK_UDP_RTO_US", "67109", 0);
	inet_ntop(AF_INET, &d->addr, txt, sizeof(txt));
	snprintf(spec, sizeof(spec), "emu:udp:%s", txt);
	ret = gdak_open(spec, &d->g);
	if (ret)
		goto fail;
	/* the device's packets are read by the NIC thread that runs them, when
	 * it sees 4791 readable: no reader thread of its own to wake first */
	if (!d->rx)
		d->rx = rx_alloc();
	ret = d->rx ? nm_ext_watch_fd(d->g, d->claim_fd, rx_ready, d, &d->rx_watch) : -ENOMEM;
	if (ret) {
		GDAK_ERR(NULL, 0, "%s: cannot watch %s:%d: %s", d->ibdev.name, txt, GV_ROCE_PORT,
			 gdak_strerror(ret));
		gdak_close(d->g);
		d->g = NULL;
		goto fail;
	}
	goto out;
fail:
	d->refs--;
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

void gv_dev_put(struct gv_device *d)
{
	pthread_mutex_lock(&d->lock);
	if (--d->refs == 0) {
		nm_ext_unwatch_fd(d->rx_watch);
		d->rx_watch = NULL;
		gdak_close(d->g);
		d->g = NULL;
	}
	pthread_mutex_unlock(&d->lock);
}
