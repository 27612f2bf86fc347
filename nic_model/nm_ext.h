/* SPDX-License-Identifier: MIT */
/*
 * nm_ext.h - NIC-model queues on rings the NIC did not allocate, and CQs
 * as objects of their own that several QPs share (as on ConnectX).
 *
 * Internal to gdak (nic_model and what carries a copy of it: gdak's
 * libibverbs.so.1 and libmlx5.so.1, nic_model/ibv/).  It is what a verbs
 * CQ, an mlx5dv_create_cq/qp or a DEVX CREATE_CQ/QP over umem becomes: the
 * caller (the "device" side: libmlx5 code, a DEVX parser, a test) lays the
 * rings out in its own memory as rdma-core / the PRM do, and the NIC model
 * executes them.
 *
 * Memory ownership: every buffer and doorbell record passed in stays the
 * caller's.  The NIC model reads and writes it while the object lives and
 * never frees, clears or re-initialises it - not at create, not at RESET
 * (ConnectX does not either: libmlx5 sets the CQE owner bytes and clears
 * the records itself).  The caller keeps the memory valid until the
 * destroy call has returned.  Each QP still has a small block of the NIC's
 * own (its gdak_dev_qp descriptor, proxy word, scratch MR, and the UAR
 * page when none is given), freed at destroy.
 *
 * Memory kind: each ring and record may be host memory (malloc, mmap,
 * HOST / HOST_MAPPED allocations of the context) or GPU memory
 * (cudaMalloc, a GPU allocation of the context: what a DEVX umem over GPU
 * memory is).  The kind is found from the address (the CUDA driver's
 * pointer attributes); GPU memory goes through the GPU-memory ring engine
 * (nm_ring_gpu.c: host shadows, batched device-to-host WQE fetches, CQEs
 * delivered with the owner byte last) and needs the CUDA memory engine,
 * else -ENOTSUP.  The one place that decides is nm_ext_ring_kind()
 * (nm_ext.c): a caller that wants to know beforehand asks it.  Doorbell
 * registers (the UAR page) stay host memory in any case (-ENOTSUP).
 *
 * Threading and lifetime: create/destroy/modify are control-path calls,
 * from any one thread per object (not concurrently on the same object).
 * A CQ's CQEs may be written by several NIC threads at once (the send
 * side of each attached QP on that QP's thread, the receive side by the
 * thread running the peer's request); they serialise on a per-CQ producer
 * lock, so one CQ may be shared by QPs on different NIC threads and
 * different transports' responders.  The CQ's consumer (the device) is
 * not the NIC's concern: it reads CQEs and writes the consumer counter in
 * dbrec[0] as on ConnectX.  nm_ext_cq_destroy refuses a CQ that QPs still
 * use (-EBUSY, the kernel's answer); destroy the QPs first.
 *
 * QPs made here are ordinary gdak_qp objects of the "emu" backend: modify
 * (gdak_qp_modify / gdak_qp_connect), gdak_qp_info, gdak_qp_query_error,
 * gdak_qp_export and gdak_qp_destroy work on them as on any other.
 */
#ifndef NM_EXT_H
#define NM_EXT_H

#include <stdint.h>

#include <gdak/gdak.h>

struct nm_cq;
struct nm_thread;

/* ---- CQs -------------------------------------------------------------- */

enum nm_ext_cq_flags {
	NM_EXT_CQ_OI = 1u << 0, /* PRM cq context oi: overrun ignore, dbrec never read */
	NM_EXT_CQ_CC = 1u << 1, /* PRM cq context cc: collapsed, every CQE to entry 0 */
};

struct nm_ext_cq_attr {
	void *buf;	   /* ncqe * cqe_size bytes, 64-byte aligned, host memory */
	uint32_t ncqe;	   /* power of two, 2 .. 4M */
	uint32_t cqe_size; /* 64 (128: -ENOTSUP) */
	/* be32 [0] consumer counter (the device's set_ci), [1] arm word
	 * (arm_sn << 28 | cmd | ci: rdma-core's layout); 8-byte aligned */
	uint32_t *dbrec;
	unsigned flags; /* enum nm_ext_cq_flags */
	/* optional: the UAR word the device writes when it arms the CQ
	 * (UAR + 0x20 on ConnectX).  Recorded for the caller; the NIC model
	 * raises no completion events itself (gdak's libibverbs signals its
	 * completion channels from the CQE it polls) */
	uint64_t *arm_db;
};

