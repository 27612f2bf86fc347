/* SPDX-License-Identifier: MIT */
/* trace_names.c - names of trace record types and doorbell handlers. */
#include <stdio.h>

#include <gdak/trace_format.h>

static __thread char unknown_buf[24];

const char *gdak_trace_rec_name(unsigned type)
{
	static const char *const names[GDAK_TREC_MAX + 1] = {
		[GDAK_TREC_DOORBELL] = "DOORBELL", [GDAK_TREC_WQE] = "WQE",
		[GDAK_TREC_CQE] = "CQE",	   [GDAK_TREC_VIOLATION] = "VIOLATION",
		[GDAK_TREC_FAULT] = "FAULT",	   [GDAK_TREC_LOST] = "LOST",
		[GDAK_TREC_QP] = "QP",		   [GDAK_TREC_RECV_WQE] = "RECV_WQE",
		[GDAK_TREC_NOTE] = "NOTE",	   [GDAK_TREC_STATS] = "STATS",
		[GDAK_TREC_BATCH] = "BATCH",
	};

	if (type <= GDAK_TREC_MAX && names[type])
		return names[type];
	snprintf(unknown_buf, sizeof(unknown_buf), "REC_%u", type);
	return unknown_buf;
}

const char *gdak_trace_handler_name(unsigned handler)
{
	/* enum gdak_dev_db_handler */
	static const char *const names[] = {"DB", "BF", "CPU_PROXY"};

	if (handler < sizeof(names) / sizeof(names[0]))
		return names[handler];
	snprintf(unknown_buf, sizeof(unknown_buf), "HANDLER_%u", handler);
	return unknown_buf;
}
