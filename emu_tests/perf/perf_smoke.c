/* SPDX-License-Identifier: MIT */
/*
 * perf_smoke.c - gdak.tools.perf_smoke: gdak-perf runs, its --json parses and
 * carries verified numbers, bad command lines exit 2 with a message naming
 * the problem, and a damaged destination makes it exit 1 with no number.
 * Correctness only: tiny iteration counts, no timing asserted.
 *
 * argv[1]: the gdak-perf binary.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdak_case.h"
#include "gdak_test.h"

static const char *perf_bin;

struct run {
	int status;		/* exit code, or -1 */
	char out[65536];
	char err[16384];
};

static void slurp(int fd, char *buf, size_t cap)
{
	ssize_t n;
	size_t len = 0;

	lseek(fd, 0, SEEK_SET);
	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
}

/* Run gdak-perf with args (NULL-terminated), stdout/stderr into r. */
static void run_perf(struct run *r, const char *env, const char *const *args)
{
	char out_path[] = "/tmp/gdak_perf_smoke_outXXXXXX";
	char err_path[] = "/tmp/gdak_perf_smoke_errXXXXXX";
	int ofd = mkstemp(out_path), efd = mkstemp(err_path), st;
	const char *argv[32];
	pid_t pid;
	size_t i;

	REQUIRE(ofd >= 0 && efd >= 0);
	unlink(out_path);
	unlink(err_path);
	argv[0] = perf_bin;
	for (i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(ofd, 1);
		dup2(efd, 2);
		if (env)
			putenv((char *)env);
		execv(perf_bin, (char *const *)argv);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	slurp(ofd, r->out, sizeof(r->out));
	slurp(efd, r->err, sizeof(r->err));
	close(ofd);
	close(efd);
}

/* Braces and brackets balance outside strings, and the text is one object. */
static int json_balanced(const char *s)
{
	int depth = 0, in_str = 0, seen = 0;

	for (; *s; s++) {
		if (in_str) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == '"')
				in_str = 0;
			continue;
		}
		if (*s == '"')
			in_str = 1;
		else if (*s == '{' || *s == '[')
			depth++, seen = 1;
		else if (*s == '}' || *s == ']')
			if (--depth < 0)
				return 0;
	}
	return seen && depth == 0 && !in_str;
}

/* The number after "key": in the n-th (0-based) occurrence; -1 if missing or null. */
static double json_num(const char *s, const char *key, int nth)
{
	char pat[64];
	const char *p = s;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	while ((p = strstr(p, pat)) && nth--)
		p += strlen(pat);
	if (!p)
		return -1;
	p += strlen(pat);
	if (!strncmp(p, "null", 4))
		return -1;
	return strtod(p, NULL);
}

static void test_baseline_json(void)
{
	static struct run r;
	const char *args[] = {"--json", "--quiet", "--size-range", "8:16", "-n", "2000", "-r",
			      "2", "baseline", NULL};

	run_perf(&r, NULL, args);
	CHECK_EQ(r.status, 0);
	CHECK(json_balanced(r.out));
	CHECK(strstr(r.out, "\"tool\": \"gdak-perf\"") != NULL);
	CHECK(strstr(r.out, "\"test\": \"baseline\"") != NULL);
	CHECK(strstr(r.out, "\"args\": \"--json --quiet --size-range 8:16 -n 2000 -r 2 "
			    "baseline\"") != NULL);
	CHECK_EQ(gdak_test_count(r.out, "\"verified\": true"), 2);
	CHECK(json_num(r.out, "bytes", 0) == 8);
	CHECK(json_num(r.out, "bytes", 1) == 16);
	CHECK(json_num(r.out, "iters", 0) == 2000);
	CHECK(json_num(r.out, "exec_rate_1", 0) > 0);
	CHECK(json_num(r.out, "exec_rate_16", 1) > 0);
	CHECK(json_num(r.out, "memcpy_bw", 0) > 0);
	CHECK(json_num(r.out, "pingpong_p50_ns", 0) > 0);
	CHECK(json_num(r.out, "nproc", 0) >= 1);
	if (r.status)
		fprintf(stderr, "stderr was:\n%s\n", r.err);
}

static void test_table_and_csv(void)
{
	static struct run r;
	const char *table[] = {"--quiet", "-s", "64", "-n", "500", "-r", "1", "baseline", NULL};
	const char *csv[] = {"--csv", "-s", "64", "-n", "500", "-r", "1", "baseline", NULL};

	run_perf(&r, NULL, table);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "exec 16/db[Mpps]") != NULL);
	CHECK(strstr(r.out, "data verified: yes") != NULL);
	run_perf(&r, NULL, csv);
	CHECK_EQ(r.status, 0);
	CHECK(!strncmp(r.out, "test,device,bytes,", 18));
	CHECK(strstr(r.out, "\nbaseline,") != NULL);
	CHECK_EQ(gdak_test_count(r.out, "\n"), 2);
}

