/* SPDX-License-Identifier: MIT */
/*
 * hw_loc.h - the ConnectX (mlx5dv) backend, internal to hw_mlx5/.
 *
 * Objects embed the core's base structs first (gdak_backend.h).  Two ways to
 * build a QP:
 *   path 1 (default): verbs + mlx5dv create the CQs and the RC QP in host
 *     memory; mlx5dv_init_obj hands out the rings, doorbell records and the
 *     BlueFlame register, which are mapped into the GPU with
 *     cuMemHostRegister (the UAR page with CU_MEMHOSTREGISTER_IOMEMORY).
 *   path 2 (GDAK_QP_F_QUEUES_GPU): rings and doorbell records in GPU memory,
 *     registered as DEVX umems, the CQs and QP created and moved through
 *     RESET->INIT->RTR->RTS with raw PRM commands (hw_devx.c).
 * DC: path 1 makes DCIs and DCTs with mlx5dv_create_qp (the DC init
 * attributes, the state masks the kernel checks); path 2 makes DCIs with
 * CREATE_QP st=DCI.  A DCT has no rings: it is a verbs object on both.
 * When the UAR cannot be mapped into the GPU, the QP falls back to the
 * CPU-proxy doorbell handler (hw_proxy.c).
 *
 * Prototypes are grouped by the file that defines them.
 */
#ifndef GDAK_HW_LOC_H
#define GDAK_HW_LOC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include <gdak/dev/types.h>

#include "gdak_backend.h"
#include "gdak_ibv.h"
#include "gdak_mmio.h"

/* ---- memory ordering on the host side, named by what they order --------- */

/*
 * Stores to host memory the HCA reads by DMA (WQEs, doorbell records) must be
 * visible before the MMIO doorbell write that makes the HCA fetch them
 * (rdma-core's udma_to_device_barrier()).  On x86 ordinary stores are not
 * reordered with each other, but a write-combining MMIO store can pass a
 * cacheable store, so a full store fence is used; on aarch64 a "dmb oshst"
 * orders normal stores before the device store.
 */
