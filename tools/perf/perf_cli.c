/* SPDX-License-Identifier: MIT */
/* perf_cli.c - gdak-perf's command line: the test table, option parsing and
 * --help.  A bad flag or value prints what is wrong and exits 2. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gdak/config.h>

#include "perf.h"
#include "../tool_usage.h"

static const struct perf_test_desc tests[] = {
	{ "write_bw", PERF_WRITE_BW, PERF_KIND_BW, 0,
	  "RDMA_WRITE message rate and bandwidth (N WQEs per doorbell, CQE every M)" },
	{ "write_lat", PERF_WRITE_LAT, PERF_KIND_LAT, 0,
	  "RDMA_WRITE latency: post -> CQE seen by the poster" },
	{ "read_bw", PERF_READ_BW, PERF_KIND_BW, 0, "RDMA_READ message rate and bandwidth" },
	{ "read_lat", PERF_READ_LAT, PERF_KIND_LAT, 0, "RDMA_READ latency: post -> data and CQE" },
	{ "atomic_rate", PERF_ATOMIC_RATE, PERF_KIND_BW, 8, "8-byte fetch-add message rate" },
	{ "atomic_lat", PERF_ATOMIC_LAT, PERF_KIND_LAT, 8, "8-byte fetch-add latency" },
	{ "send_bw", PERF_SEND_BW, PERF_KIND_BW, 0, "SEND/RECV message rate and bandwidth" },
	{ "put_signal_lat", PERF_PUT_SIGNAL_LAT, PERF_KIND_LAT, 0,
	  "put+signal latency: post -> the target sees the signal word" },
	{ "dc_put_bw", PERF_DC_PUT_BW, PERF_KIND_BW, 0,
	  "put rate on DCIs, each put to the next of 8 DCTs (vs the same puts on RC, same run)" },
	{ "baseline", PERF_BASELINE, PERF_KIND_BASE, 0,
	  "the baselines alone: minimal executor (1 and 16 WQEs/doorbell), memcpy, ping-pong" },
};

const struct perf_test_desc *perf_test_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(tests[i].name, name))
			return &tests[i];
	return NULL;
}

void perf_usage(FILE *f)
{
	size_t i;

	fputs("usage: gdak-perf [options] TEST [SERVER_ADDR]\n"
	      "\n"
	      "Measures gdak's device API (host threads, or a CUDA kernel with --cuda) against\n"
	      "the emulated NIC or a ConnectX, with baselines measured in the same run.\n"
	      "The last iteration's data is verified; a failed check exits 1.\n"
	      "\n"
	      "tests:\n", f);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		fprintf(f, "  %-15s %s\n", tests[i].name, tests[i].what);
	fputs("\n"
	      "message sizes (K/M/G suffixes are powers of 1024):\n"
	      "  -s, --size SIZE          one message size (bw: 65536, lat: 8)\n"
	      "      --size-range MIN:MAX powers of two from MIN to MAX\n"
	      "  -a, --all                powers of two from 1 to 8M (or to -m)\n"
	      "  -m, --max-size SIZE      upper bound for -a\n"
	      "run:\n"
	      "  -n, --iters N            operations per QP per round, in every test (default:\n"
	      "                           by size); #iters in the output is this number\n"
	      "  -D, --duration S         instead of -n: about S seconds per message size (the\n"
	      "                           rounds share it; iterations calibrated by a short run)\n"
	      "  -r, --rounds N           test/baseline alternations; medians reported (5)\n"
	      "  -q, --qps N              QPs driven (default: one per posting thread)\n"
	      "      --idle-qps N         extra QPs opened and left idle (polling cost)\n"
	      "      --threads N          posting threads (1); latency tests use one\n"
	      "  -l, --post_list N        WQEs per doorbell in rate tests (16; --wqes-per-db)\n"
	      "  -Q, --cq-mod N           a CQE every N WQEs in rate tests (default: per doorbell;\n"
	      "                           --signal-every)\n"
	      "  -t, --tx-depth N         send queue WQEBBs (256; --sq-depth)\n"
	      "      --handler H          doorbell handler: db, bf, cpu_proxy (db)\n"
	      "      --nic-threads N      NIC model threads (default: the model's)\n"
	      "      --poll MODE          NIC polling: spin, adaptive (default: $GDAK_POLL, else\n"
	      "                           spin for latency tests, the NIC model's otherwise)\n"
	      "  -d, --device DEV         emu, emu:udp, emu:verbs:DEV, mlx5_0 ($GDAK_DEVICE, emu)\n"
	      "      --server             hold the target QPs and memory for a client that runs\n"
	      "                           the same TEST with SERVER_ADDR (e.g. -d emu:udp)\n"
	      "  -p, --port N             bootstrap TCP port (18515; --server -p 0: any free one,\n"
	      "                           printed on stderr)\n"
	      "      --cuda               a CUDA kernel posts: write_lat and write_bw run by\n"
	      "                           gdak-perf-cuda (next to gdak-perf); -n, -s, --ctas,\n"
	      "                           --nic-threads and --json-file are passed on\n"
	      "      --ctas N             --cuda write_bw: CTAs, one thread and one QP each (1)\n"
	      "      --mem KIND           data buffers: host, mapped (GPU-visible host) (host)\n"
	      "      --no-baseline        skip the baselines\n"
	      "      --trace PATH         write a WQE/CQE trace (same as GDAK_TRACE=PATH)\n"
	      "      --idle-ms MS         after the test, keep the QPs open and idle for MS and\n"
	      "                           print the CPU the process (its NIC threads) used\n"
	      "output:\n"
	      "      --json               one JSON document on stdout\n"
	      "      --json-file PATH     also write the JSON document to PATH\n"
	      "      --csv                CSV on stdout (not measured: an empty field)\n"
	      "      --report_gbits       bandwidth in Gb/s (10^9 bits) instead of MiB/s\n"
	      "      --quiet              no progress lines on stderr\n"
	      "  -F, --CPU-freq           accepted (gdak-perf never warns about CPU frequency)\n"
	      "      --version            print the version\n"
	      "  -h, --help               this text\n"
	      "\n"
	      "perftest spellings: -D -Q -l -t -F --report_gbits --version mean what they mean\n"
	      "there; perftest flags with no meaning here (-x -i -R -z -e -I -c -b -S -T -u\n"
	      "--run_infinitely) are refused by name, with the reason.\n"
	      "\n"
	      "under mpirun (a build with MPI): mpirun -np 2 gdak-perf -d emu:udp TEST: rank 0\n"
	      "serves (as --server), rank 1 measures and prints; no SERVER_ADDR needed.\n"
	      "\n"
	      "examples:\n"
	      "  gdak-perf -a write_bw\n"
	      "  gdak-perf -s 8 -n 1000000 -l 16 write_bw\n"
	      "  gdak-perf -s 8 --poll spin write_lat\n"
	      "  gdak-perf -d emu:udp --server write_bw   and   gdak-perf -d emu:udp write_bw HOST\n"
	      "  mpirun -np 2 gdak-perf -d emu:udp write_bw\n"
	      "  gdak-perf --json -a write_bw > bw.json && tools/plot_bench.py bw.json -o bw.png\n",
	      f);
}

/* A wrong command line: says what, returns PERF_EXIT_USAGE. */
_Static_assert(PERF_EXIT_USAGE == TOOL_EXIT_USAGE, "gdak-perf's usage status is the tools' one");
#define usage_err(...) tool_usage_err("gdak-perf", " (try --help)", __VA_ARGS__)

