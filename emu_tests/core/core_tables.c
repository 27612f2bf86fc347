/* SPDX-License-Identifier: MIT */
/*
 * core_tables.c - the opcode, CQE-opcode, syndrome and fence tables are
 * complete and self-consistent.
 *
 * Completeness is checked twice: against a list compiled from mlx5dv.h's
 * enums (fails to build if rdma-core drops a name), and against the
 * installed mlx5dv.h itself, parsed at run time (argv[1]), so an opcode or
 * syndrome that a newer rdma-core adds shows up here as a missing entry.
 */
#include <ctype.h>
#include <errno.h>
#include <gdak/gdak.h>
#include <gdak/mlx5.h>
#include "gdak_case.h"
#include "gdak_test.h"

struct code { const char *name; int code; };

static const struct code mlx5dv_opcodes[] = {
	{"NOP", MLX5_OPCODE_NOP}, {"SEND_INVAL", MLX5_OPCODE_SEND_INVAL},
	{"RDMA_WRITE", MLX5_OPCODE_RDMA_WRITE}, {"RDMA_WRITE_IMM", MLX5_OPCODE_RDMA_WRITE_IMM},
	{"SEND", MLX5_OPCODE_SEND}, {"SEND_IMM", MLX5_OPCODE_SEND_IMM}, {"TSO", MLX5_OPCODE_TSO},
	{"RDMA_READ", MLX5_OPCODE_RDMA_READ}, {"ATOMIC_CS", MLX5_OPCODE_ATOMIC_CS},
	{"ATOMIC_FA", MLX5_OPCODE_ATOMIC_FA}, {"ATOMIC_MASKED_CS", MLX5_OPCODE_ATOMIC_MASKED_CS},
	{"ATOMIC_MASKED_FA", MLX5_OPCODE_ATOMIC_MASKED_FA}, {"FMR", MLX5_OPCODE_FMR},
	{"LOCAL_INVAL", MLX5_OPCODE_LOCAL_INVAL}, {"CONFIG_CMD", MLX5_OPCODE_CONFIG_CMD},
	{"SET_PSV", MLX5_OPCODE_SET_PSV}, {"UMR", MLX5_OPCODE_UMR},
	{"TAG_MATCHING", MLX5_OPCODE_TAG_MATCHING}, {"FLOW_TBL_ACCESS", MLX5_OPCODE_FLOW_TBL_ACCESS},
	{"MMO", MLX5_OPCODE_MMO},
	/* gdak's additions */
	{"WAIT", GDAK_MLX5_OPCODE_WAIT}, {"DUMP", GDAK_MLX5_OPCODE_DUMP},
};

/* The syndromes DESIGN.md lists ("mlx5 facts the model must honour"). */
static const struct code design_syndromes[] = {
	{"LOCAL_LENGTH_ERR", 0x01}, {"LOCAL_QP_OP_ERR", 0x02}, {"LOCAL_PROT_ERR", 0x04},
	{"WR_FLUSH_ERR", 0x05}, {"BAD_RESP_ERR", 0x10}, {"LOCAL_ACCESS_ERR", 0x11},
	{"REMOTE_INVAL_REQ_ERR", 0x12}, {"REMOTE_ACCESS_ERR", 0x13}, {"REMOTE_OP_ERR", 0x14},
	{"TRANSPORT_RETRY_EXC_ERR", 0x15}, {"RNR_RETRY_EXC_ERR", 0x16},
	{"REMOTE_ABORTED_ERR", 0x22},
	{"MW_BIND_ERR", MLX5_CQE_SYNDROME_MW_BIND_ERR},
};

