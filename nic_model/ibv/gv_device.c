/* SPDX-License-Identifier: MIT */
/*
 * gv_device.c - the emulated devices as libibverbs shows them: the device
 * list, open/close, and the queries (device, port, GID, P_Key, sysfs).
 *
 * What a ConnectX-7 in RoCE mode answers, with the limits the NIC model
 * really has (sizes its rings accept, 16 SGEs per receive WQE, the inline
 * size this library packs).  GDAK_IBV_DEVICES=N (1..8, default 1) shows
 * mlx5_0 .. mlx5_{N-1}; GDAK_IBV_ADDR=a.b.c.d[,e.f.g.h ...] fixes their
 * addresses (default: the first free 127.0.0.N, N >= 2, gv_addr.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include <gdak/env.h>

#include "gv_loc.h"

static struct gv_device devs[GV_MAX_DEVICES];
static int ndevs = -1;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;

/* ConnectX-7 (PCI device 0x1021 = 4129), firmware of its 28.x line */
#define GV_VENDOR_ID 0x02c9
#define GV_PART_ID 4129
#define GV_FW_VER "28.39.1002"
#define GV_BOARD_ID "MT_0000000838"

int gv_device_index(const struct ibv_device *dev)
{
	for (int i = 0; i < GV_MAX_DEVICES; i++)
		if (dev == &devs[i].ibdev)
			return i;
	return -1;
}

static void devs_init(void)
{
	char host[256] = "";
	uint32_t h = 2166136261u;
	unsigned long long v;
	int n = 1;

	/* the table's range is 0..GV_MAX_DEVICES; a bad value has been named
	 * by it, and one device is shown */
	if (gdak_env_uint("GDAK_IBV_DEVICES", &v) == 0 && v <= GV_MAX_DEVICES)
		n = (int)v;
	/* GUIDs: Mellanox's OUI, 03:00 as ConnectX port GUIDs carry, then a
	 * hash of the host name and the index */
	gethostname(host, sizeof(host) - 1);
	for (const char *p = host; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	for (int i = 0; i < n; i++) {
		struct gv_device *d = &devs[i];

		memset(d, 0, sizeof(*d));
		d->index = i;
		d->ibdev.node_type = IBV_NODE_CA;
		d->ibdev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->ibdev.name, sizeof(d->ibdev.name), "mlx5_%d", i);
		snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs%d", i);
		snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
			 "/sys/class/infiniband_verbs/uverbs%d", i);
		snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
			 "/sys/class/infiniband/mlx5_%d", i);
		d->guid = 0xb8cef60300000000ull | ((uint64_t)(h & 0xffff) << 8) | (uint64_t)i;
		d->claim_fd = -1;
		pthread_mutex_init(&d->lock, NULL);
	}
	ndevs = n;
}

GV_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **l;

	pthread_mutex_lock(&list_lock);
	if (ndevs < 0)
		devs_init();
	pthread_mutex_unlock(&list_lock);
	l = calloc((size_t)ndevs + 1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < ndevs; i++)
		l[i] = &devs[i].ibdev;
	if (num)
		*num = ndevs;
	return l;
}

GV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

GV_EXPORT const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev ? dev->name : NULL;
}

GV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *dev)
{
	return htobe64(((struct gv_device *)(void *)dev)->guid);
}

GV_EXPORT int ibv_get_device_index(struct ibv_device *dev)
{
	return ((struct gv_device *)(void *)dev)->index;
}

/* ---- open / close -------------------------------------------------------------- */

GV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *ibdev)
{
	struct gv_device *d = (struct gv_device *)(void *)ibdev;
	struct gv_context *c;
	int p[2], ret;

	if (!d) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	ret = gv_dev_get(d);
	if (ret) {
		free(c);
		errno = -ret;
		return NULL;
	}
	if (pipe2(p, O_CLOEXEC)) {
		ret = errno;
		gv_dev_put(d);
		free(c);
		errno = ret;
		return NULL;
	}
	c->dev = d;
	c->async_wr = p[1];
	pthread_mutex_init(&c->ev_lock, NULL);
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.context.device = ibdev;
	c->vctx.context.cmd_fd = -1;
	c->vctx.context.async_fd = p[0];
	c->vctx.context.num_comp_vectors = 1;
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	gv_ops_init(c);
	/* the port is up from the start: tell whoever listens (IBA 11.6.3) */
	gv_async_post(c, IBV_EVENT_PORT_ACTIVE, NULL);
	return &c->vctx.context;
}

