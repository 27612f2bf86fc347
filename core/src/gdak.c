/* SPDX-License-Identifier: MIT */
/*
 * gdak.c - the host API: argument checks, attribute defaults, the QP state
 * machine, and dispatch to the backend chosen in gdak_open().
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/env.h>
#include <gdak/dev/types.h>
#include <gdak/mlx5.h>

#include "gdak_backend.h"
#include "gdak_log.h"

#define MAX_BACKENDS 8

static const char *backend_names[MAX_BACKENDS + 1];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_init(void)
{
	for (size_t i = 0; i < MAX_BACKENDS && gdak_backend_table[i]; i++)
		backend_names[i] = gdak_backend_table[i]->name;
}

const char *const *gdak_backends(void)
{
	pthread_once(&names_once, names_init);
	return backend_names;
}

uint32_t gdak_next_obj_id(void)
{
	static _Atomic uint32_t next = 1;
	return atomic_fetch_add(&next, 1);
}

#define CHECK_ARG(cond, ...)                                  \
	do {                                                  \
		if (!(cond)) {                                \
			GDAK_ERR(NULL, 0, __VA_ARGS__);       \
			return -EINVAL;                       \
		}                                             \
	} while (0)

/* ---- context -------------------------------------------------------------- */

int gdak_open(const char *device, struct gdak_ctx **ctx)
{
	const char *dev = device;
	int ret;

	CHECK_ARG(ctx, "ctx out-pointer is NULL");
	*ctx = NULL;
	/* every set variable, whichever backend would read it: a typo in one
	 * the chosen backend ignores is still a mistake the user wants to see */
	ret = gdak_env_validate();
	if (ret) {
		GDAK_ERR(NULL, 0,
			 "cannot open %s%s%s: bad environment (see above; gdak-info "
			 "lists every variable)",
			 dev && *dev ? "'" : "", dev && *dev ? dev : "the default device",
			 dev && *dev ? "'" : "");
		return ret;
	}
	if (!dev || !*dev)
		dev = gdak_env_raw("GDAK_DEVICE");
	if (!dev || !*dev)
		dev = "emu";
	if (strlen(dev) >= sizeof((*ctx)->device)) {
		GDAK_ERR(NULL, 0, "device name '%.32s...' too long", dev);
		return -ENAMETOOLONG;
	}
	for (size_t i = 0; gdak_backend_table[i]; i++) {
		const struct gdak_backend_ops *b = gdak_backend_table[i];

		if (!b->match(dev))
			continue;
		ret = b->open(dev, ctx);
		if (ret) {
			GDAK_ERR(NULL, 0, "backend %s could not open '%s': %s", b->name, dev,
				 gdak_strerror(ret));
			*ctx = NULL;
			return ret;
		}
		(*ctx)->ops = b;
		(*ctx)->id = gdak_next_obj_id();
		strcpy((*ctx)->device, dev);
		GDAK_INFO("ctx", (*ctx)->id, "opened '%s' on backend %s", dev, b->name);
		return 0;
	}
	{
		const char *const *have = gdak_backends();
		char names[96] = "";
		int hw = 0;

		for (size_t i = 0; have[i]; i++) {
			size_t l = strlen(names);
			snprintf(names + l, sizeof(names) - l, "%s%s", l ? ", " : "", have[i]);
			hw |= !strcmp(have[i], "mlx5");
		}
		GDAK_ERR(NULL, 0,
			 "no backend serves device '%s' (this build has %s: try emu, "
			 "emu:udp, emu:verbs:DEV%s)",
			 dev, names,
			 hw ? ", mlx5_N" : "; hardware needs a build with -DGDAK_HW_MLX5=ON");
	}
	return -ENODEV;
}

static _Atomic(const struct gdak_obj_observer *) observers[GDAK_MAX_OBSERVERS];

int gdak_observer_add(const struct gdak_obj_observer *o)
{
	for (int i = 0; i < GDAK_MAX_OBSERVERS; i++) {
		const struct gdak_obj_observer *cur = NULL;

		if (atomic_compare_exchange_strong(&observers[i], &cur, o) || cur == o)
			return 0;
	}
	GDAK_ERR(NULL, 0, "more than %d object observers", GDAK_MAX_OBSERVERS);
	return -ENOSPC;
}

