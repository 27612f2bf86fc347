/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "gdak_case.h"
#include "gdak_test.h"

const char *gdak_test_case;

static const struct gdak_case *find(const struct gdak_case *cases, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(cases[i].name, name))
			return &cases[i];
	return NULL;
}

static void run(const struct gdak_case *c, const char **failed, size_t *nfailed)
{
	unsigned before = gdak_test_failed;

	gdak_test_case = c->name;
	c->fn();
	gdak_test_case = NULL;
	if (gdak_test_failed != before)
		failed[(*nfailed)++] = c->name;
}

int gdak_test_all_cases;

int gdak_test_cases_run(int argc, char **argv, const struct gdak_case *cases, size_t n)
{
	const char *failed[256];
	size_t nfailed = 0, picked = 0;

	if (n > sizeof(failed) / sizeof(failed[0])) {
		fprintf(stderr, "gdak_test_cases: %zu cases, at most %zu\n", n,
			sizeof(failed) / sizeof(failed[0]));
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--list")) {
			for (size_t k = 0; k < n; k++)
				printf("%s\n", cases[k].name);
			return 0;
		}
		if (strncmp(argv[i], "--", 2))
			continue; /* the test's own arguments */
		if (strcmp(argv[i], "--case") || i + 1 >= argc) {
			fprintf(stderr, "usage: %s [--list] [--case NAME]...\n", argv[0]);
			return 2;
		}
		if (!find(cases, n, argv[++i])) {
			fprintf(stderr, "%s: no case '%s' (--list names them)\n", argv[0], argv[i]);
			return 2;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--case") && i + 1 < argc) {
			run(find(cases, n, argv[++i]), failed, &nfailed);
			picked++;
		}
	}
	if (!picked) {
		for (size_t k = 0; k < n; k++)
			run(&cases[k], failed, &nfailed);
		gdak_test_all_cases = 1;
	}
	if (nfailed) {
		fprintf(stderr, "failed cases:");
		for (size_t k = 0; k < nfailed; k++)
			fprintf(stderr, " %s", failed[k]);
		fputc('\n', stderr);
	}
	return -1;
}

int gdak_test_cases(int argc, char **argv, const struct gdak_case *cases, size_t n)
{
	int r = gdak_test_cases_run(argc, argv, cases, n);

	return r >= 0 ? r : gdak_test_end();
}
