/* SPDX-License-Identifier: MIT */
/*
 * trace_decode.c - one decoded line per trace item, as text or JSON.
 *
 * Text and JSON come from the same calls: each field goes through an
 * emitter that writes ` key=value` or `,"key":value`.  WQEs are decoded with
 * the ctrl segment's opcode and DS count and the opcode table in mlx5.h
 * (which segments follow the ctrl segment), never a table of our own.
 */
#include <inttypes.h>
#include <string.h>
#include <arpa/inet.h>

#include <gdak/mlx5.h>
#include <gdak/dev/types.h>
#include "trace_tool.h"

struct emit {
	FILE *f;
	int json;
};

static void e_key(const struct emit *e, const char *k)
{
	if (!e->f)
		return;
	if (e->json)
		fprintf(e->f, ",\"%s\":", k);
	else
		fprintf(e->f, " %s=", k);
}

static void e_u(const struct emit *e, const char *k, uint64_t v)
{
	if (!e->f)
		return;
	e_key(e, k);
	fprintf(e->f, "%" PRIu64, v);
}

/* Hex in text; in JSON a string (64-bit values do not survive doubles). */
static void e_x(const struct emit *e, const char *k, uint64_t v)
{
	if (!e->f)
		return;
	e_key(e, k);
	fprintf(e->f, e->json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, v);
}

static void e_qpn(const struct emit *e, const char *k, uint32_t v)
{
	if (!e->f)
		return;
	e_key(e, k);
	fprintf(e->f, e->json ? "\"0x%06x\"" : "0x%06x", v);
}

/* A name (no escaping needed: table names and our own words). */
static void e_s(const struct emit *e, const char *k, const char *s)
{
	if (!e->f)
		return;
	e_key(e, k);
	fprintf(e->f, e->json ? "\"%s\"" : "%s", s);
}

/* Untrusted text from the file, quoted and escaped in both forms. */
static void e_text(const struct emit *e, const char *k, const char *s, uint32_t n)
{
	if (!e->f)
		return;
	e_key(e, k);
	fputc('"', e->f);
	for (uint32_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(e->f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(e->f, e->json ? "\\u%04x" : "\\x%02x", c);
		else
			fputc(c, e->f);
	}
	fputc('"', e->f);
}

/* A positional word in text (the record kind, an opcode); a field in JSON. */
static void e_word(const struct emit *e, const char *k, const char *s)
{
	if (!e->f)
		return;
	if (e->json)
		fprintf(e->f, ",\"%s\":\"%s\"", k, s);
	else
		fprintf(e->f, " %s", s);
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) << 16 | rd16(p + 2); }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) << 32 | rd32(p + 4); }

/* ---- WQE --------------------------------------------------------------- */

static void ctrl_fields(const struct emit *e, const uint8_t *w, int full)
{
	struct gdak_mlx5_ctrl c;
	struct mlx5_wqe_ctrl_seg seg;

	memcpy(&seg, w, sizeof(seg));
	gdak_mlx5_ctrl_decode(&seg, &c);
	e_word(e, "opcode", gdak_mlx5_opcode_name(c.opcode));
	e_u(e, "ctrl_idx", c.wqe_index);
	e_qpn(e, "ctrl_qpn", c.qpn);
	e_u(e, "ds", c.ds);
	if (!full)
		return;
	if (c.opmod)
		e_u(e, "opmod", c.opmod);
	e_s(e, "ce", (c.fm_ce_se & GDAK_MLX5_CE_MASK) ? "signalled" : "on_error");
	e_s(e, "fence", gdak_mlx5_fence_name(c.fm_ce_se));
	if (c.fm_ce_se & MLX5_WQE_CTRL_SOLICITED)
		e_u(e, "solicited", 1);
	if (c.imm)
		e_x(e, "imm", gdak_be32toh(c.imm));
}

