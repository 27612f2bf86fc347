/* SPDX-License-Identifier: MIT */
/*
 * gdak_cq_ring.h - a test reading an mlx5 CQ ring by hand, as device code
 * does: the verbs / DEVX tests that own their rings (verbs_dc.c,
 * verbs_devx.c, gdak_devx_qp.h).
 */
#ifndef GDAK_CQ_RING_H
#define GDAK_CQ_RING_H

#include <sched.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>

/*
 * The CQE at consumer index ci of a ring of ncqe (a power of two) 64-byte
 * CQEs at cqb, once the device has written it: not INVALID, its owner bit
 * that of ci's pass over the ring.  Waits, bounded by the test's timeout
 * only; the caller advances its counter and the CQ's record.
 */
static inline struct mlx5_cqe64 *gdak_cq_ring_wait(uint8_t *cqb, uint32_t ncqe, uint32_t ci)
{
	struct mlx5_cqe64 *e = (struct mlx5_cqe64 *)(void *)(cqb + (ci % ncqe) * 64);
	unsigned owner = (ci / ncqe) & 1;

	for (;;) {
		uint8_t op_own = __atomic_load_n(&e->op_own, __ATOMIC_ACQUIRE);

		if ((op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == owner)
			return e;
		sched_yield();
	}
}

#endif /* GDAK_CQ_RING_H */
