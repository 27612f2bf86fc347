/* SPDX-License-Identifier: MIT */
/*
 * perf_output.c - results as a perftest-style table, JSON (what
 * tools/plot_bench.py and docs/BENCHMARKS.md read) or CSV.
 *
 * Units: bandwidth in MiB/s (2^20 bytes, as perftest's default "MB/sec"),
 * message rate in Mpps (10^6 operations per second), latency in µs.
 * A baseline that was not measured prints as "-" (JSON: null).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdak/config.h>

#include <gdak/env.h>

#include "perf.h"

#define MIB (1024.0 * 1024.0)

const char *perf_cpu_model(void)
{
	static char model[128];
	char line[256];
	FILE *f;

	if (model[0])
		return model;
	snprintf(model, sizeof(model), "unknown");
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return model;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(model, sizeof(model), "%s", colon);
		break;
	}
	fclose(f);
	return model;
}

static const char *handler_name(enum gdak_dev_db_handler h)
{
	switch (h) {
	case GDAK_DEV_DB_DB: return "db";
	case GDAK_DEV_DB_BF: return "bf";
	case GDAK_DEV_DB_CPU_PROXY: return "cpu_proxy";
	}
	return "?";
}

static const char *poll_name(const struct perf_opts *o)
{
	if (o->poll_eff)
		return o->poll_eff;
	return o->poll == PERF_POLL_SPIN ? "spin" : o->poll == PERF_POLL_ADAPTIVE ? "adaptive"
										: "default";
}

static int nic_threads(const struct perf_opts *o)
{
	return o->nic_threads_eff ? o->nic_threads_eff : o->nic_threads;
}

static const char *mem_name(enum gdak_mem_kind m)
{
	return m == GDAK_MEM_GPU ? "gpu" : m == GDAK_MEM_HOST_MAPPED ? "mapped" : "host";
}

static const char *kind_name(enum perf_kind k)
{
	return k == PERF_KIND_BW ? "bw" : k == PERF_KIND_LAT ? "lat" : "baseline";
}

static const char *dev_name(const struct perf_opts *o)
{
	if (o->device)
		return o->device;
	return gdak_env_text("GDAK_DEVICE");
}

/* A number or "-" for "not measured", right-aligned in w columns. */
static void col(FILE *f, int w, int prec, double v)
{
	if (v > 0)
		fprintf(f, " %*.*f", w, prec, v);
	else
		fprintf(f, " %*s", w, "-");
}

static void rule(FILE *f) { fputs("------------------------------------------------------------"
				  "-------------------------------------\n", f); }

static void header(FILE *f, const struct perf_opts *o)
{
	rule(f);
	fprintf(f, " gdak-perf %s   device %s%s   CPU %s, %ld cores\n", o->test->name, dev_name(o),
		o->cuda ? " (CUDA kernel)" : " (host threads)", perf_cpu_model(),
		sysconf(_SC_NPROCESSORS_ONLN));
	if (o->test->kind == PERF_KIND_BASE)
		fprintf(f, " minimal executor ring: %u WQEBBs (--sq-depth)\n", o->sq_depth);
	else if (o->test->kind == PERF_KIND_LAT)
		/* one operation per doorbell, each signalled: batching does not apply */
		fprintf(f,
			" QPs %u (%u open in all)   one operation at a time   handler %s"
			"   NIC threads %d   poll %s   memory %s\n",
			o->qps, perf_qps_open(), handler_name(o->handler), nic_threads(o),
			poll_name(o), mem_name(o->mem));
	else
		fprintf(f, " QPs %u (%u open in all)   posting threads %u   WQEs/doorbell %u"
			"   CQE every %u   handler %s   NIC threads %d   poll %s   memory %s\n",
			o->qps, perf_qps_open(),
			o->threads, o->wqes_per_db, o->signal_every, handler_name(o->handler),
			nic_threads(o), poll_name(o), mem_name(o->mem));
	fprintf(f,
		" %u rounds, medians; #iters: operations per QP per round; baselines "
		"measured between rounds%s\n",
		o->rounds, o->no_baseline ? " (off: --no-baseline)" : "");
	rule(f);
}