void gdak_close(struct gdak_ctx *ctx)
{
	if (!ctx)
		return;
	/* e.g. ring captures following its QPs make a last pass first */
	for (int i = 0; i < GDAK_MAX_OBSERVERS; i++) {
		const struct gdak_obj_observer *o = atomic_load(&observers[i]);
		if (o && o->ctx_close)
			o->ctx_close(ctx);
	}
	ctx->ops->close(ctx);
}

const char *gdak_ctx_backend(const struct gdak_ctx *ctx) { return ctx ? ctx->ops->name : NULL; }
const char *gdak_ctx_device(const struct gdak_ctx *ctx) { return ctx ? ctx->device : NULL; }

/* ---- memory --------------------------------------------------------------- */

int gdak_mem_alloc(struct gdak_ctx *ctx, size_t len, enum gdak_mem_kind kind, void **addr)
{
	/* the out-pointer is cleared whenever there is one, so a caller
	 * that ignores the error never sees a stale object */
	if (addr)
		*addr = NULL;
	CHECK_ARG(ctx && addr, "NULL argument (ctx=%p addr=%p)", (void *)ctx, (void *)addr);
	CHECK_ARG(len > 0, "zero-length allocation");
	CHECK_ARG(kind == GDAK_MEM_HOST || kind == GDAK_MEM_HOST_MAPPED || kind == GDAK_MEM_GPU,
		  "unknown memory kind %d", (int)kind);
	return ctx->ops->mem_alloc(ctx, len, kind, addr);
}

int gdak_mem_free(struct gdak_ctx *ctx, void *addr)
{
	CHECK_ARG(ctx, "ctx is NULL");
	if (!addr)
		return 0;
	return ctx->ops->mem_free(ctx, addr);
}

enum gdak_mem_kind gdak_mem_kind_of(struct gdak_ctx *ctx, const void *addr)
{
	if (!ctx || !addr)
		return GDAK_MEM_HOST;
	return ctx->ops->mem_kind_of(ctx, addr);
}

int gdak_mr_reg(struct gdak_ctx *ctx, void *addr, size_t len, unsigned access, struct gdak_mr **mr)
{
	if (mr)
		*mr = NULL;
	CHECK_ARG(ctx && mr, "NULL argument (ctx=%p mr=%p)", (void *)ctx, (void *)mr);
	CHECK_ARG(addr || !len, "NULL address with length %zu", len);
	CHECK_ARG(!(access & ~(unsigned)GDAK_ACCESS_ALL), "unknown access bits 0x%x", access);
	/* IBA 10.6.3.1: remote write/atomic need local write. */
	CHECK_ARG(!(access & (GDAK_ACCESS_REMOTE_WRITE | GDAK_ACCESS_REMOTE_ATOMIC)) ||
			  (access & GDAK_ACCESS_LOCAL_WRITE),
		  "remote write/atomic access requires LOCAL_WRITE (IBA 10.6.3.1)");
	CHECK_ARG((uintptr_t)addr + len >= (uintptr_t)addr, "address range wraps");
	return ctx->ops->mr_reg(ctx, addr, len, access, mr);
}

int gdak_mr_dereg(struct gdak_mr *mr)
{
	if (!mr)
		return -EINVAL;
	return mr->ctx->ops->mr_dereg(mr);
}

uint32_t gdak_mr_lkey(const struct gdak_mr *mr) { return mr ? mr->lkey : 0; }
uint32_t gdak_mr_rkey(const struct gdak_mr *mr) { return mr ? mr->rkey : 0; }

/* ---- queue pairs ----------------------------------------------------------- */

static const char *const qp_state_names[] = {
	[GDAK_QPS_RESET] = "RESET", [GDAK_QPS_INIT] = "INIT", [GDAK_QPS_RTR] = "RTR",
	[GDAK_QPS_RTS] = "RTS",	    [GDAK_QPS_ERR] = "ERR",
};

const char *gdak_qp_state_name(enum gdak_qp_state s)
{
	if ((unsigned)s < sizeof(qp_state_names) / sizeof(qp_state_names[0]))
		return qp_state_names[s];
	return "INVALID";
}

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

