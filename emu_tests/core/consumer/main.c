/* SPDX-License-Identifier: MIT */
/*
 * main.c - the consumer project's program: only public headers, only the
 * installed library.  Prints what it found and exits 0 when the installed
 * gdak behaves as documented (run.sh checks the output as well).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gdak/config.h>
#include <gdak/gdak.h>
#include <gdak/mlx5.h>
#include <gdak/dev/types.h>

int main(void)
{
	const char *const *b = gdak_backends();
	struct gdak_ctx *ctx = NULL;
	struct gdak_qp_info qi = {.version = GDAK_QP_INFO_VERSION, .qpn = 0x123, .psn = 7};
	struct gdak_qp_info back;
	uint8_t wire[GDAK_QP_INFO_WIRE_SIZE];
	int have_emu = 0, ret, bad = 0;

	printf("gdak %s, backends:", GDAK_VERSION_STRING);
	for (; b && *b; b++) {
		printf(" %s", *b);
		have_emu |= !strcmp(*b, "emu");
	}
	printf("\n");
	if (!have_emu) {
		fprintf(stderr, "consumer: the emu backend is missing\n");
		bad++;
	}

	printf("mlx5: opcode 0x08 = %s, syndrome 0x13 = %s, cqe 13 = %s\n",
	       gdak_mlx5_opcode_name(MLX5_OPCODE_RDMA_WRITE),
	       gdak_mlx5_syndrome_name(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR),
	       gdak_mlx5_cqe_opcode_name(MLX5_CQE_REQ_ERR));
	if (strcmp(gdak_mlx5_opcode_name(MLX5_OPCODE_RDMA_WRITE), "RDMA_WRITE") ||
	    gdak_mlx5_opcode_from_name("ATOMIC_FA") != MLX5_OPCODE_ATOMIC_FA) {
		fprintf(stderr, "consumer: mlx5 name tables wrong\n");
		bad++;
	}

	gdak_qp_info_pack(&qi, wire);
	if (gdak_qp_info_unpack(wire, &back) || back.qpn != 0x123 || back.psn != 7) {
		fprintf(stderr, "consumer: qp info round trip failed\n");
		bad++;
	}

	if (gdak_open("no-such-device", &ctx) != -ENODEV) {
		fprintf(stderr, "consumer: unknown device not refused with -ENODEV\n");
		bad++;
	}

	/* NULL: $GDAK_DEVICE or "emu".  Until the NIC model lands this may fail;
	 * then it must fail cleanly (negative errno, ctx NULL). */
	ret = gdak_open(NULL, &ctx);
	if (ret == 0) {
		printf("gdak_open(NULL): ok, backend %s, device %s\n", gdak_ctx_backend(ctx),
		       gdak_ctx_device(ctx));
		gdak_close(ctx);
	} else {
		printf("gdak_open(NULL): %d (%s)\n", ret, gdak_strerror(ret));
		if (ret > 0 || ctx != NULL) {
			fprintf(stderr, "consumer: failed open did not follow the convention\n");
			bad++;
		}
	}
	printf("sizeof(struct gdak_dev_qp) = %zu\n", sizeof(struct gdak_dev_qp));
	printf(bad ? "consumer FAILED\n" : "consumer ok\n");
	return bad ? 1 : 0;
}
