/* SPDX-License-Identifier: MIT */
/*
 * hw_devx.c - path 2 (GDAK_QP_F_QUEUES_GPU): the send/receive rings and CQ
 * rings in GPU memory, created through DEVX with raw PRM commands, the way
 * NVSHMEM's IBGDA and DOCA GPUNetIO build theirs: the GPU then polls CQEs
 * and writes WQEs in its own memory instead of across PCIe.
 *
 *   GPU buffer (one DEVX umem):   [ RQ | SQ ] [ send CQ ] [ receive CQ ]
 *   doorbell records (one umem):  QP dbrec @0, send CQ @64, receive CQ @128
 *     in GPU memory, or in mapped host memory when the CPU proxy rings for
 *     the device (it must write the send record)
 *   UAR: mlx5dv_devx_alloc_uar (non-cached), its page mapped into the GPU
 *
 * NOT YET RUN ON HARDWARE.  Every command layout below was written from the
 * mlx5 PRM structure definitions (as published in rdma-core's and Linux's
 * mlx5_ifc.h) and is compiled, not executed, here.  docs/HARDWARE.md says
 * how to validate it.  Field positions are given as (bit offset, width) with
 * PRM numbering: bit 0 is the most significant bit of the first big-endian
 * dword.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw_loc.h"
#include "gdak_log.h"
#include <gdak/mlx5.h>

/* ---- PRM command opcodes -------------------------------------------------- */
enum {
	PRM_CREATE_CQ = 0x400,
	PRM_CREATE_QP = 0x500,
	PRM_RST2INIT_QP = 0x502,
	PRM_INIT2RTR_QP = 0x503,
	PRM_RTR2RTS_QP = 0x504,
	PRM_2ERR_QP = 0x507,
	PRM_2RST_QP = 0x50a,
	PRM_QUERY_QP = 0x50b,
};

/* ---- command header and output (every command) ----------------------------- */
#define CMD_OPCODE 0x000, 16
#define CMD_OP_MOD 0x030, 16
#define OUT_STATUS 0x000, 8
#define OUT_SYNDROME 0x020, 32
#define OUT_OBJ_NUM 0x048, 24	/* create_cq_out.cqn, create_qp_out.qpn */
#define CMD_QPN 0x048, 24	/* QP transition / query / 2ERR / 2RST inputs */

/* ---- CREATE_CQ input: cq_context at 0x80 ---------------------------------- */
#define CREATE_CQ_IN_BYTES (0x880 / 8)
#define CQC 0x080		/* cq_context base */
#define CQC_DBR_UMEM_VALID 0x006, 1
#define CQC_CQE_SZ 0x008, 3	/* 0 = 64-byte CQEs */
#define CQC_CC 0x00b, 1		/* collapsed: every CQE to entry 0 */
#define CQC_OI 0x00e, 1		/* overrun ignore */
#define CQC_DBR_UMEM_ID 0x020, 32
#define CQC_LOG_CQ_SIZE 0x063, 5
#define CQC_UAR_PAGE 0x068, 24
#define CQC_C_EQN 0x0b8, 8
#define CQC_LOG_PAGE_SIZE 0x0c3, 5	/* log2(page) - 12 */
#define CQC_DBR_ADDR 0x1c0	/* 64 bits: offset in the dbr umem */
#define CREATE_CQ_UMEM_OFFSET 0x280	/* 64 bits */
#define CREATE_CQ_UMEM_ID 0x2c0, 32
#define CREATE_CQ_UMEM_VALID 0x2e0, 1

/* ---- QP commands: opt_param_mask at 0x80, qpc at 0xc0 -------------------- */
#define QP_CMD_IN_BYTES (0x880 / 8)	/* create_qp_in, rst2init, init2rtr, rtr2rts */
#define QP_SHORT_IN_BYTES (0x80 / 8)	/* 2err, 2rst, query_qp_in */
#define QP_OUT_BYTES (0x80 / 8)
#define QUERY_QP_OUT_BYTES (0x880 / 8 + 64)
#define QPC 0x0c0
#define QPC_STATE 0x000, 4
#define QPC_ST 0x008, 8		/* service type: 0 = RC */
#define QPC_PM_STATE 0x013, 2	/* path migration: 3 = migrated (no APM) */
#define QPC_PD 0x028, 24
#define QPC_MTU 0x040, 3	/* 1 = 256 ... 5 = 4096 (IBA encoding) */
#define QPC_LOG_MSG_MAX 0x043, 5
#define QPC_LOG_RQ_SIZE 0x049, 4
#define QPC_LOG_RQ_STRIDE 0x04d, 3	/* log2(stride) - 4 */
#define QPC_LOG_SQ_SIZE 0x051, 4
#define QPC_UAR_PAGE 0x068, 24
#define QPC_SEND_DBR_MODE 0x080, 2 /* 1 = NO_DBR_EXT: the register alone rings */
#define QPC_LOG_PAGE_SIZE 0x0a3, 5
#define QPC_REMOTE_QPN 0x0a8, 24
#define ADS 0x0c0		/* primary_address_path within the qpc */
#define ADS_PKEY_INDEX 0x010, 16
#define ADS_GRH 0x028, 1
#define ADS_RLID 0x030, 16
#define ADS_ACK_TIMEOUT 0x040, 5
#define ADS_SRC_ADDR_INDEX 0x048, 8
#define ADS_HOP_LIMIT 0x058, 8
#define ADS_RGID 0x080		/* 128 bits */
#define ADS_SL 0x124, 4
#define ADS_VHCA_PORT_NUM 0x128, 8
#define ADS_RMAC_47_32 0x130, 16
#define ADS_RMAC_31_0 0x140, 32
#define QPC_LOG_SRA_MAX 0x388, 3
#define QPC_RETRY_COUNT 0x38d, 3
#define QPC_RNR_RETRY 0x390, 3
#define QPC_NEXT_SEND_PSN 0x3c8, 24
#define QPC_CQN_SND 0x3e8, 24
#define QPC_LOG_RRA_MAX 0x488, 3
#define QPC_ATOMIC_MODE 0x48c, 4
#define QPC_RRE 0x490, 1
#define QPC_RWE 0x491, 1
#define QPC_RAE 0x492, 1
#define QPC_MIN_RNR_NAK 0x4a3, 5
#define QPC_NEXT_RCV_PSN 0x4a8, 24
#define QPC_CQN_RCV 0x4e8, 24
#define QPC_DBR_ADDR 0x500	/* 64 bits: offset in the dbr umem */
#define QPC_RQ_TYPE 0x565, 3	/* 0 = regular, 1 = SRQ, 3 = zero-size RQ */
#define QPC_SRQN 0x568, 24	/* rq_type SRQ: its number (a DCI's) */
#define QPC_DBR_UMEM_VALID 0x683, 1
#define QPC_DBR_UMEM_ID 0x720, 32
#define CREATE_QP_WQ_UMEM_ID 0x840, 32
#define CREATE_QP_WQ_UMEM_VALID 0x860, 1

