/* SPDX-License-Identifier: MIT */
/* trace_filter.c - gdak-trace's --qp, --opcode and --errors filters. */
#include <string.h>
#include <strings.h>

#include <gdak/mlx5.h>
#include "trace_tool.h"

void trace_filter_init(struct trace_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->wqe_opcode = f->cqe_opcode = f->rec_type = f->bth_opcode = -1;
}

/* --opcode takes a WQE opcode (mlx5 table), a CQE opcode, a record type or
 * a BTH opcode name, tried in that order. */
int trace_filter_set_opcode(struct trace_filter *f, const char *name)
{
	int op = gdak_mlx5_opcode_from_name(name);

	if (op >= 0) {
		f->wqe_opcode = op;
		return 0;
	}
	for (int i = 0; i < 16; i++) {
		if (!strcasecmp(name, gdak_mlx5_cqe_opcode_name((uint8_t)i)) &&
		    strncmp(gdak_mlx5_cqe_opcode_name((uint8_t)i), "CQE_0x", 6)) {
			f->cqe_opcode = i;
			return 0;
		}
	}
	for (unsigned t = 1; t <= GDAK_TREC_MAX; t++) {
		if (!strcasecmp(name, gdak_trace_rec_name(t))) {
			f->rec_type = (int)t;
			return 0;
		}
	}
	if (!strcasecmp(name, "PACKET")) {
		f->bth_opcode = 0x100;	/* any packet */
		return 0;
	}
	for (int b = 0; b < 256; b++) {
		const char *n = trace_roce_opcode_name((uint8_t)b);
		if (!strcasecmp(name, n) || (!strncmp(n, "RC_", 3) && !strcasecmp(name, n + 3))) {
			f->bth_opcode = b;
			return 0;
		}
	}
	return -1;
}

static int opcode_match(const struct trace_filter *f, const struct gdak_trace_item *it)
{
	if (f->wqe_opcode < 0 && f->cqe_opcode < 0 && f->rec_type < 0 && f->bth_opcode < 0)
		return 1;
	if (it->kind == GDAK_TITEM_PACKET) {
		struct trace_roce_pkt p;
		const char *why;
		if (f->bth_opcode == 0x100)
			return 1;
		return f->bth_opcode >= 0 &&
		       !trace_roce_decode(it->pkt.frame, it->pkt.caplen, it->pkt.origlen, &p, &why) &&
		       p.opcode == f->bth_opcode;
	}
	if (it->kind != GDAK_TITEM_RECORD)
		return 0;
	if (f->rec_type >= 0)
		return it->hdr.type == f->rec_type;
	if (f->wqe_opcode >= 0 && it->hdr.type == GDAK_TREC_WQE && it->u.wqe.len >= 16)
		return (it->u.wqe.bytes[3]) == f->wqe_opcode; /* opmod_idx_opcode, low byte */
	if (f->wqe_opcode >= 0 && it->hdr.type == GDAK_TREC_DOORBELL && it->u.db.reg_len >= 8)
		return it->u.db.reg[3] == f->wqe_opcode;
	if (f->cqe_opcode >= 0 && it->hdr.type == GDAK_TREC_CQE)
		return (it->u.cqe.cqe[63] >> 4) == f->cqe_opcode;
	return 0;
}

int trace_filter_match(const struct trace_filter *f, const struct gdak_trace_item *it)
{
	if (it->kind == GDAK_TITEM_OTHER)
		return 0;
	if (f->has_qp && trace_item_qpn(it) != f->qp)
		return 0;
	if (f->errors_only && !trace_item_is_error(it))
		return 0;
	return opcode_match(f, it);
}
