/* SPDX-License-Identifier: MIT */
/*
 * core_log.c - logging: $GDAK_LOG parsing, the line format, level filtering
 * and rate limiting (through the test sink, gdak_log_set_sink).
 *
 * $GDAK_LOG is read once before main(), so each value is tried in a child:
 * this program re-runs itself with `--print-level` under that environment.
 * Rate limiting is checked by conservation (lines printed + lines reported as
 * suppressed == lines logged), which holds however slowly the machine runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <gdak/gdak.h>
#include "gdak_log.h"
#include "gdak_test.h"

#define MAXL 64
static char lines[MAXL][512];
static enum gdak_log_level levels[MAXL];
static unsigned n_lines;

static void sink(enum gdak_log_level lvl, const char *line, void *arg)
{
	if (n_lines < MAXL) {
		snprintf(lines[n_lines], sizeof(lines[0]), "%s", line);
		levels[n_lines] = lvl;
	}
	n_lines++;
}

static char self[4096];

/* Run ourselves with GDAK_LOG=value; returns the level the child saw, and
 * what it wrote to stderr in err. */
static int child_level(const char *value, char *err, size_t errlen)
{
	char cmd[4500];
	FILE *p;
	int lvl = -1;

	if (value)
		snprintf(cmd, sizeof(cmd), "GDAK_LOG='%s' '%s' --print-level 2>&1", value, self);
	else
		snprintf(cmd, sizeof(cmd), "env -u GDAK_LOG '%s' --print-level 2>&1", self);
	p = popen(cmd, "r");
	if (!p)
		return -2;
	err[0] = 0;
	while (fgets(cmd, sizeof(cmd), p)) {
		if (sscanf(cmd, "level=%d", &lvl) != 1)
			snprintf(err + strlen(err), errlen - strlen(err), "%s", cmd);
	}
	pclose(p);
	return lvl;
}

static void env_parsing(void)
{
	static const struct { const char *v; int lvl; } cases[] = {
		{"error", GDAK_LOG_ERROR}, {"warn", GDAK_LOG_WARN}, {"info", GDAK_LOG_INFO},
		{"debug", GDAK_LOG_DEBUG}, {"DEBUG", GDAK_LOG_DEBUG}, {"Error", GDAK_LOG_ERROR},
		{"0", GDAK_LOG_ERROR}, {"3", GDAK_LOG_DEBUG}, {"", GDAK_LOG_WARN},
	};
	char err[1024];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = child_level(cases[i].v, err, sizeof(err));
		if (got != cases[i].lvl)
			gdak_test_fail(__FILE__, __LINE__, "GDAK_LOG='%s': level %d, want %d",
				       cases[i].v, got, cases[i].lvl);
		else
			gdak_test_passed++;
		CHECK_STR(err, "");
	}
	/* unset: the default is warn */
	CHECK_EQ(child_level(NULL, err, sizeof(err)), GDAK_LOG_WARN);
	/* a bad value: warn, and say so naming the value and the choices */
	CHECK_EQ(child_level("verbose", err, sizeof(err)), GDAK_LOG_WARN);
	CHECK(strstr(err, "verbose") != NULL);
	CHECK(strstr(err, "error|warn|info|debug") != NULL);
	CHECK_EQ(child_level("4", err, sizeof(err)), GDAK_LOG_WARN);
	CHECK(strstr(err, "'4'") != NULL);
}

static void line_format(void)
{
	char want[512];

	gdak_set_log_level(GDAK_LOG_DEBUG);
	n_lines = 0;
	GDAK_ERR("qp", 0x12, "bad thing %d", 5);
	GDAK_WARN("ctx", 0xabcdef, "w");
	GDAK_INFO("mr", 1, "i");
	GDAK_DBG("cq", 0, "d %s", "x");
	GDAK_ERR(NULL, 0, "no object");
	REQUIRE_EQ(n_lines, 5);
	snprintf(want, sizeof(want), "gdak E qp 0x000012 %s: bad thing 5", __func__);
	CHECK_STR(lines[0], want);
	snprintf(want, sizeof(want), "gdak W ctx 0xabcdef %s: w", __func__);
	CHECK_STR(lines[1], want);
	snprintf(want, sizeof(want), "gdak I mr 0x000001 %s: i", __func__);
	CHECK_STR(lines[2], want);
	snprintf(want, sizeof(want), "gdak D cq 0x000000 %s: d x", __func__);
	CHECK_STR(lines[3], want);
	snprintf(want, sizeof(want), "gdak E %s: no object", __func__);
	CHECK_STR(lines[4], want);
	CHECK_EQ(levels[0], GDAK_LOG_ERROR);
	CHECK_EQ(levels[1], GDAK_LOG_WARN);
	CHECK_EQ(levels[2], GDAK_LOG_INFO);
	CHECK_EQ(levels[3], GDAK_LOG_DEBUG);

	/* a long message is cut, never overflows */
	{
		char big[2000];
		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		n_lines = 0;
		GDAK_ERR("qp", 1, "%s", big);
		CHECK_EQ(n_lines, 1);
		CHECK(strlen(lines[0]) < 512);
		CHECK(!strncmp(lines[0], "gdak E qp 0x000001 ", 19));
	}
}

