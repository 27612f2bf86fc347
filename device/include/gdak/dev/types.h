/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/types.h - the descriptors shared by the host (which fills them)
 * and device code (which drives the queues through them).
 *
 * They live in device-visible memory (pinned host memory mapped into the GPU
 * for the NIC model; host or GPU memory for hw_mlx5).  Every pointer in them
 * is valid on the device that runs the code: under CUDA's unified addressing
 * a mapped host pointer is also the device pointer.  Layout is ABI: each
 * struct starts with a version and its size is pinned by static_assert.
 *
 * Compiles as C11, as C++17 and under nvcc.
 */
#ifndef GDAK_DEV_TYPES_H
#define GDAK_DEV_TYPES_H

#include <stdint.h>

#include <gdak/qp_modes.h> /* enum gdak_dev_db_handler, enum gdak_dev_sharing */

#define GDAK_DEV_ABI_VERSION 1u

/* A completion queue as device code sees it. */
struct gdak_dev_cq {
	uint32_t version;	/* GDAK_DEV_ABI_VERSION */
	uint32_t cqn;
	uint32_t ncqe;		/* entries, a power of two */
	uint32_t log_ncqe;
	void *cqes;		/* struct mlx5_cqe64[ncqe], 64-byte aligned */
	uint32_t *dbrec;	/* be32: dbrec[0] = consumer index & 0xffffff */
	uint64_t cons_idx;	/* device-owned: next CQE to examine */
	uint32_t lock;		/* device-owned: serialises polling in shared mode */
	/* Sticky error, device-owned (the host may read it): the first error
	 * CQE this CQ returned.  0 = none, else GDAK_DEV_CQ_ERR_VALID | fields
	 * (see gdak/dev/cq.h); written after the err_* fields below. */
	uint32_t err;
	uint16_t err_wqe_counter; /* the error CQE's wqe_counter */
	uint16_t err_pad;
	uint32_t err_qpn;
	uint64_t err_wqe_index;	/* that WQE's 64-bit index in its work queue */
	uint32_t flags;		/* host-filled, GDAK_DEV_CQ_F_* (how the CQ was created) */
	uint32_t reserved;
};

/* struct gdak_dev_cq flags (gdak.h's GDAK_QP_F_*CQ_* attributes) */
enum {
	GDAK_DEV_CQ_F_OVERRUN_IGNORE = 1u << 0, /* the NIC never reads dbrec */
	GDAK_DEV_CQ_F_COLLAPSED = 1u << 1,	/* every CQE lands in entry 0 */
};

/* A queue pair as device code sees it. */
struct gdak_dev_qp {
	uint32_t version;	/* GDAK_DEV_ABI_VERSION */
	uint32_t qpn;
	uint32_t qpn_ds_be;	/* be32(qpn << 8): OR in be32(ds) for ctrl.qpn_ds */
	uint32_t sq_wqebb_cnt;	/* SQ size in WQEBBs, a power of two */
	uint32_t sq_log_cnt;
	uint16_t handler; /* enum gdak_dev_db_handler */
	/* Host-filled: log2 bytes of one half of the BlueFlame register (the
	 * register at db_reg and the one 1 << bf_log_half bytes after it);
	 * 0 = a single register.  rdma-core alternates between the halves
	 * after every register write (bf->offset ^= bf->buf_size). */
	uint8_t bf_log_half;
	uint8_t bf_half;	/* device-owned: the half the next register write uses */
	uint32_t sharing;	/* enum gdak_dev_sharing */
	uint32_t max_inline;	/* inline payload bytes one WQE may carry */
	void *sq_buf;		/* sq_wqebb_cnt * 64 bytes, 64-byte aligned */
	uint32_t *dbrec;	/* be32 dbrec[0] receive counter, dbrec[1] send counter */
	uint64_t *db_reg;	/* doorbell / BlueFlame register (UAR page + 0x800) */
	uint64_t *proxy_pi;	/* CPU_PROXY: producer index the device publishes */

	/* Send-queue indices (WQEBB units, 64-bit so they never wrap in practice;
	 * the hardware sees the low 16 bits).  Device-owned. */
	uint64_t sq_resv;	/* next WQEBB to hand out */
	uint64_t sq_ready;	/* WQEBBs made visible to the NIC (doorbell record value) */
	uint64_t sq_done;	/* WQEBBs whose completion device code has seen */
	uint64_t sq_db;		/* WQEBBs the doorbell has been rung for */

