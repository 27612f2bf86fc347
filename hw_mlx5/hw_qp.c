/* SPDX-License-Identifier: MIT */
/*
 * hw_qp.c - what both QP paths share: creation and teardown, the exported
 * device descriptor, and mapping host memory into the GPU.
 *
 * The descriptor (struct gdak_dev_qp), the per-slot WQEBB counts of shared
 * mode and the CPU-proxy producer word live in one allocation: pinned host
 * memory mapped into the GPU (cuMemHostAlloc, same address on host and GPU
 * under unified addressing) when CUDA is usable, ordinary host memory when
 * the device is CPU threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <gdak/env.h>

#include "hw_loc.h"
#include "capture_int.h"
#include "gdak_log.h"

/* proxy_pi gets a cache line of its own (the device writes it, the proxy
 * thread polls it), and so does the scratch word the HCA writes the
 * discarded fetch of put+signal into. */
#define DQP_PI_OFF 320u
#define DQP_SCRATCH_OFF 384u
#define DQP_SLOTS_OFF 448u

static const char *const handler_names[] = {"DB", "BF", "CPU_PROXY"};

static uint32_t random_psn(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)(uintptr_t)&v ^ 0x5a5a5au;
	return v & 0xffffff;
}

static int dqp_alloc(struct hw_qp *hq, uint32_t slots)
{
	size_t len = DQP_SLOTS_OFF + slots;
	void *p = NULL;

	if (hq->ctx->cuda) {
		if (hw_cuda_host_alloc(len, &p))
			return -ENOMEM;
		hq->dqp_cuda = 1;
	} else if (posix_memalign(&p, 64, len)) {
		return -ENOMEM;
	}
	memset(p, 0, len);
	hq->dqp = p;
	hq->proxy_pi = (uint64_t *)(void *)((char *)p + DQP_PI_OFF);
	hq->slot_bbs = (uint8_t *)p + DQP_SLOTS_OFF;
	/* registered memory the HCA may write (LOCAL_WRITE) */
	hq->scratch_mr = ibv_reg_mr(hq->ctx->pd, (char *)p + DQP_SCRATCH_OFF, 8,
				    IBV_ACCESS_LOCAL_WRITE);
	if (!hq->scratch_mr) {
		GDAK_ERR("ctx", hq->ctx->base.id, "registering the QP's scratch word: %s",
			 strerror(errno));
		return errno ? -errno : -ENOMEM;
	}
	return 0;
}

static void dqp_free(struct hw_qp *hq)
{
	if (!hq->dqp)
		return;
	if (hq->scratch_mr)
		ibv_dereg_mr(hq->scratch_mr);
	if (hq->dqp_cuda)
		hw_cuda_host_free(hq->dqp);
	else
		free(hq->dqp);
	hq->dqp = NULL;
}

/*
 * Device address of host memory the device code must reach.  Without CUDA
 * (CPU threads as the device), or with $GDAK_HW_NO_GPU_MAP=1 (CPU threads as
 * the device on a GPU machine), that is the host address itself.
 */
int hw_qp_map(struct hw_qp *hq, void *host, size_t len, int iomem, void **dev)
{
	int no_map = 0, ret;

	if (gdak_env_bool("GDAK_HW_NO_GPU_MAP", &no_map) < 0)
		no_map = 0;
	if (!hq->ctx->cuda || no_map) {
		*dev = host;
		return 0;
	}
	if (hq->n_mapped >= (int)(sizeof(hq->mapped) / sizeof(hq->mapped[0])))
		return -ENOSPC;
	ret = hw_gpumap_get(hq->ctx, host, len, iomem, dev);
	if (ret)
		return ret;
	hq->mapped[hq->n_mapped++] = host;
	return 0;
}

static void unmap_all(struct hw_qp *hq)
{
	while (hq->n_mapped > 0)
		hw_gpumap_put(hq->ctx, hq->mapped[--hq->n_mapped]);
}

int hw_qp_publish(struct hw_qp *hq, const struct gdak_dev_qp *tmpl)
{
	struct gdak_dev_qp *d;
	int ret;

	ret = dqp_alloc(hq, tmpl->sq_wqebb_cnt);
	if (ret)
		return ret;
	d = hq->dqp;
	*d = *tmpl;
	d->version = GDAK_DEV_ABI_VERSION;
	d->scq.version = GDAK_DEV_ABI_VERSION;
	if (d->rq_buf)
		d->rcq.version = GDAK_DEV_ABI_VERSION;
	d->proxy_pi = hq->proxy_pi;
	d->sq_slot_bbs = hq->slot_bbs;
	d->scratch_addr = (uint64_t)(uintptr_t)hq->scratch_mr->addr;
	d->scratch_lkey = hq->scratch_mr->lkey;
	if (d->handler == GDAK_DEV_DB_CPU_PROXY) {
		ret = hw_proxy_add(hq->ctx, hq);
		if (ret)
			return ret;
	}
	GDAK_INFO("qp", hq->base.qpn, "%s path: SQ %u WQEBBs, CQ %u, RQ %u, handler %s, inline %u",
		  !hq->devx				       ? "verbs"
		  : hq->base.attr.flags & GDAK_QP_F_QUEUES_GPU ? "DEVX (queues in GPU memory)"
							       : "DEVX (queues in host memory)",
		  d->sq_wqebb_cnt, d->scq.ncqe, d->rq_wqe_cnt, handler_names[d->handler],
		  d->max_inline);
	return 0;
}

/* The path a QP with these flags takes: 1 DEVX, 0 verbs, -EINVAL for a
 * bad GDAK_HW_QP_PATH (logged).  DEVX over host memory when the QP does
 * not ask for GPU-resident queues (hw_devx.c). */
