/* SPDX-License-Identifier: MIT */
/*
 * roce_fault.c - packet-level fault injection for the RoCEv2 engine.
 *
 * GDAK_FAULTS holds entries "kind:key=val,key=val" separated by ';' (the
 * WQE-level kinds belong to nic_model/nm_fault.c, which ignores these).
 * Packet kinds: pkt_drop, pkt_dup, pkt_reorder, pkt_corrupt, pkt_delay.
 * Keys: p=0.05 or p=5% (probability), every=N (every Nth matching packet),
 * nth=N (only the Nth), count=N (at most N times), qp=QPN (only packets
 * this QP sends), op=any|req|resp|data|ack|read|atomic (packet class),
 * us=N / ms=N / ns=N (pkt_delay: how long), seed=N (the generator's seed,
 * so a run is reproducible).  Faults apply to packets as they are sent;
 * a corrupted packet fails the receiver's ICRC check and is dropped there
 * and counted (icrc_errors).  docs/UDP.md has examples.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdak_log.h"
#include "roce.h"

enum fault_kind { F_DROP, F_DUP, F_REORDER, F_CORRUPT, F_DELAY, F_NKINDS };
static const char *const kind_names[F_NKINDS] = {"pkt_drop", "pkt_dup", "pkt_reorder",
						 "pkt_corrupt", "pkt_delay"};

enum pkt_class { C_ANY, C_REQ, C_RESP, C_DATA, C_ACK, C_READ, C_ATOMIC, C_NCLASS };
static const char *const class_names[C_NCLASS] = {"any", "req", "resp", "data", "ack", "read",
						  "atomic"};

#define MAX_RULES 16
#define MAX_HELD 4096

struct fault_rule {
	uint8_t kind, cls;
	uint8_t has_qp;
	uint32_t qpn;
	uint32_t p32;		/* probability * 2^32 (0 = off); 1.0 saturates */
	uint64_t every, nth, count;
	uint64_t delay_ns;
	uint64_t seen, applied;
};

struct roce_fault {
	struct fault_rule r[MAX_RULES];
	unsigned n;
	uint64_t rng;
};

static uint64_t rnd(struct roce_fault *f)
{
	/* xorshift64*: cheap, and one seed gives one sequence */
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 0x2545f4914f6cdd1dull;
}

static int parse_u64(const char *v, uint64_t *out)
{
	char *end;

	if (!*v)
		return -1;
	*out = strtoull(v, &end, 0);
	return *end ? -1 : 0;
}

static int parse_prob(const char *v, uint32_t *out)
{
	char *end;
	double p = strtod(v, &end);

	if (end == v)
		return -1;
	if (*end == '%') {
		p /= 100.0;
		end++;
	}
	if (*end || p < 0 || p > 1)
		return -1;
	*out = p >= 1.0 ? UINT32_MAX : (uint32_t)(p * 4294967296.0);
	if (p > 0 && !*out)
		*out = 1;
	return 0;
}

