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
#include <sys/wait.h>

#include "gdak_test.h"
#include "nic_util.h"
#include "trace_util.h"

static const char *bin;

static char *tool(const char *args, const char *path, int *rc)
{
	char cmd[2048], *o = NULL;
	size_t n = 0;
	FILE *p, *m;
	char buf[4096];
	size_t r;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s '%s'", bin, args, path);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	m = open_memstream(&o, &n);
	while ((r = fread(buf, 1, sizeof(buf), p)) > 0)
		fwrite(buf, 1, r, m);
	fclose(m);
	st = pclose(p);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return o;
}


int main(int argc, char **argv)
{
	struct gdak_qp_attr attr = {.sq_depth = 16, .handler = GDAK_DEV_DB_DB};
	struct gdak_mlx5_cqe_fields f;
	struct gdak_ctx *ctx;
	struct gdak_mr *ms, *md;
	struct nu_qp a, b;
	uint8_t *src, *dst;
	uint16_t good, bad;
	char *path, *out, w1[64], w2[64], w3[64], w4[64];
	uint32_t md_rkey;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GDAK_TRACE_BINARY\n", argv[0]);
		return 2;
	}
	bin = argv[1];
	path = tt_tmpname("emu");
	REQUIRE(path);
	rc = gdak_nic_set_trace(path);
	if (rc == -ENOTSUP)
		GDAK_TEST_SKIP("this build has no trace writer");
	REQUIRE_EQ(rc, 0);

	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 4096, GDAK_MEM_HOST, (void **)&src), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 4096, GDAK_MEM_HOST, (void **)&dst), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, 4096, GDAK_ACCESS_LOCAL_WRITE, &ms), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, 4096, GDAK_ACCESS_ALL, &md), 0);
	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);

	gdak_test_fill(src, 256, 7);
	good = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, src, 256, gdak_mr_lkey(ms),
			    (uintptr_t)dst, gdak_mr_rkey(md), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_MEM(dst, src, 256);

	bad = nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, src, 64, gdak_mr_lkey(ms),
			   (uintptr_t)dst, 0xbad00, 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.wqe_counter, bad);

	md_rkey = gdak_mr_rkey(md);	/* md is gone after dereg */
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(ms);
	gdak_mr_dereg(md);
	gdak_mem_free(ctx, src);
	gdak_mem_free(ctx, dst);
	gdak_close(ctx);
	REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);	/* flushes and closes the trace */

	out = tool("", path, &rc);
	REQUIRE(out);
	CHECK_EQ(rc, 0);
	snprintf(w1, sizeof(w1), "qp 0x%06x", a.qpn);
	snprintf(w2, sizeof(w2), "WQE idx=%u RDMA_WRITE", good);
	snprintf(w3, sizeof(w3), "rkey=0x%x", md_rkey);
	snprintf(w4, sizeof(w4), "raddr=0x%" PRIxPTR, (uintptr_t)dst);
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

	out = tool("--summary", path, &rc);
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

	out = tool("--errors", path, &rc);
	REQUIRE(out);
	CHECK(strstr(out, "REQ_ERR") != NULL);
	CHECK(strstr(out, "CQE REQ ") == NULL);
	free(out);

	unlink(path);
	free(path);
	return gdak_test_end();
}
