/* SPDX-License-Identifier: MIT */
/*
 * core_open.c - gdak_open() and the argument checks of the host API.
 *
 * Unknown devices give -ENODEV and a message naming them; NULL arguments give
 * -EINVAL and a message, on every entry point; $GDAK_DEVICE is honoured.
 * When the NIC model backend opens ("emu"), attribute normalisation and the
 * QP state machine are checked through it too; while it does not, that part
 * reports what it could not test (and says so on stdout).
 */
#include <errno.h>
#include <stdlib.h>
#include <gdak/config.h>
#include <gdak/dev/types.h>
#include <gdak/gdak.h>
#include "gdak_log.h"
#include "gdak_case.h"
#include "gdak_test.h"

static char lines[16][512];
static unsigned n_lines;

static void sink(enum gdak_log_level lvl, const char *line, void *arg)
{
	if (n_lines < 16)
		snprintf(lines[n_lines], sizeof(lines[0]), "%s", line);
	n_lines++;
}

/* 1 when some captured line contains all of the given words. */
static int logged(const char *a, const char *b)
{
	for (unsigned i = 0; i < n_lines && i < 16; i++)
		if (strstr(lines[i], a) && (!b || strstr(lines[i], b)))
			return 1;
	return 0;
}

static void unknown_device(void)
{
	struct gdak_ctx *ctx = (struct gdak_ctx *)&ctx; /* must be reset to NULL */

	n_lines = 0;
	CHECK_EQ(gdak_open("frobnitz0", &ctx), -ENODEV);
	CHECK(ctx == NULL);
	CHECK(logged("frobnitz0", "no backend"));
	CHECK(logged("gdak E ", NULL));

	/* $GDAK_DEVICE is used when the argument is NULL or empty */
	setenv("GDAK_DEVICE", "nosuchdev7", 1);
	n_lines = 0;
	CHECK_EQ(gdak_open(NULL, &ctx), -ENODEV);
	CHECK(logged("nosuchdev7", NULL));
	n_lines = 0;
	CHECK_EQ(gdak_open("", &ctx), -ENODEV);
	CHECK(logged("nosuchdev7", NULL));
	unsetenv("GDAK_DEVICE");

	/* a name longer than the context keeps */
	{
		char longname[200];
		memset(longname, 'x', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = 0;
		n_lines = 0;
		CHECK_EQ(gdak_open(longname, &ctx), -ENAMETOOLONG);
		CHECK(logged("too long", NULL));
	}
#if !GDAK_HW_MLX5
	/* without the hardware backend, the message says how to get it */
	n_lines = 0;
	CHECK_EQ(gdak_open("mlx5_0", &ctx), -ENODEV);
	CHECK(logged("mlx5_0", "GDAK_HW_MLX5"));
#endif
}

static void null_arguments(void)
{
	void *p = &p;
	struct gdak_mr *mr = (struct gdak_mr *)&mr;
	struct gdak_qp *qp = (struct gdak_qp *)&qp;
	struct gdak_qp_info qi;
	struct gdak_qp_error qe;
	struct gdak_dev_qp *dqp = (struct gdak_dev_qp *)&dqp;

	n_lines = 0;
	CHECK_EQ(gdak_open("emu", NULL), -EINVAL);
	CHECK(logged("NULL", NULL));
	CHECK_EQ(gdak_mem_alloc(NULL, 64, GDAK_MEM_HOST, &p), -EINVAL);
	CHECK(p == NULL);
	CHECK_EQ(gdak_mem_free(NULL, NULL), -EINVAL);
	CHECK_EQ(gdak_mr_reg(NULL, &qi, sizeof(qi), GDAK_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	CHECK(mr == NULL);
	CHECK_EQ(gdak_mr_dereg(NULL), -EINVAL);
	CHECK_EQ(gdak_qp_create(NULL, NULL, &qp), -EINVAL);
	CHECK(qp == NULL);
	CHECK_EQ(gdak_qp_destroy(NULL), -EINVAL);
	CHECK_EQ(gdak_qp_info(NULL, &qi), -EINVAL);
	CHECK_EQ(gdak_qp_connect(NULL, &qi), -EINVAL);
	CHECK_EQ(gdak_qp_modify(NULL, GDAK_QPS_INIT, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_export(NULL, &dqp), -EINVAL);
	CHECK(dqp == NULL);
	CHECK_EQ(gdak_qp_query_error(NULL, &qe), -EINVAL);
	CHECK(n_lines >= 10); /* every refusal says why */

	/* getters on NULL are harmless */
	gdak_close(NULL);
	CHECK(gdak_ctx_backend(NULL) == NULL);
	CHECK(gdak_ctx_device(NULL) == NULL);
	CHECK_EQ(gdak_mr_lkey(NULL), 0);
	CHECK_EQ(gdak_mr_rkey(NULL), 0);
	CHECK_EQ(gdak_qp_num(NULL), 0);
	CHECK_EQ(gdak_qp_state(NULL), GDAK_QPS_ERR);
	CHECK_EQ(gdak_mem_kind_of(NULL, NULL), GDAK_MEM_HOST);
}

static void names_and_errors(void)
{
	const char *const *b = gdak_backends();
	int have_emu = 0;

	REQUIRE(b);
	for (; *b; b++)
		have_emu |= !strcmp(*b, "emu");
	CHECK(have_emu);

	CHECK_STR(gdak_qp_state_name(GDAK_QPS_RESET), "RESET");
	CHECK_STR(gdak_qp_state_name(GDAK_QPS_INIT), "INIT");
	CHECK_STR(gdak_qp_state_name(GDAK_QPS_RTR), "RTR");
	CHECK_STR(gdak_qp_state_name(GDAK_QPS_RTS), "RTS");
	CHECK_STR(gdak_qp_state_name(GDAK_QPS_ERR), "ERR");
	CHECK_STR(gdak_qp_state_name((enum gdak_qp_state)99), "INVALID");
	CHECK_STR(gdak_qp_state_name((enum gdak_qp_state)-1), "INVALID");

	CHECK_STR(gdak_strerror(0), "success");
	CHECK_STR(gdak_strerror(-ENODEV), "no such device or backend");
	CHECK_STR(gdak_strerror(ENODEV), "no such device or backend"); /* either sign */
	CHECK_STR(gdak_strerror(-ETIMEDOUT), "timed out");
	CHECK_STR(gdak_strerror(-EIO), "completion with error");
	CHECK(gdak_strerror(-ENOMEM) && *gdak_strerror(-ENOMEM));
	CHECK(gdak_strerror(-12345) != NULL);
}

/* Attribute normalisation and the state machine, through the NIC model. */
static void with_emu(void)
{
	struct gdak_ctx *ctx = NULL;
	struct gdak_qp *qp = NULL;
	struct gdak_qp_attr a;
	struct gdak_qp_info me, peer;
	int ret;

	ret = gdak_open("emu", &ctx);
	if (ret) {
		printf("note: gdak_open(\"emu\") = %d (%s): attribute normalisation and the QP "
		       "state machine were not tested (the NIC model backend is not there yet)\n",
		       ret, gdak_strerror(ret));
		CHECK(ctx == NULL);
		CHECK(logged("emu", NULL)); /* and it said why */
		return;
	}
	CHECK_STR(gdak_ctx_backend(ctx), "emu");
	CHECK_STR(gdak_ctx_device(ctx), "emu");

	/* bad attributes are refused before the backend sees them */
	memset(&a, 0, sizeof(a));
	a.sq_depth = 65536;
	CHECK_EQ(gdak_qp_create(ctx, &a, &qp), -EINVAL);
	a.sq_depth = 0;
	a.mtu = 1500; /* not an IB MTU */
	CHECK_EQ(gdak_qp_create(ctx, &a, &qp), -EINVAL);
	a.mtu = 0;
	a.handler = (enum gdak_dev_db_handler)7;
	CHECK_EQ(gdak_qp_create(ctx, &a, &qp), -EINVAL);
	a.handler = GDAK_DEV_DB_DB;
	a.sharing = (enum gdak_dev_sharing)5;
	CHECK_EQ(gdak_qp_create(ctx, &a, &qp), -EINVAL);
	a.sharing = GDAK_DEV_EXCLUSIVE;
	a.rq_depth = 3;
	a.rq_max_sge = 17;
	CHECK_EQ(gdak_qp_create(ctx, &a, &qp), -EINVAL);

	/* defaults and rounding */
	memset(&a, 0, sizeof(a));
	a.sq_depth = 100;
	a.rq_depth = 3;
	a.nic_thread = -1;
	ret = gdak_qp_create(ctx, &a, &qp);
	CHECK_EQ(ret, 0);
	if (ret) {
		gdak_close(ctx);
		return;
	}
	CHECK_EQ(gdak_qp_state(qp), GDAK_QPS_RESET);
	/* the normalised sizes, as device code sees them (gdak.h: depths round
	 * up to powers of two; CQs default to their queue's depth) */
	{
		struct gdak_dev_qp *dqp = NULL;

		CHECK_EQ(gdak_qp_export(qp, &dqp), 0);
		if (dqp) {
			CHECK_EQ(dqp->version, GDAK_DEV_ABI_VERSION);
			CHECK_EQ(dqp->qpn, gdak_qp_num(qp));
			CHECK_EQ(dqp->sq_wqebb_cnt, 128);
			CHECK_EQ(1u << dqp->sq_log_cnt, 128);
			CHECK_EQ(dqp->scq.ncqe, 128);
			CHECK_EQ(dqp->rq_wqe_cnt, 4);
			CHECK_EQ(dqp->rcq.ncqe, 4);
			CHECK_EQ(dqp->handler, GDAK_DEV_DB_DB);
		}
	}

	/* illegal transitions */
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_RTS, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_RTR, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_modify(qp, (enum gdak_qp_state)9, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_state(qp), GDAK_QPS_RESET);
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_INIT, NULL), 0);
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_RTR, NULL), -EINVAL); /* needs the peer */
	CHECK_EQ(gdak_qp_info(qp, &me), 0);
	CHECK_EQ(me.version, GDAK_QP_INFO_VERSION);
	CHECK_EQ(me.qpn, gdak_qp_num(qp));
	peer = me;
	peer.version = 99;
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_RTR, &peer), -EPROTO);
	CHECK_EQ(gdak_qp_state(qp), GDAK_QPS_INIT);
	/* any state may go to RESET; connect needs RESET */
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_RESET, NULL), 0);
	CHECK_EQ(gdak_qp_connect(qp, &me), 0); /* loop back to itself */
	CHECK_EQ(gdak_qp_state(qp), GDAK_QPS_RTS);
	CHECK_EQ(gdak_qp_connect(qp, &me), -EINVAL); /* not in RESET */
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_INIT, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_ERR, NULL), 0);
	CHECK_EQ(gdak_qp_state(qp), GDAK_QPS_ERR);
	CHECK_EQ(gdak_qp_modify(qp, GDAK_QPS_RTS, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_destroy(qp), 0);

	/* NULL attributes: every default */
	qp = NULL;
	CHECK_EQ(gdak_qp_create(ctx, NULL, &qp), 0);
	if (qp) {
		struct gdak_dev_qp *dqp = NULL;

		CHECK_EQ(gdak_qp_export(qp, &dqp), 0);
		if (dqp) {
			CHECK_EQ(dqp->sq_wqebb_cnt, 256);
			CHECK_EQ(dqp->scq.ncqe, 256);
			CHECK(dqp->rq_buf == NULL); /* no receive queue by default */
		}
		CHECK_EQ(gdak_qp_destroy(qp), 0);
	}
	gdak_close(ctx);
}

static const struct gdak_case cases[] = { GDAK_CASE(unknown_device), GDAK_CASE(null_arguments),
					  GDAK_CASE(names_and_errors), GDAK_CASE(with_emu) };

int main(int argc, char **argv)
{
	gdak_log_set_sink(sink, NULL);
	return GDAK_TEST_CASES(argc, argv, cases);
}