/* "64", "4K", "1M": bytes; 0 on error. */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if ((*end == 'b' || *end == 'B') && end[1] == '\0')
		end++;
	if (*end || !v || v > (1ull << 30))
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

enum {
	OPT_SIZE_RANGE = 256, OPT_IDLE_QPS, OPT_WPD, OPT_SIGNAL, OPT_SQ, OPT_HANDLER,
	OPT_NIC_THREADS, OPT_POLL, OPT_SERVER, OPT_CUDA, OPT_CTAS, OPT_NO_BASE, OPT_TRACE,
	OPT_MEM,
	OPT_JSON,
	OPT_JSON_FILE,
	OPT_CSV,
	OPT_QUIET,
	OPT_IDLE_MS,
	OPT_THREADS,
	OPT_GBITS,
	OPT_VERSION,
	OPT_NO_MEANING,
};

/* perftest's flags that have no meaning for gdak-perf: refused by name, with
 * the reason, instead of "unknown option" (or worse, another meaning). */
static const struct {
	char sopt;
	const char *lopt, *why;
} no_meaning[] = {
	{ 'x', "gid-index", "the UDP address comes from the device string (-d emu:udp:ADDR)" },
	{ 'i', "ib-port", "a gdak device has one port" },
	{ 'R', "rdma_cm", "connections are set up by gdak's TCP bootstrap (or MPI)" },
	{ 'z', "comm_rdma_cm", "connections are set up by gdak's TCP bootstrap (or MPI)" },
	{ 'e', "events", "device code polls its CQs; there are no completion events" },
	{ 'I', "inline_size", "device code chooses inline per call (gdak_dev_put_inline)" },
	{ 'c', "connection", "gdak's QPs are RC only" },
	{ 'b', "bidirectional", "one direction per run here (run two gdak-perf for both)" },
	{ 'S', "sl", "the NIC model has no service levels" },
	{ 'T', "tos", "the NIC model has no traffic classes" },
	{ 'u', "qp-timeout", "the NIC model's retransmission timer is not set per run" },
	{ 0, "run_infinitely", "every run ends and verifies its data (use -D S for long runs)" },
};
#define NO_MEANING_N (sizeof(no_meaning) / sizeof(no_meaning[0]))

