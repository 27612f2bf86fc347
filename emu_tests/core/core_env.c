/* SPDX-License-Identifier: MIT */
/*
 * core_env.c - the configuration table (gdak/env.h): every row well formed
 * and its default allowed by its own rule; typed reads from the
 * environment, the default, and a bad value (logged naming variable, value
 * and what is allowed); gdak_open refusing a bad environment whichever
 * backend would have read the variable, and opening again once it is fixed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/env.h>
#include <gdak/gdak.h>

#include "gdak_log.h"
#include "gdak_case.h"
#include "gdak_test.h"

static char last[512];
static unsigned n_err;

static void sink(enum gdak_log_level lvl, const char *line, void *arg)
{
	(void)arg;
	if (lvl == GDAK_LOG_ERROR) {
		snprintf(last, sizeof(last), "%s", line);
		n_err++;
	}
}

static void table_rows(void)
{
	size_t n;
	const struct gdak_env_var *t = gdak_env_table(&n);

	REQUIRE(n >= 30);
	for (size_t i = 0; i < n; i++) {
		CHECK(!strncmp(t[i].name, "GDAK_", 5));
		CHECK(t[i].doc && *t[i].doc);
		CHECK(t[i].area && *t[i].area);
		CHECK(t[i].def != NULL);
		/* a default the rule refuses would make every unset read fail */
		if (*t[i].def && gdak_env_check_value(&t[i], t[i].def))
			gdak_test_fail(__FILE__, __LINE__,
				       "%s: default '%s' not allowed by its row", t[i].name,
				       t[i].def);
		if (t[i].type == GDAK_ENV_UINT)
			CHECK(t[i].min <= t[i].max);
		if (t[i].type == GDAK_ENV_CHOICE)
			CHECK(t[i].choices && strchr(t[i].choices, '|'));
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t[i].name, t[j].name))
				gdak_test_fail(__FILE__, __LINE__, "%s twice", t[i].name);
		CHECK(gdak_env_find(t[i].name) == &t[i]);
	}
	CHECK(gdak_env_find("GDAK_NO_SUCH_VARIABLE") == NULL);
}

/* Read name as its row's type: the reader's return, the value in *v. */
static int read_typed(const char *name, unsigned long long *v)
{
	const struct gdak_env_var *row = gdak_env_find(name);
	int b = 7, ret;

	REQUIRE(row);
	if (row->type == GDAK_ENV_UINT)
		return gdak_env_uint(name, v);
	if (row->type == GDAK_ENV_BOOL)
		ret = gdak_env_bool(name, &b);
	else
		ret = gdak_env_choice(name, &b);
	*v = (unsigned long long)b;
	return ret;
}

static void typed_reads(void)
{
	/* value NULL: unset, when the reader returns 1 and the default */
	static const struct {
		const char *name, *value;
		int ret;
		unsigned long long want;
	} reads[] = {
		{ "GDAK_NIC_THREADS", NULL, 1, 1 }, { "GDAK_NIC_THREADS", "12", 0, 12 },
		{ "GDAK_STRICT", "off", 0, 0 },	    { "GDAK_STRICT", "TRUE", 0, 1 },
		{ "GDAK_STRICT", NULL, 1, 1 },	    { "GDAK_POLL", "Spin", 0, 1 },
		{ "GDAK_POLL", NULL, 1, 0 },
	};
	unsigned long long u = 99;

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		unsigned long long v = 99;

		if (reads[i].value)
			setenv(reads[i].name, reads[i].value, 1);
		else
			unsetenv(reads[i].name);
		CHECK_EQ(read_typed(reads[i].name, &v), reads[i].ret);
		if (v != reads[i].want)
			gdak_test_fail(__FILE__, __LINE__, "%s=%s: read %llu, want %llu",
				       reads[i].name, reads[i].value ? reads[i].value : "(unset)",
				       v, reads[i].want);
		unsetenv(reads[i].name);
	}

	/* empty is unset */
	setenv("GDAK_TRACE", "", 1);
	CHECK(gdak_env_raw("GDAK_TRACE") == NULL);
	CHECK(gdak_env_text("GDAK_TRACE") == NULL);
	unsetenv("GDAK_TRACE");
	CHECK_STR(gdak_env_text("GDAK_DEVICE") ? gdak_env_text("GDAK_DEVICE") : "", "emu");

	/* a name outside the table, or read as the wrong type, is a bug: -ENOENT */
	CHECK_EQ(gdak_env_uint("GDAK_NO_SUCH_VARIABLE", &u), (uint64_t)-ENOENT);
	CHECK_EQ(gdak_env_uint("GDAK_STRICT", &u), (uint64_t)-ENOENT);
}

static void bad_values(void)
{
	static const struct {
		const char *name, *value, *allowed;
	} bad[] = {
		{ "GDAK_NIC_THREADS", "0", "1..64" },
		{ "GDAK_NIC_THREADS", "65", "1..64" },
		{ "GDAK_NIC_THREADS", "-1", "1..64" },
		{ "GDAK_NIC_THREADS", "3x", "1..64" },
		{ "GDAK_NIC_THREADS", "99999999999999999999", "1..64" },
		{ "GDAK_UDP_WINDOW", "0", "1..65536" },
		{ "GDAK_STRICT", "maybe", "0|1" },
		{ "GDAK_POLL", "fast", "adaptive|spin" },
		{ "GDAK_TRACE_FULL", "block", "wait|drop" },
		{ "GDAK_UDP_RETRY", "8", "0|1|2|3|4|5|6|7|forever" },
	};
	unsigned long long u;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct gdak_env_var *row = gdak_env_find(bad[i].name);
		char want[256];
		int ret;

		REQUIRE(row);
		setenv(bad[i].name, bad[i].value, 1);
		n_err = 0;
		last[0] = 0;
		ret = read_typed(bad[i].name, &u);
		CHECK_EQ(ret, (uint64_t)-EINVAL);
		CHECK_EQ(n_err, 1);
		snprintf(want, sizeof(want), "%s='%s' is not allowed: want %s", bad[i].name,
			 bad[i].value, bad[i].allowed);
		if (!strstr(last, want))
			gdak_test_fail(__FILE__, __LINE__, "log '%s' lacks '%s'", last, want);
		CHECK_EQ(gdak_env_validate(), (uint64_t)-EINVAL);
		unsetenv(bad[i].name);
	}
	n_err = 0;
	CHECK_EQ(gdak_env_validate(), 0);
	CHECK_EQ(n_err, 0);
}

static void open_refuses_bad_env(void)
{
	struct gdak_ctx *ctx = (struct gdak_ctx *)1;

	/* a udp-only variable refuses "emu" (loop) too: the mistake is the
	 * user's whatever the device */
	setenv("GDAK_UDP_WINDOW", "lots", 1);
	n_err = 0;
	CHECK_EQ(gdak_open("emu", &ctx), (uint64_t)-EINVAL);
	CHECK(ctx == NULL);
	CHECK(n_err >= 2);
	CHECK(strstr(last, "cannot open 'emu': bad environment") != NULL);
	unsetenv("GDAK_UDP_WINDOW");
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	gdak_close(ctx);
}

static const struct gdak_case cases[] = { GDAK_CASE(table_rows), GDAK_CASE(typed_reads),
					  GDAK_CASE(bad_values), GDAK_CASE(open_refuses_bad_env) };

int main(int argc, char **argv)
{
	gdak_log_set_sink(sink, NULL);
	return GDAK_TEST_CASES(argc, argv, cases);
}