static int normalise_attr(const struct gdak_qp_attr *in, struct gdak_qp_attr *out)
{
	static const struct gdak_qp_attr defaults = {
		.sq_depth = 256, .handler = GDAK_DEV_DB_DB, .sharing = GDAK_DEV_EXCLUSIVE,
		.mtu = 1024, .nic_thread = -1, .rq_max_sge = 1,
	};

	*out = in ? *in : defaults;
	if (!out->sq_depth)
		out->sq_depth = defaults.sq_depth;
	if (out->sq_depth > 32768) {
		GDAK_ERR(NULL, 0, "sq_depth %u over 32768 WQEBBs (the 16-bit index must not alias)",
			 out->sq_depth);
		return -EINVAL;
	}
	out->sq_depth = roundup_pow2(out->sq_depth < 4 ? 4 : out->sq_depth);
	if (!out->cq_depth)
		out->cq_depth = out->sq_depth;
	if (out->cq_depth > (1u << 22)) {
		GDAK_ERR(NULL, 0, "cq_depth %u too large (max 4M)", out->cq_depth);
		return -EINVAL;
	}
	out->cq_depth = roundup_pow2(out->cq_depth < 2 ? 2 : out->cq_depth);
	if (out->rq_depth > 32768) {
		GDAK_ERR(NULL, 0, "rq_depth %u over 32768", out->rq_depth);
		return -EINVAL;
	}
	if (out->rq_depth) {
		out->rq_depth = roundup_pow2(out->rq_depth);
		if (!out->rcq_depth)
			out->rcq_depth = out->rq_depth;
		out->rcq_depth = roundup_pow2(out->rcq_depth < 2 ? 2 : out->rcq_depth);
		if (!out->rq_max_sge)
			out->rq_max_sge = 1;
		if (out->rq_max_sge > 16) {
			GDAK_ERR(NULL, 0, "rq_max_sge %u over 16", out->rq_max_sge);
			return -EINVAL;
		}
		out->rq_max_sge = roundup_pow2(out->rq_max_sge);
	} else {
		out->rcq_depth = 0;
	}
	if ((unsigned)out->handler >= GDAK_DEV_DB_HANDLER_COUNT) {
		GDAK_ERR(NULL, 0, "unknown doorbell handler %d", (int)out->handler);
		return -EINVAL;
	}
	if (out->sharing != GDAK_DEV_EXCLUSIVE && out->sharing != GDAK_DEV_SHARED) {
		GDAK_ERR(NULL, 0, "unknown sharing mode %d", (int)out->sharing);
		return -EINVAL;
	}
	if (out->flags & ~GDAK_QP_F_ALL) {
		GDAK_ERR(NULL, 0, "unknown QP flags 0x%x", out->flags & ~GDAK_QP_F_ALL);
		return -EINVAL;
	}
	if (!out->rq_depth &&
	    (out->flags & (GDAK_QP_F_RCQ_OVERRUN_IGNORE | GDAK_QP_F_RCQ_COLLAPSED))) {
		GDAK_ERR(NULL, 0, "receive CQ flags 0x%x on a QP without a receive queue",
			 out->flags & (GDAK_QP_F_RCQ_OVERRUN_IGNORE | GDAK_QP_F_RCQ_COLLAPSED));
		return -EINVAL;
	}
	if (out->type > GDAK_QPT_DCT) {
		GDAK_ERR(NULL, 0, "unknown QP type %u", out->type);
		return -EINVAL;
	}
	if (out->type == GDAK_QPT_DCI) {
		if (!out->dci_streams)
			out->dci_streams = 1;
		if (out->dci_streams > GDAK_DCI_MAX_STREAMS ||
		    (out->dci_streams & (out->dci_streams - 1))) {
			GDAK_ERR(NULL, 0, "dci_streams %u is not a power of two in 1..%u",
				 out->dci_streams, GDAK_DCI_MAX_STREAMS);
			return -EINVAL;
		}
	} else if (out->dci_streams) {
		GDAK_ERR(NULL, 0, "dci_streams %u on a QP that is not a DCI", out->dci_streams);
		return -EINVAL;
	}
	if (out->type != GDAK_QPT_DCT && out->dc_key) {
		GDAK_ERR(NULL, 0, "dc_key on a QP that is not a DCT (a DCI names the key per WQE)");
		return -EINVAL;
	}
	if (out->type == GDAK_QPT_DCI && out->rq_depth) {
		GDAK_ERR(NULL, 0, "a DCI has no receive queue (rq_depth %u)", out->rq_depth);
		return -EINVAL;
	}
	if (!out->mtu)
		out->mtu = defaults.mtu;
	if (out->mtu != 256 && out->mtu != 512 && out->mtu != 1024 && out->mtu != 2048 &&
	    out->mtu != 4096) {
		GDAK_ERR(NULL, 0, "mtu %u is not one of 256, 512, 1024, 2048, 4096", out->mtu);
		return -EINVAL;
	}
	return 0;
}