static const struct option long_opts[] = {
	{ "size", required_argument, NULL, 's' },
	{ "size-range", required_argument, NULL, OPT_SIZE_RANGE },
	{ "all", no_argument, NULL, 'a' },
	{ "max-size", required_argument, NULL, 'm' },
	{ "iters", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, 'D' },
	{ "post_list", required_argument, NULL, 'l' },
	{ "cq-mod", required_argument, NULL, 'Q' },
	{ "tx-depth", required_argument, NULL, OPT_SQ },
	{ "report_gbits", no_argument, NULL, OPT_GBITS },
	{ "CPU-freq", no_argument, NULL, 'F' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "rounds", required_argument, NULL, 'r' },
	{ "qps", required_argument, NULL, 'q' },
	{ "idle-qps", required_argument, NULL, OPT_IDLE_QPS },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "wqes-per-db", required_argument, NULL, OPT_WPD },
	{ "signal-every", required_argument, NULL, OPT_SIGNAL },
	{ "sq-depth", required_argument, NULL, OPT_SQ },
	{ "handler", required_argument, NULL, OPT_HANDLER },
	{ "nic-threads", required_argument, NULL, OPT_NIC_THREADS },
	{ "poll", required_argument, NULL, OPT_POLL },
	{ "device", required_argument, NULL, 'd' },
	{ "server", no_argument, NULL, OPT_SERVER },
	{ "port", required_argument, NULL, 'p' },
	{ "cuda", no_argument, NULL, OPT_CUDA },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "ctas", required_argument, NULL, OPT_CTAS },
	{ "no-baseline", no_argument, NULL, OPT_NO_BASE },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "json-file", required_argument, NULL, OPT_JSON_FILE },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "idle-ms", required_argument, NULL, OPT_IDLE_MS },
	{ "help", no_argument, NULL, 'h' },
	/* no_meaning[]: their long names (has_arg: whatever perftest's take) */
	{ "gid-index", required_argument, NULL, OPT_NO_MEANING },
	{ "ib-port", required_argument, NULL, OPT_NO_MEANING },
	{ "rdma_cm", no_argument, NULL, OPT_NO_MEANING },
	{ "comm_rdma_cm", no_argument, NULL, OPT_NO_MEANING },
	{ "events", no_argument, NULL, OPT_NO_MEANING },
	{ "inline_size", required_argument, NULL, OPT_NO_MEANING },
	{ "connection", required_argument, NULL, OPT_NO_MEANING },
	{ "bidirectional", no_argument, NULL, OPT_NO_MEANING },
	{ "sl", required_argument, NULL, OPT_NO_MEANING },
	{ "tos", required_argument, NULL, OPT_NO_MEANING },
	{ "qp-timeout", required_argument, NULL, OPT_NO_MEANING },
	{ "run_infinitely", no_argument, NULL, OPT_NO_MEANING },
	{ NULL, 0, NULL, 0 },
};

