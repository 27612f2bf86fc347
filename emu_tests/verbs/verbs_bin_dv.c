/* SPDX-License-Identifier: MIT */
/*
 * verbs_bin_dv.c - gdak's provider libraries (lib/gdak/libmlx5.so.1, part
 * 1, and libefa.so.1), loaded as a program loads them: every name@version
 * of the map file resolves (dlvsym), and the entry points answer as
 * rdma-core's answer for a device that is not theirs - false, NULL with
 * errno EOPNOTSUPP, EOPNOTSUPP, the negative or -1 forms where rdma-core
 * uses them - without touching the objects they are handed (dummies full
 * of 0xff bytes here).
 *
 * When this machine has rdma-core's own library (and objdump), every
 * function it exports must resolve in gdak's at the same version too: a
 * newer rdma-core than the map knows shows up here.
 *
 *   gdak_verbs_bin_dv mlx5|efa <gdak's lib> <its .map>
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/efadv.h>
#include <infiniband/mlx5dv.h>

#include "gdak_test.h"

static void *lib;

static void *sym(const char *name, const char *ver)
{
	void *p = dlvsym(lib, name, ver);

	if (!p)
		gdak_test_fail(__FILE__, __LINE__, "%s@%s not exported: %s", name, ver, dlerror());
	return p;
}

#define GET(name, ver) ((__typeof__(&name))sym(#name, ver))

static const char *prov; /* "mlx5" or "efa" */

/* Every "name;" inside a "VER {" ... "}" node of the map resolves at VER. */
static int check_map(const char *path)
{
	char node[32];
	char line[256], ver[64] = "";
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f) {
		gdak_test_fail(__FILE__, __LINE__, "cannot open %s: %s", path, strerror(errno));
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[128];

		if (strchr(line, '{') && sscanf(line, " %31[A-Z0-9_.]", node) == 1) {
			snprintf(ver, sizeof(ver), "%s", node);
			continue;
		}
		if (*ver && sscanf(line, " %127[A-Za-z0-9_];", name) == 1 &&
		    strcmp(name, "global") && strcmp(name, "local")) {
			CHECK(sym(name, ver) != NULL);
			n++;
		}
	}
	fclose(f);
	return n;
}

