/* SPDX-License-Identifier: MIT */
/*
 * gdak/trace.h - the WQE/CQE/doorbell/packet trace writer.
 *
 * A trace is a pcapng file (docs/TRACE.md): wire packets as ordinary
 * Ethernet/IPv4/UDP/RoCEv2 frames that Wireshark decodes, and gdak's own
 * records (doorbell, WQE, CQE, check violation, injected fault, lost-record
 * count) in a documented custom block.  The NIC model writes through one
 * buffer per NIC thread (no lock on the data path), a NIC pass's records as
 * one compact BATCH; a full buffer goes to the trace's I/O thread, which does
 * the file writes.  When every buffer of a thread waits for the file the
 * thread waits too (counted), or in the lossy mode drops one; anything not
 * written is counted and recorded, never dropped silently.  gdak-trace reads
 * it back.
 */
#ifndef GDAK_TRACE_H
#define GDAK_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gdak_trace;	/* one open trace file */
struct gdak_trace_buf;	/* one writer thread's buffer into it */

/* Record kinds (the custom block's record type field). */
enum gdak_trace_rec {
	GDAK_TREC_DOORBELL = 1,	 /* a doorbell the NIC observed */
	GDAK_TREC_WQE = 2,	 /* a fetched send WQE, raw WQEBBs */
	GDAK_TREC_CQE = 3,	 /* a CQE written, raw 64 bytes */
	GDAK_TREC_VIOLATION = 4, /* a check that fired */
	GDAK_TREC_FAULT = 5,	 /* an injected fault */
	GDAK_TREC_LOST = 6,	 /* records that could not be written */
	GDAK_TREC_QP = 7,	 /* QP created/connected: qpn, peer, transport */
	GDAK_TREC_RECV_WQE = 8,	 /* a receive WQE consumed, raw bytes */
	GDAK_TREC_NOTE = 9,	 /* free text (tool annotations) */
};

/* Open path for writing ("-" is not allowed); 0 or -errno.  Timestamps come
 * from CLOCK_REALTIME, or from a counter when $GDAK_TRACE_CLOCK is "fake". */
int gdak_trace_open(const char *path, struct gdak_trace **t);

struct gdak_trace_opts {
	size_t buf_size;	/* per-thread buffer bytes; 0 = 256 KiB (min 128 KiB) */
	int fake_clock;		/* 1: timestamps = 1000 ns * a global counter (golden
				 * tests); 0: $GDAK_TRACE_CLOCK decides */
	unsigned chunks;	/* buffers of buf_size per thread, written to the file by
				 * the trace's own I/O thread; 1 = no I/O thread (the
				 * recording thread writes a full buffer itself);
				 * 0 = $GDAK_TRACE_WRITER (thread|inline), else 4 */
	int lossy;		/* 1: a thread whose buffers are all queued drops the
				 * full one (counted: LOST record, stats) instead of
				 * waiting for the file; 0: $GDAK_TRACE_FULL (wait|drop),
				 * else wait - nothing is ever dropped silently */
};
int gdak_trace_open_opts(const char *path, const struct gdak_trace_opts *opts,
			 struct gdak_trace **t);
/* Open $GDAK_TRACE if set: 0 with *t NULL when unset, 0 with *t, or -errno. */
int gdak_trace_open_env(struct gdak_trace **t);
/* A process-unique number for this open trace (never reused, unlike its
 * address after a close): code that caches a thread buffer compares it. */
uint64_t gdak_trace_generation(const struct gdak_trace *t);
/* Flush every buffer, write the closing statistics, close. */
void gdak_trace_close(struct gdak_trace *t);
/* Flush every thread's buffer to the file (safe from any thread). */
int gdak_trace_flush(struct gdak_trace *t);
/* The buffer a writer thread uses; thread_id is recorded in each record
 * (the NIC thread number).  Safe to call from several threads; each buffer
 * must then be used by one thread at a time. */