enum {
	QPC_ST_RC = 0,
	QPC_ST_DCI = 5,
	QPC_PM_MIGRATED = 3,
	QPC_RQ_REGULAR = 0,
	QPC_RQ_SRQ = 1,
	QPC_RQ_ZERO_SIZE = 3,
	/* 8-byte standard atomics (the kernel's MLX5_ATOMIC_MODE_8B >> 16) */
	QPC_ATOMIC_MODE_8B = 3,
	QPC_STATE_RST = 0, QPC_STATE_INIT, QPC_STATE_RTR, QPC_STATE_RTS,
	QPC_STATE_SQER, QPC_STATE_SQD, QPC_STATE_ERR,
};

#define HW_DX_PAGE 4096u	/* umem page size: log_page_size 0 everywhere */
#define HW_DX_MAX_INLINE 128u
#define DBR_QP 0u
#define DBR_SCQ 64u
#define DBR_RCQ 128u
#define DBR_LEN 4096u

/* Set a big-endian PRM field: MSB-first bit offset, width <= 32. */
void hw_prm_set(void *buf, unsigned bit, unsigned w, uint32_t v)
{
	uint32_t *dw = (uint32_t *)buf + bit / 32;
	unsigned shift = 32 - w - bit % 32;
	uint32_t mask = (w == 32 ? 0xffffffffu : ((1u << w) - 1u)) << shift;

	*dw = gdak_htobe32((gdak_be32toh(*dw) & ~mask) | ((v << shift) & mask));
}

uint32_t hw_prm_get(const void *buf, unsigned bit, unsigned w)
{
	uint32_t v = gdak_be32toh(((const uint32_t *)buf)[bit / 32]);
	return (v >> (32 - w - bit % 32)) & (w == 32 ? 0xffffffffu : ((1u << w) - 1u));
}

/* (base, field) forms: fields are "offset, width" relative to a context. */
static void fset(void *buf, unsigned base, unsigned off, unsigned w, uint32_t v)
{
	hw_prm_set(buf, base + off, w, v);
}

static uint32_t fget(const void *buf, unsigned base, unsigned off, unsigned w)
{
	return hw_prm_get(buf, base + off, w);
}

static void fset64(void *buf, unsigned bit, uint64_t v)
{
	uint32_t *dw = (uint32_t *)buf + bit / 32;
	dw[0] = gdak_htobe32((uint32_t)(v >> 32));
	dw[1] = gdak_htobe32((uint32_t)v);
}

/* ---- layout self-check ------------------------------------------------------------ */

/*
 * Every field each command sets, so that hw_devx_layout_check() can prove
 * no two of them overlap and all fit in their command: a mistyped offset
 * shows up as a lost bit.  (base, field) pairs; 64-bit fields separately.
 */
/* one field list per command, as the PRM lists them */
/* clang-format off */
#define CREATE_CQ_FIELDS(X)                                                              \
	X(0, CMD_OPCODE) X(CQC, CQC_DBR_UMEM_VALID) X(CQC, CQC_CQE_SZ) X(CQC, CQC_CC)      \
	X(CQC, CQC_OI) X(CQC, CQC_DBR_UMEM_ID) X(CQC, CQC_LOG_CQ_SIZE)                     \
	X(CQC, CQC_UAR_PAGE) X(CQC, CQC_C_EQN) X(CQC, CQC_LOG_PAGE_SIZE)                   \
	X(0, CREATE_CQ_UMEM_ID) X(0, CREATE_CQ_UMEM_VALID)
#define CREATE_CQ_FIELDS64(X) X(CQC + CQC_DBR_ADDR) X(CREATE_CQ_UMEM_OFFSET)
#define CREATE_QP_FIELDS(X)                                                              \
	X(0, CMD_OPCODE) X(QPC, QPC_ST) X(QPC, QPC_PM_STATE) X(QPC, QPC_PD)                \
	X(QPC, QPC_UAR_PAGE) X(QPC, QPC_SEND_DBR_MODE) X(QPC, QPC_LOG_PAGE_SIZE)          \
	X(QPC, QPC_LOG_SQ_SIZE) X(QPC, QPC_RQ_TYPE) X(QPC, QPC_SRQN) X(QPC, QPC_LOG_RQ_SIZE) \
	X(QPC, QPC_LOG_RQ_STRIDE) X(QPC, QPC_CQN_SND) X(QPC, QPC_CQN_RCV)                 \
	X(QPC, QPC_DBR_UMEM_VALID) X(QPC, QPC_DBR_UMEM_ID) X(0, CREATE_QP_WQ_UMEM_ID)     \
	X(0, CREATE_QP_WQ_UMEM_VALID)
