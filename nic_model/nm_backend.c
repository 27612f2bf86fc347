/* SPDX-License-Identifier: MIT */
/*
 * nm_backend.c - the "emu" backend: device strings, contexts, the ops table.
 *
 *   "emu", "emu:loop"        in-process loopback transport (nm_loop.c)
 *   "emu:<name>[:args]"      another transport from the table below; args
 *                            go to its ctx_init ("emu:udp:10.0.0.1:4791")
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "nm_loc.h"
#ifdef NM_HAVE_CUDA_DMA
#include "nm_cuda.h"
#endif

static const struct nm_transport_ops *const transports[] = {
	&nm_tr_loop_ops,
#ifdef NM_HAVE_TR_UDP
	&nm_tr_udp_ops,
#endif
#ifdef NM_HAVE_TR_VERBS
	&nm_tr_verbs_ops,
#endif
};

const struct nm_transport_ops *nm_transport_find(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
		if (strlen(transports[i]->name) == n && !strncmp(transports[i]->name, name, n))
			return transports[i];
	return NULL;
}

uint64_t nm_node_id(void)
{
	static _Atomic uint64_t node;
	uint64_t n = atomic_load(&node);

	if (!n) {
		struct timespec ts;
		uint64_t want;

		clock_gettime(CLOCK_REALTIME, &ts);
		want = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
		if (!want)
			want = 1;
		if (!atomic_compare_exchange_strong(&node, &n, want))
			return n;
		n = want;
	}
	return n;
}

static int nm_match(const char *dev) { return !strcmp(dev, "emu") || !strncmp(dev, "emu:", 4); }

static int nm_open(const char *dev, struct gdak_ctx **out)
{
	const char *tname = "loop", *args = "";
	size_t tlen = 4;
	const struct nm_transport_ops *tr;
	struct nm_ctx *ctx;
	int ret;

	if (dev[3] == ':') {
		const char *colon;
		tname = dev + 4;
		colon = strchr(tname, ':');
		tlen = colon ? (size_t)(colon - tname) : strlen(tname);
		args = colon ? colon + 1 : "";
	}
	tr = nm_transport_find(tname, tlen);
	if (!tr) {
		GDAK_ERR(NULL, 0, "emu transport '%.*s' is not in this build (have: loop%s%s)",
			 (int)tlen, tname,
#ifdef NM_HAVE_TR_UDP
			 ", udp",
#else
			 "",
#endif
#ifdef NM_HAVE_TR_VERBS
			 ", verbs"
#else
			 ""
#endif
		);
		return -ENODEV;
	}
	nm_config_init_env();
	ret = nm_config_env_check();
	if (ret)
		return ret;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->tr = tr;
	ctx->node = nm_node_id();
	ctx->base.id = gdak_next_obj_id(); /* core overwrites with its own; fine for logs */
	ret = nm_engine_get();
	if (ret)
		goto err_free;
	if (tr->ctx_init) {
		ret = tr->ctx_init(ctx, args);
		if (ret)
			goto err_engine;
	}
	*out = &ctx->base;
	return 0;

err_engine:
	nm_engine_put();
err_free:
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return ret;
}

static void ctx_free(struct nm_ctx *ctx)
{
	/* the transport's context state lives as long as its QPs may use it */
	if (ctx->tr->ctx_fini)
		ctx->tr->ctx_fini(ctx);
	nm_engine_sync();
	nm_mem_ctx_fini(ctx);
	pthread_mutex_destroy(&ctx->lock);
	nm_engine_put();
	free(ctx);
}

/*
 * Deferred close: both the closer and whoever removes the last QP / MR
 * check "closed and nothing left" after their own atomic update, so at
 * least one of them sees it; the exchange on freed lets exactly one free.
 */
void nm_ctx_maybe_free(struct nm_ctx *ctx)
{
	if (!atomic_load(&ctx->closed) || atomic_load(&ctx->nqps) || atomic_load(&ctx->nmrs))
		return;
	if (atomic_exchange(&ctx->freed, 1))
		return;
	GDAK_DBG("ctx", ctx->base.id, "last object gone: the deferred close completes");
	ctx_free(ctx);
}

static void nm_close(struct gdak_ctx *bctx)
{
	struct nm_ctx *ctx = nm_ctx_of(bctx);
	uint32_t n = atomic_load(&ctx->nqps);

#ifdef NM_HAVE_CUDA_DMA
	nm_cuda_stats_report("context close"); /* GDAK_CUDA_STATS */
#endif
	if (n)
		GDAK_WARN("ctx", bctx->id, "closed with %u QPs still alive (destroy them first); "
			  "they are left as they are, the context goes with the last QP and MR", n);
	if (!n) {
		ctx_free(ctx);
		return;
	}
	/* with QPs alive the NIC threads keep serving them: the engine
	 * reference stays (a later gdak_qp_destroy still works), and the
	 * context with it until its last QP and MR are gone */
	atomic_store(&ctx->closed, 1);
	nm_ctx_maybe_free(ctx);
}

const struct gdak_backend_ops gdak_nm_backend_ops = {
	.name = "emu",
	.match = nm_match,
	.open = nm_open,
	.close = nm_close,
	.mem_alloc = nm_mem_alloc,
	.mem_free = nm_mem_free,
	.mem_kind_of = nm_mem_kind_of,
	.mr_reg = nm_mr_reg,
	.mr_dereg = nm_mr_dereg,
	.qp_create = nm_qp_create,
	.qp_destroy = nm_qp_destroy,
	.qp_info = nm_qp_info,
	.qp_modify = nm_qp_modify,
	.qp_export = nm_qp_export,
	.qp_query_error = nm_qp_query_error,
};
