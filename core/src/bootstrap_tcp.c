/* SPDX-License-Identifier: MIT */
/*
 * bootstrap_tcp.c - the TCP out-of-band exchange (<gdak/bootstrap.h>).
 *
 * Each message is a 16-byte header ("GDBS", version, kind, count, length,
 * big-endian) and a body; both sides send before they receive, so the
 * small exchanges never deadlock.  All waits go through poll() with the
 * timeout, and a peer that closes, stalls or sends another protocol's bytes
 * ends the call with a clear error instead of a hang.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <gdak/bootstrap.h>

#include "gdak_log.h"

#define BS_VERSION 1
enum { K_QP_INFO = 1, K_BLOB = 2, K_BARRIER = 3 };

struct gdak_bootstrap {
	int lfd;	/* listening socket (server), -1 otherwise */
	int fd;		/* the connection */
	uint16_t port;
	int timeout_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int resolve(const char *host, uint16_t port, int passive, struct sockaddr_in *sa)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				 .ai_flags = passive ? AI_PASSIVE : 0}, *res;
	char ps[8];
	int r;

	snprintf(ps, sizeof(ps), "%u", port);
	r = getaddrinfo(host, ps, &hints, &res);
	if (r) {
		GDAK_ERR("bootstrap", 0, "cannot resolve '%s': %s", host ? host : "*", gai_strerror(r));
		return -EHOSTUNREACH;
	}
	memcpy(sa, res->ai_addr, sizeof(*sa));
	freeaddrinfo(res);
	return 0;
}

static struct gdak_bootstrap *bs_new(void)
{
	struct gdak_bootstrap *bs = calloc(1, sizeof(*bs));
	if (bs) {
		bs->lfd = bs->fd = -1;
		bs->timeout_ms = 30000;
	}
	return bs;
}

int gdak_bootstrap_listen(const char *host, uint16_t port, struct gdak_bootstrap **out)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	struct gdak_bootstrap *bs;
	int one = 1, r;

	if (!out)
		return -EINVAL;
	*out = NULL;
	r = resolve(host, port, 1, &sa);
	if (r)
		return r;
	bs = bs_new();
	if (!bs)
		return -ENOMEM;
	bs->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (bs->lfd < 0)
		goto err;
	setsockopt(bs->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(bs->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(bs->lfd, 1) ||
	    getsockname(bs->lfd, (struct sockaddr *)&sa, &sl))
		goto err;
	bs->port = ntohs(sa.sin_port);
	*out = bs;
	return 0;
err:
	r = -errno;
	GDAK_ERR("bootstrap", 0, "cannot listen on %s:%u: %s", host ? host : "*", port, strerror(errno));
	gdak_bootstrap_close(bs);
	return r;
}

uint16_t gdak_bootstrap_port(const struct gdak_bootstrap *bs) { return bs ? bs->port : 0; }

void gdak_bootstrap_set_timeout(struct gdak_bootstrap *bs, int timeout_ms)
{
	if (bs)
		bs->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
}