static const struct code cqe_opcodes[] = {
	{"REQ", MLX5_CQE_REQ}, {"RESP_WR_IMM", MLX5_CQE_RESP_WR_IMM},
	{"RESP_SEND", MLX5_CQE_RESP_SEND}, {"RESP_SEND_IMM", MLX5_CQE_RESP_SEND_IMM},
	{"RESP_SEND_INV", MLX5_CQE_RESP_SEND_INV}, {"RESIZE_CQ", MLX5_CQE_RESIZE_CQ},
	{"NO_PACKET", MLX5_CQE_NO_PACKET}, {"SIG_ERR", MLX5_CQE_SIG_ERR},
	{"REQ_ERR", MLX5_CQE_REQ_ERR}, {"RESP_ERR", MLX5_CQE_RESP_ERR},
	{"INVALID", MLX5_CQE_INVALID},
};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void opcodes_named(void)
{
	for (size_t i = 0; i < N(mlx5dv_opcodes); i++) {
		const struct code *c = &mlx5dv_opcodes[i];
		char pref[64];
		char lower[64];
		size_t k;

		CHECK(gdak_mlx5_op_info((uint8_t)c->code) != NULL);
		CHECK_STR(gdak_mlx5_opcode_name((uint8_t)c->code), c->name);
		CHECK_EQ(gdak_mlx5_opcode_from_name(c->name), c->code);
		snprintf(pref, sizeof(pref), "MLX5_OPCODE_%s", c->name);
		CHECK_EQ(gdak_mlx5_opcode_from_name(pref), c->code);
		for (k = 0; c->name[k] && k < sizeof(lower) - 1; k++)
			lower[k] = (char)tolower((unsigned char)c->name[k]);
		lower[k] = 0;
		CHECK_EQ(gdak_mlx5_opcode_from_name(lower), c->code);
	}
	CHECK_EQ(gdak_mlx5_opcode_from_name("NO_SUCH_OP"), -1);
	CHECK_EQ(gdak_mlx5_opcode_from_name(""), -1);
	CHECK_EQ(gdak_mlx5_opcode_from_name(NULL), -1);
	CHECK_EQ(gdak_mlx5_opcode_from_name("RDMA"), -1);

	/* every table entry round trips, and unknown codes get readable names */
	for (int op = 0; op < 256; op++) {
		const struct gdak_mlx5_op_info *oi = gdak_mlx5_op_info((uint8_t)op);
		const char *nm = gdak_mlx5_opcode_name((uint8_t)op);
		char want[32];

		REQUIRE(nm && *nm);
		if (oi) {
			CHECK_EQ(oi->opcode, op);
			CHECK_EQ(gdak_mlx5_opcode_from_name(nm), op);
		} else {
			snprintf(want, sizeof(want), "OPCODE_0x%02x", op);
			CHECK_STR(nm, want);
			CHECK_EQ(gdak_mlx5_opcode_from_name(nm), -1);
		}
	}
	/* two unknown names in one expression do not share a buffer */
	CHECK(strcmp(gdak_mlx5_opcode_name(0x3e), gdak_mlx5_opcode_name(0x3d)) != 0);
}

