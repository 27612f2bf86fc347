/* SPDX-License-Identifier: MIT */
/*
 * trace_summary.c - gdak-trace --summary: per QP, counts by opcode, errors,
 * bytes, and the first error with the WQE it names.
 *
 * The WQE an error CQE or a violation names (by WQE index) was usually
 * traced long before, so the summary keeps a copy of the latest WQE record
 * per (QP, index): bounded by the rings' sizes, not by the trace's length.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/mlx5.h>
#include "trace_tool.h"

#define NBUCKET 4096

struct wqe_copy {
	struct wqe_copy *next;
	uint32_t qpn;
	uint16_t idx;
	struct gdak_trace_item it;	/* pointers into data */
	uint32_t len;
	uint8_t data[];
};

struct qp_sum {
	uint32_t qpn;
	uint64_t wqes, by_op[256];
	uint64_t recv_wqes, cqes, cqe_errors, doorbells, bytes;
	uint64_t pkts_tx, pkts_rx, naks, violations, faults;
	char *first_error;	/* a printed line, newline stripped */
	char *first_error_wqe;
	char *first_pkt_error;	/* shown only when no record names a WQE */
};

struct trace_summary {
	struct qp_sum *qps;
	size_t n_qp, cap_qp;
	struct wqe_copy *buckets[NBUCKET];
	uint64_t records, packets, lost, errors;
	int json;
};

struct trace_summary *trace_summary_new(int json)
{
	struct trace_summary *s = calloc(1, sizeof(*s));

	if (s)
		s->json = json;
	return s;
}

static struct qp_sum *qp_get(struct trace_summary *s, uint32_t qpn)
{
	for (size_t i = 0; i < s->n_qp; i++)
		if (s->qps[i].qpn == qpn)
			return &s->qps[i];
	if (s->n_qp == s->cap_qp) {
		size_t nc = s->cap_qp ? 2 * s->cap_qp : 16;
		struct qp_sum *n = realloc(s->qps, nc * sizeof(*n));
		if (!n)
			return NULL;
		s->qps = n;
		s->cap_qp = nc;
	}
	memset(&s->qps[s->n_qp], 0, sizeof(s->qps[0]));
	s->qps[s->n_qp].qpn = qpn;
	return &s->qps[s->n_qp++];
}

static unsigned bucket(uint32_t qpn, uint16_t idx) { return (qpn * 2654435761u ^ idx) % NBUCKET; }

static void wqe_keep(struct trace_summary *s, const struct gdak_trace_item *it)
{
	unsigned b = bucket(it->hdr.qpn, it->u.wqe.wqe_index);
	struct wqe_copy **pp, *c;

	for (pp = &s->buckets[b]; *pp; pp = &(*pp)->next) {
		if ((*pp)->qpn == it->hdr.qpn && (*pp)->idx == it->u.wqe.wqe_index) {
			c = *pp;
			*pp = c->next;
			free(c);
			break;
		}
	}
	c = malloc(sizeof(*c) + it->u.wqe.len);
	if (!c)
		return;
	c->qpn = it->hdr.qpn;
	c->idx = it->u.wqe.wqe_index;
	c->it = *it;
	c->len = it->u.wqe.len;
	memcpy(c->data, it->u.wqe.bytes, c->len);
	c->it.u.wqe.bytes = c->data;
	c->it.body = NULL;
	c->next = s->buckets[b];
	s->buckets[b] = c;
}

static const struct gdak_trace_item *wqe_find(struct trace_summary *s, uint32_t qpn, uint16_t idx)
{
	for (struct wqe_copy *c = s->buckets[bucket(qpn, idx)]; c; c = c->next)
		if (c->qpn == qpn && c->idx == idx)
			return &c->it;
	return NULL;
}

static char *line_of(const struct trace_summary *s, const struct gdak_trace_item *it)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	struct trace_out o = {.json = s->json};

	if (!f)
		return NULL;
	o.f = f;
	trace_print_item(&o, it);
	fclose(f);
	if (buf && n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return buf;
}

