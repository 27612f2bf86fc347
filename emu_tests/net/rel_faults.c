/* SPDX-License-Identifier: MIT */
/*
 * rel_faults.c - fault injection (GDAK_FAULTS / gdak_nic_set_faults) aimed
 * at device code written with the device API (gdak/dev/dev.h, host threads
 * as the device), against the NIC model:
 *
 *   - an error CQE with each syndrome on the Nth WQE of a QP: the device's
 *     wait for a ticket past N returns -EIO with that syndrome and WQE
 *     index, earlier tickets 0; posting fails fast afterwards; the host's
 *     gdak_qp_query_error names the syndrome and rule "injected";
 *   - delayed completions: the data is there, the CQE held back, a bounded
 *     wait says -ETIMEDOUT (never a silent hang), and it completes once the
 *     delay ends;
 *   - a device program that mishandles error CQEs - it waits for a success
 *     CQE and treats an error CQE as "not yet" - ends in its watchdog; the
 *     diagnosis is there: QP in ERR, query_error names syndrome, WQE and
 *     rule; the device API's sticky error gives the same at once, so the
 *     correct program never waits at all.
 *
 * With argument "env": GDAK_FAULTS from the environment (read at the first
 * gdak_open) fails WQE 1 of every QP with REMOTE_OP (CTest sets it).
 */
#include <errno.h>

#include <gdak/dev/dev.h>

#include "rel_util.h"

#define LONG_NS 10000000000ull	/* bound on waits that must succeed */

static struct rel_env E;

static const char *const syndromes[] = {
	"LOCAL_LENGTH", "LOCAL_QP_OP", "LOCAL_PROT", "BAD_RESP", "LOCAL_ACCESS",
	"REMOTE_INVAL_REQ", "REMOTE_ACCESS", "REMOTE_OP", "TRANSPORT_RETRY_EXC",
	"RNR_RETRY_EXC", "REMOTE_ABORTED",
};

/* "err:qp=Q,wqe=N,syndrome=S" / "delay:qp=Q,wqe=N,passes=P" */
static void set_fault(const char *kind, uint32_t qpn, unsigned wqe, const char *arg)
{
	char spec[160];

	snprintf(spec, sizeof(spec), "%s:qp=%u,wqe=%u,%s=%s", kind, qpn, wqe,
		 strcmp(kind, "err") ? "passes" : "syndrome", arg);
	REQUIRE_EQ(gdak_nic_set_faults(spec), 0);
}

static struct gdak_dev_sge sge(void *p, uint32_t len)
{
	struct gdak_dev_sge s = {(uint64_t)(uintptr_t)p, len, gdak_mr_lkey(E.ma)};
	return s;
}

