/* SPDX-License-Identifier: MIT */
/*
 * gdak/trace_format.h - the on-disk format of a gdak trace, and the reader.
 *
 * A trace is a pcapng file (draft-ietf-opsawg-pcapng), docs/TRACE.md:
 *
 *   Section Header Block        little-endian section, shb_userappl "gdak ..."
 *   Interface Description Block interface 0: LINKTYPE_ETHERNET, if_tsresol 9 (ns)
 *   then, in any order:
 *   Enhanced Packet Block       a RoCEv2 packet as Ethernet/IPv4/UDP/BTH..ICRC on
 *                               interface 0; epb_flags carries the direction and a
 *                               custom option (code 2989, PEN below) the NIC thread
 *   Custom Block (0x00000BAD)   one gdak record: PEN (u32) + struct gdak_trace_rec_hdr
 *                               + a body that depends on the record type
 *
 * Custom blocks are "copyable" so editcap/mergecap keep them; Wireshark shows
 * them as "PCAPNG Custom Block" frames and decodes the packets as InfiniBand.
 *
 * Every gdak field is little-endian; the raw WQE/CQE/register bytes inside
 * the bodies are copied as they were in memory (their fields big-endian, as
 * mlx5 defines them).  Bodies start with a fixed part and strings are counted
 * (no terminating NUL).  A reader skips what it does not know: a larger
 * hdr_len, an unknown record type, blocks of other types or other PENs.
 */
#ifndef GDAK_TRACE_FORMAT_H
#define GDAK_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include <gdak/trace.h>