/* Data segments from seg (16-byte units) until end: SGEs and inline data. */
static void data_segs(const struct emit *e, const uint8_t *seg, const uint8_t *end,
		      uint32_t *total, int recv)
{
	unsigned n = 0;

	while (seg + 16 <= end) {
		uint32_t bc = rd32(seg);
		char k[24];

		if (!recv && (bc & MLX5_INLINE_SEG)) {
			uint32_t len = bc & ~MLX5_INLINE_SEG;
			uint32_t ds = gdak_mlx5_inline_ds(len);
			e_u(e, "inline", len);
			*total += len;
			if (ds > (uint32_t)(end - seg) / 16) {
				e_s(e, "inline_overrun", "yes");
				return;
			}
			seg += 16 * ds;
			continue;
		}
		/* a receive WQE ends at the first zero-length or invalid-lkey entry */
		if (recv && (bc == 0 || rd32(seg + 4) == MLX5_INVALID_LKEY))
			break;
		snprintf(k, sizeof(k), "sge%u", n++);
		e_key(e, k);
		if (e->f)
			fprintf(e->f, e->json ? "{\"addr\":\"0x%" PRIx64 "\",\"len\":%u,\"lkey\":\"0x%x\"}"
				      : "0x%" PRIx64 ":%u:0x%x",
			rd64(seg + 8), bc, rd32(seg + 4));
		*total += bc;
		seg += 16;
	}
}

/*
 * DCIs the trace has announced (their "DCI created" QP record): their
 * wire WQEs carry an address vector between ctrl and the rest.  A trace
 * cut after the creation record decodes those WQEs as RC ones.
 */
#define DCI_MAX 1024
static uint32_t dci_qpn[DCI_MAX];
static unsigned ndci;

void trace_learn_item(const struct gdak_trace_item *it)
{
	const struct gdak_trace_str *t;

	if (it->kind != GDAK_TITEM_RECORD || it->hdr.type != GDAK_TREC_QP)
		return;
	t = &it->u.qp.text;
	if (t->len < 12 || memcmp(t->s, "DCI created", 11))
		return;
	for (unsigned i = 0; i < ndci; i++)
		if (dci_qpn[i] == it->hdr.qpn)
			return;
	if (ndci < DCI_MAX)
		dci_qpn[ndci++] = it->hdr.qpn;
}

static int is_dci(uint32_t qpn)
{
	for (unsigned i = 0; i < ndci; i++)
		if (dci_qpn[i] == qpn)
			return 1;
	return 0;
}

/* The AV of a DCI's WQE at seg: prints it, returns its bytes (0: none). */
static uint32_t av_fields(const struct emit *e, const uint8_t *seg, const uint8_t *end,
			  uint8_t opcode)
{
	uint32_t dqp, n;

	if (opcode == MLX5_OPCODE_NOP || opcode == GDAK_MLX5_OPCODE_WAIT ||
	    opcode == GDAK_MLX5_OPCODE_DUMP || seg + 16 > end)
		return 0;
	dqp = rd32(seg + 8);
	n = dqp & GDAK_MLX5_AV_FULL ? GDAK_MLX5_AV_FULL_BYTES : GDAK_MLX5_AV_COMPACT_BYTES;
	e_s(e, "av", n == GDAK_MLX5_AV_FULL_BYTES ? "full" : "compact");
	e_x(e, "dct", dqp & 0xffffff);
	e_x(e, "dc_key", rd64(seg));
	e_x(e, "lid", rd16(seg + 14));
	if (n == GDAK_MLX5_AV_FULL_BYTES && seg + n <= end) {
		char g[40];
		const uint8_t *p = seg + 32;

		snprintf(g, sizeof(g),
			 "%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x", p[0],
			 p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12],
			 p[13], p[14], p[15]);
		e_s(e, "gid", g);
	}
	return n;
}

