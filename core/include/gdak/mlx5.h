/* SPDX-License-Identifier: MIT */
/*
 * gdak/mlx5.h - the mlx5 WQE/CQE formats as gdak uses them.
 *
 * Builds on rdma-core's <infiniband/mlx5dv.h> (structs mlx5_wqe_ctrl_seg,
 * mlx5_wqe_raddr_seg, mlx5_wqe_data_seg, mlx5_wqe_atomic_seg, mlx5_cqe64,
 * MLX5_OPCODE_*, MLX5_CQE_*, syndromes) and adds only what it lacks: the WAIT
 * and DUMP opcodes and the WAIT segment, the masked and extended (4-byte)
 * atomic segments, the full error-CQE layout,
 * fence modes, and name/property tables shared by the WQE builders' tests,
 * the NIC model's parser and checks, and the trace decoder.
 *
 * The inline helpers are usable from host code and (GDAK_HD) CUDA device
 * code; byte order is converted only inside them.
 */
#ifndef GDAK_MLX5_H
#define GDAK_MLX5_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>

#if defined(__CUDACC__)
#define GDAK_HD __host__ __device__ __forceinline__
#else
#define GDAK_HD static inline __attribute__((always_inline))
#endif

#ifdef __cplusplus
#define GDAK_STATIC_ASSERT static_assert
extern "C" {
#else
#define GDAK_STATIC_ASSERT _Static_assert
#endif

/* ---- byte order (the wire/ring formats are big-endian) ----------------- */

GDAK_HD uint16_t gdak_bswap16(uint16_t x) { return (uint16_t)((x >> 8) | (x << 8)); }
GDAK_HD uint32_t gdak_bswap32(uint32_t x)
{
	return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}
GDAK_HD uint64_t gdak_bswap64(uint64_t x)
{
	return ((uint64_t)gdak_bswap32((uint32_t)x) << 32) | gdak_bswap32((uint32_t)(x >> 32));
}
/* gdak targets little-endian hosts and GPUs only (x86-64, aarch64, CUDA). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gdak assumes a little-endian host"
#endif
#define gdak_htobe16 gdak_bswap16
#define gdak_htobe32 gdak_bswap32
#define gdak_htobe64 gdak_bswap64
#define gdak_be16toh gdak_bswap16
#define gdak_be32toh gdak_bswap32
#define gdak_be64toh gdak_bswap64

/* ---- what mlx5dv.h lacks ------------------------------------------------- */

enum {
	/* used by GPU-initiated stacks (DOCA, NVSHMEM), absent from mlx5dv.h */
	GDAK_MLX5_OPCODE_WAIT = 0x0f,
	GDAK_MLX5_OPCODE_DUMP = 0x23,
};

/*
 * Fence modes, ctrl.fm_ce_se bits 7:5 (PRM "Send WQE ctrl segment").
 * rdma-core's MLX5_WQE_CTRL_FENCE is 4<<5 ("small-and-fence"); DOCA uses
 * 2<<5 ("fence").  gdak gives every non-zero mode the same meaning: the WQE
 * does not start until every earlier RDMA_READ and atomic of the QP has
 * completed (IBA 10.8.3.3, "fence indicator").  NONE (0) orders nothing.
 */
enum {
	GDAK_MLX5_FENCE_NONE = 0 << 5,
	GDAK_MLX5_FENCE_INITIATOR_SMALL = 1 << 5,
	GDAK_MLX5_FENCE_FENCE = 2 << 5,
	GDAK_MLX5_FENCE_STRONG_ORDERING = 3 << 5,
	GDAK_MLX5_FENCE_SMALL_AND_FENCE = 4 << 5,
	GDAK_MLX5_FENCE_MASK = 7 << 5,
};
enum {
	GDAK_MLX5_CE_MASK = 3 << 2, /* CQ_UPDATE is 2<<2; 3<<2 ("always, and on error") treated alike */
};

enum {
	GDAK_MLX5_DS_BYTES = 16,
	GDAK_MLX5_WQEBB_DS = 4,	       /* DS per WQEBB */
	GDAK_MLX5_MAX_DS = 63,	       /* 6-bit field in qpn_ds */
	GDAK_MLX5_DB_OFFSET = 0x800,   /* doorbell/BlueFlame register in the UAR page */
	GDAK_MLX5_UAR_PAGE = 4096,
	GDAK_MLX5_CQE_SIZE = 64,
	GDAK_MLX5_CQE_INVALID_OP_OWN = 0xf1, /* opcode INVALID, owner 1: fresh ring */
};

/* Masked atomic segment for 8-byte masked CS/FA (PRM). */
struct gdak_mlx5_masked_atomic_seg {
	uint64_t swap_add;	/* be64 */
	uint64_t compare;	/* be64 */
	uint64_t swap_add_mask; /* be64 */
	uint64_t compare_mask;	/* be64 */
};

/*
 * WAIT (cross-channel wait on a CQ, opcode 0x0f, opmod 0): ctrl + this
 * segment, DS 2.  The QP executes nothing after the WAIT until CQ cqn has
 * produced the CQE with index max_index (CQEs counted from 0 since the CQ
 * was created), then goes on.  Other opmods (wait on data, wait time) are
 * Ethernet-SQ features gdak does not model.
 */
struct gdak_mlx5_wait_seg {
	uint8_t rsvd0[8];
	uint32_t max_index; /* be32 */
	uint32_t qpn_cqn;   /* be32: the CQ number in bits 23:0 */
};
enum {
	GDAK_MLX5_WAIT_OPMOD_CQ = 0,
	GDAK_MLX5_WAIT_DS = 2,
};

/*
 * Extended atomics (PRM "Atomic operations", ctrl opmod of ATOMIC_MASKED_CS
 * / ATOMIC_MASKED_FA): opmod = 0x08 | log2(operand bytes) - 2.  The 4-byte
 * form carries one 16-byte segment (below) and a 4-byte local data segment,
 * DS 4; the fetched value comes back big-endian in those 4 bytes.  The
 * 8-byte extended form: FA a 16-byte segment (be64 add, be64 field
 * boundary), DS 4; CS the 32-byte gdak_mlx5_masked_atomic_seg, DS 5.
 * opmod 0 is the plain 8-byte masked form (32-byte segment, DS 5).
 */
enum {
	GDAK_MLX5_OPMOD_EXT_ATOMIC_4B = 0x08,
	GDAK_MLX5_OPMOD_EXT_ATOMIC_8B = 0x09,
};
struct gdak_mlx5_atomic32_fa_seg {
	uint32_t add;		 /* be32 */
	uint32_t field_boundary; /* be32: bit set = MSB of a field */
	uint64_t rsvd;
};
struct gdak_mlx5_atomic32_cs_seg {
	uint32_t swap;	       /* be32 */
	uint32_t compare;      /* be32 */
	uint32_t swap_mask;    /* be32 (all ones: a plain 4-byte CS) */
	uint32_t compare_mask; /* be32 */
};
struct gdak_mlx5_atomic64_fa_seg {
	uint64_t add;		 /* be64 */
	uint64_t field_boundary; /* be64 */
};

/* Error CQE with every field named (mlx5dv.h leaves hw syndromes reserved). */
struct gdak_mlx5_err_cqe {
	uint8_t rsvd0[32];
	uint32_t srqn;		 /* be32 */
	uint8_t rsvd1[16];
	uint8_t hw_error_syndrome;
	uint8_t hw_syndrome_type;
	uint8_t vendor_err_synd;
	uint8_t syndrome;
	uint32_t s_wqe_opcode_qpn; /* be32: opcode of the failed WQE << 24 | qpn */
	uint16_t wqe_counter;	 /* be16 */
	uint8_t signature;
	uint8_t op_own;
};

GDAK_STATIC_ASSERT(sizeof(struct mlx5_wqe_ctrl_seg) == 16, "ctrl seg");
GDAK_STATIC_ASSERT(sizeof(struct mlx5_wqe_raddr_seg) == 16, "raddr seg");
GDAK_STATIC_ASSERT(sizeof(struct mlx5_wqe_data_seg) == 16, "data seg");
GDAK_STATIC_ASSERT(sizeof(struct mlx5_wqe_atomic_seg) == 16, "atomic seg");
GDAK_STATIC_ASSERT(sizeof(struct gdak_mlx5_masked_atomic_seg) == 32, "masked atomic seg");
GDAK_STATIC_ASSERT(sizeof(struct gdak_mlx5_wait_seg) == 16, "wait seg");
GDAK_STATIC_ASSERT(offsetof(struct gdak_mlx5_wait_seg, max_index) == 8, "wait max_index");
GDAK_STATIC_ASSERT(offsetof(struct gdak_mlx5_wait_seg, qpn_cqn) == 12, "wait qpn_cqn");
GDAK_STATIC_ASSERT(sizeof(struct gdak_mlx5_atomic32_fa_seg) == 16, "4-byte FA seg");
GDAK_STATIC_ASSERT(sizeof(struct gdak_mlx5_atomic32_cs_seg) == 16, "4-byte CS seg");
GDAK_STATIC_ASSERT(sizeof(struct gdak_mlx5_atomic64_fa_seg) == 16, "8-byte ext FA seg");
GDAK_STATIC_ASSERT(sizeof(struct mlx5_wqe_inl_data_seg) == 4, "inline seg header");
GDAK_STATIC_ASSERT(sizeof(struct mlx5_cqe64) == 64, "cqe64");
GDAK_STATIC_ASSERT(sizeof(struct gdak_mlx5_err_cqe) == 64, "err cqe");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_wqe_ctrl_seg, fm_ce_se) == 11, "fm_ce_se");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_wqe_ctrl_seg, imm) == 12, "imm");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_cqe64, imm_inval_pkey) == 36, "cqe imm");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_cqe64, byte_cnt) == 44, "cqe byte_cnt");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_cqe64, sop_drop_qpn) == 56, "cqe qpn");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_cqe64, wqe_counter) == 60, "cqe wqe_counter");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_cqe64, op_own) == 63, "cqe op_own");
GDAK_STATIC_ASSERT(offsetof(struct gdak_mlx5_err_cqe, vendor_err_synd) == 54, "err vendor");
GDAK_STATIC_ASSERT(offsetof(struct gdak_mlx5_err_cqe, syndrome) == 55, "err syndrome");
GDAK_STATIC_ASSERT(offsetof(struct gdak_mlx5_err_cqe, wqe_counter) == 60, "err wqe_counter");

