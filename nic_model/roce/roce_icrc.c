/* SPDX-License-Identifier: MIT */
/*
 * roce_icrc.c - CRC-32 and the RoCEv2 invariant CRC.
 *
 * The ICRC (IBA vol. 1 7.8.1, annex A17.3.3 for RoCEv2) is the Ethernet
 * CRC-32 over the packet with every field a router may change replaced by
 * ones: the 8 bytes standing for the LRH (all ones), the IPv4 header with
 * TOS, TTL and header checksum set to ones, the UDP header with its
 * checksum set to ones, and the BTH with resv8a (the F/B bits byte) set to
 * ones; then the rest of the packet up to the ICRC.  It is sent least
 * significant byte first.  Linux rxe computes the same (rxe_icrc.c), and
 * Wireshark checks it.
 *
 * Slicing-by-8 tables: one byte per step would cost more than the copy.
 */
#include <pthread.h>
#include <string.h>

#include "roce.h"

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_tab_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

/* The raw register update (no pre/post inversion). */
static uint32_t crc_update(uint32_t c, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
		lo = __builtin_bswap32(lo);
		hi = __builtin_bswap32(hi);
#endif
		lo ^= c;
		c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

uint32_t roce_crc32(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_tab_init);
	return ~crc_update(~crc, buf, len);
}

uint32_t roce_icrc(const struct roce_path *path, const uint8_t *pkt, uint32_t len)
{
	uint8_t ph[8 + 20 + 8 + ROCE_BTH_LEN];
	uint32_t ip_len = 20 + 8 + len, c;

	pthread_once(&crc_once, crc_tab_init);
	memset(ph, 0xff, 8);			/* stands for the LRH */
	uint8_t *ip = ph + 8;
	ip[0] = 0x45;				/* IPv4, 20-byte header */
	ip[1] = 0xff;				/* TOS (DSCP, ECN): masked */
	roce_put16(ip + 2, (uint16_t)ip_len);
	roce_put16(ip + 4, 0);			/* ID: 0 for DF datagrams of an unconnected socket */
	roce_put16(ip + 6, 0x4000);		/* DF, offset 0 */
	ip[8] = 0xff;				/* TTL: masked */
	ip[9] = 17;				/* UDP */
	roce_put16(ip + 10, 0xffff);		/* header checksum: masked */
	memcpy(ip + 12, &path->sip, 4);		/* already network order */
	memcpy(ip + 16, &path->dip, 4);
	uint8_t *udp = ip + 20;
	roce_put16(udp, path->sport);
	roce_put16(udp + 2, path->dport);
	roce_put16(udp + 4, (uint16_t)(8 + len));
	roce_put16(udp + 6, 0xffff);		/* UDP checksum: masked */
	memcpy(udp + 8, pkt, ROCE_BTH_LEN);
	udp[8 + 4] = 0xff;			/* BTH resv8a (FECN/BECN): masked */

	c = crc_update(0xffffffffu, ph, sizeof(ph));
	c = crc_update(c, pkt + ROCE_BTH_LEN, len - ROCE_BTH_LEN - ROCE_ICRC_LEN);
	return ~c;
}

void roce_icrc_set(const struct roce_path *path, uint8_t *pkt, uint32_t len)
{
	uint32_t c = roce_icrc(path, pkt, len);
	uint8_t *p = pkt + len - ROCE_ICRC_LEN;

	p[0] = (uint8_t)c; p[1] = (uint8_t)(c >> 8); p[2] = (uint8_t)(c >> 16); p[3] = (uint8_t)(c >> 24);
}

int roce_icrc_ok(const struct roce_path *path, const uint8_t *pkt, uint32_t len)
{
	const uint8_t *p = pkt + len - ROCE_ICRC_LEN;
	uint32_t got = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;

	return got == roce_icrc(path, pkt, len);
}
