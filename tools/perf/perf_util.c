/* SPDX-License-Identifier: MIT */
/* perf_util.c - clocks, back-off, statistics, RSS, progress and the
 * verification-failure record shared by every gdak-perf test. */
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gdak/dev/ordering.h>
#include <gdak/env.h>

#include "perf.h"

uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void perf_backoff(struct perf_backoff *b)
{
	/* 256 pauses (~a few µs) keep the fast case fast; after that the other
	 * side is probably descheduled, so give it the core. */
	if (b->n < 256) {
		gdak_dev_cpu_relax();
	} else if (b->n < 256 + 1024) {
		sched_yield();
	} else {
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
	b->n++;
}

void perf_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7)) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		/* never 0: a zeroed destination cannot pass for copied data */
		p[i] = (uint8_t)(x >> ((i & 7) * 8)) | 1;
	}
}

void perf_server_fill(struct perf_conn *c, size_t len, int zero, size_t size)
{
	if (zero)
		memset(c->lbuf, 0, len);
	else
		perf_fill(c->lbuf, len, PERF_SEED(size));
}

void perf_prepare(struct perf_conn *c, size_t slots, size_t size, int read, int atomic, size_t tail)
{
	size_t len = slots * size;

	if (!c->rbuf) {
		/* the server prepared its side (perf_net_round) */
		perf_server_fill(c, len, read || atomic, size);
	} else if (read) {
		perf_fill(c->rbuf, len, PERF_SEED(size));
		memset(c->lbuf, 0, len);
	} else if (atomic) {
		memset(c->rbuf, 0, 8);
		memset(c->lbuf, 0, slots * 8);
	} else {
		perf_fill(c->lbuf, len, PERF_SEED(size));
		memset(c->rbuf, 0, len + tail);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double perf_median(double *v, unsigned n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double perf_percentile_sorted(const double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	/* nearest rank, as perftest reports its 99% and 99.9% columns */
	i = (size_t)ceil(p * (double)n);
	if (i > 0)
		i--;
	if (i >= n)
		i = n - 1;
	return v[i];
}

void perf_lat_summary(double *ns, size_t n, struct perf_result *r)
{
	double sum = 0, sq = 0;
	size_t i;

	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_double);
	for (i = 0; i < n; i++)
		sum += ns[i];
	r->lat_avg = sum / (double)n;
	for (i = 0; i < n; i++)
		sq += (ns[i] - r->lat_avg) * (ns[i] - r->lat_avg);
	r->lat_stdev = sqrt(sq / (double)n);
	r->lat_min = ns[0];
	r->lat_max = ns[n - 1];
	r->lat_p50 = perf_percentile_sorted(ns, n, 0.50);
	r->lat_p99 = perf_percentile_sorted(ns, n, 0.99);
	r->lat_p999 = perf_percentile_sorted(ns, n, 0.999);
}

long perf_rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6)) {
			kib = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

void *perf_alloc(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, 4096, len ? len : 1) ? NULL : p;
}

size_t perf_region_slots(size_t size)
{
	const size_t cap = 4u << 20;
	size_t slots;

	if (!size || size >= cap / 4)
		return 1;
	slots = cap / 4 / size;
	return slots > 256 ? 256 : slots;
}

static uint64_t last_progress_ns;
static int progress_shown;

void perf_progress(const struct perf_opts *o, const char *fmt, ...)
{
	uint64_t now = perf_now_ns();
	va_list ap;

	if (o->quiet || now - last_progress_ns < 1000000000ull)
		return;
	if (!last_progress_ns) {
		/* the first second is silent: short runs print nothing */
		last_progress_ns = now;
		return;
	}
	last_progress_ns = now;
	fputs(isatty(2) ? "\r\033[K" : "", stderr);
	fputs("gdak-perf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (!isatty(2))
		fputc('\n', stderr);
	fflush(stderr);
	progress_shown = 1;
}

void perf_progress_done(const struct perf_opts *o)
{
	if (progress_shown && isatty(2) && !o->quiet)
		fputs("\r\033[K", stderr);
	progress_shown = 0;
}

static unsigned verify_failures;

void perf_verify_fail(const char *test, size_t size, const char *fmt, ...)
{
	va_list ap;

	verify_failures++;
	fprintf(stderr, "gdak-perf: VERIFY FAILED: %s, %zu bytes: ", test, size);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

unsigned perf_verify_failures(void) { return verify_failures; }

int perf_test_corrupt(void)
{
	int v = 0;

	return gdak_env_bool("GDAK_PERF_TEST_CORRUPT", &v) == 0 && v;
}

static unsigned qps_open;

void perf_set_qps_open(unsigned n) { qps_open = n; }
unsigned perf_qps_open(void) { return qps_open; }
