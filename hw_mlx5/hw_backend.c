/* SPDX-License-Identifier: MIT */
/*
 * hw_backend.c - the ConnectX backend's operation table, and opening a device.
 *
 * Device strings: "mlx5" (the first mlx5 device), "mlx5_N", "mlx5_N:PORT",
 * "mlx5_N:PORT:GID_INDEX".  $GDAK_HW_PORT and $GDAK_HW_GID_INDEX set the
 * defaults (port 1; on RoCE the first RoCE v2 GID, preferring an IPv4-mapped
 * one, as most RoCE deployments route on those).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/env.h>

#include "hw_loc.h"
#include "gdak_log.h"

uint32_t hw_mtu_bytes(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	}
	return 0;
}

static int hw_match(const char *dev)
{
	return !strncmp(dev, "mlx5", 4);
}

/* "mlx5_0:1:3" -> name "mlx5_0", port 1, gid index 3 (-1 = choose). */
static int parse_device(const char *dev, char *name, size_t name_len, int *port, int *gidx)
{
	const char *c1 = strchr(dev, ':');
	unsigned long long ev;
	char *end;
	size_t n = c1 ? (size_t)(c1 - dev) : strlen(dev);
	int ret;

	if (n >= name_len) {
		GDAK_ERR("hw", 0, "device name '%s' too long", dev);
		return -EINVAL;
	}
	memcpy(name, dev, n);
	name[n] = '\0';
	if (gdak_env_uint("GDAK_HW_PORT", &ev) < 0)
		return -EINVAL;
	*port = (int)ev;
	ret = gdak_env_uint("GDAK_HW_GID_INDEX", &ev);
	if (ret < 0)
		return -EINVAL;
	*gidx = ret == 1 ? -1 : (int)ev; /* unset: the first RoCEv2 IPv4 GID */
	if (c1) {
		long v = strtol(c1 + 1, &end, 10);
		if (end == c1 + 1 || (*end && *end != ':') || v < 1 || v > 255) {
			GDAK_ERR("hw", 0, "'%s': port must be a number 1..255 (mlx5_N:PORT[:GID_INDEX])",
				 dev);
			return -EINVAL;
		}
		*port = (int)v;
		if (*end == ':') {
			const char *g = end + 1;
			v = strtol(g, &end, 10);
			if (end == g || *end || v < 0 || v > 255) {
				GDAK_ERR("hw", 0, "'%s': GID index must be a number 0..255", dev);
				return -EINVAL;
			}
			*gidx = (int)v;
		}
	}
	if (*port < 1 || *port > 255) {
		GDAK_ERR("hw", 0, "port %d out of range (GDAK_HW_PORT)", *port);
		return -EINVAL;
	}
	return 0;
}

