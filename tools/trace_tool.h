/* SPDX-License-Identifier: MIT */
/*
 * trace_tool.h - gdak-trace's decoder, filters and summary (tools/trace_*.c),
 * also linked by the trace tests.
 */
#ifndef GDAK_TRACE_TOOL_H
#define GDAK_TRACE_TOOL_H

#include <stdint.h>
#include <stdio.h>

#include <gdak/roce.h>
#include <gdak/trace_format.h>

/* ---- trace_roce.c: RoCEv2 packets (the wire facts: <gdak/roce.h>) ------ */

/* A packet's headers, decoded (IBA 9.2 - 9.5; RoCEv2: IBA annex A17). */
struct trace_roce_pkt {
	uint32_t src_ip, dst_ip;	/* network order */
	uint16_t src_port, dst_port;
	uint8_t opcode;			/* BTH opcode */
	uint8_t se, mig, pad, tver;
	uint16_t pkey;
	uint8_t fecn, becn;
	uint32_t dqpn;
	uint8_t ackreq;
	uint32_t psn;
	unsigned has;			/* TRACE_ROCE_H_* */
	uint64_t va;			/* RETH / AtomicETH */
	uint32_t rkey;
	uint32_t dmalen;
	uint64_t swap_add, compare;	  /* AtomicETH / ExtAtomicETH */
	uint8_t xsize_log;		  /* ExtAtomicETH: log2 of the operand bytes */
	uint64_t swap_mask, compare_mask; /* ExtAtomicETH */
	uint64_t dc_key;		  /* DCETH (gdak's DC, docs/UDP.md) */
	uint8_t dc_stream, dc_mtu;
	uint32_t dc_dci, dc_conn, dc_psn0;
	uint8_t aeth_syndrome;
	uint32_t msn;
	uint64_t orig;			/* AtomicAckETH */
	uint32_t imm;			/* ImmDt, as on the wire (big-endian) */
	uint32_t ieth;
	uint32_t payload;		/* bytes of payload (pad and ICRC excluded) */
	uint32_t icrc;			/* as found */
	int icrc_ok;			/* 1 ok, 0 bad, -1 not checked (frame truncated) */
};
enum {
	TRACE_ROCE_H_RETH = 1u << 0,
	TRACE_ROCE_H_ATOMICETH = 1u << 1,
	TRACE_ROCE_H_AETH = 1u << 2,
	TRACE_ROCE_H_ATOMICACKETH = 1u << 3,
	TRACE_ROCE_H_IMMDT = 1u << 4,
	TRACE_ROCE_H_IETH = 1u << 5,
	TRACE_ROCE_H_XATOMICETH = 1u << 6, /* gdak's extended atomics (docs/UDP.md) */
	TRACE_ROCE_H_DCETH = 1u << 7,	   /* gdak's DC requests (docs/UDP.md "DC") */
};

/* Decode an Ethernet/IPv4/UDP/RoCEv2 frame: 0, or -1 with *why set. */
int trace_roce_decode(const uint8_t *frame, uint32_t caplen, uint32_t origlen, struct trace_roce_pkt *p,
		const char **why);
/* "RC_RDMA_WRITE_ONLY" etc. (the wire table's names); never NULL. */
const char *trace_roce_opcode_name(uint8_t opcode);
/* AETH syndrome as text: "ACK", "RNR_NAK", "NAK_REMOTE_ACCESS", ... */
const char *trace_roce_aeth_name(uint8_t syndrome);
/* 1 when an AETH reports a NAK (RNR or error). */
int trace_roce_aeth_is_nak(uint8_t syndrome);

/* ---- trace_decode.c: one line per item -------------------------------- */

struct trace_out {
	FILE *f;
	int json;
	/* --relative: timestamps as offsets from t0 (the file's first item;
	 * set by the caller before it prints one) */
	int relative;
	int have_t0;
	uint64_t t0;
};
/* Remember what later records need to be decoded (the DCIs: their WQEs
 * carry an address vector); trace_print_item calls it itself. */
void trace_learn_item(const struct gdak_trace_item *it);
/* Print one decoded line (text or a JSON object), newline included. */
void trace_print_item(const struct trace_out *o, const struct gdak_trace_item *it);
/* 1 when the item reports an error: error CQE, violation, fault, lost
 * records, NAK packet. */
int trace_item_is_error(const struct gdak_trace_item *it);
/* The QPN an item is about (records: the header's; packets: the BTH
 * destination QP); GDAK_TRACE_QPN_NONE when none. */
uint32_t trace_item_qpn(const struct gdak_trace_item *it);
/* Bytes a WQE record's WQE moves (SGE lengths + inline bytes). */
uint32_t trace_wqe_data_len(const struct gdak_trace_item *it);

/* ---- trace_filter.c --------------------------------------------------- */

struct trace_filter {
	int has_qp;
	uint32_t qp;
	int errors_only;
	/* --opcode: one of these (-1 unused) */
	int wqe_opcode;		/* mlx5 send opcode of WQE/DOORBELL records */
	int cqe_opcode;		/* CQE opcode */
	int rec_type;		/* record type name */
	int bth_opcode;		/* packet opcode */
};
void trace_filter_init(struct trace_filter *f);
/* Parse --opcode NAME: 0, or -1 when NAME is none of the known names. */
int trace_filter_set_opcode(struct trace_filter *f, const char *name);
int trace_filter_match(const struct trace_filter *f, const struct gdak_trace_item *it);

/* ---- trace_summary.c -------------------------------------------------- */

struct trace_summary;
/* json: the lines it keeps (first error, its WQE) are JSON objects */
struct trace_summary *trace_summary_new(int json);
void trace_summary_add(struct trace_summary *s, const struct gdak_trace_item *it);
void trace_summary_print(struct trace_summary *s, const struct trace_out *o);
void trace_summary_free(struct trace_summary *s);

#endif /* GDAK_TRACE_TOOL_H */
