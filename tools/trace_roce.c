/* SPDX-License-Identifier: MIT */
/*
 * trace_roce.c - decode the RoCEv2 frames of a trace (Ethernet / IPv4 / UDP
 * / BTH and extended headers / payload / ICRC), and compute the ICRC.
 *
 * Headers per opcode follow IBA vol. 1 table 38 (9.2 "Base transport
 * header" and 9.3 - 9.5 the extended headers); the ICRC follows annex A17
 * (RoCEv2) A17.3.3 and IBA 7.8.1: a CRC-32 over 8 bytes of ones (in place
 * of the LRH), the IP and UDP headers with the variant fields (TOS, TTL,
 * header checksum, UDP checksum) replaced by ones, the BTH with its
 * FECN/BECN/reserved byte replaced by ones, and everything after the BTH.
 */
#include <stdio.h>
#include <string.h>

#include "trace_tool.h"

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t be24(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }
static uint32_t be32(const uint8_t *p) { return (uint32_t)be16(p) << 16 | be16(p + 2); }
static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* ---- opcodes ----------------------------------------------------------- */

/* Extended headers each RC opcode carries (bits 4:0 of the BTH opcode). */
static const struct {
	const char *name;
	unsigned has;
} rc_ops[32] = {
	[0x00] = {"SEND_FIRST", 0},
	[0x01] = {"SEND_MIDDLE", 0},
	[0x02] = {"SEND_LAST", 0},
	[0x03] = {"SEND_LAST_WITH_IMMEDIATE", TRACE_ROCE_H_IMMDT},
	[0x04] = {"SEND_ONLY", 0},
	[0x05] = {"SEND_ONLY_WITH_IMMEDIATE", TRACE_ROCE_H_IMMDT},
	[0x06] = {"RDMA_WRITE_FIRST", TRACE_ROCE_H_RETH},
	[0x07] = {"RDMA_WRITE_MIDDLE", 0},
	[0x08] = {"RDMA_WRITE_LAST", 0},
	[0x09] = {"RDMA_WRITE_LAST_WITH_IMMEDIATE", TRACE_ROCE_H_IMMDT},
	[0x0a] = {"RDMA_WRITE_ONLY", TRACE_ROCE_H_RETH},
	[0x0b] = {"RDMA_WRITE_ONLY_WITH_IMMEDIATE", TRACE_ROCE_H_RETH | TRACE_ROCE_H_IMMDT},
	[0x0c] = {"RDMA_READ_REQUEST", TRACE_ROCE_H_RETH},
	[0x0d] = {"RDMA_READ_RESPONSE_FIRST", TRACE_ROCE_H_AETH},
	[0x0e] = {"RDMA_READ_RESPONSE_MIDDLE", 0},
	[0x0f] = {"RDMA_READ_RESPONSE_LAST", TRACE_ROCE_H_AETH},
	[0x10] = {"RDMA_READ_RESPONSE_ONLY", TRACE_ROCE_H_AETH},
	[0x11] = {"ACKNOWLEDGE", TRACE_ROCE_H_AETH},
	[0x12] = {"ATOMIC_ACKNOWLEDGE", TRACE_ROCE_H_AETH | TRACE_ROCE_H_ATOMICACKETH},
	[0x13] = {"COMPARE_SWAP", TRACE_ROCE_H_ATOMICETH},
	[0x14] = {"FETCH_ADD", TRACE_ROCE_H_ATOMICETH},
	[0x16] = {"SEND_LAST_WITH_INVALIDATE", TRACE_ROCE_H_IETH},
	[0x17] = {"SEND_ONLY_WITH_INVALIDATE", TRACE_ROCE_H_IETH},
};

static __thread char op_buf[40];