/* ---- control segment ----------------------------------------------------- */

struct gdak_mlx5_ctrl {
	uint8_t opcode;
	uint8_t opmod;
	uint16_t wqe_index;	/* producer index (WQEBB) the WQE was written at */
	uint32_t qpn;
	uint8_t ds;		/* 16-byte units, ctrl included */
	uint8_t fm_ce_se;
	uint8_t signature;
	uint32_t imm;		/* as stored: big-endian immediate for *_IMM */
};

/*
 * The ctrl segment's first two big-endian words, in host order: opmod 31:24,
 * WQE index 23:8, opcode 7:0; QPN 31:8, DS 5:0.  The one place that packs
 * and unpacks them: the encoder and decoder below, the device API's WQE
 * builders (wqe.h), and the doorbell stage, which reads the same 8 bytes from
 * the doorbell register.
 */
GDAK_HD uint32_t gdak_mlx5_ctrl_w0(uint8_t opcode, uint8_t opmod, uint16_t wqe_index)
{
	return ((uint32_t)opmod << 24) | ((uint32_t)wqe_index << 8) | opcode;
}
GDAK_HD uint32_t gdak_mlx5_ctrl_w1(uint32_t qpn, uint32_t ds)
{
	return (qpn << 8) | (ds & GDAK_MLX5_MAX_DS);
}
GDAK_HD uint32_t gdak_mlx5_ctrl_w1_ds(uint32_t w1)
{
	return w1 & GDAK_MLX5_MAX_DS;
}
/* Opcode, opmod, WQE index, QPN and DS from the two words (host order). */
GDAK_HD void gdak_mlx5_ctrl_decode_words(uint32_t w0, uint32_t w1, struct gdak_mlx5_ctrl *c)
{
	c->opcode = (uint8_t)w0;
	c->wqe_index = (uint16_t)(w0 >> 8);
	c->opmod = (uint8_t)(w0 >> 24);
	c->qpn = w1 >> 8;
	c->ds = (uint8_t)gdak_mlx5_ctrl_w1_ds(w1);
}

