/* SPDX-License-Identifier: MIT */
/*
 * roce.h - RoCEv2 wire facts (IBA vol. 1 ch. 9, annex A17): header lengths,
 * the RC opcode table, header accessors, PSN arithmetic, the ICRC and the
 * IPv4/UDP/Ethernet headers a packet travels in.  The one home of these:
 * the NIC model's RoCE engine (nic_model/roce/), the trace writer, gdak-trace
 * and the tests read them; code in core/wire/ (target gdak_wire).
 *
 * Internal to gdak (gdak.h does not include it): the header accessors keep
 * the short names the engine has always used (bth_*, reth_*, ...), the
 * functions and tables carry the gdak_roce_ prefix.
 */
#ifndef GDAK_ROCE_H
#define GDAK_ROCE_H

#include <stddef.h>
#include <stdint.h>

/* ---- wire constants ---------------------------------------------------- */

#define ROCE_UDP_PORT 4791 /* IANA port of RoCEv2 (annex A17.2.1) */
#define ROCE_PKEY_DEFAULT 0xffff
#define ROCE_PSN_MASK 0xffffffu
#define ROCE_MAX_MTU 4096
#define ROCE_MAX_HDR 96 /* BTH + the largest extension headers (12 + DCETH 20 + ExtAtomicETH 48) */
#define ROCE_MAX_PKT (ROCE_MAX_HDR + ROCE_MAX_MTU + 4 /* pad */ + 4 /* ICRC */)

enum {
	ROCE_BTH_LEN = 12,
	ROCE_RETH_LEN = 16,
	ROCE_AETH_LEN = 4,
	ROCE_ATMETH_LEN = 28,
	ROCE_ATMACK_LEN = 8,
	ROCE_XATMETH_LEN = 48, /* gdak's ExtAtomicETH (docs/UDP.md) */
	ROCE_DCETH_LEN = 20,   /* gdak's DC extended transport header (docs/UDP.md "DC") */
	ROCE_IMMDT_LEN = 4,
	ROCE_IETH_LEN = 4,
	ROCE_ICRC_LEN = 4,
};

/* RC opcodes, BTH byte 0 (IBA table 39: transport 000 = RC). */
enum roce_opcode {
	ROCE_SEND_FIRST = 0x00,
	ROCE_SEND_MIDDLE = 0x01,
	ROCE_SEND_LAST = 0x02,
	ROCE_SEND_LAST_IMM = 0x03,
	ROCE_SEND_ONLY = 0x04,
	ROCE_SEND_ONLY_IMM = 0x05,
	ROCE_WRITE_FIRST = 0x06,
	ROCE_WRITE_MIDDLE = 0x07,
	ROCE_WRITE_LAST = 0x08,
	ROCE_WRITE_LAST_IMM = 0x09,
	ROCE_WRITE_ONLY = 0x0a,
	ROCE_WRITE_ONLY_IMM = 0x0b,
	ROCE_READ_REQ = 0x0c,
	ROCE_READ_RESP_FIRST = 0x0d,
	ROCE_READ_RESP_MIDDLE = 0x0e,
	ROCE_READ_RESP_LAST = 0x0f,
	ROCE_READ_RESP_ONLY = 0x10,
	ROCE_ACK = 0x11,
	ROCE_ATOMIC_ACK = 0x12,
	ROCE_CMP_SWAP = 0x13,
	ROCE_FETCH_ADD = 0x14,
	ROCE_SEND_LAST_INV = 0x16,
	ROCE_SEND_ONLY_INV = 0x17,
	/* gdak's extended atomics (docs/UDP.md "Extended atomics"): IBA's
	 * AtomicETH has no masks and no operand size, and ConnectX's wire form
	 * of its masked/4-byte atomics is not public, so they travel in
	 * opcodes of the manufacturer-specific range (transport bits 110) with
	 * an ExtAtomicETH; the answer is a plain ATOMIC_ACKNOWLEDGE. */
	ROCE_XMASKED_CMP_SWAP = 0xd3,
	ROCE_XMASKED_FETCH_ADD = 0xd4,
	/* gdak's Dynamically Connected transport (docs/UDP.md "DC"): ConnectX's
	 * DC wire format is not public (rdma-core and Linux see only address
	 * vectors, Wireshark decodes none), so DC packets use the other
	 * manufacturer-specific range, transport bits 111: the RC opcode in the
	 * low five bits (0xe0 + RC opcode), requests with a DCETH right after
	 * the BTH, responses laid out as RC's.  The two extended atomics, whose
	 * RC codes 0xd3/0xd4 share their low bits with COMPARE_SWAP /
	 * FETCH_ADD, take 0xf8 / 0xf9. */
	ROCE_DC_BASE = 0xe0,
	ROCE_DC_XMASKED_CMP_SWAP = 0xf8,
	ROCE_DC_XMASKED_FETCH_ADD = 0xf9,
};

