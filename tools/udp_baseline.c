/* SPDX-License-Identifier: MIT */
/*
 * udp_baseline.c - raw UDP goodput between two processes on this host: the
 * ceiling the "udp" transport is measured against (issue 8: 64 KiB write
 * bandwidth >= 0.5 of this).  A forked sender pushes DGRAM-byte datagrams
 * with sendmmsg in batches of 32 to a receiver draining them with recvmmsg;
 * goodput is what the receiver got, in MiB/s, over the measured interval.
 *
 *   gdak-udp-baseline [-s DGRAM] [-t SECONDS] [-a ADDR]
 *   DGRAM defaults to 1024 + 40 (a 1024-byte-MTU RoCEv2 WRITE packet:
 *   BTH 12 + RETH/pad/ICRC room) so it compares with -d emu:udp at MTU 1024.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(void)
{
	fprintf(stderr, "usage: gdak-udp-baseline [-s DGRAM_BYTES 1..65000] [-t SECONDS 0.1..60] "
		"[-a IPV4_ADDR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned dgram = 1064;
	double secs = 2.0;
	const char *addr = "127.0.0.1";
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	int rfd, opt, buf = 8 << 20;
	pid_t pid;

	while ((opt = getopt(argc, argv, "s:t:a:h")) != -1) {
		char *end;
		switch (opt) {
		case 's': dgram = (unsigned)strtoul(optarg, &end, 10);
			  if (*end || !dgram || dgram > 65000) usage();
			  break;
		case 't': secs = strtod(optarg, &end);
			  if (*end || secs < 0.1 || secs > 60) usage();
			  break;
		case 'a': addr = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		usage();
	rfd = socket(AF_INET, SOCK_DGRAM, 0);
	if (rfd < 0 || bind(rfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(rfd, (struct sockaddr *)&sa, &sl)) {
		perror("gdak-udp-baseline: receiver socket");
		return 1;
	}
	if (setsockopt(rfd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(rfd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		int sfd = socket(AF_INET, SOCK_DGRAM, 0);
		static char data[BATCH][65000];
		struct mmsghdr m[BATCH];
		struct iovec v[BATCH];

		if (setsockopt(sfd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)))
			setsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
		memset(m, 0, sizeof(m));
		for (int i = 0; i < BATCH; i++) {
			v[i] = (struct iovec){.iov_base = data[i], .iov_len = dgram};
			m[i].msg_hdr = (struct msghdr){.msg_name = &sa, .msg_namelen = sizeof(sa),
						       .msg_iov = &v[i], .msg_iovlen = 1};
		}
		for (;;) /* until the parent ends us */
			if (sendmmsg(sfd, m, BATCH, 0) < 0 && errno != ENOBUFS && errno != EAGAIN)
				_exit(1);
	}
	{
		static char data[BATCH][65536];
		struct mmsghdr m[BATCH];
		struct iovec v[BATCH];
		unsigned long long bytes = 0, pkts = 0;
		double t0 = 0, t;

		memset(m, 0, sizeof(m));
		for (int i = 0; i < BATCH; i++) {
			v[i] = (struct iovec){.iov_base = data[i], .iov_len = sizeof(data[i])};
			m[i].msg_hdr = (struct msghdr){.msg_iov = &v[i], .msg_iovlen = 1};
		}
		for (;;) {
			int n = recvmmsg(rfd, m, BATCH, 0, NULL);
			if (n < 0)
				break;
			t = now_s();
			if (!t0) { /* start measuring at the first batch: fork is not counted */
				t0 = t;
				continue;
			}
			for (int i = 0; i < n; i++)
				bytes += m[i].msg_len;
			pkts += (unsigned)n;
			if (t - t0 >= secs) {
				printf("udp baseline: %u-byte datagrams, %.2f s: %.1f MiB/s goodput, "
				       "%.3f Mpps\n", dgram, t - t0, (double)bytes / (t - t0) / 1048576.0,
				       (double)pkts / (t - t0) / 1e6);
				break;
			}
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}