/* clang-format on */
#define CREATE_QP_FIELDS64(X) X(QPC + QPC_DBR_ADDR)
#define RST2INIT_FIELDS(X)                                                               \
	X(0, CMD_OPCODE) X(0, CMD_QPN) X(QPC, QPC_PM_STATE) X(QPC + ADS, ADS_VHCA_PORT_NUM) \
	X(QPC + ADS, ADS_PKEY_INDEX) X(QPC, QPC_RRE) X(QPC, QPC_RWE) X(QPC, QPC_RAE)      \
	X(QPC, QPC_ATOMIC_MODE)
#define INIT2RTR_FIELDS(X)                                                               \
	X(0, CMD_OPCODE) X(0, CMD_QPN) X(QPC, QPC_MTU) X(QPC, QPC_LOG_MSG_MAX)             \
	X(QPC, QPC_REMOTE_QPN) X(QPC, QPC_NEXT_RCV_PSN) X(QPC, QPC_LOG_RRA_MAX)           \
	X(QPC, QPC_MIN_RNR_NAK) X(QPC + ADS, ADS_VHCA_PORT_NUM) X(QPC + ADS, ADS_GRH)     \
	X(QPC + ADS, ADS_SRC_ADDR_INDEX) X(QPC + ADS, ADS_HOP_LIMIT)                      \
	X(QPC + ADS, ADS_RMAC_47_32) X(QPC + ADS, ADS_RMAC_31_0) X(QPC + ADS, ADS_RLID)   \
	X(QPC + ADS, ADS_SL)                                                              \
	X(QPC + ADS + ADS_RGID, 0, 32) X(QPC + ADS + ADS_RGID, 32, 32)                    \
	X(QPC + ADS + ADS_RGID, 64, 32) X(QPC + ADS + ADS_RGID, 96, 32)
#define RTR2RTS_FIELDS(X)                                                                \
	X(0, CMD_OPCODE) X(0, CMD_QPN) X(QPC, QPC_LOG_SRA_MAX) X(QPC, QPC_RETRY_COUNT)     \
	X(QPC, QPC_RNR_RETRY) X(QPC, QPC_NEXT_SEND_PSN) X(QPC + ADS, ADS_ACK_TIMEOUT)
#define NO_FIELDS64(X)

static unsigned popcount_buf(const uint8_t *b, size_t n)
{
	unsigned c = 0;
	for (size_t i = 0; i < n; i++)
		c += (unsigned)__builtin_popcount(b[i]);
	return c;
}

/* Set a field to all ones; returns its width, or 0 when it leaves the command. */
static unsigned ones(uint8_t *buf, size_t len, unsigned base, unsigned off, unsigned w)
{
	if (base + off + w > len * 8)
		return 0;
	fset(buf, base, off, w, 0xffffffffu);
	return w;
}

#define LAYOUT_CHECK(name, FIELDS, FIELDS64, bytes)                                      \
	do {                                                                             \
		uint8_t b_[bytes];                                                       \
		unsigned want_ = 0;                                                      \
		memset(b_, 0, sizeof(b_));                                               \
		FIELDS(ADD_FIELD) FIELDS64(ADD_FIELD64)                                  \
		if (popcount_buf(b_, sizeof(b_)) != want_) {                             \
			snprintf(why, len, "%s: %u bits set, fields claim %u: two fields " \
				 "overlap or one leaves the command", name,              \
				 popcount_buf(b_, sizeof(b_)), want_);                   \
			return -1;                                                       \
		}                                                                        \
	} while (0)
#define ADD_FIELD(base, ...)                                                             \
	{                                                                                \
		unsigned w_ = ones(b_, sizeof(b_), base, __VA_ARGS__);                   \
		want_ += w_ ? w_ : 1000;                                                 \
	}
#define ADD_FIELD64(bit)                                                                 \
	{                                                                                \
		if ((bit) + 64 <= sizeof(b_) * 8 && (bit) % 32 == 0) {                  \
			fset64(b_, (bit), ~0ull);                                        \
			want_ += 64;                                                     \
		} else {                                                                 \
			want_ += 1000;                                                   \
		}                                                                        \
	}

int hw_devx_layout_check(char *why, size_t len)
{
	LAYOUT_CHECK("CREATE_CQ", CREATE_CQ_FIELDS, CREATE_CQ_FIELDS64, CREATE_CQ_IN_BYTES);
	LAYOUT_CHECK("CREATE_QP", CREATE_QP_FIELDS, CREATE_QP_FIELDS64, QP_CMD_IN_BYTES);
	LAYOUT_CHECK("RST2INIT_QP", RST2INIT_FIELDS, NO_FIELDS64, QP_CMD_IN_BYTES);
	LAYOUT_CHECK("INIT2RTR_QP", INIT2RTR_FIELDS, NO_FIELDS64, QP_CMD_IN_BYTES);
	LAYOUT_CHECK("RTR2RTS_QP", RTR2RTS_FIELDS, NO_FIELDS64, QP_CMD_IN_BYTES);
	snprintf(why, len, "ok");
	return 0;
}

struct hw_devx_qp {
	struct mlx5dv_devx_uar *uar;
	int host;  /* 1: rings in host memory (no GPU-resident queues) */
	void *gpu; /* rings (host memory when host is set) */
	size_t gpu_len;
	size_t rq_off, sq_off, scq_off, rcq_off;
	struct mlx5dv_devx_umem *ring_umem;
	void *dbr;			/* doorbell records */
	int dbr_host;			/* 1: mapped host memory (CPU proxy) */
	struct mlx5dv_devx_umem *dbr_umem;
	struct mlx5dv_devx_obj *scq, *rcq, *qp;
	uint32_t scqn, rcqn, pdn, eqn;
	uint32_t sq_cnt, rq_cnt, rq_stride, scq_n, rcq_n;
	int dci;	     /* st DCI: no RQ of its own, an SRQ named */
	struct ibv_srq *srq; /* the DCI's (never posted) */
	uint32_t srqn;
};

static uint32_t ilog2(uint32_t v) { return v ? 31u - (uint32_t)__builtin_clz(v) : 0; }
static size_t page_up(size_t v) { return (v + HW_DX_PAGE - 1) & ~(size_t)(HW_DX_PAGE - 1); }

