/* SPDX-License-Identifier: MIT */
/*
 * trace_roce.c - decode the RoCEv2 frames of a trace (Ethernet / IPv4 / UDP
 * / BTH and extended headers / payload / ICRC), checking the ICRC.  The
 * opcode table, header lengths and the ICRC are the wire facts of
 * <gdak/roce.h>.
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

/* ---- opcodes ----------------------------------------------------------- */

/* The headers an RC opcode's packet carries, as TRACE_ROCE_H_* bits. */
static unsigned rc_has(uint8_t opcode)
{
	/* RC, and gdak's extended atomics and DC opcodes in the
	 * manufacturer-specific ranges */
	uint32_t m = (opcode >> 5) == 0 || opcode == ROCE_XMASKED_CMP_SWAP ||
				     opcode == ROCE_XMASKED_FETCH_ADD ||
				     (roce_opcode_is_dc(opcode) && roce_op(opcode)->name)
			     ? roce_op(opcode)->mask
			     : 0;

	return (m & ROCE_M_RETH ? TRACE_ROCE_H_RETH : 0) |
	       (m & ROCE_M_ATMETH ? TRACE_ROCE_H_ATOMICETH : 0) |
	       (m & ROCE_M_AETH ? TRACE_ROCE_H_AETH : 0) |
	       (m & ROCE_M_ATMACK ? TRACE_ROCE_H_ATOMICACKETH : 0) |
	       (m & ROCE_M_IMMDT ? TRACE_ROCE_H_IMMDT : 0) |
	       (m & ROCE_M_IETH ? TRACE_ROCE_H_IETH : 0) |
	       (m & ROCE_M_XATMETH ? TRACE_ROCE_H_XATOMICETH : 0) |
	       (m & ROCE_M_DCETH ? TRACE_ROCE_H_DCETH : 0);
}

static __thread char op_buf[40];

