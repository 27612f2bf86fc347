/* SPDX-License-Identifier: MIT */
/*
 * rel_overlap.c - a device may legally move data between overlapping ranges
 * of one registered region (loopback to itself: RDMA_WRITE, RDMA_READ, SEND
 * into a receive buffer that overlaps the source).  Hardware reads the
 * source into packets before it writes the target, so the target ends up
 * with the source's bytes as they were before the operation (memmove, not
 * memcpy).  Found by fuzz_wqe (corpus: wqe/found-overlap-write): the NIC
 * model's host copy (nic_model/nm_dma.h nm_dma_copy) uses memcpy, whose
 * behaviour on overlap is undefined - AddressSanitizer reports
 * memcpy-param-overlap, and a memcpy that copies backwards would corrupt.
 */
#include "rel_util.h"

static struct rel_env E;

static void check_overlap(uint8_t opcode, long shift)
{
	struct gdak_qp_attr at = {.sq_depth = 16, .rq_depth = 4};
	struct nu_qp a, b;
	struct gdak_mlx5_cqe_fields f;
	uint8_t *base = E.la + 8192, want[1024];
	uint8_t *src = base, *dst = base + shift;
	const uint32_t len = 1000;

	rel_pair(&E, &at, &a, &b);
	gdak_test_fill(base - 2048, 6144, (uint64_t)(opcode * 1000 + shift + 5000));
	memcpy(want, src, len);
	if (opcode == MLX5_OPCODE_RDMA_READ)
		/* READ: dst is local (lkey), src remote (rkey) */
		nu_post_rdma(&a, opcode, dst, len, gdak_mr_lkey(E.ma), (uintptr_t)src,
			     gdak_mr_rkey(E.ma), 0, NU_SIG);
	else if (opcode == MLX5_OPCODE_SEND) {
		nu_post_recv(&b, dst, len, gdak_mr_lkey(E.ma));
		nu_post_send(&a, opcode, src, len, gdak_mr_lkey(E.ma), 0, NU_SIG);
	} else
		nu_post_rdma(&a, opcode, src, len, gdak_mr_lkey(E.ma), (uintptr_t)dst,
			     gdak_mr_rkey(E.ma), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	if (opcode == MLX5_OPCODE_SEND) {
		REQUIRE_EQ(nu_poll(&b, 1, &f, 10000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND);
		CHECK_EQ(f.byte_cnt, len);
	}
	CHECK_MEM(dst, want, len);
	nu_destroy(&a);
	nu_destroy(&b);
}

int main(void)
{
	static const uint8_t ops[] = {MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_READ,
				      MLX5_OPCODE_SEND};
	rel_env_open(&E, 1);
	for (unsigned i = 0; i < sizeof(ops); i++) {
		check_overlap(ops[i], 100);	/* target above the source */
		check_overlap(ops[i], -100);	/* target below the source */
	}
	rel_bystanders_ok(&E);
	rel_env_close(&E);
	return gdak_test_end();
}