static const char *dx_err(const void *out, char *buf, size_t len)
{
	snprintf(buf, len, "status 0x%x syndrome 0x%08x", fget(out, 0, OUT_STATUS),
		 fget(out, 0, OUT_SYNDROME));
	return buf;
}

/* A DEVX umem on 4 KiB pages (the page size every context below names).
 * GPU memory goes through a dma-buf when the driver offers one, else
 * through peer memory (nvidia-peermem). */
static struct mlx5dv_devx_umem *umem_reg(struct hw_ctx *hc, void *addr, size_t len, int gpu)
{
	struct mlx5dv_devx_umem_in in = {
		.addr = addr, .size = len,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		.pgsz_bitmap = HW_DX_PAGE,
	};
	struct mlx5dv_devx_umem *u;
	uint64_t off;
	int fd;

	if (gpu && !hw_cuda_dmabuf_fd(addr, len, &fd, &off)) {
		in.addr = (void *)(uintptr_t)off;	/* offset in the dma-buf */
		in.comp_mask = MLX5DV_UMEM_MASK_DMABUF;
		in.dmabuf_fd = fd;
		u = mlx5dv_devx_umem_reg_ex(hc->ibctx, &in);
		close(fd);
		if (u)
			return u;
		GDAK_INFO("ctx", hc->base.id, "dma-buf umem for %p: %s; trying peer memory", addr,
			  strerror(errno));
		in.addr = addr;
		in.comp_mask = 0;
	}
	u = mlx5dv_devx_umem_reg_ex(hc->ibctx, &in);
	if (!u && (errno == EOPNOTSUPP || errno == ENOTSUP))
		u = mlx5dv_devx_umem_reg(hc->ibctx, addr, len, in.access);
	if (!u)
		GDAK_ERR("ctx", hc->base.id, "DEVX umem for %s memory %p+%zu: %s",
			 gpu ? "GPU" : "host", addr, len, strerror(errno));
	return u;
}

/* A fresh CQ ring: every op_own INVALID with owner 1, so pass 0 finds nothing. */
static int init_cq_ring(void *ring, uint32_t n, int host)
{
	uint8_t *img;
	int ret;

	if (host) {
		for (uint32_t i = 0; i < n; i++)
			((uint8_t *)ring)[i * 64 + 63] = GDAK_MLX5_CQE_INVALID_OP_OWN;
		return 0;
	}
	img = calloc(n, 64);
	if (!img)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		img[i * 64 + 63] = GDAK_MLX5_CQE_INVALID_OP_OWN;
	ret = hw_cuda_memcpy_htod(ring, img, (size_t)n * 64);
	free(img);
	return ret;
}

/* Page-aligned, zeroed host memory for rings and records (host mode). */
static int host_alloc(size_t len, void **p)
{
	if (posix_memalign(p, HW_DX_PAGE, len))
		return -ENOMEM;
	memset(*p, 0, len);
	return 0;
}

static struct mlx5dv_devx_obj *create_cq(struct hw_qp *hq, uint32_t n, size_t ring_off,
					 uint32_t dbr_off, int collapsed, uint32_t *cqn)
{
	struct hw_devx_qp *dx = hq->dx;
	uint8_t in[CREATE_CQ_IN_BYTES], out[QP_OUT_BYTES];
	struct mlx5dv_devx_obj *obj;
	char e[64];

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	fset(in, 0, CMD_OPCODE, PRM_CREATE_CQ);
	fset(in, CQC, CQC_CQE_SZ, 0);
	/* device code updates the CQ doorbell record per batch, not per CQE */
	fset(in, CQC, CQC_OI, 1);
	fset(in, CQC, CQC_CC, !!collapsed);
	fset(in, CQC, CQC_LOG_CQ_SIZE, ilog2(n));
	fset(in, CQC, CQC_UAR_PAGE, dx->uar->page_id);
	fset(in, CQC, CQC_C_EQN, dx->eqn);
	fset(in, CQC, CQC_LOG_PAGE_SIZE, 0);
	fset(in, CQC, CQC_DBR_UMEM_VALID, 1);
	fset(in, CQC, CQC_DBR_UMEM_ID, dx->dbr_umem->umem_id);
	fset64(in, CQC + CQC_DBR_ADDR, dbr_off);
	fset64(in, CREATE_CQ_UMEM_OFFSET, ring_off);
	fset(in, 0, CREATE_CQ_UMEM_ID, dx->ring_umem->umem_id);
	fset(in, 0, CREATE_CQ_UMEM_VALID, 1);
	obj = mlx5dv_devx_obj_create(hq->ctx->ibctx, in, sizeof(in), out, sizeof(out));
	if (!obj) {
		GDAK_ERR("ctx", hq->ctx->base.id, "DEVX CREATE_CQ(%u): %s (%s)", n, strerror(errno),
			 dx_err(out, e, sizeof(e)));
		return NULL;
	}
	*cqn = fget(out, 0, OUT_OBJ_NUM);
	return obj;
}

/* The SRQ a DCI's context names (created by verbs: its number is all
 * CREATE_QP needs). */
static int create_srq(struct hw_qp *hq)
{
	struct hw_devx_qp *dx = hq->dx;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct mlx5dv_srq dv = { .comp_mask = MLX5DV_SRQ_MASK_SRQN };
	struct mlx5dv_obj obj;
	int ret;

	dx->dci = 1;
	dx->srq = ibv_create_srq(hq->ctx->pd, &sa);
	if (!dx->srq) {
		ret = errno ? errno : ENOMEM;
		GDAK_ERR("ctx", hq->ctx->base.id, "ibv_create_srq (for a DCI): %s", strerror(ret));
		return -ret;
	}
	memset(&obj, 0, sizeof(obj));
	obj.srq.in = dx->srq;
	obj.srq.out = &dv;
	ret = mlx5dv_init_obj(&obj, MLX5DV_OBJ_SRQ);
	if (ret || !(dv.comp_mask & MLX5DV_SRQ_MASK_SRQN)) {
		GDAK_ERR("ctx", hq->ctx->base.id, "mlx5dv_init_obj(SRQ): %s",
			 ret ? strerror(ret) : "no SRQ number");
		return ret ? -ret : -ENOTSUP;
	}
	dx->srqn = dv.srqn;
	return 0;
}