/* Prints the WQE's fields; returns the bytes it moves (SGEs + inline). */
static uint32_t wqe_fields(const struct emit *e, const struct gdak_trace_item *it)
{
	const uint8_t *w = it->u.wqe.bytes, *seg, *end;
	uint32_t len = it->u.wqe.len, total = 0;
	const struct gdak_mlx5_op_info *oi;
	struct gdak_mlx5_ctrl c;
	struct mlx5_wqe_ctrl_seg cs;

	e_u(e, "idx", it->u.wqe.wqe_index);
	if (len < 16) {
		e_u(e, "bytes", len);
		e_s(e, "error", "no_ctrl_segment");
		return 0;
	}
	memcpy(&cs, w, sizeof(cs));
	gdak_mlx5_ctrl_decode(&cs, &c);
	ctrl_fields(e, w, 1);
	if (c.wqe_index != it->u.wqe.wqe_index)
		e_s(e, "idx_mismatch", "yes");
	if (it->hdr.qpn != GDAK_TRACE_QPN_NONE && c.qpn != it->hdr.qpn)
		e_s(e, "qpn_mismatch", "yes");
	if (it->u.wqe.flags & GDAK_TRACE_F_TRUNC)
		e_s(e, "truncated", "yes");
	/* segments after the ctrl segment, as many as DS says and the record holds */
	end = w + (c.ds * 16u < len ? c.ds * 16u : len & ~15u);
	if (c.ds * 16u > len)
		e_s(e, "ds_overrun", "yes");
	seg = w + 16;
	oi = gdak_mlx5_op_info(c.opcode);
	if (!oi) {
		e_s(e, "segments", "unknown_opcode");
		return 0;
	}
	if (ndci && is_dci(it->hdr.qpn))
		seg += av_fields(e, seg, end, c.opcode);
	if (oi->flags & GDAK_OPF_RADDR) {
		if (seg + 16 > end)
			goto short_wqe;
		e_x(e, "raddr", rd64(seg));
		e_x(e, "rkey", rd32(seg + 8));
		seg += 16;
	}
	if (oi->flags & GDAK_OPF_ATOMIC) {
		if (seg + 16 > end)
			goto short_wqe;
		if (c.opcode == MLX5_OPCODE_ATOMIC_CS) {
			e_x(e, "swap", rd64(seg));
			e_x(e, "compare", rd64(seg + 8));
		} else {
			e_x(e, "add", rd64(seg));
		}
		seg += 16;
	}
	if ((oi->flags & GDAK_OPF_MASKED) && (c.opmod == GDAK_MLX5_OPMOD_EXT_ATOMIC_4B ||
					      (c.opmod == GDAK_MLX5_OPMOD_EXT_ATOMIC_8B &&
					       c.opcode == MLX5_OPCODE_ATOMIC_MASKED_FA))) {
		/* the extended forms' 16-byte segments (<gdak/mlx5.h>) */
		int fa = c.opcode == MLX5_OPCODE_ATOMIC_MASKED_FA;

		if (seg + 16 > end)
			goto short_wqe;
		if (c.opmod == GDAK_MLX5_OPMOD_EXT_ATOMIC_8B) {
			e_x(e, "add", rd64(seg));
			e_x(e, "field_boundary", rd64(seg + 8));
		} else if (fa) {
			e_x(e, "add", rd32(seg));
			e_x(e, "field_boundary", rd32(seg + 4));
		} else {
			e_x(e, "swap", rd32(seg));
			e_x(e, "compare", rd32(seg + 4));
			e_x(e, "swap_mask", rd32(seg + 8));
			e_x(e, "compare_mask", rd32(seg + 12));
		}
		seg += 16;
	} else if (oi->flags & GDAK_OPF_MASKED) {
		if (seg + 32 > end)
			goto short_wqe;
		e_x(e, "swap_add", rd64(seg));
		e_x(e, "compare", rd64(seg + 8));
		e_x(e, "swap_add_mask", rd64(seg + 16));
		e_x(e, "compare_mask", rd64(seg + 24));
		seg += 32;
	}
	if (oi->flags & GDAK_OPF_DATA) {
		data_segs(e, seg, end, &total, 0);
		e_u(e, "len", total);
	}
	return total;
short_wqe:
	e_s(e, "error", "ds_too_small_for_opcode");
	return total;
}

uint32_t trace_wqe_data_len(const struct gdak_trace_item *it)
{
	struct emit quiet = {.f = NULL};

	if (it->kind != GDAK_TITEM_RECORD || it->hdr.type != GDAK_TREC_WQE)
		return 0;
	return wqe_fields(&quiet, it);
}

static void recv_fields(const struct emit *e, const struct gdak_trace_item *it)
{
	uint32_t total = 0;
	uint32_t len = it->u.wqe.len & ~15u;

	e_u(e, "idx", it->u.wqe.wqe_index);
	data_segs(e, it->u.wqe.bytes, it->u.wqe.bytes + len, &total, 1);
	e_u(e, "len", total);
}

/* ---- CQE, doorbell ------------------------------------------------------ */

