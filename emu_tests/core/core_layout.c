/* SPDX-License-Identifier: MIT */
/*
 * core_layout.c - every size and offset gdak relies on, pinned.
 *
 * The WQE/CQE bytes are the hardware's (mlx5 PRM "Send WQE format",
 * "Completion Queue Entry format"); rdma-core's structs describe them and
 * gdak's own additions must agree byte for byte.  The static_asserts in
 * mlx5.h stop a build that breaks them; this test also names every field, so
 * a changed rdma-core shows which one moved.
 */
#include <stddef.h>
#include <gdak/gdak.h>
#include <gdak/mlx5.h>
#include <gdak/dev/types.h>
#include "gdak_case.h"
#include "gdak_test.h"

#define OFF(type, field, want) CHECK_EQ(offsetof(struct type, field), want)
#define SIZE(type, want) CHECK_EQ(sizeof(struct type), want)

static void rdma_core_wqe_segments(void)
{
	SIZE(mlx5_wqe_ctrl_seg, 16);
	OFF(mlx5_wqe_ctrl_seg, opmod_idx_opcode, 0);
	OFF(mlx5_wqe_ctrl_seg, qpn_ds, 4);
	OFF(mlx5_wqe_ctrl_seg, signature, 8);
	OFF(mlx5_wqe_ctrl_seg, dci_stream_channel_id, 9);
	OFF(mlx5_wqe_ctrl_seg, fm_ce_se, 11);
	OFF(mlx5_wqe_ctrl_seg, imm, 12);

	SIZE(mlx5_wqe_raddr_seg, 16);
	OFF(mlx5_wqe_raddr_seg, raddr, 0);
	OFF(mlx5_wqe_raddr_seg, rkey, 8);
	OFF(mlx5_wqe_raddr_seg, reserved, 12);

	SIZE(mlx5_wqe_data_seg, 16);
	OFF(mlx5_wqe_data_seg, byte_count, 0);
	OFF(mlx5_wqe_data_seg, lkey, 4);
	OFF(mlx5_wqe_data_seg, addr, 8);

	SIZE(mlx5_wqe_atomic_seg, 16);
	OFF(mlx5_wqe_atomic_seg, swap_add, 0);
	OFF(mlx5_wqe_atomic_seg, compare, 8);

	SIZE(mlx5_wqe_inl_data_seg, 4);
	OFF(mlx5_wqe_inl_data_seg, byte_count, 0);
}

static void rdma_core_cqe(void)
{
	SIZE(mlx5_cqe64, 64);
	OFF(mlx5_cqe64, srqn_uidx, 32);
	OFF(mlx5_cqe64, imm_inval_pkey, 36);
	OFF(mlx5_cqe64, app, 40);
	OFF(mlx5_cqe64, byte_cnt, 44);
	OFF(mlx5_cqe64, timestamp, 48);
	OFF(mlx5_cqe64, sop_drop_qpn, 56);
	OFF(mlx5_cqe64, wqe_counter, 60);
	OFF(mlx5_cqe64, signature, 62);
	OFF(mlx5_cqe64, op_own, 63);

	/* rdma-core's own error CQE: syndromes at 54/55 as gdak's */
	SIZE(mlx5_err_cqe, 64);
	OFF(mlx5_err_cqe, vendor_err_synd, 54);
	OFF(mlx5_err_cqe, syndrome, 55);
	OFF(mlx5_err_cqe, s_wqe_opcode_qpn, 56);
	OFF(mlx5_err_cqe, wqe_counter, 60);
	OFF(mlx5_err_cqe, op_own, 63);
}

static void gdak_additions(void)
{
	SIZE(gdak_mlx5_masked_atomic_seg, 32);
	OFF(gdak_mlx5_masked_atomic_seg, swap_add, 0);
	OFF(gdak_mlx5_masked_atomic_seg, compare, 8);
	OFF(gdak_mlx5_masked_atomic_seg, swap_add_mask, 16);
	OFF(gdak_mlx5_masked_atomic_seg, compare_mask, 24);

	SIZE(gdak_mlx5_err_cqe, 64);
	OFF(gdak_mlx5_err_cqe, srqn, 32);
	OFF(gdak_mlx5_err_cqe, hw_error_syndrome, 52);
	OFF(gdak_mlx5_err_cqe, hw_syndrome_type, 53);
	OFF(gdak_mlx5_err_cqe, vendor_err_synd, 54);
	OFF(gdak_mlx5_err_cqe, syndrome, 55);
	OFF(gdak_mlx5_err_cqe, s_wqe_opcode_qpn, 56);
	OFF(gdak_mlx5_err_cqe, wqe_counter, 60);
	OFF(gdak_mlx5_err_cqe, signature, 62);
	OFF(gdak_mlx5_err_cqe, op_own, 63);
	/* gdak's error CQE overlays rdma-core's at the fields both name */
	CHECK_EQ(offsetof(struct gdak_mlx5_err_cqe, syndrome), offsetof(struct mlx5_err_cqe, syndrome));
	CHECK_EQ(offsetof(struct gdak_mlx5_err_cqe, s_wqe_opcode_qpn),
		 offsetof(struct mlx5_err_cqe, s_wqe_opcode_qpn));
}