/* The DC opcode of an RC one and back (0xff: none). */
static inline uint8_t roce_dc_opcode(uint8_t rc)
{
	return rc == ROCE_XMASKED_CMP_SWAP    ? ROCE_DC_XMASKED_CMP_SWAP
	       : rc == ROCE_XMASKED_FETCH_ADD ? ROCE_DC_XMASKED_FETCH_ADD
	       : rc < 0x20		      ? (uint8_t)(ROCE_DC_BASE | rc)
					      : 0xff;
}
static inline uint8_t roce_dc_rc_opcode(uint8_t dc)
{
	return dc == ROCE_DC_XMASKED_CMP_SWAP	 ? ROCE_XMASKED_CMP_SWAP
	       : dc == ROCE_DC_XMASKED_FETCH_ADD ? ROCE_XMASKED_FETCH_ADD
	       : (dc & 0xe0) == ROCE_DC_BASE	 ? (uint8_t)(dc & 0x1f)
						 : 0xff;
}
static inline int roce_opcode_is_dc(uint8_t opcode)
{
	return (opcode & 0xe0) == ROCE_DC_BASE;
}

/* What an opcode's packet carries and means; one table read by the
 * engine's parser and builders, the logs and gdak-trace (roce_opcode.c). */
enum roce_op_mask {
	ROCE_M_RETH = 1u << 0,
	ROCE_M_AETH = 1u << 1,
	ROCE_M_ATMETH = 1u << 2,
	ROCE_M_ATMACK = 1u << 3,
	ROCE_M_IMMDT = 1u << 4,
	ROCE_M_PAYLOAD = 1u << 5,
	ROCE_M_REQ = 1u << 6,  /* requester -> responder */
	ROCE_M_RESP = 1u << 7, /* responder -> requester */
	ROCE_M_FIRST = 1u << 8,
	ROCE_M_MIDDLE = 1u << 9,
	ROCE_M_LAST = 1u << 10,
	ROCE_M_ONLY = ROCE_M_FIRST | ROCE_M_LAST,
	ROCE_M_SEND = 1u << 11,
	ROCE_M_WRITE = 1u << 12,
	ROCE_M_READ = 1u << 13,	  /* read request or read response */
	ROCE_M_ATOMIC = 1u << 14, /* atomic request or atomic ACK */
	ROCE_M_ACK = 1u << 15,
	ROCE_M_VALID = 1u << 16, /* the engine executes it (else: named and decoded only) */
	ROCE_M_IETH = 1u << 17,
	ROCE_M_XATMETH = 1u << 18, /* an ExtAtomicETH (at off_atmeth) */
	ROCE_M_DC = 1u << 19,	   /* gdak's DC transport (0xe0..0xf9) */
	ROCE_M_DCETH = 1u << 20,   /* a DCETH right after the BTH (DC requests) */
};

struct roce_opinfo {
	const char *name; /* IBA's name, e.g. "RDMA_WRITE_FIRST" (gdak-trace adds "RC_") */
	uint32_t mask;	  /* enum roce_op_mask */
	uint8_t hdr_len;  /* BTH + extension headers */
	/* offsets from the BTH start; 0 = absent */
	uint8_t off_reth, off_aeth, off_atmeth, off_atmack, off_immdt, off_ieth;
};
/* Indexed by the BTH opcode; RC (transport 000), gdak's two extended
 * atomics (0xd3, 0xd4) and gdak's DC opcodes (0xe0..0xf9) have entries. */
extern const struct roce_opinfo gdak_roce_optab[256];
static inline const struct roce_opinfo *roce_op(uint8_t opcode)
{
	return &gdak_roce_optab[opcode];
}
/* The entry's name, "UNKNOWN" where there is none. */
const char *gdak_roce_op_name(uint8_t opcode);

