/* SPDX-License-Identifier: MIT */
/*
 * perf_net.c - gdak.tools.perf_net: gdak-perf's server/client mode over
 * emu:udp between two processes on this host: the client's numbers come
 * with the server's verdict on its memory; a damaged byte is caught across
 * the processes; a server and a client that disagree on the test both stop
 * with a message.  Small iteration counts, adaptive polling: correctness,
 * not timing.
 *
 * argv[1]: the gdak-perf binary.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdak_test.h"

static const char *perf;

struct pair {
	int server_rc, client_rc;
	char server[8192], client[16384];
};

static void slurp(FILE *p, char *buf, size_t cap)
{
	size_t n = strlen(buf), k;

	while (n + 1 < cap && (k = fread(buf + n, 1, cap - 1 - n, p)) > 0)
		n += k;
	buf[n] = '\0';
}

static int status_of(int st) { return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1; }

/* Start a server on a free port, run the client against it. */
static void run_pair(struct pair *r, const char *server_test, const char *client_test,
		     const char *both, const char *client_args, const char *client_env)
{
	char cmd[1024], line[512];
	unsigned port = 0;
	FILE *srv, *cli;
	const char *p;

	memset(r, 0, sizeof(*r));
	/* a generous retransmission timeout: on a loaded 2-core machine a NIC
	 * thread can be off the CPU longer than the default 7 x 20 ms */
	snprintf(cmd, sizeof(cmd), "GDAK_UDP_RTO_US=200000 '%s' -d emu:udp --server -p 0 "
		 "--poll adaptive --quiet "
		 "--size-range 8:64 %s %s 2>&1", perf, both, server_test);
	srv = popen(cmd, "r");
	REQUIRE(srv != NULL);
	/* its first line names the port */
	if (fgets(line, sizeof(line), srv) && (p = strstr(line, "on port ")))
		port = (unsigned)strtoul(p + 8, NULL, 10);
	snprintf(r->server, sizeof(r->server), "%s", line);
	CHECK(port != 0);
	if (!port) {
		r->server_rc = status_of(pclose(srv));
		fprintf(stderr, "server said: %s\n", r->server);
		return;
	}
	snprintf(cmd, sizeof(cmd), "GDAK_UDP_RTO_US=200000 %s '%s' -d emu:udp -p %u "
		 "--poll adaptive --quiet --json -r 1 "
		 "--no-baseline --size-range 8:64 %s %s %s 127.0.0.1 2>&1",
		 client_env ? client_env : "", perf, port, both, client_args, client_test);
	cli = popen(cmd, "r");
	REQUIRE(cli != NULL);
	slurp(cli, r->client, sizeof(r->client));
	r->client_rc = status_of(pclose(cli));
	slurp(srv, r->server, sizeof(r->server));
	r->server_rc = status_of(pclose(srv));
}

int main(int argc, char **argv)
{
	static struct pair r;

	if (argc < 2)
		GDAK_TEST_SKIP("usage: %s GDAK_PERF_BINARY", argv[0]);
	perf = argv[1];
	if (access(perf, X_OK))
		GDAK_TEST_SKIP("%s is not executable: %s", perf, strerror(errno));

	/* writes: 4 sizes, the server hashes its memory after each */
	run_pair(&r, "write_bw", "write_bw", "", "-n 300", NULL);
	CHECK_EQ(r.client_rc, 0);
	CHECK_EQ(r.server_rc, 0);
	CHECK_EQ(gdak_test_count(r.client, "\"verified\": true"), 4);
	CHECK(strstr(r.server, "client done; 4 rounds, 4 checks, 0 wrong") != NULL);
	if (r.client_rc || r.server_rc)
		fprintf(stderr, "client:\n%s\nserver:\n%s\n", r.client, r.server);

	/* reads: the client checks the server's pattern */
	run_pair(&r, "read_bw", "read_bw", "-q 2", "-n 300", NULL);
	CHECK_EQ(r.client_rc, 0);
	CHECK_EQ(r.server_rc, 0);
	CHECK_EQ(gdak_test_count(r.client, "\"verified\": true"), 4);

	/* a damaged byte at the client makes the server's hash disagree */
	run_pair(&r, "write_bw", "write_bw", "", "-n 100", "GDAK_PERF_TEST_CORRUPT=1");
	CHECK_EQ(r.client_rc, 1);
	CHECK(strstr(r.client, "VERIFY FAILED: write_bw") != NULL);
	CHECK(strstr(r.client, "the server found wrong bytes") != NULL);
	CHECK(strstr(r.client, "\"verified\": true") == NULL);

	/* different tests: both refuse, naming the difference */
	run_pair(&r, "write_bw", "read_bw", "", "-n 100", NULL);
	CHECK_EQ(r.client_rc, 1);
	CHECK_EQ(r.server_rc, 1);
	CHECK(strstr(r.client, "server and client disagree") != NULL);
	CHECK(strstr(r.server, "server and client disagree") != NULL);
	return gdak_test_end();
}