/* Error CQE with syndrome s on WQE n (each put is one WQEBB: WQE n is put n). */
static void case_err(const char *sname, unsigned n)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b;
	struct gdak_dev_qp *d;
	struct gdak_dev_cqe err = {0};
	struct gdak_qp_error qe;
	uint64_t t[8];
	int want = gdak_mlx5_syndrome_from_name(sname);

	REQUIRE(want > 0);
	rel_pair(&E, &at, &a, &b);
	d = a.d;
	set_fault("err", a.qpn, n, sname);
	for (unsigned i = 0; i < 8; i++) {
		struct gdak_dev_sge s = sge(E.la + i * 64, 64);
		REQUIRE_EQ(gdak_dev_put(d, &s, (uintptr_t)(E.lb + i * 64), gdak_mr_rkey(E.mb), 0, &t[i]),
			   0);
	}
	memset(&err, 0, sizeof(err));
	/* the failed WQE's ticket: -EIO with the syndrome and the WQE */
	CHECK_EQ(gdak_dev_wait_timeout(d, t[n], LONG_NS, &err), -EIO);
	CHECK_EQ(err.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(err.syndrome, want);
	CHECK_EQ(err.wqe_index, n);
	CHECK_EQ(err.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	/* the ones before it completed */
	if (n)
		CHECK_EQ(gdak_dev_wait_timeout(d, t[n - 1], LONG_NS, NULL), 0);
	/* later work: the same error at once, and posting fails fast */
	CHECK_EQ(gdak_dev_wait_timeout(d, t[7], LONG_NS, NULL), -EIO);
	{
		struct gdak_dev_sge s = sge(E.la, 8);
		CHECK_EQ(gdak_dev_put(d, &s, (uintptr_t)E.lb, gdak_mr_rkey(E.mb), 0, NULL), -EIO);
	}
	CHECK_EQ(nu_wait_state(&a, GDAK_QPS_ERR, 10000), 0);
	gdak_qp_query_error(a.qp, &qe);
	CHECK_EQ(qe.syndrome, want);
	CHECK_EQ(qe.wqe_index, n);
	CHECK_STR(qe.rule, "injected");
	CHECK(strstr(qe.text, gdak_mlx5_syndrome_name((uint8_t)want)) != NULL);
	REQUIRE_EQ(gdak_nic_set_faults(NULL), 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* A CQE held back: data there, CQE not; bounded wait -ETIMEDOUT; released
 * when the fault is cleared.  passes = a number no run reaches. */
static void case_delay_held(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b;
	struct gdak_dev_qp *d;
	struct gdak_dev_sge s = sge(E.la, 64);
	uint64_t t;
	unsigned w = 0;

	rel_pair(&E, &at, &a, &b);
	d = a.d;
	set_fault("delay", a.qpn, 0, "4000000000");
	gdak_test_fill(E.la, 64, 9);
	memset(E.lb, 0, 64);
	REQUIRE_EQ(gdak_dev_put(d, &s, (uintptr_t)E.lb, gdak_mr_rkey(E.mb), GDAK_DEV_WQE_SIGNAL, &t),
		   0);
	/* executed (the counter; the bytes are read only after the CQE, which
	 * is what orders them) ... */
	for (;;) {
		struct gdak_nic_stats st;
		gdak_nic_qp_stats(a.qp, &st);
		if (st.wqes == 1 || w++ > 10000)
			break;
		rel_sleep_ms(1);
	}
	CHECK(w <= 10000);
	/* ... not completed */
	CHECK_EQ(gdak_dev_wait_timeout(d, t, 20000000, NULL), -ETIMEDOUT);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	CHECK_EQ(gdak_dev_cq_error(&d->scq, NULL), 0);
	REQUIRE_EQ(gdak_nic_set_faults(NULL), 0);
	CHECK_EQ(gdak_dev_wait_timeout(d, t, LONG_NS, NULL), 0);
	CHECK_MEM(E.lb, E.la, 64);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* A short delay on WQE 2 of 4: everything completes, in order. */
static void case_delay_short(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b;
	struct gdak_mlx5_cqe_fields f;

	rel_pair(&E, &at, &a, &b);
	set_fault("delay", a.qpn, 2, "50");
	for (unsigned i = 0; i < 4; i++)
		nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, E.la, 64, gdak_mr_lkey(E.ma),
			     (uintptr_t)E.lb, gdak_mr_rkey(E.mb), 0, NU_SIG);
	nu_ring(&a);
	for (unsigned i = 0; i < 4; i++) {
		REQUIRE_EQ(nu_poll(&a, 0, &f, 10000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
		CHECK_EQ(f.wqe_counter, i);
	}
	REQUIRE_EQ(gdak_nic_set_faults(NULL), 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

/*
 * The buggy device program: it waits for "its" CQE to become a success and
 * treats anything else as not yet.  Only a watchdog (here 300 ms; on a GPU
 * the kernel's own bound) ends it.  Returns -ETIMEDOUT, or 0 on success.
 */
static int buggy_wait(struct gdak_dev_qp *d, uint64_t n_cqe, uint64_t watchdog_ns)
{
	const uint8_t *c = (const uint8_t *)gdak_dev_cqe_ptr(&d->scq, n_cqe);
	uint64_t end = gdak_dev_now_ns() + watchdog_ns;

	for (;;) {
		uint8_t op_own = __atomic_load_n(c + 63, __ATOMIC_ACQUIRE);
		/* BUG: an error CQE (opcode 13) is owned by software too, but
		 * only opcode REQ counts as "done" here */
		if (gdak_mlx5_cqe_is_sw_owned(op_own, n_cqe, d->scq.ncqe) &&
		    (op_own >> 4) == MLX5_CQE_REQ)
			return 0;
		if (gdak_dev_now_ns() > end)
			return -ETIMEDOUT;
		rel_sleep_ms(1);
	}
}

static void case_mishandled_error(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct nu_qp a, b;
	struct gdak_dev_qp *d;
	struct gdak_dev_sge s = sge(E.la, 64);
	struct gdak_qp_error qe;
	struct gdak_dev_cqe err = {0};
	uint64_t t;

	rel_pair(&E, &at, &a, &b);
	d = a.d;
	set_fault("err", a.qpn, 0, "REMOTE_ACCESS");
	REQUIRE_EQ(gdak_dev_put(d, &s, (uintptr_t)E.lb, gdak_mr_rkey(E.mb), GDAK_DEV_WQE_SIGNAL, &t),
		   0);
	/* the buggy program hangs until its watchdog ... */
	CHECK_EQ(buggy_wait(d, 0, 300000000ull), -ETIMEDOUT);
	/* ... and the diagnosis is waiting for whoever looks: */
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_ERR);
	gdak_qp_query_error(a.qp, &qe);
	CHECK_EQ(qe.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(qe.wqe_index, 0);
	CHECK_EQ(qe.opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_STR(qe.rule, "injected");
	printf("mishandled error CQE: watchdog after 300 ms; gdak_qp_query_error: %s\n", qe.text);
	/* the device API's wait on the same QP reports it at once: -EIO, not
	 * a timeout, however often a careless caller retries */
	for (int i = 0; i < 100; i++) {
		memset(&err, 0, sizeof(err));
		if (gdak_dev_wait_timeout(d, t, LONG_NS, &err) != -EIO ||
		    err.syndrome != MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR || err.wqe_index != 0) {
			gdak_test_fail(__FILE__, __LINE__, "retry %d: wait did not report the error", i);
			break;
		}
	}
	gdak_test_passed++;
	CHECK_EQ(gdak_dev_cq_error(&d->scq, &err), -EIO);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	REQUIRE_EQ(gdak_nic_set_faults(NULL), 0);
	nu_destroy(&a);
	nu_destroy(&b);
}

/* Two faults on two QPs at once, each hits only its own QP. */
static void case_two_qps(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16, .nic_thread = 0};
	struct nu_qp a, b, c, d;
	char spec[200];
	struct gdak_dev_cqe err = {0};
	uint64_t ta = 0, tc = 0;

	rel_pair(&E, &at, &a, &b);
	at.nic_thread = 1;
	rel_pair(&E, &at, &c, &d);
	snprintf(spec, sizeof(spec), "err:qp=%u,wqe=3,syndrome=REMOTE_OP;err:qp=%u,wqe=1,"
		 "syndrome=LOCAL_PROT", a.qpn, c.qpn);
	REQUIRE_EQ(gdak_nic_set_faults(spec), 0);
	for (unsigned i = 0; i < 5; i++) {
		struct gdak_dev_sge s = sge(E.la, 16);
		/* distinct targets: two NIC threads write them at the same time */
		CHECK_EQ(gdak_dev_put(a.d, &s, (uintptr_t)E.lb, gdak_mr_rkey(E.mb), 0, &ta), 0);
		CHECK_EQ(gdak_dev_put(c.d, &s, (uintptr_t)(E.lb + 4096), gdak_mr_rkey(E.mb), 0, &tc),
			 0);
	}
	CHECK_EQ(gdak_dev_wait_timeout(a.d, ta, LONG_NS, &err), -EIO);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
	CHECK_EQ(err.wqe_index, 3);
	CHECK_EQ(gdak_dev_wait_timeout(c.d, tc, LONG_NS, &err), -EIO);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
	CHECK_EQ(err.wqe_index, 1);
	CHECK_EQ(gdak_qp_state(b.qp), GDAK_QPS_RTS);
	CHECK_EQ(gdak_qp_state(d.qp), GDAK_QPS_RTS);
	REQUIRE_EQ(gdak_nic_set_faults(NULL), 0);
	nu_destroy(&a);
	nu_destroy(&b);
	nu_destroy(&c);
	nu_destroy(&d);
}

static int env_mode(void)
{
	struct nu_qp a, b;
	struct gdak_qp_attr at = {.sq_depth = 16};
	struct gdak_dev_cqe err = {0};
	uint64_t t = 0;

	if (!getenv("GDAK_FAULTS"))
		GDAK_TEST_SKIP("GDAK_FAULTS is not set");
	if (!getenv("GDAK_LOG"))
		gdak_set_log_level(GDAK_LOG_ERROR);
	REQUIRE_EQ(gdak_open("emu", &E.ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(E.ctx, 4096, GDAK_MEM_HOST, (void **)&E.la), 0);
	REQUIRE_EQ(gdak_mr_reg(E.ctx, E.la, 4096, GDAK_ACCESS_ALL, &E.ma), 0);
	REQUIRE_EQ(nu_pair(E.ctx, &at, &a, &b), 0);
	for (unsigned i = 0; i < 3; i++) {
		struct gdak_dev_sge s = sge(E.la, 16);
		CHECK_EQ(gdak_dev_put(a.d, &s, (uintptr_t)(E.la + 1024), gdak_mr_rkey(E.ma), 0, &t), 0);
	}
	CHECK_EQ(gdak_dev_wait_timeout(a.d, t, LONG_NS, &err), -EIO);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
	CHECK_EQ(err.wqe_index, 1);
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(E.ma);
	gdak_mem_free(E.ctx, E.la);
	gdak_close(E.ctx);
	return gdak_test_end();
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "env"))
		return env_mode();
	rel_env_open(&E, 2);
	for (size_t i = 0; i < sizeof(syndromes) / sizeof(syndromes[0]); i++) {
		case_err(syndromes[i], (unsigned)(i % 4));
		rel_bystanders_ok(&E);
	}
	case_delay_held();
	case_delay_short();
	rel_bystanders_ok(&E);
	case_mishandled_error();
	case_two_qps();
	rel_bystanders_ok(&E);
	rel_env_close(&E);
	return gdak_test_end();
}
