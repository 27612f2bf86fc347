/* SPDX-License-Identifier: MIT */
/*
 * perf_run.c - the measurement schedule: for every message size, R rounds,
 * each round running the baselines and then the test back to back, so a
 * noisy machine (2 shared cores here) disturbs both alike; the medians of
 * the rounds are reported and the ratios are taken between medians.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

uint64_t perf_default_iters(const struct perf_opts *o, size_t size)
{
	uint64_t n;

	if (o->iters)
		return o->iters;
	if (o->test->kind == PERF_KIND_LAT)
		return 10000;
	/* about 128 MiB of payload per round, 32..1M operations: a few tens
	 * of milliseconds per round at memcpy speed */
	n = (128ull << 20) / size;
	if (n < 32)
		n = 32;
	if (n > 1000000)
		n = 1000000;
	return n;
}

static double safe_ratio(double a, double b) { return b > 0 ? a / b : 0; }

/* -D: iterations per round that make the R rounds of this size last about
 * o->duration_ms, from one short run of the test itself (its data is
 * verified like any round's). */
static int calibrate(const struct perf_opts *o, void *env, perf_test_fn fn, size_t size,
		     uint64_t *iters)
{
	uint64_t n = o->test->kind == PERF_KIND_LAT ? 1000 : 2000, t0, dt, want;
	struct perf_result one = { 0 };
	double *lat = o->test->kind == PERF_KIND_LAT ? malloc(n * sizeof(double)) : NULL;
	int ret;

	if (o->test->kind == PERF_KIND_LAT && !lat)
		return -ENOMEM;
	t0 = perf_now_ns();
	ret = fn(env, o, size, n, &one, lat);
	dt = perf_now_ns() - t0;
	free(lat);
	if (ret)
		return ret;
	want = (uint64_t)o->duration_ms * 1000000ull / o->rounds;
	*iters = dt ? (uint64_t)((double)n * (double)want / (double)dt) : n;
	if (*iters < 1)
		*iters = 1;
	if (o->test->kind == PERF_KIND_LAT && *iters > (64u << 20) / o->rounds)
		*iters = (64u << 20) / o->rounds;
	return 0;
}

/* The baselines that go with one round of a bandwidth test. */
static int base_bw_round(const struct perf_opts *o, size_t size, uint64_t iters, double *exec,
			 double *memc)
{
	int ret = perf_exec_run(size, iters, o->wqes_per_db, o->sq_depth, exec);

	if (!ret)
		ret = perf_memcpy_run(size, iters, memc);
	return ret;
}

static int run_baseline_test(const struct perf_opts *o, size_t size, uint64_t iters,
			     double *e1, double *e16, double *memc)
{
	int ret = perf_exec_run(size, iters, 1, o->sq_depth, e1);

	if (!ret)
		ret = perf_exec_run(size, iters, 16, o->sq_depth, e16);
	if (!ret)
		ret = perf_memcpy_run(size, iters, memc);
	return ret;
}

static int run_one_size(const struct perf_opts *o, void *env, perf_test_fn fn, size_t size,
			struct perf_result *r, unsigned idx, unsigned nsizes)
{
	unsigned R = o->rounds, k;
	uint64_t iters = perf_default_iters(o, size);
	double *rate = calloc(R, sizeof(double)), *bw = calloc(R, sizeof(double));
	double *ex = calloc(R, sizeof(double)), *ex16 = calloc(R, sizeof(double));
	double *mc = calloc(R, sizeof(double)), *pp50 = calloc(R, sizeof(double));
	double *pp99 = calloc(R, sizeof(double)), *lat = NULL, *rcr = calloc(R, sizeof(double));
	int lat_kind = o->test->kind == PERF_KIND_LAT;
	int ret = 0;

