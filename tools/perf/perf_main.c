/* SPDX-License-Identifier: MIT */
/*
 * perf_main.c - gdak-perf: perftest-like benchmarks of gdak's device API
 * with their baselines measured in the same run.  See --help and
 * docs/BENCHMARKS.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/nic.h>

#include "perf.h"

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
			fprintf(stderr, "gdak-perf: cannot write %s: %s\n", o.json_file, strerror(e));
			out_failed = 1;
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
	if (out_failed) {
		fprintf(stderr, "gdak-perf: %s: the results could not be written where asked\n",
			o.test->name);
		return PERF_EXIT_FAIL;
	}
	return PERF_EXIT_OK;
}
