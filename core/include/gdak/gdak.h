/* SPDX-License-Identifier: MIT */
/*
 * gdak.h - host (control-path) API.
 *
 * Every function returns 0 or a negative errno and logs why on failure
 * (GDAK_LOG=error|warn|info|debug); objects come out through the last
 * argument.  The same calls drive the emulated NIC ("emu", "emu:udp",
 * "emu:verbs:<dev>") and, when built with -DGDAK_HW_MLX5=ON, a real ConnectX
 * ("mlx5_0").  What device code needs comes out of gdak_qp_export() as a
 * struct gdak_dev_qp (see <gdak/dev/types.h>).
 */
#ifndef GDAK_GDAK_H
#define GDAK_GDAK_H

#include <stddef.h>
#include <stdint.h>

#include <gdak/qp_modes.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GDAK_VERSION_MAJOR 0
#define GDAK_VERSION_MINOR 1

struct gdak_ctx;
struct gdak_mr;
struct gdak_qp;
/* device descriptors: <gdak/dev/types.h> (the device API) defines them */
struct gdak_dev_qp;
struct gdak_dev_av;

/* ---- context ------------------------------------------------------------ */

/*
 * Open a device.  `device` names a backend and its options:
 *   "emu"                 the NIC model, in-process loopback transport
 *   "emu:udp[:ADDR[:PORT]]" the NIC model, RoCEv2 over UDP
 *   "emu:verbs:DEV"       the NIC model, executing over libibverbs on DEV
 *   "mlx5_N"              a ConnectX (only with GDAK_HW_MLX5)
 * NULL means $GDAK_DEVICE, or "emu" when that is unset.
 */
int gdak_open(const char *device, struct gdak_ctx **ctx);
void gdak_close(struct gdak_ctx *ctx);

/* Name of the backend behind ctx ("emu", "mlx5"). */
const char *gdak_ctx_backend(const struct gdak_ctx *ctx);
/* The device string it was opened with, after defaults were applied. */
const char *gdak_ctx_device(const struct gdak_ctx *ctx);

/* Names of the backends compiled in, NULL-terminated. */
const char *const *gdak_backends(void);

/* ---- memory ------------------------------------------------------------- */

enum gdak_mem_kind {
	GDAK_MEM_HOST = 0,	  /* ordinary pageable host memory */
	GDAK_MEM_HOST_MAPPED = 1, /* pinned host memory mapped into the GPU (host memory without CUDA) */
	GDAK_MEM_GPU = 2,	  /* device memory (cudaMalloc) */
};

int gdak_mem_alloc(struct gdak_ctx *ctx, size_t len, enum gdak_mem_kind kind, void **addr);
int gdak_mem_free(struct gdak_ctx *ctx, void *addr);
/* Kind of memory at addr as gdak sees it (for user buffers: HOST or GPU). */
enum gdak_mem_kind gdak_mem_kind_of(struct gdak_ctx *ctx, const void *addr);

/* Access rights, the values of IBV_ACCESS_*. */
enum gdak_access {
	GDAK_ACCESS_LOCAL_WRITE = 1,
	GDAK_ACCESS_REMOTE_WRITE = 2,
	GDAK_ACCESS_REMOTE_READ = 4,
	GDAK_ACCESS_REMOTE_ATOMIC = 8,
	GDAK_ACCESS_ALL = 15,
};

int gdak_mr_reg(struct gdak_ctx *ctx, void *addr, size_t len, unsigned access, struct gdak_mr **mr);
int gdak_mr_dereg(struct gdak_mr *mr);
uint32_t gdak_mr_lkey(const struct gdak_mr *mr);
uint32_t gdak_mr_rkey(const struct gdak_mr *mr);

/* ---- queue pairs -------------------------------------------------------- */

enum gdak_qp_state {
	GDAK_QPS_RESET = 0,
	GDAK_QPS_INIT,
	GDAK_QPS_RTR,
	GDAK_QPS_RTS,
	GDAK_QPS_ERR,
};
const char *gdak_qp_state_name(enum gdak_qp_state s);

struct gdak_qp_attr {
	uint32_t sq_depth;	/* send queue, in 64-byte WQEBBs; rounded up to a power of two (default 256) */
	uint32_t cq_depth;	/* send CQ entries; power of two (default = sq_depth) */
	uint32_t rq_depth;	/* receive WQEs; 0 = no receive queue (default 0) */
	uint32_t rcq_depth;	/* receive CQ entries (default = rq_depth) */
	uint32_t rq_max_sge;	/* data segments per receive WQE (default 1) */
	enum gdak_dev_db_handler handler; /* doorbell handler device code uses */
	enum gdak_dev_sharing sharing;	  /* exclusive or shared among device threads */
	uint32_t mtu;		/* path MTU in bytes, 256..4096 (default 1024) */
	int nic_thread;		/* NIC model: which NIC thread serves it; -1 = spread */
	unsigned flags;		/* GDAK_QP_F_* */
	/* Dynamically Connected transport (docs/DESIGN.md "DC"); all 0 = RC */
	uint32_t type;	      /* enum gdak_qp_type (default GDAK_QPT_RC) */
	uint32_t dci_streams; /* DCI: concurrent streams, power of two 1..16 (default 1) */
	uint64_t dc_key;      /* DCT: the access key every DCI must present */
};

