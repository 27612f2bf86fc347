/* SPDX-License-Identifier: MIT */
/*
 * mlx5_names.c - the opcode / CQE-opcode / syndrome tables.
 *
 * One table per family; the NIC model's parser and checks, the device API's
 * tests and gdak-trace all read these.  DS ranges follow the PRM's WQE
 * construction rules: ctrl (1) + raddr (1) + data (1 per SGE, or inline DS).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#define OP(code, nm, mn, mx, resp, fl, acc) \
	{ .opcode = (code), .name = (nm), .min_ds = (mn), .max_ds = (mx), \
	  .req_cqe = MLX5_CQE_REQ, .resp_cqe = (resp), .flags = (fl), .remote_access = (acc) }

/* the atomics: ctrl + raddr + atomic segment(s) + one data segment, exactly */
#define ATOMIC_OP(code, nm, ds, seg)                                                            \
	OP(code, nm, ds, ds, 0xff,                                                              \
	   GDAK_OPF_RADDR | (seg) | GDAK_OPF_DATA | GDAK_OPF_READS_REMOTE | GDAK_OPF_SUPPORTED, \
	   GDAK_ACCESS_REMOTE_ATOMIC)

static const struct gdak_mlx5_op_info op_table[] = {
	OP(MLX5_OPCODE_NOP, "NOP", 1, GDAK_MLX5_MAX_DS, 0xff, GDAK_OPF_SUPPORTED, 0),
	OP(MLX5_OPCODE_SEND_INVAL, "SEND_INVAL", 1, GDAK_MLX5_MAX_DS, MLX5_CQE_RESP_SEND_INV,
	   GDAK_OPF_DATA | GDAK_OPF_INLINE_OK, 0),
	OP(MLX5_OPCODE_RDMA_WRITE, "RDMA_WRITE", 2, GDAK_MLX5_MAX_DS, 0xff,
	   GDAK_OPF_RADDR | GDAK_OPF_DATA | GDAK_OPF_INLINE_OK | GDAK_OPF_SUPPORTED,
	   GDAK_ACCESS_REMOTE_WRITE),
	OP(MLX5_OPCODE_RDMA_WRITE_IMM, "RDMA_WRITE_IMM", 2, GDAK_MLX5_MAX_DS, MLX5_CQE_RESP_WR_IMM,
	   GDAK_OPF_RADDR | GDAK_OPF_DATA | GDAK_OPF_IMM | GDAK_OPF_INLINE_OK | GDAK_OPF_SUPPORTED,
	   GDAK_ACCESS_REMOTE_WRITE),
	OP(MLX5_OPCODE_SEND, "SEND", 1, GDAK_MLX5_MAX_DS, MLX5_CQE_RESP_SEND,
	   GDAK_OPF_DATA | GDAK_OPF_INLINE_OK | GDAK_OPF_SUPPORTED, 0),
	OP(MLX5_OPCODE_SEND_IMM, "SEND_IMM", 1, GDAK_MLX5_MAX_DS, MLX5_CQE_RESP_SEND_IMM,
	   GDAK_OPF_DATA | GDAK_OPF_IMM | GDAK_OPF_INLINE_OK | GDAK_OPF_SUPPORTED, 0),
	OP(MLX5_OPCODE_TSO, "TSO", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
	OP(GDAK_MLX5_OPCODE_WAIT, "WAIT", 2, 2, 0xff, GDAK_OPF_SUPPORTED, 0),
	/* DS 2 (ctrl + raddr, no data segment) is a zero-length READ: what
	 * libmlx5 posts for one, and what a ConnectX executes */
	OP(MLX5_OPCODE_RDMA_READ, "RDMA_READ", 2, GDAK_MLX5_MAX_DS, 0xff,
	   GDAK_OPF_RADDR | GDAK_OPF_DATA | GDAK_OPF_READS_REMOTE | GDAK_OPF_SUPPORTED,
	   GDAK_ACCESS_REMOTE_READ),
	ATOMIC_OP(MLX5_OPCODE_ATOMIC_CS, "ATOMIC_CS", 4, GDAK_OPF_ATOMIC),
	ATOMIC_OP(MLX5_OPCODE_ATOMIC_FA, "ATOMIC_FA", 4, GDAK_OPF_ATOMIC),
	ATOMIC_OP(MLX5_OPCODE_ATOMIC_MASKED_CS, "ATOMIC_MASKED_CS", 5, GDAK_OPF_MASKED),
	ATOMIC_OP(MLX5_OPCODE_ATOMIC_MASKED_FA, "ATOMIC_MASKED_FA", 5, GDAK_OPF_MASKED),
	OP(MLX5_OPCODE_FMR, "FMR", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
	OP(MLX5_OPCODE_LOCAL_INVAL, "LOCAL_INVAL", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
	OP(MLX5_OPCODE_CONFIG_CMD, "CONFIG_CMD", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
	OP(MLX5_OPCODE_SET_PSV, "SET_PSV", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
	OP(GDAK_MLX5_OPCODE_DUMP, "DUMP", 2, GDAK_MLX5_MAX_DS, 0xff,
	   GDAK_OPF_DATA | GDAK_OPF_SUPPORTED, 0),
	OP(MLX5_OPCODE_UMR, "UMR", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
	OP(MLX5_OPCODE_TAG_MATCHING, "TAG_MATCHING", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
	OP(MLX5_OPCODE_FLOW_TBL_ACCESS, "FLOW_TBL_ACCESS", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
	OP(MLX5_OPCODE_MMO, "MMO", 1, GDAK_MLX5_MAX_DS, 0xff, 0, 0),
};
#define N_OPS (sizeof(op_table) / sizeof(op_table[0]))

/* Direct index by opcode for the data path (opcodes are < 0x40). */
static const struct gdak_mlx5_op_info *op_index[256];
__attribute__((constructor)) static void build_op_index(void)
{
	for (size_t i = 0; i < N_OPS; i++)
		op_index[op_table[i].opcode] = &op_table[i];
}

const struct gdak_mlx5_op_info *gdak_mlx5_op_info(uint8_t opcode) { return op_index[opcode]; }

const struct gdak_mlx5_op_info *gdak_mlx5_op_table(size_t *n)
{
	if (n)
		*n = N_OPS;
	return op_table;
}

/*
 * Names for codes no table knows ("OPCODE_0x3e"): one preformatted string per
 * possible 8-bit code, so two calls in one printf, or calls from several
 * threads, never share a buffer.
 */
static char unknown_op[256][16], unknown_cqe[256][12], unknown_synd[256][16];
__attribute__((constructor)) static void build_unknown_names(void)
{
	for (int i = 0; i < 256; i++) {
		snprintf(unknown_op[i], sizeof(unknown_op[i]), "OPCODE_0x%02x", i);
		snprintf(unknown_cqe[i], sizeof(unknown_cqe[i]), "CQE_0x%x", i);
		snprintf(unknown_synd[i], sizeof(unknown_synd[i]), "SYNDROME_0x%02x", i);
	}
}

const char *gdak_mlx5_opcode_name(uint8_t opcode)
{
	const struct gdak_mlx5_op_info *oi = op_index[opcode];
	return oi ? oi->name : unknown_op[opcode];
}

static const char *const cqe_names[16] = {
	[MLX5_CQE_REQ] = "REQ",
	[MLX5_CQE_RESP_WR_IMM] = "RESP_WR_IMM",
	[MLX5_CQE_RESP_SEND] = "RESP_SEND",
	[MLX5_CQE_RESP_SEND_IMM] = "RESP_SEND_IMM",
	[MLX5_CQE_RESP_SEND_INV] = "RESP_SEND_INV",
	[MLX5_CQE_RESIZE_CQ] = "RESIZE_CQ",
	[MLX5_CQE_NO_PACKET] = "NO_PACKET",
	[MLX5_CQE_SIG_ERR] = "SIG_ERR",
	[MLX5_CQE_REQ_ERR] = "REQ_ERR",
	[MLX5_CQE_RESP_ERR] = "RESP_ERR",
	[MLX5_CQE_INVALID] = "INVALID",
};

const char *gdak_mlx5_cqe_opcode_name(uint8_t op)
{
	if (op < 16 && cqe_names[op])
		return cqe_names[op];
	return unknown_cqe[op];
}

static const struct {
	uint8_t code;
	const char *name;
} syndrome_table[] = {
	{MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, "LOCAL_LENGTH_ERR"},
	{MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "LOCAL_QP_OP_ERR"},
	{MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, "LOCAL_PROT_ERR"},
	{MLX5_CQE_SYNDROME_WR_FLUSH_ERR, "WR_FLUSH_ERR"},
	{MLX5_CQE_SYNDROME_MW_BIND_ERR, "MW_BIND_ERR"},
	{MLX5_CQE_SYNDROME_BAD_RESP_ERR, "BAD_RESP_ERR"},
	{MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, "LOCAL_ACCESS_ERR"},
	{MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "REMOTE_INVAL_REQ_ERR"},
	{MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, "REMOTE_ACCESS_ERR"},
	{MLX5_CQE_SYNDROME_REMOTE_OP_ERR, "REMOTE_OP_ERR"},
	{MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, "TRANSPORT_RETRY_EXC_ERR"},
	{MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, "RNR_RETRY_EXC_ERR"},
	{MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, "REMOTE_ABORTED_ERR"},
};
#define N_SYND (sizeof(syndrome_table) / sizeof(syndrome_table[0]))

const char *gdak_mlx5_syndrome_name(uint8_t s)
{
	if (!s)
		return "OK";
	for (size_t i = 0; i < N_SYND; i++)
		if (syndrome_table[i].code == s)
			return syndrome_table[i].name;
	return unknown_synd[s];
}

const char *gdak_mlx5_fence_name(uint8_t fm_ce_se)
{
	static const char *const names[8] = {"NONE", "INITIATOR_SMALL", "FENCE", "STRONG_ORDERING",
					     "SMALL_AND_FENCE", "FENCE_5", "FENCE_6", "FENCE_7"};
	return names[(fm_ce_se & GDAK_MLX5_FENCE_MASK) >> 5];
}

static const char *skip_prefix(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncasecmp(name, prefix, n) ? name : name + n;
}

int gdak_mlx5_opcode_from_name(const char *name)
{
	if (!name)
		return -1;
	name = skip_prefix(name, "MLX5_OPCODE_");
	for (size_t i = 0; i < N_OPS; i++)
		if (!strcasecmp(op_table[i].name, name))
			return op_table[i].opcode;
	return -1;
}

int gdak_mlx5_syndrome_from_name(const char *name)
{
	if (!name)
		return -1;
	name = skip_prefix(name, "MLX5_CQE_SYNDROME_");
	for (size_t i = 0; i < N_SYND; i++) {
		size_t n = strlen(name);
		if (!strcasecmp(syndrome_table[i].name, name) ||
		    (!strncasecmp(syndrome_table[i].name, name, n) &&
		     !strcasecmp(syndrome_table[i].name + n, "_ERR")))
			return syndrome_table[i].code;
	}
	return -1;
}