GV_EXPORT int ibv_close_device(struct ibv_context *ctx)
{
	struct gv_context *c = gv_ctx(ctx);
	struct gv_async *e, *n;

	for (e = c->ev_head; e; e = n) {
		n = e->next;
		free(e);
	}
	close(c->vctx.context.async_fd);
	close(c->async_wr);
	gv_dev_put(c->dev);
	free(c);
	return 0;
}

/* ---- queries ---------------------------------------------------------------------- */

static void fill_attr(const struct gv_device *d, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", GV_FW_VER);
	a->node_guid = htobe64(d->guid);
	a->sys_image_guid = htobe64(d->guid);
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffffffffffff000ull;
	a->vendor_id = GV_VENDOR_ID;
	a->vendor_part_id = GV_PART_ID;
	a->hw_ver = 0;
	a->max_qp = 131072;
	a->max_qp_wr = GV_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
			      IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_N_NOTIFY_CQ;
	a->max_sge = GV_MAX_SGE;
	a->max_sge_rd = GV_MAX_SGE;
	a->max_cq = 16777216;
	a->max_cqe = GV_MAX_CQE;
	a->max_mr = 1048575; /* the NIC model's MR table per context */
	a->max_pd = 16777216;
	a->max_qp_rd_atom = GV_MAX_RD_ATOM;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = 131072 * GV_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = GV_MAX_RD_ATOM;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mcast_grp = 0;
	a->max_ah = INT32_MAX;
	a->max_srq = 8388608;
	a->max_srq_wr = GV_MAX_QP_WR - 1;
	a->max_srq_sge = GV_MAX_SGE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = 1;
}

GV_EXPORT int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	if (!ctx || !attr)
		return EINVAL;
	fill_attr(gv_ctx(ctx)->dev, attr);
	return 0;
}

int gv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (!ctx || !attr || attr_size < sizeof(struct ibv_device_attr) || (in && in->comp_mask))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	fill_attr(gv_ctx(ctx)->dev, &a.orig_attr);
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
	/* On-demand paging is what the NIC model does anyway: it reads a
	 * registered range through this process's own page tables, so pages
	 * need no pinning and fault in when touched.  Explicit ranges only: an
	 * implicit (whole address space) MR would turn a bad address into a
	 * fault of the NIC thread instead of an error completion. */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT;
	a.odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						    IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
						    IBV_ODP_SUPPORT_ATOMIC |
						    IBV_ODP_SUPPORT_SRQ_RECV;
	/* completion timestamps: CLOCK_MONOTONIC in ns, a 1 GHz "core clock" */
	a.completion_timestamp_mask = INT64_MAX;
	a.hca_core_clock = 1000000; /* kHz */
	a.phys_port_cnt_ex = 1;
	a.pci_atomic_caps.fetch_add = a.pci_atomic_caps.swap = a.pci_atomic_caps.compare_swap = 0;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