/* A CQ on caller memory.  0 and *out, or -EINVAL (bad size / alignment /
 * NULL), -ENOTSUP (128-byte CQEs, GPU memory), -ENOMEM.  CQEs start at
 * producer index 0: the first one written has owner bit 0. */
int nm_ext_cq_create(struct gdak_ctx *ctx, const struct nm_ext_cq_attr *a, struct nm_cq **out);
/* 0, or -EBUSY while any QP uses it (nothing changes), -EINVAL for NULL.
 * Waits a grace period (NIC threads let go of it) before freeing. */
int nm_ext_cq_destroy(struct nm_cq *cq);
/* Its 24-bit number (mlx5 cqn: what a WAIT WQE names, DEVX reports). */
uint32_t nm_ext_cq_num(const struct nm_cq *cq);
/* CQEs written so far (any thread, acquire). */
uint64_t nm_ext_cq_produced(const struct nm_cq *cq);
/* QPs attached now. */
uint32_t nm_ext_cq_users(const struct nm_cq *cq);
/* The CQ of this number on ctx (made by nm_ext_cq_create: a DEVX or a
 * verbs CQ alike), or NULL.  Valid while its creator keeps it. */
struct nm_cq *nm_ext_cq_find(struct gdak_ctx *ctx, uint32_t cqn);

/* ---- QPs -------------------------------------------------------------- */

enum nm_ext_qp_flags {
	/* the send queue is rung by the register alone (GDAK_QP_F_SQ_NO_DBREC,
	 * PRM send_dbr_mode no-dbr): dbrec[1] is never read */
	NM_EXT_QP_NO_DBREC = 1u << 0,
};

struct nm_ext_qp_attr {
	void *sq;	       /* sq_wqebb_cnt * 64 bytes, host memory */
	uint32_t sq_wqebb_cnt; /* power of two, 4 .. 32768 */
	void *rq;	       /* rq_wqe_cnt * rq_stride bytes; NULL with rq_wqe_cnt 0: no RQ */
	uint32_t rq_wqe_cnt;   /* power of two, <= 32768, or 0 */
	uint32_t rq_stride;    /* bytes per receive WQE: power of two, 16 .. 256
				 * (stride / 16 data segments, MLX5_INVALID_LKEY ends a short list) */
	/* be32 [0] receive producer counter, [1] send producer counter
	 * (rdma-core's MLX5_RCV_DBR / MLX5_SND_DBR); 8-byte aligned */
	uint32_t *dbrec;
	/* 4 KiB doorbell page the device writes, host memory: the register
	 * halves at +0x800 / +0x900 (BlueFlame: the WQE copied there), as on a
	 * ConnectX UAR.  NULL: the NIC allocates one (in its block) and
	 * reports it through gdak_qp_export's gdak_dev_qp.db_reg. */
	void *uar;
	struct nm_cq *scq; /* required */
	struct nm_cq *rcq; /* required with an RQ (may be scq); ignored without */
	unsigned flags;	   /* enum nm_ext_qp_flags */
	/* QP-level settings, as gdak_qp_attr has them: handler (the device's
	 * doorbell method, recorded in the descriptor), sharing, mtu (0: 1024),
	 * nic_thread (-1: spread) */
	enum gdak_dev_db_handler handler;
	enum gdak_dev_sharing sharing;
	uint32_t mtu;
	int nic_thread;
	/* Dynamically Connected (gdak_qp_attr's fields of the same names; all
	 * 0: RC).  A DCT still takes a send queue here (4 WQEBBs will do):
	 * nothing rings it, it only keeps the QP's layout uniform. */
	uint32_t type; /* enum gdak_qp_type */
	uint32_t dci_streams;
	uint64_t dc_key;
};