static void print_bw(FILE *f, const struct perf_opts *o, const struct perf_result *r, size_t n)
{
	/* --report_gbits: perftest's Gb/s, 10^9 bits per second */
	double unit = o->report_gbits ? 1e9 / 8 : MIB;
	size_t i;

	fprintf(f, " %8s %9s %13s %13s %13s %12s %6s %13s %6s\n", "#bytes", "#iters",
		o->report_gbits ? "BW avg[Gb/s]" : "BW avg[MiB/s]", "MsgRate[Mpps]", "peak[Mpps]",
		"exec[Mpps]", "ratio", o->report_gbits ? "memcpy[Gb/s]" : "memcpy[MiB/s]", "ratio");
	for (i = 0; i < n; i++) {
		fprintf(f, " %8zu %9llu", r[i].bytes, (unsigned long long)r[i].iters);
		col(f, 13, 2, r[i].bw / unit);
		col(f, 13, 3, r[i].msg_rate / 1e6);
		col(f, 13, 3, r[i].peak_msg_rate / 1e6);
		col(f, 12, 3, r[i].exec_rate / 1e6);
		col(f, 6, 3, r[i].exec_ratio);
		col(f, 13, o->report_gbits ? 2 : 1, r[i].memcpy_bw / unit);
		col(f, 6, 3, r[i].memcpy_ratio);
		fputc('\n', f);
	}
	if (n && !o->no_baseline)
		fprintf(f, " exec = minimal executor at %u WQEs/doorbell, ring of %u WQEBBs (the SQ's);"
			" ratio = test / baseline\n", o->wqes_per_db, o->sq_depth);
	if (o->test->id == PERF_DC_PUT_BW)
		for (i = 0; i < n; i++)
			fprintf(f,
				" %8zu bytes: RC, same puts, same run: %.3f Mpps; DC / RC = %.3f\n",
				r[i].bytes, r[i].rc_rate / 1e6, r[i].rc_ratio);
}

static void print_lat(FILE *f, const struct perf_opts *o, const struct perf_result *r, size_t n)
{
	size_t i;

	fprintf(f, " %8s %9s %9s %9s %13s %9s %11s %9s %10s %12s %6s\n", "#bytes", "#iters",
		"t_min[us]", "t_max[us]", "t_typical[us]", "t_avg[us]", "t_stdev[us]", "99%[us]",
		"99.9%[us]", "pingpong[us]", "ratio");
	for (i = 0; i < n; i++) {
		fprintf(f, " %8zu %9llu", r[i].bytes, (unsigned long long)r[i].iters);
		col(f, 9, 2, r[i].lat_min / 1e3);
		col(f, 9, 2, r[i].lat_max / 1e3);
		col(f, 13, 2, r[i].lat_p50 / 1e3);
		col(f, 9, 2, r[i].lat_avg / 1e3);
		col(f, 11, 2, r[i].lat_stdev / 1e3);
		col(f, 9, 2, r[i].lat_p99 / 1e3);
		col(f, 10, 2, r[i].lat_p999 / 1e3);
		col(f, 12, 3, r[i].pingpong_p50 / 1e3);
		col(f, 6, 2, r[i].pingpong_ratio);
		fputc('\n', f);
	}
	if (n && !o->no_baseline)
		fputs(" t_typical = median; pingpong = two threads bouncing one cache line (p50);"
		      " ratio = t_typical / pingpong\n", f);
}

