/* SPDX-License-Identifier: MIT */
/*
 * net_hostile_bs.c - gdak.net.hostile_bootstrap: the TCP bootstrap sends
 * nothing before its client identified itself.
 *  - strangers (HTTP bytes, a bootstrap hello of another version, a
 *    connection closed at once) get one refusal line ("GDBR" + text) and
 *    nothing else, and the server goes on to serve its real client;
 *  - GDAK_BOOTSTRAP_SECRET on the server: a client without it, or with
 *    another, is refused (-EACCES, the reason logged); with it the
 *    exchange works; a secret on the client only is refused too;
 *  - a client whose server is not there yet says at once that it waits,
 *    for whom (HOST:PORT), and gives up with -ETIMEDOUT at its deadline.
 * The server runs in a forked child (the secret is per process); the
 * child's exit status says whether its accept and exchange succeeded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <gdak/bootstrap.h>

#include "gdak_case.h"
#include "gdak_test.h"

static const char srv_blob[16] = "server-secrets!", cli_blob[16] = "client-payload.";

/* The secret this process's bootstrap uses: secret, or none. */
static void use_secret(const char *secret)
{
	if (secret)
		setenv("GDAK_BOOTSTRAP_SECRET", secret, 1);
	else
		unsetenv("GDAK_BOOTSTRAP_SECRET");
}

/* Fork a server on a fresh port (secret: NULL = none). */
static pid_t server(const char *secret, uint16_t *port)
{
	struct gdak_bootstrap *bs;
	pid_t pid;

	REQUIRE_EQ(gdak_bootstrap_listen("127.0.0.1", 0, &bs), 0);
	*port = gdak_bootstrap_port(bs);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		char got[16];
		int r;

		use_secret(secret);
		r = gdak_bootstrap_accept(bs, 60000);
		if (!r)
			r = gdak_bootstrap_exchange(bs, srv_blob, got, sizeof(got));
		if (!r && memcmp(got, cli_blob, sizeof(got)))
			r = -EPROTO;
		gdak_bootstrap_close(bs);
		_exit(r ? 1 : 0);
	}
	gdak_bootstrap_close(bs);
	return pid;
}

static int child_status(pid_t pid)
{
	int st;

	REQUIRE(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int tcp(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	REQUIRE(fd >= 0);
	REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

/* Everything the server sends until it closes (bounded). */
static size_t read_all(int fd, uint8_t *buf, size_t cap)
{
	size_t n = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t k;

		REQUIRE(poll(&p, 1, 30000) == 1);
		k = read(fd, buf + n, cap - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		REQUIRE(n < cap);
	}
	return n;
}

/* A stranger sends bytes and gets exactly one refusal naming why. */
static void stranger(uint16_t port, const void *bytes, size_t len, const char *why)
{
	uint8_t buf[4096];
	int fd = tcp(port);
	size_t n;
	uint32_t tl;

	if (len)
		REQUIRE(write(fd, bytes, len) == (ssize_t)len);
	n = read_all(fd, buf, sizeof(buf));
	close(fd);
	REQUIRE(n >= 8);
	CHECK(!memcmp(buf, "GDBR", 4));
	tl = (uint32_t)buf[4] << 24 | (uint32_t)buf[5] << 16 | (uint32_t)buf[6] << 8 | buf[7];
	CHECK_EQ(n, 8 + tl);
	buf[n < sizeof(buf) ? n : sizeof(buf) - 1] = 0;
	CHECK(strstr((char *)buf + 8, why) != NULL);
	CHECK(memmem(buf, n, "GDBS", 4) == NULL);
	CHECK(memmem(buf, n, "GDBA", 4) == NULL);
	printf("stranger refused: %s\n", (char *)buf + 8);
}

/* A stranger that stops halfway through a hello gets nothing at all. */
static void half_hello(uint16_t port)
{
	uint8_t buf[256];
	int fd = tcp(port);

	REQUIRE(write(fd, "GDBH", 4) == 4);
	shutdown(fd, SHUT_WR);
	CHECK_EQ(read_all(fd, buf, sizeof(buf)), 0);
	close(fd);
}

static int client(uint16_t port, const char *secret)
{
	struct gdak_bootstrap *bs;
	char got[16];
	int r;

	use_secret(secret);
	r = gdak_bootstrap_connect("127.0.0.1", port, 10000, &bs);
	if (r)
		return r;
	r = gdak_bootstrap_exchange(bs, cli_blob, got, sizeof(got));
	if (!r)
		CHECK_MEM(got, srv_blob, sizeof(got));
	gdak_bootstrap_close(bs);
	return r;
}

static void no_secret(void)
{
	static const char http[] = "GET / HTTP/1.0\r\n\r\n";
	uint8_t old[60] = "GDBH";
	uint16_t port;
	pid_t pid = server(NULL, &port);
	int fd;

	stranger(port, http, sizeof(http) - 1, "not a gdak bootstrap client");
	old[7] = 1; /* version 1 */
	stranger(port, old, sizeof(old), "version 1");
	fd = tcp(port); /* connects and leaves */
	close(fd);
	CHECK_EQ(client(port, "surprise"), -EACCES); /* a secret the server lacks */
	CHECK_EQ(client(port, NULL), 0);
	CHECK_EQ(child_status(pid), 0);
}

static void with_secret(void)
{
	uint16_t port;
	pid_t pid = server("correct horse", &port);

	CHECK_EQ(client(port, NULL), -EACCES);
	CHECK_EQ(client(port, "wrong horse"), -EACCES);
	half_hello(port);
	CHECK_EQ(client(port, "correct horse"), 0);
	CHECK_EQ(child_status(pid), 0);
	unsetenv("GDAK_BOOTSTRAP_SECRET");
}

/* The client waits for a server that is not there: it says so at once. */
static void waiting(void)
{
	struct gdak_bootstrap *bs;
	char buf[4096], want[64];
	uint16_t port;
	int p[2];
	pid_t pid;
	size_t n = 0;
	ssize_t k;

	/* a port nobody listens on: bind one, note it, close it */
	REQUIRE_EQ(gdak_bootstrap_listen("127.0.0.1", 0, &bs), 0);
	port = gdak_bootstrap_port(bs);
	gdak_bootstrap_close(bs);
	REQUIRE(pipe(p) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		dup2(p[1], 2);
		close(p[0]);
		_exit(gdak_bootstrap_connect("127.0.0.1", port, 300, &bs) == -ETIMEDOUT ? 0 : 1);
	}
	close(p[1]);
	while ((k = read(p[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = 0;
	close(p[0]);
	CHECK_EQ(child_status(pid), 0);
	snprintf(want, sizeof(want), "waiting for the server at 127.0.0.1:%u", port);
	CHECK(strstr(buf, want) != NULL);
	if (!strstr(buf, want))
		fprintf(stderr, "client said:\n%s\n", buf);
}

static const struct gdak_case cases[] = { GDAK_CASE(no_secret), GDAK_CASE(with_secret),
					  GDAK_CASE(waiting) };

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	unsetenv("GDAK_BOOTSTRAP_SECRET");
	return GDAK_TEST_CASES(argc, argv, cases);
}
