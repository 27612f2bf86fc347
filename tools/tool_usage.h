/* SPDX-License-Identifier: MIT */
/*
 * tool_usage.h - a wrong command line, said the one way gdak-run, gdak-perf
 * and gdak-perf-cuda say it: "TOOL: what HINT" on one line of stderr, exit
 * status 2.
 */
#ifndef GDAK_TOOLS_TOOL_USAGE_H
#define GDAK_TOOLS_TOOL_USAGE_H

#include <stdarg.h>
#include <stdio.h>

/* The status a tool exits with for a wrong command line. */
#define TOOL_EXIT_USAGE 2

/* Prints "<tool>: <fmt, ...><hint>\n" to stderr; returns TOOL_EXIT_USAGE.
 * hint: what to try ("" for none), with its leading space. */
static inline int tool_usage_err(const char *tool, const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline int tool_usage_err(const char *tool, const char *hint, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", hint);
	return TOOL_EXIT_USAGE;
}

#endif