/* rdma-core's library as objdump -T lists it: "... DF .text ... VER name" */
static void check_system_lib(void)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu",
					    "/usr/lib/aarch64-linux-gnu", "/usr/lib64" };
	char cmd[256], line[512], path[128];
	int n = 0, found = 0;
	FILE *p;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !found; i++) {
		snprintf(path, sizeof(path), "%s/lib%s.so.1", dirs[i], prov);
		found = !access(path, R_OK);
	}
	if (!found) {
		printf("no rdma-core lib%s.so.1 here: comparison skipped\n", prov);
		return;
	}
	snprintf(cmd, sizeof(cmd), "objdump -T %s 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return;
	while (fgets(line, sizeof(line), p)) {
		char ver[64], name[128];

		if (!strstr(line, " DF .text"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %*s %63s %127s", ver, name) != 2)
			continue;
		if (ver[0] == '(') { /* a hidden (non-default) version: (MLX5_1.0) */
			memmove(ver, ver + 1, strlen(ver));
			ver[strcspn(ver, ")")] = 0;
		}
		CHECK(sym(name, ver) != NULL);
		n++;
	}
	pclose(p);
	if (!n)
		printf("objdump listed nothing for %s: comparison skipped\n", path);
	else
		printf("%d functions of %s resolve in gdak's at their versions\n", n, path);
}

static void check_mlx5_answers(void)
{
	unsigned char junk[4096];
	void *dummy = junk;

	memset(junk, 0xff, sizeof(junk));
	/* the default version of init_obj is 1.2, the 1.0 one stays for old binaries */
	CHECK(dlsym(lib, "mlx5dv_init_obj") == dlvsym(lib, "mlx5dv_init_obj", "MLX5_1.2"));
	CHECK(dlvsym(lib, "mlx5dv_init_obj", "MLX5_1.0") != NULL);
	CHECK(dlsym(lib, "gdak_mlx5dv_init_obj_1_2") == NULL);

	/* the calls perftest imports, and the capability probes around them */
	CHECK(GET(mlx5dv_is_supported, "MLX5_1.8")(dummy) == false);
	errno = 0;
	CHECK(GET(mlx5dv_open_device, "MLX5_1.7")(dummy, dummy) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(GET(mlx5dv_query_device, "MLX5_1.0")(dummy, dummy), EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_create_qp, "MLX5_1.3")(dummy, dummy, dummy) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_create_cq, "MLX5_1.1")(dummy, dummy, dummy) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(GET(mlx5dv_devx_general_cmd, "MLX5_1.7")(dummy, junk, 16, junk, 16), EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_create_mkey, "MLX5_1.10")(dummy) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(GET(mlx5dv_destroy_mkey, "MLX5_1.10")(dummy), EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_qp_ex_from_ibv_qp_ex, "MLX5_1.10")(dummy) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(GET(mlx5dv_crypto_login, "MLX5_1.21")(dummy, dummy), EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_dek_create, "MLX5_1.21")(dummy, dummy) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(GET(mlx5dv_dek_destroy, "MLX5_1.21")(dummy), EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_devx_obj_create, "MLX5_1.7")(dummy, junk, 16, junk, 16) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_devx_umem_reg, "MLX5_1.7")(dummy, junk, sizeof(junk), 0) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(GET(_mlx5dv_query_port, "MLX5_1.19")(dummy, 1, dummy, 64), EOPNOTSUPP);
	CHECK_EQ(GET(mlx5dv_get_clock_info, "MLX5_1.4")(dummy, dummy), EOPNOTSUPP);

	/* init_obj: no object named -> EINVAL, as rdma-core; else not supported */
	{
		__typeof__(&mlx5dv_init_obj) io12 = GET(mlx5dv_init_obj, "MLX5_1.2");
		__typeof__(&mlx5dv_init_obj) io10 = GET(mlx5dv_init_obj, "MLX5_1.0");
		struct mlx5dv_obj obj;
		/* objects of another provider: init_obj reads their context
		 * (as rdma-core does) and finds a device that is not gdak's */
		struct ibv_device fdev;
		struct ibv_context fctx;
		struct ibv_qp fqp;
		struct ibv_cq fcq;
		struct ibv_pd fpd;

		memset(&fdev, 0xff, sizeof(fdev));
		memset(&fctx, 0xff, sizeof(fctx));
		memset(&fqp, 0xff, sizeof(fqp));
		memset(&fcq, 0xff, sizeof(fcq));
		memset(&fpd, 0xff, sizeof(fpd));
		fctx.device = &fdev;
		fqp.context = fcq.context = fpd.context = &fctx;
		memset(&obj, 0xff, sizeof(obj));
		CHECK_EQ(io12(&obj, 0), EINVAL);
		obj.qp.in = &fqp;
		obj.cq.in = &fcq;
		obj.pd.in = &fpd;
		CHECK_EQ(io12(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ), EOPNOTSUPP);
		CHECK_EQ(io10(&obj, MLX5DV_OBJ_CQ), EOPNOTSUPP);
		CHECK_EQ(io12(&obj, MLX5DV_OBJ_PD), EOPNOTSUPP);
		obj.pd.in = NULL;
		CHECK_EQ(io12(&obj, MLX5DV_OBJ_PD), EINVAL);
		CHECK_EQ(io10(NULL, MLX5DV_OBJ_PD), EINVAL);
	}

	/* the forms that are not a positive errno */
	errno = 0;
	CHECK_EQ(GET(mlx5dv_devx_get_event, "MLX5_1.11")(dummy, dummy, 64), -1);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(GET(mlx5dv_qp_cancel_posted_send_wrs, "MLX5_1.20")(dummy, 7), -EOPNOTSUPP);
	CHECK_EQ(GET(mlx5dv_dump_dr_domain, "MLX5_1.12")(NULL, dummy), -EINVAL);
	CHECK_EQ(GET(mlx5dv_dump_dr_domain, "MLX5_1.12")(stderr, dummy), -EOPNOTSUPP);
	errno = 0;
	CHECK_EQ(GET(mlx5dv_dr_domain_sync, "MLX5_1.10")(dummy, 1), EOPNOTSUPP);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_dr_domain_create, "MLX5_1.10")(dummy, MLX5DV_DR_DOMAIN_TYPE_NIC_RX) ==
	      NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(GET(mlx5dv_get_vfio_device_list, "MLX5_1.21")(dummy) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);

	/* void calls return, touching nothing */
	GET(mlx5dv_devx_free_uar, "MLX5_1.7")(dummy);
	GET(mlx5dv_pp_free, "MLX5_1.13")(dummy);
	GET(mlx5dv_dr_domain_allow_duplicate_rules, "MLX5_1.20")(dummy, true);

	/* device-less steering actions exist as in rdma-core, and are freed */
	{
		struct mlx5dv_dr_action *d = GET(mlx5dv_dr_action_create_drop, "MLX5_1.10")();
		struct mlx5dv_dr_action *t = GET(mlx5dv_dr_action_create_tag,
						 "MLX5_1.10")(0x123456);
		__typeof__(&mlx5dv_dr_action_destroy) destroy = GET(mlx5dv_dr_action_destroy,
								    "MLX5_1.10");

		CHECK(d != NULL);
		CHECK(t != NULL);
		if (d)
			CHECK_EQ(destroy(d), 0);
		if (t)
			CHECK_EQ(destroy(t), 0);
		CHECK_EQ(destroy(NULL), EINVAL);
		errno = 0;
		CHECK(GET(mlx5dv_dr_action_create_dest_ibv_qp, "MLX5_1.10")(NULL) == NULL);
		CHECK_EQ(errno, EINVAL);
	}
}