static void tune(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int gdak_bootstrap_accept(struct gdak_bootstrap *bs, int timeout_ms)
{
	struct pollfd p;
	int r;

	if (!bs || bs->lfd < 0)
		return -EINVAL;
	p = (struct pollfd){.fd = bs->lfd, .events = POLLIN};
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		GDAK_ERR("bootstrap", 0, "no client connected to port %u within %d ms", bs->port,
			 timeout_ms);
		return -ETIMEDOUT;
	}
	if (r < 0)
		return -errno;
	bs->fd = accept4(bs->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (bs->fd < 0) {
		r = -errno;
		GDAK_ERR("bootstrap", 0, "accept: %s", strerror(errno));
		return r;
	}
	tune(bs->fd);
	return 0;
}

int gdak_bootstrap_connect(const char *host, uint16_t port, int timeout_ms,
			   struct gdak_bootstrap **out)
{
	uint64_t end = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	struct sockaddr_in sa;
	struct gdak_bootstrap *bs;
	int r, last = 0;

	if (!out || !host)
		return -EINVAL;
	*out = NULL;
	r = resolve(host, port, 0, &sa);
	if (r)
		return r;
	bs = bs_new();
	if (!bs)
		return -ENOMEM;
	for (;;) {
		bs->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (bs->fd < 0) {
			last = errno;
			break;
		}
		if (!connect(bs->fd, (struct sockaddr *)&sa, sizeof(sa))) {
			tune(bs->fd);
			*out = bs;
			return 0;
		}
		last = errno;
		close(bs->fd);
		bs->fd = -1;
		/* the server may not listen yet: try again until the deadline */
		if ((last != ECONNREFUSED && last != ETIMEDOUT && last != EHOSTUNREACH) ||
		    now_ms() >= end)
			break;
		usleep(20000);
	}
	GDAK_ERR("bootstrap", 0, "cannot connect to %s:%u within %d ms: %s", host, port, timeout_ms,
		 strerror(last));
	gdak_bootstrap_close(bs);
	return last == ECONNREFUSED || last == ETIMEDOUT ? -ETIMEDOUT : -last;
}

/* Move len bytes in direction `out` before the deadline. */
static int io_all(struct gdak_bootstrap *bs, void *buf, size_t len, int out, uint64_t end)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = {.fd = bs->fd, .events = out ? POLLOUT : POLLIN};
		uint64_t now = now_ms();
		ssize_t n;
		int r;

		if (now >= end)
			return -ETIMEDOUT;
		r = poll(&pf, 1, (int)(end - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = out ? send(bs->fd, p, len, MSG_NOSIGNAL) : recv(bs->fd, p, len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const char *kind_name(unsigned k)
{
	return k == K_QP_INFO ? "QP info" : k == K_BLOB ? "data" : k == K_BARRIER ? "barrier" : "?";
}

/* One message each way: header (magic, version|kind, count, length) + body. */
static int swap_msg(struct gdak_bootstrap *bs, unsigned kind, uint32_t count, const void *mine,
		    void *theirs, uint32_t len)
{
	uint64_t end = now_ms() + (uint64_t)bs->timeout_ms;
	uint8_t h[16], ph[16];
	int r;

	if (!bs || bs->fd < 0)
		return -ENOTCONN;
	memcpy(h, "GDBS", 4);
	put32(h + 4, BS_VERSION << 16 | kind);
	put32(h + 8, count);
	put32(h + 12, len);
	r = io_all(bs, h, sizeof(h), 1, end);
	if (!r && len)
		r = io_all(bs, (void *)(uintptr_t)mine, len, 1, end);
	if (!r)
		r = io_all(bs, ph, sizeof(ph), 0, end);
	if (r)
		goto fail;
	if (memcmp(ph, "GDBS", 4) || get32(ph + 4) >> 16 != BS_VERSION) {
		GDAK_ERR("bootstrap", 0, "the peer does not speak gdak bootstrap v%u (got %02x %02x %02x %02x)",
			 BS_VERSION, ph[0], ph[1], ph[2], ph[3]);
		return -EPROTO;
	}
	if ((get32(ph + 4) & 0xffff) != kind || get32(ph + 8) != count || get32(ph + 12) != len) {
		GDAK_ERR("bootstrap", 0, "out of step with the peer: we exchange %s x %u (%u bytes), "
			 "it sent %s x %u (%u bytes)", kind_name(kind), count, len,
			 kind_name(get32(ph + 4) & 0xffff), get32(ph + 8), get32(ph + 12));
		return -EPROTO;
	}
	if (len)
		r = io_all(bs, theirs, len, 0, end);
	if (!r)
		return 0;
fail:
	GDAK_ERR("bootstrap", 0, "%s exchange failed: %s", kind_name(kind),
		 r == -ETIMEDOUT ? "timed out" : r == -ECONNRESET ? "peer closed the connection"
					       : strerror(-r));
	return r;
}

int gdak_bootstrap_exchange_qp_info(struct gdak_bootstrap *bs, const struct gdak_qp_info *mine,
				    struct gdak_qp_info *theirs, unsigned n)
{
	uint8_t *a, *b;
	int r;

	if (!bs || (n && (!mine || !theirs)) || n > 65536)
		return -EINVAL;
	a = calloc(1, (size_t)n * GDAK_QP_INFO_WIRE_SIZE + 1);
	b = malloc((size_t)n * GDAK_QP_INFO_WIRE_SIZE + 1);
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		gdak_qp_info_pack(&mine[i], a + (size_t)i * GDAK_QP_INFO_WIRE_SIZE);
	r = swap_msg(bs, K_QP_INFO, n, a, b, n * GDAK_QP_INFO_WIRE_SIZE);
	for (unsigned i = 0; !r && i < n; i++)
		r = gdak_qp_info_unpack(b + (size_t)i * GDAK_QP_INFO_WIRE_SIZE, &theirs[i]);
	free(a);
	free(b);
	return r;
}

int gdak_bootstrap_exchange(struct gdak_bootstrap *bs, const void *mine, void *theirs, size_t len)
{
	if (!bs || (len && (!mine || !theirs)) || len > (64u << 20))
		return -EINVAL;
	return swap_msg(bs, K_BLOB, 1, mine, theirs, (uint32_t)len);
}

int gdak_bootstrap_barrier(struct gdak_bootstrap *bs)
{
	return bs ? swap_msg(bs, K_BARRIER, 0, NULL, NULL, 0) : -EINVAL;
}

void gdak_bootstrap_close(struct gdak_bootstrap *bs)
{
	if (!bs)
		return;
	if (bs->fd >= 0)
		close(bs->fd);
	if (bs->lfd >= 0)
		close(bs->lfd);
	free(bs);
}