static int create_qp(struct hw_qp *hq)
{
	struct hw_devx_qp *dx = hq->dx;
	uint8_t in[QP_CMD_IN_BYTES], out[QP_OUT_BYTES];
	char e[64];

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	fset(in, 0, CMD_OPCODE, PRM_CREATE_QP);
	fset(in, QPC, QPC_ST, dx->dci ? QPC_ST_DCI : QPC_ST_RC);
	fset(in, QPC, QPC_PM_STATE, QPC_PM_MIGRATED);
	fset(in, QPC, QPC_PD, dx->pdn);
	fset(in, QPC, QPC_UAR_PAGE, dx->uar->page_id);
	/* GDAK_QP_F_SQ_NO_DBREC: HCA cap send_dbr_mode_no_dbr_ext */
	fset(in, QPC, QPC_SEND_DBR_MODE, hq->base.attr.flags & GDAK_QP_F_SQ_NO_DBREC ? 1 : 0);
	fset(in, QPC, QPC_LOG_PAGE_SIZE, 0);
	fset(in, QPC, QPC_LOG_SQ_SIZE, ilog2(dx->sq_cnt));
	if (dx->dci) {
		/* ConnectX creates a DCI with an SRQ-type RQ (the kernel names
		 * an SRQ of its own; NVSHMEM and UCX one they made) */
		fset(in, QPC, QPC_RQ_TYPE, QPC_RQ_SRQ);
		fset(in, QPC, QPC_SRQN, dx->srqn);
	} else if (dx->rq_cnt) {
		fset(in, QPC, QPC_RQ_TYPE, QPC_RQ_REGULAR);
		fset(in, QPC, QPC_LOG_RQ_SIZE, ilog2(dx->rq_cnt));
		fset(in, QPC, QPC_LOG_RQ_STRIDE, ilog2(dx->rq_stride) - 4);
	} else {
		fset(in, QPC, QPC_RQ_TYPE, QPC_RQ_ZERO_SIZE);
	}
	fset(in, QPC, QPC_CQN_SND, dx->scqn);
	fset(in, QPC, QPC_CQN_RCV, dx->rq_cnt ? dx->rcqn : dx->scqn);
	fset(in, QPC, QPC_DBR_UMEM_VALID, 1);
	fset(in, QPC, QPC_DBR_UMEM_ID, dx->dbr_umem->umem_id);
	fset64(in, QPC + QPC_DBR_ADDR, DBR_QP);
	/* the WQ umem holds the RQ first, then the SQ (PRM "QP buffer") */
	fset(in, 0, CREATE_QP_WQ_UMEM_ID, dx->ring_umem->umem_id);
	fset(in, 0, CREATE_QP_WQ_UMEM_VALID, 1);
	dx->qp = mlx5dv_devx_obj_create(hq->ctx->ibctx, in, sizeof(in), out, sizeof(out));
	if (!dx->qp) {
		GDAK_ERR("ctx", hq->ctx->base.id, "DEVX CREATE_QP: %s (%s)", strerror(errno),
			 dx_err(out, e, sizeof(e)));
		return errno ? -errno : -EIO;
	}
	hq->base.qpn = fget(out, 0, OUT_OBJ_NUM);
	return 0;
}

static int alloc_memory(struct hw_qp *hq, struct gdak_dev_qp *t)
{
	const struct gdak_qp_attr *a = &hq->base.attr;
	struct hw_devx_qp *dx = hq->dx;
	struct hw_ctx *hc = hq->ctx;
	size_t rq_bytes;
	int ret;

	dx->sq_cnt = a->sq_depth;
	dx->rq_cnt = a->rq_depth;
	dx->rq_stride = 16u * (a->rq_max_sge ? a->rq_max_sge : 1);
	dx->scq_n = a->cq_depth;
	dx->rcq_n = a->rq_depth ? a->rcq_depth : 0;
	rq_bytes = (size_t)dx->rq_cnt * dx->rq_stride;
	dx->rq_off = 0;
	dx->sq_off = rq_bytes;
	dx->scq_off = page_up(dx->sq_off + (size_t)dx->sq_cnt * 64);
	dx->rcq_off = page_up(dx->scq_off + (size_t)dx->scq_n * 64);
	dx->gpu_len = page_up(dx->rcq_off + (size_t)dx->rcq_n * 64);

	if (dx->host) {
		ret = host_alloc(dx->gpu_len, &dx->gpu);
	} else {
		ret = hw_cuda_dev_alloc(dx->gpu_len, &dx->gpu);
		if (!ret)
			ret = hw_cuda_memset(dx->gpu, 0, dx->gpu_len);
	}
	if (!ret)
		ret = init_cq_ring((char *)dx->gpu + dx->scq_off, dx->scq_n, dx->host);
	if (!ret && dx->rcq_n)
		ret = init_cq_ring((char *)dx->gpu + dx->rcq_off, dx->rcq_n, dx->host);
	if (ret)
		return ret;
	dx->ring_umem = umem_reg(hc, dx->gpu, dx->gpu_len, !dx->host);
	if (!dx->ring_umem)
		return -EIO;

	if (dx->host) {
		dx->dbr_host = 1;
		ret = host_alloc(DBR_LEN, &dx->dbr);
		if (ret)
			return ret;
		dx->dbr_umem = umem_reg(hc, dx->dbr, DBR_LEN, 0);
		return dx->dbr_umem ? 0 : -EIO;
	}
	/* the CPU proxy writes the send record: keep the records where it can */
	dx->dbr_host = t->handler == GDAK_DEV_DB_CPU_PROXY;
	ret = dx->dbr_host ? hw_cuda_host_alloc(DBR_LEN, &dx->dbr)
			   : hw_cuda_dev_alloc(DBR_LEN, &dx->dbr);
	if (ret)
		return ret;
	if (dx->dbr_host)
		memset(dx->dbr, 0, DBR_LEN);
	else if ((ret = hw_cuda_memset(dx->dbr, 0, DBR_LEN)))
		return ret;
	dx->dbr_umem = umem_reg(hc, dx->dbr, DBR_LEN, !dx->dbr_host);
	return dx->dbr_umem ? 0 : -EIO;
}

