/* SPDX-License-Identifier: MIT */
/*
 * nm_fault.c - WQE-level fault injection (GDAK_FAULTS), minimal version.
 *
 * Spec: rules separated by ';', each "kind:key=val,key=val":
 *   err:qp=N,wqe=K,syndrome=NAME    WQE index K of QP N completes with the
 *                                   syndrome (name as in gdak_mlx5_syndrome_from_name,
 *                                   e.g. REMOTE_ACCESS or 0x13); fires once
 *   delay:qp=N,wqe=K,passes=P       its CQE is held back P NIC passes; fires once
 *   stall:qp=N,ms=M                 doorbell processing of QP N stops for M ms
 *                                   from the first time the NIC polls the QP
 *                                   after the rule is set (the device sees no
 *                                   progress: its bounded waits must report
 *                                   it); fires once
 * qp=* (or omitted) matches every QP.  Numbers in C syntax (0x.. allowed).
 * Packet-level faults (pkt_drop, ..., roce/roce_fault.c) belong to the udp
 * transport, but this is the one parser of the whole spec: it checks
 * those entries too (with the engine's parser), so a malformed spec fails
 * gdak_open the same way on every transport, with a message naming the
 * bad entry (on transports without packets, pkt_ entries do nothing).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <gdak/env.h>

#include "nm_loc.h"
#ifdef NM_HAVE_TR_UDP
#include "roce.h"
#endif

#define NM_MAX_FAULTS 16

enum nm_fault_kind { NM_FAULT_ERR, NM_FAULT_DELAY, NM_FAULT_STALL };

struct nm_fault {
	enum nm_fault_kind kind;
	int64_t qpn;		/* -1: any */
	uint32_t wqe;
	uint8_t syndrome;
	uint32_t passes;
	_Atomic int fired;
	_Atomic uint32_t left;	/* delay: passes still to wait (rules with qp=*
				 * are matched by every NIC thread) */
	uint64_t ms;		/* stall: how long */
	_Atomic uint64_t since;	/* stall: when it began (ns), 0 = not yet */
};

/* Two rule tables: a new spec is built in the one no NIC thread reads, then
 * published with one pointer store, so every WQE sees either the old rules
 * or the new ones - never none while they are swapped.  The table replaced
 * becomes writable again after a grace period (nm_engine_sync). */
struct nm_fault_tab {
	int n;
	struct nm_fault f[NM_MAX_FAULTS];
};

_Atomic int nm_faults_on;
static struct nm_fault_tab fault_tabs[2];
static _Atomic(struct nm_fault_tab *) fault_cur = &fault_tabs[0];
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

static int parse_rule(const char *r, size_t n, struct nm_fault *f)
{
	char buf[160], *save = NULL, *kv;
	const char *colon;
	int have_wqe = 0;

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, r, n);
	buf[n] = 0;
	memset(f, 0, sizeof(*f));
	f->qpn = -1;
	colon = strchr(buf, ':');
	if (!colon)
		return -EINVAL;
	if (!strncmp(buf, "err", (size_t)(colon - buf)) && colon - buf == 3)
		f->kind = NM_FAULT_ERR;
	else if (!strncmp(buf, "delay", (size_t)(colon - buf)) && colon - buf == 5)
		f->kind = NM_FAULT_DELAY;
	else if (!strncmp(buf, "stall", (size_t)(colon - buf)) && colon - buf == 5)
		f->kind = NM_FAULT_STALL;
	else
		return -EINVAL;
	for (kv = strtok_r(buf + (colon - buf) + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *end;
		unsigned long long v;

		if (!eq)
			return -EINVAL;
		*eq++ = 0;
		if (!strcmp(kv, "qp") && !strcmp(eq, "*")) {
			f->qpn = -1;
			continue;
		}
		if (!strcmp(kv, "syndrome")) {
			int s = gdak_mlx5_syndrome_from_name(eq);
			if (s < 0) {
				v = strtoull(eq, &end, 0);
				if (*end || !v || v > 0xff)
					return -EINVAL;
				s = (int)v;
			}
			f->syndrome = (uint8_t)s;
			continue;
		}
		v = strtoull(eq, &end, 0);
		if (*end || end == eq)
			return -EINVAL;
		if (!strcmp(kv, "qp"))
			f->qpn = (int64_t)(v & 0xffffff);
		else if (!strcmp(kv, "wqe"))
			f->wqe = (uint32_t)(v & 0xffff), have_wqe = 1;
		else if (!strcmp(kv, "passes"))
			f->passes = (uint32_t)v;
		else if (!strcmp(kv, "ms"))
			f->ms = v;
		else
			return -EINVAL;
	}
	if (f->kind == NM_FAULT_STALL) {
		if (have_wqe || !f->ms || f->qpn < 0)
			return -EINVAL;
	} else if (!have_wqe || (f->kind == NM_FAULT_ERR && !f->syndrome)) {
		return -EINVAL;
	}
	atomic_store_explicit(&f->left, f->passes, memory_order_relaxed);
	return 0;
}

