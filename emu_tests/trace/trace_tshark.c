/* SPDX-License-Identifier: MIT */
/*
 * trace_tshark.c - tshark opens a gdak trace without errors and decodes its
 * packet records as InfiniBand (RoCEv2): an RC RDMA WRITE ONLY with the
 * BTH and RETH fields we wrote, no malformed-packet or expert errors.
 * With tools/gdak-trace.lua (argv[1]) and a Lua-enabled tshark, the gdak
 * records decode too.  Skips (77) where tshark is not installed.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <sys/wait.h>

#include "gdak_test.h"
#include "trace_util.h"

/* Run a shell command, its stdout into *out (malloc'd); the exit status. */
static int run(const char *cmd, char **out)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);
	int st;

	if (!p || !b) {
		free(b);
		if (p)
			pclose(p);
		return -1;
	}
	for (;;) {
		size_t r;
		if (n + 1 >= cap) {
			char *nb = realloc(b, cap * 2);
			if (!nb)
				break;
			b = nb;
			cap *= 2;
		}
		r = fread(b + n, 1, cap - n - 1, p);
		if (!r)
			break;
		n += r;
	}
	b[n] = 0;
	st = pclose(p);
	*out = b;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The command fmt names run (see run()): its output, for free(); a
 * failed check when it does not exit 0, the end of the test when it
 * cannot run at all. */
static char *run_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *run_ok(const char *fmt, ...)
{
	char cmd[1024], *out = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = run(cmd, &out);
	CHECK_EQ(rc, 0);
	if (rc)
		fprintf(stderr, "failed: %s\n", cmd);
	REQUIRE(out);
	return out;
}

/* QP 0x12's WQE at idx (w with that index and address byte addr) and its
 * CQE on CQ 1 (cqe with that counter). */
static void wqe_and_cqe(struct gdak_trace_buf *b, uint8_t *w, uint8_t *cqe, uint16_t idx,
			uint8_t addr)
{
	w[2] = (uint8_t)idx;
	w[23] = addr;
	gdak_trace_wqe(b, 0x12, idx, w, 1);
	cqe[61] = (uint8_t)idx;
	gdak_trace_cqe(b, 0x12, 1, idx, cqe);
}