static void print_base(FILE *f, const struct perf_result *r, size_t n)
{
	size_t i;

	fprintf(f, " %8s %9s %16s %17s %14s %13s %13s\n", "#bytes", "#iters", "exec 1/db[Mpps]",
		"exec 16/db[Mpps]", "memcpy[MiB/s]", "pingpong p50", "pingpong p99");
	for (i = 0; i < n; i++) {
		fprintf(f, " %8zu %9llu", r[i].bytes, (unsigned long long)r[i].iters);
		col(f, 16, 3, r[i].exec_rate_1 / 1e6);
		col(f, 17, 3, r[i].exec_rate_16 / 1e6);
		col(f, 14, 1, r[i].memcpy_bw / MIB);
		col(f, 11, 3, r[i].pingpong_p50 / 1e3);
		fputs(r[i].pingpong_p50 > 0 ? "us" : "  ", f);
		col(f, 11, 3, r[i].pingpong_p99 / 1e3);
		fputs(r[i].pingpong_p99 > 0 ? "us" : "  ", f);
		fputc('\n', f);
	}
}

void perf_print(FILE *f, const struct perf_opts *o, const struct perf_result *r, size_t n)
{
	header(f, o);
	switch (o->test->kind) {
	case PERF_KIND_BW: print_bw(f, o, r, n); break;
	case PERF_KIND_LAT: print_lat(f, o, r, n); break;
	case PERF_KIND_BASE: print_base(f, r, n); break;
	}
	if (n)
		fprintf(f, " data verified: %s   RSS %ld KiB\n",
			r[n - 1].verified ? "yes (last iteration of every round)" : "NO",
			r[n - 1].rss_kib);
	rule(f);
}

/* A measured number as plain decimal (no exponent: 27953300, not
 * 2.79533e+07), with 6 significant digits' worth of fraction below 1000;
 * "" for not measured (JSON: null, CSV: an empty field). */
static const char *num(char *buf, size_t len, double v)
{
	if (!(v > 0))
		buf[0] = '\0';
	else if (v >= 100000)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.*f", v >= 1000 ? 1 : v >= 1 ? 4 : 6, v);
	return buf;
}

/* JSON number, or null for "not measured". */
static void jnum(FILE *f, const char *key, double v, int last)
{
	char b[64];

	fprintf(f, "\"%s\": %s%s", key, *num(b, sizeof(b), v) ? b : "null", last ? "" : ", ");
}

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