/* A pkt_ entry: checked by the engine's parser (which logs what is wrong). */
static int check_pkt_rule(const char *r, size_t n)
{
#ifdef NM_HAVE_TR_UDP
	struct roce_fault *f = NULL;
	char buf[256];
	int ret;

	if (n >= sizeof(buf)) {
		GDAK_ERR("nic", 0, "GDAK_FAULTS: entry '%.*s...' is too long", 32, r);
		return -EINVAL;
	}
	memcpy(buf, r, n);
	buf[n] = 0;
	ret = roce_fault_parse(buf, &f);
	roce_fault_free(f);
	return ret;
#else
	GDAK_ERR("nic", 0,
		 "GDAK_FAULTS: '%.*s': packet faults need the udp transport, which is "
		 "not in this build",
		 (int)n, r);
	return -EINVAL;
#endif
}

static _Atomic int env_ret;
static char env_bad[96];

/* Check spec; with install, make it the rule table.  bad (may be NULL):
 * where to note the entry that failed. */
static int parse_spec(const char *spec, int install, char *bad, size_t badsz)
{
	struct nm_fault tmp[NM_MAX_FAULTS];
	int n = 0;

	while (spec && *spec) {
		const char *e = strchr(spec, ';');
		size_t len = e ? (size_t)(e - spec) : strlen(spec);

		while (len && *spec == ' ') {
			spec++;
			len--;
		}
		if (len >= 4 && !strncmp(spec, "pkt_", 4)) {
			int r = check_pkt_rule(spec, len);

			if (r) {
				if (bad)
					snprintf(bad, badsz, "%.*s", (int)len, spec);
				return r;
			}
			spec = e ? e + 1 : NULL;
			continue;
		}
		if (len) {
			if (n == NM_MAX_FAULTS || parse_rule(spec, len, &tmp[n])) {
				GDAK_ERR(
					"nic", 0,
					"bad fault rule '%.*s' (want err:qp=N,wqe=K,syndrome=NAME, "
					"delay:qp=N,wqe=K,passes=P, stall:qp=N,ms=M or pkt_*:...; at most %d)",
					(int)len, spec, NM_MAX_FAULTS);
				if (bad)
					snprintf(bad, badsz, "%.*s", (int)len, spec);
				return -EINVAL;
			}
			n++;
		}
		spec = e ? e + 1 : NULL;
	}
	if (!install)
		return 0;
	pthread_mutex_lock(&fault_lock);
	struct nm_fault_tab *old = atomic_load(&fault_cur);
	struct nm_fault_tab *next = old == &fault_tabs[0] ? &fault_tabs[1] : &fault_tabs[0];

	/* next was retired by the previous swap, after its grace period */
	memcpy(next->f, tmp, sizeof(tmp[0]) * (size_t)n);
	next->n = n;
	atomic_store_explicit(&fault_cur, next, memory_order_release);
	if (n)
		atomic_store(&nm_faults_on, 1);
	/* a NIC thread may still be inside a hook reading the old table */
	nm_engine_sync();
	if (!n)
		atomic_store(&nm_faults_on, 0);
	pthread_mutex_unlock(&fault_lock);
	return 0;
}

