/* SPDX-License-Identifier: MIT */
/*
 * trace_emu.c - a small write scenario on the NIC model with tracing on,
 * read back with gdak-trace: the doorbell, the WQE (opcode, addresses,
 * keys, length), the REQ CQE with the WQE's index; then a write with an
 * unknown rkey: its error CQE with the syndrome by name, and --summary
 * naming that WQE as the first error.
 *
 * usage: gdak_trace_emu GDAK_TRACE_BINARY
 */
#include <inttypes.h>

#include "capture_pair.h"
#include "capture_util.h"	/* cr_tool: gdak-trace on the file */
#include "gdak_test.h"
#include "nic_util.h"
#include "trace_util.h"

static const char *bin;

int main(int argc, char **argv)
{
	struct gdak_qp_attr attr = {.sq_depth = 16, .handler = GDAK_DEV_DB_DB};
	struct gdak_mlx5_cqe_fields f;
	struct cp_pair p;
	uint16_t good, bad;
	char *path, *out, w1[64], w2[64], w3[64], w4[64];
	uint32_t md_rkey;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GDAK_TRACE_BINARY\n", argv[0]);
		return 2;
	}
	bin = argv[1];
	path = tt_trace_to_tmp("emu");

	cp_open(&p, 4096, &attr);

	gdak_test_fill(p.src, 256, 7);
	good = nu_post_rdma(&p.a, MLX5_OPCODE_RDMA_WRITE, p.src, 256, gdak_mr_lkey(p.ms),
			    (uintptr_t)p.dst, gdak_mr_rkey(p.md), 0, NU_SIG);
	nu_ring(&p.a);
	REQUIRE_EQ(nu_poll(&p.a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_MEM(p.dst, p.src, 256);

	bad = nu_post_rdma(&p.a, MLX5_OPCODE_RDMA_WRITE, p.src, 64, gdak_mr_lkey(p.ms),
			   (uintptr_t)p.dst, 0xbad00, 0, NU_SIG);
	nu_ring(&p.a);
	REQUIRE_EQ(nu_poll(&p.a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.wqe_counter, bad);

	md_rkey = gdak_mr_rkey(p.md);	/* md is gone after cp_close */
	cp_close(&p);
	REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);	/* flushes and closes the trace */

	out = cr_tool(bin, "", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	snprintf(w1, sizeof(w1), "qp 0x%06x", p.a.qpn);
	snprintf(w2, sizeof(w2), "WQE idx=%u RDMA_WRITE", good);
	snprintf(w3, sizeof(w3), "rkey=0x%x", md_rkey);
	snprintf(w4, sizeof(w4), "raddr=0x%" PRIxPTR, (uintptr_t)p.dst);
	{
		const char *wqe[] = {w1, w2, w3, w4, "len=256", "ce=signalled", NULL};
		CHECK(gdak_test_has_line(out, wqe));
	}
	{
		const char *db[] = {w1, "DOORBELL handler=DB", "RDMA_WRITE", NULL};
		CHECK(gdak_test_has_line(out, db));
	}
	snprintf(w2, sizeof(w2), "wqe_counter=%u", good);
	{
		const char *cqe[] = {w1, "CQE REQ ", w2, "byte_cnt=256", NULL};
		CHECK(gdak_test_has_line(out, cqe));
	}
	snprintf(w2, sizeof(w2), "wqe_counter=%u", bad);
	{
		const char *err[] = {w1, "CQE REQ_ERR", w2, "syndrome=REMOTE_ACCESS_ERR", NULL};
		CHECK(gdak_test_has_line(out, err));
	}
	CHECK(strstr(out, "STATS") != NULL);
	if (gdak_test_failed)
		printf("gdak-trace output:\n%s", out);
	free(out);

	out = cr_tool(bin, "--summary", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	snprintf(w2, sizeof(w2), "its WQE:");
	snprintf(w3, sizeof(w3), "WQE idx=%u RDMA_WRITE", bad);
	{
		const char *first[] = {"first error:", "REMOTE_ACCESS_ERR", NULL}; /* VIOLATION or REQ_ERR */
		const char *its[] = {w2, w3, "rkey=0xbad00", NULL};
		CHECK(gdak_test_has_line(out, first));
		CHECK(gdak_test_has_line(out, its));
	}
	if (gdak_test_failed)
		printf("gdak-trace --summary output:\n%s", out);
	free(out);

	out = cr_tool(bin, "--errors", path, &rc);
	REQUIRE(out);
	CHECK(strstr(out, "REQ_ERR") != NULL);
	CHECK(strstr(out, "CQE REQ ") == NULL);
	free(out);

	unlink(path);
	free(path);
	return gdak_test_end();
}
