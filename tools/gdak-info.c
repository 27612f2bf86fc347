/* SPDX-License-Identifier: MIT */
/*
 * gdak-info - what this gdak can do on this machine: the backends compiled
 * in, how it was built, whether a CUDA driver and GPUs are there (found at
 * run time with dlopen, never linked), the verbs devices, the emulated
 * devices an unmodified rdma-core program sees under gdak-run (gdak's
 * lib/gdak/libibverbs.so.1, asked as a program asks it), and the NIC
 * model's configuration as it reads it from the environment.
 *
 *   gdak-info [--json] [--help]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <arpa/inet.h>
#include <limits.h>
#include <unistd.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <gdak/config.h>
#include <gdak/env.h>
#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "gdak_libdir.h"

#ifndef GDAK_INFO_BUILD_TYPE
#define GDAK_INFO_BUILD_TYPE "unknown"
#endif
#ifndef GDAK_INFO_SANITIZE
#define GDAK_INFO_SANITIZE ""
#endif
#ifndef GDAK_INFO_COMPILER
#define GDAK_INFO_COMPILER "unknown"
#endif

/* ---- output: one set of calls, text or JSON ------------------------------ */

static int json;
static int json_first = 1; /* no comma before the first member of an object */

static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void sep(void)
{
	if (!json_first)
		putchar(',');
	json_first = 0;
}

/* Open a block: "key": and bracket in JSON, else the title as a heading
 * indented by indent spaces. */
static void block_begin(const char *key, const char *title, char bracket, int indent)
{
	if (json) {
		sep();
		json_str(key);
		printf(":%c", bracket);
		json_first = 1;
	} else {
		printf("%*s%s:\n", indent, "", title);
	}
}

/* Open a section: text heading, or "name": { in JSON. */
static void section(const char *key, const char *title)
{
	block_begin(key, title, '{', 0);
}

static void section_end(void)
{
	if (json) {
		putchar('}');
		json_first = 0;
	}
}

static void kv_str(const char *key, const char *val)
{
	if (json) {
		sep();
		json_str(key);
		putchar(':');
		if (val)
			json_str(val);
		else
			printf("null");
	} else {
		printf("  %-18s %s\n", key, val ? val : "(none)");
	}
}

static void kv_fmt(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kv_fmt(const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kv_str(key, buf);
}

static void kv_num(const char *key, long long v)
{
	if (json) {
		sep();
		json_str(key);
		printf(":%lld", v);
	} else {
		printf("  %-18s %lld\n", key, v);
	}
}

static void kv_bool(const char *key, int v)
{
	if (json) {
		sep();
		json_str(key);
		printf(":%s", v ? "true" : "false");
	} else {
		printf("  %-18s %s\n", key, v ? "yes" : "no");
	}
}

/* A JSON array of objects / a text list. */
static void list_begin(const char *key, const char *title)
{
	block_begin(key, title, '[', 2);
}
static void list_item_begin(void)
{
	if (json) {
		sep();
		putchar('{');
		json_first = 1;
	}
}
static void list_item_end(void)
{
	if (json) {
		putchar('}');
		json_first = 0;
	}
}
static void list_end(void)
{
	if (json) {
		putchar(']');
		json_first = 0;
	}
}

/* ---- sections -------------------------------------------------------------- */

static void show_build(void)
{
	section("build", "build");
	kv_str("version", GDAK_VERSION_STRING);
	kv_str("build_type", GDAK_INFO_BUILD_TYPE);
	kv_str("compiler", GDAK_INFO_COMPILER);
	kv_str("sanitizers", *GDAK_INFO_SANITIZE ? GDAK_INFO_SANITIZE : "none");
	kv_bool("hw_mlx5", GDAK_HW_MLX5);
	kv_bool("cuda_toolkit", GDAK_BUILT_WITH_CUDA_TOOLKIT);
	section_end();
}

static void show_backends(void)
{
	const char *const *b = gdak_backends();

	if (json) {
		sep();
		json_str("backends");
		printf(":[");
		for (int i = 0; b[i]; i++) {
			if (i)
				putchar(',');
			json_str(b[i]);
		}
		putchar(']');
		json_first = 0;
		return;
	}
	printf("backends:\n ");
	for (; *b; b++)
		printf(" %s", *b);
	printf("%s\n", GDAK_HW_MLX5 ? "" : "   (mlx5: build with -DGDAK_HW_MLX5=ON)");
}

/* The CUDA driver API, loaded by hand: a build without the toolkit, or a
 * machine without a GPU, still runs gdak-info. */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_int_fn)(int *);
