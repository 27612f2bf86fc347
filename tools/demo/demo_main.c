/* SPDX-License-Identifier: MIT */
/*
 * demo_main.c - gdak-demo: open the emulated NIC, connect two QPs, let the
 * device code (a CUDA kernel when a GPU is there, host threads otherwise)
 * put, get, fetch-add, put+signal/wait and send/recv between them, verify,
 * print a table, and show the trace the NIC wrote.
 *
 * Exit status: 0 everything verified; 1 something failed (said on stderr
 * and in the FAILED lines); 2 bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/mlx5.h>
#include <gdak/nic.h>

#include <gdak/env.h>

#include "demo.h"

static void usage(FILE *f)
{
	fputs("usage: gdak-demo [options]\n"
	      "Device code drives two connected QPs through gdak's device API - put, get,\n"
	      "fetch-add, put+signal/wait, send/recv - on the emulated NIC, verifies every\n"
	      "result, prints a table and the first decoded lines of the trace.\n"
	      "\n"
	      "  -d, --device DEV   device (default: $GDAK_DEVICE, else emu)\n"
	      "  -n, --iters N      operations of each kind (1..100000, default 100)\n"
	      "      --trace PATH   trace file (default: $GDAK_TRACE, else demo.pcapng)\n"
	      "      --no-trace     write no trace\n"
	      "      --lines N      trace lines to show (default 16; 0: none)\n"
	      "      --host         device code on host threads even when a GPU is there\n"
	      "      --cuda         device code as a CUDA kernel (fails without a GPU)\n"
	      "  -h, --help         this text\n"
	      "\n"
	      "Exit status: 0 all verified, 1 a check or operation failed, 2 bad usage.\n", f);
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "gdak-demo: %s '%s' (try --help)\n", what, arg);
	return 2;
}

static int num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out > max ? -1 : 0;
}

/* The pair, with a host-mapped, zeroed, registered buffer on each side. */
static int setup(struct demo_pair *st, const char *device, struct demo_args *a)
{
	int rc;

	if ((rc = demo_pair_open(st, device, &a->a, &a->b)))
		return rc;
	if ((rc = gdak_mem_alloc(st->ctx, DEMO_BUF_LEN, GDAK_MEM_HOST_MAPPED, &st->abuf)) ||
	    (rc = gdak_mem_alloc(st->ctx, DEMO_BUF_LEN, GDAK_MEM_HOST_MAPPED, &st->bbuf)))
		return rc;
	memset(st->abuf, 0, DEMO_BUF_LEN);
	memset(st->bbuf, 0, DEMO_BUF_LEN);
	if ((rc = gdak_mr_reg(st->ctx, st->abuf, DEMO_BUF_LEN, GDAK_ACCESS_ALL, &st->amr)) ||
	    (rc = gdak_mr_reg(st->ctx, st->bbuf, DEMO_BUF_LEN, GDAK_ACCESS_ALL, &st->bmr)))
		return rc;
	a->abuf = st->abuf;
	a->bbuf = st->bbuf;
	a->alkey = gdak_mr_lkey(st->amr);
	a->arkey = gdak_mr_rkey(st->amr);
	a->blkey = gdak_mr_lkey(st->bmr);
	a->brkey = gdak_mr_rkey(st->bmr);
	/* put+signal discards the signal word's old value into the QP's
	 * scratch word: give it 8 registered bytes of A nobody else uses */
	if (!a->a->scratch_addr) {
		a->a->scratch_addr = (uint64_t)(uintptr_t)((uint8_t *)st->abuf + DEMO_SIG_OFF);
		a->a->scratch_lkey = a->alkey;
	}
	return 0;
}