int nm_fault_parse(const char *spec)
{
	return parse_spec(spec, 1, NULL, 0);
}

static char env_seen[512];

void nm_fault_env(const char *spec)
{
	snprintf(env_seen, sizeof(env_seen), "%s", spec);
	atomic_store(&env_ret, parse_spec(spec, 1, env_bad, sizeof(env_bad)));
}

int nm_fault_env_check(void)
{
	const char *s = gdak_env_raw("GDAK_FAULTS");
	int r;

	/* the variable changed since the NIC model read it (a test's setenv
	 * before another open): the transports read it again, so check it */
	if (s && *s && strcmp(s, env_seen))
		return parse_spec(s, 0, NULL, 0);
	r = atomic_load(&env_ret);
	if (r)
		GDAK_ERR("nic", 0,
			 "GDAK_FAULTS is malformed at '%s' (see the message before): "
			 "not opening without the faults asked for",
			 env_bad);
	return r;
}

static struct nm_fault *match(struct nm_qp *qp, const struct nm_op *op, enum nm_fault_kind k)
{
	struct nm_fault_tab *t = atomic_load_explicit(&fault_cur, memory_order_acquire);

	for (int i = 0; i < t->n; i++) {
		struct nm_fault *f = &t->f[i];
		if (f->kind == k && (f->qpn < 0 || f->qpn == qp->base.qpn) && f->wqe == op->wqe_index)
			return f;
	}
	return NULL;
}

void nm_fault_wqe_slow(struct nm_qp *qp, struct nm_op *op)
{
	struct nm_fault *f = match(qp, op, NM_FAULT_ERR);
	int exp = 0;

	if (!f || !atomic_compare_exchange_strong(&f->fired, &exp, 1))
		return;
	op->status = f->syndrome;
	op->rule = "injected";
	GDAK_INFO("qp", qp->id, "fault: WQE %u completes with %s", op->wqe_index,
		  gdak_mlx5_syndrome_name(f->syndrome));
	NM_TRACE(qp, gdak_trace_fault, qp->base.qpn, op->wqe_index, "err",
		 gdak_mlx5_syndrome_name(f->syndrome));
}

int nm_fault_cqe_slow(struct nm_qp *qp, struct nm_op *op)
{
	struct nm_fault *f = match(qp, op, NM_FAULT_DELAY);
	uint32_t left;

	if (!f || atomic_load(&f->fired))
		return 0;
	left = atomic_load(&f->left);
	if (left == f->passes)
		NM_TRACE(qp, gdak_trace_fault, qp->base.qpn, op->wqe_index, "delay", "CQE held back");
	if (left) {
		/* lost race with another thread: that one counted this pass */
		atomic_compare_exchange_strong(&f->left, &left, left - 1);
		return 1;
	}
	atomic_store(&f->fired, 1);
	return 0;
}

int nm_fault_db_stall_slow(struct nm_qp *qp)
{
	struct nm_fault_tab *t = atomic_load_explicit(&fault_cur, memory_order_acquire);
	uint64_t now, since;

	for (int i = 0; i < t->n; i++) {
		struct nm_fault *f = &t->f[i];

		since = 0; /* the CAS below leaves each rule's own value here */

		if (f->kind != NM_FAULT_STALL || f->qpn != qp->base.qpn || atomic_load(&f->fired))
			continue;
		now = nm_now_ns();
		if (atomic_compare_exchange_strong(&f->since, &since, now)) {
			GDAK_INFO("qp", qp->id, "fault: doorbell processing stalled for %llu ms",
				  (unsigned long long)f->ms);
			NM_TRACE(qp, gdak_trace_fault, qp->base.qpn, (uint16_t)qp->ci, "stall",
				 "doorbell processing stalled");
			return 1;
		}
		if (now - since < f->ms * 1000000ull)
			return 1;
		atomic_store(&f->fired, 1);
		NM_TRACE(qp, gdak_trace_fault, qp->base.qpn, (uint16_t)qp->ci, "stall",
			 "doorbell processing resumed");
	}
	return 0;
}