static void check_efa_answers(void)
{
	unsigned char junk[4096];
	void *dummy = junk;

	memset(junk, 0xff, sizeof(junk));
	/* perftest imports these two */
	CHECK_EQ(GET(efadv_query_device, "EFA_1.1")(dummy, dummy, 64), EOPNOTSUPP);
	errno = 0;
	CHECK(GET(efadv_create_qp_ex, "EFA_1.1")(dummy, dummy, dummy, 64) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(GET(efadv_create_driver_qp, "EFA_1.0")(dummy, dummy, 0) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(GET(efadv_query_ah, "EFA_1.1")(dummy, dummy, 64), EOPNOTSUPP);
	errno = 0;
	CHECK(GET(efadv_create_cq, "EFA_1.2")(dummy, dummy, dummy, 64) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
	errno = 0;
	CHECK(GET(efadv_cq_from_ibv_cq_ex, "EFA_1.2")(dummy) == NULL);
	CHECK_EQ(errno, EOPNOTSUPP);
}

int main(int argc, char **argv)
{
	int n;

	if (argc != 4 || (strcmp(argv[1], "mlx5") && strcmp(argv[1], "efa")))
		GDAK_TEST_SKIP("usage: %s mlx5|efa LIB MAPFILE", argv[0]);
	prov = argv[1];
	if (!strcmp(prov, "mlx5")) {
		/* gdak's libmlx5 binds to the libibverbs.so.1 already in the
		 * process, and needs gdak's (its GDAK_PRIVATE_1 entries), as a
		 * program gets it under gdak-run.  A sanitizer build links
		 * rdma-core's into this test; the default build does not. */
		void *sys = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);

		if (sys && !dlvsym(sys, "gdak_ibv_is_device", "GDAK_PRIVATE_1"))
			GDAK_TEST_SKIP("rdma-core's libibverbs.so.1 is already loaded here (this "
				       "build links it): gdak's libmlx5 needs gdak's libibverbs");
	}
	lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
	REQUIRE(lib != NULL);

	n = check_map(argv[3]);
	/* rdma-core 44: libmlx5 128 functions, mlx5dv_init_obj in two
	 * versions; libefa 6 */
	CHECK_EQ(n, !strcmp(prov, "mlx5") ? 129 : 6);
	/* nothing but the rdma-core names leaks out */
	CHECK(dlsym(lib, "not_supported") == NULL);
	CHECK(dlsym(lib, "note") == NULL);
	check_system_lib();
	if (!strcmp(prov, "mlx5"))
		check_mlx5_answers();
	else
		check_efa_answers();
	dlclose(lib);
	return gdak_test_end();
}
