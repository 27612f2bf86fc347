/* SPDX-License-Identifier: MIT */
/*
 * fid_trace.c - gdak-trace decodes the doorbells the stacks ring as what
 * they are: a CPU_PROXY QP's record carries the 64-bit producer index the
 * device published (decoded as "producer=N", not as a ctrl segment), and a
 * DS-0 register write (GPUNetIO / NVSHMEM) as the producer-index form with
 * its QPN.  argv[1]: the gdak-trace binary.
 */
#include <stdio.h>
#include <unistd.h>

#include "fid_util.h"

int main(int argc, char **argv)
{
	struct gdak_qp_attr px = { .sq_depth = 16,
				   .cq_depth = 16,
				   .handler = GDAK_DEV_DB_CPU_PROXY };
	struct gdak_qp_attr db = { .sq_depth = 16, .cq_depth = 16 };
	static uint8_t src[256], dst[256];
	struct gdak_ctx *ctx;
	struct gdak_mr *ms, *md;
	struct nu_qp a, b, c, d;
	char path[64], cmd[512], line[1024];
	int proxy_line = 0, pi_line = 0, bad = 0, r;
	FILE *p;

	if (argc < 2)
		GDAK_TEST_SKIP("usage: %s path/to/gdak-trace", argv[0]);
	snprintf(path, sizeof(path), "/tmp/gdak_fid_trace_%d.pcapng", (int)getpid());
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	r = gdak_nic_set_trace(path);
	if (r == -ENOTSUP)
		GDAK_TEST_SKIP("no trace writer in this build");
	REQUIRE_EQ(r, 0);
	gdak_test_fill(src, sizeof(src), 1);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, sizeof(src), GDAK_ACCESS_ALL, &ms), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, sizeof(dst), GDAK_ACCESS_ALL, &md), 0);
	REQUIRE_EQ(nu_pair(ctx, &px, &a, &b), 0);
	REQUIRE_EQ(nu_pair(ctx, &db, &c, &d), 0);

	/* CPU_PROXY: two WRITEs, the device publishes producer 2 */
	fid_write(&a, src, 8, gdak_mr_lkey(ms), (uintptr_t)dst, gdak_mr_rkey(md), 0);
	fid_write(&a, src + 8, 8, gdak_mr_lkey(ms), (uintptr_t)dst + 8, gdak_mr_rkey(md),
		  FID_CQ_UPDATE);
	gdak_dev_store_release_u64(a.d->proxy_pi, a.pi);
	REQUIRE(fid_cqe_at(&a.d->scq, 0, 5000) != NULL);
	/* DB with the producer-index form: three WRITEs, producer 3 */
	for (int i = 0; i < 3; i++)
		fid_write(&c, src + 16 * i, 16, gdak_mr_lkey(ms), (uintptr_t)dst + 64 + 16 * i,
			  gdak_mr_rkey(md), i == 2 ? FID_CQ_UPDATE : 0);
	fid_submit_nvshmem(&c);
	REQUIRE(fid_cqe_at(&c.d->scq, 0, 5000) != NULL);
	CHECK_MEM(dst, src, 16);
	CHECK_MEM(dst + 64, src, 48);
	REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);

	snprintf(cmd, sizeof(cmd), "'%s' '%s' 2>&1", argv[1], path);
	p = popen(cmd, "r");
	REQUIRE(p != NULL);
	while (fgets(line, sizeof(line), p)) {
		char want[64];

		if (!strstr(line, "DOORBELL"))
			continue;
		fputs(line, stderr);
		snprintf(want, sizeof(want), "qpn=0x%06x", a.qpn);
		if (strstr(line, want) || strstr(line, "CPU_PROXY")) {
			if (strstr(line, "producer=2") && !strstr(line, "opcode="))
				proxy_line++;
			else
				bad++;
			continue;
		}
		snprintf(want, sizeof(want), "0x%06x", c.qpn);
		if (strstr(line, "form=producer_index") && strstr(line, "producer=3") &&
		    strstr(line, want))
			pi_line++;
	}
	CHECK_EQ(pclose(p), 0);
	CHECK_EQ(bad, 0);
	CHECK(proxy_line >= 1);
	CHECK(pi_line >= 1);
	nu_destroy(&a);
	nu_destroy(&b);
	nu_destroy(&c);
	nu_destroy(&d);
	gdak_mr_dereg(ms);
	gdak_mr_dereg(md);
	gdak_close(ctx);
	unlink(path);
	return gdak_test_end();
}