/* The accessors keep the engine's compact one-line layout. */
/* clang-format off */
/* ---- byte order: only here ------------------------------------------------ */

static inline uint16_t roce_get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t roce_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}
static inline uint32_t roce_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t roce_get64(const uint8_t *p)
{
	return (uint64_t)roce_get32(p) << 32 | roce_get32(p + 4);
}
static inline void roce_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void roce_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16); p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)v;
}
static inline void roce_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void roce_put64(uint8_t *p, uint64_t v)
{
	roce_put32(p, (uint32_t)(v >> 32));
	roce_put32(p + 4, (uint32_t)v);
}

/* ---- BTH (IBA 9.2): opcode | SE M Pad TVer | P_Key | F B resv6 | DestQP |
 *      A resv7 | PSN ---------------------------------------------------------- */

static inline uint8_t bth_opcode(const uint8_t *b) { return b[0]; }
static inline int bth_se(const uint8_t *b) { return b[1] >> 7; }
static inline int bth_mig(const uint8_t *b) { return (b[1] >> 6) & 1; }
static inline unsigned bth_pad(const uint8_t *b) { return (b[1] >> 4) & 3; }
static inline unsigned bth_tver(const uint8_t *b) { return b[1] & 0xf; }
static inline uint16_t bth_pkey(const uint8_t *b) { return roce_get16(b + 2); }
static inline uint32_t bth_qpn(const uint8_t *b) { return roce_get24(b + 5); }
static inline int bth_ackreq(const uint8_t *b) { return b[8] >> 7; }
static inline uint32_t bth_psn(const uint8_t *b) { return roce_get24(b + 9); }
static inline void bth_set(uint8_t *b, uint8_t opcode, int se, unsigned pad, uint16_t pkey,
			   uint32_t qpn, int ackreq, uint32_t psn)
{
	b[0] = opcode;
	/* MigReq 1: the path is "migrated" (no APM), as rxe and ConnectX send */
	b[1] = (uint8_t)((se ? 0x80 : 0) | 0x40 | (pad & 3) << 4);
	roce_put16(b + 2, pkey);
	b[4] = 0;
	roce_put24(b + 5, qpn);
	b[8] = ackreq ? 0x80 : 0;
	roce_put24(b + 9, psn);
}

/* RETH (9.3.3): VA | R_Key | DMA length */
static inline uint64_t reth_va(const uint8_t *h) { return roce_get64(h); }
static inline uint32_t reth_rkey(const uint8_t *h) { return roce_get32(h + 8); }
static inline uint32_t reth_len(const uint8_t *h) { return roce_get32(h + 12); }
static inline void reth_set(uint8_t *h, uint64_t va, uint32_t rkey, uint32_t len)
{
	roce_put64(h, va); roce_put32(h + 8, rkey); roce_put32(h + 12, len);
}

/* AETH (9.3.5): syndrome | MSN.  Syndrome bits 6:5 = 00 ACK (4:0 credits),
 * 01 RNR NAK (4:0 timer), 11 NAK (4:0 code); table 42. */
enum {
	AETH_ACK = 0x00,
	AETH_RNR_NAK = 0x20,
	AETH_NAK = 0x60,
	AETH_TYPE_MASK = 0x60,
	AETH_ACK_NO_CREDIT = 0x1f, /* "invalid credit count": no end-to-end flow control */
	AETH_NAK_PSN_SEQ = 0,
	AETH_NAK_INVALID_REQ = 1,
	AETH_NAK_REM_ACCESS = 2,
	AETH_NAK_REM_OP = 3,
	AETH_NAK_INVALID_RD_REQ = 4,
};
static inline uint8_t aeth_syn(const uint8_t *h) { return h[0]; }
static inline uint32_t aeth_msn(const uint8_t *h) { return roce_get24(h + 1); }
static inline void aeth_set(uint8_t *h, uint8_t syn, uint32_t msn)
{
	h[0] = syn;
	roce_put24(h + 1, msn);
}

