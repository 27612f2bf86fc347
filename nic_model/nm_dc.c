/* SPDX-License-Identifier: MIT */
/*
 * nm_dc.c - the Dynamically Connected transport: DCI requester side
 * (address vectors, streams) and DCT targets (registry, access key).
 *
 * A DCI is an ordinary send queue whose wire WQEs carry an address vector
 * (struct mlx5_wqe_av) right after the ctrl segment; a DCT is a
 * receive-only QP that any DCI presenting its access key may reach.  The
 * requester (nm_req.c) asks this file to read the AV while it decodes a
 * WQE (nm_dc_decode_av), to put the WQE on a stream before it executes it
 * (nm_dc_stream_enter), and the loop transport asks for the DCT the AV
 * names (nm_dc_target); the responder (nm_resp.c) then applies the request
 * to the DCT's context memory - its PD - exactly as for an RC peer.
 * Over udp (tr_udp.c "DC", docs/UDP.md "DC") the DCT may be in another
 * process: the DCI's RoCE engine turns to the AV's address at each stream
 * turn (nm_dc_stream_enter waits for the transport's dc_busy), and the DCT
 * side checks each request with nm_dc_dct_check - the same key and state
 * checks, so both transports give the same syndromes.
 *
 * Streams, as mlx5 runs them: a DCI holds at most one connection ("stream")
 * per stream channel (ctrl dci_stream_channel_id, modulo the streams the DCI
 * was created with; 1 by default, so one).  A WQE for the DCT its stream is
 * open to goes straight on; a WQE naming another target first waits for
 * the stream's outstanding requests to complete, then closes it (ConnectX
 * sends a DC disconnect) and opens it to the new target (DC connect).  A
 * stream stays open while idle, and closes when the DCI goes to RESET or
 * ERR.  Every open and close is a QP trace record that shows the AV.
 *
 * Errors (ConnectX's behaviour; docs/DESIGN.md "DC"):
 *   - AV names no DCT (no QP of that number, or not a DCT), or an address
 *     (LID / GID) where that DCT is not: the connect goes unanswered, the
 *     DCI's WQE completes with TRANSPORT_RETRY_EXC_ERR (vendor 0x81);
 *   - DCT not in RTR (ERR, RESET, INIT): unanswered too, the same syndrome;
 *   - wrong access key: the DCT drops the connect and counts it
 *     (dctc.dc_access_key_violation_count, the DCT_KEY_VIOLATION event):
 *     the DCI sees TRANSPORT_RETRY_EXC_ERR.
 *   - requests the DCT refuses (rkey, bounds, no receive WQE) fail as on RC:
 *     REMOTE_ACCESS_ERR and so on, from nm_resp.c.
 * Strict checks on the AV (size vs DS, reserved bits, a compact AV on the
 * udp transport) fail the WQE with LOCAL_QP_OP_ERR / are reported as
 * violations.  The rules themselves (dc_*) are nm_check.c's DC block; this
 * file says where each applies.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <gdak/trace_format.h>

#include "nm_loc.h"

struct nm_dc_stream {
	bool open;
	uint32_t dctn;
	uint16_t lid;
	uint8_t gid[16];
	uint8_t av_ds;
	uint64_t key; /* the access key it was opened with */
};

/* DCTs a DCI reached lately, by number (NIC thread; valid while gen ==
 * dct_gen): a DCI that sprays puts over many peers turns its stream at
 * every WQE and would otherwise search the registry each time */
#define NM_DC_CACHE 16
struct nm_dc_cache {
	uint32_t dctn, gen;
	struct nm_qp *dct;
};

struct nm_dc {
	uint8_t type;	   /* GDAK_QPT_DCI / GDAK_QPT_DCT */
	uint64_t key;	   /* DCT: its access key */
	uint32_t nstreams; /* DCI */
	struct nm_dc_stream st[GDAK_DCI_MAX_STREAMS];
	struct nm_dc_cache cache[NM_DC_CACHE];
	struct gdak_nic_dc_stats stats; /* one writer per field (nm_stat_add) */
};

/* ---- the DCT registry ---------------------------------------------------------- */

/* DCTs of this process.  dct_gen moves (release) whenever one goes away,
 * before the grace period that precedes its free: a stream's cached DCT
 * pointer read under an unchanged generation is still alive. */
static pthread_mutex_t dct_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nm_qp_list dcts;
static _Atomic uint32_t dct_gen = 1;

static int dct_add(struct nm_qp *qp)
{
	int r;

	pthread_mutex_lock(&dct_lock);
	r = nm_qp_list_reserve(&dcts, 16);
	if (!r)
		dcts.v[dcts.n++] = qp;
	pthread_mutex_unlock(&dct_lock);
	return r;
}