GDAK_HD void gdak_mlx5_ctrl_encode(struct mlx5_wqe_ctrl_seg *seg, const struct gdak_mlx5_ctrl *c)
{
	seg->opmod_idx_opcode = gdak_htobe32(gdak_mlx5_ctrl_w0(c->opcode, c->opmod, c->wqe_index));
	seg->qpn_ds = gdak_htobe32(gdak_mlx5_ctrl_w1(c->qpn, c->ds));
	seg->signature = c->signature;
	seg->dci_stream_channel_id = 0;
	seg->fm_ce_se = c->fm_ce_se;
	seg->imm = c->imm;
}

GDAK_HD void gdak_mlx5_ctrl_decode(const struct mlx5_wqe_ctrl_seg *seg, struct gdak_mlx5_ctrl *c)
{
	gdak_mlx5_ctrl_decode_words(gdak_be32toh(seg->opmod_idx_opcode), gdak_be32toh(seg->qpn_ds),
				    c);
	c->fm_ce_se = seg->fm_ce_se;
	c->signature = seg->signature;
	c->imm = seg->imm;
}

/* ---- remote address, data, atomic, inline segments ----------------------- */

GDAK_HD void gdak_mlx5_raddr_encode(struct mlx5_wqe_raddr_seg *s, uint64_t raddr, uint32_t rkey)
{
	s->raddr = gdak_htobe64(raddr);
	s->rkey = gdak_htobe32(rkey);
	s->reserved = 0;
}
GDAK_HD void gdak_mlx5_raddr_decode(const struct mlx5_wqe_raddr_seg *s, uint64_t *raddr, uint32_t *rkey)
{
	*raddr = gdak_be64toh(s->raddr);
	*rkey = gdak_be32toh(s->rkey);
}

