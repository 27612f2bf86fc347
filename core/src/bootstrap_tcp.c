/* SPDX-License-Identifier: MIT */
/*
 * bootstrap_tcp.c - the TCP out-of-band exchange (<gdak/bootstrap.h>).
 *
 * Each message is a 16-byte header ("GDBS", version, kind, count, length,
 * big-endian) and a body; both sides send before they receive, so the
 * small exchanges never deadlock.  All waits go through poll() with the
 * timeout, and a peer that closes, stalls or sends another protocol's bytes
 * ends the call with a clear error instead of a hang.
 *
 * Before any of that the client identifies itself, and the server sends
 * nothing - no addresses, no keys - to a connection that has not:
 *
 *   client -> HELLO  "GDBH" version flags nonce_c[16] mac_c[32]
 *   server -> ACCEPT "GDBA" version flags nonce_s[16] mac_s[32]
 *          or REFUSE "GDBR" length text, and closes
 *   client -> PROOF  "GDBP" proof[32]                (with a secret only)
 *
 * With GDAK_BOOTSTRAP_SECRET set (it must be on both sides or on neither)
 * mac_c = HMAC-SHA256(secret, "gdak-bs-c" nonce_c) shows the client knows
 * it, mac_s = HMAC(secret, "gdak-bs-s" nonce_c nonce_s) shows the server
 * does, and proof = HMAC(secret, "gdak-bs-p" nonce_s) answers the server's
 * fresh nonce, so a recorded HELLO replayed by somebody else gets nowhere.
 * The secret never travels.  Without it the HELLO only proves that the
 * other side speaks this protocol (version).  The server refuses a
 * stranger (wrong magic, version, secret) with a one-line reason, logs it
 * and goes on waiting for its client until the accept timeout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <gdak/bootstrap.h>

#include <gdak/env.h>

#include "gdak_log.h"

#define BS_VERSION 2
enum { K_QP_INFO = 1, K_BLOB = 2, K_BARRIER = 3 };
enum {
	HELLO_LEN = 4 + 4 + 4 + 16 + 32,
	PROOF_LEN = 4 + 32,
	F_SECRET = 1
};
/* a connection that says nothing is dropped after this long, so that a
 * silent stranger cannot keep the real client out */
#define HELLO_WAIT_MS 5000

struct gdak_bootstrap {
	int lfd;	/* listening socket (server), -1 otherwise */
	int fd;		/* the connection */
	uint16_t port;
	int timeout_ms;
};

/* ---- SHA-256 (FIPS 180-4) and HMAC (RFC 2104), for the handshake ---------- */

struct sha256 {
	uint32_t h[8];
	uint8_t buf[64];
	uint64_t len;
};

static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2
};

static uint32_t ror(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

static void sha_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a[8];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(a, s->h, sizeof(a));
	for (int i = 0; i < 64; i++) {
		uint32_t S1 = ror(a[4], 6) ^ ror(a[4], 11) ^ ror(a[4], 25);
		uint32_t ch = (a[4] & a[5]) ^ (~a[4] & a[6]);
		uint32_t t1 = a[7] + S1 + ch + sha_k[i] + w[i];
		uint32_t S0 = ror(a[0], 2) ^ ror(a[0], 13) ^ ror(a[0], 22);
		uint32_t maj = (a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]);

		memmove(a + 1, a, 7 * sizeof(a[0]));
		a[4] += t1;
		a[0] = t1 + S0 + maj;
	}
	for (int i = 0; i < 8; i++)
		s->h[i] += a[i];
}

static void sha_init(struct sha256 *s)
{
	static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(s->h, h0, sizeof(h0));
	s->len = 0;
}

static void sha_add(struct sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;

	while (n) {
		size_t at = s->len % 64, k = 64 - at < n ? 64 - at : n;

		memcpy(s->buf + at, p, k);
		s->len += k;
		p += k;
		n -= k;
		if (s->len % 64 == 0)
			sha_block(s, s->buf);
	}
}

