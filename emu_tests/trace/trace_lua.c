/* SPDX-License-Identifier: MIT */
/*
 * trace_lua.c - the Wireshark dissector (tools/gdak-trace.lua) rebuilds
 * real NIC-model traces exactly: gdak-demo (argv[1]) runs its operations -
 * RDMA_WRITE, RDMA_READ, fetch-add, put+signal, SEND/RECV - one at a time,
 * and gdak-perf (argv[2]) streams RDMA_WRITEs, 16 per doorbell, on the
 * emulated NIC with a trace; every WQE, receive WQE and CQE that tshark
 * with the dissector (argv[3]) shows equals, byte for byte and in order,
 * what gdak's own reader hands out: the BATCH records' delta coding,
 * predictions, REPEAT and OFF sub-records decoded the same way by both.
 * Skips (77) where tshark or its Lua is missing.
 */
#include <sys/wait.h>

#include "gdak_test.h"
#include "trace_util.h"

struct hexlist {
	char *s;	/* lines of hex, one record each */
	size_t n, cap, recs;
};

/* One line of k hex digits. */
static void hex_put(struct hexlist *l, const char *hex, size_t k)
{
	if (l->n + k + 2 > l->cap) {
		l->cap = 2 * (l->n + k + 2) + 4096;
		l->s = realloc(l->s, l->cap);
		REQUIRE(l->s);
	}
	memcpy(l->s + l->n, hex, k);
	l->n += k;
	l->s[l->n++] = '\n';
	l->s[l->n] = 0;
	l->recs++;
}

static void add_hex(struct hexlist *l, const uint8_t *p, size_t len)
{
	char hex[2 * 1024 + 1];

	REQUIRE(len <= 1024);
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", p[i]);
	hex_put(l, hex, 2 * len);
}

struct both {
	struct hexlist w, c;
};

static void collect(const struct gdak_trace_item *it, void *arg)
{
	struct both *b = arg;

	if (it->kind != GDAK_TITEM_RECORD)
		return;
	if (it->hdr.type == GDAK_TREC_WQE || it->hdr.type == GDAK_TREC_RECV_WQE)
		add_hex(&b->w, it->u.wqe.bytes, it->u.wqe.len);
	else if (it->hdr.type == GDAK_TREC_CQE)
		add_hex(&b->c, it->u.cqe.cqe, 64);
}

/* tshark's "-T fields -e gdak.wqe -e gdak.cqe" output: per frame the
 * WQEs, '+', the CQEs, each list comma-separated, bytes maybe with ':' */
static void split_fields(const char *out, struct both *b)
{
	const char *p = out;

	while (*p) {
		const char *eol = strchr(p, '\n'), *plus;
		struct hexlist *l = &b->w;
		size_t k = 0;
		char cur[2 * 1024 + 2];

		if (!eol)
			eol = p + strlen(p);
		plus = memchr(p, '+', (size_t)(eol - p));
		for (; p <= eol; p++) {
			if (p == eol || *p == ',' || p == plus) {
				if (k)
					hex_put(l, cur, k);
				k = 0;
				if (p == plus)
					l = &b->c;
				if (p == eol)
					break;
			} else if (*p != ':' && k < sizeof(cur) - 1) {
				cur[k++] = *p;
			}
		}
		p = *eol ? eol + 1 : eol;
	}
}

/* Run a shell command, its stdout into *out (malloc'd); the exit status. */
static int run(const char *cmd, char **out)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 16, n = 0, r;
	char *b = malloc(cap);
	int st;

	REQUIRE(p && b);
	while ((r = fread(b + n, 1, cap - n - 1, p)) > 0) {
		n += r;
		if (n + 1 == cap) {
			b = realloc(b, cap *= 2);
			REQUIRE(b);
		}
	}
	b[n] = 0;
	st = pclose(p);
	*out = b;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The file at path read both ways: the same WQEs and CQEs, at least
 * min_w and min_c of them. */