/* A QP on caller rings, in RESET.  0 and *out, or -EINVAL (bad sizes,
 * alignment, a CQ of another context, missing CQ / records), -ENOTSUP
 * (GPU memory), -ENOMEM.  The CQs count it as a user until it is
 * destroyed (gdak_qp_destroy). */
int nm_ext_qp_create(struct gdak_ctx *ctx, const struct nm_ext_qp_attr *a, struct gdak_qp **out);

/* The device rings qp with 8-byte doorbells or 64-byte BlueFlame writes as
 * it chooses per doorbell (ConnectX tells them apart by the write's size;
 * the model by whether the register half past its first 8 bytes changed):
 * what a QP handed to a program by mlx5dv_init_obj or DEVX needs.  A
 * BlueFlame copy is still compared with the ring.  0, -EINVAL (not an emu
 * QP).  Any thread; takes effect at the QP's next doorbell. */
int nm_ext_qp_doorbell_any(struct gdak_qp *qp);

/* Every doorbell of qp will be followed by a kick (the caller's post path
 * calls nm_thread_kick after ringing), so its NIC thread need not poll the
 * doorbell: with all its QPs so, the thread sleeps in the kernel when idle
 * and is woken by the kick, a packet or a transport timer, as rxe's work
 * runs only when asked for.  on = 0 takes it back; nm_ext_qp_doorbell_any
 * (a program that rings by itself) takes it back too.  0 or -EINVAL. */
int nm_ext_qp_doorbell_notify(struct gdak_qp *qp, int on);

/* A file descriptor the NIC thread watches: cb(arg) runs on NIC thread 0
 * of ctx's engine whenever fd is readable (level-triggered: cb reads it
 * with MSG_DONTWAIT until it would block, or is called again).  What the
 * device's RoCEv2 port needs so that a packet wakes only the thread that
 * executes it, not a reader thread that then wakes the NIC thread.  0 and
 * *out, -EINVAL, -ENOMEM.  nm_ext_unwatch_fd before gdak_close(ctx). */
struct nm_ext_watch;
int nm_ext_watch_fd(struct gdak_ctx *ctx, int fd, void (*cb)(void *arg), void *arg,
		    struct nm_ext_watch **out);
void nm_ext_unwatch_fd(struct nm_ext_watch *w);

/* The engine in the caller's thread, as rxe runs in the caller's system
 * call: when the NIC thread's engine lock is free (a try-lock; else 0 and
 * nothing done), do what that thread would do now - for
 * nm_ext_qp_post_inline the QP's doorbell (its WQEs executed, their
 * packets sent), for nm_ext_watch_inline the watched fd's callback (the
 * device's receive socket drained into the QPs' inboxes) and then the
 * passes of the QPs that gave work.  1: ran.  Same WQE rings, doorbells,
 * traces, strict checks and fault injection as on the NIC thread, which
 * stays for timers and for whatever these calls did not finish.  Any
 * thread but a NIC thread; never blocks on the engine. */
int nm_ext_qp_post_inline(struct gdak_qp *qp);
int nm_ext_watch_inline(struct nm_ext_watch *w);
/* Test hook: takes (on = 1) or gives back (on = 0, from the same thread)
 * the engine lock of w's NIC thread (nm_thread_hold).  0 or -EINVAL. */
int nm_ext_watch_hold(struct nm_ext_watch *w, int on);
/* Test hook: parks (on = 1) / unparks w's NIC thread (nm_thread_park):
 * parked, it runs nothing and leaves the engine to inline runs.  0 or
 * -errno. */
int nm_ext_watch_park(struct nm_ext_watch *w, int on);
/* The NIC thread that runs w's callback (nm_thread_try_inline's thread). */
struct nm_thread *nm_ext_watch_thread(const struct nm_ext_watch *w);

/* ---- memory kind -------------------------------------------------------- */

/* The one place that decides how a ring / record at [addr, addr+len) is
 * executed: 0 host memory, 1 GPU memory (the GPU-memory ring engine will
 * reach it), or -ENOTSUP with a log line naming what (GPU memory without
 * the CUDA memory engine). */
int nm_ext_ring_kind(struct gdak_ctx *ctx, const void *addr, size_t len, const char *what);

#endif /* NM_EXT_H */