GDAK_HD void gdak_mlx5_data_encode(struct mlx5_wqe_data_seg *s, uint64_t addr, uint32_t len, uint32_t lkey)
{
	s->byte_count = gdak_htobe32(len);
	s->lkey = gdak_htobe32(lkey);
	s->addr = gdak_htobe64(addr);
}
GDAK_HD void gdak_mlx5_data_decode(const struct mlx5_wqe_data_seg *s, uint64_t *addr, uint32_t *len,
				   uint32_t *lkey)
{
	*addr = gdak_be64toh(s->addr);
	*len = gdak_be32toh(s->byte_count);
	*lkey = gdak_be32toh(s->lkey);
}

GDAK_HD void gdak_mlx5_atomic_encode(struct mlx5_wqe_atomic_seg *s, uint64_t swap_add, uint64_t compare)
{
	s->swap_add = gdak_htobe64(swap_add);
	s->compare = gdak_htobe64(compare);
}
GDAK_HD void gdak_mlx5_atomic_decode(const struct mlx5_wqe_atomic_seg *s, uint64_t *swap_add,
				     uint64_t *compare)
{
	*swap_add = gdak_be64toh(s->swap_add);
	*compare = gdak_be64toh(s->compare);
}

/* Inline segment header: byte_count = be32(len | MLX5_INLINE_SEG), data follows. */
GDAK_HD void gdak_mlx5_inline_encode(struct mlx5_wqe_inl_data_seg *s, uint32_t len)
{
	s->byte_count = gdak_htobe32(len | MLX5_INLINE_SEG);
}
/* DS (16-byte units) an inline segment of len payload bytes occupies. */
GDAK_HD uint32_t gdak_mlx5_inline_ds(uint32_t len) { return (4 + len + 15) / 16; }
/* WQEBBs a WQE of ds DS occupies. */
GDAK_HD uint32_t gdak_mlx5_wqebbs(uint32_t ds) { return (ds + GDAK_MLX5_WQEBB_DS - 1) / GDAK_MLX5_WQEBB_DS; }
/* WQEBBs the WQE whose ctrl says ds occupies in the ring: a ctrl with DS 0
 * (a malformed WQE, or a DUMP/NOP stub) still takes its one WQEBB, and the
 * NIC, the device API and the ring capture all step over it so. */