static void report_qp(const char *who, struct gdak_qp *qp)
{
	struct gdak_qp_error e;

	if (qp && !gdak_qp_query_error(qp, &e) && (e.state == GDAK_QPS_ERR || e.syndrome))
		fprintf(stderr, "gdak-demo: QP %s (0x%x): %s, syndrome 0x%02x (%s)%s%s: %s\n", who,
			gdak_qp_num(qp), gdak_qp_state_name(e.state), e.syndrome,
			gdak_mlx5_syndrome_name(e.syndrome), e.rule[0] ? ", rule " : "", e.rule,
			e.text);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"device", required_argument, NULL, 'd'}, {"iters", required_argument, NULL, 'n'},
		{"trace", required_argument, NULL, 'T'}, {"no-trace", no_argument, NULL, 'N'},
		{"lines", required_argument, NULL, 'L'}, {"host", no_argument, NULL, 'H'},
		{"cuda", no_argument, NULL, 'C'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *device = NULL, *trace = NULL, *why = "", *runner = "host threads";
	unsigned long iters = 100, lines = 16;
	int c, no_trace = 0, want_host = 0, want_cuda = 0, rc, use_cuda, trace_failed = 0;
	struct demo_pair st = { 0 };
	struct demo_args a = {0};

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:n:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': device = optarg; break;
		case 'n':
			if (num(optarg, 100000, &iters) || !iters)
				return bad("bad iteration count", optarg);
			break;
		case 'T': trace = optarg; break;
		case 'N': no_trace = 1; break;
		case 'L':
			if (num(optarg, 100000, &lines))
				return bad("bad line count", optarg);
			break;
		case 'H': want_host = 1; break;
		case 'C': want_cuda = 1; break;
		case 'h': usage(stdout); return 0;
		case ':': return bad("option needs a value:", argv[optind - 1]);
		default: return bad("unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad("unexpected argument", argv[optind]);
	if (want_host && want_cuda) {
		fprintf(stderr, "gdak-demo: --host and --cuda exclude each other\n");
		return 2;
	}
	if (no_trace && trace) {
		fprintf(stderr, "gdak-demo: --trace and --no-trace exclude each other\n");
		return 2;
	}
	if (no_trace) {
		unsetenv("GDAK_TRACE");
	} else {
		if (!trace)
			trace = gdak_env_raw("GDAK_TRACE") ? gdak_env_raw("GDAK_TRACE")
							   : "demo.pcapng";
		/* the NIC model opens it at gdak_open (gdak/nic.h) */
		setenv("GDAK_TRACE", trace, 1);
	}
	use_cuda = !want_host && demo_cuda_available(&why);
	if (want_cuda && !use_cuda) {
		fprintf(stderr, "gdak-demo: --cuda: %s\n", why);
		return 1;
	}
	rc = setup(&st, device, &a);
	if (rc) {
		fprintf(stderr, "gdak-demo: cannot set up two connected QPs on '%s'%s: %s\n",
			device ? device : gdak_env_text("GDAK_DEVICE"),
			device			      ? ""
			: gdak_env_raw("GDAK_DEVICE") ? " ($GDAK_DEVICE)"
						      : " (the default)",
			gdak_strerror(rc));
		demo_pair_close(&st);
		return 1;
	}
	a.iters = (uint32_t)iters;
	a.timeout_ns = 5ull * 1000000000ull;
	if (use_cuda) {
		runner = "a CUDA kernel";
		rc = demo_cuda_run(&a);
	} else {
		rc = demo_device_run(&a);
	}
	if (rc) {
		report_qp("A", st.qa);
		report_qp("B", st.qb);
	}
	demo_print_table(&a, gdak_ctx_device(st.ctx), runner, no_trace ? NULL : trace);
	demo_pair_close(&st);
	if (!no_trace) {
		/* the NIC model keeps the trace open across contexts: close it
		 * so the file is complete before gdak-trace reads it */
		int trc = gdak_nic_set_trace(NULL);

		if (trc) {
			fprintf(stderr, "gdak-demo: cannot close the trace %s: %s\n", trace,
				gdak_strerror(trc));
			trace_failed = 1;
		} else if (lines && demo_show_trace(argv[0], trace, (unsigned)lines)) {
			trace_failed = 1;
		}
	}
	if (rc || trace_failed) {
		fprintf(stderr, "gdak-demo: FAILED: %s\n",
			rc ? gdak_strerror(rc) : "the trace could not be written or read back");
		return 1;
	}
	printf("\ngdak-demo: ALL OK\n");
	return 0;
}