static void note_error(struct trace_summary *s, struct qp_sum *q, const struct gdak_trace_item *it,
		       int has_idx, uint16_t idx)
{
	const struct gdak_trace_item *w;

	s->errors++;
	if (q->first_error)
		return;
	q->first_error = line_of(s, it);
	w = has_idx ? wqe_find(s, q->qpn, idx) : NULL;
	if (w)
		q->first_error_wqe = line_of(s, w);
}

void trace_summary_add(struct trace_summary *s, const struct gdak_trace_item *it)
{
	uint32_t qpn = trace_item_qpn(it);
	struct qp_sum *q;

	if (it->kind == GDAK_TITEM_OTHER)
		return;
	if (it->kind == GDAK_TITEM_PACKET)
		s->packets++;
	else
		s->records++;
	if (it->kind == GDAK_TITEM_RECORD && it->hdr.type == GDAK_TREC_LOST) {
		s->lost += it->u.lost.records;
		s->errors++;
	}
	if (qpn == GDAK_TRACE_QPN_NONE || !(q = qp_get(s, qpn)))
		return;
	if (it->kind == GDAK_TITEM_PACKET) {
		if (it->pkt.dir == 1)
			q->pkts_rx++;
		else
			q->pkts_tx++;
		if (trace_item_is_error(it)) {
			q->naks++;
			s->errors++;
			if (!q->first_pkt_error)
				q->first_pkt_error = line_of(s, it);
		}
		return;
	}
	trace_learn_item(it);
	switch (it->hdr.type) {
	case GDAK_TREC_WQE:
		q->wqes++;
		if (it->u.wqe.len >= 16)
			q->by_op[it->u.wqe.bytes[3]]++;
		q->bytes += trace_wqe_data_len(it);
		wqe_keep(s, it);
		break;
	case GDAK_TREC_RECV_WQE:
		q->recv_wqes++;
		break;
	case GDAK_TREC_DOORBELL:
		q->doorbells++;
		break;
	case GDAK_TREC_CQE:
		q->cqes++;
		if (trace_item_is_error(it)) {
			struct gdak_mlx5_cqe_fields f;
			struct mlx5_cqe64 cqe;	/* aligned copy */
			memcpy(&cqe, it->u.cqe.cqe, sizeof(cqe));
			gdak_mlx5_cqe_decode(&cqe, &f);
			q->cqe_errors++;
			note_error(s, q, it, 1, f.wqe_counter);
		}
		break;
	case GDAK_TREC_VIOLATION:
		q->violations++;
		note_error(s, q, it, 1, it->u.viol.wqe_index);
		break;
	case GDAK_TREC_FAULT:
		q->faults++;
		note_error(s, q, it, 1, it->u.viol.wqe_index);
		break;
	default:
		break;
	}
}

static int by_qpn(const void *a, const void *b)
{
	uint32_t x = ((const struct qp_sum *)a)->qpn, y = ((const struct qp_sum *)b)->qpn;
	return x < y ? -1 : x > y;
}

/* The counts by opcode, as " (SEND 2, RDMA_WRITE 5)" in text (nothing when there is none) or as
 * the members of the JSON object "by_opcode" opened by the caller. */
static void print_by_op(FILE *f, const struct qp_sum *q, int json)
{
	const char *sep = json ? "" : " (";
	int any = 0;

	for (int op = 0; op < 256; op++) {
		if (!q->by_op[op])
			continue;
		fprintf(f, json ? "%s\"%s\":%" PRIu64 : "%s%s %" PRIu64, sep,
			gdak_mlx5_opcode_name((uint8_t)op), q->by_op[op]);
		sep = json ? "," : ", ";
		any = 1;
	}
	if (any && !json)
		fputc(')', f);
}