GDAK_HD uint32_t gdak_mlx5_wqe_bbs(uint32_t ds)
{
	return ds ? gdak_mlx5_wqebbs(ds) : 1;
}

/* ---- doorbell records ----------------------------------------------------- */

/* Send doorbell record: dbrec[MLX5_SND_DBR] = be32(pi & 0xffff). */
GDAK_HD uint32_t gdak_mlx5_sq_dbrec_value(uint32_t pi) { return gdak_htobe32(pi & 0xffff); }
/* CQ doorbell record: dbrec[0] = be32(ci & 0xffffff). */
GDAK_HD uint32_t gdak_mlx5_cq_dbrec_value(uint32_t ci) { return gdak_htobe32(ci & 0xffffff); }

/* ---- CQE ------------------------------------------------------------------ */

/*
 * The CQE at consumer count n of a ring of ncqe (a power of two) belongs to
 * software when its opcode is not INVALID and its owner bit equals the wrap
 * parity of n: hardware flips the bit it writes on every pass of the ring,
 * and a fresh ring is all 0xf1 (INVALID, owner 1) so pass 0 (parity 0)
 * finds nothing.
 */
GDAK_HD int gdak_mlx5_cqe_is_sw_owned(uint8_t op_own, uint64_t n, uint32_t ncqe)
{
	return (op_own >> 4) != MLX5_CQE_INVALID && (op_own & 1) == !!(n & ncqe);
}
/* The op_own byte hardware writes for CQE number n. */
GDAK_HD uint8_t gdak_mlx5_cqe_op_own(uint8_t cqe_opcode, uint64_t n, uint32_t ncqe)
{
	return (uint8_t)((cqe_opcode << 4) | (!!(n & ncqe)));
}

struct gdak_mlx5_cqe_fields {
	uint8_t opcode;		/* MLX5_CQE_* */
	uint8_t owner;
	uint8_t syndrome;	/* error CQEs */
	uint8_t vendor_syndrome;
	uint8_t wqe_opcode;	/* error CQEs: opcode of the WQE (s_wqe_opcode) */
	uint16_t wqe_counter;
	uint32_t qpn;
	uint32_t byte_cnt;
	uint32_t imm;		/* as stored (big-endian immediate) */
};

GDAK_HD void gdak_mlx5_cqe_decode(const void *cqe64, struct gdak_mlx5_cqe_fields *f)
{
	const struct mlx5_cqe64 *c = (const struct mlx5_cqe64 *)cqe64;
	const struct gdak_mlx5_err_cqe *e = (const struct gdak_mlx5_err_cqe *)cqe64;
	f->opcode = c->op_own >> 4;
	f->owner = c->op_own & 1;
	f->wqe_counter = gdak_be16toh(c->wqe_counter);
	if (f->opcode == MLX5_CQE_REQ_ERR || f->opcode == MLX5_CQE_RESP_ERR) {
		uint32_t w = gdak_be32toh(e->s_wqe_opcode_qpn);
		f->syndrome = e->syndrome;
		f->vendor_syndrome = e->vendor_err_synd;
		f->wqe_opcode = (uint8_t)(w >> 24);
		f->qpn = w & 0xffffff;
		f->byte_cnt = 0;
		f->imm = 0;
	} else {
		f->syndrome = 0;
		f->vendor_syndrome = 0;
		f->wqe_opcode = 0;
		f->qpn = gdak_be32toh(c->sop_drop_qpn) & 0xffffff;
		f->byte_cnt = gdak_be32toh(c->byte_cnt);
		f->imm = c->imm_inval_pkey;
	}
}

