/* SPDX-License-Identifier: MIT */
/*
 * gdak/qp_modes.h - how device code may drive a QP: the doorbell handler
 * and the sharing mode.  The host API chooses them (struct gdak_qp_attr),
 * the device descriptors carry them (struct gdak_dev_qp); they live in core
 * so that <gdak/gdak.h> needs nothing from the device API's headers.
 *
 * Compiles as C11, as C++17 and under nvcc.
 */
#ifndef GDAK_QP_MODES_H
#define GDAK_QP_MODES_H

/* How device code rings the doorbell. */
enum gdak_dev_db_handler {
	/* doorbell record, then the first 8 bytes of the last WQE's ctrl
	 * segment written to the doorbell register (UAR + 0x800) */
	GDAK_DEV_DB_DB = 0,
	/* doorbell record, then the whole 64-byte WQE written to the BlueFlame
	 * register (only for single-WQEBB WQEs; larger ones fall back to DB) */
	GDAK_DEV_DB_BF = 1,
	/* the device publishes its producer index in host memory; a CPU
	 * thread writes the doorbell record and register for it */
	GDAK_DEV_DB_CPU_PROXY = 2,
};
#define GDAK_DEV_DB_HANDLER_COUNT 3

/* Who may post on a QP. */
enum gdak_dev_sharing {
	GDAK_DEV_EXCLUSIVE = 0, /* one device thread (or one cooperating group) owns it */
	GDAK_DEV_SHARED = 1,	/* many threads/blocks reserve slots atomically */
};

#endif /* GDAK_QP_MODES_H */