/*
 * QP types.  A DCI is a send queue (and its send CQ) whose WQEs each carry
 * an address vector naming a DCT: one DCI reaches any number of peers.  A
 * DCT is a receive-only target (rq_depth / rcq_depth give it the receive
 * queue a ConnectX DCT takes from its SRQ) that applies what any DCI
 * presenting its access key sends to the context's memory (its PD).
 * Neither connects: gdak_qp_connect(qp, NULL) takes a DCI to RTS and a DCT
 * to RTR; the peer is chosen per WQE.  The NIC model implements DC on the
 * in-process transport ("emu") and over udp (docs/UDP.md "DC"); others: -ENOTSUP.
 */
enum gdak_qp_type {
	GDAK_QPT_RC = 0,
	GDAK_QPT_DCI = 1,
	GDAK_QPT_DCT = 2,
};
#define GDAK_DCI_MAX_STREAMS 16
/*
 * QP flags: how the device stack describes its queues.  gdak_qp_create
 * refuses a flag it does not know (-EINVAL) and one the backend cannot
 * honour (-ENOTSUP, with a log line): a flag is never silently ignored.
 *
 * GDAK_QP_F_QUEUES_GPU  SQ, RQ, CQs and doorbell records in GPU memory
 *     (cudaMalloc), as DOCA GPUNetIO places them; the doorbell register
 *     page and the CPU-proxy word stay host memory.  hw_mlx5: its DEVX
 *     path.  "emu": needs the CUDA memory engine (-ENOTSUP without a GPU);
 *     the NIC model reaches the rings through the driver (WQEs fetched
 *     when the register / proxy word announces them, CQEs delivered with
 *     the owner byte last, the SQ record read only at the idle check:
 *     the register is the producer; docs/CUDA.md "Rings in GPU memory").
 *     Device code must keep the fence before its register store (no
 *     GDAK_DEV_NO_RING_FENCE).
 * GDAK_QP_F_SCQ_OVERRUN_IGNORE / GDAK_QP_F_RCQ_OVERRUN_IGNORE  the send /
 *     receive CQ is created with overrun-ignore (PRM CQ context `oi`): the
 *     consumer never writes the CQ doorbell record (DOCA GPUNetIO and
 *     NVSHMEM IBGDA create their CQs so) and the NIC writes CQEs whether or
 *     not they were consumed.  Without it, a CQE that finds the CQ full is a
 *     CQ error (strict mode: rule cq_overrun, QP to ERR).
 * GDAK_QP_F_SCQ_COLLAPSED / GDAK_QP_F_RCQ_COLLAPSED  collapsed CQ (PRM `cc`):
 *     every CQE is written to entry 0, with the owner bit and wqe_counter it
 *     would carry at its own index; the consumer polls entry 0 only.  A
 *     collapsed CQ never overruns (each CQE replaces the previous one).
 * GDAK_QP_F_SQ_NO_DBREC  the send queue is rung without a doorbell record
 *     (GPUNetIO's GPU_SM_NO_DBR, HCA cap send_dbr_mode_no_dbr_ext): the NIC
 *     works to the producer index the doorbell register carries and never
 *     reads the send doorbell record.
 */
enum {
	GDAK_QP_F_QUEUES_GPU = 1u << 0,
	GDAK_QP_F_SCQ_OVERRUN_IGNORE = 1u << 1,
	GDAK_QP_F_SCQ_COLLAPSED = 1u << 2,
	GDAK_QP_F_RCQ_OVERRUN_IGNORE = 1u << 3,
	GDAK_QP_F_RCQ_COLLAPSED = 1u << 4,
	GDAK_QP_F_SQ_NO_DBREC = 1u << 5,
};
#define GDAK_QP_F_ALL 0x3fu

/* Plain, fixed-layout data a peer needs to connect; safe to send over a socket
 * with gdak_qp_info_pack/unpack (big-endian, GDAK_QP_INFO_WIRE_SIZE bytes). */