/* c: the short option, or 0 with lname the long one. */
static int refuse_no_meaning(int c, const char *lname)
{
	size_t i;

	for (i = 0; i < NO_MEANING_N; i++)
		if (c ? no_meaning[i].sopt == c : !strcmp(no_meaning[i].lopt, lname))
			break;
	if (i == NO_MEANING_N)
		return usage_err("unknown option '%s'", lname ? lname : "?");
	if (no_meaning[i].sopt)
		return usage_err("perftest's -%c (--%s) has no meaning here: %s",
				 no_meaning[i].sopt, no_meaning[i].lopt, no_meaning[i].why);
	return usage_err("perftest's --%s has no meaning here: %s", no_meaning[i].lopt,
			 no_meaning[i].why);
}

static int is_pow2(size_t v) { return v && !(v & (v - 1)); }

/* Everything that depends on more than one option. */
static int check_combination(struct perf_opts *o, int have_size, int have_range, int qps_given,
			     size_t max_size)
{
	if (max_size && !o->all_sizes)
		return usage_err("%s", "-m only bounds -a");
	if (o->all_sizes + have_size + have_range > 1)
		return usage_err("%s", "-s, --size-range and -a exclude each other");
	if (o->test->fixed_size && (have_range || o->all_sizes ||
				    (have_size && o->size_min != (size_t)o->test->fixed_size)))
		return usage_err("%s works on 8-byte operands only; drop -s/-a/--size-range",
				 o->test->name);
	if (o->all_sizes) {
		o->size_min = 1;
		o->size_max = max_size ? max_size : 8u << 20;
	} else if (!have_size && !have_range) {
		o->size_min = o->test->fixed_size ? o->test->fixed_size
			      : o->test->kind == PERF_KIND_BW ? 65536 : 8;
		o->size_max = o->size_min;
	}
	if (o->size_min > o->size_max)
		return usage_err("%s", "size range: MIN is larger than MAX");
	if (o->size_min != o->size_max && (!is_pow2(o->size_min) || !is_pow2(o->size_max)))
		return usage_err("%s", "size range: MIN and MAX must be powers of two");
	if (!is_pow2(o->sq_depth) || o->sq_depth < 2 || o->sq_depth > 32768)
		return usage_err("%s",
				 "the send queue depth (-t / --tx-depth / --sq-depth) must be "
				 "a power of two in 2..32768");
	if (!o->wqes_per_db || o->wqes_per_db > o->sq_depth / 2)
		return usage_err("%s", "--wqes-per-db must be 1..sq-depth/2");
	if (!o->signal_every)
		o->signal_every = o->wqes_per_db;
	if (o->signal_every > o->sq_depth / 2)
		return usage_err("%s", "--signal-every must be 1..sq-depth/2");
	if (!qps_given)
		o->qps = o->threads;
	if (o->qps < o->threads)
		return usage_err("%s",
				 "-q must be at least --threads: every posting thread needs a QP");
	if (o->server && o->peer_addr)
		return usage_err("%s", "--server and SERVER_ADDR exclude each other");
	if (!o->port && !o->server)
		return usage_err("%s", "-p 0 (any free port) is for --server only");
	if (o->json && o->csv)
		return usage_err("%s", "--json and --csv exclude each other");
	if (o->ctas != 1 && !o->cuda)
		return usage_err("%s", "--ctas needs --cuda");
	/* host threads prepare and verify the buffers with loads and stores */
	if (o->mem == GDAK_MEM_GPU && !o->cuda)
		return usage_err(
			"%s",
			"--mem gpu needs a kernel (host threads cannot touch GPU "
			"memory): gdak-perf --cuda runs gdak-perf-cuda, whose data is in GPU memory");
	if (o->duration_ms && o->iters)
		return usage_err("%s", "-D (duration) and -n (iterations) exclude each other");
	if (o->report_gbits && (o->json || o->csv))
		return usage_err("%s", "--report_gbits is for the table; --json and --csv carry "
				       "bytes per second");
	return 0;
}