#ifdef __cplusplus
#define GDAK_TF_STATIC_ASSERT static_assert
extern "C" {
#else
#define GDAK_TF_STATIC_ASSERT _Static_assert
#endif

/* ---- pcapng ------------------------------------------------------------- */

enum {
	GDAK_PCAPNG_SHB = 0x0A0D0D0A,
	GDAK_PCAPNG_IDB = 0x00000001,
	GDAK_PCAPNG_ISB = 0x00000005,
	GDAK_PCAPNG_EPB = 0x00000006,
	GDAK_PCAPNG_CB_COPY = 0x00000BAD,
	GDAK_PCAPNG_CB_NOCOPY = 0x40000BAD,
	GDAK_PCAPNG_BOM = 0x1A2B3C4D,
	GDAK_PCAPNG_LINKTYPE_ETHERNET = 1,

	GDAK_PCAPNG_OPT_END = 0,
	GDAK_PCAPNG_OPT_COMMENT = 1,
	GDAK_PCAPNG_OPT_CUSTOM_BIN = 2989, /* copyable custom binary option */
	GDAK_PCAPNG_SHB_USERAPPL = 4,
	GDAK_PCAPNG_IF_NAME = 2,
	GDAK_PCAPNG_IF_TSRESOL = 9,
	GDAK_PCAPNG_EPB_FLAGS = 2,
	GDAK_PCAPNG_EPB_INBOUND = 1,	/* epb_flags bits 1:0 */
	GDAK_PCAPNG_EPB_OUTBOUND = 2,
};

/*
 * Private Enterprise Number in gdak's custom blocks and options.  gdak has
 * no IANA PEN of its own yet, so it uses 32473, the number RFC 5612 reserves
 * for documentation and examples - a placeholder, to be replaced (with a
 * format version bump) if gdak registers one.  Readers match on it.
 */
#define GDAK_TRACE_PEN 32473u

/* ---- gdak records ------------------------------------------------------- */

#define GDAK_TRACE_REC_VERSION 1
#define GDAK_TRACE_QPN_NONE 0xffffffffu
#define GDAK_TRACE_THREAD_WRITER 0xffffffffu /* records the writer itself makes */

/* Closing statistics (written by gdak_trace_close), after enum gdak_trace_rec. */
#define GDAK_TREC_STATS 10
/*
 * Several DOORBELL/WQE/CQE records of one thread packed into one block with
 * one timestamp (gdak_trace_batch_begin/end: one NIC pass).  The reader
 * hands them out one by one, exactly as the standalone records they stand
 * for (docs/TRACE.md "BATCH").  Body: struct gdak_trace_batch_body, then
 * `count` sub-records.
 */
#define GDAK_TREC_BATCH 11
#define GDAK_TREC_MAX 11

/* Sub-record tag byte: bits 3:0 the record type (DOORBELL, WQE, CQE) */
#define GDAK_TRACE_SUB_TYPE 0x0f
#define GDAK_TRACE_SUB_QPN 0x80	  /* a u32 QPN follows; else the previous sub-record's */
#define GDAK_TRACE_SUB_PRED 0x40  /* WQE: index and size predicted; CQE: cqn, cq_index */
/* WQE/CQE: a u16 n follows - n records, each the previous one of its type
 * advanced by the step between the two before (docs/TRACE.md "REPEAT") */
#define GDAK_TRACE_SUB_REPEAT 0x20
/* WQE/CQE: off the progression - the next REPEAT steps past it */
#define GDAK_TRACE_SUB_OFF 0x10
/* Largest sub-record: tag, QPN, WQE fields, 16 delta-coded WQEBBs */
#define GDAK_TRACE_SUB_MAX (1 + 4 + 4 + GDAK_TRACE_MAX_WQEBB * (1 + 8 + 64))

/* Limits the writer applies (larger inputs are cut and flagged TRUNC). */
#define GDAK_TRACE_MAX_WQEBB 16	 /* 63 DS = 16 WQEBBs, the largest legal send WQE */
#define GDAK_TRACE_MAX_REG 64	 /* a BlueFlame write */
#define GDAK_TRACE_MAX_RECV 1024 /* receive WQE bytes */
#define GDAK_TRACE_MAX_STR 1024	 /* each string */
#define GDAK_TRACE_MAX_PKT 65000 /* UDP payload bytes kept per packet */
#define GDAK_TRACE_F_TRUNC 0x1	 /* body flags: input was longer than kept */

struct gdak_trace_rec_hdr {
	uint8_t type;		/* enum gdak_trace_rec / GDAK_TREC_STATS */
	uint8_t version;	/* GDAK_TRACE_REC_VERSION */
	uint16_t hdr_len;	/* bytes of this header; the body starts here */
	uint32_t body_len;	/* bytes of body after the header */
	uint64_t ts_ns;		/* nanoseconds since the epoch (or the fake clock) */
	uint32_t thread_id;	/* NIC thread; GDAK_TRACE_THREAD_WRITER for the writer's own */
	uint32_t qpn;		/* GDAK_TRACE_QPN_NONE when not about one QP */
	uint64_t seq;		/* per-thread record number from 0: a gap means loss */
};

struct gdak_trace_doorbell_body {
	uint16_t dbrec_pi;	/* producer index read from the doorbell record */
	uint8_t handler;	/* enum gdak_dev_db_handler: DB, BF, CPU_PROXY */
	uint8_t flags;
	uint16_t reg_len;	/* register bytes that follow (8 DB, 64 BF, 0 none) */
	uint16_t rsvd;
};

struct gdak_trace_wqe_body {	/* GDAK_TREC_WQE and GDAK_TREC_RECV_WQE */
	uint16_t wqe_index;	/* WQEBB index (producer counter, not wrapped) */
	uint16_t flags;
	uint32_t len;		/* raw bytes that follow: n_wqebb * 64 for send WQEs */
};

struct gdak_trace_cqe_body {
	uint32_t cqn;
	uint32_t cq_index;	/* consumer count the CQE was written for */
	/* 64 raw CQE bytes follow */
};

struct gdak_trace_violation_body { /* also GDAK_TREC_FAULT (syndrome 0) */
	uint16_t wqe_index;
	uint8_t syndrome;	/* MLX5_CQE_SYNDROME_* the check produced, 0 none */
	uint8_t flags;
	uint16_t name_len;	/* rule (violation) or kind (fault) */
	uint16_t text_len;
	/* name, then text */
};

struct gdak_trace_qp_body {
	uint32_t peer_qpn;
	uint16_t transport_len;
	uint16_t text_len;
	/* transport, then text */
};

struct gdak_trace_note_body {
	uint16_t text_len;
	uint16_t flags;
	uint32_t rsvd;
	/* text */
};

struct gdak_trace_lost_body {
	uint64_t records;	/* records that could not be written since the last LOST */
	uint64_t bytes;
};

struct gdak_trace_batch_body {
	uint32_t count;		/* sub-records that follow */
	uint32_t flags;		/* GDAK_TRACE_BATCH_CONT */
	/* with GDAK_TRACE_BATCH_CONT: u64 ref_seq, then the sub-records */
};
/* The first WQE/CQE are coded against the last ones of this thread's
 * previous BATCH, whose last record has sequence number ref_seq (a reader
 * that does not have that batch cannot decode this one, and says so). */
#define GDAK_TRACE_BATCH_CONT 0x1u

struct gdak_trace_stats_body {
	uint64_t records;	/* records and packets written, this one excluded */
	uint64_t bytes;		/* file bytes before this block */
	uint64_t lost;		/* records lost in all */
	uint64_t flushes;
	uint64_t packets;	/* of the records, packets */
	/* since format 1.1 (absent: 0) */
	uint64_t waits;		/* a thread found all its buffers queued and waited */
	uint64_t dropped;	/* of lost, dropped by the lossy mode (GDAK_TRACE_FULL=drop) */
};

GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_rec_hdr) == 32, "rec hdr");
GDAK_TF_STATIC_ASSERT(offsetof(struct gdak_trace_rec_hdr, ts_ns) == 8, "rec ts");
GDAK_TF_STATIC_ASSERT(offsetof(struct gdak_trace_rec_hdr, seq) == 24, "rec seq");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_doorbell_body) == 8, "db body");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_wqe_body) == 8, "wqe body");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_cqe_body) == 8, "cqe body");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_violation_body) == 8, "violation body");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_qp_body) == 8, "qp body");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_note_body) == 8, "note body");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_lost_body) == 16, "lost body");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_stats_body) == 56, "stats body");
GDAK_TF_STATIC_ASSERT(sizeof(struct gdak_trace_batch_body) == 8, "batch body");