/* A damaged destination must fail the run and print no number. */
static void test_verification_catches_damage(void)
{
	static struct run r;
	const char *args[] = {"--json", "--quiet", "-s", "8", "-n", "1000", "-r", "1", "baseline",
			      NULL};

	run_perf(&r, "GDAK_PERF_TEST_CORRUPT=1", args);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "VERIFY FAILED") != NULL);
	CHECK(strstr(r.out, "\"verified\": true") == NULL);
	CHECK(json_num(r.out, "exec_rate_1", 0) < 0);
}

static void bad_cli(const char *a0, const char *a1, const char *a2, const char *expect)
{
	static struct run r;
	const char *args[] = {a0, a1, a2, NULL};

	run_perf(&r, NULL, args);
	CHECK_EQ(r.status, 2);
	if (!strstr(r.err, expect))
		fprintf(stderr, "expected '%s' in: %s\n", expect, r.err);
	CHECK(strstr(r.err, expect) != NULL);
	CHECK_EQ(r.out[0], 0);
}

static void test_bad_command_lines(void)
{
	static struct run r;
	const char *help[] = {"--help", NULL};

	bad_cli("--bogus", "write_bw", NULL, "unknown option '--bogus'");
	bad_cli("no_such_test", NULL, NULL, "unknown test 'no_such_test'");
	bad_cli("-s", "0", "write_bw", "bad size '0'");
	bad_cli("-s", "12Q", "write_bw", "bad size '12Q'");
	bad_cli("--handler", "doorbell", "write_bw", "unknown --handler 'doorbell'");
	bad_cli("--poll", "fast", "write_lat", "unknown --poll 'fast'");
	bad_cli("--size-range", "64:8", "write_bw", "MIN is larger than MAX");
	bad_cli("-s", "16", "atomic_rate", "8-byte operands only");
	bad_cli("-n", "-5", "write_bw", "bad iteration count '-5'");
	bad_cli("--wqes-per-db", "4096", "write_bw", "--wqes-per-db must be");
	bad_cli("--mem", "gpu", "write_bw", "--mem gpu needs a kernel");
	bad_cli("--mem", "flash", "write_bw", "unknown --mem 'flash'");
	bad_cli("-p", "0", "write_bw", "-p 0 (any free port) is for --server only");
	/* perftest's flags with no meaning here are refused by name, with why */
	bad_cli("-x", "3", "write_bw", "perftest's -x (--gid-index) has no meaning here: ");
	bad_cli("--ib-port=1", "write_bw", NULL, "perftest's -i (--ib-port) has no meaning here");
	bad_cli("--run_infinitely", "write_bw", NULL, "perftest's --run_infinitely has no meaning");
	bad_cli("-c", "UD", "write_bw", "gdak's QPs are RC only");
	bad_cli("-D", "0", "write_bw", "bad duration '0'");
	bad_cli("-t", "100", "write_bw", "send queue depth (-t / --tx-depth / --sq-depth) must");
	run_perf(&r, NULL, help);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "write_bw") && strstr(r.out, "put_signal_lat"));
	/* the examples --help gives run as shown */
	CHECK(strstr(r.out, "plot_bench.py bw.json -o bw.png") != NULL);
	CHECK(strstr(r.out, "-t, --tx-depth N") && strstr(r.out, "--threads N"));
	{
		const char *ver[] = { "--version", NULL };

		run_perf(&r, NULL, ver);
		CHECK_EQ(r.status, 0);
		CHECK(!strncmp(r.out, "gdak-perf 0.", 12));
	}
}

