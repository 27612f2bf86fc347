/* SPDX-License-Identifier: MIT */
/*
 * trace_dc.c - what a trace shows of the DC transport: the DCI's and the
 * DCTs' creation records, every stream opened and closed with its address
 * vector (key, DCT, LID, GID), each DCI WQE decoded with its AV (compact and
 * full) ahead of its RDMA segments, and a wrong key's error CQE, read back
 * through gdak-trace's decoder.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/dev.h>
#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "trace_util.h"

#define T_NS 20000000000ull

struct dump {
	FILE *f;
	struct trace_out o;
};

static void print_one(const struct gdak_trace_item *it, void *arg)
{
	struct dump *d = arg;

	trace_print_item(&d->o, it);
}

static int missing;

static int has(const char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int has(const char *out, const char *fmt, ...)
{
	char want[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	if (strstr(out, want))
		return 1;
	fprintf(stderr, "trace_dc: the decoded trace lacks \"%s\"\n", want);
	missing++;
	return 0;
}

int main(void)
{
	struct gdak_ctx *ctx;
	struct gdak_qp *dct[2], *dci;
	struct gdak_dev_qp *d;
	struct gdak_qp_info info[2];
	struct gdak_dev_av compact, full, bad;
	struct gdak_qp_attr a;
	struct gdak_mr *mr;
	struct dump du;
	uint8_t *mem, *buf;
	char *path, *out = NULL, err[160];
	size_t len = 0, outlen = 0;
	uint64_t t = 0;
	uint32_t dci_qpn;

	path = tt_trace_to_tmp("dc");
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 8192, GDAK_MEM_HOST, (void **)&mem), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, mem, 8192, GDAK_ACCESS_ALL, &mr), 0);
	for (int i = 0; i < 2; i++) {
		memset(&a, 0, sizeof(a));
		a.type = GDAK_QPT_DCT;
		a.dc_key = 0xfeed0000ull + (uint64_t)i;
		REQUIRE_EQ(gdak_qp_create(ctx, &a, &dct[i]), 0);
		REQUIRE_EQ(gdak_qp_connect(dct[i], NULL), 0);
		REQUIRE_EQ(gdak_qp_info(dct[i], &info[i]), 0);
	}
	REQUIRE_EQ(gdak_dc_av(&info[0], 1, &compact), 0);
	REQUIRE_EQ(gdak_dc_av(&info[1], 0, &full), 0);
	info[1].dc_key = 0x5;
	REQUIRE_EQ(gdak_dc_av(&info[1], 1, &bad), 0);
	memset(&a, 0, sizeof(a));
	a.type = GDAK_QPT_DCI;
	REQUIRE_EQ(gdak_qp_create(ctx, &a, &dci), 0);
	REQUIRE_EQ(gdak_qp_connect(dci, NULL), 0);
	REQUIRE_EQ(gdak_qp_export(dci, &d), 0);
	dci_qpn = gdak_qp_num(dci);
	{
		struct gdak_dev_sge s = { (uint64_t)(uintptr_t)mem, 64, gdak_mr_lkey(mr) };

		gdak_test_fill(mem, 64, 3);
		CHECK_EQ(gdak_dev_dc_put(d, &compact, &s, (uint64_t)(uintptr_t)(mem + 4096),
					 gdak_mr_rkey(mr), GDAK_DEV_WQE_SIGNAL, &t),
			 0);
		CHECK_EQ(gdak_dev_dc_put(d, &full, &s, (uint64_t)(uintptr_t)(mem + 4096 + 64),
					 gdak_mr_rkey(mr), GDAK_DEV_WQE_SIGNAL, &t),
			 0);
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
		CHECK_MEM(mem + 4096, mem, 64);
		CHECK_MEM(mem + 4096 + 64, mem, 64);
		CHECK_EQ(gdak_dev_dc_put(d, &bad, &s, (uint64_t)(uintptr_t)(mem + 4096),
					 gdak_mr_rkey(mr), GDAK_DEV_WQE_SIGNAL, &t),
			 0);
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), -EIO);
	}
	CHECK_EQ(gdak_qp_destroy(dci), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(gdak_qp_destroy(dct[i]), 0);
	gdak_mr_dereg(mr);
	gdak_mem_free(ctx, mem);
	gdak_close(ctx);
	REQUIRE_EQ(gdak_nic_set_trace(NULL), 0); /* flushes and closes the trace */

	buf = tt_slurp(path, &len);
	REQUIRE(buf);
	memset(&du, 0, sizeof(du));
	du.f = open_memstream(&out, &outlen);
	REQUIRE(du.f);
	du.o.f = du.f;
	CHECK_EQ(tt_read_all(buf, len, print_one, &du, err, sizeof(err)), 0);
	fclose(du.f);
	REQUIRE(out);

	CHECK(has(out, "DCI created"));
	CHECK(has(out, "DCT created"));
	CHECK(has(out, "DCT ready (RTR)"));
	CHECK(has(out, "DC stream 0 opened to DCT 0x%x: compact AV, key 0xfeed0000, lid 0x%x",
		  info[0].qpn, info[0].lid));
	CHECK(has(out, "DC stream 0 closed to DCT 0x%x: compact AV", info[0].qpn));
	CHECK(has(out, "DC stream 0 opened to DCT 0x%x: full AV, key 0xfeed0001, lid 0x%x, gid ",
		  info[1].qpn, info[1].lid));
	CHECK(has(out, "closed (QP in ERR) to DCT 0x%x", info[1].qpn));
	CHECK(has(out,
		  "RDMA_WRITE ctrl_idx=0 ctrl_qpn=0x%06x ds=4 ce=signalled fence=NONE "
		  "av=compact dct=0x%x dc_key=0xfeed0000 lid=0x%x raddr=",
		  dci_qpn, info[0].qpn, info[0].lid));
	CHECK(has(out,
		  "ds=6 ce=signalled fence=NONE av=full dct=0x%x dc_key=0xfeed0001 lid=0x%x "
		  "gid=00000000000000000000000000000000 raddr=",
		  info[1].qpn, info[1].lid));
	CHECK(has(out, "av=compact dct=0x%x dc_key=0x5 ", info[1].qpn));
	CHECK(has(out, "syndrome=TRANSPORT_RETRY_EXC_ERR"));
	CHECK(has(out, "len=64"));
	if (missing)
		fprintf(stderr, "%s\n", out);
	free(out);
	free(buf);
	unlink(path);
	free(path);
	return gdak_test_end();
}
