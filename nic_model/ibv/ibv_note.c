/* SPDX-License-Identifier: MIT */
/*
 * ibv_note.c - gdak_ibv_note (gv_private.h): gdak's libmlx5 and libefa log
 * through this library, so GDAK_LOG is read in one place (the configuration
 * table, core/src/env.c) and their lines have core/src/log.c's format.
 */
#include "gdak_log.h"
#include "gv_private.h"

__attribute__((visibility("default"))) void gdak_ibv_note(const char *func, const char *why)
{
	if (gdak_log_on(GDAK_LOG_INFO))
		gdak_log_msg(GDAK_LOG_INFO, NULL, 0, func ? func : "?", "%s", why ? why : "");
}