static void cqe_fields(const struct emit *e, const struct gdak_trace_item *it)
{
	struct gdak_mlx5_cqe_fields f;
	struct mlx5_cqe64 cqe;	/* aligned copy: the body is only 4-byte aligned */

	memcpy(&cqe, it->u.cqe.cqe, sizeof(cqe));
	gdak_mlx5_cqe_decode(&cqe, &f);
	e_word(e, "cqe_opcode", gdak_mlx5_cqe_opcode_name(f.opcode));
	e_x(e, "cqn", it->u.cqe.cqn);
	e_u(e, "cq_idx", it->u.cqe.cq_index);
	e_u(e, "wqe_counter", f.wqe_counter);
	e_qpn(e, "cqe_qpn", f.qpn);
	if (f.opcode == MLX5_CQE_REQ_ERR || f.opcode == MLX5_CQE_RESP_ERR) {
		e_s(e, "syndrome", gdak_mlx5_syndrome_name(f.syndrome));
		e_x(e, "syndrome_code", f.syndrome);
		e_x(e, "vendor_syndrome", f.vendor_syndrome);
		e_s(e, "wqe_opcode", gdak_mlx5_opcode_name(f.wqe_opcode));
	} else {
		e_u(e, "byte_cnt", f.byte_cnt);
		if (f.opcode == MLX5_CQE_RESP_WR_IMM || f.opcode == MLX5_CQE_RESP_SEND_IMM)
			e_x(e, "imm", gdak_be32toh(f.imm));
	}
	e_u(e, "owner", f.owner);
}

static void doorbell_fields(const struct emit *e, const struct gdak_trace_item *it)
{
	e_s(e, "handler", gdak_trace_handler_name(it->u.db.handler));
	e_u(e, "pi", it->u.db.dbrec_pi);
	e_u(e, "reg_bytes", it->u.db.reg_len);
	/* CPU_PROXY: the 64-bit producer index the device published (host
	 * order), not a ctrl segment */
	if (it->u.db.handler == GDAK_DEV_DB_CPU_PROXY && it->u.db.reg_len == 8) {
		uint64_t p;
		memcpy(&p, it->u.db.reg, 8);
		e_u(e, "producer", p);
		return;
	}
	/* DB writes the first 8 bytes of a ctrl segment; BF the whole WQE.  DS 0
	 * is the producer-index form (GPUNetIO, NVSHMEM): be32(qpn << 8) with
	 * the next producer index, which is what the HCA reads */
	if (it->u.db.reg_len >= 8) {
		uint8_t w[16] = {0};
		memcpy(w, it->u.db.reg, 8);
		if ((w[7] & 0x3f) == 0) {
			e_s(e, "form", "producer_index");
			e_u(e, "producer", (uint32_t)w[1] << 8 | w[2]);
			e_qpn(e, "qpn", (uint32_t)w[4] << 16 | (uint32_t)w[5] << 8 | w[6]);
			return;
		}
		ctrl_fields(e, w, 0);
	}
}

/* ---- packets ----------------------------------------------------------- */