int gv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *pa, size_t len)
{
	struct ibv_port_attr a;

	if (!ctx || !pa || port != 1)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	a.state = IBV_PORT_ACTIVE;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = IBV_MTU_4096;
	a.gid_tbl_len = GV_GID_TBL_LEN;
	a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	a.max_msg_sz = 1u << 30;
	a.pkey_tbl_len = 1;
	a.lmc = 0;
	a.max_vl_num = 4;
	a.subnet_timeout = 0;
	a.active_width = 2;   /* 4X */
	a.active_speed = 128; /* NDR: 400 Gb/s at 4X */
	a.phys_state = 5;     /* LinkUp */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	a.port_cap_flags2 = 0;
	memcpy(pa, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

int gv_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *v)
{
	if (!v || (v->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	if (v->comp_mask & IBV_VALUES_MASK_RAW_CLOCK)
		clock_gettime(CLOCK_MONOTONIC, &v->raw_clock);
	return 0;
}

/* The exported symbol (old programs, or ones whose verbs.h predates
 * verbs_context.query_port) fills the compat struct, a prefix of ours. */
#undef ibv_query_port
GV_EXPORT int ibv_query_port(struct ibv_context *ctx, uint8_t port,
			     struct _compat_ibv_port_attr *pa)
{
	return gv_query_port(ctx, port, (struct ibv_port_attr *)(void *)pa,
			     offsetof(struct ibv_port_attr, flags));
}

void gv_dev_gid(const struct gv_device *d, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &d->addr.s_addr, 4);
}

GV_EXPORT int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (!ctx || !gid || port != 1 || index < 0 || index >= GV_GID_TBL_LEN)
		return -1;
	if (index == 0)
		gv_dev_gid(gv_ctx(ctx)->dev, gid);
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

GV_EXPORT int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index,
				 enum gv_gid_type_sysfs *type)
{
	if (!ctx || port != 1 || index >= GV_GID_TBL_LEN || !type)
		return -1;
	*type = GV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

GV_EXPORT int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
				struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (!ctx || !entry || flags || entry_size < sizeof(e))
		return EINVAL;
	if (port != 1 || index >= GV_GID_TBL_LEN)
		return EINVAL;
	if (index != 0)
		return ENODATA;
	memset(&e, 0, sizeof(e));
	gv_dev_gid(gv_ctx(ctx)->dev, &e.gid);
	e.gid_index = 0;
	e.port_num = 1;
	e.gid_type = IBV_GID_TYPE_ROCE_V2;
	e.ndev_ifindex = 1; /* lo */
	memcpy(entry, &e, sizeof(e));
	return 0;
}

GV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
				       size_t max, uint32_t flags, size_t entry_size)
{
	if (!ctx || flags || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	if (max < 1)
		return -EINVAL;
	if (_ibv_query_gid_ex(ctx, 1, 0, entries, 0, entry_size))
		return -EINVAL;
	return 1;
}

GV_EXPORT int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	if (!ctx || !pkey || port != 1 || index < 0)
		return -1;
	*pkey = index == 0 ? htobe16(0xffff) : 0;
	return 0;
}

GV_EXPORT int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	if (!ctx || port != 1)
		return -1;
	return (be16toh(pkey) & 0x7fff) == 0x7fff ? 0 : -1;
}

/* ---- sysfs: the files rdma-core's tools read for our devices, the real ones otherwise -- */

static int sysfs_virtual(const char *path, char *buf, size_t size)
{
	int idx = -1, off = 0;
	const char *rest;
	char val[128];

	if (sscanf(path, "/sys/class/infiniband/mlx5_%d%n", &idx, &off) != 1 || idx < 0 ||
	    idx >= ndevs)
		return -2;
	rest = path + off;
	if (!strcmp(rest, "/fw_ver"))
		snprintf(val, sizeof(val), "%s\n", GV_FW_VER);
	else if (!strcmp(rest, "/board_id"))
		snprintf(val, sizeof(val), "%s\n", GV_BOARD_ID);
	else if (!strcmp(rest, "/hca_type"))
		snprintf(val, sizeof(val), "MT%d\n", GV_PART_ID);
	else if (!strcmp(rest, "/hw_rev"))
		snprintf(val, sizeof(val), "0x0\n");
	else if (!strcmp(rest, "/node_type"))
		snprintf(val, sizeof(val), "1: CA\n");
	else if (!strcmp(rest, "/node_desc"))
		snprintf(val, sizeof(val), "gdak emulated ConnectX-7 mlx5_%d\n", idx);
	else if (!strncmp(rest, "/ports/1/gid_attrs/types/", 25))
		snprintf(val, sizeof(val), "%s\n", atoi(rest + 25) == 0 ? "RoCE v2" : "");
	else if (!strncmp(rest, "/ports/1/gid_attrs/ndevs/", 25))
		snprintf(val, sizeof(val), "lo\n");
	else if (!strcmp(rest, "/ports/1/link_layer"))
		snprintf(val, sizeof(val), "Ethernet\n");
	else if (!strcmp(rest, "/ports/1/state"))
		snprintf(val, sizeof(val), "4: ACTIVE\n");
	else if (!strcmp(rest, "/ports/1/rate"))
		snprintf(val, sizeof(val), "400 Gb/sec (4X NDR)\n");
	else
		return -1;
	if (size == 0)
		return 0;
	snprintf(buf, size, "%s", val);
	return (int)strlen(buf);
}

GV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[512];
	ssize_t n;
	int fd, v;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	v = sysfs_virtual(path, buf, size);
	if (v != -2) {
		if (v < 0)
			return -1;
		/* the real one strips the trailing newline */
		if (v > 0 && buf[v - 1] == '\n')
			buf[--v] = 0;
		return v;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	else if ((size_t)n < size)
		buf[n] = 0;
	return (int)n;
}

GV_EXPORT const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}
