/* SPDX-License-Identifier: MIT */
/*
 * net_forge.h - a hostile RoCEv2 sender for the net.hostile tests: builds
 * packets with the NIC model's own header accessors and a valid ICRC
 * (core/wire/roce_icrc.c) and sends them from a loopback address of its own
 * (127.0.0.N), or with the source address and port of somebody else, the
 * connected peer included: through a raw socket where it may (root /
 * CAP_NET_RAW), else - for a target QP in this process - through the QP's
 * in-process inbox (tr_udp_local.c) with that source, which its receive
 * path treats exactly as a datagram from there.
 */
#ifndef GDAK_NET_FORGE_H
#define GDAK_NET_FORGE_H

#include <stdint.h>

#include "roce.h"

struct forge {
	int fd;		/* UDP socket bound to sip:sport */
	int raw;	/* raw IPv4 socket, or -1 */
	uint32_t sip;	/* network order */
	uint16_t sport; /* host order */
};

/* Bind a UDP socket to addr ("127.0.0.N"), any port; open a raw socket if
 * allowed.  0 or -errno. */
int forge_open(struct forge *f, const char *addr);
void forge_close(struct forge *f);

/* The packet: BTH (P_Key 0xffff) + ext_len bytes of extension headers +
 * payload, pad, ICRC valid for path.  Returns its length. */
uint32_t forge_build(uint8_t *pkt, const struct roce_path *path, uint8_t opcode, uint32_t dqpn,
		     uint32_t psn, const void *ext, uint32_t ext_len, const void *payload,
		     uint32_t plen);
/* Build and send from the forger's own address (its ICRC computed for it).
 * 0 or -errno. */
int forge_send(struct forge *f, uint32_t dip, uint16_t dport, uint8_t opcode, uint32_t dqpn,
	       uint32_t psn, const void *ext, uint32_t ext_len, const void *payload, uint32_t plen);
/* Send raw bytes (UDP payload) from the forger's own address. */
int forge_send_raw(struct forge *f, uint32_t dip, uint16_t dport, const void *pkt, uint32_t len);
/* Send pkt as if from path's sip:sport: 0, or -ENOTSUP when neither a raw
 * socket nor an inbox at dip:dport is there (GDAK_FORGE_NO_RAW=1: never
 * the raw socket). */
int forge_spoof(struct forge *f, const struct roce_path *path, const void *pkt, uint32_t len);

/* Extension headers */
void forge_reth(uint8_t *h, uint64_t va, uint32_t rkey, uint32_t len);
void forge_atmeth(uint8_t *h, uint64_t va, uint32_t rkey, uint64_t swap_add, uint64_t cmp);
void forge_aeth(uint8_t *h, uint8_t syn, uint32_t msn);

#endif
