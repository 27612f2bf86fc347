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

#include <gdak/nic.h>
#include <gdak/trace_format.h>
#include "gdak_test.h"
#include "trace_tool.h"

/* A fresh temporary file name (the file exists, empty); free() it. */
static inline char *tt_tmpname(const char *tag) { return gdak_test_tmpname("trace", tag); }

/* A fresh file that the NIC model traces into from now on; the test skips
 * (77) where the build has no trace writer.  free() it. */
static inline char *tt_trace_to_tmp(const char *tag)
{
	char *path = tt_tmpname(tag);
	int rc;

	REQUIRE(path);
	rc = gdak_nic_set_trace(path);
	if (rc == -ENOTSUP)
		GDAK_TEST_SKIP("this build has no trace writer");
	REQUIRE_EQ(rc, 0);
	return path;
}

/* Whole file into memory; NULL on error. */
static inline uint8_t *tt_slurp(const char *path, size_t *len)
{
	return gdak_test_slurp(path, len);
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

/*
 * A RoCEv2 packet (BTH, extended headers, payload, pad, ICRC) as
 * gdak_trace_packet() takes it, with the ICRC computed over the IPv4/UDP
 * headers the writer will put around it (docs/TRACE.md: id 0, DF, TTL 64,
 * UDP checksum 0).  Returns its length.
 */
static inline size_t tt_roce_build(uint8_t *out, uint8_t opcode, uint32_t dqpn, uint32_t psn,
				   int ackreq, const void *ext, size_t ext_len, const void *payload,
				   size_t plen, uint32_t sip, uint32_t dip, uint16_t sport,
				   uint16_t dport)
{
	const struct roce_path path = { .sip = sip, .dip = dip, .sport = sport, .dport = dport };
	uint8_t tmp[28 + 2048];
	size_t pad = (4 - plen % 4) % 4;
	size_t n = 12 + ext_len + plen + pad + 4;
	uint8_t *ip = tmp, *b = tmp + 28;
	uint32_t icrc;

	if (n > sizeof(tmp) - 28)
		return 0;
	memset(tmp, 0, sizeof(tmp));
	gdak_roce_ipv4_udp(ip, &path, (uint32_t)n, 0, 0);
	b[0] = opcode;
	b[1] = (uint8_t)(pad << 4);
	b[2] = b[3] = 0xff;	/* default P_Key */
	b[5] = (uint8_t)(dqpn >> 16);
	b[6] = (uint8_t)(dqpn >> 8);
	b[7] = (uint8_t)dqpn;
	b[8] = ackreq ? 0x80 : 0;
	b[9] = (uint8_t)(psn >> 16);
	b[10] = (uint8_t)(psn >> 8);
	b[11] = (uint8_t)psn;
	if (ext_len)
		memcpy(b + 12, ext, ext_len);
	if (plen)
		memcpy(b + 12 + ext_len, payload, plen);
	icrc = gdak_roce_icrc_ip(ip, (uint32_t)(28 + n));
	b[n - 4] = (uint8_t)icrc;
	b[n - 3] = (uint8_t)(icrc >> 8);
	b[n - 2] = (uint8_t)(icrc >> 16);
	b[n - 1] = (uint8_t)(icrc >> 24);
	memcpy(out, b, n);
	return n;
}

static inline void tt_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}
static inline void tt_be32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* RETH: virtual address, rkey, DMA length (IBA 9.3.3). */
static inline void tt_reth(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len)
{
	tt_be64(p, va);
	tt_be32(p + 8, rkey);
	tt_be32(p + 12, len);
}

#endif