const char *trace_roce_opcode_name(uint8_t opcode)
{
	static const char *const transports[8] = {"RC", "UC", "RD", "UD", "CNP", "XRC", "T6",
						  "T7"};
	const char *op = rc_ops[opcode & 0x1f].name;

	if (opcode == 0x81)
		return "CNP";
	if (opcode == TRACE_ROCE_OP_XMASKED_CS)
		return "GDAK_MASKED_COMPARE_SWAP";
	if (opcode == TRACE_ROCE_OP_XMASKED_FA)
		return "GDAK_MASKED_FETCH_ADD";
	/* only RC is decoded in detail; other transports get a numeric name */
	if ((opcode >> 5) == 0 && op)
		snprintf(op_buf, sizeof(op_buf), "RC_%s", op);
	else
		snprintf(op_buf, sizeof(op_buf), "%s_OP_0x%02x", transports[opcode >> 5], opcode);
	return op_buf;
}

/* AETH syndrome, IBA 9.7.5.1.1 table 41: bits 6:5 say ACK / RNR NAK / NAK. */
const char *trace_roce_aeth_name(uint8_t s)
{
	static const char *const naks[] = {"NAK_PSN_SEQ_ERR", "NAK_INVALID_REQ",
					   "NAK_REMOTE_ACCESS", "NAK_REMOTE_OP",
					   "NAK_INVALID_RD_REQ"};

	switch ((s >> 5) & 3) {
	case 0:
		return "ACK";
	case 1:
		return "RNR_NAK";
	case 3:
		if ((s & 0x1f) < sizeof(naks) / sizeof(naks[0]))
			return naks[s & 0x1f];
		return "NAK_RESERVED";
	default:
		return "AETH_RESERVED";
	}
}

int trace_roce_aeth_is_nak(uint8_t s)
{
	unsigned k = (s >> 5) & 3;
	return k == 1 || k == 3;
}

/* ---- ICRC -------------------------------------------------------------- */

static uint32_t crc_table[256];