typedef int (*cu_dev_get_fn)(int *, int);
typedef int (*cu_dev_name_fn)(char *, int, int);
typedef int (*cu_dev_mem_fn)(size_t *, int);
typedef int (*cu_dev_attr_fn)(int *, int, int);
typedef int (*cu_err_fn)(int, const char **);
enum { CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76 };

static int gdr_in_use; /* what gdr_state found (gpu_rings) */

/* GDRCopy as the NIC model's CUDA engine would find it (nm_cuda.c): the
 * library, and a driver gdr_open can reach. */
static const char *gdr_state(void)
{
	void *(*op)(void);
	int (*cl)(void *);
	int on = 1;
	void *lib, *g;

	if (gdak_env_bool("GDAK_CUDA_GDR", &on) == 0 && !on)
		return "off (GDAK_CUDA_GDR=0): GPU memory through the driver";
	lib = dlopen("libgdrapi.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return "not found (libgdrapi.so.2): GPU memory through the driver";
	*(void **)(&op) = dlsym(lib, "gdr_open");
	*(void **)(&cl) = dlsym(lib, "gdr_close");
	g = op ? op() : NULL;
	if (g && cl)
		cl(g);
	dlclose(lib);
	gdr_in_use = g != NULL;
	return g ? "in use: GPU memory the NIC model allocates, GPU MRs and GPU rings are "
		   "mapped for the CPU; small copies are CPU loads and stores"
		 : "libgdrapi.so.2 found, gdr_open fails (no gdrdrv): GPU memory through the "
		   "driver";
}

static void show_cuda(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	cu_init_fn cu_init;
	cu_int_fn drv_ver, dev_count;
	cu_dev_get_fn dev_get;
	cu_dev_name_fn dev_name;
	cu_dev_mem_fn dev_mem;
	cu_dev_attr_fn dev_attr;
	cu_err_fn err_str;
	int ver = 0, n = 0, rc;

	section("cuda", "CUDA (run time)");
	if (!h) {
		kv_bool("driver", 0);
		kv_str("why", "libcuda.so.1 not found (no NVIDIA driver); GPU memory and CUDA tests "
			      "are unavailable, CPU threads act as the device");
		section_end();
		return;
	}
	cu_init = (cu_init_fn)dlsym(h, "cuInit");
	drv_ver = (cu_int_fn)dlsym(h, "cuDriverGetVersion");
	dev_count = (cu_int_fn)dlsym(h, "cuDeviceGetCount");
	dev_get = (cu_dev_get_fn)dlsym(h, "cuDeviceGet");
	dev_name = (cu_dev_name_fn)dlsym(h, "cuDeviceGetName");
	dev_mem = (cu_dev_mem_fn)dlsym(h, "cuDeviceTotalMem_v2");
	dev_attr = (cu_dev_attr_fn)dlsym(h, "cuDeviceGetAttribute");
	err_str = (cu_err_fn)dlsym(h, "cuGetErrorString");
	kv_bool("driver", 1);
	if (!cu_init || !drv_ver || !dev_count || !dev_get || !dev_name || !dev_mem || !dev_attr) {
		kv_str("why", "libcuda.so.1 lacks a driver API entry point gdak-info needs");
		section_end();
		dlclose(h);
		return;
	}
	if (!drv_ver(&ver))
		kv_fmt("driver_version", "%d.%d", ver / 1000, ver % 1000 / 10);
	rc = cu_init(0);
	if (rc) {
		const char *s = NULL;
		if (err_str)
			err_str(rc, &s);
		kv_num("devices", 0);
		kv_fmt("why", "cuInit failed: %d (%s)", rc, s ? s : "?");
		section_end();
		dlclose(h);
		return;
	}
	if (dev_count(&n))
		n = 0;
	kv_num("devices", n);
	list_begin("gpus", "GPUs");
	for (int i = 0; i < n; i++) {
		int dev, maj = 0, min = 0;
		char name[128] = "?";
		size_t mem = 0;

		if (dev_get(&dev, i))
			continue;
		dev_name(name, sizeof(name), dev);
		dev_mem(&mem, dev);
		dev_attr(&maj, CU_ATTR_CC_MAJOR, dev);
		dev_attr(&min, CU_ATTR_CC_MINOR, dev);
		list_item_begin();
		if (json) {
			kv_num("index", i);
			kv_str("name", name);
			kv_fmt("compute_capability", "%d.%d", maj, min);
			kv_num("memory_bytes", (long long)mem);
		} else {
			printf("    %d: %s, sm_%d%d, %.1f GiB\n", i, name, maj, min,
			       (double)mem / (1024.0 * 1024 * 1024));
		}
		list_item_end();
	}
	list_end();
	{
		/* how the NIC model moves GPU memory (docs/CUDA.md) */
		static const char *const how[] = {
			"one cuMemcpyAsync per WQE (GDAK_CUDA_BATCH=off)",
			"batched: one copy kernel per NIC pass (GDAK_CUDA_BATCH=kernel)",
			"batched: 4/8-byte values as one cuStreamBatchMemOp, else a copy kernel "
			"(GDAK_CUDA_BATCH=memop)",
			"batched: 4/8-byte values as one cuStreamBatchMemOp, else one "
			"cuMemcpyBatchAsync per pass, no SM (GDAK_CUDA_BATCH=copy)",
		};
		int b = 0;

		if (gdak_env_choice("GDAK_CUDA_BATCH", &b) < 0 || b < 0 || b > 3)
			b = 0;
		kv_str("gpu_copies", n ? how[b] : "(no GPU)");
		{
			/* WRITEs too large for a batch (GDAK_CUDA_BIG, docs/CUDA.md) */
			int g = 0, k;

			if (gdak_env_choice("GDAK_CUDA_BIG", &g) < 0)
				g = 0;
			k = g == 2 || (g == 0 && (b == 1 || b == 2));
			kv_str("gpu_large_copies",
			       !n   ? "(no GPU)"
			       : !b ? "one cuMemcpyAsync per WQE (GDAK_CUDA_BATCH=off)"
			       : k ? "the wide copy kernel, one launch per WRITE (16-byte aligned; "
				     "needs a free SM slot; GDAK_CUDA_BIG)"
				   : "one cuMemcpyDtoDAsync per WRITE, no SM (GDAK_CUDA_BIG)");
		}
		kv_str("gdrcopy", n ? gdr_state() : "(no GPU)");
		/* rings in GPU memory (nic_model/nm_ring_gpu.c) */
		kv_str("gpu_rings",
		       !n ? "(no GPU)"
		       : gdr_in_use
			       ? "through GDRCopy mappings where GDRCopy pins the ring's "
				 "pages: WQE fetches and record reads are CPU loads, CQEs CPU "
				 "stores (owner byte last); else through the driver"
			       : "through the driver: WQE fetches as device-to-host copies, CQEs "
				 "as copies plus stream write-values (owner byte last)");
	}
	section_end();
	dlclose(h);
}

static void show_verbs(void)
{
	int n = 0;
	struct ibv_device **list;

	section("verbs", "verbs devices (rdma-core)");
	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list) {
		kv_num("count", 0);
		kv_fmt("why", "ibv_get_device_list: %s (no RDMA support in this kernel?)",
		       strerror(errno ? errno : ENODEV));
		section_end();
		return;
	}
	kv_num("count", n);
	if (!n && !json)
		printf("    (none: no RDMA device; the NIC model needs none, rxe tests run in a VM)\n");
	list_begin("devices", "devices");
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct ibv_port_attr pa;
		int have_port = ctx && !ibv_query_port(ctx, 1, &pa);
		const char *ll = "?";

		if (have_port)
			ll = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : "InfiniBand";
		list_item_begin();
		if (json) {
			kv_str("name", ibv_get_device_name(list[i]));
			kv_str("node_type", ibv_node_type_str(list[i]->node_type));
			kv_str("port1_state", have_port ? ibv_port_state_str(pa.state) : NULL);
			kv_str("link_layer", have_port ? ll : NULL);
		} else {
			printf("    %s: %s, port 1 %s, %s\n", ibv_get_device_name(list[i]),
			       ibv_node_type_str(list[i]->node_type),
			       have_port ? ibv_port_state_str(pa.state) : "(cannot query)", ll);
		}
		list_item_end();
		if (ctx)
			ibv_close_device(ctx);
	}
	list_end();
	ibv_free_device_list(list);
	section_end();
}