static inline void hw_wmb_before_db(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("sfence" ::: "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("dmb oshst" ::: "memory");
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* ---- objects ---------------------------------------------------------- */

/* One allocation made by gdak_mem_alloc. */
struct hw_alloc {
	struct gdak_mem_block b; /* first: the context's list links it */
	int cuda;		/* 1: owned by the CUDA driver (cuMemHostAlloc/cuMemAlloc) */
};

/* A host range made reachable from the GPU with cuMemHostRegister. */
struct hw_gpumap {
	struct hw_gpumap *next;
	void *base;		/* page aligned */
	size_t len;		/* page multiple */
	void *dptr;		/* device address of base */
	unsigned refs;
	int borrowed;		/* registered by someone else: never unregistered by us */
};

struct hw_proxy;
struct hw_devx_qp;

struct hw_ctx {
	struct gdak_ctx base;
	struct ibv_context *ibctx;
	struct ibv_pd *pd;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	uint8_t port;
	uint8_t gid_index;
	uint8_t link_layer;	/* IBV_LINK_LAYER_INFINIBAND / _ETHERNET */
	uint8_t devx;		/* context opened with MLX5DV_CONTEXT_FLAGS_DEVX */
	enum ibv_mtu active_mtu;
	uint16_t lid;
	union ibv_gid gid;
	uint8_t max_rd_atom;	/* max_qp_rd_atom: RDMA reads/atomics in flight as responder */
	uint8_t max_init_rd_atom; /* max_qp_init_rd_atom: as requester */
	int cuda;		/* 1 when the CUDA driver API is usable */

	pthread_mutex_t lock;	/* allocs, maps */
	struct gdak_mem_block *allocs; /* of struct hw_alloc */
	struct hw_gpumap *maps;
	struct hw_proxy *proxy;	/* CPU-proxy doorbell thread, started on first use */
};

struct hw_mr {
	struct gdak_mr base;
	struct ibv_mr *mr;
	int dmabuf;		/* registered through ibv_reg_dmabuf_mr */
};

/* The last error CQE the backend found on one of the QP's CQs. */
struct hw_err_seen {
	int valid;
	uint8_t syndrome;
	uint8_t vendor_syndrome;
	uint8_t opcode;		/* MLX5_OPCODE_* of the failed WQE */
	uint8_t cqe_opcode;	/* REQ_ERR / RESP_ERR */
	uint16_t wqe_counter;
	int recv;		/* found on the receive CQ */
};

struct hw_qp {
	struct gdak_qp base;
	struct hw_ctx *ctx;
	int devx;		/* path 2 */

	/* path 1 objects */
	struct ibv_td *td;
	struct ibv_pd *parent_pd; /* pd + td: a BlueFlame register of our own */
	struct ibv_cq_ex *scq;
	struct ibv_cq_ex *rcq;	/* NULL when there is no receive queue */
	struct ibv_qp *qp;
	struct ibv_srq *srq; /* DCT: the SRQ a ConnectX DCT needs (never posted) */

	/* path 2 objects */
	struct hw_devx_qp *dx;

	/* host views (what the CPU proxy and the error scan use) */
	void *sq_buf;
	uint32_t *dbrec;	/* dbrec[0] receive, dbrec[1] send */
	void *db_reg;		/* UAR doorbell / BlueFlame register */
	void *scqes, *rcqes;	/* NULL when not host-readable (path 2: GPU memory) */
	uint32_t scq_n, rcq_n;

	/* the descriptor device code takes */
	struct gdak_dev_qp *dqp;
	int dqp_cuda;		/* allocated with cuMemHostAlloc */
	uint8_t *slot_bbs;	/* lives right after dqp in the same allocation */
	uint64_t *proxy_pi;	/* same allocation */
	struct ibv_mr *scratch_mr; /* put+signal's discarded fetch (same allocation) */

	uint32_t psn;
	uint32_t mtu;		/* bytes, path MTU after connect */
	struct hw_err_seen err;

	/* CPU proxy */
	struct hw_qp *proxy_next;
	uint64_t proxy_last;
	int proxied;
	/* gpumap entries taken for this QP (released on destroy) */
	void *mapped[8];
	int n_mapped;
};

static inline struct hw_ctx *hw_ctx_of(struct gdak_ctx *c) { return (struct hw_ctx *)c; }
static inline struct hw_qp *hw_qp_of(struct gdak_qp *q) { return (struct hw_qp *)q; }

/* ---- hw_backend.c ------------------------------------------------------ */
extern const struct gdak_backend_ops gdak_hw_backend_ops;
uint32_t hw_mtu_bytes(enum ibv_mtu m);

/* ---- hw_cuda.c: the CUDA driver API, loaded with dlopen("libcuda.so.1") -- */
/* 0 when a GPU is usable; -ENODEV (no driver / no GPU) otherwise.  Once per process. */
int hw_cuda_init(void);
int hw_cuda_host_alloc(size_t len, void **p);
void hw_cuda_host_free(void *p);
int hw_cuda_dev_alloc(size_t len, void **p);
void hw_cuda_dev_free(void *p);
/* Register [p, p+len) (page aligned) for GPU access; -EEXIST when some
 * of it already is registered. */
int hw_cuda_host_register(void *p, size_t len, int iomem);
int hw_cuda_host_unregister(void *p);
int hw_cuda_host_dptr(void *p, void **dptr);
/* 1 when p is CUDA device memory. */
int hw_cuda_is_device_ptr(const void *p);
/* A dma-buf fd for the allocation holding [p, p+len) and p's offset in it. */
int hw_cuda_dmabuf_fd(void *p, size_t len, int *fd, uint64_t *offset);
int hw_cuda_memcpy_dtoh(void *dst, const void *src, size_t len);
int hw_cuda_memcpy_htod(void *dst, const void *src, size_t len);
int hw_cuda_memset(void *dst, uint8_t v, size_t len);

/* ---- hw_mem.c ----------------------------------------------------------- */
int hw_mem_alloc(struct gdak_ctx *ctx, size_t len, enum gdak_mem_kind kind, void **addr);
int hw_mem_free(struct gdak_ctx *ctx, void *addr);
enum gdak_mem_kind hw_mem_kind_of(struct gdak_ctx *ctx, const void *addr);
int hw_mr_reg(struct gdak_ctx *ctx, void *addr, size_t len, unsigned access, struct gdak_mr **mr);
int hw_mr_dereg(struct gdak_mr *mr);
void hw_mem_release_all(struct hw_ctx *hc);
/* Make host memory reachable from the GPU (refcounted per page range). */
int hw_gpumap_get(struct hw_ctx *hc, void *addr, size_t len, int iomem, void **dptr);
void hw_gpumap_put(struct hw_ctx *hc, void *addr);

/* ---- hw_qp.c (common to both paths) ------------------------------------ */
int hw_qp_create(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr, struct gdak_qp **qp);
int hw_qp_destroy(struct gdak_qp *qp);
int hw_qp_export(struct gdak_qp *qp, struct gdak_dev_qp **dqp);
/* Publish what a path created into hq->dqp; maps it into the GPU if any. */
int hw_qp_publish(struct hw_qp *hq, const struct gdak_dev_qp *tmpl);
/* Device address of host memory device code must reach (mapped into the GPU
 * when CUDA is usable; released when the QP is destroyed). */
int hw_qp_map(struct hw_qp *hq, void *host, size_t len, int iomem, void **dev);

/* ---- hw_verbs_qp.c (path 1) --------------------------------------------- */
int hw_vqp_create(struct hw_qp *hq, struct gdak_dev_qp *tmpl);
void hw_vqp_destroy(struct hw_qp *hq);
int hw_vqp_modify(struct hw_qp *hq, enum gdak_qp_state to, const struct gdak_qp_info *peer);

/* ---- hw_devx.c (path 2) --------------------------------------------------- */
int hw_dqp_create(struct hw_qp *hq, struct gdak_dev_qp *tmpl);
void hw_dqp_destroy(struct hw_qp *hq);
int hw_dqp_modify(struct hw_qp *hq, enum gdak_qp_state to, const struct gdak_qp_info *peer);
/* Prove the PRM field tables consistent (no overlaps, all inside their
 * command); 0, or -1 with the reason in why. */
int hw_devx_layout_check(char *why, size_t len);
/* The PRM field encoder (big-endian, bit 0 = MSB of the first dword). */
void hw_prm_set(void *buf, unsigned bit, unsigned width, uint32_t v);
uint32_t hw_prm_get(const void *buf, unsigned bit, unsigned width);
int hw_dqp_query_state(struct hw_qp *hq, enum gdak_qp_state *state);
/* Copy one CQE of a GPU-resident CQ to host memory. */
int hw_dqp_read_cqe(struct hw_qp *hq, int recv, uint32_t idx, void *out64);

/* ---- hw_connect.c --------------------------------------------------------- */
int hw_qp_info(struct gdak_qp *qp, struct gdak_qp_info *out);
int hw_qp_modify(struct gdak_qp *qp, enum gdak_qp_state to, const struct gdak_qp_info *peer);
int hw_qp_query_error(struct gdak_qp *qp, struct gdak_qp_error *err);
/* The attributes both paths use for RTR/RTS (IBA 11.2.4.2, 9.7.6.1.3). */
struct hw_conn_params {
	enum ibv_mtu mtu;
	uint8_t timeout;	/* 4.096 us * 2^timeout */
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;	/* as requester */
	uint8_t max_dest_rd_atomic; /* as responder */
	uint8_t hop_limit;
};
void hw_conn_params(struct hw_qp *hq, const struct gdak_qp_info *peer, struct hw_conn_params *p);

/* ---- hw_proxy.c: the CPU-proxy doorbell thread ---------------------------- */
int hw_proxy_add(struct hw_ctx *hc, struct hw_qp *hq);
void hw_proxy_remove(struct hw_ctx *hc, struct hw_qp *hq);
void hw_proxy_stop(struct hw_ctx *hc);
/* Ring the doorbell for producer index pi (used by the proxy thread). */
void hw_ring_db(struct hw_qp *hq, uint64_t pi);

#endif /* GDAK_HW_LOC_H */