int gdak_qp_create(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr, struct gdak_qp **qp)
{
	struct gdak_qp_attr a;
	int ret;

	if (qp)
		*qp = NULL;
	CHECK_ARG(ctx && qp, "NULL argument (ctx=%p qp=%p)", (void *)ctx, (void *)qp);
	ret = normalise_attr(attr, &a);
	if (ret)
		return ret;
	/* The backend fills base.ctx, base.attr (= a) and base.state before it
	 * makes the QP visible to its NIC/proxy threads: writing them here,
	 * after publication, would race with those threads. */
	ret = ctx->ops->qp_create(ctx, &a, qp);
	if (ret)
		return ret;
	if ((*qp)->ctx != ctx || memcmp(&(*qp)->attr, &a, sizeof(a)) ||
	    atomic_load(&(*qp)->state) != GDAK_QPS_RESET) {
		GDAK_ERR("qp", (*qp)->qpn, "backend %s did not initialise the QP's base fields",
			 ctx->ops->name);
		ctx->ops->qp_destroy(*qp);
		*qp = NULL;
		return -EFAULT;
	}
	return 0;
}

int gdak_qp_destroy(struct gdak_qp *qp)
{
	if (!qp)
		return -EINVAL;
	for (int i = 0; i < GDAK_MAX_OBSERVERS; i++) {
		const struct gdak_obj_observer *o = atomic_load(&observers[i]);
		if (o && o->qp_destroy)
			o->qp_destroy(qp); /* e.g. a capture's last pass over its rings */
	}
	return qp->ctx->ops->qp_destroy(qp);
}

int gdak_qp_info(struct gdak_qp *qp, struct gdak_qp_info *out)
{
	CHECK_ARG(qp && out, "NULL argument (qp=%p out=%p)", (void *)qp, (void *)out);
	memset(out, 0, sizeof(*out));
	out->version = GDAK_QP_INFO_VERSION;
	return qp->ctx->ops->qp_info(qp, out);
}

enum gdak_qp_state gdak_qp_state(struct gdak_qp *qp)
{
	return qp ? (enum gdak_qp_state)atomic_load(&qp->state) : GDAK_QPS_ERR;
}

uint32_t gdak_qp_num(const struct gdak_qp *qp) { return qp ? qp->qpn : 0; }

/* IBA 10.3.1 (QP state diagram), reduced to the states gdak models. */
static int transition_ok(enum gdak_qp_state from, enum gdak_qp_state to)
{
	if (to == GDAK_QPS_ERR || to == GDAK_QPS_RESET)
		return 1;
	return (from == GDAK_QPS_RESET && to == GDAK_QPS_INIT) ||
	       (from == GDAK_QPS_INIT && to == GDAK_QPS_INIT) ||
	       (from == GDAK_QPS_INIT && to == GDAK_QPS_RTR) ||
	       (from == GDAK_QPS_RTR && to == GDAK_QPS_RTS) ||
	       (from == GDAK_QPS_RTS && to == GDAK_QPS_RTS);
}