/* AtomicETH (9.3.4): VA | R_Key | Swap (or Add) data | Compare data */
static inline uint64_t atmeth_va(const uint8_t *h) { return roce_get64(h); }
static inline uint32_t atmeth_rkey(const uint8_t *h) { return roce_get32(h + 8); }
static inline uint64_t atmeth_swap_add(const uint8_t *h) { return roce_get64(h + 12); }
static inline uint64_t atmeth_cmp(const uint8_t *h) { return roce_get64(h + 20); }
static inline void atmeth_set(uint8_t *h, uint64_t va, uint32_t rkey, uint64_t swap_add, uint64_t cmp)
{
	roce_put64(h, va); roce_put32(h + 8, rkey); roce_put64(h + 12, swap_add); roce_put64(h + 20, cmp);
}

/* ExtAtomicETH (gdak, docs/UDP.md): VA | R_Key | size (log2 of the operand
 * bytes: 2 or 3) | 3 reserved bytes | Swap (or Add) | Compare | Swap mask
 * (FETCH_ADD: field boundary) | Compare mask, each 8 bytes big-endian; a
 * 4-byte operation carries its operands in the low 32 bits.  VA and R_Key
 * sit where AtomicETH has them (atmeth_va / atmeth_rkey read both). */
static inline uint8_t xatmeth_size_log(const uint8_t *h) { return h[12]; }
static inline uint32_t xatmeth_resv(const uint8_t *h) { return roce_get24(h + 13); }
static inline uint64_t xatmeth_swap_add(const uint8_t *h) { return roce_get64(h + 16); }
static inline uint64_t xatmeth_cmp(const uint8_t *h) { return roce_get64(h + 24); }
static inline uint64_t xatmeth_swap_mask(const uint8_t *h) { return roce_get64(h + 32); }
static inline uint64_t xatmeth_cmp_mask(const uint8_t *h) { return roce_get64(h + 40); }
static inline void xatmeth_set(uint8_t *h, uint64_t va, uint32_t rkey, uint8_t size_log,
			       uint64_t swap_add, uint64_t cmp, uint64_t swap_mask,
			       uint64_t cmp_mask)
{
	roce_put64(h, va);
	roce_put32(h + 8, rkey);
	h[12] = size_log;
	roce_put24(h + 13, 0);
	roce_put64(h + 16, swap_add);
	roce_put64(h + 24, cmp);
	roce_put64(h + 32, swap_mask);
	roce_put64(h + 40, cmp_mask);
}

/* DCETH (gdak, docs/UDP.md "DC"), on every DC request packet: DC access
 * key | stream channel (8 bits) and DCI QPN (24) | connection number (the
 * DCI stream's count of connects, serial) | the DCI's path MTU as IBA
 * codes it (8 bits: 1 = 256 .. 5 = 4096; the DCT's read responses are cut
 * to it, there being no connect that could tell it) and the connection's
 * first PSN (24).  The DCT keeps one responder context per
 * DCI and takes a larger connection number as a new connection starting
 * at that PSN. */
static inline uint64_t dceth_key(const uint8_t *h) { return roce_get64(h); }
static inline uint8_t dceth_stream(const uint8_t *h) { return h[8]; }
static inline uint32_t dceth_dci(const uint8_t *h) { return roce_get24(h + 9); }
static inline uint32_t dceth_conn(const uint8_t *h) { return roce_get32(h + 12); }
static inline uint8_t dceth_mtu(const uint8_t *h) { return h[16]; }
static inline uint32_t dceth_psn0(const uint8_t *h) { return roce_get24(h + 17); }
static inline void dceth_set(uint8_t *h, uint64_t key, uint8_t stream, uint32_t dci, uint32_t conn,
			     uint8_t mtu_code, uint32_t psn0)
{
	roce_put64(h, key);
	h[8] = stream;
	roce_put24(h + 9, dci);
	roce_put32(h + 12, conn);
	h[16] = mtu_code;
	roce_put24(h + 17, psn0);
}

/* AtomicAckETH (9.3.6): original remote data; ImmDt (9.3.7): 4 bytes, kept
 * in network order end to end (mlx5 WQEs and CQEs store it big-endian). */
static inline uint64_t atmack_orig(const uint8_t *h) { return roce_get64(h); }
static inline void atmack_set(uint8_t *h, uint64_t orig) { roce_put64(h, orig); }

/* 24-bit PSN arithmetic (IBA 9.7.1): a - b as a signed distance. */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}
static inline uint32_t psn_add(uint32_t a, int32_t n) { return (a + (uint32_t)n) & ROCE_PSN_MASK; }
/* clang-format on */

/* RNR NAK timer codes (IBA table 45), in nanoseconds. */
uint64_t gdak_roce_rnr_timer_ns(unsigned code);