static struct ibv_device *find_device(struct ibv_device **list, int n, const char *name)
{
	for (int i = 0; i < n; i++) {
		if (!strcmp(name, "mlx5") ? mlx5dv_is_supported(list[i])
					  : !strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	}
	return NULL;
}

/* RoCE: the first RoCE v2 GID, an IPv4-mapped one if there is one. */
static int choose_gid(struct hw_ctx *hc, int table_len)
{
	int gidx = gdak_ibv_roce_v2_gid(hc->ibctx, hc->port, table_len);

	if (gidx < 0)
		GDAK_WARN("hw", 0, "%s port %u: no RoCE v2 GID found, using GID index 0",
			  hc->ibdev_name, hc->port);
	return gidx < 0 ? 0 : gidx;
}

static int open_ib(struct hw_ctx *hc, struct ibv_device *dev)
{
	struct mlx5dv_context_attr dv_attr = {.flags = MLX5DV_CONTEXT_FLAGS_DEVX};

	/* DEVX is needed only for path 2; a kernel or firmware without it
	 * still serves path 1 through plain verbs. */
	hc->ibctx = mlx5dv_open_device(dev, &dv_attr);
	if (hc->ibctx) {
		hc->devx = 1;
		return 0;
	}
	GDAK_INFO("hw", 0, "%s: no DEVX context (%s); GDAK_QP_F_QUEUES_GPU unavailable",
		  hc->ibdev_name, strerror(errno));
	hc->ibctx = ibv_open_device(dev);
	if (!hc->ibctx) {
		int e = errno ? errno : ENODEV;
		GDAK_ERR("hw", 0, "ibv_open_device(%s): %s", hc->ibdev_name, strerror(e));
		return -e;
	}
	return 0;
}

static int query_port(struct hw_ctx *hc, int gidx)
{
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	int ret;

	ret = ibv_query_device(hc->ibctx, &dattr);
	if (ret) {
		GDAK_ERR("hw", 0, "ibv_query_device(%s): %s", hc->ibdev_name, strerror(ret));
		return -ret;
	}
	if (hc->port > dattr.phys_port_cnt) {
		GDAK_ERR("hw", 0, "%s has %u port(s), port %u asked for", hc->ibdev_name,
			 dattr.phys_port_cnt, hc->port);
		return -EINVAL;
	}
	if (dattr.atomic_cap == IBV_ATOMIC_NONE)
		GDAK_WARN("hw", 0, "%s reports no RDMA atomics (atomic_cap NONE): fetch-add, "
			  "compare-swap and put+signal will fail with an error CQE", hc->ibdev_name);
	hc->max_rd_atom = (uint8_t)(dattr.max_qp_rd_atom > 255 ? 255 : dattr.max_qp_rd_atom);
	hc->max_init_rd_atom =
		(uint8_t)(dattr.max_qp_init_rd_atom > 255 ? 255 : dattr.max_qp_init_rd_atom);

	ret = ibv_query_port(hc->ibctx, hc->port, &pattr);
	if (ret) {
		GDAK_ERR("hw", 0, "ibv_query_port(%s, %u): %s", hc->ibdev_name, hc->port,
			 strerror(ret));
		return -ret;
	}
	if (pattr.state != IBV_PORT_ACTIVE)
		GDAK_WARN("hw", 0, "%s port %u is %s, not ACTIVE: connections will fail",
			  hc->ibdev_name, hc->port, ibv_port_state_str(pattr.state));
	hc->link_layer = pattr.link_layer;
	hc->active_mtu = pattr.active_mtu;
	hc->lid = pattr.lid;
	if (hc->link_layer == IBV_LINK_LAYER_ETHERNET) {
		if (gidx < 0)
			gidx = choose_gid(hc, pattr.gid_tbl_len);
		if (gidx >= pattr.gid_tbl_len) {
			GDAK_ERR("hw", 0, "%s port %u: GID index %d beyond the table (%d entries)",
				 hc->ibdev_name, hc->port, gidx, pattr.gid_tbl_len);
			return -EINVAL;
		}
	} else if (gidx < 0) {
		gidx = 0;
	}
	hc->gid_index = (uint8_t)gidx;
	ret = ibv_query_gid(hc->ibctx, hc->port, gidx, &hc->gid);
	if (ret) {
		GDAK_ERR("hw", 0, "ibv_query_gid(%s, %u, %d) failed", hc->ibdev_name, hc->port, gidx);
		return -EINVAL;
	}
	GDAK_INFO("hw", 0, "%s port %u: %s, active MTU %u, LID 0x%x, GID index %d",
		  hc->ibdev_name, hc->port,
		  hc->link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
		  hw_mtu_bytes(hc->active_mtu), hc->lid, gidx);
	return 0;
}

static void hw_close(struct gdak_ctx *ctx)
{
	struct hw_ctx *hc = hw_ctx_of(ctx);
	int ret;

	hw_proxy_stop(hc);
	hw_mem_release_all(hc);
	if (hc->pd) {
		ret = ibv_dealloc_pd(hc->pd);
		if (ret)
			GDAK_WARN("ctx", ctx->id, "ibv_dealloc_pd: %s (QPs or MRs still open?)",
				  strerror(ret));
	}
	if (hc->ibctx)
		ibv_close_device(hc->ibctx);
	pthread_mutex_destroy(&hc->lock);
	free(hc);
}

static int hw_open(const char *device, struct gdak_ctx **out)
{
	struct ibv_device **list;
	struct ibv_device *dev;
	struct hw_ctx *hc;
	char name[IBV_SYSFS_NAME_MAX];
	int n = 0, port, gidx, ret;

	ret = parse_device(device, name, sizeof(name), &port, &gidx);
	if (ret)
		return ret;
	list = ibv_get_device_list(&n);
	if (!list) {
		GDAK_ERR("hw", 0, "ibv_get_device_list: %s (is rdma-core's kernel side loaded?)",
			 strerror(errno));
		return -ENODEV;
	}
	dev = find_device(list, n, name);
	if (!dev) {
		GDAK_ERR("hw", 0, "no RDMA device '%s' (%d device(s) present%s)", name, n,
			 n ? "; see `ibv_devices`" : "");
		ibv_free_device_list(list);
		return -ENODEV;
	}
	if (!mlx5dv_is_supported(dev)) {
		GDAK_ERR("hw", 0, "RDMA device '%s' is not driven by the mlx5 provider "
			 "(mlx5dv_is_supported: no); the hardware backend needs a ConnectX",
			 ibv_get_device_name(dev));
		ibv_free_device_list(list);
		return -ENOTSUP;
	}

	hc = calloc(1, sizeof(*hc));
	if (!hc) {
		ibv_free_device_list(list);
		return -ENOMEM;
	}
	pthread_mutex_init(&hc->lock, NULL);
	snprintf(hc->ibdev_name, sizeof(hc->ibdev_name), "%s", ibv_get_device_name(dev));
	hc->port = (uint8_t)port;
	ret = open_ib(hc, dev);
	ibv_free_device_list(list);
	if (ret)
		goto fail;
	ret = query_port(hc, gidx);
	if (ret)
		goto fail;
	hc->pd = ibv_alloc_pd(hc->ibctx);
	if (!hc->pd) {
		ret = errno ? -errno : -ENOMEM;
		GDAK_ERR("hw", 0, "ibv_alloc_pd(%s): %s", hc->ibdev_name, strerror(-ret));
		goto fail;
	}
	hc->cuda = hw_cuda_init() == 0;
	*out = &hc->base;
	return 0;
fail:
	hw_close(&hc->base);
	return ret;
}

const struct gdak_backend_ops gdak_hw_backend_ops = {
	.name = "mlx5",
	.match = hw_match,
	.open = hw_open,
	.close = hw_close,
	.mem_alloc = hw_mem_alloc,
	.mem_free = hw_mem_free,
	.mem_kind_of = hw_mem_kind_of,
	.mr_reg = hw_mr_reg,
	.mr_dereg = hw_mr_dereg,
	.qp_create = hw_qp_create,
	.qp_destroy = hw_qp_destroy,
	.qp_info = hw_qp_info,
	.qp_modify = hw_qp_modify,
	.qp_export = hw_qp_export,
	.qp_query_error = hw_qp_query_error,
};