static void sha_end(struct sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	uint8_t pad = 0x80, z = 0, l[8];

	sha_add(s, &pad, 1);
	while (s->len % 64 != 56)
		sha_add(s, &z, 1);
	for (int i = 0; i < 8; i++)
		l[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha_add(s, l, 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

/* HMAC-SHA256(key, label || a || b) */
static void hmac(const char *key, const char *label, const uint8_t *a, size_t na, const uint8_t *b,
		 size_t nb, uint8_t out[32])
{
	uint8_t k[64] = { 0 }, pad[64], inner[32];
	size_t kl = strlen(key);
	struct sha256 s;

	if (kl > 64) {
		sha_init(&s);
		sha_add(&s, key, kl);
		sha_end(&s, k);
	} else {
		memcpy(k, key, kl);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sha_init(&s);
	sha_add(&s, pad, 64);
	sha_add(&s, label, strlen(label));
	sha_add(&s, a, na);
	sha_add(&s, b, nb);
	sha_end(&s, inner);
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sha_init(&s);
	sha_add(&s, pad, 64);
	sha_add(&s, inner, 32);
	sha_end(&s, out);
}

/* Compare without an early exit (the time taken says nothing of where a
 * forged MAC first differs). */
static int mac_eq(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;

	for (int i = 0; i < 32; i++)
		d |= a[i] ^ b[i];
	return !d;
}

/* The implementation checked against FIPS 180-4's "abc" example once. */
static int sha_selftest(void)
{
	static const uint8_t want[32] = { 0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
					  0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
					  0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
					  0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad };
	struct sha256 s;
	uint8_t d[32];

	sha_init(&s);
	sha_add(&s, "abc", 3);
	sha_end(&s, d);
	return memcmp(d, want, 32) ? -EPROTO : 0;
}

static const char *secret(void)
{
	return gdak_env_raw("GDAK_BOOTSTRAP_SECRET");
}

static int nonce(uint8_t n[16])
{
	size_t got = 0;

	while (got < 16) {
		ssize_t r = getrandom(n + got, 16 - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			GDAK_ERR("bootstrap", 0, "getrandom: %s", strerror(errno));
			return -EIO;
		}
		got += (size_t)r;
	}
	return 0;
}

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

/* The opening of listen and connect: host:port resolved into *sa (passive:
 * the address to bind) and a fresh endpoint in *bs; 0 or -errno, *bs NULL
 * on failure. */
static int bs_start(const char *host, uint16_t port, int passive, struct sockaddr_in *sa,
		    struct gdak_bootstrap **bs)
{
	int r;

	*bs = NULL;
	r = resolve(host, port, passive, sa);
	if (r)
		return r;
	*bs = bs_new();
	return *bs ? 0 : -ENOMEM;
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
	r = bs_start(host, port, 1, &sa, &bs);
	if (r)
		return r;
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

/* Move len bytes in direction `out` before the deadline. */
static int io_all(struct gdak_bootstrap *bs, void *buf, size_t len, int out, uint64_t end)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = bs->fd, .events = out ? POLLOUT : POLLIN };
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
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Tell a stranger why, once, and hang up (best effort: it may not read). */
static void refuse(struct gdak_bootstrap *bs, const char *who, const char *why)
{
	uint8_t m[8 + 200];
	size_t n = strlen(why) < 200 ? strlen(why) : 200;

	GDAK_WARN("bootstrap", 0, "refused the connection from %s: %s", who, why);
	memcpy(m, "GDBR", 4);
	put32(m + 4, (uint32_t)n);
	memcpy(m + 8, why, n);
	(void)io_all(bs, m, 8 + n, 1, now_ms() + 1000);
}

/* The server's half of the handshake on bs->fd (file comment).  0, or
 * -EACCES/-EPROTO (refused), -ETIMEDOUT/-ECONNRESET (it said nothing). */
static int server_hello(struct gdak_bootstrap *bs, const char *who, uint64_t end)
{
	const char *sec = secret();
	uint8_t h[HELLO_LEN], a[HELLO_LEN], p[PROOF_LEN], mac[32];
	char why[120];
	uint32_t ver, flags;
	int r;

	r = io_all(bs, h, 4, 0, end);
	if (r)
		goto quiet;
	if (memcmp(h, "GDBH", 4)) {
		refuse(bs, who, "not a gdak bootstrap client (no GDBH hello)");
		return -EPROTO;
	}
	r = io_all(bs, h + 4, HELLO_LEN - 4, 0, end);
	if (r)
		goto quiet;
	ver = get32(h + 4);
	flags = get32(h + 8);
	if (ver != BS_VERSION) {
		snprintf(why, sizeof(why), "bootstrap version %u; this server speaks %u", ver,
			 BS_VERSION);
		refuse(bs, who, why);
		return -EPROTO;
	}
	if (!!sec != !!(flags & F_SECRET)) {
		refuse(bs, who,
		       sec ? "this server needs GDAK_BOOTSTRAP_SECRET; the client has none"
			   : "the client has GDAK_BOOTSTRAP_SECRET; this server has none");
		return -EACCES;
	}
	memcpy(a, "GDBA", 4);
	put32(a + 4, BS_VERSION);
	put32(a + 8, flags & F_SECRET);
	r = nonce(a + 12);
	if (r)
		return r;
	memset(a + 28, 0, 32);
	if (sec) {
		hmac(sec, "gdak-bs-c", h + 12, 16, NULL, 0, mac);
		if (!mac_eq(mac, h + 28)) {
			refuse(bs, who, "wrong GDAK_BOOTSTRAP_SECRET");
			return -EACCES;
		}
		hmac(sec, "gdak-bs-s", h + 12, 16, a + 12, 16, a + 28);
	}
	r = io_all(bs, a, HELLO_LEN, 1, end);
	if (r)
		goto quiet;
	if (!sec)
		return 0;
	r = io_all(bs, p, PROOF_LEN, 0, end);
	if (r)
		goto quiet;
	hmac(sec, "gdak-bs-p", a + 12, 16, NULL, 0, mac);
	if (memcmp(p, "GDBP", 4) || !mac_eq(mac, p + 4)) {
		refuse(bs, who, "wrong answer to the secret's challenge");
		return -EACCES;
	}
	return 0;
quiet:
	GDAK_WARN("bootstrap", 0, "dropped the connection from %s: %s before identifying itself",
		  who, r == -ETIMEDOUT ? "silent" : "it closed");
	return r;
}

int gdak_bootstrap_accept(struct gdak_bootstrap *bs, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int r;

	if (!bs || bs->lfd < 0)
		return -EINVAL;
	if (sha_selftest()) {
		GDAK_ERR("bootstrap", 0, "SHA-256 self-test failed: not accepting anybody");
		return -EPROTO;
	}
	for (;;) {
		struct sockaddr_in peer;
		socklen_t pl = sizeof(peer);
		struct pollfd p = { .fd = bs->lfd, .events = POLLIN };
		uint64_t now = now_ms(), hend;
		char who[INET_ADDRSTRLEN + 8], ip[INET_ADDRSTRLEN];

		r = now < end ? poll(&p, 1, (int)(end - now)) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			GDAK_ERR("bootstrap", 0, "no client connected to port %u within %d ms",
				 bs->port, timeout_ms);
			return -ETIMEDOUT;
		}
		if (r < 0)
			return -errno;
		bs->fd = accept4(bs->lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
		if (bs->fd < 0) {
			r = -errno;
			GDAK_ERR("bootstrap", 0, "accept: %s", strerror(errno));
			return r;
		}
		tune(bs->fd);
		inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip));
		snprintf(who, sizeof(who), "%s:%u", ip, ntohs(peer.sin_port));
		now = now_ms();
		hend = now + HELLO_WAIT_MS < end ? now + HELLO_WAIT_MS : end;
		r = server_hello(bs, who, hend > now ? hend : now + 1);
		if (!r)
			return 0;
		close(bs->fd);
		bs->fd = -1;
		if (r != -EACCES && r != -EPROTO && r != -ETIMEDOUT && r != -ECONNRESET)
			return r;
		/* a stranger: wait on for the client */
	}
}

/* The client's half of the handshake on bs->fd. */
static int client_hello(struct gdak_bootstrap *bs, const char *host, uint16_t port, uint64_t end)
{
	const char *sec = secret();
	uint8_t h[HELLO_LEN], a[HELLO_LEN], p[PROOF_LEN], mac[32];
	int r;

	memcpy(h, "GDBH", 4);
	put32(h + 4, BS_VERSION);
	put32(h + 8, sec ? F_SECRET : 0);
	r = nonce(h + 12);
	if (r)
		return r;
	memset(h + 28, 0, 32);
	if (sec)
		hmac(sec, "gdak-bs-c", h + 12, 16, NULL, 0, h + 28);
	r = io_all(bs, h, HELLO_LEN, 1, end);
	if (!r)
		r = io_all(bs, a, 8, 0, end);
	if (r)
		goto fail;
	if (!memcmp(a, "GDBR", 4)) {
		char why[201] = "";
		uint32_t n = get32(a + 4) < 200 ? get32(a + 4) : 200;

		if (!io_all(bs, why, n, 0, end))
			why[n] = 0;
		GDAK_ERR("bootstrap", 0, "the server at %s:%u refused us: %s", host, port, why);
		return -EACCES;
	}
	if (memcmp(a, "GDBA", 4) || get32(a + 4) != BS_VERSION) {
		GDAK_ERR("bootstrap", 0,
			 "%s:%u is not a gdak bootstrap v%u server (got %02x %02x %02x "
			 "%02x)",
			 host, port, BS_VERSION, a[0], a[1], a[2], a[3]);
		return -EPROTO;
	}
	r = io_all(bs, a + 8, HELLO_LEN - 8, 0, end);
	if (r)
		goto fail;
	if (!sec)
		return 0;
	hmac(sec, "gdak-bs-s", h + 12, 16, a + 12, 16, mac);
	if (!mac_eq(mac, a + 28)) {
		GDAK_ERR("bootstrap", 0, "the server at %s:%u does not know GDAK_BOOTSTRAP_SECRET",
			 host, port);
		return -EACCES;
	}
	memcpy(p, "GDBP", 4);
	hmac(sec, "gdak-bs-p", a + 12, 16, NULL, 0, p + 4);
	r = io_all(bs, p, PROOF_LEN, 1, end);
	if (!r)
		return 0;
fail:
	GDAK_ERR("bootstrap", 0, "handshake with %s:%u failed: %s", host, port,
		 r == -ETIMEDOUT    ? "timed out"
		 : r == -ECONNRESET ? "the server closed the connection"
				    : strerror(-r));
	return r;
}

int gdak_bootstrap_connect(const char *host, uint16_t port, int timeout_ms,
			   struct gdak_bootstrap **out)
{
	uint64_t start = now_ms(), end = start + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	uint64_t told = 0;
	struct sockaddr_in sa;
	struct gdak_bootstrap *bs;
	int r, last = 0;

	if (!out || !host)
		return -EINVAL;
	*out = NULL;
	r = bs_start(host, port, 0, &sa, &bs);
	if (r)
		return r;
	for (;;) {
		bs->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (bs->fd < 0) {
			last = errno;
			break;
		}
		if (!connect(bs->fd, (struct sockaddr *)&sa, sizeof(sa))) {
			uint64_t now = now_ms();
			/* the server may accept late (it sets up first): its
			 * answer gets the exchange timeout, at least */
			uint64_t hend = now + (uint64_t)bs->timeout_ms > end
						? now + (uint64_t)bs->timeout_ms
						: end;

			tune(bs->fd);
			if (told)
				GDAK_WARN("bootstrap", 0, "the server at %s:%u is there", host,
					  port);
			r = client_hello(bs, host, port, hend);
			if (r) {
				gdak_bootstrap_close(bs);
				return r;
			}
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
		/* say so at once, and every few seconds: a client that waits
		 * silently looks hung */
		if (!told || now_ms() - told >= 5000) {
			GDAK_WARN("bootstrap", 0, "%s for the server at %s:%u (%s; %llu of %d s)",
				  told ? "still waiting" : "waiting", host, port, strerror(last),
				  (unsigned long long)((now_ms() - start) / 1000),
				  timeout_ms / 1000);
			told = now_ms();
		}
		usleep(20000);
	}
	GDAK_ERR("bootstrap", 0, "cannot connect to %s:%u within %d ms: %s", host, port, timeout_ms,
		 strerror(last));
	gdak_bootstrap_close(bs);
	return last == ECONNREFUSED || last == ETIMEDOUT ? -ETIMEDOUT : -last;
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
	if (!memcmp(ph, "GDBR", 4)) {
		GDAK_ERR("bootstrap", 0, "the peer refused us: %.8s...", (const char *)ph + 8);
		return -EACCES;
	}
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
