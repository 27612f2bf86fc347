/* SPDX-License-Identifier: MIT */
/*
 * perf_main.c - gdak-perf: perftest-like benchmarks of gdak's device API
 * with their baselines measured in the same run.  See --help and
 * docs/BENCHMARKS.md.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <gdak/nic.h>

#include <gdak/env.h>

#include "perf.h"

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

/* --idle-ms: the test is over, its QPs stay connected; this thread sleeps,
 * so the process's CPU time is what the NIC threads spend on idle QPs. */
static void measure_idle(const struct perf_opts *o)
{
	struct timespec ts = { (time_t)(o->idle_ms / 1000), (long)(o->idle_ms % 1000) * 1000000L };
	uint64_t c0 = cpu_ns(), t0 = perf_now_ns(), c1, t1;

	while (nanosleep(&ts, &ts))
		;
	c1 = cpu_ns();
	t1 = perf_now_ns();
	printf(" idle NIC: %.2f%% of a core over %u ms (poll %s, %d NIC thread%s, %u QPs open)\n",
	       100.0 * (double)(c1 - c0) / (double)(t1 - t0), o->idle_ms,
	       o->poll_eff ? o->poll_eff : "n/a", o->nic_threads_eff,
	       o->nic_threads_eff == 1 ? "" : "s", perf_qps_open());
}

/* --cuda: the kernel benchmarks live in gdak-perf-cuda (its baselines are
 * CUDA's own); run it with this command line translated, refusing what it
 * cannot do rather than ignoring it. */
static int run_cuda(const struct perf_opts *o)
{
	char self[PATH_MAX], n[32], s[32], ctas[16], nt[16];
	const char *argv[16];
	int k = 0;
	ssize_t len;
	const char *bad = NULL;

	if (o->test->id != PERF_WRITE_LAT && o->test->id != PERF_WRITE_BW)
		bad = "tests other than write_lat and write_bw";
	else if (o->size_min != o->size_max || (o->test->id == PERF_WRITE_LAT && o->size_min != 8))
		bad = o->test->id == PERF_WRITE_LAT ? "-s other than 8 for write_lat"
						    : "-a / --size-range";
	else if (o->json || o->csv || o->report_gbits)
		bad = "--json / --csv / --report_gbits (--json-file PATH is passed on)";
	else if (o->server || o->peer_addr || o->mpi)
		bad = "server/client runs";
	else if (o->qps != o->threads || o->threads != 1 || o->idle_qps)
		bad = "-q / --threads / --idle-qps (one QP per CTA: --ctas)";
	else if (o->duration_ms || o->poll != PERF_POLL_DEFAULT || o->handler != GDAK_DEV_DB_DB ||
		 o->mem != GDAK_MEM_HOST || (o->device && strcmp(o->device, "emu")))
		bad = "-D / --poll / --handler / --mem / -d other than emu";
	if (bad) {
		fprintf(stderr, "gdak-perf: --cuda: gdak-perf-cuda does not take %s\n", bad);
		return PERF_EXIT_USAGE;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 32);
	if (len > 0) {
		char *slash;

		self[len] = '\0';
		slash = strrchr(self, '/');
		snprintf(slash ? slash + 1 : self, 32, "gdak-perf-cuda");
	}
	argv[k++] = "gdak-perf-cuda";
	argv[k++] = "-t";
	argv[k++] = o->test->id == PERF_WRITE_LAT ? "lat" : "bw";
	if (o->iters) {
		snprintf(n, sizeof(n), "%llu", (unsigned long long)o->iters);
		argv[k++] = o->test->id == PERF_WRITE_LAT ? "--lat-iters" : "--bw-iters";
		argv[k++] = n;
	}
	if (o->test->id == PERF_WRITE_BW) {
		snprintf(s, sizeof(s), "%zu", o->size_min);
		snprintf(ctas, sizeof(ctas), "%u", o->ctas);
		argv[k++] = "--bw-size";
		argv[k++] = s;
		argv[k++] = "--ctas";
		argv[k++] = ctas;
		if (o->nic_threads) {
			snprintf(nt, sizeof(nt), "%d", o->nic_threads);
			argv[k++] = "--nic-threads";
			argv[k++] = nt;
		}
	}
	if (o->json_file) {
		argv[k++] = "--json";
		argv[k++] = o->json_file;
	}
	argv[k] = NULL;
	fflush(NULL);
	if (len > 0 && !access(self, X_OK))
		execv(self, (char *const *)argv);
	execvp("gdak-perf-cuda", (char *const *)argv);
	fprintf(stderr,
		"gdak-perf: --cuda runs gdak-perf-cuda, which is not next to gdak-perf "
		"nor on PATH (a build without CUDA has none): %s\n",
		strerror(errno));
	return PERF_EXIT_FAIL;
}