static void dct_del(struct nm_qp *qp)
{
	pthread_mutex_lock(&dct_lock);
	nm_qp_list_del(&dcts, qp);
	atomic_fetch_add_explicit(&dct_gen, 1, memory_order_release);
	pthread_mutex_unlock(&dct_lock);
}

/* NIC thread: the DCT of this number; valid until the caller's next
 * quiescent point (destroy waits a grace period after dct_del). */
static struct nm_qp *dct_find(uint32_t dctn)
{
	struct nm_qp *qp;

	pthread_mutex_lock(&dct_lock);
	qp = nm_qp_list_find(&dcts, dctn);
	pthread_mutex_unlock(&dct_lock);
	return qp;
}

/* ---- objects ----------------------------------------------------------------------- */

uint16_t nm_dc_loop_lid(const struct nm_ctx *ctx)
{
	uint16_t lid = (uint16_t)(ctx->node ^ (ctx->node >> 16) ^ (ctx->node >> 32));

	return lid ? lid : 1;
}

int nm_dc_qp_init(struct nm_qp *qp, const struct gdak_qp_attr *a)
{
	struct nm_dc *dc;

	if (a->type == GDAK_QPT_RC)
		return 0;
	if (qp->ctx->tr != &nm_tr_loop_ops && !qp->ctx->tr->dc_ready) {
		GDAK_ERR("ctx", qp->ctx->base.id,
			 "%s on transport %s: the NIC model runs DC on the in-process transport "
			 "(\"emu\") and over udp only (docs/DESIGN.md \"DC\")",
			 a->type == GDAK_QPT_DCI ? "DCI" : "DCT", qp->ctx->tr->name);
		return -ENOTSUP;
	}
	dc = calloc(1, sizeof(*dc));
	if (!dc)
		return -ENOMEM;
	dc->type = (uint8_t)a->type;
	dc->key = a->dc_key;
	dc->nstreams = a->type == GDAK_QPT_DCI ? a->dci_streams : 0;
	qp->dc = dc;
	return 0;
}

/* after reg_add: the QPN is known */
int nm_dc_qp_publish(struct nm_qp *qp)
{
	if (!qp->dc || qp->dc->type != GDAK_QPT_DCT)
		return 0;
	return dct_add(qp);
}

void nm_dc_qp_fini(struct nm_qp *qp)
{
	if (!qp->dc)
		return;
	if (qp->dc->type == GDAK_QPT_DCT)
		dct_del(qp);
}

void nm_dc_qp_free(struct nm_qp *qp)
{
	free(qp->dc);
	qp->dc = NULL;
}

void nm_dc_qp_info(struct nm_qp *qp, struct gdak_qp_info *out)
{
	out->qp_type = (uint8_t)qp->base.attr.type;
	if (!qp->dc)
		return;
	if (qp->dc->type == GDAK_QPT_DCT)
		out->dc_key = qp->dc->key;
	if (qp->ctx->tr == &nm_tr_loop_ops)
		out->lid = nm_dc_loop_lid(qp->ctx);
	else if (qp->dc->type == GDAK_QPT_DCT && out->transport == GDAK_QPI_UDP)
		/* RoCE has no LIDs: gdak's udp transport reads the AV's rlid as
		 * the DCT's UDP port (docs/UDP.md "DC"), since its DCTs may
		 * listen elsewhere than 4791 */
		out->lid = out->udp_port;
}

int gdak_nic_dc_stats(struct gdak_qp *bqp, struct gdak_nic_dc_stats *st)
{
	struct nm_qp *qp;

	if (!bqp || !st)
		return -EINVAL;
	if (bqp->ctx->ops != &gdak_nm_backend_ops)
		return -ENOTSUP;
	qp = nm_qp_of(bqp);
	memset(st, 0, sizeof(*st));
	if (!qp->dc)
		return -EINVAL;
	st->connects = __atomic_load_n(&qp->dc->stats.connects, __ATOMIC_RELAXED);
	st->disconnects = __atomic_load_n(&qp->dc->stats.disconnects, __ATOMIC_RELAXED);
	st->key_violations = __atomic_load_n(&qp->dc->stats.key_violations, __ATOMIC_RELAXED);
	st->open_streams = 0;
	for (uint32_t i = 0; i < qp->dc->nstreams; i++)
		st->open_streams += __atomic_load_n(&qp->dc->st[i].open, __ATOMIC_RELAXED);
	return 0;
}

/* ---- trace records ----------------------------------------------------------------------- */

