/* SPDX-License-Identifier: MIT */
/*
 * roce_frame.c - the IPv4/UDP (and, for traces, Ethernet) headers a RoCEv2
 * packet travels in: one builder for the trace writer, the ICRC's pseudo
 * header and the tests that forge frames.
 */
#include <string.h>

#include <gdak/roce.h>

uint16_t gdak_roce_ipv4_csum(const uint8_t *h)
{
	uint32_t s = 0;

	for (int i = 0; i < GDAK_ROCE_IPV4_LEN; i += 2)
		s += roce_get16(h + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

void gdak_roce_ipv4_udp(uint8_t *ip, const struct roce_path *path, uint32_t len, uint16_t ip_id,
			int with_csum)
{
	uint8_t *udp = ip + GDAK_ROCE_IPV4_LEN;

	memset(ip, 0, GDAK_ROCE_IPV4_LEN + GDAK_ROCE_UDP_LEN);
	ip[0] = 0x45; /* version 4, 5 words */
	roce_put16(ip + 2, (uint16_t)(GDAK_ROCE_IPV4_LEN + GDAK_ROCE_UDP_LEN + len));
	roce_put16(ip + 4, ip_id);  /* a kernel stack's, else 0 */
	roce_put16(ip + 6, 0x4000); /* DF: RoCEv2 packets are never fragmented */
	ip[8] = 64;		    /* TTL */
	ip[9] = 17;		    /* UDP */
	memcpy(ip + 12, &path->sip, 4);
	memcpy(ip + 16, &path->dip, 4);
	if (with_csum)
		roce_put16(ip + 10, gdak_roce_ipv4_csum(ip));
	roce_put16(udp, path->sport);
	roce_put16(udp + 2, path->dport);
	roce_put16(udp + 4, (uint16_t)(GDAK_ROCE_UDP_LEN + len));
	/* UDP checksum 0: none (IBA A17.4.3 allows it over IPv4) */
}

void gdak_roce_mac(uint8_t mac[6], uint32_t ip_be)
{
	mac[0] = 0x02;
	mac[1] = 0x00;
	memcpy(mac + 2, &ip_be, 4);
}

void gdak_roce_frame_hdrs(uint8_t *f, const struct roce_path *path, uint32_t len, uint16_t ip_id)
{
	gdak_roce_mac(f, path->dip);
	gdak_roce_mac(f + 6, path->sip);
	f[12] = 0x08; /* IPv4 */
	f[13] = 0x00;
	gdak_roce_ipv4_udp(f + GDAK_ROCE_ETH_LEN, path, len, ip_id, 1);
}