/* A DEVX CQ as device code sees it: n CQEs at cqes, its doorbell record at
 * dbrec.  Every DEVX CQ ignores overrun (oi); collapsed where the QP
 * asked. */
static void dev_cq_fill(struct gdak_dev_cq *d, uint32_t cqn, uint32_t n, char *cqes, char *dbrec,
			unsigned collapsed)
{
	d->cqn = cqn;
	d->ncqe = n;
	d->log_ncqe = ilog2(n);
	d->cqes = cqes;
	d->dbrec = (uint32_t *)(void *)dbrec;
	d->flags = GDAK_DEV_CQ_F_OVERRUN_IGNORE | (collapsed ? GDAK_DEV_CQ_F_COLLAPSED : 0);
}

int hw_dqp_create(struct hw_qp *hq, struct gdak_dev_qp *t)
{
	struct hw_ctx *hc = hq->ctx;
	struct hw_devx_qp *dx;
	struct mlx5dv_pd dvpd;
	struct mlx5dv_obj obj = {.pd = {.in = hc->pd, .out = &dvpd}};
	char *rings, *recs;
	void *dev;
	int ret;

	dx = calloc(1, sizeof(*dx));
	if (!dx)
		return -ENOMEM;
	hq->dx = dx;
	/* GPU-resident queues when asked for (and a GPU is there); else the
	 * same DEVX objects over host memory (GDAK_HW_QP_PATH=devx) */
	dx->host = !(hq->base.attr.flags & GDAK_QP_F_QUEUES_GPU) || !hc->cuda;
	if (!dx->host)
		GDAK_WARN("ctx", hc->base.id,
			  "GDAK_QP_F_QUEUES_GPU: the DEVX path with GPU-memory rings has not "
			  "yet run on hardware (docs/HARDWARE.md)");
	ret = mlx5dv_init_obj(&obj, MLX5DV_OBJ_PD);
	if (ret) {
		GDAK_ERR("ctx", hc->base.id, "mlx5dv_init_obj(PD): %s", strerror(ret));
		return -ret;
	}
	dx->pdn = dvpd.pdn;
	ret = mlx5dv_devx_query_eqn(hc->ibctx, 0, &dx->eqn);
	if (ret) {
		GDAK_ERR("ctx", hc->base.id, "mlx5dv_devx_query_eqn: %s", strerror(ret));
		return -ret;
	}
	/* non-cached UAR: GPU stores reach it one by one, nothing to combine;
	 * host threads ringing BlueFlame need a write-combining (BF) page */
	dx->uar = mlx5dv_devx_alloc_uar(hc->ibctx,
					dx->host && hq->base.attr.handler == GDAK_DEV_DB_BF
						? MLX5DV_UAR_ALLOC_TYPE_BF
						: MLX5DV_UAR_ALLOC_TYPE_NC);
	if (!dx->uar) {
		GDAK_ERR("ctx", hc->base.id, "mlx5dv_devx_alloc_uar: %s", strerror(errno));
		return errno ? -errno : -EIO;
	}
	t->handler = hq->base.attr.handler;
	ret = alloc_memory(hq, t);
	if (ret)
		return ret;
	dx->scq = create_cq(hq, dx->scq_n, dx->scq_off, DBR_SCQ,
			    !!(hq->base.attr.flags & GDAK_QP_F_SCQ_COLLAPSED), &dx->scqn);
	if (!dx->scq)
		return -EIO;
	if (dx->rcq_n) {
		dx->rcq = create_cq(hq, dx->rcq_n, dx->rcq_off, DBR_RCQ,
				    !!(hq->base.attr.flags & GDAK_QP_F_RCQ_COLLAPSED), &dx->rcqn);
		if (!dx->rcq)
			return -EIO;
	}
	if (hq->base.attr.type == GDAK_QPT_DCI) {
		ret = create_srq(hq);
		if (ret)
			return ret;
	}
	ret = create_qp(hq);
	if (ret)
		return ret;
	/* host-memory rings: what the device sees of them (the host address
	 * for host threads, a mapping when a GPU plays the device) */
	if (dx->host) {
		ret = hw_qp_map(hq, dx->gpu, dx->gpu_len, 0, &dev);
		if (ret)
			return ret;
		rings = dev;
		ret = hw_qp_map(hq, dx->dbr, DBR_LEN, 0, &dev);
		if (ret)
			return ret;
		recs = dev;
	} else {
		rings = dx->gpu;
		recs = dx->dbr;
	}

	t->qpn = hq->base.qpn;
	t->qpn_ds_be = gdak_htobe32(gdak_mlx5_ctrl_w1(t->qpn, 0));
	t->sq_wqebb_cnt = dx->sq_cnt;
	t->sq_log_cnt = ilog2(dx->sq_cnt);
	t->max_inline = HW_DX_MAX_INLINE;
	t->sq_buf = rings + dx->sq_off;
	if (dx->rq_cnt) {
		t->rq_buf = rings + dx->rq_off;
		t->rq_wqe_cnt = dx->rq_cnt;
		t->rq_log_stride = ilog2(dx->rq_stride);
	}
	t->dbrec = (uint32_t *)(void *)(recs + DBR_QP);
	dev_cq_fill(&t->scq, dx->scqn, dx->scq_n, rings + dx->scq_off, recs + DBR_SCQ,
		    hq->base.attr.flags & GDAK_QP_F_SCQ_COLLAPSED);
	if (dx->rcq_n)
		dev_cq_fill(&t->rcq, dx->rcqn, dx->rcq_n, rings + dx->rcq_off, recs + DBR_RCQ,
			    hq->base.attr.flags & GDAK_QP_F_RCQ_COLLAPSED);
	hq->scq_n = dx->scq_n;
	hq->rcq_n = dx->rcq_n;
	hq->db_reg = dx->uar->reg_addr;
	if (dx->dbr_host)
		hq->dbrec = (uint32_t *)(void *)((char *)dx->dbr + DBR_QP);
	if (t->handler != GDAK_DEV_DB_CPU_PROXY) {
		ret = hw_qp_map(hq, dx->uar->reg_addr, 64, 1, &dev);
		if (ret) {
			/* cudaHostRegisterIoMemory refused the page (ordinary memory,
			 * no I/O mapping): the CPU proxy rings for the device, as the
			 * verbs path does.  Records in GPU memory are out of the
			 * proxy's reach, and need not be in it: the device writes its
			 * send record before it publishes the producer index
			 * (gdak_dev_sq_submit), so the proxy writes the register only */
			GDAK_WARN("qp", t->qpn,
				  "the UAR page cannot be mapped into the GPU (%s): "
				  "doorbells go through the CPU proxy%s",
				  gdak_strerror(ret),
				  dx->dbr_host ? ""
					       : " (records in GPU memory: the register only)");
			hq->dbrec = dx->dbr_host ? (uint32_t *)(void *)((char *)dx->dbr + DBR_QP)
						 : NULL;
			t->handler = GDAK_DEV_DB_CPU_PROXY;
			return 0;
		}
		t->db_reg = dev;
		if (t->handler == GDAK_DEV_DB_BF && dx->host) {
			/* a BF page: the two 256-byte halves alternate, as libmlx5 does */
			t->bf_log_half = 8;
		} else if (t->handler == GDAK_DEV_DB_BF) {
			/* a non-cached UAR has no BlueFlame buffer worth the name */
			GDAK_INFO("qp", t->qpn, "DEVX QP: BF handler rings as DB (NC UAR)");
			t->handler = GDAK_DEV_DB_DB;
		}
	}
	return 0;
}