int main(int argc, char **argv)
{
	char *path, *out = NULL;
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	uint8_t pkt[256], reth[16], payload[16], cqe[64] = {0}, prog[40][64], progc[4][64];
	uint32_t sip = inet_addr("192.0.2.1"), dip = inet_addr("192.0.2.2");
	size_t n;
	int lua = 0;

	if (system("command -v tshark >/dev/null 2>&1") != 0)
		GDAK_TEST_SKIP("tshark is not installed");
	path = tt_tmpname("tshark");
	REQUIRE(path);

	gdak_test_fill(payload, sizeof(payload), 9);
	tt_reth(reth, 0x7f0000001000ull, 0x2002, sizeof(payload));
	n = tt_roce_build(pkt, 0x0a /* RC RDMA WRITE ONLY */, 0x000012, 100, 1, reth, sizeof(reth),
			  payload, sizeof(payload), sip, dip, 49152, 4791);
	REQUIRE(n == 12 + 16 + 16 + 4);

	REQUIRE_EQ(gdak_trace_open(path, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	/* records around the packet: tshark must step over the custom blocks */
	gdak_trace_note(b, "before");
	gdak_trace_packet(b, 0, sip, dip, 49152, 4791, pkt, (uint32_t)n);
	gdak_trace_cqe(b, 0x12, 1, 0, cqe);
	/* a batch: two WQEs (the second predicted, delta-coded) and a CQE */
	{
		uint8_t w[64] = {0};

		w[3] = 0x08;	/* RDMA_WRITE */
		w[7] = 3;
		gdak_trace_batch_begin(b);
		gdak_trace_wqe(b, 0x12, 0, w, 1);
		wqe_and_cqe(b, w, cqe, 1, 0x40);
		gdak_trace_batch_end(b);
		/* a second one, coded against the first one's WQE and CQE */
		gdak_trace_batch_begin(b);
		wqe_and_cqe(b, w, cqe, 2, 0x80);
		gdak_trace_batch_end(b);
		/* a device's stream (REPEAT and OFF sub-records): a doorbell,
		 * 40 WQEs whose index and address step (the address carries
		 * into its next byte), every 16th signaled, and CQEs whose
		 * counter steps by 16, one with a syndrome blip */
		gdak_trace_batch_begin(b);
		gdak_trace_doorbell(b, 0x12, 0, 43, w, 8);
		for (unsigned i = 0; i < 40; i++) {
			uint16_t idx = (uint16_t)(3 + i);
			uint32_t a = 0x1000 + 0x40 * i;

			w[1] = (uint8_t)(idx >> 8);
			w[2] = (uint8_t)idx;
			w[11] = i % 16 == 15 ? 0x08 : 0;
			w[21] = (uint8_t)(a >> 16);
			w[22] = (uint8_t)(a >> 8);
			w[23] = (uint8_t)a;
			memcpy(prog[i], w, 64);
			gdak_trace_wqe(b, 0x12, idx, w, 1);
		}
		for (unsigned i = 0; i < 4; i++) {
			cqe[60] = (uint8_t)((16 * i + 18) >> 8);
			cqe[61] = (uint8_t)(16 * i + 18);
			cqe[55] = i == 2 ? 0x13 : 0;
			memcpy(progc[i], cqe, 64);
			gdak_trace_cqe(b, 0x12, 1, 3 + i, cqe);
		}
		gdak_trace_batch_end(b);
	}
	gdak_trace_close(t);

	/* the packet, field by field */
	out = run_ok(
		"tshark -r '%s' -Y infiniband -T fields -E separator=, -e infiniband.bth.opcode "
		"-e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.bth.a "
		"-e infiniband.reth.va -e infiniband.reth.r_key -e infiniband.reth.dmalen "
		"-e udp.dstport -e ip.checksum.status 2>/dev/null",
		path);
	printf("tshark fields: %s", out);
	/* fields by value (tshark prints some in hex, some in decimal):
	 * opcode 10 = RC RDMA WRITE Only */
	{
		static const uint64_t want[] = {10, 0x12, 100, 1, 0x7f0000001000ull, 0x2002, 16, 4791};
		char *p = out, *end;
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			uint64_t v = strtoull(p, &end, 0);
			CHECK_EQ(v, want[i]);
			if (*end != ',')
				break;
			p = end + 1;
		}
	}
	free(out);
	out = NULL;

	/* the summary line names the operation */
	out = run_ok("tshark -r '%s' -Y infiniband 2>/dev/null", path);
	printf("tshark: %s", out);
	CHECK(strstr(out, "RC RDMA Write Only") != NULL);
	CHECK(strstr(out, "QP=0x000012") != NULL);
	CHECK(strstr(out, "Malformed") == NULL);
	free(out);
	out = NULL;

	/* IP header checksum verified by tshark itself */
	out = run_ok("tshark -r '%s' -o ip.check_checksum:TRUE -Y "
		     "'ip.checksum.status == \"Good\"' 2>/dev/null | wc -l",
		     path);
	CHECK(atoi(out) == 1);
	free(out);
	out = NULL;

	/* no expert info of warning or error severity anywhere in the file */
	out = run_ok("tshark -r '%s' -q -z expert,warn 2>&1", path);
	CHECK(strstr(out, "Errors (") == NULL);
	CHECK(strstr(out, "Warns (") == NULL);
	CHECK(strstr(out, "Malformed") == NULL);
	if (strstr(out, "Errors (") || strstr(out, "Warns ("))
		printf("tshark expert: %s", out);
	free(out);
	out = NULL;

	/* the Lua dissector names the gdak records, without expert errors */
	if (argc > 1) {
		out = run_ok("tshark -X 'lua_script:%s' -r '%s' -Y gdak 2>&1", argv[1], path);
		lua = !(strstr(out, "lua") && strstr(out, "not"));
		if (!lua) {
			printf("tshark without Lua: %s", out);
		} else {
			printf("tshark + gdak-trace.lua:\n%s", out);
			CHECK(strstr(out, "gdak") && strstr(out, "NOTE"));
			/* opcodes by name, as gdak-trace prints them */
			CHECK(strstr(out, "CQE qp 0x000012 cqe REQ wqe_counter=0") != NULL);
			CHECK(strstr(out, "STATS") != NULL);
			CHECK(strstr(out, "BATCH qp 0x000012 3 records: 0 doorbells, 2 WQEs, 1 CQEs"));
			CHECK(strstr(out, "BATCH qp 0x000012 2 records: 0 doorbells, 1 WQEs, 1 CQEs"));
			CHECK(strstr(out, "BATCH qp 0x000012 45 records: 1 doorbells, 40 WQEs, 4 CQEs"));
		}
		free(out);
		out = NULL;
		if (lua) {
			out = run_ok("tshark -X 'lua_script:%s' -r '%s' -Y gdak -V 2>&1", argv[1],
				     path);
			CHECK(strstr(out, "WQE opcode: RDMA_WRITE (0x08)"));
			CHECK(strstr(out, "PEN 32473: RFC 5612's documentation number"));
			free(out);
		}
		/* the progression's WQEs and CQEs, byte for byte, as the
		 * dissector rebuilt them from REPEAT and OFF sub-records */
		out = run_ok("tshark -X 'lua_script:%s' -r '%s' -Y 'gdak.batch.count == 45' "
			     "-T fields -E separator=+ -e gdak.wqe -e gdak.cqe 2>/dev/null",
			     argv[1], path);
		if (lua) {
			char *want = malloc(44 * 130 + 1), *got = malloc(strlen(out) + 1), *q = want;
			size_t k = 0;

			REQUIRE(want && got);
			for (unsigned i = 0; i < 40; i++) {
				for (unsigned j = 0; j < 64; j++)
					q += sprintf(q, "%02x", prog[i][j]);
				*q++ = i < 39 ? ',' : '+';
			}
			for (unsigned i = 0; i < 4; i++) {
				for (unsigned j = 0; j < 64; j++)
					q += sprintf(q, "%02x", progc[i][j]);
				*q++ = i < 3 ? ',' : 0;
			}
			for (const char *c = out; *c; c++)	/* hex digits and commas only */
				if (*c != ':' && *c != '\n')
					got[k++] = *c;
			got[k] = 0;
			CHECK(!strcmp(got, want));
			if (strcmp(got, want))
				printf("tshark WQE bytes:\n%s\nwant:\n%s\n", got, want);
			free(want);
			free(got);
		}
		free(out);
		out = run_ok("tshark -X 'lua_script:%s' -r '%s' -q -z expert,warn 2>&1", argv[1],
			     path);
		CHECK(!strstr(out, "Errors (") && !strstr(out, "Warns ("));
		free(out);
	}

	unlink(path);
	free(path);
	return gdak_test_end();
}