/* perftest's spellings mean what they mean there; #iters is -n in every test. */
static void test_perftest_spellings(void)
{
	static struct run r;
	const char *bw[] = { "--json", "--quiet",	"-r",	    "1", "-s", "8", "-n", "400",
			     "-t",     "128",		"-l",	    "8", "-Q", "4", "-F", "-c",
			     "RC",     "--no-baseline", "write_bw", NULL };
	const char *gb[] = { "--quiet",	      "-r",	  "1",	"-s",
			     "64K",	      "-n",	  "50", "--report_gbits",
			     "--no-baseline", "write_bw", NULL };
	const char *lat[] = { "--quiet",       "-r",	    "3", "-s", "8", "-n", "150",
			      "--no-baseline", "write_lat", NULL };
	const char *latj[] = { "--json", "--quiet",	  "-r",	       "3", "-s", "8", "-n",
			       "150",	 "--no-baseline", "write_lat", NULL };
	const char *dur[] = { "--json", "--quiet",	 "-r",	      "1", "-s", "8", "-D",
			      "1",	"--no-baseline", "write_lat", NULL };
	const char *csv[] = { "--csv", "--quiet",	"-r",	     "1", "-s", "8", "-n",
			      "300",   "--no-baseline", "write_lat", NULL };
	const char *cuda[] = { "--cuda", "read_bw", NULL };
	const char *cudal[] = { "--cuda", "-n", "10", "write_lat", NULL };

	run_perf(&r, NULL, bw);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "\"sq_depth\": 128,") != NULL); /* -t: perftest's tx-depth */
	CHECK(strstr(r.out, "\"threads\": 1,") != NULL);
	CHECK(strstr(r.out, "\"wqes_per_db\": 8,") != NULL);  /* -l: post list */
	CHECK(strstr(r.out, "\"signal_every\": 4,") != NULL); /* -Q: CQ moderation */
	run_perf(&r, NULL, gb);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "BW avg[Gb/s]") != NULL);
	/* latency: #iters is the -n given, not -n x rounds; no batching header */
	run_perf(&r, NULL, lat);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "        8       150 ") != NULL);
	CHECK(strstr(r.out, "WQEs/doorbell") == NULL);
	run_perf(&r, NULL, latj);
	CHECK_EQ(r.status, 0);
	CHECK(json_num(r.out, "iters", 0) == 150);
	CHECK(strstr(r.out, "e+0") == NULL); /* plain decimals */
	run_perf(&r, NULL, dur);
	CHECK_EQ(r.status, 0);
	CHECK(json_num(r.out, "iters", 0) >= 1);
	/* CSV: no %g exponents; not measured is an empty field (JSON: null) */
	run_perf(&r, NULL, csv);
	CHECK_EQ(r.status, 0);
	CHECK(strstr(r.out, "\nwrite_lat,emu,8,300,1,") != NULL);
	CHECK(strstr(r.out, "e+0") == NULL);
	CHECK(strstr(r.out, ",,") != NULL);
	/* --cuda runs gdak-perf-cuda (77 without a GPU, as it does) or says what it
	 * cannot pass on; never "not available" */
	run_perf(&r, NULL, cuda);
	CHECK_EQ(r.status, 2);
	CHECK(strstr(r.err, "gdak-perf-cuda does not take tests other than") != NULL);
	run_perf(&r, NULL, cudal);
	CHECK(r.status == 0 || r.status == 77 ||
	      (r.status == 1 && strstr(r.err, "gdak-perf-cuda")));
	CHECK(strstr(r.err, "not available") == NULL);
	/* no driver at all is not an "insufficient" one */
	if (r.status == 77 && !dlopen("libcuda.so.1", RTLD_NOW))
		CHECK(strstr(r.err, "libcuda.so.1") && !strstr(r.err, "insufficient"));
	/* more posting threads than CPUs: said, not measured in silence */
	if (sysconf(_SC_NPROCESSORS_ONLN) <= 64) {
		run_perf(&r, NULL,
			 (const char *const[]){ "--threads", "64", "-q", "64", "-s", "8", "-n",
						"20", "-r", "1", "--no-baseline", "write_bw",
						NULL });
		CHECK_EQ(r.status, 0);
		CHECK(strstr(r.err, "64 posting threads (--threads)") != NULL);
	}
	/* a device that fails is named as given, even through $GDAK_DEVICE */
	run_perf(&r, "GDAK_DEVICE=no-such-dev",
		 (const char *const[]){ "-n", "10", "write_lat", NULL });
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "device 'no-such-dev' ($GDAK_DEVICE)") != NULL);
	CHECK(strstr(r.err, "(default)") == NULL);
}

/* A test through the NIC model: exit 0, verified, and a positive number. */
static void nic_test(const char *test, const char *const *extra, const char *key)
{
	static struct run r;
	const char *args[24] = {"--json", "--quiet", "-r", "1", "--poll", "adaptive"};
	int n = 6;

	while (*extra)
		args[n++] = *extra++;
	args[n++] = test;
	args[n] = NULL;
	run_perf(&r, NULL, args);
	CHECK_EQ(r.status, 0);
	CHECK(json_balanced(r.out));
	CHECK(gdak_test_count(r.out, "\"verified\": true") >= 1);
	CHECK(strstr(r.out, "\"verified\": false") == NULL);
	CHECK(json_num(r.out, key, 0) > 0);
	if (r.status || json_num(r.out, key, 0) <= 0)
		fprintf(stderr, "%s: stdout:\n%s\nstderr:\n%s\n", test, r.out, r.err);
}

