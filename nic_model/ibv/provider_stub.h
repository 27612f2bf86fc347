/* SPDX-License-Identifier: MIT */
/*
 * provider_stub.h - how gdak's provider libraries (libmlx5.so.1,
 * libefa.so.1) refuse an entry point their devices do not offer: one log
 * line through the including file's note(func), then the answer the real
 * library gives on a device without the feature: EOPNOTSUPP, or NULL with
 * errno EOPNOTSUPP.
 *
 * The including file defines `static void note(const char *func)` first:
 * the libraries differ in what the line says and in how they reach gdak's
 * libibverbs (libefa's reference is weak).
 */
#ifndef GDAK_PROVIDER_STUB_H
#define GDAK_PROVIDER_STUB_H

#include <errno.h>
#include <stddef.h>

static inline int not_supported(const char *func)
{
	note(func);
	return EOPNOTSUPP;
}

static inline void *no_object(const char *func)
{
	note(func);
	errno = EOPNOTSUPP;
	return NULL;
}

#endif /* GDAK_PROVIDER_STUB_H */