static void print_text(struct trace_summary *s, FILE *f)
{
	for (size_t i = 0; i < s->n_qp; i++) {
		struct qp_sum *q = &s->qps[i];

		fprintf(f, "qp 0x%06x: wqes %" PRIu64, q->qpn, q->wqes);
		print_by_op(f, q, 0);
		fprintf(f, ", bytes %" PRIu64 ", recv_wqes %" PRIu64 ", doorbells %" PRIu64
			", cqes %" PRIu64 ", cqe_errors %" PRIu64 ", violations %" PRIu64
			", faults %" PRIu64 ", packets to it tx %" PRIu64 " rx %" PRIu64 ", pkt_errors %" PRIu64
			"\n", q->bytes, q->recv_wqes, q->doorbells, q->cqes,
			q->cqe_errors, q->violations, q->faults, q->pkts_tx, q->pkts_rx, q->naks);
		if (q->first_error)
			fprintf(f, "  first error: %s\n", q->first_error);
		if (q->first_error_wqe)
			fprintf(f, "  its WQE:     %s\n", q->first_error_wqe);
		else if (q->first_error)
			fprintf(f, "  its WQE:     not in the trace\n");
	}
	fprintf(f, "total: qps %zu, records %" PRIu64 ", packets %" PRIu64 ", errors %" PRIu64
		", lost %" PRIu64 "\n", s->n_qp, s->records, s->packets, s->errors, s->lost);
}

static void print_json(struct trace_summary *s, FILE *f)
{
	for (size_t i = 0; i < s->n_qp; i++) {
		struct qp_sum *q = &s->qps[i];

		fprintf(f, "{\"qpn\":\"0x%06x\",\"wqes\":%" PRIu64 ",\"by_opcode\":{", q->qpn, q->wqes);
		print_by_op(f, q, 1);
		fprintf(f, "},\"bytes\":%" PRIu64 ",\"recv_wqes\":%" PRIu64 ",\"doorbells\":%" PRIu64
			",\"cqes\":%" PRIu64 ",\"cqe_errors\":%" PRIu64 ",\"violations\":%" PRIu64
			",\"faults\":%" PRIu64 ",\"pkts_to_qp_tx\":%" PRIu64 ",\"pkts_to_qp_rx\":%" PRIu64
			",\"pkt_errors\":%" PRIu64, q->bytes, q->recv_wqes, q->doorbells, q->cqes,
			q->cqe_errors, q->violations, q->faults, q->pkts_tx, q->pkts_rx, q->naks);
		if (q->first_error)
			fprintf(f, ",\"first_error\":%s", q->first_error);
		if (q->first_error_wqe)
			fprintf(f, ",\"first_error_wqe\":%s", q->first_error_wqe);
		fprintf(f, "}\n");
	}
	fprintf(f, "{\"total\":{\"qps\":%zu,\"records\":%" PRIu64 ",\"packets\":%" PRIu64
		",\"errors\":%" PRIu64 ",\"lost\":%" PRIu64 "}}\n", s->n_qp, s->records, s->packets,
		s->errors, s->lost);
}

void trace_summary_print(struct trace_summary *s, const struct trace_out *o)
{
	if (s->n_qp)
		qsort(s->qps, s->n_qp, sizeof(s->qps[0]), by_qpn);
	/* a packet error stands in as the first error only where no record names a WQE */
	for (size_t i = 0; i < s->n_qp; i++) {
		struct qp_sum *q = &s->qps[i];

		if (!q->first_error && q->first_pkt_error) {
			q->first_error = q->first_pkt_error;
			q->first_pkt_error = NULL;
		}
	}
	if (o->json)
		print_json(s, o->f);
	else
		print_text(s, o->f);
}

void trace_summary_free(struct trace_summary *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_qp; i++) {
		free(s->qps[i].first_error);
		free(s->qps[i].first_error_wqe);
		free(s->qps[i].first_pkt_error);
	}
	free(s->qps);
	for (unsigned b = 0; b < NBUCKET; b++) {
		struct wqe_copy *c = s->buckets[b], *n;
		for (; c; c = n) {
			n = c->next;
			free(c);
		}
	}
	free(s);
}