int main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_result *res = NULL;
	struct perf_env *env = NULL;
	perf_test_fn fn = perf_emu_test;
	size_t n = 0;
	int ret, out_failed = 0;

	ret = perf_parse_args(argc, argv, &o);
	if (ret)
		return ret == 1 ? PERF_EXIT_OK : ret;
	if (perf_mpi_launched()) {
		ret = perf_mpi_init(&argc, &argv, &o);
		if (ret)
			return ret;
	}
	if (o.trace && setenv("GDAK_TRACE", o.trace, 1)) {
		fprintf(stderr, "gdak-perf: cannot set GDAK_TRACE\n");
		return PERF_EXIT_FAIL;
	}
	if (o.cuda)
		return run_cuda(&o);
	/* say it rather than measure the scheduler in silence */
	if (o.threads > 1 && o.threads >= (unsigned)sysconf(_SC_NPROCESSORS_ONLN) && !o.quiet)
		fprintf(stderr,
			"gdak-perf: note: %u posting threads (--threads) and the NIC threads "
			"on %ld CPUs: they take turns, and the numbers measure that\n",
			o.threads, sysconf(_SC_NPROCESSORS_ONLN));
	if (o.test->kind == PERF_KIND_BASE && (o.server || o.peer_addr)) {
		fprintf(stderr, "gdak-perf: baseline runs in one process "
				"(no --server / SERVER_ADDR)\n");
		return PERF_EXIT_USAGE;
	}
	if (o.test->kind != PERF_KIND_BASE) {
		ret = perf_env_open(&o, &env);
		if (ret) {
			perf_mpi_unblock(&o);
			/* the name the user gave, or where the default came from */
			fprintf(stderr, "gdak-perf: cannot set up %s on device '%s'%s: %s\n",
				o.test->name, o.device ? o.device : gdak_env_text("GDAK_DEVICE"),
				o.device		      ? ""
				: gdak_env_raw("GDAK_DEVICE") ? " ($GDAK_DEVICE)"
							      : " (the default)",
				gdak_strerror(ret));
			return PERF_EXIT_FAIL;
		}
	}
	if (env && !strcmp(gdak_ctx_backend(env->ctx), "emu")) {
		o.nic_threads_eff = (int)gdak_nic_get_threads();
		o.poll_eff = gdak_nic_get_poll() == GDAK_NIC_POLL_SPIN ? "spin" : "adaptive";
	}
	if (o.server) {
		/* the client measures; the server holds the targets and checks them */
		ret = perf_net_serve(env, &o);
		perf_env_close(env);
		return ret ? PERF_EXIT_FAIL : PERF_EXIT_OK;
	}
	ret = perf_run_sizes(&o, env, fn, &res, &n);
	if (o.json)
		perf_print_json(stdout, &o, res, n);
	else if (o.csv)
		perf_print_csv(stdout, &o, res, n);
	else
		perf_print(stdout, &o, res, n);
	if (o.idle_ms && !ret)
		measure_idle(&o);
	fflush(stdout);
	if (o.json_file) {
		FILE *jf = fopen(o.json_file, "w");
		int e = jf ? 0 : errno;

		if (jf) {
			perf_print_json(jf, &o, res, n);
			if (fflush(jf) || ferror(jf))
				e = errno ? errno : EIO;
			if (fclose(jf) && !e)
				e = errno;
		}
		if (e) {
			/* the file's own error, not a completion's */
			fprintf(stderr, "gdak-perf: cannot write %s: %s\n", o.json_file,
				strerror(e));
			out_failed = 1;
		}
	}
	perf_env_close(env);
	/* the NIC model keeps a trace open across contexts: close it so the
	 * file is complete */
	if (env && (o.trace || gdak_env_raw("GDAK_TRACE")))
		gdak_nic_set_trace(NULL);
	free(res);
	if (ret || perf_verify_failures()) {
		fprintf(stderr, "gdak-perf: %s FAILED: %s; no numbers from the failed size\n",
			o.test->name, perf_verify_failures() ? "data verification failed"
							    : gdak_strerror(ret));
		return PERF_EXIT_FAIL;
	}
	if (out_failed) {
		fprintf(stderr, "gdak-perf: %s: the results could not be written where asked\n",
			o.test->name);
		return PERF_EXIT_FAIL;
	}
	return PERF_EXIT_OK;
}