void hw_dqp_destroy(struct hw_qp *hq)
{
	struct hw_devx_qp *dx = hq->dx;

	if (!dx)
		return;
	if (dx->qp)
		mlx5dv_devx_obj_destroy(dx->qp);
	if (dx->srq)
		ibv_destroy_srq(dx->srq);
	if (dx->rcq)
		mlx5dv_devx_obj_destroy(dx->rcq);
	if (dx->scq)
		mlx5dv_devx_obj_destroy(dx->scq);
	if (dx->ring_umem)
		mlx5dv_devx_umem_dereg(dx->ring_umem);
	if (dx->dbr_umem)
		mlx5dv_devx_umem_dereg(dx->dbr_umem);
	if (dx->gpu)
		dx->host ? free(dx->gpu) : hw_cuda_dev_free(dx->gpu);
	if (dx->dbr && dx->host)
		free(dx->dbr);
	else if (dx->dbr)
		dx->dbr_host ? hw_cuda_host_free(dx->dbr) : hw_cuda_dev_free(dx->dbr);
	if (dx->uar)
		mlx5dv_devx_free_uar(dx->uar);
	free(dx);
	hq->dx = NULL;
}

/* RoCE needs the peer's MAC in the address path; verbs resolve it in the
 * kernel, DEVX leaves it to us: an address handle resolves it and mlx5dv
 * shows it (the address vector's rmac). */
static int resolve_rmac(struct hw_qp *hq, const struct gdak_qp_info *peer, uint8_t mac[6])
{
	struct hw_ctx *hc = hq->ctx;
	struct ibv_ah_attr aa;
	struct mlx5dv_ah dvah;
	struct mlx5dv_obj obj;
	struct ibv_ah *ah;
	int ret;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	memcpy(aa.grh.dgid.raw, peer->gid, 16);
	aa.grh.sgid_index = hc->gid_index;
	aa.grh.hop_limit = 64;
	aa.port_num = hc->port;
	ah = ibv_create_ah(hc->pd, &aa);
	if (!ah) {
		GDAK_ERR("qp", hq->base.qpn, "ibv_create_ah (resolving the peer's MAC): %s",
			 strerror(errno));
		return errno ? -errno : -EHOSTUNREACH;
	}
	memset(&obj, 0, sizeof(obj));
	obj.ah.in = ah;
	obj.ah.out = &dvah;
	ret = mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH);
	if (!ret)
		memcpy(mac, dvah.av->rmac, 6);
	ibv_destroy_ah(ah);
	return -ret;
}

static int modify(struct hw_qp *hq, uint16_t opcode, void *in, size_t inlen)
{
	uint8_t out[QP_OUT_BYTES];
	char e[64];

	memset(out, 0, sizeof(out));
	fset(in, 0, CMD_OPCODE, opcode);
	fset(in, 0, CMD_QPN, hq->base.qpn);
	if (mlx5dv_devx_obj_modify(hq->dx->qp, in, inlen, out, sizeof(out))) {
		GDAK_ERR("qp", hq->base.qpn, "DEVX QP command 0x%x: %s (%s)", opcode,
			 strerror(errno), dx_err(out, e, sizeof(e)));
		return errno ? -errno : -EIO;
	}
	return 0;
}