static int parse_entry(struct roce_fault *f, char *kind, char *args, int *seed_set)
{
	struct fault_rule *r;
	int k;

	for (k = 0; k < F_NKINDS; k++)
		if (!strcmp(kind, kind_names[k]))
			break;
	if (k == F_NKINDS) {
		if (!strncmp(kind, "pkt_", 4)) {
			GDAK_ERR(NULL, 0, "GDAK_FAULTS: unknown packet fault '%s' (pkt_drop, pkt_dup, "
				 "pkt_reorder, pkt_corrupt, pkt_delay)", kind);
			return -EINVAL;
		}
		return 0; /* someone else's kind */
	}
	if (f->n == MAX_RULES) {
		GDAK_ERR(NULL, 0, "GDAK_FAULTS: more than %d packet fault entries", MAX_RULES);
		return -EINVAL;
	}
	r = &f->r[f->n];
	memset(r, 0, sizeof(*r));
	r->kind = (uint8_t)k;
	for (char *save = NULL, *kv = strtok_r(args, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		const char *key = kv, *val;
		uint64_t u = 0;
		int bad = 0;

		if (!eq) {
			GDAK_ERR(NULL, 0, "GDAK_FAULTS: %s: '%s' is not key=value", kind, kv);
			return -EINVAL;
		}
		*eq = 0;
		val = eq + 1;
		if (!strcmp(key, "p")) {
			bad = parse_prob(val, &r->p32);
		} else if (!strcmp(key, "every")) {
			bad = parse_u64(val, &r->every) || !r->every;
		} else if (!strcmp(key, "nth")) {
			bad = parse_u64(val, &r->nth) || !r->nth;
		} else if (!strcmp(key, "count")) {
			bad = parse_u64(val, &r->count);
		} else if (!strcmp(key, "qp")) {
			bad = parse_u64(val, &u) || u > ROCE_PSN_MASK;
			r->qpn = (uint32_t)u;
			r->has_qp = 1;
		} else if (!strcmp(key, "op")) {
			int c;
			for (c = 0; c < C_NCLASS; c++)
				if (!strcmp(val, class_names[c]))
					break;
			bad = c == C_NCLASS;
			r->cls = (uint8_t)c;
		} else if (!strcmp(key, "ns") || !strcmp(key, "us") || !strcmp(key, "ms")) {
			bad = parse_u64(val, &u) || k != F_DELAY;
			r->delay_ns = u * (key[0] == 'n' ? 1 : key[0] == 'u' ? 1000 : 1000000);
		} else if (!strcmp(key, "seed")) {
			bad = parse_u64(val, &u);
			f->rng = u ? u : 1;
			*seed_set = 1;
		} else {
			GDAK_ERR(NULL, 0, "GDAK_FAULTS: %s: unknown key '%s' (p, every, nth, count, qp, "
				 "op, ns/us/ms, seed)", kind, key);
			return -EINVAL;
		}
		if (bad) {
			GDAK_ERR(NULL, 0, "GDAK_FAULTS: %s: bad value '%s' for %s", kind, val, key);
			return -EINVAL;
		}
	}
	if (!r->p32 && !r->every && !r->nth) {
		GDAK_ERR(NULL, 0, "GDAK_FAULTS: %s needs p=, every= or nth=", kind);
		return -EINVAL;
	}
	if (k == F_DELAY && !r->delay_ns)
		r->delay_ns = 1000000; /* 1 ms */
	f->n++;
	return 0;
}

int roce_fault_parse(const char *spec, struct roce_fault **out)
{
	struct roce_fault *f;
	char *copy, *save = NULL;
	int seed_set = 0, ret = 0;

	*out = NULL;
	if (!spec || !*spec)
		return 0;
	f = calloc(1, sizeof(*f));
	copy = strdup(spec);
	if (!f || !copy) {
		free(f);
		free(copy);
		return -ENOMEM;
	}
	for (char *e = strtok_r(copy, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
		char *colon;

		while (*e == ' ')
			e++;
		if (!*e)
			continue;
		colon = strchr(e, ':');
		if (colon)
			*colon = 0;
		ret = parse_entry(f, e, colon ? colon + 1 : (char *)"", &seed_set);
		if (ret)
			break;
	}
	free(copy);
	if (ret || !f->n) {
		free(f);
		return ret;
	}
	if (!seed_set)
		f->rng = 0x9e3779b97f4a7c15ull;
	*out = f;
	return 0;
}

void roce_fault_free(struct roce_fault *f) { free(f); }

static int class_match(unsigned cls, uint8_t opcode)
{
	uint32_t m = roce_op(opcode)->mask;

	switch (cls) {
	case C_REQ: return !!(m & ROCE_M_REQ);
	case C_RESP: return !!(m & ROCE_M_RESP);
	case C_DATA: return !!(m & ROCE_M_PAYLOAD);
	case C_ACK:
		return (m & ROCE_M_RESP) && (m & ROCE_M_AETH) && !(m & ROCE_M_PAYLOAD);
	case C_READ: return !!(m & ROCE_M_READ);
	case C_ATOMIC: return !!(m & ROCE_M_ATOMIC);
	default: return 1;
	}
}

/* Which faults hit this packet: a bit per kind; *delay the longest delay. */
static unsigned decide(struct roce_fault *f, const struct roce_qp *qp, uint8_t opcode,
		       uint64_t *delay)
{
	unsigned hit = 0;

	for (unsigned i = 0; i < f->n; i++) {
		struct fault_rule *r = &f->r[i];
		int on;

		if ((r->has_qp && r->qpn != qp->qpn) || !class_match(r->cls, opcode))
			continue;
		r->seen++;
		on = (r->nth && r->seen == r->nth) || (r->every && r->seen % r->every == 0) ||
		     (r->p32 && (r->p32 == UINT32_MAX || (uint32_t)(rnd(f) >> 32) < r->p32));
		if (!on || (r->count && r->applied >= r->count))
			continue;
		r->applied++;
		hit |= 1u << r->kind;
		if (r->kind == F_DELAY && r->delay_ns > *delay)
			*delay = r->delay_ns;
	}
	return hit;
}

static int wire(struct roce_qp *qp, const uint8_t *pkt, uint32_t len)
{
	int rc = qp->ctx->ops->xmit(qp, pkt, len);

	if (rc != -EAGAIN) {
		ROCE_STAT(qp->stats, tx_pkts);
		ROCE_STAT_ADD(qp->stats, tx_bytes, len);
		if (qp->ctx->ops->trace_pkt)
			qp->ctx->ops->trace_pkt(qp, 0, pkt, len, NULL, 0);
	}
	return rc;
}

static void hold(struct roce_qp *qp, const uint8_t *pkt, uint32_t len, uint64_t due)
{
	struct roce_held *h;

	if (qp->nheld >= MAX_HELD || !(h = malloc(sizeof(*h) + len))) {
		(void)wire(qp, pkt, len); /* cannot hold: send it now */
		return;
	}
	h->due_ns = due;
	h->len = len;
	memcpy(h->pkt, pkt, len);
	h->next = qp->held;
	qp->held = h;
	qp->nheld++;
}

int roce_fault_release(struct roce_qp *qp, int force)
{
	struct roce_held **pp = &qp->held, *h;
	int n = 0;

	while ((h = *pp)) {
		int due = h->due_ns ? h->due_ns <= qp->now_ns : force;

		if (!due) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		qp->nheld--;
		(void)wire(qp, h->pkt, h->len); /* a full wire loses it: retransmission recovers */
		free(h);
		n++;
	}
	return n;
}

uint64_t roce_fault_deadline(const struct roce_qp *qp)
{
	uint64_t d = UINT64_MAX;

	for (const struct roce_held *h = qp->held; h; h = h->next)
		if (h->due_ns && h->due_ns < d)
			d = h->due_ns;
	return d;
}

void roce_fault_qp_fini(struct roce_qp *qp)
{
	while (qp->held) {
		struct roce_held *h = qp->held;
		qp->held = h->next;
		free(h);
	}
	qp->nheld = 0;
}

int roce_emit(struct roce_qp *qp, uint8_t *pkt, uint32_t len)
{
	struct roce_fault *f = qp->ctx->faults;
	uint64_t delay = 0;
	unsigned hit;
	int rc;

	if (__builtin_expect(!f, 1))
		return wire(qp, pkt, len);
	hit = decide(f, qp, bth_opcode(pkt), &delay);
	if (hit & (1u << F_DROP)) {
		ROCE_STAT(qp->stats, f_drop);
		return 0;
	}
	if (hit & (1u << F_CORRUPT)) {
		/* one flipped bit anywhere before the ICRC: the receiver must notice */
		uint64_t x = rnd(f);
		pkt[(x >> 8) % (len - ROCE_ICRC_LEN)] ^= (uint8_t)(1u << (x & 7));
		ROCE_STAT(qp->stats, f_corrupt);
	}
	if (hit & (1u << F_DELAY)) {
		ROCE_STAT(qp->stats, f_delay);
		hold(qp, pkt, len, qp->now_ns + delay);
		return 0;
	}
	if (hit & (1u << F_REORDER)) {
		ROCE_STAT(qp->stats, f_reorder);
		hold(qp, pkt, len, 0);
		return 0;
	}
	rc = wire(qp, pkt, len);
	if (rc == -EAGAIN)
		return rc;
	if (hit & (1u << F_DUP)) {
		ROCE_STAT(qp->stats, f_dup);
		(void)wire(qp, pkt, len);
	}
	/* a packet held for reordering goes out behind this one */
	roce_fault_release(qp, 1);
	return rc;
}
