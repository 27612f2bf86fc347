/* SPDX-License-Identifier: MIT */
/*
 * trace_corrupt.c - truncated and corrupt traces, and gdak-trace's command
 * line: never a crash or a hang; the problem named with its byte offset; a
 * non-zero exit; what could be read still printed.
 *
 * usage: gdak_trace_corrupt GDAK_TRACE_BINARY
 */
#include <fcntl.h>
#include <signal.h>
#include <arpa/inet.h>
#include <sys/wait.h>

#include "gdak_test.h"
#include "trace_int.h"
#include "trace_util.h"

static const char *bin;

/* Run gdak-trace ARGS; stdout and stderr into malloc'd strings. */
static int run_tool(const char *args, char **out, char **err)
{
	char cmd[2048], epath[] = "/tmp/gdak-trace-err-XXXXXX";
	FILE *p;
	int efd = mkstemp(epath), st;
	size_t n = 0, elen;
	char *o = NULL;

	if (efd < 0)
		return -1;
	close(efd);
	snprintf(cmd, sizeof(cmd), "'%s' %s 2>'%s'", bin, args, epath);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	{
		FILE *m = open_memstream(&o, &n);
		char buf[4096];
		size_t r;
		while ((r = fread(buf, 1, sizeof(buf), p)) > 0)
			fwrite(buf, 1, r, m);
		fclose(m);
	}
	st = pclose(p);
	*err = (char *)tt_slurp(epath, &elen);
	if (*err)
		(*err)[elen] = 0;
	unlink(epath);
	if (out)
		*out = o;
	else
		free(o);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void make_trace(const char *path)
{
	struct gdak_trace_opts o = {.fake_clock = 1};
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	uint8_t w[64] = {0}, c[64] = {0}, pkt[128], reth[16];
	uint32_t a = inet_addr("192.0.2.1"), z = inet_addr("192.0.2.2");
	size_t n;

	w[3] = 0x08;	/* RDMA_WRITE */
	w[7] = 3;	/* ds 3 */
	c[63] = 0xd0;	/* REQ_ERR */
	c[55] = 0x13;
	tt_reth(reth, 0x1000, 0x22, 8);
	n = tt_roce_build(pkt, 0x0a, 0x12, 7, 1, reth, 16, "payload!", 8, a, z, 1000, 4791);
	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	gdak_trace_qp(b, 0x11, 0x12, "udp", "RTS");
	gdak_trace_doorbell(b, 0x11, 0, 1, w, 8);
	gdak_trace_wqe(b, 0x11, 0, w, 1);
	gdak_trace_packet(b, 0, a, z, 1000, 4791, pkt, (uint32_t)n);
	gdak_trace_cqe(b, 0x11, 1, 0, c);
	gdak_trace_violation(b, 0x11, 1, "rule", 2, "text");
	gdak_trace_note(b, "end");
	/* a batch: doorbell, WQEs (the later ones predicted), CQEs, on two QPs */
	gdak_trace_batch_begin(b);
	gdak_trace_doorbell(b, 0x11, 0, 4, w, 8);
	for (uint16_t i = 1; i < 4; i++) {
		w[2] = (uint8_t)i;	/* the ctrl segment's index */
		w[16 + 7] = (uint8_t)(i * 8);
		gdak_trace_wqe(b, 0x11, i, w, 1);
	}
	gdak_trace_cqe(b, 0x11, 1, 1, c);
	c[60 + 1] = 3;
	gdak_trace_cqe(b, 0x11, 1, 2, c);
	gdak_trace_wqe(b, 0x13, 9, w, 1);
	gdak_trace_batch_end(b);
	/* a second batch, coded against the first one's WQE and CQE */
	gdak_trace_batch_begin(b);
	w[2] = 10;
	gdak_trace_wqe(b, 0x13, 10, w, 1);
	c[60 + 1] = 4;
	gdak_trace_cqe(b, 0x11, 1, 3, c);
	gdak_trace_batch_end(b);
	gdak_trace_close(t);
}

/* File offset of the first block that is a gdak record of type type. */
static size_t find_rec(const uint8_t *file, size_t len, uint8_t type)
{
	size_t off = 0;

	while (off + 12 + 16 < len) {
		uint32_t bt = trace_get32(file + off), bl = trace_get32(file + off + 4);

		if (bt == GDAK_PCAPNG_CB_COPY && file[off + 12] == type)
			return off;
		if (bl < 12)
			break;
		off += bl;
	}
	return 0;
}

static FILE *devnull;

/* Decode everything a corrupt file yields: the decoder must cope too. */
static void decode_all(const struct gdak_trace_item *it, void *arg)
{
	struct trace_out o = {.f = devnull, .json = 0};
	struct trace_summary *s = arg;

	trace_print_item(&o, it);
	o.json = 1;
	trace_print_item(&o, it);
	trace_summary_add(s, it);
}

static int has_stats;
static void find_stats(const struct gdak_trace_item *it, void *arg)
{
	if (it->kind == GDAK_TITEM_RECORD && it->hdr.type == GDAK_TREC_STATS)
		has_stats = 1;
}

/* Every prefix of the file: the library reports an error or the file lacks
 * its closing STATS; the tool exits 1 naming an offset. */
static void test_truncation(const uint8_t *file, size_t len, const char *cut)
{
	unsigned tool_bad = 0, lib_bad = 0;
	char args[1024], msg[256], *err;

	for (size_t l = 0; l < len; l++) {
		int rc;

		has_stats = 0;
		rc = tt_read_all(file, l, find_stats, NULL, msg, sizeof(msg));
		if (rc == 0 && has_stats)
			lib_bad++;
		if (rc > 0 && !strstr(msg, "offset "))
			lib_bad++;

		REQUIRE_EQ(tt_write(cut, file, l), 0);
		snprintf(args, sizeof(args), "'%s'", cut);
		rc = run_tool(args, NULL, &err);
		if (rc != 1 || !err || !strstr(err, "offset ")) {
			if (!tool_bad)
				printf("cut at %zu: exit %d, stderr: %s\n", l, rc, err ? err : "");
			tool_bad++;
		}
		free(err);
	}
	CHECK_EQ(lib_bad, 0);
	CHECK_EQ(tool_bad, 0);
}

/* Every byte flipped three ways, through the reader, decoder and summary. */
static void test_flips(const uint8_t *file, size_t len, const char *cut)
{
	static const uint8_t masks[] = {0xff, 0x01, 0x80};
	uint8_t *m = malloc(len);
	unsigned tool_bad = 0;
	char args[1024], *err;

	REQUIRE(m);
	for (size_t i = 0; i < len; i++) {
		for (size_t k = 0; k < sizeof(masks); k++) {
			struct trace_summary *s = trace_summary_new(k & 1);
			memcpy(m, file, len);
			m[i] ^= masks[k];
			tt_read_all(m, len, decode_all, s, NULL, 0);
			trace_summary_print(s, &(struct trace_out){.f = devnull, .json = (int)(k & 1)});
			trace_summary_free(s);
		}
		/* the tool on a sample: exit 0 (a flip in payload bytes) or 1, never a crash */
		if (i % 5 == 0) {
			int rc;
			memcpy(m, file, len);
			m[i] ^= 0xff;
			REQUIRE_EQ(tt_write(cut, m, len), 0);
			snprintf(args, sizeof(args), "--summary '%s'", cut);
			rc = run_tool(args, NULL, &err);
			if (rc != 0 && rc != 1)
				tool_bad++;
			if (rc == 1 && (!err || !strstr(err, "offset ")))
				tool_bad++;
			free(err);
		}
	}
	CHECK_EQ(tool_bad, 0);
	free(m);
}

/* Specific damage, specific messages; a bad body does not stop the reading. */
static void test_messages(const uint8_t *file, size_t len, const char *cut)
{
	uint8_t *m = malloc(len);
	char args[1024], *out, *err;
	size_t rec;	/* offset of the first custom block after SHB and IDB */
	int rc;

	REQUIRE(m);
	rec = trace_get32(file + 4);
	rec += trace_get32(file + rec + 4);
	REQUIRE_EQ(trace_get32(file + rec), GDAK_PCAPNG_CB_COPY);
	snprintf(args, sizeof(args), "'%s'", cut);

	memcpy(m, file, len);
	m[0] = 'X';
	REQUIRE_EQ(tt_write(cut, m, len), 0);
	rc = run_tool(args, NULL, &err);
	CHECK_EQ(rc, 1);
	CHECK(err && strstr(err, "offset 0: not a pcapng file"));
	free(err);

	memcpy(m, file, len);
	m[rec + 4] ^= 2;	/* block length no longer a multiple of 4 */
	REQUIRE_EQ(tt_write(cut, m, len), 0);
	rc = run_tool(args, &out, &err);
	CHECK_EQ(rc, 1);
	CHECK(err && strstr(err, "multiple of 4"));
	CHECK(out && out[0] == 0);	/* nothing before it to print */
	free(out);
	free(err);

	memcpy(m, file, len);
	m[len - 1] ^= 0x10;	/* trailer of the last block */
	REQUIRE_EQ(tt_write(cut, m, len), 0);
	rc = run_tool(args, &out, &err);
	CHECK_EQ(rc, 1);
	CHECK(err && strstr(err, "trailing length"));
	CHECK(out && strstr(out, "NOTE text=\"end\""));	/* everything before it printed */
	free(out);
	free(err);

	/* the first record's body length too large: reported, the rest still read */
	memcpy(m, file, len);
	m[rec + 12 + 4 + 1] = 0x7f;	/* body_len, second byte */
	REQUIRE_EQ(tt_write(cut, m, len), 0);
	rc = run_tool(args, &out, &err);
	CHECK_EQ(rc, 1);
	{
		char want[64];
		snprintf(want, sizeof(want), "offset %zu: QP record body length", rec);
		CHECK(err && strstr(err, want));
	}
	CHECK(out && strstr(out, "WQE idx=0 RDMA_WRITE"));
	CHECK(out && strstr(out, "STATS"));
	free(out);
	free(err);

	/* a BATCH that claims more records than its body holds: those it has
	 * are printed, the missing one is named, the rest of the file read */
	{
		size_t bat = find_rec(file, len, GDAK_TREC_BATCH);
		char want[96];

		REQUIRE(bat);
		memcpy(m, file, len);
		trace_put32(m + bat + 12 + 32, trace_get32(m + bat + 12 + 32) + 1);
		REQUIRE_EQ(tt_write(cut, m, len), 0);
		rc = run_tool(args, &out, &err);
		CHECK_EQ(rc, 1);
		snprintf(want, sizeof(want), "offset %zu: BATCH record 8 of 8", bat);
		CHECK(err && strstr(err, want));
		CHECK(out && strstr(out, "qp 0x000013 WQE idx=9"));
		CHECK(out && strstr(out, "STATS"));
		/* the next batch went on from this one's references: named, skipped */
		CHECK(err && strstr(err, "BATCH of thread 0 goes on from its record 13, which is not "
				    "in the file before it"));
		CHECK(out && !strstr(out, "WQE idx=10"));
		free(out);
		free(err);

		/* a sub-record of a type that cannot be batched */
		memcpy(m, file, len);
		m[bat + 12 + 32 + 8] = GDAK_TREC_NOTE;
		REQUIRE_EQ(tt_write(cut, m, len), 0);
		rc = run_tool(args, &out, &err);
		CHECK_EQ(rc, 1);
		CHECK(err && strstr(err, "BATCH record 1 of 7: type 9 cannot be batched"));
		free(out);
		free(err);
	}
	free(m);
}

static void test_cli(const char *good)
{
	char args[1024], *out, *err;

	CHECK_EQ(run_tool("--bogus x", NULL, &err), 2);
	CHECK(err && strstr(err, "--bogus") && strstr(err, "usage"));
	free(err);
	CHECK_EQ(run_tool("", NULL, &err), 2);
	CHECK(err && strstr(err, "no trace file"));
	free(err);
	CHECK_EQ(run_tool("a b", NULL, &err), 2);
	CHECK(err && strstr(err, "more than one"));
	free(err);
	snprintf(args, sizeof(args), "--qp 0xzz '%s'", good);
	CHECK_EQ(run_tool(args, NULL, &err), 2);
	CHECK(err && strstr(err, "not a QP number"));
	free(err);
	snprintf(args, sizeof(args), "--qp 0x1000000 '%s'", good);
	CHECK_EQ(run_tool(args, NULL, &err), 2);
	free(err);
	snprintf(args, sizeof(args), "--opcode BOGUS '%s'", good);
	CHECK_EQ(run_tool(args, NULL, &err), 2);
	CHECK(err && strstr(err, "'BOGUS'"));
	free(err);
	snprintf(args, sizeof(args), "--qp '%s'", good);	/* missing value: FILE taken as N */
	CHECK_EQ(run_tool(args, NULL, &err), 2);
	free(err);
	snprintf(args, sizeof(args), "--summary --follow '%s'", good);
	CHECK_EQ(run_tool(args, NULL, &err), 2);
	free(err);
	CHECK_EQ(run_tool("--help", &out, &err), 0);
	CHECK(out && strstr(out, "usage: gdak-trace"));
	free(out);
	free(err);
	CHECK_EQ(run_tool("/nonexistent/trace.pcapng", NULL, &err), 1);
	CHECK(err && strstr(err, "cannot read"));
	free(err);
	snprintf(args, sizeof(args), "'%s'", good);
	CHECK_EQ(run_tool(args, &out, &err), 0);
	CHECK(err && err[0] == 0);
	free(out);
	free(err);
}

/* --follow prints records as they are flushed and stops on SIGINT. */
static void test_follow(const char *path)
{
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	int pfd[2], status;
	pid_t pid;
	FILE *in;
	char line[1024];

	REQUIRE_EQ(gdak_trace_open(path, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	gdak_trace_note(b, "first");
	REQUIRE_EQ(gdak_trace_flush(t), 0);

	REQUIRE_EQ(pipe(pfd), 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execl(bin, bin, "--follow", path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	in = fdopen(pfd[0], "r");
	REQUIRE(in);
	/* blocking reads: no timing assumption, the test timeout catches a hang */
	REQUIRE(fgets(line, sizeof(line), in));
	CHECK(strstr(line, "NOTE text=\"first\""));
	gdak_trace_note(b, "second");
	REQUIRE_EQ(gdak_trace_flush(t), 0);
	REQUIRE(fgets(line, sizeof(line), in));
	CHECK(strstr(line, "NOTE text=\"second\""));
	kill(pid, SIGINT);
	REQUIRE_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fclose(in);
	gdak_trace_close(t);
}

int main(int argc, char **argv)
{
	char *path, *cut;
	uint8_t *file;
	size_t len;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GDAK_TRACE_BINARY\n", argv[0]);
		return 2;
	}
	bin = argv[1];
	devnull = fopen("/dev/null", "w");
	REQUIRE(devnull);
	path = tt_tmpname("good");
	cut = tt_tmpname("cut");
	REQUIRE(path && cut);
	make_trace(path);
	file = tt_slurp(path, &len);
	REQUIRE(file);
	REQUIRE(len > 500 && len < 2000);

	test_cli(path);
	test_messages(file, len, cut);
	test_truncation(file, len, cut);
	test_flips(file, len, cut);
	test_follow(cut);

	free(file);
	unlink(path);
	unlink(cut);
	free(path);
	free(cut);
	fclose(devnull);
	return gdak_test_end();
}