static void op_table_consistent(void)
{
	size_t n;
	const struct gdak_mlx5_op_info *t = gdak_mlx5_op_table(&n);

	CHECK(n >= N(mlx5dv_opcodes));
	for (size_t i = 0; i < n; i++) {
		const struct gdak_mlx5_op_info *oi = &t[i];
		unsigned f = oi->flags;

		CHECK(gdak_mlx5_op_info(oi->opcode) == oi);
		CHECK(oi->name && *oi->name);
		for (size_t j = 0; j < i; j++) {
			CHECK(t[j].opcode != oi->opcode);
			CHECK(strcmp(t[j].name, oi->name) != 0);
		}
		CHECK(oi->min_ds >= 1);
		CHECK(oi->min_ds <= oi->max_ds);
		CHECK(oi->max_ds <= GDAK_MLX5_MAX_DS);
		CHECK_EQ(oi->req_cqe, MLX5_CQE_REQ);
		if (f & GDAK_OPF_RADDR)
			CHECK(oi->min_ds >= 2);
		if (f & GDAK_OPF_ATOMIC) {
			/* ctrl + raddr + atomic + one 8-byte data segment */
			CHECK_EQ(oi->min_ds, 4);
			CHECK_EQ(oi->max_ds, 4);
			CHECK(f & GDAK_OPF_READS_REMOTE);
			CHECK_EQ(oi->remote_access, GDAK_ACCESS_REMOTE_ATOMIC);
		}
		if (f & GDAK_OPF_MASKED) {
			CHECK_EQ(oi->min_ds, 5);
			CHECK(!(f & GDAK_OPF_ATOMIC));
			CHECK_EQ(oi->remote_access, GDAK_ACCESS_REMOTE_ATOMIC);
		}
		if (f & GDAK_OPF_IMM)
			CHECK(strstr(oi->name, "_IMM") != NULL);
		if (f & GDAK_OPF_INLINE_OK)
			CHECK(f & GDAK_OPF_DATA);
		if (f & GDAK_OPF_READS_REMOTE)
			CHECK(f & GDAK_OPF_RADDR);
		if (oi->remote_access)
			CHECK(f & GDAK_OPF_RADDR);
	}
	/* What the NIC model executes, and what it must check (DESIGN.md). */
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_NOP)->flags & GDAK_OPF_SUPPORTED);
	CHECK_EQ(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_WRITE)->remote_access, GDAK_ACCESS_REMOTE_WRITE);
	CHECK_EQ(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_WRITE_IMM)->resp_cqe, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_WRITE)->resp_cqe, 0xff);
	CHECK_EQ(gdak_mlx5_op_info(MLX5_OPCODE_SEND)->resp_cqe, MLX5_CQE_RESP_SEND);
	CHECK_EQ(gdak_mlx5_op_info(MLX5_OPCODE_SEND_IMM)->resp_cqe, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_READ)->remote_access, GDAK_ACCESS_REMOTE_READ);
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_READ)->flags & GDAK_OPF_READS_REMOTE);
	CHECK(!(gdak_mlx5_op_info(MLX5_OPCODE_RDMA_READ)->flags & GDAK_OPF_INLINE_OK));
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_ATOMIC_FA)->flags & GDAK_OPF_ATOMIC);
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_ATOMIC_CS)->flags & GDAK_OPF_ATOMIC);
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_ATOMIC_MASKED_FA)->flags & GDAK_OPF_MASKED);
	CHECK(gdak_mlx5_op_info(MLX5_OPCODE_ATOMIC_MASKED_CS)->flags & GDAK_OPF_MASKED);
	CHECK(!(gdak_mlx5_op_info(MLX5_OPCODE_TSO)->flags & GDAK_OPF_SUPPORTED));
	CHECK(gdak_mlx5_op_info(GDAK_MLX5_OPCODE_WAIT) != NULL);
	CHECK(gdak_mlx5_op_info(GDAK_MLX5_OPCODE_DUMP) != NULL);
	CHECK(gdak_mlx5_op_info(0x3f) == NULL);
	CHECK(gdak_mlx5_op_info(0xff) == NULL);
}

static void syndromes_named(void)
{
	for (size_t i = 0; i < N(design_syndromes); i++) {
		const struct code *c = &design_syndromes[i];
		char buf[64];

		CHECK_STR(gdak_mlx5_syndrome_name((uint8_t)c->code), c->name);
		CHECK_EQ(gdak_mlx5_syndrome_from_name(c->name), c->code);
		snprintf(buf, sizeof(buf), "MLX5_CQE_SYNDROME_%s", c->name);
		CHECK_EQ(gdak_mlx5_syndrome_from_name(buf), c->code);
		/* the short form without _ERR, as DESIGN.md writes them */
		snprintf(buf, sizeof(buf), "%.*s", (int)strlen(c->name) - 4, c->name);
		CHECK_EQ(gdak_mlx5_syndrome_from_name(buf), c->code);
	}
	CHECK_STR(gdak_mlx5_syndrome_name(0), "OK");
	CHECK_STR(gdak_mlx5_syndrome_name(0x99), "SYNDROME_0x99");
	CHECK_STR(gdak_mlx5_syndrome_name(0xff), "SYNDROME_0xff");
	CHECK_EQ(gdak_mlx5_syndrome_from_name("REMOTE"), -1);
	CHECK_EQ(gdak_mlx5_syndrome_from_name("SYNDROME_0x99"), -1);
	CHECK_EQ(gdak_mlx5_syndrome_from_name(NULL), -1);
	CHECK_EQ(gdak_mlx5_syndrome_from_name(""), -1);
	for (int s = 1; s < 256; s++) {
		const char *nm = gdak_mlx5_syndrome_name((uint8_t)s);
		int back = gdak_mlx5_syndrome_from_name(nm);
		REQUIRE(nm && *nm);
		CHECK(back == s || (back == -1 && !strncmp(nm, "SYNDROME_0x", 11)));
	}
}

