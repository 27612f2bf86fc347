/* SPDX-License-Identifier: MIT */
/*
 * perf_cuda_main.cu - gdak-perf-cuda: options, shared set-up, the table and
 * the JSON.  See perf_cuda.h for what is measured.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf_cuda.h"
#include "../tool_usage.h"

#define MAX_ROWS 128
static struct pc_row rows[MAX_ROWS];
static unsigned nrows;

void pc_add_row(const struct pc_row *r)
{
	if (nrows < MAX_ROWS)
		rows[nrows++] = *r;
	/* progress on stderr: long runs show where they are */
	fprintf(stderr, "gdak-perf-cuda: %s %s done\n", r->test, r->note);
}

uint64_t pc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double pc_percentile(double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_d);
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

int pc_wait(cudaStream_t s, unsigned limit_s, const char *what)
{
	uint64_t t0 = pc_now_ns();
	cudaError_t e;

	while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
		if (pc_now_ns() - t0 > (uint64_t)limit_s * 1000000000ull) {
			fprintf(stderr, "gdak-perf-cuda: %s: kernel still running after %u s\n",
				what, limit_s);
			return -ETIMEDOUT;
		}
		usleep(100);
	}
	if (e != cudaSuccess) {
		fprintf(stderr, "gdak-perf-cuda: %s: %s\n", what, cudaGetErrorString(e));
		return -EIO;
	}
	return 0;
}

unsigned pc_qp_flags;

int pc_pair_make(struct gdak_ctx *ctx, enum gdak_dev_db_handler h, uint32_t sq, int nic_thread,
		 int gpu_desc, struct gdak_dev_qp *dev_slot, struct pc_pair *p)
{
	struct gdak_qp_attr a;
	struct gdak_qp_info ia, ib;

	memset(&a, 0, sizeof(a));
	memset(p, 0, sizeof(*p));
	a.sq_depth = sq;
	a.cq_depth = sq;
	a.handler = h;
	a.sharing = GDAK_DEV_EXCLUSIVE;
	a.mtu = 4096;
	a.nic_thread = nic_thread;
	a.flags = pc_qp_flags;
	PC_GDAK(gdak_qp_create(ctx, &a, &p->qa));
	a.sq_depth = a.cq_depth = 16;
	PC_GDAK(gdak_qp_create(ctx, &a, &p->qb));
	PC_GDAK(gdak_qp_info(p->qa, &ia));
	PC_GDAK(gdak_qp_info(p->qb, &ib));
	PC_GDAK(gdak_qp_connect(p->qa, &ib));
	PC_GDAK(gdak_qp_connect(p->qb, &ia));
	PC_GDAK(gdak_qp_export(p->qa, &p->host));
	p->dev = p->host;
	if (gpu_desc && dev_slot) {
		PC_CHECK(cudaMemcpy(dev_slot, p->host, sizeof(*p->host), cudaMemcpyHostToDevice));
		p->dev = dev_slot;
	}
	return 0;
}

void pc_pair_destroy(struct pc_pair *p)
{
	if (p->qa)
		gdak_qp_destroy(p->qa);
	if (p->qb)
		gdak_qp_destroy(p->qb);
	memset(p, 0, sizeof(*p));
}

/* ---- output ------------------------------------------------------------------ */

static void print_table(FILE *f, const char *gpu)
{
	fprintf(f, "# gdak-perf-cuda on %s; CPU NIC model (emu, loop transport)\n", gpu);
	fprintf(f, "%-10s %-26s %9s %5s %4s %9s %9s %9s %8s %9s %8s %10s %10s %10s %7s %s\n",
		"test", "variant", "bytes", "ctas", "nict", "ops", "p50_us", "p99_us", "post_us",
		"pp_p50_us", "lat/pp", "Mmsg/s", "GB/s", "base_GB/s", "bw/base", "verified");
	for (unsigned i = 0; i < nrows; i++) {
		const struct pc_row *r = &rows[i];
		fprintf(f, "%-10s %-26s %9zu %5u %4u %9llu ", r->test, r->note, r->bytes, r->ctas,
			r->nic_threads, (unsigned long long)r->ops);
		if (r->p50_ns > 0)
			fprintf(f, "%9.2f %9.2f %8.2f %9.2f %8.2f ", r->p50_ns / 1e3,
				r->p99_ns / 1e3, r->post_p50_ns / 1e3, r->base_p50_ns / 1e3,
				r->base_p50_ns > 0 ? r->p50_ns / r->base_p50_ns : 0.0);
		else
			fprintf(f, "%9s %9s %8s %9s %8s ", "-", "-", "-", "-", "-");
		if (r->msg_rate > 0)
			fprintf(f, "%10.3f %10.2f ", r->msg_rate / 1e6, r->bw / 1e9);
		else
			fprintf(f, "%10s %10s ", "-", "-");
		if (r->base_bw > 0)
			fprintf(f, "%10.2f %7.2f ", r->base_bw / 1e9, r->bw / r->base_bw);
		else
			fprintf(f, "%10s %7s ", "-", "-");
		fprintf(f, "%s\n", r->verified ? "yes" : "NO");
	}
}