int perf_parse_args(int argc, char **argv, struct perf_opts *o)
{
	int c, li = -1, have_size = 0, have_range = 0, qps_given = 0;
	size_t max_size = 0;
	unsigned long long v;
	char *colon;

	memset(o, 0, sizeof(*o));
	for (c = 1; c < argc; c++) {
		size_t len = strlen(o->cmdline);

		snprintf(o->cmdline + len, sizeof(o->cmdline) - len, "%s%s", c > 1 ? " " : "",
			 argv[c]);
	}
	o->qps = 1;
	o->threads = 1;
	o->wqes_per_db = 16;
	o->sq_depth = 256;
	o->rounds = 5;
	o->port = 18515;
	o->ctas = 1;
	o->handler = GDAK_DEV_DB_DB;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":s:am:n:r:q:t:d:p:hD:l:Q:Fx:i:RzeI:c:bS:T:u:",
				long_opts, &li)) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, &o->size_min))
				return usage_err("bad size '%s' (e.g. 8, 4K, 1M; at most 1G)", optarg);
			o->size_max = o->size_min;
			have_size = 1;
			break;
		case OPT_SIZE_RANGE: {
			char buf[64];

			snprintf(buf, sizeof(buf), "%s", optarg);
			colon = strchr(buf, ':');
			if (!colon)
				return usage_err("--size-range wants MIN:MAX, got '%s'", optarg);
			*colon = '\0';
			if (parse_size(buf, &o->size_min) || parse_size(colon + 1, &o->size_max))
				return usage_err("bad --size-range '%s'", optarg);
			have_range = 1;
			break;
		}
		case 'a':
			o->all_sizes = 1;
			break;
		case 'm':
			if (parse_size(optarg, &max_size))
				return usage_err("bad max size '%s'", optarg);
			break;
		case 'n':
			if (parse_uint(optarg, 1ull << 40, &v) || !v)
				return usage_err("bad iteration count '%s'", optarg);
			o->iters = v;
			break;
		case 'r':
			if (parse_uint(optarg, 1000, &v) || !v)
				return usage_err("bad round count '%s' (1..1000)", optarg);
			o->rounds = (unsigned)v;
			break;
		case 'q':
			if (parse_uint(optarg, 65536, &v) || !v)
				return usage_err("bad QP count '%s' (1..65536)", optarg);
			o->qps = (unsigned)v;
			qps_given = 1;
			break;
		case OPT_IDLE_QPS:
			if (parse_uint(optarg, 65536, &v))
				return usage_err("bad idle QP count '%s' (0..65536)", optarg);
			o->idle_qps = (unsigned)v;
			break;
		case OPT_THREADS:
			if (parse_uint(optarg, 256, &v) || !v)
				return usage_err("bad thread count '%s' (1..256)", optarg);
			o->threads = (unsigned)v;
			break;
		case 'D':
			if (parse_uint(optarg, 3600, &v) || !v)
				return usage_err("bad duration '%s' (1..3600 seconds)", optarg);
			o->duration_ms = (unsigned)v * 1000;
			break;
		case 'F':
			break;
		case OPT_GBITS:
			o->report_gbits = 1;
			break;
		case OPT_VERSION:
			printf("gdak-perf %s\n", GDAK_VERSION_STRING);
			return 1;
		case OPT_NO_MEANING:
			return refuse_no_meaning(0, li >= 0 ? long_opts[li].name : NULL);
		case 'c':
			if (!strcasecmp(optarg, "RC"))
				break; /* what every gdak QP is */
			return refuse_no_meaning(c, NULL);
		case 'x':
		case 'i':
		case 'R':
		case 'z':
		case 'e':
		case 'I':
		case 'b':
		case 'S':
		case 'T':
		case 'u':
			return refuse_no_meaning(c, NULL);
		case 'l':
		case OPT_WPD:
			if (parse_uint(optarg, 32768, &v) || !v)
				return usage_err("bad --wqes-per-db '%s'", optarg);
			o->wqes_per_db = (unsigned)v;
			break;
		case 'Q':
		case OPT_SIGNAL:
			if (parse_uint(optarg, 32768, &v) || !v)
				return usage_err("bad --signal-every '%s'", optarg);
			o->signal_every = (unsigned)v;
			break;
		case 't':
		case OPT_SQ:
			if (parse_uint(optarg, 32768, &v))
				return usage_err("bad send queue depth '%s' (-t / --tx-depth / "
						 "--sq-depth: a power of two, 2..32768)",
						 optarg);
			o->sq_depth = (unsigned)v;
			break;
		case OPT_HANDLER:
			if (!strcasecmp(optarg, "db"))
				o->handler = GDAK_DEV_DB_DB;
			else if (!strcasecmp(optarg, "bf"))
				o->handler = GDAK_DEV_DB_BF;
			else if (!strcasecmp(optarg, "cpu_proxy") || !strcasecmp(optarg, "proxy"))
				o->handler = GDAK_DEV_DB_CPU_PROXY;
			else
				return usage_err("unknown --handler '%s' (db, bf, cpu_proxy)", optarg);
			break;
		case OPT_NIC_THREADS:
			if (parse_uint(optarg, 64, &v) || !v)
				return usage_err("bad --nic-threads '%s' (1..64)", optarg);
			o->nic_threads = (int)v;
			break;
		case OPT_POLL:
			if (!strcasecmp(optarg, "spin"))
				o->poll = PERF_POLL_SPIN;
			else if (!strcasecmp(optarg, "adaptive"))
				o->poll = PERF_POLL_ADAPTIVE;
			else
				return usage_err("unknown --poll '%s' (spin, adaptive)", optarg);
			break;
		case 'd':
			o->device = optarg;
			break;
		case OPT_SERVER:
			o->server = 1;
			break;
		case 'p':
			if (parse_uint(optarg, 65535, &v))
				return usage_err("bad port '%s'", optarg);
			o->port = (uint16_t)v;
			o->port_given = 1;
			break;
		case OPT_CUDA:
			o->cuda = 1;
			break;
		case OPT_MEM:
			if (!strcasecmp(optarg, "host"))
				o->mem = GDAK_MEM_HOST;
			else if (!strcasecmp(optarg, "mapped"))
				o->mem = GDAK_MEM_HOST_MAPPED;
			else if (!strcasecmp(optarg, "gpu"))
				o->mem = GDAK_MEM_GPU;
			else
				return usage_err("unknown --mem '%s' (host, mapped, gpu)", optarg);
			break;
		case OPT_CTAS:
			if (parse_uint(optarg, 4096, &v) || !v)
				return usage_err("bad --ctas '%s' (1..4096)", optarg);
			o->ctas = (unsigned)v;
			break;
		case OPT_NO_BASE:
			o->no_baseline = 1;
			break;
		case OPT_TRACE:
			o->trace = optarg;
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_JSON_FILE:
			o->json_file = optarg;
			break;
		case OPT_CSV:
			o->csv = 1;
			break;
		case OPT_QUIET:
			o->quiet = 1;
			break;
		case OPT_IDLE_MS:
			if (parse_uint(optarg, 600000, &v) || !v)
				return usage_err("bad --idle-ms '%s' (1..600000)", optarg);
			o->idle_ms = (unsigned)v;
			break;
		case 'h':
			perf_usage(stdout);
			return 1;
		case ':':
			return usage_err("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_err("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_err("%s", "no TEST given");
	o->test = perf_test_by_name(argv[optind]);
	if (!o->test)
		return usage_err("unknown test '%s'", argv[optind]);
	if (optind + 1 < argc)
		o->peer_addr = argv[optind + 1];
	if (optind + 2 < argc)
		return usage_err("unexpected argument '%s'", argv[optind + 2]);
	return check_combination(o, have_size, have_range, qps_given, max_size);
}