static void cqe_opcodes_named(void)
{
	for (size_t i = 0; i < N(cqe_opcodes); i++)
		CHECK_STR(gdak_mlx5_cqe_opcode_name((uint8_t)cqe_opcodes[i].code), cqe_opcodes[i].name);
	CHECK_STR(gdak_mlx5_cqe_opcode_name(7), "CQE_0x7");
	CHECK_STR(gdak_mlx5_cqe_opcode_name(0xab), "CQE_0xab");
	for (int op = 0; op < 256; op++)
		CHECK(gdak_mlx5_cqe_opcode_name((uint8_t)op) != NULL);
}

static void fences_named(void)
{
	const char *seen[8];

	CHECK_STR(gdak_mlx5_fence_name(0), "NONE");
	CHECK_STR(gdak_mlx5_fence_name(GDAK_MLX5_FENCE_FENCE), "FENCE");
	CHECK_STR(gdak_mlx5_fence_name(MLX5_WQE_CTRL_FENCE), "SMALL_AND_FENCE");
	CHECK_STR(gdak_mlx5_fence_name(MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE), "INITIATOR_SMALL");
	CHECK_STR(gdak_mlx5_fence_name(GDAK_MLX5_FENCE_STRONG_ORDERING), "STRONG_ORDERING");
	/* CE and SE bits do not change the fence name */
	CHECK_STR(gdak_mlx5_fence_name(GDAK_MLX5_FENCE_FENCE | MLX5_WQE_CTRL_CQ_UPDATE |
				       MLX5_WQE_CTRL_SOLICITED), "FENCE");
	for (int m = 0; m < 8; m++) {
		seen[m] = gdak_mlx5_fence_name((uint8_t)(m << 5));
		REQUIRE(seen[m]);
		for (int j = 0; j < m; j++)
			CHECK(strcmp(seen[j], seen[m]) != 0);
	}
}

/* Parse `enum { MLX5_<prefix>X = 0x.., }` lines out of the real header. */
static void against_installed_header(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	unsigned n_ops = 0, n_synd = 0;

	if (!f) {
		gdak_test_fail(__FILE__, __LINE__, "cannot open %s: %s", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[128];
		int val;
		const char *p = line;

		while (isspace((unsigned char)*p))
			p++;
		if (sscanf(p, "MLX5_OPCODE_%127[A-Z0-9_] = %i", name, &val) == 2) {
			n_ops++;
			if (!gdak_mlx5_op_info((uint8_t)val) ||
			    gdak_mlx5_opcode_from_name(name) != val)
				gdak_test_fail(__FILE__, __LINE__,
					       "mlx5dv.h opcode MLX5_OPCODE_%s = 0x%x has no table entry",
					       name, val);
			else
				gdak_test_passed++;
		} else if (sscanf(p, "MLX5_CQE_SYNDROME_%127[A-Z0-9_] = %i", name, &val) == 2) {
			n_synd++;
			if (gdak_mlx5_syndrome_from_name(name) != val)
				gdak_test_fail(__FILE__, __LINE__,
					       "mlx5dv.h syndrome MLX5_CQE_SYNDROME_%s = 0x%x has no name",
					       name, val);
			else
				gdak_test_passed++;
		}
	}
	fclose(f);
	printf("%s: %u opcodes, %u syndromes checked\n", path, n_ops, n_synd);
	/* the parser itself must have found what we know is there */
	CHECK(n_ops >= 20);
	CHECK(n_synd >= 13);
}

static const struct gdak_case cases[] = {
	GDAK_CASE(opcodes_named),     GDAK_CASE(op_table_consistent), GDAK_CASE(syndromes_named),
	GDAK_CASE(cqe_opcodes_named), GDAK_CASE(fences_named),
};

int main(int argc, char **argv)
{
	GDAK_TEST_RUN_CASES(argc, argv, cases);
	if (argc > 1)
		against_installed_header(argv[1]);
	else
		gdak_test_fail(__FILE__, __LINE__, "usage: %s /path/to/infiniband/mlx5dv.h", argv[0]);
	return gdak_test_end();
}