static void print_json(FILE *f, const char *gpu)
{
	fprintf(f, "{\"tool\": \"gdak-perf-cuda\", \"gpu\": \"%s\", \"rows\": [\n", gpu);
	for (unsigned i = 0; i < nrows; i++) {
		const struct pc_row *r = &rows[i];
		fprintf(f, "  {\"test\": \"%s\", \"variant\": \"%s\", \"bytes\": %zu, \"ctas\": %u, "
			"\"nic_threads\": %u, \"ops\": %llu, \"lat_p50_ns\": %.1f, "
			"\"lat_p99_ns\": %.1f, \"lat_min_ns\": %.1f, \"post_p50_ns\": %.1f, "
			"\"pingpong_p50_ns\": %.1f, "
			"\"pingpong_p99_ns\": %.1f, \"pingpong_ratio\": %.3f, \"msg_rate\": %.1f, "
			"\"bw\": %.1f, \"memcpy_bw\": %.1f, \"memcpy_ratio\": %.3f, "
			"\"verified\": %s}%s\n",
			r->test, r->note, r->bytes, r->ctas, r->nic_threads,
			(unsigned long long)r->ops, r->p50_ns, r->p99_ns, r->min_ns, r->post_p50_ns,
			r->base_p50_ns,
			r->base_p99_ns, r->base_p50_ns > 0 ? r->p50_ns / r->base_p50_ns : 0.0,
			r->msg_rate, r->bw, r->base_bw, r->base_bw > 0 ? r->bw / r->base_bw : 0.0,
			r->verified ? "true" : "false", i + 1 < nrows ? "," : "");
	}
	fprintf(f, "]}\n");
}

/* ---- options --------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gdak-perf-cuda [options]\n"
		"CUDA kernels drive the NIC model (gdak_open(\"emu\")); baselines in the same run.\n"
		"  -t, --test LIST        tests: lat,bw,big,dc or all (default all)\n"
		"      --lat-iters N      write_lat / pingpong samples (default 20000)\n"
		"      --bw-iters N       write_bw puts per CTA (default 20000)\n"
		"      --bw-size BYTES    write_bw message size (default 8)\n"
		"      --big-iters N      big_bw 16 MiB writes (default 50)\n"
		"      --ctas LIST        write_bw CTA counts (default 1,8,64,128,256)\n"
		"      --nic-threads LIST write_bw NIC threads (default 1,2,4,8)\n"
		"      --host-desc        kernels use the exported descriptor in mapped host\n"
		"                         memory (default: a copy in GPU memory)\n"
		"      --json FILE        also write the rows as JSON\n"
		"  -h, --help\n"
		"Exit: 0 ok, 1 a run failed or its data was wrong, 2 bad usage, 77 no GPU.\n");
}

static int parse_list(const char *s, unsigned *out, unsigned max, unsigned *n)
{
	char *end;

	*n = 0;
	while (*s) {
		unsigned long v = strtoul(s, &end, 10);
		if (end == s || v == 0 || v > 1024 || *n >= max || (*end && *end != ','))
			return -1;
		out[(*n)++] = (unsigned)v;
		s = *end ? end + 1 : end;
	}
	return *n ? 0 : -1;
}

static int parse_num(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;

	*v = strtoull(s, &end, 10);
	return (end == s || *end || *v == 0 || *v > max) ? -1 : 0;
}

static int parse_tests(const char *arg, struct pc_opts *o)
{
	char buf[64], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	o->run_lat = o->run_bw = o->run_big = o->run_dc = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all"))
			o->run_lat = o->run_bw = o->run_big = o->run_dc = 1;
		else if (!strcmp(tok, "dc"))
			o->run_dc = 1;
		else if (!strcmp(tok, "lat"))
			o->run_lat = 1;
		else if (!strcmp(tok, "bw"))
			o->run_bw = 1;
		else if (!strcmp(tok, "big"))
			o->run_big = 1;
		else
			return -1;
	}
	return o->run_lat || o->run_bw || o->run_big || o->run_dc ? 0 : -1;
}

/* A wrong command line: says what, returns 2. */
#define bad_arg(...) tool_usage_err("gdak-perf-cuda", "", __VA_ARGS__)