/* ---- ICRC (core/wire/roce_icrc.c) ----------------------------------------------------- */

/* The IPv4/UDP headers the packet travels in: addresses in network byte
 * order, ports in host order. */
struct roce_path {
	uint32_t sip, dip;
	uint16_t sport, dport;
};

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32()): crc over buf continuing
 * from crc (0 to start). */
uint32_t gdak_roce_crc32(uint32_t crc, const void *buf, size_t len);
/* The ICRC of a RoCEv2 packet (annex A17.3.3): pkt is the UDP payload, len
 * its length including the 4 ICRC bytes.  The IPv4 header is taken as the
 * sender's kernel builds it for an unconnected socket with DF set (ID 0,
 * flags DF); TTL, TOS, the IP and UDP checksums and BTH resv8a are masked. */
uint32_t gdak_roce_icrc(const struct roce_path *path, const uint8_t *pkt, uint32_t len);
/* Compute and store the ICRC in the last 4 bytes (little-endian, as the CRC
 * register is transmitted least significant byte first). */
void gdak_roce_icrc_set(const struct roce_path *path, uint8_t *pkt, uint32_t len);
/* 1 when the stored ICRC matches the packet sent with some IPv4 ID (the
 * socket cannot see it; core/wire/roce_icrc.c says how it is solved for), with that
 * ID in *ip_id (may be NULL); 0 when no ID makes it match.  A corrupted
 * packet passes with probability about 2^-16. */
int gdak_roce_icrc_check(const struct roce_path *path, const uint8_t *pkt, uint32_t len,
			 uint16_t *ip_id);
int gdak_roce_icrc_ok(const struct roce_path *path, const uint8_t *pkt, uint32_t len);
/* GF(2)[x] mod the CRC-32 polynomial, reflected (bit 31 = x^0): a * b, and
 * x^(8n) (the register effect of n zero bytes). */
uint32_t gdak_roce_gf_mul(uint32_t a, uint32_t b);
uint32_t gdak_roce_gf_x8n(uint64_t n);

/* ---- frames (core/wire/roce_frame.c) ------------------------------------------ */

enum {
	GDAK_ROCE_ETH_LEN = 14,
	GDAK_ROCE_IPV4_LEN = 20,
	GDAK_ROCE_UDP_LEN = 8,
	GDAK_ROCE_FRAME_HDRS = GDAK_ROCE_ETH_LEN + GDAK_ROCE_IPV4_LEN + GDAK_ROCE_UDP_LEN,
};

/* RFC 791 header checksum of a 20-byte IPv4 header (its checksum field as
 * it stands is included: zero it first). */
uint16_t gdak_roce_ipv4_csum(const uint8_t *ip);
/*
 * The IPv4 and UDP headers (28 bytes at ip) of a RoCEv2 packet of len bytes
 * (the UDP payload, ICRC included) on path, as a kernel sends a datagram of
 * an unconnected socket: version 4 without options, TOS 0, ID ip_id, DF,
 * TTL 64, UDP checksum 0 (IBA A17.4.3 allows it over IPv4).  with_csum: the
 * IPv4 header checksum filled in, else 0 (the kernel fills it in).
 */
void gdak_roce_ipv4_udp(uint8_t *ip, const struct roce_path *path, uint32_t len, uint16_t ip_id,
			int with_csum);
/* A locally administered MAC derived from an IPv4 address (network order):
 * 02:00:a:b:c:d, what traces show for the Ethernet header gdak never sends. */
void gdak_roce_mac(uint8_t mac[6], uint32_t ip_be);
/* The whole Ethernet/IPv4/UDP header (GDAK_ROCE_FRAME_HDRS bytes at f) of a
 * frame carrying len bytes of UDP payload: MACs from gdak_roce_mac, the
 * IPv4 checksum filled in. */
void gdak_roce_frame_hdrs(uint8_t *f, const struct roce_path *path, uint32_t len, uint16_t ip_id);
/* ICRC of a packet in a frame: ip points at its IPv4 header (no options),
 * ip_len bytes to the end of the ICRC (excluded from the sum); the header's
 * own ID, lengths and addresses are covered as found.  0 when too short. */
uint32_t gdak_roce_icrc_ip(const uint8_t *ip, uint32_t ip_len);

#endif /* GDAK_ROCE_H */