static void packet_fields(const struct emit *e, const struct gdak_trace_item *it)
{
	struct trace_roce_pkt p;
	const char *why = NULL;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN], k[64];

	e_word(e, "dir", it->pkt.dir == 1 ? "rx" : it->pkt.dir == 0 ? "tx" : "?");
	if (trace_roce_decode(it->pkt.frame, it->pkt.caplen, it->pkt.origlen, &p, &why)) {
		e_u(e, "frame_len", it->pkt.caplen);
		e_s(e, "undecoded", why);
		return;
	}
	inet_ntop(AF_INET, &p.src_ip, a, sizeof(a));
	inet_ntop(AF_INET, &p.dst_ip, b, sizeof(b));
	snprintf(k, sizeof(k), "%s:%u>%s:%u", a, p.src_port, b, p.dst_port);
	e_s(e, "flow", k);
	e_word(e, "bth_opcode", trace_roce_opcode_name(p.opcode));
	e_qpn(e, "dqpn", p.dqpn);
	e_u(e, "psn", p.psn);
	if (p.se)
		e_u(e, "se", 1);
	if (p.ackreq)
		e_u(e, "ackreq", 1);
	if (p.fecn || p.becn)
		e_u(e, "ecn", (unsigned)(p.fecn << 1 | p.becn));
	if (p.has & TRACE_ROCE_H_DCETH) {
		e_x(e, "dc_key", p.dc_key);
		e_u(e, "dc_stream", p.dc_stream);
		e_qpn(e, "dci", p.dc_dci);
		e_u(e, "dc_conn", p.dc_conn);
		e_u(e, "dc_mtu", p.dc_mtu >= 1 && p.dc_mtu <= 5 ? 128u << p.dc_mtu : 0u);
		e_u(e, "dc_psn0", p.dc_psn0);
	}
	if (p.has & (TRACE_ROCE_H_RETH | TRACE_ROCE_H_ATOMICETH | TRACE_ROCE_H_XATOMICETH)) {
		e_x(e, "va", p.va);
		e_x(e, "rkey", p.rkey);
	}
	if (p.has & TRACE_ROCE_H_RETH)
		e_u(e, "dmalen", p.dmalen);
	if (p.has & TRACE_ROCE_H_ATOMICETH) {
		e_x(e, "swap_add", p.swap_add);
		e_x(e, "compare", p.compare);
	}
	if (p.has & TRACE_ROCE_H_XATOMICETH) {
		e_u(e, "size", p.xsize_log == 2 ? 4u : p.xsize_log == 3 ? 8u : 0u);
		e_x(e, "swap_add", p.swap_add);
		e_x(e, "compare", p.compare);
		e_x(e, "swap_mask", p.swap_mask);
		e_x(e, "compare_mask", p.compare_mask);
	}
	if (p.has & TRACE_ROCE_H_AETH) {
		e_s(e, "aeth", trace_roce_aeth_name(p.aeth_syndrome));
		e_x(e, "aeth_syndrome", p.aeth_syndrome);
		e_u(e, "msn", p.msn);
	}
	if (p.has & TRACE_ROCE_H_ATOMICACKETH)
		e_x(e, "orig", p.orig);
	if (p.has & TRACE_ROCE_H_IMMDT)
		e_x(e, "imm", gdak_be32toh(p.imm));
	if (p.has & TRACE_ROCE_H_IETH)
		e_x(e, "inv_rkey", p.ieth);
	e_u(e, "payload", p.payload);
	e_s(e, "icrc", p.icrc_ok < 0 ? "unchecked" : p.icrc_ok ? "ok" : "BAD");
}

/* ---- records ------------------------------------------------------------ */

uint32_t trace_item_qpn(const struct gdak_trace_item *it)
{
	struct trace_roce_pkt p;
	const char *why;

	if (it->kind == GDAK_TITEM_RECORD)
		return it->hdr.qpn;
	if (it->kind == GDAK_TITEM_PACKET &&
	    !trace_roce_decode(it->pkt.frame, it->pkt.caplen, it->pkt.origlen, &p, &why))
		return p.dqpn;
	return GDAK_TRACE_QPN_NONE;
}

int trace_item_is_error(const struct gdak_trace_item *it)
{
	if (it->kind == GDAK_TITEM_PACKET) {
		struct trace_roce_pkt p;
		const char *why;
		if (trace_roce_decode(it->pkt.frame, it->pkt.caplen, it->pkt.origlen, &p, &why))
			return 1;
		return ((p.has & TRACE_ROCE_H_AETH) && trace_roce_aeth_is_nak(p.aeth_syndrome)) ||
		       p.icrc_ok == 0;
	}
	if (it->kind != GDAK_TITEM_RECORD)
		return 0;
	switch (it->hdr.type) {
	case GDAK_TREC_CQE: {
		uint8_t op = it->u.cqe.cqe[63] >> 4;
		return op == MLX5_CQE_REQ_ERR || op == MLX5_CQE_RESP_ERR;
	}
	case GDAK_TREC_VIOLATION:
	case GDAK_TREC_FAULT:
	case GDAK_TREC_LOST:
		return 1;
	case GDAK_TREC_STATS:
		return it->u.stats.lost != 0;
	default:
		return 0;
	}
}

