/* SPDX-License-Identifier: MIT */
/*
 * gdak_case.h - a test file's table of cases (name -> function), so that a
 * failure names its case and one case runs alone:
 *
 *	static const struct gdak_case cases[] = {GDAK_CASE(ctrl_bytes), ...};
 *	int main(int argc, char **argv) { return GDAK_TEST_CASES(argc, argv, cases); }
 *
 *	gdak_core_codec              every case, in table order
 *	gdak_core_codec --list       the case names, one a line
 *	gdak_core_codec --case NAME  that case only (repeatable)
 *
 * Each failed check's line carries "[case NAME]"; the summary lists the
 * cases that failed.  An unknown case or option is an error (exit 2);
 * arguments not starting with "--" are the test's own and left to it.
 *
 * A main with set-up and tear-down around its cases:
 *
 *	open things;
 *	GDAK_TEST_RUN_CASES(argc, argv, cases);  (returns from main after --list)
 *	if (gdak_test_all_cases) checks that need every case to have run;
 *	close things;
 *	return gdak_test_end();
 */
#ifndef GDAK_CASE_H
#define GDAK_CASE_H

#include <stddef.h>

struct gdak_case {
	const char *name;
	void (*fn)(void);
};

#define GDAK_CASE(f)  \
	{             \
#f, f \
	}
#define GDAK_TEST_CASES(argc, argv, table) \
	gdak_test_cases((argc), (argv), (table), sizeof(table) / sizeof((table)[0]))

#define GDAK_TEST_RUN_CASES(argc, argv, table)                                    \
	do {                                                                      \
		int r_ = gdak_test_cases_run((argc), (argv), (table),             \
					     sizeof(table) / sizeof((table)[0])); \
		if (r_ >= 0)                                                      \
			return r_;                                                \
	} while (0)

/* Runs the cases argv asks for (all when none) and returns gdak_test_end()'s
 * status; 0 after --list, 2 for a bad command line. */
int gdak_test_cases(int argc, char **argv, const struct gdak_case *cases, size_t n);
/* The same without gdak_test_end(): -1 when the cases ran (main goes on),
 * else the exit status (0 after --list, 2 for a bad command line). */
int gdak_test_cases_run(int argc, char **argv, const struct gdak_case *cases, size_t n);
/* 1 once every case of the table has run (no --case given). */
extern int gdak_test_all_cases;
/* The case running now, NULL outside one. */
extern const char *gdak_test_case;

#endif
