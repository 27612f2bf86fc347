/* SPDX-License-Identifier: MIT */
/*
 * rel_api.c - host API misuse: NULL arguments to every call, out-of-range
 * attributes, illegal QP state transitions, malformed peer info, unknown
 * devices, memory that was never allocated, bad fault specs, NIC settings
 * out of range or at the wrong time.  Each gets its documented return code
 * (gdak.h: 0 or a negative errno, with a log line naming the problem), out
 * pointers are cleared, and the context goes on working (bystanders).
 *
 * Not covered, by the nature of a C API: handles used after they were
 * destroyed (double gdak_qp_destroy / gdak_mr_dereg of the same pointer)
 * are undefined behaviour, as in libibverbs.
 */
#include <errno.h>

#include "rel_util.h"
#include "gdak_case.h"

static struct rel_env E;

static void case_null(void)
{
	struct gdak_ctx *c = (void *)1;
	struct gdak_qp *q = (void *)1;
	struct gdak_mr *m = (void *)1;
	struct gdak_dev_qp *d = (void *)1;
	struct gdak_qp_info info;
	struct gdak_qp_error err;
	void *p = (void *)1;
	uint8_t wire[GDAK_QP_INFO_WIRE_SIZE] = {0};

	CHECK_EQ(gdak_open("emu", NULL), -EINVAL);
	CHECK_EQ(gdak_open("nosuchdevice", &c), -ENODEV);
	CHECK(c == NULL);
	CHECK_EQ(gdak_open("emu:nosuchtransport", &c), -ENODEV);
	CHECK(c == NULL);
	{
		char longname[300];
		memset(longname, 'e', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = 0;
		CHECK_EQ(gdak_open(longname, &c), -ENAMETOOLONG);
	}
	gdak_close(NULL); /* no-op */
	CHECK(gdak_ctx_backend(NULL) == NULL);
	CHECK(gdak_ctx_device(NULL) == NULL);

	CHECK_EQ(gdak_mem_alloc(NULL, 64, GDAK_MEM_HOST, &p), -EINVAL);
	CHECK(p == NULL);
	CHECK_EQ(gdak_mem_alloc(E.ctx, 64, GDAK_MEM_HOST, NULL), -EINVAL);
	CHECK_EQ(gdak_mem_alloc(E.ctx, 0, GDAK_MEM_HOST, &p), -EINVAL);
	CHECK_EQ(gdak_mem_alloc(E.ctx, 64, (enum gdak_mem_kind)7, &p), -EINVAL);
	CHECK_EQ(gdak_mem_free(NULL, E.la), -EINVAL);
	CHECK_EQ(gdak_mem_free(E.ctx, NULL), 0);
	{
		int x;
		CHECK_EQ(gdak_mem_free(E.ctx, &x), -EINVAL); /* never allocated here */
	}
	CHECK_EQ(gdak_mem_free(E.ctx, E.la + 8), -EINVAL); /* not the start */

	CHECK_EQ(gdak_mr_reg(NULL, E.la, 64, GDAK_ACCESS_ALL, &m), -EINVAL);
	CHECK(m == NULL);
	CHECK_EQ(gdak_mr_reg(E.ctx, E.la, 64, GDAK_ACCESS_ALL, NULL), -EINVAL);
	CHECK_EQ(gdak_mr_reg(E.ctx, NULL, 64, GDAK_ACCESS_ALL, &m), -EINVAL);
	CHECK_EQ(gdak_mr_reg(E.ctx, E.la, 64, 0x100, &m), -EINVAL);
	CHECK_EQ(gdak_mr_reg(E.ctx, E.la, 64, GDAK_ACCESS_REMOTE_WRITE, &m), -EINVAL);
	CHECK_EQ(gdak_mr_reg(E.ctx, (void *)(uintptr_t)-4096, 8192, GDAK_ACCESS_LOCAL_WRITE, &m),
		 -EINVAL);
	CHECK_EQ(gdak_mr_dereg(NULL), -EINVAL);
	CHECK_EQ(gdak_mr_lkey(NULL), 0);
	CHECK_EQ(gdak_mr_rkey(NULL), 0);

	CHECK_EQ(gdak_qp_create(NULL, NULL, &q), -EINVAL);
	CHECK(q == NULL);
	CHECK_EQ(gdak_qp_create(E.ctx, NULL, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_destroy(NULL), -EINVAL);
	CHECK_EQ(gdak_qp_info(NULL, &info), -EINVAL);
	CHECK_EQ(gdak_qp_connect(NULL, &info), -EINVAL);
	CHECK_EQ(gdak_qp_modify(NULL, GDAK_QPS_ERR, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_state(NULL), GDAK_QPS_ERR);
	CHECK_EQ(gdak_qp_num(NULL), 0);
	CHECK_EQ(gdak_qp_export(NULL, &d), -EINVAL);
	CHECK(d == NULL);
	CHECK_EQ(gdak_qp_query_error(NULL, &err), -EINVAL);
	CHECK_EQ(gdak_qp_info_unpack(NULL, &info), -EINVAL);
	CHECK_EQ(gdak_qp_info_unpack(wire, NULL), -EINVAL);
	CHECK_STR(gdak_qp_state_name((enum gdak_qp_state)99), "INVALID");
	CHECK(gdak_strerror(-EIO) != NULL);
	CHECK(gdak_strerror(-12345) != NULL);
	rel_bystanders_ok(&E);
}

static void case_attrs(void)
{
	static const struct gdak_qp_attr bad[] = {
		{.sq_depth = 65536},
		{.cq_depth = 1u << 23},
		{.rq_depth = 65536},
		{.rq_depth = 4, .rq_max_sge = 17},
		{.handler = (enum gdak_dev_db_handler)3},
		{.sharing = (enum gdak_dev_sharing)2},
		{.mtu = 1500}, /* the "1500-byte network" pitfall: MTUs are IB sizes */
		{.mtu = 8192},
	};
	struct gdak_qp *q;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q = (void *)1;
		CHECK_EQ(gdak_qp_create(E.ctx, &bad[i], &q), -EINVAL);
		CHECK(q == NULL);
	}
	/* a NIC thread that does not exist: a documented choice, not a crash */
	{
		struct gdak_qp_attr at = {.nic_thread = 1000};
		int rc = gdak_qp_create(E.ctx, &at, &q);
		CHECK(rc == 0 || rc == -EINVAL);
		if (!rc)
			CHECK_EQ(gdak_qp_destroy(q), 0);
	}
	rel_bystanders_ok(&E);
}

static void case_transitions(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct gdak_qp *a, *b;
	struct gdak_qp_info ia, ib, bad;
	uint8_t wire[GDAK_QP_INFO_WIRE_SIZE];

	REQUIRE_EQ(gdak_qp_create(E.ctx, &at, &a), 0);
	REQUIRE_EQ(gdak_qp_create(E.ctx, &at, &b), 0);
	REQUIRE_EQ(gdak_qp_info(a, &ia), 0);
	REQUIRE_EQ(gdak_qp_info(b, &ib), 0);
	CHECK_EQ(gdak_qp_state(a), GDAK_QPS_RESET);
	/* skipping states */
	CHECK_EQ(gdak_qp_modify(a, GDAK_QPS_RTS, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_modify(a, GDAK_QPS_RTR, &ib), -EINVAL);
	CHECK_EQ(gdak_qp_modify(a, (enum gdak_qp_state)9, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_state(a), GDAK_QPS_RESET);
	REQUIRE_EQ(gdak_qp_modify(a, GDAK_QPS_INIT, NULL), 0);
	/* INIT -> RTR needs the peer, of the right version */
	CHECK_EQ(gdak_qp_modify(a, GDAK_QPS_RTR, NULL), -EINVAL);
	bad = ib;
	bad.version = 99;
	CHECK_EQ(gdak_qp_modify(a, GDAK_QPS_RTR, &bad), -EPROTO);
	CHECK_EQ(gdak_qp_modify(a, GDAK_QPS_RTS, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_state(a), GDAK_QPS_INIT);
	/* connect needs RESET */
	CHECK_EQ(gdak_qp_connect(a, &ib), -EINVAL);
	REQUIRE_EQ(gdak_qp_modify(a, GDAK_QPS_RESET, NULL), 0);
	REQUIRE_EQ(gdak_qp_connect(a, &ib), 0);
	REQUIRE_EQ(gdak_qp_connect(b, &ia), 0);
	CHECK_EQ(gdak_qp_connect(a, &ib), -EINVAL); /* twice */
	CHECK_EQ(gdak_qp_modify(a, GDAK_QPS_INIT, NULL), -EINVAL); /* RTS -> INIT */
	CHECK_EQ(gdak_qp_state(a), GDAK_QPS_RTS);
	/* ERR: only RESET (or ERR) leads out */
	REQUIRE_EQ(gdak_qp_modify(a, GDAK_QPS_ERR, NULL), 0);
	CHECK_EQ(gdak_qp_modify(a, GDAK_QPS_RTS, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_connect(a, &ib), -EINVAL);
	CHECK_EQ(gdak_qp_modify(a, GDAK_QPS_ERR, NULL), 0);
	CHECK_EQ(gdak_qp_state(a), GDAK_QPS_ERR);
	{
		struct gdak_qp_error e;
		CHECK_EQ(gdak_qp_query_error(a, &e), 0);
		CHECK_EQ(e.state, GDAK_QPS_ERR);
		CHECK(e.text[0] != 0);
	}
	/* peer info on the wire: damaged records are refused */
	gdak_qp_info_pack(&ib, wire);
	wire[0] ^= 1;
	CHECK_EQ(gdak_qp_info_unpack(wire, &bad), -EPROTO);
	gdak_qp_info_pack(&ib, wire);
	wire[7] = GDAK_QP_INFO_VERSION + 1; /* a version this build does not speak */
	CHECK_EQ(gdak_qp_info_unpack(wire, &bad), -EPROTO);
	gdak_qp_info_pack(&ib, wire);
	wire[8] = 0x7f; /* QPN over 24 bits */
	CHECK_EQ(gdak_qp_info_unpack(wire, &bad), -EPROTO);
	gdak_qp_info_pack(&ib, wire);
	CHECK_EQ(gdak_qp_info_unpack(wire, &bad), 0);
	CHECK_EQ(bad.qpn, ib.qpn);
	CHECK_EQ(gdak_qp_destroy(a), 0);
	CHECK_EQ(gdak_qp_destroy(b), 0);
	rel_bystanders_ok(&E);
}

static void case_nic_settings(void)
{
	CHECK_EQ(gdak_nic_set_threads(0), -EINVAL);
	CHECK_EQ(gdak_nic_set_threads(65), -EINVAL);
	CHECK_EQ(gdak_nic_set_threads(3), -EBUSY); /* contexts are open */
	CHECK_EQ(gdak_nic_get_threads(), E.nthreads);
	CHECK_EQ(gdak_nic_set_poll((enum gdak_nic_poll)5), -EINVAL);
	CHECK_EQ(gdak_nic_set_faults("garbage"), -EINVAL);
	CHECK_EQ(gdak_nic_set_faults("err:qp=1,wqe=2"), -EINVAL);		/* no syndrome */
	CHECK_EQ(gdak_nic_set_faults("err:qp=1,wqe=2,syndrome=NOPE"), -EINVAL);
	CHECK_EQ(gdak_nic_set_faults("err:qp=1,syndrome=REMOTE_ACCESS"), -EINVAL); /* no wqe */
	CHECK_EQ(gdak_nic_set_faults("delay:qp=1,wqe=2,passes=x"), -EINVAL);
	CHECK_EQ(gdak_nic_set_faults("err:qp=1,wqe=2,syndrome=REMOTE_ACCESS,bogus=1"), -EINVAL);
	{
		char big[4096];
		memset(big, ';', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		memcpy(big, "delay:wqe=1,passes=1", 20);
		CHECK_EQ(gdak_nic_set_faults(big), 0); /* empty rules are skipped */
		for (size_t i = 0; i + 21 < sizeof(big); i += 21)
			memcpy(big + i, "delay:wqe=1,passes=1;", 21);
		CHECK_EQ(gdak_nic_set_faults(big), -EINVAL); /* more than the table holds */
	}
	CHECK_EQ(gdak_nic_set_faults(NULL), 0);
	CHECK_EQ(gdak_nic_set_faults(""), 0);
	CHECK_EQ(gdak_nic_qp_stats(NULL, NULL), -EINVAL);
	rel_bystanders_ok(&E);
}

static const struct gdak_case cases[] = { GDAK_CASE(case_null), GDAK_CASE(case_attrs),
					  GDAK_CASE(case_transitions),
					  GDAK_CASE(case_nic_settings) };

int main(int argc, char **argv)
{
	rel_env_open(&E, 2);
	GDAK_TEST_RUN_CASES(argc, argv, cases);
	rel_env_close(&E);
	return gdak_test_end();
}