static void filtering(void)
{
	static const enum gdak_log_level lv[] = {GDAK_LOG_ERROR, GDAK_LOG_WARN, GDAK_LOG_INFO,
						 GDAK_LOG_DEBUG};

	for (int set = 0; set < 4; set++) {
		gdak_set_log_level(lv[set]);
		CHECK_EQ(gdak_get_log_level(), lv[set]);
		n_lines = 0;
		GDAK_ERR("t", 0, "e");
		GDAK_WARN("t", 0, "w");
		GDAK_INFO("t", 0, "i");
		GDAK_DBG("t", 0, "d");
		CHECK_EQ(n_lines, (unsigned)set + 1);
	}
	/* out-of-range levels are clamped */
	gdak_set_log_level((enum gdak_log_level)42);
	CHECK_EQ(gdak_get_log_level(), GDAK_LOG_DEBUG);
	gdak_set_log_level((enum gdak_log_level)-3);
	CHECK_EQ(gdak_get_log_level(), GDAK_LOG_ERROR);
}

static void one_site(int i)
{
	GDAK_ERR_RL("qp", 7, "data-path error %d", i);
}

static void rate_limit(void)
{
	const unsigned total = 3 * GDAK_LOG_RL_BURST + 5;
	unsigned printed = 0, reported = 0;

	gdak_set_log_level(GDAK_LOG_WARN);
	n_lines = 0;
	for (unsigned i = 0; i < total; i++)
		one_site((int)i);
	/* at most one burst per window; the loop is far shorter than a window
	 * on any machine, but count rather than assume */
	CHECK(n_lines >= GDAK_LOG_RL_BURST);
	CHECK(n_lines < total);
	/* A new window reports what the last one suppressed. */
	usleep(1100 * 1000);
	one_site(-1);
	REQUIRE(n_lines <= MAXL);
	for (unsigned i = 0; i < n_lines; i++) {
		unsigned sup;
		const char *p = strstr(lines[i], "one_site: ");

		REQUIRE(p);
		CHECK(!strncmp(lines[i], "gdak ", 5));
		CHECK(strstr(lines[i], " qp 0x000007 ") != NULL);
		if (sscanf(p, "one_site: %u similar messages suppressed", &sup) == 1) {
			reported += sup;
			CHECK_EQ(levels[i], GDAK_LOG_WARN);
		} else {
			printed++;
		}
	}
	/* every message either printed or counted, the extra one included */
	CHECK_EQ(printed + reported, total + 1);
	CHECK(reported > 0);
	/* the last line is the extra message, after the suppression report */
	CHECK(strstr(lines[n_lines - 1], "data-path error -1") != NULL);
	CHECK(strstr(lines[n_lines - 2], "suppressed") != NULL);

	/* below the level, the rate limiter is not even consulted */
	gdak_set_log_level(GDAK_LOG_ERROR);
	n_lines = 0;
	for (int i = 0; i < 50; i++)
		GDAK_WARN_RL("qp", 8, "quiet %d", i);
	CHECK_EQ(n_lines, 0);
}

int main(int argc, char **argv)
{
	ssize_t n;

	if (argc > 1 && !strcmp(argv[1], "--print-level")) {
		printf("level=%d\n", (int)gdak_get_log_level());
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	REQUIRE(n > 0);
	self[n] = 0;

	env_parsing();
	gdak_log_set_sink(sink, NULL);
	line_format();
	filtering();
	rate_limit();
	return gdak_test_end();
}
