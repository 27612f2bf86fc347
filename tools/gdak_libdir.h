/* SPDX-License-Identifier: MIT */
/*
 * gdak_libdir.h - where gdak's libibverbs.so.1 / libmlx5.so.1 / libefa.so.1
 * are (lib/gdak), found from the running tool's own location; gdak-run and
 * gdak-info use it (gdak_libdir.c).
 */
#ifndef GDAK_TOOLS_LIBDIR_H
#define GDAK_TOOLS_LIBDIR_H

#include <stddef.h>

/* The real path of lib/gdak: the installed <prefix>/lib/gdak relative to
 * <prefix>/bin (GDAK_RUN_REL_LIBDIR), else the build tree's ../lib/gdak.
 * 0 when one holds libibverbs.so.1; -1 otherwise, with the first candidate
 * in out (for the message). */
int gdak_find_libdir(char *out, size_t len);

#endif