static void constants(void)
{
	/* rdma-core's */
	CHECK_EQ(MLX5_SEND_WQE_BB, 64);
	CHECK_EQ(MLX5_SEND_WQE_SHIFT, 6);
	CHECK_EQ(MLX5_INLINE_SEG, 0x80000000u);
	CHECK_EQ(MLX5_RCV_DBR, 0);
	CHECK_EQ(MLX5_SND_DBR, 1);
	CHECK_EQ(MLX5_WQE_CTRL_CQ_UPDATE, 0x08);
	CHECK_EQ(MLX5_WQE_CTRL_SOLICITED, 0x02);
	CHECK_EQ(MLX5_WQE_CTRL_FENCE, 4 << 5);
	CHECK_EQ(MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE, 1 << 5);
	CHECK_EQ(MLX5_CQE_OWNER_MASK, 1);
	CHECK_EQ(MLX5_CQE_INVALID, 15);

	/* gdak's: the same numbers seen from the other side */
	CHECK_EQ(GDAK_MLX5_DS_BYTES * GDAK_MLX5_WQEBB_DS, MLX5_SEND_WQE_BB);
	CHECK_EQ(GDAK_MLX5_MAX_DS, 0x3f);
	CHECK_EQ(GDAK_MLX5_DB_OFFSET, 0x800);
	CHECK_EQ(GDAK_MLX5_UAR_PAGE, 4096);
	CHECK_EQ(GDAK_MLX5_CQE_SIZE, sizeof(struct mlx5_cqe64));
	CHECK_EQ(GDAK_MLX5_CQE_INVALID_OP_OWN, (MLX5_CQE_INVALID << 4) | 1);
	CHECK_EQ(GDAK_MLX5_OPCODE_WAIT, 0x0f);
	CHECK_EQ(GDAK_MLX5_OPCODE_DUMP, 0x23);
	CHECK_EQ(GDAK_MLX5_FENCE_SMALL_AND_FENCE, MLX5_WQE_CTRL_FENCE);
	CHECK_EQ(GDAK_MLX5_FENCE_INITIATOR_SMALL, MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
	CHECK_EQ(GDAK_MLX5_FENCE_FENCE, 0x40);
	CHECK_EQ(GDAK_MLX5_FENCE_MASK, 0xe0);
	CHECK_EQ(GDAK_MLX5_CE_MASK & MLX5_WQE_CTRL_CQ_UPDATE, MLX5_WQE_CTRL_CQ_UPDATE);
	CHECK_EQ(GDAK_MLX5_CE_MASK & (MLX5_WQE_CTRL_SOLICITED | GDAK_MLX5_FENCE_MASK), 0);
	/* fence, CE and SE bits do not overlap */
	CHECK_EQ(GDAK_MLX5_FENCE_MASK & MLX5_WQE_CTRL_SOLICITED, 0);
}

static void gdak_abi(void)
{
	/* The exported descriptors are ABI between host and device code. */
	SIZE(gdak_dev_cq, 72);
	SIZE(gdak_dev_qp, 320);
	OFF(gdak_dev_cq, version, 0);
	OFF(gdak_dev_qp, version, 0);
	CHECK(GDAK_DEV_ABI_VERSION >= 1);
	CHECK_EQ(offsetof(struct gdak_dev_qp, version) % 8, 0);
	CHECK_EQ(sizeof(struct gdak_dev_qp) % 8, 0);
	CHECK_EQ(sizeof(struct gdak_dev_cq) % 8, 0);

	/* the access bits are the verbs values (IBV_ACCESS_*) */
	CHECK_EQ(GDAK_ACCESS_LOCAL_WRITE, 1);
	CHECK_EQ(GDAK_ACCESS_REMOTE_WRITE, 2);
	CHECK_EQ(GDAK_ACCESS_REMOTE_READ, 4);
	CHECK_EQ(GDAK_ACCESS_REMOTE_ATOMIC, 8);
	CHECK_EQ(GDAK_QP_INFO_WIRE_SIZE, 64);
	CHECK_EQ(GDAK_DEV_DB_HANDLER_COUNT, 3);
}

static const struct gdak_case cases[] = { GDAK_CASE(rdma_core_wqe_segments),
					  GDAK_CASE(rdma_core_cqe), GDAK_CASE(gdak_additions),
					  GDAK_CASE(constants), GDAK_CASE(gdak_abi) };

int main(int argc, char **argv)
{
	return GDAK_TEST_CASES(argc, argv, cases);
}