/* The devices an unmodified program sees under gdak-run: gdak's
 * libibverbs.so.1 from lib/gdak, loaded in a link-map namespace of its own
 * (dlmopen) because this program already has rdma-core's, and asked what
 * any program would ask.  Opening a device claims its address for as long
 * as gdak-info runs, as it would for the program. */
typedef struct ibv_device **(*get_list_fn)(int *);
typedef void (*free_list_fn)(struct ibv_device **);
typedef const char *(*dev_name_fn)(struct ibv_device *);
typedef __be64 (*dev_guid_fn)(struct ibv_device *);
typedef struct ibv_context *(*open_fn)(struct ibv_device *);
typedef int (*close_fn)(struct ibv_context *);
typedef int (*query_dev_fn)(struct ibv_context *, struct ibv_device_attr *);
typedef int (*query_port_fn)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
typedef int (*query_gid_fn)(struct ibv_context *, uint8_t, int, union ibv_gid *);

static void show_one_emulated(struct ibv_device *dev, void *h)
{
	dev_name_fn name = (dev_name_fn)dlvsym(h, "ibv_get_device_name", "IBVERBS_1.1");
	dev_guid_fn guid = (dev_guid_fn)dlvsym(h, "ibv_get_device_guid", "IBVERBS_1.1");
	open_fn op = (open_fn)dlvsym(h, "ibv_open_device", "IBVERBS_1.1");
	close_fn cl = (close_fn)dlvsym(h, "ibv_close_device", "IBVERBS_1.1");
	query_dev_fn qd = (query_dev_fn)dlvsym(h, "ibv_query_device", "IBVERBS_1.1");
	query_port_fn qp = (query_port_fn)dlvsym(h, "ibv_query_port", "IBVERBS_1.1");
	query_gid_fn qg = (query_gid_fn)dlvsym(h, "ibv_query_gid", "IBVERBS_1.1");
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	char gs[INET6_ADDRSTRLEN] = "?", gu[24];
	struct ibv_context *ctx;
	uint64_t g;
	int have_dev, have_port, have_gid;

	if (!name || !guid || !op || !cl || !qd || !qp || !qg)
		return;
	g = be64toh(guid(dev));
	snprintf(gu, sizeof(gu), "%04x:%04x:%04x:%04x", (unsigned)(g >> 48),
		 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
	list_item_begin();
	ctx = op(dev);
	if (!ctx) {
		int e = errno;

		if (json) {
			kv_str("name", name(dev));
			kv_str("node_guid", gu);
			kv_fmt("why", "ibv_open_device: %s", strerror(e));
		} else {
			printf("    %s: node GUID %s; cannot open: %s\n", name(dev), gu,
			       strerror(e));
		}
		list_item_end();
		return;
	}
	memset(&pa, 0, sizeof(pa));
	have_dev = !qd(ctx, &da);
	have_port = !qp(ctx, 1, &pa);
	have_gid = !qg(ctx, 1, 0, &gid);
	if (have_gid)
		inet_ntop(AF_INET6, gid.raw, gs, sizeof(gs));
	if (json) {
		kv_str("name", name(dev));
		kv_str("node_guid", gu);
		if (have_dev) {
			kv_fmt("vendor", "0x%04x:%u", da.vendor_id, da.vendor_part_id);
			kv_str("fw_ver", da.fw_ver);
			kv_num("max_qp", da.max_qp);
		}
		kv_str("port1_state", have_port ? ibv_port_state_str(pa.state) : NULL);
		kv_str("link_layer",
		       have_port ? (pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet"
									     : "InfiniBand")
				 : NULL);
		kv_num("active_mtu", have_port ? 128 << pa.active_mtu : 0);
		kv_str("gid0", have_gid ? gs : NULL);
	} else {
		printf("    %s: node GUID %s", name(dev), gu);
		if (have_dev)
			printf(", vendor 0x%04x part %u, fw %s", da.vendor_id, da.vendor_part_id,
			       da.fw_ver);
		printf("\n");
		if (have_port)
			printf("      port 1 %s, %s, MTU %d\n", ibv_port_state_str(pa.state),
			       pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
			       128 << pa.active_mtu);
		if (have_gid)
			printf("      GID[0] %s (RoCE v2; perftest -x 0, ibv_rc_pingpong -g 0)\n",
			       gs);
	}
	list_item_end();
	cl(ctx);
}

/* Whether the shared object holding sym is the file at path. */
static int same_file(void *sym, const char *path)
{
	char a[PATH_MAX], b[PATH_MAX];
	Dl_info di;

	return dladdr(sym, &di) && di.dli_fname && realpath(di.dli_fname, a) && realpath(path, b) &&
	       !strcmp(a, b);
}

static void show_emulated(void)
{
	static const char *const libs[] = { "libibverbs.so.1", "libmlx5.so.1", "libefa.so.1" };
	char dir[PATH_MAX], path[PATH_MAX + 32];
	const char *addr = gdak_env_raw("GDAK_IBV_ADDR");
	get_list_fn get_list;
	free_list_fn free_list;
	struct ibv_device **list;
	void *h;
	int n = 0, found = !gdak_find_libdir(dir, sizeof(dir));

	section("emulated_verbs", "emulated RDMA devices (gdak-run)");
	kv_str("library_dir", dir);
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, libs[i]);
		kv_bool(libs[i], !access(path, R_OK));
	}
	kv_str("run_with", "gdak-run [--devices N] [--addr A,...] -- PROGRAM ARGS (docs/VERBS.md)");
	kv_str("addresses",
	       addr && *addr
		       ? addr
		       : "per process, the first 127.0.0.N (N >= 2) whose UDP port 4791 is free "
			 "(gdak-run --addr or GDAK_IBV_ADDR to choose)");
	if (!found) {
		kv_str("why", "gdak's libibverbs.so.1 is not built or installed");
		section_end();
		return;
	}
	if (*GDAK_INFO_SANITIZE) {
		/* the library of a sanitizer build carries the sanitizer's
		 * runtime, which refuses to load a second time in another
		 * link-map namespace */
		kv_str("why", "not asked in a sanitizer build (" GDAK_INFO_SANITIZE "): run "
			      "gdak-run ibv_devices");
		section_end();
		return;
	}
	snprintf(path, sizeof(path), "%s/libibverbs.so.1", dir);
	/* Under gdak-run this program already runs on gdak's libibverbs: a
	 * second copy in another namespace would find the addresses taken */
	if (same_file((void *)ibv_get_device_list, path)) {
		kv_str("note", "gdak-info itself runs on gdak's libibverbs (under gdak-run): "
			       "these are also the verbs devices above");
		h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	} else {
		h = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h) {
		kv_fmt("why", "cannot load %s: %s", path, dlerror());
		section_end();
		return;
	}
	get_list = (get_list_fn)dlvsym(h, "ibv_get_device_list", "IBVERBS_1.1");
	free_list = (free_list_fn)dlvsym(h, "ibv_free_device_list", "IBVERBS_1.1");
	list = get_list ? get_list(&n) : NULL;
	kv_num("count", list ? n : 0);
	list_begin("devices", "devices");
	for (int i = 0; list && i < n; i++)
		show_one_emulated(list[i], h);
	list_end();
	if (list && free_list)
		free_list(list);
	section_end();
	/* not dlclose()d: the library's NIC threads may still be winding down */
}

