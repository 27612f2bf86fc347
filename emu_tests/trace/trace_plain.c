/* SPDX-License-Identifier: MIT */
/*
 * trace_plain.c - gdak.trace.plain: gdak-trace on files gdak did not write
 * and its --relative clock.
 *
 * A capture made by tshark/dumpcap (its section header names that tool) has
 * packets and no gdak records, so no closing STATS record either: read to
 * its end, exit 0.  The same bytes with gdak's own section header are a gdak
 * trace cut short: exit 1, as before.  --relative prints the first item at
 * 0.000000000 (JSON: rel_ns 0) on a trace the NIC model wrote.
 *
 *   trace_plain GDAK_TRACE_BINARY
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "gdak_test.h"

static const char *tool;

static size_t put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16),
	p[3] = (uint8_t)(v >> 24);
	return 4;
}

/* SHB (userappl appl), IDB (Ethernet, ns), one EPB: Ethernet/IPv4/UDP to 4791. */
static size_t make_capture(uint8_t *b, const char *appl)
{
	size_t n = 0, start, alen = strlen(appl);
	uint8_t frame[60] = { 0 };

	/* SHB */
	start = n;
	n += put32(b + n, 0x0A0D0D0A);
	n += 4;
	n += put32(b + n, 0x1A2B3C4D);
	b[n++] = 1, b[n++] = 0, b[n++] = 0, b[n++] = 0;		    /* version 1.0 */
	memset(b + n, 0xff, 8), n += 8;				    /* section length unknown */
	b[n++] = 4, b[n++] = 0, b[n++] = (uint8_t)alen, b[n++] = 0; /* shb_userappl */
	memcpy(b + n, appl, alen), n += (alen + 3) & ~3u;
	n += put32(b + n, 0); /* opt_endofopt */
	n += put32(b + n, (uint32_t)(n - start + 4));
	put32(b + start + 4, (uint32_t)(n - start));
	/* IDB: LINKTYPE_ETHERNET, if_tsresol 9 */
	start = n;
	n += put32(b + n, 1);
	n += 4;
	b[n++] = 1, b[n++] = 0, b[n++] = 0, b[n++] = 0;
	n += put32(b + n, 0); /* snaplen */
	b[n++] = 9, b[n++] = 0, b[n++] = 1, b[n++] = 0, b[n++] = 9, b[n++] = 0, b[n++] = 0,
	b[n++] = 0;
	n += put32(b + n, 0);
	n += put32(b + n, (uint32_t)(n - start + 4));
	put32(b + start + 4, (uint32_t)(n - start));
	/* EPB: an IPv4/UDP frame to port 4791 with a zeroed payload */
	frame[12] = 0x08; /* ethertype IPv4 */
	frame[14] = 0x45, frame[17] = 46, frame[22] = 64, frame[23] = 17;
	frame[26] = 127, frame[29] = 1, frame[30] = 127, frame[33] = 2;
	frame[34] = 0xc0, frame[35] = 0x01, frame[36] = 0x12, frame[37] = 0xb7; /* -> 4791 */
	frame[39] = 26;
	start = n;
	n += put32(b + n, 6);
	n += 4;
	n += put32(b + n, 0); /* interface 0 */
	n += put32(b + n, 0);
	n += put32(b + n, 1000); /* timestamp */
	n += put32(b + n, sizeof(frame));
	n += put32(b + n, sizeof(frame));
	memcpy(b + n, frame, sizeof(frame)), n += sizeof(frame);
	n += put32(b + n, 0);
	n += put32(b + n, (uint32_t)(n - start + 4));
	put32(b + start + 4, (uint32_t)(n - start));
	return n;
}

/* Run the tool; its exit status, stdout+stderr in out. */
static int run(const char *args, const char *file, char *out, size_t cap)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "'%s' %s '%s' 2>&1", tool, args, file);
	return gdak_test_popen(cmd, out, cap);
}

/* The capture b[0..n) as the file f. */
static void put_file(const char *f, const uint8_t *b, size_t n)
{
	FILE *w;

	REQUIRE((w = fopen(f, "wb")) != NULL);
	REQUIRE_EQ(fwrite(b, 1, n, w), n);
	fclose(w);
}

int main(int argc, char **argv)
{
	static uint8_t b[4096];
	static char out[1 << 16];
	char *f = gdak_test_tmpname("trace", "plain");
	char *t = gdak_test_tmpname("trace", "rel");
	struct gdak_ctx *ctx;
	struct gdak_qp *qp;
	size_t n;

	if (argc < 2)
		GDAK_TEST_SKIP("usage: %s GDAK_TRACE_BINARY", argv[0]);
	tool = argv[1];

	/* another tool's capture: read to the end, exit 0 */
	n = make_capture(b, "TShark (Wireshark) 4.0.17");
	put_file(f, b, n);
	CHECK_EQ(run("", f, out, sizeof(out)), 0);
	CHECK(strstr(out, " PACKET ") != NULL);
	CHECK(strstr(out, "STATS") == NULL);
	CHECK_EQ(run("--summary", f, out, sizeof(out)), 0);

	/* the same with gdak's section header: a gdak trace cut short */
	n = make_capture(b, "gdak 0.1.0");
	put_file(f, b, n);
	CHECK_EQ(run("", f, out, sizeof(out)), 1);
	CHECK(strstr(out, "without the writer's closing STATS record") != NULL);

	/* --relative on a trace the NIC model wrote */
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_nic_set_trace(t), 0);
	REQUIRE_EQ(gdak_qp_create(ctx, NULL, &qp), 0);
	gdak_qp_destroy(qp);
	REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);
	gdak_close(ctx);
	CHECK_EQ(run("--relative", t, out, sizeof(out)), 0);
	CHECK(!strncmp(out, "0.000000000 ", 12));
	CHECK(strstr(out, "\n17") == NULL); /* no absolute epoch seconds left */
	CHECK_EQ(run("--relative --json", t, out, sizeof(out)), 0);
	CHECK(strstr(out, "\"rel_ns\":0,") != NULL);
	CHECK_EQ(run("", t, out, sizeof(out)), 0);
	CHECK(strncmp(out, "0.000000000 ", 12) != 0); /* absolute without it */
	unlink(f);
	unlink(t);
	free(f);
	free(t);
	return gdak_test_end();
}