void perf_print_json(FILE *f, const struct perf_opts *o, const struct perf_result *r, size_t n)
{
	size_t i;

	fputs("{\"tool\": \"gdak-perf\", \"version\": ", f);
	jstr(f, GDAK_VERSION_STRING);
	fprintf(f, ", \"test\": \"%s\", \"kind\": \"%s\", \"args\": ", o->test->name,
		kind_name(o->test->kind));
	jstr(f, o->cmdline);
	fputs(",\n", f);
	fputs(" \"machine\": {\"cpu\": ", f);
	jstr(f, perf_cpu_model());
	fprintf(f, ", \"nproc\": %ld},\n", sysconf(_SC_NPROCESSORS_ONLN));
	fputs(" \"options\": {\"device\": ", f);
	jstr(f, dev_name(o));
	fprintf(f, ", \"cuda\": %s, \"qps\": %u, \"idle_qps\": %u, \"qps_open\": %u, \"threads\": %u, "
		"\"wqes_per_db\": %u, \"signal_every\": %u, \"sq_depth\": %u, \"handler\": \"%s\", "
		"\"nic_threads\": %d, \"poll\": \"%s\", \"mem\": \"%s\", \"rounds\": %u, "
		"\"baseline\": %s},\n",
		o->cuda ? "true" : "false", o->qps, o->idle_qps, perf_qps_open(), o->threads,
		o->wqes_per_db,
		o->signal_every, o->sq_depth, handler_name(o->handler), nic_threads(o),
		poll_name(o), mem_name(o->mem), o->rounds, o->no_baseline ? "false" : "true");
	fputs(" \"results\": [", f);
	for (i = 0; i < n; i++) {
		const struct perf_result *x = &r[i];

		fprintf(f, "%s\n  {\"bytes\": %zu, \"iters\": %llu, \"rounds\": %u, ", i ? "," : "",
			x->bytes, (unsigned long long)x->iters, x->rounds);
		if (o->test->kind == PERF_KIND_BW) {
			jnum(f, "msg_rate", x->msg_rate, 0);
			jnum(f, "peak_msg_rate", x->peak_msg_rate, 0);
			jnum(f, "bw_bytes_per_s", x->bw, 0);
			jnum(f, "exec_rate", x->exec_rate, 0);
			fprintf(f, "\"exec_per_db\": %u, ", x->exec_per_db);
			jnum(f, "exec_ratio", x->exec_ratio, 0);
			jnum(f, "memcpy_bw", x->memcpy_bw, 0);
			jnum(f, "memcpy_ratio", x->memcpy_ratio, 0);
			if (o->test->id == PERF_DC_PUT_BW) {
				jnum(f, "rc_rate", x->rc_rate, 0);
				jnum(f, "rc_ratio", x->rc_ratio, 0);
			}
		} else if (o->test->kind == PERF_KIND_LAT) {
			jnum(f, "lat_min_ns", x->lat_min, 0);
			jnum(f, "lat_max_ns", x->lat_max, 0);
			jnum(f, "lat_p50_ns", x->lat_p50, 0);
			jnum(f, "lat_avg_ns", x->lat_avg, 0);
			jnum(f, "lat_stdev_ns", x->lat_stdev, 0);
			jnum(f, "lat_p99_ns", x->lat_p99, 0);
			jnum(f, "lat_p999_ns", x->lat_p999, 0);
			jnum(f, "pingpong_p50_ns", x->pingpong_p50, 0);
			jnum(f, "pingpong_p99_ns", x->pingpong_p99, 0);
			jnum(f, "pingpong_ratio", x->pingpong_ratio, 0);
		} else {
			jnum(f, "exec_rate_1", x->exec_rate_1, 0);
			jnum(f, "exec_rate_16", x->exec_rate_16, 0);
			jnum(f, "memcpy_bw", x->memcpy_bw, 0);
			jnum(f, "pingpong_p50_ns", x->pingpong_p50, 0);
			jnum(f, "pingpong_p99_ns", x->pingpong_p99, 0);
		}
		fprintf(f, "\"rss_kib\": %ld, \"verified\": %s}", x->rss_kib,
			x->verified ? "true" : "false");
	}
	fputs("\n ]\n}\n", f);
}

void perf_print_csv(FILE *f, const struct perf_opts *o, const struct perf_result *r, size_t n)
{
	size_t i;

	fputs("test,device,bytes,iters,rounds,qps,threads,wqes_per_db,signal_every,msg_rate,"
	      "peak_msg_rate,bw_bytes_per_s,exec_rate,exec_ratio,memcpy_bw,memcpy_ratio,"
	      "lat_min_ns,lat_p50_ns,lat_avg_ns,lat_p99_ns,lat_p999_ns,lat_max_ns,"
	      "pingpong_p50_ns,pingpong_ratio,exec_rate_1,exec_rate_16,rss_kib,verified\n", f);
	for (i = 0; i < n; i++) {
		const struct perf_result *x = &r[i];

		const double v[] = { x->msg_rate,     x->peak_msg_rate, x->bw,
				     x->exec_rate,    x->exec_ratio,	x->memcpy_bw,
				     x->memcpy_ratio, x->lat_min,	x->lat_p50,
				     x->lat_avg,      x->lat_p99,	x->lat_p999,
				     x->lat_max,      x->pingpong_p50,	x->pingpong_ratio,
				     x->exec_rate_1,  x->exec_rate_16 };
		char b[64];

		fprintf(f, "%s,%s,%zu,%llu,%u,%u,%u,%u,%u", o->test->name, dev_name(o), x->bytes,
			(unsigned long long)x->iters, x->rounds, o->qps, o->threads, o->wqes_per_db,
			o->signal_every);
		/* as in JSON: an empty field where JSON has null */
		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++)
			fprintf(f, ",%s", num(b, sizeof(b), v[k]));
		fprintf(f, ",%ld,%d\n", x->rss_kib, x->verified);
	}
}
