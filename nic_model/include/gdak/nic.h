/* SPDX-License-Identifier: MIT */
/*
 * gdak/nic.h - knobs and counters of the emulated NIC (the "emu" backend).
 *
 * Everything here has an environment variable read at the first gdak_open()
 * of an "emu" device; a call overrides it:
 *   GDAK_NIC_THREADS=N     NIC threads (default 1); QPs are spread over them
 *   GDAK_STRICT=0|1        strict checks (default 1, see DESIGN.md "Checks")
 *   GDAK_POLL=adaptive|spin  idle back-off (default adaptive) or pure spinning
 *   GDAK_TRACE=path        write a pcapng trace (gdak/trace.h)
 *   GDAK_FAULTS=spec       fault injection ("err:qp=N,wqe=K,syndrome=NAME",
 *                          "delay:qp=N,wqe=K,passes=P", "stall:qp=N,ms=M": QP N's
 *                          doorbells unread for M ms; several joined by ';')
 *   GDAK_RNR_TIMEOUT_MS=T  how long a SEND waits for a receive WQE before the
 *                          requester completes it with RNR_RETRY_EXC_ERR (default 1000)
 *
 * Adaptive polling: a NIC thread with nothing to do spins a little, then
 * yields, then sleeps in growing steps up to 1 ms; a doorbell is therefore
 * seen within about 1 ms at worst.  Spin mode never sleeps (latency
 * benchmarks; it takes a whole core per NIC thread); it only yields the CPU
 * after 16 us without work, so that threads sharing the core still run.
 *
 * Atomics: the NIC model writes the original value of an ATOMIC_FA/CS to
 * the requester's local buffer in big-endian byte order, as ConnectX does;
 * the target word in memory is a native (little-endian) uint64_t.  The
 * 8-byte masked forms (ctrl + raddr + the 32-byte gdak_mlx5_masked_atomic_seg
 * + data, 5 DS) follow the mlx5 PRM: ATOMIC_MASKED_FA adds field by field,
 * each bit set in swap_add_mask being the most significant bit of a field
 * (carries never cross into the next field; mask 0 is a plain add);
 * ATOMIC_MASKED_CS succeeds when the bits under compare_mask equal those of
 * compare, and then replaces the bits under swap_add_mask with swap's.
 * Extended atomics (capability: 4- and 8-byte operands, what a ConnectX
 * reports as atomic_size_qp 0xc): ATOMIC_MASKED_FA / _CS with ctrl opmod
 * 0x08 operate on a native uint32_t (one 16-byte segment, 4-byte local
 * segment, DS 4) and return it big-endian in 4 bytes; opmod 0x09 is the
 * 8-byte extended form (FA: 16-byte add/boundary segment, DS 4; CS: the
 * 32-byte segment, DS 5).  Layouts in <gdak/mlx5.h>.  The 4-byte form runs
 * on the in-process transport; the packet transports fail it
 * (LOCAL_QP_OP_ERR, rule atomic_transport): the RoCE wire has 8-byte
 * atomics only.
 * Every atomic is atomic with respect to all QPs and NIC threads.
 */
#ifndef GDAK_NIC_H
#define GDAK_NIC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gdak_ctx;
struct gdak_qp;

enum gdak_nic_poll {
	GDAK_NIC_POLL_ADAPTIVE = 0,
	GDAK_NIC_POLL_SPIN = 1,
};

/* Number of NIC threads: takes effect when no emu context is open (returns
 * -EBUSY otherwise).  1..64. */
int gdak_nic_set_threads(unsigned n);
unsigned gdak_nic_get_threads(void);
int gdak_nic_set_strict(int on);
int gdak_nic_get_strict(void);
int gdak_nic_set_poll(enum gdak_nic_poll mode);
enum gdak_nic_poll gdak_nic_get_poll(void);
/* Start tracing to path (NULL stops and closes the trace).  -ENOTSUP when
 * the build has no trace writer. */
int gdak_nic_set_trace(const char *path);
/* Fault injection spec (see above); NULL or "" clears.  -EINVAL on a bad spec. */
int gdak_nic_set_faults(const char *spec);
int gdak_nic_set_rnr_timeout_ms(uint32_t ms);

struct gdak_nic_stats {
	uint64_t wqes;		/* send WQEs executed (errors included) */
	uint64_t bytes;		/* payload bytes of executed WQEs */
	uint64_t cqes;		/* CQEs written (send and receive) */
	uint64_t errors;	/* error CQEs written (flushes excluded) */
	uint64_t flushed;	/* WR_FLUSH_ERR CQEs written */
	uint64_t violations;	/* strict-mode checks that fired */
	uint64_t doorbells;	/* doorbells (record or register changes) seen */
	uint64_t recvs;		/* receive WQEs consumed */
	uint64_t rnr;		/* requests that found no receive WQE (retried) */
	uint64_t foreign;	/* packets dropped: not from the connected peer (emu:udp) */
};

/* Counters of one QP (emu backend only; -ENOTSUP otherwise). */
int gdak_nic_qp_stats(struct gdak_qp *qp, struct gdak_nic_stats *st);
/* Counters of every QP of the process, destroyed ones included. */
int gdak_nic_stats(struct gdak_nic_stats *st);
/*
 * The NIC's own view of a QP (emu backend only; -ENOTSUP otherwise), taken
 * on the QP's NIC thread between two passes: what it has fetched and been
 * told, independent of what the device believes.  After a RESET every
 * index is 0 again, as on a ConnectX.
 */
struct gdak_nic_qp_view {
	int state;	       /* enum gdak_qp_state as the NIC holds it */
	uint64_t sq_consumer;  /* WQEBBs fetched (64-bit; the ring index is & (sq - 1)) */
	uint64_t sq_producer;  /* WQEBBs the NIC may execute up to */
	uint64_t sq_rung;      /* producer the doorbell register announced last */
	uint32_t sq_record;    /* send doorbell record seen last (16 bits) */
	uint32_t flags;	       /* the QP's GDAK_QP_F_* */
	uint64_t scq_produced; /* CQEs written to the send CQ */
	uint64_t rcq_produced; /* CQEs written to the receive CQ */
	uint64_t rq_consumed;  /* receive WQEs consumed */
};
int gdak_nic_qp_query(struct gdak_qp *qp, struct gdak_nic_qp_view *v);

/* DC counters of a DCI or DCT (emu backend only; -ENOTSUP otherwise,
 * -EINVAL for an RC QP). */
struct gdak_nic_dc_stats {
	uint64_t connects;	 /* DCI: streams opened to a DCT */
	uint64_t disconnects;	 /* DCI: streams closed (target change, RESET, ERR) */
	uint64_t key_violations; /* DCT: connects with a wrong access key, dropped
				  * (dctc.dc_access_key_violation_count) */
	uint64_t open_streams;	 /* DCI: streams open now */
};
int gdak_nic_dc_stats(struct gdak_qp *qp, struct gdak_nic_dc_stats *st);

/* Bytes of NIC-model state per QP beyond the rings the caller asked for. */
uint64_t gdak_nic_qp_state_bytes(void);

#ifdef __cplusplus
}
#endif
#endif /* GDAK_NIC_H */