int gdak_qp_modify(struct gdak_qp *qp, enum gdak_qp_state to, const struct gdak_qp_info *peer)
{
	enum gdak_qp_state from;
	int ret;

	CHECK_ARG(qp, "qp is NULL");
	from = gdak_qp_state(qp);
	if ((unsigned)to > GDAK_QPS_ERR || !transition_ok(from, to)) {
		GDAK_ERR("qp", qp->qpn, "illegal transition %s -> %s", gdak_qp_state_name(from),
			 gdak_qp_state_name(to));
		return -EINVAL;
	}
	if (qp->attr.type == GDAK_QPT_DCT && to == GDAK_QPS_RTS) {
		GDAK_ERR("qp", qp->qpn, "a DCT does not go to RTS (RTR is its working state)");
		return -EINVAL;
	}
	if (to == GDAK_QPS_RTR && qp->attr.type != GDAK_QPT_RC) {
		if (peer) {
			GDAK_ERR("qp", qp->qpn,
				 "a DCI / DCT connects to nobody: pass NULL as the peer");
			return -EINVAL;
		}
	} else if (to == GDAK_QPS_RTR) {
		if (!peer) {
			GDAK_ERR("qp", qp->qpn, "INIT -> RTR needs the peer's gdak_qp_info");
			return -EINVAL;
		}
		if (peer->version != GDAK_QP_INFO_VERSION) {
			GDAK_ERR("qp", qp->qpn, "peer info version %u, expected %u", peer->version,
				 GDAK_QP_INFO_VERSION);
			return -EPROTO;
		}
	}
	ret = qp->ctx->ops->qp_modify(qp, to, peer);
	if (ret)
		return ret;
	/* The NIC may move the QP to ERR at any time (a responder error while
	 * in RTR, say), and a backend may already have stored `to` itself:
	 * only advance from `from`/`to`, never overwrite an ERR set meanwhile. */
	if (to == GDAK_QPS_ERR || to == GDAK_QPS_RESET) {
		atomic_store(&qp->state, (int)to);
	} else {
		int cur = atomic_load(&qp->state);

		while ((cur == (int)from || cur == (int)to) &&
		       !atomic_compare_exchange_weak(&qp->state, &cur, (int)to))
			;
		if (cur != (int)from && cur != (int)to) {
			GDAK_ERR("qp", qp->qpn, "moved to %s during %s -> %s",
				 gdak_qp_state_name((enum gdak_qp_state)cur), gdak_qp_state_name(from),
				 gdak_qp_state_name(to));
			return -EIO;
		}
	}
	GDAK_DBG("qp", qp->qpn, "%s -> %s", gdak_qp_state_name(from), gdak_qp_state_name(to));
	return 0;
}

int gdak_qp_connect(struct gdak_qp *qp, const struct gdak_qp_info *peer)
{
	int ret;

	CHECK_ARG(qp && (peer || qp->attr.type != GDAK_QPT_RC), "NULL argument (qp=%p peer=%p)",
		  (void *)qp, (void *)peer);
	if (gdak_qp_state(qp) != GDAK_QPS_RESET) {
		GDAK_ERR("qp", qp->qpn, "connect needs a QP in RESET, it is in %s",
			 gdak_qp_state_name(gdak_qp_state(qp)));
		return -EINVAL;
	}
	ret = gdak_qp_modify(qp, GDAK_QPS_INIT, NULL);
	if (!ret)
		ret = gdak_qp_modify(qp, GDAK_QPS_RTR, peer);
	if (!ret && qp->attr.type != GDAK_QPT_DCT)
		ret = gdak_qp_modify(qp, GDAK_QPS_RTS, NULL);
	return ret;
}

int gdak_qp_export(struct gdak_qp *qp, struct gdak_dev_qp **dqp)
{
	if (dqp)
		*dqp = NULL;
	CHECK_ARG(qp && dqp, "NULL argument (qp=%p dqp=%p)", (void *)qp, (void *)dqp);
	return qp->ctx->ops->qp_export(qp, dqp);
}

static void put32(uint8_t *p, uint32_t v);

enum gdak_qp_type gdak_qp_type(const struct gdak_qp *qp)
{
	return qp ? (enum gdak_qp_type)qp->attr.type : GDAK_QPT_RC;
}

int gdak_dc_av(const struct gdak_qp_info *dct, int compact, struct gdak_dev_av *av)
{
	uint8_t b[48];

	CHECK_ARG(dct && av, "NULL argument (dct=%p av=%p)", (const void *)dct, (void *)av);
	if (dct->qp_type != GDAK_QPT_DCT || dct->qpn > 0xffffff) {
		GDAK_ERR(NULL, 0, "QP 0x%x is not a DCT (type %u): no address vector for it",
			 dct->qpn, dct->qp_type);
		return -EINVAL;
	}
	memset(b, 0, sizeof(b));
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(dct->dc_key >> (56 - 8 * i));
	put32(b + 8, (dct->qpn & 0xffffff) | (compact ? 0 : GDAK_MLX5_AV_FULL));
	b[14] = (uint8_t)(dct->lid >> 8);
	b[15] = (uint8_t)dct->lid;
	if (!compact) {
		/* grh_gid_fl: GRH present (bit 30), source GID index 0 (bits 27..20:
		 * the DCI's own table, which the DCT's info does not know), flow
		 * label 0 */
		b[27] = 64; /* hop_limit */
		put32(b + 28, 1u << 30);
		memcpy(b + 32, dct->gid, 16);
	}
	memset(av, 0, sizeof(*av));
	av->version = GDAK_DEV_ABI_VERSION;
	av->ds = compact ? 1 : 3;
	memcpy(av->words, b, compact ? 16 : 48);
	return 0;
}