/* Name of a record type ("WQE"); "REC_<n>" style for unknown ones. */
const char *gdak_trace_rec_name(unsigned type);
/* Name of a doorbell handler ("DB", "BF", "CPU_PROXY"). */
const char *gdak_trace_handler_name(unsigned handler);

/* ---- reader ------------------------------------------------------------- */

/*
 * The reader never trusts the file: every length is checked against the
 * block and the block against the bytes available.  It works on a byte
 * buffer that the caller fills (a whole file, or a growing window for
 * --follow), one block per call.
 */
enum gdak_trace_item_kind {
	GDAK_TITEM_RECORD = 1,	/* a gdak custom block */
	GDAK_TITEM_PACKET = 2,	/* an EPB on an Ethernet interface */
	GDAK_TITEM_OTHER = 3,	/* SHB, IDB, ISB, foreign blocks: skipped */
};

struct gdak_trace_str {
	const char *s;		/* not NUL-terminated; points into the buffer */
	uint32_t len;
};

struct gdak_trace_item {
	enum gdak_trace_item_kind kind;
	uint64_t offset;	/* file offset of the block */
	uint32_t block_type;
	uint32_t block_len;

	/* GDAK_TITEM_RECORD */
	struct gdak_trace_rec_hdr hdr;	/* host order */
	const uint8_t *body;		/* hdr.body_len bytes */
	union {
		struct {
			uint16_t dbrec_pi;
			uint8_t handler;
			const uint8_t *reg;
			uint32_t reg_len;
		} db;
		struct {		/* WQE and RECV_WQE */
			uint16_t wqe_index;
			uint16_t flags;
			const uint8_t *bytes;
			uint32_t len;
		} wqe;
		struct {
			uint32_t cqn;
			uint32_t cq_index;
			const uint8_t *cqe;	/* 64 bytes */
		} cqe;
		struct {		/* VIOLATION and FAULT */
			uint16_t wqe_index;
			uint8_t syndrome;
			struct gdak_trace_str name;
			struct gdak_trace_str text;
		} viol;
		struct {
			uint32_t peer_qpn;
			struct gdak_trace_str transport;
			struct gdak_trace_str text;
		} qp;
		struct {
			struct gdak_trace_str text;
		} note;
		struct gdak_trace_lost_body lost;
		struct gdak_trace_stats_body stats;
	} u;

	/* GDAK_TITEM_PACKET */
	struct {
		uint32_t if_id;
		uint64_t ts_ns;
		uint32_t thread_id;	/* GDAK_TRACE_THREAD_WRITER when absent */
		int dir;		/* 0 sent, 1 received, -1 unknown */
		const uint8_t *frame;	/* Ethernet frame, caplen bytes */
		uint32_t caplen;
		uint32_t origlen;
	} pkt;

	/* A record unpacked from a BATCH block (block_type/offset/block_len are
	 * the batch's): its position there, 0-based, and the batch's count;
	 * both 0 for a standalone record.  Its body and raw bytes then live in
	 * the reader, valid until the next gdak_trace_reader_next(). */
	uint32_t batch_index;
	uint32_t batch_count;
};

struct gdak_trace_reader;

int gdak_trace_reader_new(struct gdak_trace_reader **r);
void gdak_trace_reader_free(struct gdak_trace_reader *r);

/*
 * Parse one block at buf[0..len), which lies at file offset file_off.
 * Returns 1 with *item filled and *consumed set (pointers in *item point
 * into buf); 0 when buf holds no complete block (more data needed, or the
 * end of the file: then the file is truncated if len > 0); -EINVAL for a
 * corrupt block whose framing cannot be trusted (stop reading); -EBADMSG for
 * a well-framed block with a bad body (*consumed is set: the caller may go
 * on).  After an error, gdak_trace_reader_error() says what and where.
 *
 * A BATCH block yields one item per record packed in it: *consumed is 0
 * for all but the last (call again with the same buf and file_off), and
 * block_len for the last.  A caller that moves on earlier (another
 * file_off) abandons the rest of that batch.
 */
int gdak_trace_reader_next(struct gdak_trace_reader *r, const void *buf, size_t len,
			   uint64_t file_off, struct gdak_trace_item *item, size_t *consumed);
/* The last error: a message naming the byte offset and the problem. */
const char *gdak_trace_reader_error(const struct gdak_trace_reader *r);

#ifdef __cplusplus
}
#endif
#endif /* GDAK_TRACE_FORMAT_H */