	struct gdak_dev_cq scq;	/* send completions */

	/* Receive queue (two-sided operations); rq_buf == NULL when absent. */
	void *rq_buf;		/* rq_wqe_cnt * (1 << rq_log_stride) bytes */
	uint32_t rq_wqe_cnt;	/* a power of two */
	uint32_t rq_log_stride;	/* log2 bytes per receive WQE (16 * max_sge) */
	uint64_t rq_pi;		/* device-owned: receive WQEs posted */
	uint64_t rq_done;	/* device-owned: receive completions seen */
	struct gdak_dev_cq rcq;	/* receive completions */

	/* Per-slot bookkeeping for shared mode: WQEBB count of the WQE starting
	 * at each slot, so completions can retire multi-WQEBB WQEs; sized
	 * sq_wqebb_cnt, device-visible. NULL when unused.  The device API does
	 * not need it: it reads the count from the completed WQE's ctrl DS
	 * field (gdak_dev_wqe_bbs_at), whose slot cannot have been reused. */
	uint8_t *sq_slot_bbs;

	uint64_t sq_sig;	/* device-owned: end index of the last signalled WQE submitted */
	/* Host-filled: 8 bytes of registered local memory that receive the
	 * (discarded) fetched value of put+signal's ATOMIC_FA; 0 = none. */
	uint64_t scratch_addr;
	uint32_t scratch_lkey;
	uint32_t rq_lock;	/* device-owned: serialises receive post/poll in shared mode */
	/* Bound on the waits inside posting calls (ring space, producer order),
	 * nanoseconds; 0 = wait forever.  Host- or device-set. */
	uint64_t wait_timeout_ns;
	/* Device-owned, EXCLUSIVE mode: start index of the WQE that sq_sig ends
	 * (the last signalled one).  A CQE naming it retires up to sq_sig
	 * without re-reading the WQE's ctrl segment from the ring (a PCIe round
	 * trip when the ring is host memory mapped into the GPU).  Used only
	 * while sq_done <= sq_sig_start < sq_sig; code that moves the indices
	 * by hand zeroes both. */
	uint64_t sq_sig_start;
};

/*
 * A Dynamically Connected address vector: what a DCI's WQE carries right
 * after its ctrl segment to name the DCT it goes to (the datagram segment,
 * rdma-core's struct mlx5_wqe_av).  The host builds it once per peer DCT
 * (gdak_dc_av) and device code copies its ds * 16 bytes into each WQE.
 *   bytes 0..7   be64 DC access key
 *   bytes 8..11  be32 DCT number, bit 31 set in the full (48-byte) form
 *   bytes 12..15 stat_rate_sl, fl_mlid, be16 remote LID
 *   bytes 16..47 full form only: reserved, rmac, tclass, hop_limit,
 *                be32 grh_gid_fl (bit 30 GRH, source GID index << 20,
 *                flow label), the remote GID
 * The compact form (ds 1: bytes 0..15, bit 31 clear) needs HCA cap
 * compact_address_vector and reaches LID-routed peers only.
 */
struct gdak_dev_av {
	uint32_t version;  /* GDAK_DEV_ABI_VERSION */
	uint32_t ds;	   /* 16-byte units it occupies in a WQE: 1 or 3 */
	uint64_t words[6]; /* the bytes above in memory order */
};

#ifdef __cplusplus
#define GDAK_DEV_STATIC_ASSERT static_assert
#else
#define GDAK_DEV_STATIC_ASSERT _Static_assert
#endif
GDAK_DEV_STATIC_ASSERT(sizeof(struct gdak_dev_cq) == 72, "gdak_dev_cq layout is ABI");
GDAK_DEV_STATIC_ASSERT(sizeof(struct gdak_dev_qp) == 320, "gdak_dev_qp layout is ABI");
GDAK_DEV_STATIC_ASSERT(sizeof(struct gdak_dev_av) == 56, "gdak_dev_av layout is ABI");

#endif /* GDAK_DEV_TYPES_H */