static void show_nic(void)
{
	struct gdak_ctx *ctx = NULL;
	int ret;

	section("nic_model", "NIC model (emu backend)");
	/* The NIC model reads its environment at the first gdak_open() of an
	 * emu device: open one so the values below are the ones it uses. */
	ret = gdak_open("emu", &ctx);
	if (ret) {
		kv_bool("available", 0);
		kv_fmt("why", "gdak_open(\"emu\"): %s", gdak_strerror(ret));
	} else {
		kv_bool("available", 1);
	}
	if (!ret) {
		enum gdak_nic_poll p = gdak_nic_get_poll();
		kv_num("threads", (long long)gdak_nic_get_threads());
		kv_bool("strict", gdak_nic_get_strict());
		kv_str("poll", p == GDAK_NIC_POLL_SPIN ? "spin" : "adaptive");
	}
	if (ctx)
		gdak_close(ctx);
	section_end();
}

/* Every variable of the configuration table (gdak/env.h): its value here,
 * its default, what it allows and whether the value is allowed (gdak_open
 * refuses to open anything under a bad one). */
static void show_env(void)
{
	size_t n;
	const struct gdak_env_var *t = gdak_env_table(&n);
	char allowed[96];

	section("environment", "environment (every variable gdak reads; * = set here)");
	for (size_t i = 0; i < n; i++) {
		const char *v = gdak_env_raw(t[i].name);
		int ok = !gdak_env_check_value(&t[i], v);

		gdak_env_allowed(&t[i], allowed, sizeof(allowed));
		if (json) {
			sep();
			json_str(t[i].name);
			printf(":{");
			json_first = 1;
			kv_str("value", v);
			kv_str("default", *t[i].def ? t[i].def : NULL);
			kv_str("allowed", allowed);
			kv_str("area", t[i].area);
			kv_bool("ok", ok);
			kv_str("doc", t[i].doc);
			putchar('}');
			json_first = 0;
		} else {
			printf("  %c %-24s %-16s default %-10s [%s] %s%s\n", v ? '*' : ' ',
			       t[i].name, v ? v : "(unset)", *t[i].def ? t[i].def : "-", allowed,
			       t[i].doc, ok ? "" : "   <-- NOT ALLOWED: gdak_open fails");
		}
	}
	section_end();
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gdak-info [--json] [--help]\n"
		   "\n"
		   "Shows what gdak can do here: the backends compiled in, the build\n"
		   "configuration, the CUDA driver and GPUs (found at run time), the verbs\n"
		   "devices, the emulated devices an unmodified program sees under gdak-run\n"
		   "(GDAK_IBV_DEVICES, GDAK_IBV_ADDR apply), the NIC model's configuration,\n"
		   "and every environment variable gdak reads, with its value here, its\n"
		   "default and what it allows.\n"
		   "\n"
		   "  --json   one JSON object instead of text\n"
		   "  --help   this text\n");
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "gdak-info: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	/* Logs go to stderr; stdout stays one parseable document. */
	if (json)
		putchar('{');
	else
		printf("gdak %s\n", GDAK_VERSION_STRING);
	show_build();
	show_backends();
	show_cuda();
	show_verbs();
	show_emulated();
	show_nic();
	show_env();
	if (json)
		printf("}\n");
	return 0;
}