static int parse(int argc, char **argv, struct pc_opts *o)
{
	static const struct option lo[] = {
		{"test", required_argument, NULL, 't'},
		{"lat-iters", required_argument, NULL, 1},
		{"bw-iters", required_argument, NULL, 2},
		{"bw-size", required_argument, NULL, 3},
		{"big-iters", required_argument, NULL, 4},
		{"ctas", required_argument, NULL, 5},
		{"nic-threads", required_argument, NULL, 6},
		{"host-desc", no_argument, NULL, 7},
		{"json", required_argument, NULL, 8},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	unsigned long long v;
	int c, li = 0;

	memset(o, 0, sizeof(*o));
	o->lat_iters = 20000;
	o->bw_iters = 20000;
	o->big_iters = 50;
	o->bw_size = 8;
	o->big_size = 16u << 20;
	o->gpu_desc = 1;
	o->run_lat = o->run_bw = o->run_big = o->run_dc = 1;
	parse_list("1,8,64,128,256", o->ctas, 16, &o->nctas);
	parse_list("1,2,4,8", o->nic_threads, 8, &o->nnic);
	while ((c = getopt_long(argc, argv, "t:h", lo, &li)) != -1) {
		switch (c) {
		case 't':
			if (parse_tests(optarg, o))
				return bad_arg("--test '%s': expected a comma separated list of lat, bw, "
					       "big, dc, or all", optarg);
			break;
		case 1:
		case 2:
		case 4:
			if (parse_num(optarg, 10000000, &v))
				return bad_arg("--%s: expected a count 1..10000000, got '%s'",
					       lo[li].name, optarg);
			if (c == 1)
				o->lat_iters = (unsigned)v;
			else if (c == 2)
				o->bw_iters = (unsigned)v;
			else
				o->big_iters = (unsigned)v;
			break;
		case 3:
			if (parse_num(optarg, 1u << 20, &v))
				return bad_arg("--bw-size: expected 1..1048576 bytes, got '%s'", optarg);
			o->bw_size = (size_t)v;
			break;
		case 5:
			if (parse_list(optarg, o->ctas, 16, &o->nctas))
				return bad_arg("--ctas: expected up to 16 counts 1..1024, comma "
					       "separated, got '%s'", optarg);
			break;
		case 6:
			if (parse_list(optarg, o->nic_threads, 8, &o->nnic))
				return bad_arg("--nic-threads: expected up to 8 counts 1..64, got '%s'",
					       optarg);
			for (unsigned i = 0; i < o->nnic; i++)
				if (o->nic_threads[i] > 64)
					return bad_arg("--nic-threads: %u > 64", o->nic_threads[i]);
			break;
		case 7:
			o->gpu_desc = 0;
			break;
		case 8:
			o->json = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gdak-perf-cuda: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct pc_opts o;
	struct cudaDeviceProp prop;
	double pp50 = 0, pp99 = 0;
	int n = 0, rc = 0, bad = 0;
	cudaError_t e;

	rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	/* every kernel loaded at start: a lazy load mid-run would wait for a
	 * running kernel (and add its time to the first sample) */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		/* the runtime says "insufficient" for no driver at all, too */
		void *lib = e == cudaErrorInsufficientDriver ? dlopen("libcuda.so.1", RTLD_NOW) : NULL;

		if (e == cudaErrorInsufficientDriver && !lib)
			fprintf(stderr, "gdak-perf-cuda: no usable GPU (no NVIDIA driver: libcuda.so.1 "
				"cannot be loaded)\n");
		else
			fprintf(stderr, "gdak-perf-cuda: no usable GPU (%s)\n",
				e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		if (lib)
			dlclose(lib);
		return 77;
	}
	cudaSetDevice(0);
	cudaFree(0);
	cudaGetDeviceProperties(&prop, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (o.run_lat) {
		rc = pc_pingpong(o.lat_iters, &pp50, &pp99);
		if (!rc)
			rc = pc_write_lat(&o, pp50, pp99);
		bad |= rc != 0;
	}
	if (o.run_bw && pc_write_bw(&o))
		bad = 1;
	if (o.run_big && pc_big_bw(&o))
		bad = 1;
	if (o.run_dc && pc_dc_bw(&o))
		bad = 1;
	for (unsigned i = 0; i < nrows; i++)
		bad |= !rows[i].verified;
	print_table(stdout, prop.name);
	if (o.json) {
		FILE *f = fopen(o.json, "w");
		if (!f) {
			fprintf(stderr, "gdak-perf-cuda: cannot write %s: %s\n", o.json,
				strerror(errno));
			return 1;
		}
		print_json(f, prop.name);
		fclose(f);
	}
	return bad ? 1 : 0;
}