static int wants_devx(unsigned flags)
{
	int path = 0;

	if (gdak_env_choice("GDAK_HW_QP_PATH", &path) < 0)
		return -EINVAL;
	return path ? path == 2 : !!(flags & GDAK_QP_F_QUEUES_GPU);
}

int hw_qp_create(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr, struct gdak_qp **out)
{
	struct hw_ctx *hc = hw_ctx_of(ctx);
	struct gdak_dev_qp tmpl;
	struct hw_qp *hq;
	int ret;

	/* CQ attributes and the no-record doorbell are DEVX CQ/QP context
	 * fields (cc, oi, send_dbr_mode): the DEVX path sets them, verbs
	 * cannot */
	if ((attr->flags & (GDAK_QP_F_ALL & ~GDAK_QP_F_QUEUES_GPU)) &&
	    wants_devx(attr->flags) == 0) {
		GDAK_ERR("ctx", ctx->id,
			 "QP flags 0x%x (CQ overrun-ignore / collapsed / no doorbell "
			 "record) need the DEVX path (GDAK_HW_QP_PATH=devx, or "
			 "GDAK_QP_F_QUEUES_GPU)",
			 attr->flags & (GDAK_QP_F_ALL & ~GDAK_QP_F_QUEUES_GPU));
		return -ENOTSUP;
	}
	if (attr->type == GDAK_QPT_DCI && attr->dci_streams > 1 && wants_devx(attr->flags) != 0) {
		GDAK_ERR("ctx", ctx->id,
			 "a DCI with %u streams is created on the verbs path only "
			 "(GDAK_HW_QP_PATH=verbs, no GDAK_QP_F_* flags): the DEVX path "
			 "sets no DCI stream context yet",
			 attr->dci_streams);
		return -ENOTSUP;
	}
	if (attr->type == GDAK_QPT_DCT && attr->flags) {
		/* a DCT has no rings: nothing for the ring flags to describe */
		GDAK_ERR("ctx", ctx->id, "QP flags 0x%x on a DCT (it has no rings)", attr->flags);
		return -ENOTSUP;
	}
	if (attr->type == GDAK_QPT_DCT && attr->rq_depth) {
		/* a ConnectX DCT receives through an SRQ, whose WQEs (next
		 * segment first) the device API does not post */
		GDAK_ERR("ctx", ctx->id,
			 "a DCT with a receive queue (rq_depth %u) is not supported on "
			 "ConnectX by this backend: SENDs to a DCT need SRQ posting",
			 attr->rq_depth);
		return -ENOTSUP;
	}
	hq = calloc(1, sizeof(*hq));
	if (!hq)
		return -ENOMEM;
	hq->ctx = hc;
	hq->base.ctx = ctx;
	hq->base.attr = *attr;	/* before any thread can see the QP (core checks) */
	hq->devx = !!(attr->flags & GDAK_QP_F_QUEUES_GPU);
	/* GDAK_HW_QP_PATH: auto (above), or one path for every QP, so that
	 * tests can run each against the same device */
	{
		int path = 0;

		if (gdak_env_choice("GDAK_HW_QP_PATH", &path) < 0) {
			free(hq);
			return -EINVAL;
		}
		if (path == 1 && hq->devx) {
			GDAK_ERR("ctx", ctx->id,
				 "GDAK_HW_QP_PATH=verbs: the verbs path keeps its "
				 "rings in host memory, GDAK_QP_F_QUEUES_GPU needs DEVX");
			free(hq);
			return -ENOTSUP;
		}
		if (path)
			hq->devx = path == 2;
	}
	/* a DCT has no rings the DEVX path would place: verbs on either path */
	if (attr->type == GDAK_QPT_DCT)
		hq->devx = 0;
	hq->psn = random_psn();
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.handler = attr->handler;
	tmpl.sharing = attr->sharing;

	if (hq->devx && (!hc->devx || ((attr->flags & GDAK_QP_F_QUEUES_GPU) && !hc->cuda))) {
		GDAK_ERR("ctx", ctx->id,
			 "the DEVX path (GDAK_QP_F_QUEUES_GPU or GDAK_HW_QP_PATH=devx) needs %s",
			 !hc->devx ? "a DEVX-capable mlx5 context (kernel and firmware)"
				   : "a CUDA GPU (GDAK_QP_F_QUEUES_GPU: its rings are GPU memory)");
		free(hq);
		return -ENOTSUP;
	}
	ret = hq->devx ? hw_dqp_create(hq, &tmpl) : hw_vqp_create(hq, &tmpl);
	if (ret)
		goto fail;
	hq->base.qpn = tmpl.qpn;
	ret = hw_qp_publish(hq, &tmpl);
	if (ret)
		goto fail;
	*out = &hq->base;
	gdak_capture_env_add_qp(&hq->base);	/* GDAK_TRACE: the ring capture follows it */
	return 0;
fail:
	hw_qp_destroy(&hq->base);
	return ret;
}

int hw_qp_destroy(struct gdak_qp *qp)
{
	struct hw_qp *hq = hw_qp_of(qp);

	if (hq->proxied)
		hw_proxy_remove(hq->ctx, hq);
	unmap_all(hq);
	if (hq->devx)
		hw_dqp_destroy(hq);
	else
		hw_vqp_destroy(hq);
	dqp_free(hq);
	free(hq);
	return 0;
}

int hw_qp_export(struct gdak_qp *qp, struct gdak_dev_qp **dqp)
{
	*dqp = hw_qp_of(qp)->dqp;
	return 0;
}