__attribute__((constructor)) static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc_run(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

uint32_t trace_roce_icrc(const uint8_t *ip, uint32_t len)
{
	static const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t hdr[20 + 8 + TRACE_ROCE_BTH_LEN];
	uint32_t c = 0xffffffffu;

	if (len < sizeof(hdr) + TRACE_ROCE_ICRC_LEN)
		return 0;
	memcpy(hdr, ip, sizeof(hdr));
	hdr[1] = 0xff;			/* TOS (DSCP + ECN) */
	hdr[8] = 0xff;			/* TTL */
	hdr[10] = hdr[11] = 0xff;	/* header checksum */
	hdr[20 + 6] = hdr[20 + 7] = 0xff; /* UDP checksum */
	hdr[28 + 4] = 0xff;		/* BTH FECN, BECN, reserved */
	c = crc_run(c, ones, sizeof(ones));
	c = crc_run(c, hdr, sizeof(hdr));
	c = crc_run(c, ip + sizeof(hdr), len - sizeof(hdr) - TRACE_ROCE_ICRC_LEN);
	return ~c;
}

/* ---- frames ------------------------------------------------------------ */

int trace_roce_decode(const uint8_t *f, uint32_t caplen, uint32_t origlen, struct trace_roce_pkt *p,
		const char **why)
{
	const uint8_t *ip, *udp, *bth, *h, *end;
	uint32_t ip_len, udp_len, need = 0;
	unsigned has;

	memset(p, 0, sizeof(*p));
	p->icrc_ok = -1;
	if (caplen < 14 + 20 + 8 + TRACE_ROCE_BTH_LEN)
		return *why = "frame too short for Ethernet/IPv4/UDP/BTH", -1;
	if (be16(f + 12) != 0x0800)
		return *why = "not IPv4", -1;
	ip = f + 14;
	if ((ip[0] >> 4) != 4 || (ip[0] & 0xf) != 5)
		return *why = "IPv4 header with options or a bad version", -1;
	if (ip[9] != 17)
		return *why = "not UDP", -1;
	ip_len = be16(ip + 2);
	if (ip_len < 20 + 8 + TRACE_ROCE_BTH_LEN + TRACE_ROCE_ICRC_LEN || 14 + ip_len > origlen)
		return *why = "IPv4 total length inconsistent with the frame", -1;
	udp = ip + 20;
	memcpy(&p->src_ip, ip + 12, 4);
	memcpy(&p->dst_ip, ip + 16, 4);
	p->src_port = be16(udp);
	p->dst_port = be16(udp + 2);
	udp_len = be16(udp + 4);
	if (udp_len != ip_len - 20)
		return *why = "UDP length disagrees with the IPv4 length", -1;

	bth = udp + 8;
	p->opcode = bth[0];
	p->se = bth[1] >> 7;
	p->mig = (bth[1] >> 6) & 1;
	p->pad = (bth[1] >> 4) & 3;
	p->tver = bth[1] & 0xf;
	p->pkey = be16(bth + 2);
	p->fecn = bth[4] >> 7;
	p->becn = (bth[4] >> 6) & 1;
	p->dqpn = be24(bth + 5);
	p->ackreq = bth[8] >> 7;
	p->psn = be24(bth + 9);

	has = (p->opcode >> 5) == 0 ? rc_ops[p->opcode & 0x1f].has : 0;
	if (p->opcode == TRACE_ROCE_OP_XMASKED_CS || p->opcode == TRACE_ROCE_OP_XMASKED_FA)
		has = TRACE_ROCE_H_XATOMICETH;
	if (has & TRACE_ROCE_H_XATOMICETH)
		need += 48;
	if (has & TRACE_ROCE_H_RETH)
		need += 16;
	if (has & TRACE_ROCE_H_ATOMICETH)
		need += 28;
	if (has & TRACE_ROCE_H_AETH)
		need += 4;
	if (has & TRACE_ROCE_H_ATOMICACKETH)
		need += 8;
	if (has & (TRACE_ROCE_H_IMMDT | TRACE_ROCE_H_IETH))
		need += 4;
	/* the headers must fit in what was captured and in the IP packet */
	if (udp_len < 8 + TRACE_ROCE_BTH_LEN + need + p->pad + TRACE_ROCE_ICRC_LEN)
		return *why = "packet too short for its opcode's headers", -1;
	if (caplen < 14 + 20 + 8 + TRACE_ROCE_BTH_LEN + need)
		return *why = "headers cut off by the capture length", -1;
	h = bth + TRACE_ROCE_BTH_LEN;
	if (has & TRACE_ROCE_H_RETH) {
		p->va = be64(h);
		p->rkey = be32(h + 8);
		p->dmalen = be32(h + 12);
		h += 16;
	}
	if (has & TRACE_ROCE_H_ATOMICETH) {
		p->va = be64(h);
		p->rkey = be32(h + 8);
		p->swap_add = be64(h + 12);
		p->compare = be64(h + 20);
		h += 28;
	}
	if (has & TRACE_ROCE_H_XATOMICETH) {
		p->va = be64(h);
		p->rkey = be32(h + 8);
		p->xsize_log = h[12];
		p->swap_add = be64(h + 16);
		p->compare = be64(h + 24);
		p->swap_mask = be64(h + 32);
		p->compare_mask = be64(h + 40);
		h += 48;
	}
	if (has & TRACE_ROCE_H_AETH) {
		p->aeth_syndrome = h[0];
		p->msn = be24(h + 1);
		h += 4;
	}
	if (has & TRACE_ROCE_H_ATOMICACKETH) {
		p->orig = be64(h);
		h += 8;
	}
	if (has & TRACE_ROCE_H_IMMDT) {
		memcpy(&p->imm, h, 4);
		h += 4;
	}
	if (has & TRACE_ROCE_H_IETH) {
		p->ieth = be32(h);
		h += 4;
	}
	p->has = has;
	end = ip + ip_len;
	p->payload = (uint32_t)(end - h) - p->pad - TRACE_ROCE_ICRC_LEN;
	if (14 + ip_len <= caplen) {
		const uint8_t *ic = end - TRACE_ROCE_ICRC_LEN;
		p->icrc = (uint32_t)ic[0] | (uint32_t)ic[1] << 8 | (uint32_t)ic[2] << 16 |
			  (uint32_t)ic[3] << 24;
		p->icrc_ok = trace_roce_icrc(ip, ip_len) == p->icrc;
	}
	return 0;
}