const char *trace_roce_opcode_name(uint8_t opcode)
{
	static const char *const transports[8] = {"RC", "UC", "RD", "UD", "CNP", "XRC", "T6",
						  "T7"};
	const char *op = roce_op(opcode)->name;

	if (opcode == 0x81)
		return "CNP";
	if (opcode == ROCE_XMASKED_CMP_SWAP || opcode == ROCE_XMASKED_FETCH_ADD ||
	    (roce_opcode_is_dc(opcode) && op))
		return op; /* gdak's names (docs/UDP.md), DC_... for its DC opcodes */
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

/* ---- frames ------------------------------------------------------------ */

int trace_roce_decode(const uint8_t *f, uint32_t caplen, uint32_t origlen, struct trace_roce_pkt *p,
		const char **why)
{
	const uint8_t *ip, *udp, *bth, *h, *end;
	uint32_t ip_len, udp_len, need = 0;
	unsigned has;

	memset(p, 0, sizeof(*p));
	p->icrc_ok = -1;
	if (caplen < 14 + 20 + 8 + ROCE_BTH_LEN)
		return *why = "frame too short for Ethernet/IPv4/UDP/BTH", -1;
	if (roce_get16(f + 12) != 0x0800)
		return *why = "not IPv4", -1;
	ip = f + 14;
	if ((ip[0] >> 4) != 4 || (ip[0] & 0xf) != 5)
		return *why = "IPv4 header with options or a bad version", -1;
	if (ip[9] != 17)
		return *why = "not UDP", -1;
	ip_len = roce_get16(ip + 2);
	if (ip_len < 20 + 8 + ROCE_BTH_LEN + ROCE_ICRC_LEN || 14 + ip_len > origlen)
		return *why = "IPv4 total length inconsistent with the frame", -1;
	udp = ip + 20;
	memcpy(&p->src_ip, ip + 12, 4);
	memcpy(&p->dst_ip, ip + 16, 4);
	p->src_port = roce_get16(udp);
	p->dst_port = roce_get16(udp + 2);
	udp_len = roce_get16(udp + 4);
	if (udp_len != ip_len - 20)
		return *why = "UDP length disagrees with the IPv4 length", -1;

	bth = udp + 8;
	p->opcode = bth[0];
	p->se = bth[1] >> 7;
	p->mig = (bth[1] >> 6) & 1;
	p->pad = (bth[1] >> 4) & 3;
	p->tver = bth[1] & 0xf;
	p->pkey = roce_get16(bth + 2);
	p->fecn = bth[4] >> 7;
	p->becn = (bth[4] >> 6) & 1;
	p->dqpn = roce_get24(bth + 5);
	p->ackreq = bth[8] >> 7;
	p->psn = roce_get24(bth + 9);

	has = rc_has(p->opcode);
	if (has & TRACE_ROCE_H_DCETH)
		need += ROCE_DCETH_LEN;
	if (has & TRACE_ROCE_H_XATOMICETH)
		need += ROCE_XATMETH_LEN;
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
	if (udp_len < 8 + ROCE_BTH_LEN + need + p->pad + ROCE_ICRC_LEN)
		return *why = "packet too short for its opcode's headers", -1;
	if (caplen < 14 + 20 + 8 + ROCE_BTH_LEN + need)
		return *why = "headers cut off by the capture length", -1;
	h = bth + ROCE_BTH_LEN;
	if (has & TRACE_ROCE_H_DCETH) {
		p->dc_key = dceth_key(h);
		p->dc_stream = dceth_stream(h);
		p->dc_dci = dceth_dci(h);
		p->dc_conn = dceth_conn(h);
		p->dc_mtu = dceth_mtu(h);
		p->dc_psn0 = dceth_psn0(h);
		h += ROCE_DCETH_LEN;
	}
	if (has & TRACE_ROCE_H_RETH) {
		p->va = roce_get64(h);
		p->rkey = roce_get32(h + 8);
		p->dmalen = roce_get32(h + 12);
		h += 16;
	}
	if (has & TRACE_ROCE_H_ATOMICETH) {
		p->va = roce_get64(h);
		p->rkey = roce_get32(h + 8);
		p->swap_add = roce_get64(h + 12);
		p->compare = roce_get64(h + 20);
		h += 28;
	}
	if (has & TRACE_ROCE_H_XATOMICETH) {
		p->va = roce_get64(h);
		p->rkey = roce_get32(h + 8);
		p->xsize_log = xatmeth_size_log(h);
		p->swap_add = xatmeth_swap_add(h);
		p->compare = xatmeth_cmp(h);
		p->swap_mask = xatmeth_swap_mask(h);
		p->compare_mask = xatmeth_cmp_mask(h);
		h += ROCE_XATMETH_LEN;
	}
	if (has & TRACE_ROCE_H_AETH) {
		p->aeth_syndrome = h[0];
		p->msn = roce_get24(h + 1);
		h += 4;
	}
	if (has & TRACE_ROCE_H_ATOMICACKETH) {
		p->orig = roce_get64(h);
		h += 8;
	}
	if (has & TRACE_ROCE_H_IMMDT) {
		memcpy(&p->imm, h, 4);
		h += 4;
	}
	if (has & TRACE_ROCE_H_IETH) {
		p->ieth = roce_get32(h);
		h += 4;
	}
	p->has = has;
	end = ip + ip_len;
	p->payload = (uint32_t)(end - h) - p->pad - ROCE_ICRC_LEN;
	if (14 + ip_len <= caplen) {
		const uint8_t *ic = end - ROCE_ICRC_LEN;
		p->icrc = (uint32_t)ic[0] | (uint32_t)ic[1] << 8 | (uint32_t)ic[2] << 16 |
			  (uint32_t)ic[3] << 24;
		p->icrc_ok = gdak_roce_icrc_ip(ip, ip_len) == p->icrc;
	}
	return 0;
}