int hw_dqp_modify(struct hw_qp *hq, enum gdak_qp_state to, const struct gdak_qp_info *peer)
{
	struct hw_ctx *hc = hq->ctx;
	struct hw_conn_params p;
	uint8_t in[QP_CMD_IN_BYTES];
	uint8_t mac[6];
	int ret;

	memset(in, 0, sizeof(in));
	switch (to) {
	case GDAK_QPS_RESET:
		return modify(hq, PRM_2RST_QP, in, QP_SHORT_IN_BYTES);
	case GDAK_QPS_ERR:
		return modify(hq, PRM_2ERR_QP, in, QP_SHORT_IN_BYTES);
	case GDAK_QPS_INIT:
		if (gdak_qp_state(&hq->base) == GDAK_QPS_INIT)
			return 0;
		fset(in, QPC, QPC_PM_STATE, QPC_PM_MIGRATED);
		fset(in, QPC + ADS, ADS_VHCA_PORT_NUM, hc->port);
		fset(in, QPC + ADS, ADS_PKEY_INDEX, 0);
		if (hq->dx->dci) /* a requester only: no responder rights */
			return modify(hq, PRM_RST2INIT_QP, in, sizeof(in));
		fset(in, QPC, QPC_RRE, 1);
		fset(in, QPC, QPC_RWE, 1);
		fset(in, QPC, QPC_RAE, 1);
		fset(in, QPC, QPC_ATOMIC_MODE, QPC_ATOMIC_MODE_8B);
		return modify(hq, PRM_RST2INIT_QP, in, sizeof(in));
	case GDAK_QPS_RTR:
		hw_conn_params(hq, peer, &p);
		fset(in, QPC, QPC_MTU, (uint32_t)p.mtu);	/* ibv_mtu uses the IBA encoding */
		fset(in, QPC, QPC_LOG_MSG_MAX, 30);
		if (hq->dx->dci) {
			/* the peer is named per WQE (its AV): no remote QPN,
			 * PSN or address path */
			hq->mtu = hw_mtu_bytes(p.mtu);
			return modify(hq, PRM_INIT2RTR_QP, in, sizeof(in));
		}
		fset(in, QPC, QPC_REMOTE_QPN, peer->qpn);
		fset(in, QPC, QPC_NEXT_RCV_PSN, peer->psn);
		fset(in, QPC, QPC_LOG_RRA_MAX, ilog2(p.max_dest_rd_atomic));
		fset(in, QPC, QPC_MIN_RNR_NAK, p.min_rnr_timer);
		fset(in, QPC + ADS, ADS_VHCA_PORT_NUM, hc->port);
		if (hc->link_layer == IBV_LINK_LAYER_ETHERNET) {
			ret = resolve_rmac(hq, peer, mac);
			if (ret)
				return ret;
			fset(in, QPC + ADS, ADS_GRH, 1);
			fset(in, QPC + ADS, ADS_SRC_ADDR_INDEX, hc->gid_index);
			fset(in, QPC + ADS, ADS_HOP_LIMIT, p.hop_limit);
			memcpy(in + (QPC + ADS + ADS_RGID) / 8, peer->gid, 16);
			fset(in, QPC + ADS, ADS_RMAC_47_32, (uint32_t)mac[0] << 8 | mac[1]);
			fset(in, QPC + ADS, ADS_RMAC_31_0, (uint32_t)mac[2] << 24 |
				     (uint32_t)mac[3] << 16 | (uint32_t)mac[4] << 8 | mac[5]);
		} else {
			fset(in, QPC + ADS, ADS_RLID, peer->lid);
			fset(in, QPC + ADS, ADS_SL, 0);
		}
		hq->mtu = hw_mtu_bytes(p.mtu);
		return modify(hq, PRM_INIT2RTR_QP, in, sizeof(in));
	case GDAK_QPS_RTS:
		if (gdak_qp_state(&hq->base) == GDAK_QPS_RTS)
			return 0;
		hw_conn_params(hq, NULL, &p);
		fset(in, QPC, QPC_LOG_SRA_MAX, ilog2(p.max_rd_atomic));
		fset(in, QPC, QPC_RETRY_COUNT, p.retry_cnt);
		fset(in, QPC, QPC_RNR_RETRY, p.rnr_retry);
		fset(in, QPC, QPC_NEXT_SEND_PSN, hq->psn);
		fset(in, QPC + ADS, ADS_ACK_TIMEOUT, p.timeout);
		return modify(hq, PRM_RTR2RTS_QP, in, sizeof(in));
	}
	return -EINVAL;
}

int hw_dqp_query_state(struct hw_qp *hq, enum gdak_qp_state *state)
{
	uint8_t in[QP_SHORT_IN_BYTES], out[QUERY_QP_OUT_BYTES];
	char e[64];

	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	fset(in, 0, CMD_OPCODE, PRM_QUERY_QP);
	fset(in, 0, CMD_QPN, hq->base.qpn);
	if (mlx5dv_devx_obj_query(hq->dx->qp, in, sizeof(in), out, sizeof(out))) {
		GDAK_ERR("qp", hq->base.qpn, "DEVX QUERY_QP: %s (%s)", strerror(errno),
			 dx_err(out, e, sizeof(e)));
		return errno ? -errno : -EIO;
	}
	switch (fget(out, QPC, QPC_STATE)) {
	case QPC_STATE_RST: *state = GDAK_QPS_RESET; break;
	case QPC_STATE_INIT: *state = GDAK_QPS_INIT; break;
	case QPC_STATE_RTR: *state = GDAK_QPS_RTR; break;
	case QPC_STATE_RTS:
	case QPC_STATE_SQD: *state = GDAK_QPS_RTS; break;
	default: *state = GDAK_QPS_ERR; break;
	}
	return 0;
}

int hw_dqp_read_cqe(struct hw_qp *hq, int recv, uint32_t idx, void *out64)
{
	struct hw_devx_qp *dx = hq->dx;
	size_t off = (recv ? dx->rcq_off : dx->scq_off) + (size_t)idx * 64;

	if (dx->host) {
		memcpy(out64, (char *)dx->gpu + off, 64);
		return 0;
	}
	return hw_cuda_memcpy_dtoh(out64, (char *)dx->gpu + off, 64);
}