static void record_fields(const struct emit *e, const struct gdak_trace_item *it)
{
	switch (it->hdr.type) {
	case GDAK_TREC_DOORBELL:
		doorbell_fields(e, it);
		break;
	case GDAK_TREC_WQE:
		wqe_fields(e, it);
		break;
	case GDAK_TREC_RECV_WQE:
		recv_fields(e, it);
		break;
	case GDAK_TREC_CQE:
		cqe_fields(e, it);
		break;
	case GDAK_TREC_VIOLATION:
	case GDAK_TREC_FAULT:
		e_u(e, "idx", it->u.viol.wqe_index);
		e_text(e, it->hdr.type == GDAK_TREC_FAULT ? "kind" : "rule", it->u.viol.name.s,
		       it->u.viol.name.len);
		if (it->hdr.type == GDAK_TREC_VIOLATION) {
			e_s(e, "syndrome", gdak_mlx5_syndrome_name(it->u.viol.syndrome));
			e_x(e, "syndrome_code", it->u.viol.syndrome);
		}
		e_text(e, "text", it->u.viol.text.s, it->u.viol.text.len);
		break;
	case GDAK_TREC_QP:
		e_qpn(e, "peer", it->u.qp.peer_qpn);
		e_text(e, "transport", it->u.qp.transport.s, it->u.qp.transport.len);
		e_text(e, "text", it->u.qp.text.s, it->u.qp.text.len);
		break;
	case GDAK_TREC_NOTE:
		e_text(e, "text", it->u.note.text.s, it->u.note.text.len);
		break;
	case GDAK_TREC_LOST:
		e_u(e, "lost_records", it->u.lost.records);
		e_u(e, "lost_bytes", it->u.lost.bytes);
		break;
	case GDAK_TREC_STATS:
		e_u(e, "records", it->u.stats.records);
		e_u(e, "bytes", it->u.stats.bytes);
		e_u(e, "lost", it->u.stats.lost);
		e_u(e, "flushes", it->u.stats.flushes);
		e_u(e, "packets", it->u.stats.packets);
		if (it->u.stats.waits)	/* the writer waited for the file */
			e_u(e, "waits", it->u.stats.waits);
		if (it->u.stats.dropped)
			e_u(e, "dropped", it->u.stats.dropped);
		break;
	default:
		e_u(e, "body_bytes", it->hdr.body_len);
		break;
	}
}

void trace_print_item(const struct trace_out *o, const struct gdak_trace_item *it)
{
	struct emit e = {.f = o->f, .json = o->json};
	uint64_t ts = it->kind == GDAK_TITEM_PACKET ? it->pkt.ts_ns : it->hdr.ts_ns;
	uint32_t thread = it->kind == GDAK_TITEM_PACKET ? it->pkt.thread_id : it->hdr.thread_id;
	uint32_t qpn = trace_item_qpn(it);
	const char *kind = it->kind == GDAK_TITEM_PACKET ? "PACKET" : gdak_trace_rec_name(it->hdr.type);

	if (it->kind == GDAK_TITEM_OTHER)
		return;
	trace_learn_item(it);
	if (o->json) {
		fprintf(o->f, "{\"offset\":%" PRIu64 ",\"ts_ns\":%" PRIu64, it->offset, ts);
		if (o->relative)
			fprintf(o->f, ",\"rel_ns\":%" PRId64, (int64_t)(ts - o->t0));
		if (thread == GDAK_TRACE_THREAD_WRITER)
			fprintf(o->f, ",\"thread\":\"writer\"");
		else
			fprintf(o->f, ",\"thread\":%u", thread);
		if (qpn != GDAK_TRACE_QPN_NONE)
			e_qpn(&e, "qpn", qpn);
		e_s(&e, "type", kind);
		if (it->kind == GDAK_TITEM_RECORD)
			e_u(&e, "seq", it->hdr.seq);
	} else {
		if (o->relative) {
			/* records of one pass may carry a time just before the
			 * first item's: show them as negative, not as 2^64 */
			uint64_t d = ts >= o->t0 ? ts - o->t0 : o->t0 - ts;

			fprintf(o->f, "%s%" PRIu64 ".%09" PRIu64, ts >= o->t0 ? "" : "-",
				d / 1000000000u, d % 1000000000u);
		} else {
			fprintf(o->f, "%" PRIu64 ".%09" PRIu64, ts / 1000000000u, ts % 1000000000u);
		}
		if (thread == GDAK_TRACE_THREAD_WRITER)
			fprintf(o->f, " writer");
		else
			fprintf(o->f, " t%u", thread);
		if (qpn != GDAK_TRACE_QPN_NONE)
			fprintf(o->f, " qp 0x%06x", qpn);
		else
			fprintf(o->f, " qp -");
		fprintf(o->f, " %s", kind);
	}
	if (it->kind == GDAK_TITEM_PACKET)
		packet_fields(&e, it);
	else
		record_fields(&e, it);
	fputs(o->json ? "}\n" : "\n", o->f);
}