static void gid_text(char *t, size_t n, const uint8_t *g)
{
	snprintf(t, n, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

static void stream_rec(struct nm_qp *qp, unsigned i, const struct nm_dc_stream *s, const char *what,
		       uint64_t key)
{
#ifdef NM_HAVE_TRACE
	char t[160], g[48];

	if (!atomic_load_explicit(&nm_cfg.trace, memory_order_relaxed))
		return;
	if (s->av_ds == 3) {
		gid_text(g, sizeof(g), s->gid);
		snprintf(t, sizeof(t),
			 "DC stream %u %s DCT 0x%x: full AV, key 0x%" PRIx64 ", lid 0x%x, gid %s",
			 i, what, s->dctn, key, s->lid, g);
	} else {
		snprintf(t, sizeof(t),
			 "DC stream %u %s DCT 0x%x: compact AV, key 0x%" PRIx64 ", lid 0x%x", i,
			 what, s->dctn, key, s->lid);
	}
	NM_TRACE(qp, gdak_trace_qp, qp->base.qpn, s->dctn, qp->ctx->tr->name, t);
#else
	(void)qp, (void)i, (void)s, (void)what, (void)key, (void)gid_text;
#endif
}

void nm_dc_streams_close(struct nm_qp *qp, const char *why)
{
	if (!qp->dc || qp->dc->type != GDAK_QPT_DCI)
		return;
	for (uint32_t i = 0; i < qp->dc->nstreams; i++) {
		struct nm_dc_stream *s = &qp->dc->st[i];

		if (!s->open)
			continue;
		stream_rec(qp, i, s, why, s->key);
		__atomic_store_n(&s->open, false, __ATOMIC_RELAXED);
		nm_stat_add(&qp->dc->stats.disconnects, 1);
	}
}

/* ---- requester ---------------------------------------------------------------------------- */

static const uint8_t zero_gid[16];

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int nm_dc_decode_av(struct nm_qp *qp, struct nm_op *op, const uint8_t *w, uint32_t ds)
{
	const uint8_t *av = w + 16;
	uint32_t dqp;
	int full;

	if (!qp->dc || qp->dc->type != GDAK_QPT_DCI)
		return 0;
	if (op->opcode == MLX5_OPCODE_NOP || op->opcode == GDAK_MLX5_OPCODE_WAIT ||
	    op->opcode == GDAK_MLX5_OPCODE_DUMP)
		return 0;
	/* the AV's first 16 bytes lie in the WQE's first WQEBB: readable
	 * before the DS count is checked */
	dqp = rd32(av + 8);
	full = !!(dqp & GDAK_MLX5_AV_FULL);
	op->av_ds = full ? 3 : 1;
	op->dc_dctn = dqp & 0xffffff;
	op->dc_key = (uint64_t)rd32(av) << 32 | rd32(av + 4);
	op->dc_stream = (uint8_t)(((uint32_t)w[9] << 8 | w[10]) & (qp->dc->nstreams - 1));
	if (nm_check_dc_av_size(qp, op))
		return -1;
	nm_check_dc_av_reserved(qp, op, dqp);
	return op->av_ds;
}

int nm_dc_stream_enter(struct nm_qp *qp, struct nm_op *op)
{
	struct nm_dc_stream *s;
	uint16_t lid;
	const uint8_t *gid;

	if (!op->av_ds)
		return 0;
	s = &qp->dc->st[op->dc_stream];
	lid = (uint16_t)(op->av[14] << 8 | op->av[15]);
	gid = op->av_ds == 3 ? op->av + 32 : zero_gid;
	if (s->open && s->dctn == op->dc_dctn && s->lid == lid && !memcmp(s->gid, gid, 16))
		return 0;
	if (s->open) {
		/* the old target's requests complete before the stream turns:
		 * the DCI is half duplex per stream (a READ or atomic still
		 * out waits here; the loop transport completes in post_send) */
		if (qp->reads_outstanding || (qp->ctx->tr->dc_busy && qp->ctx->tr->dc_busy(qp)))
			return 1;
		stream_rec(qp, op->dc_stream, s, "closed to", s->key);
		nm_stat_add(&qp->dc->stats.disconnects, 1);
	}
	s->dctn = op->dc_dctn;
	s->lid = lid;
	memcpy(s->gid, gid, 16);
	s->av_ds = op->av_ds;
	s->key = op->dc_key;
	__atomic_store_n(&s->open, true, __ATOMIC_RELAXED);
	nm_stat_add(&qp->dc->stats.connects, 1);
	stream_rec(qp, op->dc_stream, s, "opened to", op->dc_key);
	return 0;
}

/* Whether the DCT answers DCI dci presenting key (nm_check.c dc_dct_state,
 * dc_key_violation): on the DCI's side for a DCT of this process (op: its
 * WQE fails), on the DCT's side for a request off the wire (op NULL). */
static int dct_answers(struct nm_qp *dct, uint64_t key, uint32_t dci, struct nm_qp *qp,
		       struct nm_op *op)
{
	return !nm_check_dc_dct_state(dct, dci, qp, op) &&
	       !nm_check_dc_key_violation(dct, dct->dc->key, key, &dct->dc->stats.key_violations,
					  dci, op);
}

int nm_dc_dct_check(struct nm_qp *dct, uint64_t key, uint32_t dci)
{
	if (nm_check_dc_dct_state(dct, dci, NULL, NULL))
		return -EAGAIN;
	if (nm_check_dc_key_violation(dct, dct->dc->key, key, &dct->dc->stats.key_violations, dci,
				      NULL))
		return -EACCES;
	return 0;
}

/* A udp DCT's GID (its IPv4-mapped address): 0, or -1 when it has none to
 * give.  RoCE routes by GID, so both the choice of the in-place path and
 * the target check compare the AV's GID with this. */
static int dct_gid(struct nm_qp *dct, uint8_t gid[16])
{
	struct gdak_qp_info in;

	memset(&in, 0, sizeof(in));
	if (dct->ctx->tr->qp_info(dct, &in))
		return -1;
	memcpy(gid, in.gid, 16);
	return 0;
}

/*
 * A DCT of this process on the udp transport (gdak's libibverbs: every
 * device is a RoCE endpoint): the AV must be a full one naming the DCT's
 * own GID - RoCE routes by GID, ConnectX ignores the AV's LID there - and
 * the DCT must answer (RTR, key).  The request is then executed in place,
 * as the loop transport executes it (nm_dc_udp_post_send); a DCT in
 * another process is not reached this way (dct_find misses it: the
 * connect goes unanswered).
 */
static int udp_target_ok(struct nm_qp *qp, struct nm_op *op, const struct nm_dc_stream *s,
			 struct nm_qp *dct)
{
	uint8_t g[16];
	int have = !dct_gid(dct, g);

	if (nm_check_dc_av_target_gid(qp, op, s->gid, have ? g : NULL))
		return 0;
	return dct_answers(dct, op->dc_key, qp->base.qpn, qp, op);
}

/*
 * udp transport, NIC thread: 1 when the DCT a DCI's full AV names is one of
 * this process's (its number and its GID): gdak's emulated mlx5 device
 * reaches it in place, as the loop transport does (the same checks and
 * syndromes, no socket round trip); 0 sends it on the wire (docs/UDP.md
 * "DC").
 */
int nm_dc_udp_local(struct nm_qp *qp, const struct nm_op *op)
{
	struct nm_qp *dct;
	uint8_t g[16];

	(void)qp;
	if (op->av_ds != 3 || !op->av)
		return 0;
	dct = dct_find(op->dc_dctn);
	if (!dct || dct->ctx->tr == &nm_tr_loop_ops)
		return 0;
	return !dct_gid(dct, g) && !memcmp(op->av + 32, g, 16);
}

enum nm_tx_result nm_dc_udp_post_send(struct nm_qp *qp, struct nm_op *op)
{
	return nm_tr_loop_ops.post_send(qp, op);
}

struct nm_qp *nm_dc_target(struct nm_qp *qp, struct nm_op *op)
{
	struct nm_dc_stream *s;
	struct nm_dc_cache *ce;
	struct nm_qp *dct;
	uint32_t gen = atomic_load_explicit(&dct_gen, memory_order_acquire);

	if (nm_check_dc_no_av(op))
		return NULL;
	s = &qp->dc->st[op->dc_stream];
	ce = &qp->dc->cache[op->dc_dctn % NM_DC_CACHE];
	if (ce->dct && ce->gen == gen && ce->dctn == op->dc_dctn) {
		dct = ce->dct;
	} else {
		dct = dct_find(op->dc_dctn);
		if (nm_check_dc_no_dct(qp, op, dct))
			return NULL;
		ce->dct = dct;
		ce->dctn = op->dc_dctn;
		ce->gen = gen;
	}
	if (dct->ctx->tr != &nm_tr_loop_ops)
		return udp_target_ok(qp, op, s, dct) ? dct : NULL;
	if (nm_check_dc_av_target_loop(qp, op, s->lid, nm_dc_loop_lid(dct->ctx), s->gid))
		return NULL;
	return dct_answers(dct, op->dc_key, qp->base.qpn, qp, op) ? dct : NULL;
}