struct gdak_trace_buf *gdak_trace_thread_buf(struct gdak_trace *t, uint32_t thread_id);

/*
 * Batching, for a thread that makes many records in a short span (a NIC
 * pass): between begin and end, DOORBELL, WQE and CQE records are packed
 * into BATCH blocks that share one timestamp (read once, when the batch
 * ends) and store each WQE/CQE as the bytes that differ from the previous
 * one, or - the previous one advanced by the same step as before (the next
 * WQE of a stream) - only count it (REPEAT): far fewer bytes, clock reads
 * and cycles.  Any other record closes
 * the current batch first, so the thread's order is kept.  end commits the
 * batch (a flush from another thread sees only committed records): keep the
 * span short.  Owner thread only; nesting is not counted (end ends).
 */
void gdak_trace_batch_begin(struct gdak_trace_buf *b);
void gdak_trace_batch_end(struct gdak_trace_buf *b);

/* Records.  Each takes its own nanosecond timestamp (CLOCK_REALTIME), except
 * inside a batch (above). */
void gdak_trace_doorbell(struct gdak_trace_buf *b, uint32_t qpn, uint8_t handler,
			 uint16_t dbrec_pi, const void *reg, uint32_t reg_len);
void gdak_trace_wqe(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
		    const void *wqebbs, uint32_t n_wqebb);
/* n WQEs of one WQEBB each at consecutive ring slots (wqes, wqes + 64, ...)
 * with indexes wqe_index, wqe_index + 1, ...: the same records as n
 * gdak_trace_wqe() calls; inside a batch a steady stream costs a few vector
 * instructions per WQE (the NIC model hands a pass's fetched WQEs over so). */
void gdak_trace_wqes(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
		     const void *wqes, uint32_t n);
void gdak_trace_recv_wqe(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
			 const void *wqe, uint32_t len);
void gdak_trace_cqe(struct gdak_trace_buf *b, uint32_t qpn, uint32_t cqn, uint32_t cq_index,
		    const void *cqe64);
void gdak_trace_violation(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
			  const char *rule, uint8_t syndrome, const char *text);
void gdak_trace_fault(struct gdak_trace_buf *b, uint32_t qpn, uint16_t wqe_index,
		      const char *kind, const char *text);
void gdak_trace_qp(struct gdak_trace_buf *b, uint32_t qpn, uint32_t peer_qpn,
		   const char *transport, const char *text);
void gdak_trace_note(struct gdak_trace_buf *b, const char *text);

/* A RoCEv2 packet: udp_payload starts at the BTH (ICRC included).  The
 * writer wraps it in Ethernet/IPv4/UDP with the given addresses (network
 * byte order IPv4, host-order ports).  dir: 0 sent, 1 received. */
void gdak_trace_packet(struct gdak_trace_buf *b, int dir, uint32_t src_ip, uint32_t dst_ip,
		       uint16_t src_port, uint16_t dst_port, const void *udp_payload,
		       uint32_t len);
/* The same with the IPv4 header's identification: RoCEv2's ICRC covers it,
 * so a received packet is recorded with the ID its ICRC matched with (a
 * kernel RoCE stack such as rxe numbers its datagrams). */
void gdak_trace_packet_id(struct gdak_trace_buf *b, int dir, uint32_t src_ip, uint32_t dst_ip,
			  uint16_t src_port, uint16_t dst_port, const void *udp_payload,
			  uint32_t len, uint16_t ip_id);

/* Counters. */
struct gdak_trace_stats {
	uint64_t records;	/* written */
	uint64_t bytes;		/* file bytes */
	uint64_t lost;		/* not in the file (I/O error, or dropped: lossy mode) */
	uint64_t flushes;
	uint64_t waits;		/* a thread found all its buffers queued and waited */
	uint64_t dropped;	/* of lost, dropped by the lossy mode */
};
void gdak_trace_get_stats(struct gdak_trace *t, struct gdak_trace_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* GDAK_TRACE_H */