	if (o->duration_ms && o->test->kind != PERF_KIND_BASE) {
		ret = calibrate(o, env, fn, size, &iters);
		if (ret)
			goto out;
	}
	if (lat_kind && iters > (64u << 20) / R) {
		fprintf(stderr, "gdak-perf: %llu latency samples per round is too many\n",
			(unsigned long long)iters);
		ret = -E2BIG;
		goto out;
	}
	if (lat_kind)
		lat = malloc(iters * R * sizeof(double));
	if (!rate || !bw || !ex || !ex16 || !mc || !pp50 || !pp99 || !rcr || (lat_kind && !lat)) {
		ret = -ENOMEM;
		goto out;
	}
	memset(r, 0, sizeof(*r));
	r->bytes = size;
	r->iters = iters;
	r->rounds = R;
	r->qps = o->qps;
	r->exec_per_db = o->wqes_per_db;
	for (k = 0; k < R; k++) {
		struct perf_result one = {0};

		perf_progress(o, "%s: size %zu (%u/%u), round %u/%u", o->test->name, size, idx + 1,
			      nsizes, k + 1, R);
		if (o->test->kind == PERF_KIND_BASE) {
			ret = run_baseline_test(o, size, iters, &ex[k], &ex16[k], &mc[k]);
			if (!ret && idx == 0)
				ret = perf_pingpong_run(10000, &pp50[k], &pp99[k]);
			if (ret)
				goto out;
			continue;
		}
		if (!o->no_baseline) {
			ret = lat_kind ? perf_pingpong_run(iters, &pp50[k], &pp99[k])
				       : base_bw_round(o, size, iters, &ex[k], &mc[k]);
			if (ret)
				goto out;
		}
		ret = fn(env, o, size, iters, &one, lat_kind ? lat + (size_t)k * iters : NULL);
		if (ret)
			goto out;
		rate[k] = one.msg_rate;
		bw[k] = one.bw;
		rcr[k] = one.rc_rate;
		if (one.msg_rate > r->peak_msg_rate)
			r->peak_msg_rate = one.msg_rate;
	}
	r->verified = 1;
	r->msg_rate = perf_median(rate, R);
	r->bw = perf_median(bw, R);
	r->exec_rate = perf_median(ex, R);
	r->memcpy_bw = perf_median(mc, R);
	r->pingpong_p50 = perf_median(pp50, R);
	r->pingpong_p99 = perf_median(pp99, R);
	if (o->test->kind == PERF_KIND_BASE) {
		r->exec_rate_1 = r->exec_rate;
		r->exec_rate_16 = perf_median(ex16, R);
		r->exec_rate = 0;
		r->exec_per_db = 0;
		r->memcpy_ratio = 0;
	}
	if (lat_kind) {
		perf_lat_summary(lat, iters * R, r);
		r->pingpong_ratio = safe_ratio(r->lat_p50, r->pingpong_p50);
	} else {
		r->exec_ratio = safe_ratio(r->msg_rate, r->exec_rate);
		r->memcpy_ratio = safe_ratio(r->bw, r->memcpy_bw);
		r->rc_rate = perf_median(rcr, R);
		r->rc_ratio = safe_ratio(r->msg_rate, r->rc_rate);
	}
	r->rss_kib = perf_rss_kib();
out:
	free(rcr);
	free(rate);
	free(bw);
	free(ex);
	free(ex16);
	free(mc);
	free(pp50);
	free(pp99);
	free(lat);
	return ret;
}

int perf_run_sizes(const struct perf_opts *o, void *env, perf_test_fn fn,
		   struct perf_result **out, size_t *nout)
{
	unsigned nsizes = 0, i = 0;
	struct perf_result *res;
	size_t s;
	int ret = 0;

	for (s = o->size_min; s <= o->size_max; s *= 2)
		nsizes++;
	res = calloc(nsizes, sizeof(*res));
	if (!res)
		return -ENOMEM;
	for (s = o->size_min; s <= o->size_max; s *= 2, i++) {
		ret = run_one_size(o, env, fn, s, &res[i], i, nsizes);
		if (ret)
			break;
	}
	perf_progress_done(o);
	*out = res;
	*nout = i;
	return ret;
}