int gdak_qp_query_error(struct gdak_qp *qp, struct gdak_qp_error *err)
{
	CHECK_ARG(qp && err, "NULL argument (qp=%p err=%p)", (void *)qp, (void *)err);
	memset(err, 0, sizeof(*err));
	err->state = gdak_qp_state(qp);
	return qp->ctx->ops->qp_query_error(qp, err);
}

/* ---- qp info wire form ------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Layout: magic "GDQI", version, qpn, psn, mtu, node(8), gid(16), udp_port(2),
 * lid(2), transport, gid_index, qp_type, zero, dc_key(8), 4 bytes zero.
 * Version 1 ended at gid_index (zeros after it): it reads as RC. */
void gdak_qp_info_pack(const struct gdak_qp_info *in, uint8_t out[GDAK_QP_INFO_WIRE_SIZE])
{
	memset(out, 0, GDAK_QP_INFO_WIRE_SIZE);
	memcpy(out, "GDQI", 4);
	put32(out + 4, in->version);
	put32(out + 8, in->qpn);
	put32(out + 12, in->psn);
	put32(out + 16, in->mtu);
	put32(out + 20, (uint32_t)(in->node >> 32));
	put32(out + 24, (uint32_t)in->node);
	memcpy(out + 28, in->gid, 16);
	out[44] = (uint8_t)(in->udp_port >> 8); out[45] = (uint8_t)in->udp_port;
	out[46] = (uint8_t)(in->lid >> 8); out[47] = (uint8_t)in->lid;
	out[48] = in->transport;
	out[49] = in->gid_index;
	out[50] = in->qp_type;
	put32(out + 52, (uint32_t)(in->dc_key >> 32));
	put32(out + 56, (uint32_t)in->dc_key);
}

int gdak_qp_info_unpack(const uint8_t in[GDAK_QP_INFO_WIRE_SIZE], struct gdak_qp_info *out)
{
	CHECK_ARG(in && out, "NULL argument");
	memset(out, 0, sizeof(*out));
	if (memcmp(in, "GDQI", 4)) {
		GDAK_ERR(NULL, 0, "not a gdak QP info record (bad magic)");
		return -EPROTO;
	}
	out->version = get32(in + 4);
	if (out->version == 1) {
		/* a version 1 peer: the same record without the DC fields */
		out->version = GDAK_QP_INFO_VERSION;
	} else if (out->version != GDAK_QP_INFO_VERSION) {
		GDAK_ERR(NULL, 0, "QP info version %u, this build speaks %u", out->version,
			 GDAK_QP_INFO_VERSION);
		return -EPROTO;
	}
	out->qpn = get32(in + 8);
	out->psn = get32(in + 12);
	out->mtu = get32(in + 16);
	out->node = (uint64_t)get32(in + 20) << 32 | get32(in + 24);
	memcpy(out->gid, in + 28, 16);
	out->udp_port = (uint16_t)(in[44] << 8 | in[45]);
	out->lid = (uint16_t)(in[46] << 8 | in[47]);
	out->transport = in[48];
	out->gid_index = in[49];
	if (get32(in + 4) != 1) {
		out->qp_type = in[50];
		out->dc_key = (uint64_t)get32(in + 52) << 32 | get32(in + 56);
	}
	if (out->qp_type > GDAK_QPT_DCT) {
		GDAK_ERR(NULL, 0, "QP info names QP type %u, not RC, DCI or DCT", out->qp_type);
		return -EPROTO;
	}
	if (out->qpn > 0xffffff || out->psn > 0xffffff) {
		GDAK_ERR(NULL, 0, "QP info qpn 0x%x / psn 0x%x over 24 bits", out->qpn, out->psn);
		return -EPROTO;
	}
	return 0;
}

/* ---- errors ----------------------------------------------------------------- */

const char *gdak_strerror(int err)
{
	if (err > 0)
		err = -err;
	switch (err) {
	case 0: return "success";
	case -ETIMEDOUT: return "timed out";
	case -EIO: return "completion with error";
	case -ENODEV: return "no such device or backend";
	case -ENOTSUP: return "not supported by this backend";
	case -EPROTO: return "protocol or format error";
	case -EAGAIN: return "try again (queue full or nothing ready)";
	default: return strerror(-err);
	}
}
