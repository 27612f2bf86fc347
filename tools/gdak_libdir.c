/* SPDX-License-Identifier: MIT */
/* gdak_libdir.c - lib/gdak from the tool's own location (gdak_libdir.h). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdak_libdir.h"

#ifndef GDAK_RUN_REL_LIBDIR
#define GDAK_RUN_REL_LIBDIR "../lib/gdak"
#endif

/* The directory the running executable is in (no trailing slash). */
static int self_dir(char *out, size_t len)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = 0;
	if (strlen(buf) >= len)
		return -1;
	strcpy(out, buf);
	return 0;
}

static int has_libs(const char *dir)
{
	char p[PATH_MAX * 2 + 32];

	snprintf(p, sizeof(p), "%s/libibverbs.so.1", dir);
	return !access(p, R_OK);
}

int gdak_find_libdir(char *out, size_t len)
{
	static const char *const rel[] = { GDAK_RUN_REL_LIBDIR, "../lib/gdak" };
	char self[PATH_MAX], cand[PATH_MAX * 2], real[PATH_MAX];

	if (self_dir(self, sizeof(self))) {
		snprintf(out, len, "(cannot read /proc/self/exe)");
		return -1;
	}
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s/%s", self, rel[i]);
		if (has_libs(cand) && realpath(cand, real) && strlen(real) < len) {
			strcpy(out, real);
			return 0;
		}
	}
	snprintf(out, len, "%s/%s", self, GDAK_RUN_REL_LIBDIR);
	return -1;
}