static void compare(const char *lua_script, const char *path, size_t min_w, size_t min_c)
{
	struct both c, lua;
	char cmd[2048], err[256] = "", *out = NULL;
	uint8_t *file;
	size_t len;

	memset(&c, 0, sizeof(c));
	memset(&lua, 0, sizeof(lua));
	file = tt_slurp(path, &len);
	REQUIRE(file);
	CHECK_EQ(tt_read_all(file, len, collect, &c, err, sizeof(err)), 0);
	CHECK(c.w.recs >= min_w);
	CHECK(c.c.recs >= min_c);

	snprintf(cmd, sizeof(cmd), "tshark -X 'lua_script:%s' -r '%s' -Y gdak -T fields "
		 "-E separator=+ -e gdak.wqe -e gdak.cqe 2>/dev/null", lua_script, path);
	CHECK_EQ(run(cmd, &out), 0);
	REQUIRE(out);
	split_fields(out, &lua);
	printf("%s: reader %zu WQEs, %zu CQEs; dissector %zu WQEs, %zu CQEs\n", path, c.w.recs,
	       c.c.recs, lua.w.recs, lua.c.recs);
	CHECK_EQ(lua.w.recs, c.w.recs);
	CHECK_EQ(lua.c.recs, c.c.recs);
	CHECK(c.w.s && lua.w.s && !strcmp(c.w.s, lua.w.s));
	CHECK(c.c.s && lua.c.s && !strcmp(c.c.s, lua.c.s));
	/* and no expert note (a short or undecodable record) anywhere */
	free(out);
	snprintf(cmd, sizeof(cmd), "tshark -X 'lua_script:%s' -r '%s' -q -z expert,note 2>&1",
		 lua_script, path);
	CHECK_EQ(run(cmd, &out), 0);
	CHECK(out && !strstr(out, "gdak record shorter") && !strstr(out, "not in the capture"));
	free(out);
	free(file);
	free(c.w.s);
	free(c.c.s);
	free(lua.w.s);
	free(lua.c.s);
}

int main(int argc, char **argv)
{
	char *demo, *perf, cmd[2048];

	REQUIRE(argc == 4);
	if (system("command -v tshark >/dev/null 2>&1") != 0)
		GDAK_TEST_SKIP("tshark is not installed");
	snprintf(cmd, sizeof(cmd), "tshark -X 'lua_script:%s' -v 2>&1 | grep -qi 'with Lua'",
		 argv[3]);
	if (system(cmd) != 0)
		GDAK_TEST_SKIP("tshark has no Lua");
	demo = tt_tmpname("lua-demo");
	perf = tt_tmpname("lua-perf");
	REQUIRE(demo && perf);

	/* one operation at a time: a pass each (the latency shape) */
	snprintf(cmd, sizeof(cmd), "GDAK_DEVICE=emu '%s' --host -n 300 --lines 0 --trace '%s' "
		 ">/dev/null 2>&1", argv[1], demo);
	REQUIRE_EQ(system(cmd), 0);
	/* what the demo posts: 5 kinds x 300 (put+signal is two WQEs), a
	 * receive WQE per message, a CQE per operation and message */
	compare(argv[3], demo, 1800, 1500);

	/* a stream: 16 RDMA_WRITEs per doorbell, every 128th signaled -
	 * REPEAT sub-records of up to 127 records, and OFF ones */
	snprintf(cmd, sizeof(cmd), "'%s' -d emu -s 64 -n 4096 -r 1 --nic-threads 1 --no-baseline "
		 "--signal-every 128 --quiet --trace '%s' write_bw >/dev/null 2>&1", argv[2], perf);
	REQUIRE_EQ(system(cmd), 0);
	compare(argv[3], perf, 4096, 32);

	unlink(demo);
	unlink(perf);
	free(demo);
	free(perf);
	return gdak_test_end();
}
