/* SPDX-License-Identifier: MIT */
/* perf_emu.c - the tests through the real stack: gdak_open, QPs, and host
 * threads driving them with the device API while the NIC model executes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

struct perf_env {
	struct gdak_ctx *ctx;
};

/* NIC-model knobs go through the environment variables gdak/nic.h documents,
 * read at the first gdak_open(). */
static int set_nic_env(const struct perf_opts *o)
{
	char buf[16];

	if (o->nic_threads) {
		snprintf(buf, sizeof(buf), "%d", o->nic_threads);
		if (setenv("GDAK_NIC_THREADS", buf, 1))
			return -errno;
	}
	if (o->poll == PERF_POLL_SPIN || (o->poll == PERF_POLL_DEFAULT &&
					  o->test->kind == PERF_KIND_LAT)) {
		if (setenv("GDAK_POLL", "spin", 1))
			return -errno;
	} else if (o->poll == PERF_POLL_ADAPTIVE) {
		if (setenv("GDAK_POLL", "adaptive", 1))
			return -errno;
	}
	return 0;
}

int perf_env_open(const struct perf_opts *o, struct perf_env **envp)
{
	struct perf_env *env = calloc(1, sizeof(*env));
	int ret;

	if (!env)
		return -ENOMEM;
	ret = set_nic_env(o);
	if (!ret)
		ret = gdak_open(o->device, &env->ctx);
	if (ret) {
		free(env);
		return ret;
	}
	*envp = env;
	return 0;
}

void perf_env_close(struct perf_env *env)
{
	if (!env)
		return;
	gdak_close(env->ctx);
	free(env);
}

int perf_emu_test(void *envp, const struct perf_opts *o, size_t size, uint64_t iters,
		  struct perf_result *round, double *lat_ns)
{
	return -ENOSYS;
}
