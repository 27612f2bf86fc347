/* SPDX-License-Identifier: MIT */
/* trace_util.h - helpers shared by the trace tests (emu_tests/trace_*.c). */
#ifndef GDAK_TRACE_TEST_UTIL_H
#define GDAK_TRACE_TEST_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdak/trace_format.h>

/* A fresh temporary file name (the file exists, empty); free() it. */
static inline char *tt_tmpname(const char *tag)
{
	const char *dir = getenv("TMPDIR");
	size_t n = 64 + strlen(tag) + (dir ? strlen(dir) : 0);
	char *p = malloc(n);
	int fd;

	if (!p)
		return NULL;
	snprintf(p, n, "%s/gdak-trace-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
	fd = mkstemp(p);
	if (fd < 0) {
		free(p);
		return NULL;
	}
	close(fd);
	return p;
}

/* Whole file into memory; NULL on error. */
static inline uint8_t *tt_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		b = malloc((size_t)n + 1);
		if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
			free(b);
			b = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return b;
}

static inline int tt_write(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(p, 1, n, f) == n;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Read every block of buf: calls fn for each item; returns the number of
 * errors the reader reported, with the first message copied to err. */
typedef void (*tt_item_fn)(const struct gdak_trace_item *it, void *arg);
static inline int tt_read_all(const uint8_t *buf, size_t len, tt_item_fn fn, void *arg,
			      char *err, size_t errlen)
{
	struct gdak_trace_reader *r;
	struct gdak_trace_item it;
	size_t off = 0, used;
	int errors = 0, rc;

	if (err && errlen)
		err[0] = 0;
	if (gdak_trace_reader_new(&r))
		return -1;
	for (;;) {
		rc = gdak_trace_reader_next(r, buf + off, len - off, off, &it, &used);
		if (rc == 1 && fn)
			fn(&it, arg);
		if (rc < 0) {
			if (!errors && err)
				snprintf(err, errlen, "%s", gdak_trace_reader_error(r));
			errors++;
			if (rc != -EBADMSG || !used)
				break;
		}
		if (rc == 0) {
			if (off < len) {
				if (!errors && err)
					snprintf(err, errlen, "offset %zu: truncated", off);
				errors++;
			}
			break;
		}
		off += used;
	}
	gdak_trace_reader_free(r);
	return errors;
}

#endif
