/* SPDX-License-Identifier: MIT */
/*
 * gv_addr.c - where a device lives on the wire, and how a peer finds its QPs.
 *
 * Each device of each process is one RoCEv2 endpoint with its own IPv4
 * address: GDAK_IBV_ADDR, or the first 127.0.0.N (N = 2 ..) whose UDP port
 * 4791 nobody holds - holding it is what claims the address, so processes
 * on one host never collide and need no coordination.  Its GID is the
 * IPv4-mapped ::ffff:a.b.c.d.
 *
 * The NIC model's udp transport gives every QP its own socket (its own
 * source port, the flow entropy ConnectX derives from the QPN), but a verbs
 * program tells its peer only GID, QPN and PSN.  So a second socket, on
 * port 4790 of the same address, answers "which UDP port serves QPN q?"
 * (an 8-byte query, a 12-byte answer; a thread blocked in recvfrom, no
 * polling), and modify_qp to RTR asks the peer's address before it
 * connects the NIC-model QP.  Not on 4791: a capture of the RoCE port then
 * holds RoCE packets only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <endian.h>

#include <gdak/nic.h>

#include "gv_loc.h"

#define DIR_Q 0x47444b51u /* "GDKQ" */
#define DIR_A 0x47444b41u /* "GDKA" */

/* ---- this process's QPs ------------------------------------------------------ */

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uint32_t qpn; uint16_t port; } *dir;
static unsigned ndir, capdir;

void gv_dir_add(uint32_t qpn, uint16_t port)
{
	pthread_mutex_lock(&dir_lock);
	if (ndir == capdir) {
		unsigned cap = capdir ? 2 * capdir : 64;
		void *n = realloc(dir, cap * sizeof(*dir));

		if (!n) {
			pthread_mutex_unlock(&dir_lock);
			GDAK_ERR("qp", qpn, "no memory for the QPN directory");
			return;
		}
		dir = n;
		capdir = cap;
	}
	dir[ndir].qpn = qpn;
	dir[ndir].port = port;
	ndir++;
	pthread_mutex_unlock(&dir_lock);
}

void gv_dir_del(uint32_t qpn)
{
	pthread_mutex_lock(&dir_lock);
	for (unsigned i = 0; i < ndir; i++) {
		if (dir[i].qpn == qpn) {
			dir[i] = dir[--ndir];
			break;
		}
	}
	pthread_mutex_unlock(&dir_lock);
}

static int dir_find(uint32_t qpn, uint16_t *port)
{
	int found = 0;

	pthread_mutex_lock(&dir_lock);
	for (unsigned i = 0; i < ndir; i++) {
		if (dir[i].qpn == qpn) {
			*port = dir[i].port;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&dir_lock);
	return found;
}

static void *dir_main(void *arg)
{
	struct gv_device *d = arg;

	for (;;) {
		uint32_t q[2], a[3];
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		uint16_t port = 0;
		ssize_t n = recvfrom(d->dir_fd, q, sizeof(q), 0, (struct sockaddr *)&from, &fl);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;	/* shut down */
		if (n != sizeof(q) || be32toh(q[0]) != DIR_Q)
			continue;
		a[0] = htobe32(DIR_A);
		a[1] = q[1];
		a[2] = dir_find(be32toh(q[1]), &port) ? htobe32((uint32_t)port << 16) : htobe32(1);
		(void)sendto(d->dir_fd, a, sizeof(a), MSG_DONTWAIT, (struct sockaddr *)&from, fl);
	}
	return NULL;
}

/* ---- claiming the address --------------------------------------------------------- */

static int bind_port(struct in_addr a, uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = a};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* The address given for device idx in GDAK_IBV_ADDR (comma-separated), 1
 * when there is one, 0 when not, -EINVAL when it is not an address. */
static int env_addr(int idx, struct in_addr *a)
{
	const char *env = getenv("GDAK_IBV_ADDR"), *p;
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
	struct in_addr a;
	int ret = env_addr(d->index, &a), fd;

	if (ret < 0)
		return ret;
	if (ret) {
		fd = bind_port(a, GV_ROCE_PORT);
		if (fd < 0) {
			GDAK_ERR(NULL, 0, "%s: cannot bind %s:%d (GDAK_IBV_ADDR): %s", d->ibdev.name,
				 inet_ntoa(a), GV_ROCE_PORT, strerror(-fd));
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
	d->dir_fd = bind_port(a, GV_DIR_PORT);
	if (d->dir_fd < 0) {
		ret = d->dir_fd;
		GDAK_ERR(NULL, 0, "%s: cannot bind %s:%d for the QPN directory: %s", d->ibdev.name,
			 inet_ntoa(a), GV_DIR_PORT, strerror(-ret));
		goto err;
	}
	ret = -pthread_create(&d->dir_thr, NULL, dir_main, d);
	if (ret)
		goto err;
	d->dir_running = true;
	{
		char txt[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &a, txt, sizeof(txt));
		GDAK_INFO(NULL, 0, "%s: RoCEv2 endpoint %s (GID ::ffff:%s)", d->ibdev.name, txt, txt);
	}
	return 0;
err:
	if (d->dir_fd >= 0)
		close(d->dir_fd);
	close(d->claim_fd);
	d->dir_fd = d->claim_fd = -1;
	return ret;
}

int gv_addr_resolve(struct gv_device *d, uint32_t addr, uint32_t qpn, uint16_t *port)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(GV_DIR_PORT)};
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_addr = d->addr};
	uint32_t q[2] = {htobe32(DIR_Q), htobe32(qpn)};
	int fd, ret = -EHOSTUNREACH, wait_ms = 20;

	if (addr == d->addr.s_addr)
		return dir_find(qpn, port) ? 0 : -ENOENT;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&me, sizeof(me))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	to.sin_addr.s_addr = addr;
	/* UDP may lose a query: ask again with growing waits, about 10 s in all */
	for (int tries = 0; tries < 14; tries++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint32_t a[3];

		if (sendto(fd, q, sizeof(q), 0, (struct sockaddr *)&to, sizeof(to)) < 0) {
			ret = -errno;
			if (errno != ECONNREFUSED)
				break;
		}
		while (poll(&p, 1, wait_ms) > 0) {
			ssize_t n = recv(fd, a, sizeof(a), MSG_DONTWAIT);

			if (n != sizeof(a) || be32toh(a[0]) != DIR_A || be32toh(a[1]) != qpn)
				continue;
			if (be32toh(a[2]) & 0xffff) {
				ret = -ENOENT;
			} else {
				*port = (uint16_t)(be32toh(a[2]) >> 16);
				ret = 0;
			}
			goto out;
		}
		if (wait_ms < 2000)
			wait_ms *= 2;
	}
out:
	close(fd);
	return ret;
}

int gv_dev_get(struct gv_device *d)
{
	char spec[64];
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
	snprintf(spec, sizeof(spec), "emu:udp:%s", inet_ntoa(d->addr));
	ret = gdak_open(spec, &d->g);
	if (ret)
		goto fail;
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
		gdak_close(d->g);
		d->g = NULL;
	}
	pthread_mutex_unlock(&d->lock);
}