/* ---- tables (core/src/mlx5_names.c) ---------------------------------------- */

/* What a send opcode carries; one table read by builders' tests, the NIC
 * model's parser and checks, and the trace decoder. */
enum gdak_mlx5_op_flags {
	GDAK_OPF_RADDR = 1u << 0,	/* has a remote-address segment */
	GDAK_OPF_ATOMIC = 1u << 1,	/* has an atomic segment (16 B) */
	GDAK_OPF_MASKED = 1u << 2,	/* has a masked atomic segment (32 B) */
	GDAK_OPF_DATA = 1u << 3,	/* has data or inline segments */
	GDAK_OPF_IMM = 1u << 4,		/* carries immediate data */
	GDAK_OPF_INLINE_OK = 1u << 5,	/* inline data allowed */
	GDAK_OPF_READS_REMOTE = 1u << 6, /* RDMA_READ/atomics: fence-relevant */
	GDAK_OPF_SUPPORTED = 1u << 7,	/* executed by the NIC model */
};

/*
 * DC address vector (the datagram segment after a DCI WQE's ctrl segment,
 * rdma-core's struct mlx5_wqe_av): bit 31 of its be32 dqp_dct word says
 * the full 48-byte form follows (MLX5_EXTENDED_UD_AV); clear, it is the
 * 16-byte compact form (HCA cap compact_address_vector).
 */
#define GDAK_MLX5_AV_FULL 0x80000000u
#define GDAK_MLX5_AV_FULL_BYTES 48
#define GDAK_MLX5_AV_COMPACT_BYTES 16
GDAK_STATIC_ASSERT(sizeof(struct mlx5_wqe_av) == GDAK_MLX5_AV_FULL_BYTES,
		   "mlx5_wqe_av is 48 bytes");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_wqe_av, dqp_dct) == 8, "AV: DCT number at byte 8");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_wqe_av, rlid) == 14, "AV: remote LID at byte 14");
GDAK_STATIC_ASSERT(offsetof(struct mlx5_wqe_av, rgid) == 32, "AV: remote GID at byte 32");

struct gdak_mlx5_op_info {
	uint8_t opcode;
	const char *name;	/* "RDMA_WRITE" */
	uint8_t min_ds;		/* smallest legal DS count */
	uint8_t max_ds;		/* largest legal DS count */
	uint8_t req_cqe;	/* CQE opcode on the requester (MLX5_CQE_REQ) */
	uint8_t resp_cqe;	/* CQE opcode on the responder's receive CQ, 0xff if none */
	uint16_t flags;		/* enum gdak_mlx5_op_flags */
	uint32_t remote_access; /* GDAK_ACCESS_* the target MR must grant */
};

/* NULL for an opcode gdak does not know. */
const struct gdak_mlx5_op_info *gdak_mlx5_op_info(uint8_t opcode);
/* Every known opcode, *n entries. */
const struct gdak_mlx5_op_info *gdak_mlx5_op_table(size_t *n);
/* Names: never NULL; a code no table knows gets a constant name that shows
 * its value ("OPCODE_0x3e", "CQE_0x7", "SYNDROME_0x99"); thread safe. */
const char *gdak_mlx5_opcode_name(uint8_t opcode);
const char *gdak_mlx5_cqe_opcode_name(uint8_t cqe_opcode);
const char *gdak_mlx5_syndrome_name(uint8_t syndrome);
/* Name of the fence mode in fm_ce_se. */
const char *gdak_mlx5_fence_name(uint8_t fm_ce_se);
/* Look a name up (case-insensitive, with or without "MLX5_OPCODE_"); -1 if none. */
int gdak_mlx5_opcode_from_name(const char *name);
int gdak_mlx5_syndrome_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* GDAK_MLX5_H */
