/* SPDX-License-Identifier: MIT */
/*
 * perf_main.c - gdak-perf: perftest-like benchmarks of gdak's device API
 * with their baselines measured in the same run.  See --help and
 * docs/BENCHMARKS.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <gdak/nic.h>

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
	struct timespec ts = {(time_t)(o->idle_ms / 1000), (long)(o->idle_ms % 1000) * 1000000L};
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

int main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_result *res = NULL;
	struct perf_env *env = NULL;
	perf_test_fn fn = perf_emu_test;
	size_t n = 0;
	int ret;

	ret = perf_parse_args(argc, argv, &o);
	if (ret)
		return ret == 1 ? PERF_EXIT_OK : ret;
	if (o.trace && setenv("GDAK_TRACE", o.trace, 1)) {
		fprintf(stderr, "gdak-perf: cannot set GDAK_TRACE\n");
		return PERF_EXIT_FAIL;
	}
	if (o.cuda) {
		const char *why = "unknown reason";

		if (!perf_cuda_available(&why)) {
			fprintf(stderr, "gdak-perf: --cuda is not available: %s\n", why);
			return PERF_EXIT_FAIL;
		}
		fn = perf_cuda_test;
	}
	if (o.test->kind == PERF_KIND_BASE && (o.server || o.peer_addr)) {
		fprintf(stderr, "gdak-perf: baseline runs in one process "
				"(no --server / SERVER_ADDR)\n");
		return PERF_EXIT_USAGE;
	}
	if (o.test->kind != PERF_KIND_BASE) {
		ret = perf_env_open(&o, &env);
		if (ret) {
			fprintf(stderr, "gdak-perf: cannot set up %s on device '%s': %s\n",
				o.test->name, o.device ? o.device : "(default)", gdak_strerror(ret));
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

		if (!jf || (perf_print_json(jf, &o, res, n), fclose(jf))) {
			fprintf(stderr, "gdak-perf: cannot write %s\n", o.json_file);
			ret = ret ? ret : -EIO;
		}
	}
	perf_env_close(env);
	/* the NIC model keeps a trace open across contexts: close it so the
	 * file is complete */
	if (env && (o.trace || getenv("GDAK_TRACE")))
		gdak_nic_set_trace(NULL);
	free(res);
	if (ret || perf_verify_failures()) {
		fprintf(stderr, "gdak-perf: %s FAILED: %s; no numbers from the failed size\n",
			o.test->name, perf_verify_failures() ? "data verification failed"
							    : gdak_strerror(ret));
		return PERF_EXIT_FAIL;
	}
	return PERF_EXIT_OK;
}
