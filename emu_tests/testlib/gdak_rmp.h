/* SPDX-License-Identifier: MIT */
/*
 * gdak_rmp.h - a DEVX RMP as a test drives it: the CREATE_RMP mailbox
 * (offsets from the PRM's create_rmp_in / rmpc / wq layouts, this file's
 * own) and the program's side of a linked-list receive ring - WQEs of a
 * 16-byte next segment and data segments, posted at the free list's head
 * as libmlx5 posts to an SRQ, the record counting them.
 */
#ifndef GDAK_RMP_H
#define GDAK_RMP_H

#include <stdint.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gdak_prm.h"

/* create_rmp_in: header 0x40, reserved 0xc0, rmpc at 0x100; rmpc.wq at
 * rmpc + 0x180 */
#define RMP_IN_LEN (0x880 / 8)
#define RMPC(off, w) 0x100 + (off), (w)
#define RMPWQ(off, w) 0x100 + 0x180 + (off), (w)
#define RMPWQ_DBR_ADDR (0x100 + 0x180 + 0x80)
#define RMPWQ_UMEM_OFFSET (0x100 + 0x180 + 0x180)

struct trmp {
	uint8_t *ring;
	uint32_t *dbr; /* be32 [0]: WQEs posted */
	uint32_t log_sz, stride;
	uint32_t head, posted;
};

/* CREATE_RMP for a linked-list ring of 1 << log_sz WQEs of stride bytes in
 * umem wq_id at offset 0, its record at dbr_off of umem dbr_id. */
static inline void rmp_fill(uint8_t *in, uint32_t pdn, uint32_t log_sz, uint32_t log_stride,
			    uint32_t wq_id, uint32_t dbr_id, uint64_t dbr_off, uint32_t lwm)
{
	memset(in, 0, RMP_IN_LEN);
	prm_set(in, PRM_OPCODE, 0x90c);
	prm_set(in, RMPC(0x08, 4), 1);	/* state RDY */
	prm_set(in, RMPWQ(0x00, 4), 0); /* wq_type linked list */
	prm_set(in, RMPWQ(0x30, 16), lwm);
	prm_set(in, RMPWQ(0x48, 24), pdn);
	prm_set64(in, RMPWQ_DBR_ADDR, dbr_off);
	prm_set(in, RMPWQ(0x10c, 4), log_stride);
	prm_set(in, RMPWQ(0x11b, 5), log_sz);
	prm_set(in, RMPWQ(0x120, 1), 1); /* dbr_umem_valid */
	prm_set(in, RMPWQ(0x121, 1), 1); /* wq_umem_valid */
	prm_set(in, RMPWQ(0x140, 32), dbr_id);
	prm_set(in, RMPWQ(0x160, 32), wq_id);
	prm_set64(in, RMPWQ_UMEM_OFFSET, 0);
}

/* The free list as libmlx5 lays an SRQ's out: WQE i links to link[i]. */
static inline void rmp_link(struct trmp *r, const uint16_t *link)
{
	for (uint32_t i = 0; i < (1u << r->log_sz); i++) {
		struct mlx5_wqe_srq_next_seg *n = (void *)(r->ring + (size_t)i * r->stride);

		n->next_wqe_index = htobe16(link[i]);
	}
	r->head = 0;
}

/* Post one WQE at the head: nseg data segments of len bytes from addr
 * (the list ended by MLX5_INVALID_LKEY when shorter than the stride
 * holds), the record last.  Returns the index posted. */
static inline uint32_t rmp_post(struct trmp *r, uint8_t *addr, uint32_t lkey, uint32_t len,
				unsigned nseg)
{
	uint32_t idx = r->head;
	uint8_t *w = r->ring + (size_t)idx * r->stride;
	struct mlx5_wqe_data_seg *d = (void *)(w + 16);
	unsigned max = (r->stride - 16) / 16, i;

	for (i = 0; i < nseg && i < max; i++) {
		d[i].byte_count = htobe32(len);
		d[i].lkey = htobe32(lkey);
		d[i].addr = htobe64((uintptr_t)(addr + (size_t)i * len));
	}
	if (i < max) {
		d[i].byte_count = 0;
		d[i].lkey = htobe32(MLX5_INVALID_LKEY);
		d[i].addr = 0;
	}
	r->head = be16toh(((struct mlx5_wqe_srq_next_seg *)(void *)w)->next_wqe_index);
	r->posted++;
	__atomic_store_n(r->dbr, htobe32(r->posted & 0xffff), __ATOMIC_RELEASE);
	return idx;
}

#endif /* GDAK_RMP_H */