static void test_nic_model(void)
{
	static const char *const small[] = {"-s", "8", "-n", "3000", "--no-baseline", NULL};
	static const char *const lat[] = {"-s", "64", "-n", "200", "--no-baseline", NULL};
	static const char *const wpd1[] = {"-s", "8", "-n", "500", "--wqes-per-db", "1",
					   "--signal-every", "1", "--no-baseline", NULL};
	static const char *const multi[] = { "--size-range",
					     "8:4K",
					     "-n",
					     "300",
					     "-q",
					     "4",
					     "--threads",
					     "2",
					     "--idle-qps",
					     "5",
					     "--signal-every",
					     "32",
					     "--no-baseline",
					     NULL };
	static const char *const big[] = {"-s", "1M", "-n", "4", NULL};
	static const char *const proxy[] = {"-s", "8", "-n", "2000", "--handler", "cpu_proxy",
					    "--no-baseline", NULL};
	static const char *const bf[] = {"-s", "8", "-n", "2000", "--handler", "bf",
					 "--no-baseline", NULL};
	static const char *const bf1[] = {"-s", "8", "-n", "500", "--handler", "bf",
					  "--wqes-per-db", "1", "--no-baseline", NULL};
	static struct run r;
	const char *bad_args[] = {"--json", "--quiet", "-r", "1", "-s", "64", "-n", "100",
				  "--no-baseline", "write_bw", NULL};

	nic_test("write_bw", small, "msg_rate");
	nic_test("write_bw", wpd1, "msg_rate");
	nic_test("write_bw", multi, "msg_rate");
	nic_test("write_bw", big, "memcpy_ratio");
	nic_test("write_bw", proxy, "msg_rate");
	nic_test("write_bw", bf, "msg_rate");	/* batches ring with 8 bytes */
	nic_test("write_bw", bf1, "msg_rate");	/* single WQEs with the whole 64 */
	nic_test("read_bw", small, "bw_bytes_per_s");
	nic_test("read_bw", (const char *const[]){"-s", "64", "-n", "500", "--mem", "mapped",
						  "--no-baseline", NULL}, "msg_rate");
	nic_test("send_bw", small, "msg_rate");
	nic_test("send_bw", multi, "msg_rate");
	nic_test("atomic_rate", (const char *const[]){"-n", "3000", "--no-baseline", NULL},
		 "msg_rate");
	nic_test("dc_put_bw", small, "rc_ratio");
	nic_test("dc_put_bw", multi, "msg_rate");
	nic_test("write_lat", lat, "lat_p50_ns");
	nic_test("read_lat", lat, "lat_p99_ns");
	nic_test("atomic_lat", (const char *const[]){"-n", "200", "--no-baseline", NULL},
		 "lat_p50_ns");
	nic_test("put_signal_lat", lat, "lat_p50_ns");
	/* several sizes: a new, larger local region per size (and a new key) */
	nic_test("put_signal_lat", (const char *const[]){"--size-range", "8:4K", "-n", "50",
							 "--no-baseline", NULL}, "lat_p50_ns");
	nic_test("read_lat", (const char *const[]){"--size-range", "8:4K", "-n", "50",
						   "--no-baseline", NULL}, "lat_p50_ns");

	/* the multi-QP run reports every size it was asked for */
	{
		const char *args[] = {"--json", "--quiet", "-r", "1", "--size-range", "8:32", "-n",
				      "100", "-q", "2", "--no-baseline", "write_bw", NULL};

		run_perf(&r, NULL, args);
		CHECK_EQ(r.status, 0);
		CHECK_EQ(gdak_test_count(r.out, "\"bytes\": "), 3);
	}
	/* damaged data through the real path: exit 1, no verified number */
	run_perf(&r, "GDAK_PERF_TEST_CORRUPT=1", bad_args);
	CHECK_EQ(r.status, 1);
	CHECK(strstr(r.err, "VERIFY FAILED: write_bw") != NULL);
	CHECK(strstr(r.out, "\"verified\": true") == NULL);
	CHECK(json_num(r.out, "msg_rate", 0) < 0);
}

static const struct gdak_case cases[] = {
	GDAK_CASE(test_bad_command_lines), GDAK_CASE(test_baseline_json),
	GDAK_CASE(test_table_and_csv),	   GDAK_CASE(test_verification_catches_damage),
	GDAK_CASE(test_nic_model),	   GDAK_CASE(test_perftest_spellings),
};

int main(int argc, char **argv)
{
	if (argc < 2)
		GDAK_TEST_SKIP("usage: %s GDAK_PERF_BINARY", argv[0]);
	perf_bin = argv[1];
	if (access(perf_bin, X_OK))
		GDAK_TEST_SKIP("%s is not executable: %s", perf_bin, strerror(errno));
	return GDAK_TEST_CASES(argc, argv, cases);
}