struct gdak_qp_info {
	uint32_t version;	/* GDAK_QP_INFO_VERSION */
	uint32_t qpn;
	uint32_t psn;		/* first PSN the peer should expect from us */
	uint32_t mtu;		/* bytes */
	uint64_t node;		/* NIC-model instance (loop transport) or 0 */
	uint8_t gid[16];	/* RoCE: IPv4-mapped or IPv6 address */
	uint16_t udp_port;	/* udp transport: our UDP port */
	uint16_t lid;		/* IB: LID */
	uint8_t transport;	/* enum gdak_qp_info_transport */
	uint8_t gid_index;
	uint8_t qp_type; /* enum gdak_qp_type (version 2) */
	uint8_t reserved;
	uint64_t dc_key; /* DCT: its access key (version 2) */
};
/* Version 2 added qp_type and dc_key (wire bytes 50 and 52..59, zero in a
 * version 1 record); gdak_qp_info_unpack reads version 1 records as RC and
 * reports them as version 2. */
#define GDAK_QP_INFO_VERSION 2
#define GDAK_QP_INFO_WIRE_SIZE 64
enum gdak_qp_info_transport {
	GDAK_QPI_LOOP = 1,
	GDAK_QPI_UDP = 2,
	GDAK_QPI_VERBS = 3,
	GDAK_QPI_HW = 4,
};
void gdak_qp_info_pack(const struct gdak_qp_info *in, uint8_t out[GDAK_QP_INFO_WIRE_SIZE]);
int gdak_qp_info_unpack(const uint8_t in[GDAK_QP_INFO_WIRE_SIZE], struct gdak_qp_info *out);

/* attr may be NULL for the defaults. */
int gdak_qp_create(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr, struct gdak_qp **qp);
int gdak_qp_destroy(struct gdak_qp *qp);
int gdak_qp_info(struct gdak_qp *qp, struct gdak_qp_info *out);
/* RESET -> INIT -> RTR -> RTS against the peer.  DCI and DCT: peer is NULL
 * (a DCI goes to RTS, a DCT to RTR, its last state). */
int gdak_qp_connect(struct gdak_qp *qp, const struct gdak_qp_info *peer);
/* One state transition (for callers that drive the state machine themselves);
 * illegal transitions return -EINVAL.  Any state may go to ERR or RESET. */
int gdak_qp_modify(struct gdak_qp *qp, enum gdak_qp_state to, const struct gdak_qp_info *peer);
enum gdak_qp_state gdak_qp_state(struct gdak_qp *qp);
uint32_t gdak_qp_num(const struct gdak_qp *qp);
/* The descriptor device code takes, in device-visible memory; owned by qp. */
int gdak_qp_export(struct gdak_qp *qp, struct gdak_dev_qp **dqp);
enum gdak_qp_type gdak_qp_type(const struct gdak_qp *qp);

/*
 * The address vector a DCI's WQEs carry to reach the DCT that `dct`
 * describes (its gdak_qp_info, from this process or a peer's): DCT number,
 * access key, LID / GID, built once on the host as NVSHMEM does per peer.
 * compact: the 16-byte form (HCA cap compact_address_vector: key, DCT
 * number, LID, no GRH; IB-routed peers), else the full 48-byte one.
 * -EINVAL when dct is not a DCT's info.
 */
int gdak_dc_av(const struct gdak_qp_info *dct, int compact, struct gdak_dev_av *av);

struct gdak_qp_error {
	enum gdak_qp_state state;
	uint8_t syndrome;	 /* MLX5_CQE_SYNDROME_*, 0 if none */
	uint8_t vendor_syndrome;
	uint16_t wqe_index;	 /* WQE that failed */
	uint8_t opcode;		 /* its MLX5_OPCODE_* */
	char rule[48];		 /* check that fired ("bad_rkey", ...) or "" */
	char text[160];		 /* human text: what went wrong, where */
	/* Warnings too (emulated NIC): how many strict-mode checks fired on
	 * this QP, and the last of them whether or not it failed the QP -
	 * what ConnectX would run but may misexecute (bf_not_alternated,
	 * ring_without_record, ...) shows here while the QP stays in RTS. */
	uint64_t violations;
	char last_rule[48];
	char last_text[160];
};
int gdak_qp_query_error(struct gdak_qp *qp, struct gdak_qp_error *err);

/* ---- errors and logging -------------------------------------------------- */

/* strerror for gdak's negative return codes. */
const char *gdak_strerror(int err);

enum gdak_log_level { GDAK_LOG_ERROR = 0, GDAK_LOG_WARN, GDAK_LOG_INFO, GDAK_LOG_DEBUG };
/* Overrides $GDAK_LOG. */
void gdak_set_log_level(enum gdak_log_level lvl);
enum gdak_log_level gdak_get_log_level(void);

#ifdef __cplusplus
}
#endif
#endif /* GDAK_GDAK_H */
