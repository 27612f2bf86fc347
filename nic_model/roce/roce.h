/* SPDX-License-Identifier: MIT */
/*
 * roce.h - the RoCEv2 RC protocol engine (internal to nic_model/roce/).
 *
 * A self-contained implementation of the InfiniBand reliable-connection
 * transport (IBA vol. 1 ch. 9) in its RoCEv2 encapsulation (annex A17): it
 * builds and parses packets (BTH..ICRC, i.e. the UDP payload), keeps the
 * requester's PSN window with go-back-N retransmission, and plays the
 * responder with duplicate detection and a read/atomic replay cache.  It
 * owns no socket, no clock and no memory: everything outside the protocol
 * goes through struct roce_ops, so a unit test drives it with a fake wire
 * and fake memory, and nic_model/tr_udp.c glues it to UDP sockets, libev
 * timers and the NIC model's responder.
 *
 * Files: roce_opcode.c (opcode table), roce_icrc.c (CRC32, ICRC),
 * roce_req.c (requester + completer), roce_resp.c (responder),
 * roce_qp.c (QP set-up, receive dispatch, timers), roce_fault.c (packet
 * fault injection).
 *
 * Threading: one roce_qp is driven by one thread at a time (its NIC
 * thread); a roce_ctx's fault state is shared by its QPs and must be used
 * from one thread too (tr_udp serves a context from one NIC thread or
 * gives each thread its own context).
 */
#ifndef GDAK_ROCE_H
#define GDAK_ROCE_H

#include <stddef.h>
#include <stdint.h>

#include <gdak/mlx5.h>	/* MLX5_CQE_SYNDROME_*: the engine reports these */

/* ---- wire constants ---------------------------------------------------- */

#define ROCE_UDP_PORT 4791	/* IANA port of RoCEv2 (annex A17.2.1) */
#define ROCE_PKEY_DEFAULT 0xffff
#define ROCE_PSN_MASK 0xffffffu
#define ROCE_MAX_MTU 4096
#define ROCE_MAX_HDR 64		/* BTH + the largest extension headers (12 + 28 + 4 + ...) */
#define ROCE_MAX_PKT (ROCE_MAX_HDR + ROCE_MAX_MTU + 4 /* pad */ + 4 /* ICRC */)

enum {
	ROCE_BTH_LEN = 12,
	ROCE_RETH_LEN = 16,
	ROCE_AETH_LEN = 4,
	ROCE_ATMETH_LEN = 28,
	ROCE_ATMACK_LEN = 8,
	ROCE_XATMETH_LEN = 48,
	ROCE_IMMDT_LEN = 4,
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
	/* gdak's extended atomics (docs/UDP.md "Extended atomics"): IBA's
	 * AtomicETH has no masks and no operand size, and ConnectX's wire form
	 * of its masked/4-byte atomics is not public, so they travel in
	 * opcodes of the manufacturer-specific range (transport bits 110) with
	 * an ExtAtomicETH; the answer is a plain ATOMIC_ACKNOWLEDGE. */
	ROCE_XMASKED_CMP_SWAP = 0xd3,
	ROCE_XMASKED_FETCH_ADD = 0xd4,
};

/* What an opcode's packet carries and means; one table read by the parser,
 * the builder and the logs (roce_opcode.c). */
enum roce_op_mask {
	ROCE_M_RETH = 1u << 0,
	ROCE_M_AETH = 1u << 1,
	ROCE_M_ATMETH = 1u << 2,
	ROCE_M_ATMACK = 1u << 3,
	ROCE_M_IMMDT = 1u << 4,
	ROCE_M_PAYLOAD = 1u << 5,
	ROCE_M_REQ = 1u << 6,	  /* requester -> responder */
	ROCE_M_RESP = 1u << 7,	  /* responder -> requester */
	ROCE_M_FIRST = 1u << 8,
	ROCE_M_MIDDLE = 1u << 9,
	ROCE_M_LAST = 1u << 10,
	ROCE_M_ONLY = ROCE_M_FIRST | ROCE_M_LAST,
	ROCE_M_SEND = 1u << 11,
	ROCE_M_WRITE = 1u << 12,
	ROCE_M_READ = 1u << 13,	  /* read request or read response */
	ROCE_M_ATOMIC = 1u << 14, /* atomic request or atomic ACK */
	ROCE_M_ACK = 1u << 15,
	ROCE_M_VALID = 1u << 16,
	ROCE_M_XATMETH = 1u << 17, /* an ExtAtomicETH (at off_atmeth) */
};

struct roce_opinfo {
	const char *name;	/* as Wireshark names it, e.g. "RC RDMA WRITE First" */
	uint32_t mask;		/* enum roce_op_mask */
	uint8_t hdr_len;	/* BTH + extension headers */
	/* offsets from the BTH start; 0 = absent */
	uint8_t off_reth, off_aeth, off_atmeth, off_atmack, off_immdt;
};
extern const struct roce_opinfo roce_optab[256];
static inline const struct roce_opinfo *roce_op(uint8_t opcode) { return &roce_optab[opcode]; }
const char *roce_op_name(uint8_t opcode);

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
static inline uint8_t xatmeth_size_log(const uint8_t *h)
{
	return h[12];
}
static inline uint32_t xatmeth_resv(const uint8_t *h)
{
	return roce_get24(h + 13);
}
static inline uint64_t xatmeth_swap_add(const uint8_t *h)
{
	return roce_get64(h + 16);
}
static inline uint64_t xatmeth_cmp(const uint8_t *h)
{
	return roce_get64(h + 24);
}
static inline uint64_t xatmeth_swap_mask(const uint8_t *h)
{
	return roce_get64(h + 32);
}
static inline uint64_t xatmeth_cmp_mask(const uint8_t *h)
{
	return roce_get64(h + 40);
}
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

/* RNR NAK timer codes (IBA table 45), in nanoseconds. */
uint64_t roce_rnr_timer_ns(unsigned code);

/* ---- ICRC (roce_icrc.c) ----------------------------------------------------- */

/* The IPv4/UDP headers the packet travels in: addresses in network byte
 * order, ports in host order. */
struct roce_path {
	uint32_t sip, dip;
	uint16_t sport, dport;
};

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32()): crc over buf continuing
 * from crc (0 to start). */
uint32_t roce_crc32(uint32_t crc, const void *buf, size_t len);
/* The ICRC of a RoCEv2 packet (annex A17.3.3): pkt is the UDP payload, len
 * its length including the 4 ICRC bytes.  The IPv4 header is taken as the
 * sender's kernel builds it for an unconnected socket with DF set (ID 0,
 * flags DF); TTL, TOS, the IP and UDP checksums and BTH resv8a are masked. */
uint32_t roce_icrc(const struct roce_path *path, const uint8_t *pkt, uint32_t len);
/* Compute and store the ICRC in the last 4 bytes (little-endian, as the CRC
 * register is transmitted least significant byte first). */
void roce_icrc_set(const struct roce_path *path, uint8_t *pkt, uint32_t len);
/* 1 when the stored ICRC matches the packet sent with some IPv4 ID (the
 * socket cannot see it; roce_icrc.c says how it is solved for), with that
 * ID in *ip_id (may be NULL); 0 when no ID makes it match.  A corrupted
 * packet passes with probability about 2^-16. */
int roce_icrc_check(const struct roce_path *path, const uint8_t *pkt, uint32_t len,
		    uint16_t *ip_id);
int roce_icrc_ok(const struct roce_path *path, const uint8_t *pkt, uint32_t len);
/* GF(2)[x] mod the CRC-32 polynomial, reflected (bit 31 = x^0): a * b, and
 * x^(8n) (the register effect of n zero bytes). */
uint32_t roce_gf_mul(uint32_t a, uint32_t b);
uint32_t roce_gf_x8n(uint64_t n);

/* ---- engine objects ----------------------------------------------------------- */

enum roce_wr_op {
	ROCE_WR_SEND = 0,
	ROCE_WR_SEND_IMM,
	ROCE_WR_WRITE,
	ROCE_WR_WRITE_IMM,
	ROCE_WR_READ,
	ROCE_WR_CMP_SWAP,
	ROCE_WR_FETCH_ADD,
	ROCE_WR_XMASKED_CS, /* extended: masks and asize (4 or 8) */
	ROCE_WR_XMASKED_FA,
	ROCE_WR_NOPS
};
static inline int roce_wr_is_atomic(unsigned op)
{
	return op == ROCE_WR_CMP_SWAP || op == ROCE_WR_FETCH_ADD || op == ROCE_WR_XMASKED_CS ||
	       op == ROCE_WR_XMASKED_FA;
}
const char *roce_wr_op_name(unsigned op);

enum {
	ROCE_WRF_FENCE = 1u << 0,     /* wait until every earlier WR completed */
	ROCE_WRF_SOLICITED = 1u << 1, /* BTH SE on the last packet */
};

/* One work request as the requester keeps it until completion. */
struct roce_wr {
	uint64_t cookie;	/* the caller's (the NIC model: its struct nm_op *) */
	uint8_t op;		/* enum roce_wr_op */
	uint8_t flags;		/* ROCE_WRF_* */
	uint32_t len;		/* message bytes (atomics: 8) */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;		/* network order */
	uint64_t swap_add, cmp;	/* atomics, host order */
	uint64_t swap_mask, cmp_mask; /* extended atomics (FA: field boundary in swap_mask) */
	uint8_t asize;		      /* extended atomics: operand bytes, 4 or 8 */
	/* engine-owned */
	uint32_t first_psn;
	uint32_t npkts;		/* PSNs it occupies */
	uint32_t rx_pkts;	/* read: response packets taken */
	uint8_t sent;		/* PSNs assigned */
	uint8_t resumed;	/* read: re-requested from the middle (responses may
				 * restart with FIRST/ONLY there) */
};

/* Engine statistics (per QP; the context keeps those of packets that never
 * reached a QP).  One writer. */
struct roce_stats {
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
	uint64_t retransmits;	/* packets sent again */
	uint64_t timeouts;	/* retransmission timer expiries (retry spent) */
	uint64_t early_timeouts; /* RTT-adaptive expiries before the IBA timeout */
	uint64_t seq_naks_sent, seq_naks_rcvd;
	uint64_t rnr_naks_sent, rnr_naks_rcvd;
	uint64_t err_naks_sent, err_naks_rcvd;
	uint64_t acks_sent, acks_rcvd;
	uint64_t dup_reqs;	/* duplicate requests seen by the responder */
	uint64_t bad_xatomics;	/* malformed extended atomics refused (NAK invalid request) */
	uint64_t dup_resps;	/* stale/duplicate responses dropped by the requester */
	uint64_t ooo_drops;	/* out-of-sequence packets dropped */
	uint64_t icrc_errors;	/* dropped: ICRC mismatch */
	uint64_t icrc_ip_id;	/* accepted with a non-zero IPv4 ID solved for */
	uint64_t bad_pkts;	/* dropped: malformed, wrong P_Key/TVer, unknown QP */
	uint64_t xmit_busy;	/* the wire said "later" (socket full) */
	uint64_t tx_local;	/* of tx_pkts, handed to a peer QP in this process (the
				 * owner's count: tr_udp's inbox, no kernel in between) */
	uint64_t foreign_pkts;	/* dropped: not from the connected peer's address/port */
	uint64_t unsolicited;	/* dropped: ACK/NAK/response with nothing outstanding */
	uint64_t f_drop, f_dup, f_reorder, f_corrupt, f_delay; /* injected */
};

enum roce_qp_state { ROCE_QPS_RESET = 0, ROCE_QPS_RTS, ROCE_QPS_ERR };

/* Settings of one QP (roce_qp_init fills the defaults for zeros). */
struct roce_cfg {
	uint32_t mtu;		/* path MTU: 256..4096, min of both ends */
	uint32_t sq_size;	/* WRs in flight at the engine, power of two (default 256) */
	uint32_t window;	/* unacknowledged PSNs the requester may have out (default 256) */
	uint32_t max_rd_atomic;	/* outstanding READ/atomic (default 16); also the
				 * responder's replay-cache depth */
	uint8_t retry_cnt;	/* transport retries, 0..7 (default 7) */
	uint8_t rnr_retry;	/* RNR retries, 0..7; 7 = forever (default 7) */
	uint8_t min_rnr_timer;	/* the code our RNR NAKs carry (table 45; default 1 = 10 us) */
	uint8_t cfg_set;	/* internal: defaults applied */
	uint8_t retry_forever;	/* emulator extension, not IBA: the timer never gives up
				 * (for tests at loss rates where 7 retries do not suffice) */
	uint64_t timeout_ns;	/* retransmission timeout (default 20 ms): the IBA
				 * timeout, after which each expiry spends a retry */
	uint64_t min_rto_ns;	/* floor of the RTT-adaptive early timeout (default
				 * timeout_ns / 10); == timeout_ns: not adaptive */
	uint16_t pkey;
};

struct roce_qp;
struct roce_ctx;

/* Status values from the responder callbacks: 0, a syndrome
 * (MLX5_CQE_SYNDROME_REMOTE_*: mapped to the NAK code), or ROCE_RNR. */
#define ROCE_RNR 0x100

/* A message the responder is receiving (SEND, WRITE). */
struct roce_rmsg {
	uint8_t kind;		/* ROCE_WR_SEND or ROCE_WR_WRITE */
	uint8_t has_imm;
	uint8_t active;
	uint32_t imm;		/* network order */
	uint64_t va;		/* WRITE: target, from the RETH */
	uint32_t rkey;
	uint32_t dma_len;	/* WRITE: total length; SEND: 0 (unknown until the last packet) */
	uint32_t off;		/* bytes taken so far */
	void *priv;		/* the callbacks' state */
};

struct roce_xatomic;
struct roce_ops {
	/* Transmit one packet (UDP payload, ICRC included) on qp's path.
	 * 0 = sent (or consumed), -EAGAIN = not now (try again after the
	 * wire drains), other <0 = lost (counted; retransmission recovers). */
	int (*xmit)(struct roce_qp *qp, const uint8_t *pkt, uint32_t len);
	/* Receive dispatch: the QP with this number, or NULL. */
	struct roce_qp *(*lookup)(struct roce_ctx *ctx, uint32_t qpn);

	/* requester: read len bytes of wr's local data at byte offset off
	 * (SEND/WRITE payload), or store the result of a READ (data) or an
	 * atomic (8 bytes, host order).  0 or a local syndrome. */
	int (*req_gather)(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, void *dst,
			  uint32_t len);
	int (*req_scatter)(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, const void *src,
			   uint32_t len);
	/* requester: wr finished with status 0 or a syndrome (TRANSPORT_RETRY_EXC,
	 * RNR_RETRY_EXC, REMOTE_*, WR_FLUSH_ERR for what follows an error). */
	void (*req_complete)(struct roce_qp *qp, struct roce_wr *wr, uint8_t status);

	/* responder, SEND / WRITE: m->kind, va, rkey, dma_len are set.  For a
	 * SEND, or a WRITE with immediate, a receive WQE is needed: ROCE_RNR
	 * when none is posted. */
	int (*resp_begin)(struct roce_qp *qp, struct roce_rmsg *m);
	int (*resp_data)(struct roce_qp *qp, struct roce_rmsg *m, uint32_t off, const void *src,
			 uint32_t len);
	/* A multi-packet WRITE turned out to carry an immediate (its last
	 * packet is WRITE_LAST_IMM; m->has_imm/imm are set now): it needs a
	 * receive WQE after all.  0 or ROCE_RNR; called before that packet's
	 * data is applied. */
	int (*resp_imm)(struct roce_qp *qp, struct roce_rmsg *m);
	/* Message complete (status 0) or aborted (status: the syndrome the
	 * responder's receive CQE shows).  0 or a syndrome. */
	int (*resp_end)(struct roce_qp *qp, struct roce_rmsg *m, int status);
	/* responder, READ: check rights once, then copy per response packet. */
	int (*resp_read_check)(struct roce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len);
	int (*resp_read)(struct roce_qp *qp, uint32_t rkey, uint64_t va, void *dst, uint32_t len);
	/* responder, atomic (8-byte aligned checked by the engine): apply, *orig
	 * = the value before (host order). */
	int (*resp_atomic)(struct roce_qp *qp, uint8_t opcode, uint32_t rkey, uint64_t va,
			   uint64_t swap_add, uint64_t cmp, uint64_t *orig);
	/* Optional: responder, extended atomic (ExtAtomicETH checked, x->va
	 * aligned to x->size): apply, *orig = the value before (host order,
	 * the low x->size bytes).  NULL: the opcodes are refused (NAK invalid
	 * request) as a responder without them refuses them. */
	int (*resp_xatomic)(struct roce_qp *qp, const struct roce_xatomic *x, uint64_t *orig);
	/* responder hit a fatal error (IBA class B/C/D: the QP goes to ERR). */
	void (*resp_fatal)(struct roce_qp *qp, uint8_t syndrome, const char *why);
	/* Optional: the requester moved the QP to ERR with no WR to carry the
	 * syndrome (req_complete saw none), so the owner learns of it here:
	 * a QP is never dead inside while its owner thinks it healthy. */
	void (*req_fatal)(struct roce_qp *qp, uint8_t syndrome, const char *why);
	/* Optional: a packet for this QP came from somebody else than the
	 * connected peer (rx: where from) and was dropped. */
	void (*rx_foreign)(struct roce_qp *qp, const struct roce_path *rx, const uint8_t *pkt,
			   uint32_t len);

	/* Optional: where to build the next packet (ROCE_MAX_PKT bytes), so that
	 * it needs no copy when xmit gets the same pointer back (the
	 * transport's send batch).  NULL: the QP's own buffer. */
	uint8_t *(*tx_buf)(struct roce_qp *qp);
	/* Optional: every packet sent (dir 0) or received (dir 1), for traces. */
	/* For a received packet, rx is the path it came on (the sender's own
	 * UDP source port: the ICRC covers it) and ip_id the IPv4 ID its ICRC
	 * matched with (a UDP socket does not show the sender's); the trace's
	 * frame carries both so that its ICRC checks out.  Sent: NULL, 0. */
	void (*trace_pkt)(struct roce_qp *qp, int dir, const uint8_t *pkt, uint32_t len,
			  const struct roce_path *rx, uint16_t ip_id);
};

struct roce_fault;	/* roce_fault.c */

struct roce_ctx {
	const struct roce_ops *ops;
	void *priv;		/* the owner's */
	uint32_t id;		/* for logs */
	struct roce_fault *faults; /* NULL: none */
	struct roce_stats stats;   /* packets that reached no QP */
};

/* An extended atomic as the responder received it (host order). */
struct roce_xatomic {
	uint8_t opcode; /* ROCE_XMASKED_CMP_SWAP / ROCE_XMASKED_FETCH_ADD */
	uint8_t size;	/* 4 or 8 */
	uint32_t rkey;
	uint64_t va, swap_add, cmp, swap_mask, cmp_mask;
};

/* A read or atomic the responder executed: what a duplicate of it gets. */
struct roce_rd_res {
	uint8_t valid;
	uint8_t opcode;		/* ROCE_READ_REQ / ROCE_CMP_SWAP / ROCE_FETCH_ADD */
	uint32_t psn;		/* first PSN */
	uint32_t npkts;
	uint64_t va;
	uint32_t rkey, len;
	uint64_t orig;		/* atomics: the reply */
};

/* A response the responder still has to send (read data, atomic ACK). */
struct roce_job {
	uint8_t opcode;		/* of the request */
	uint32_t psn;		/* next response PSN */
	uint64_t va;		/* next byte to read */
	uint32_t rkey;
	uint32_t left;		/* bytes still to send */
	uint8_t first;		/* next packet is the first of the response */
	uint64_t orig;
};

/* A packet held back by fault injection (reorder / delay). */
struct roce_held {
	struct roce_held *next;
	uint64_t due_ns;	/* delay: when; reorder: 0 (after the next packet) */
	uint32_t len;
	uint8_t pkt[];
};

struct roce_qp {
	struct roce_ctx *ctx;
	void *priv;		/* the owner's */
	uint32_t qpn, dqpn;
	struct roce_path path;	/* our packets' IPv4/UDP headers */
	/* Peer binding (rxe's check_addr): in RTS only packets from path.dip
	 * are taken, and from UDP port peer_sport when it is not 0 (a peer
	 * that sends from the port it advertised; a kernel or hardware RoCE
	 * stack picks its source port per flow, so 0 checks the address only). */
	uint16_t peer_sport;
	struct roce_cfg cfg;
	int state;		/* enum roce_qp_state */
	uint8_t err_syn;	/* why the QP went to ERR (0: the owner moved it) */
	const char *err_why;

	/* requester (roce_req.c) */
	struct roce_wr *sq;	/* ring of cfg.sq_size */
	uint32_t sq_head;	/* posted */
	uint32_t sq_una;	/* oldest not completed */
	uint32_t sq_tx;		/* next to (re)transmit */
	uint32_t tx_pkt;	/* packet index inside sq[sq_tx] */
	uint32_t tx_psn;	/* next PSN to send */
	uint32_t una_psn;	/* oldest PSN not acknowledged */
	uint32_t max_psn;	/* one past the highest PSN ever sent */
	uint32_t rd_inflight;	/* READ/atomic WRs sent, not completed */
	uint8_t retry_left, rnr_left;
	uint8_t retry_armed;	/* a NAK/gap may start a go-back (cleared until progress) */
	uint64_t rto_due_ns;	/* retransmission timer; 0 = stopped */
	uint64_t rto_ns;	/* current timeout: RTT-adaptive, doubled per expiry,
				 * never above cfg.timeout_ns */
	uint64_t srtt_ns, rttvar_ns; /* smoothed RTT and its variation (0: no sample) */
	uint64_t rtt_t0;	/* send time of rtt_psn (0: no sample running) */
	uint32_t rtt_psn;
	uint64_t rnr_due_ns;	/* RNR wait; 0 = none */
	uint64_t now_ns;	/* time of the current engine call */

	/* responder (roce_resp.c) */
	uint32_t epsn;		/* next PSN expected */
	uint32_t msn;		/* messages completed (AETH MSN) */
	uint8_t last_op;	/* opcode of the last accepted request packet */
	uint8_t nak_sent;	/* a NAK went out for the current gap / RNR */
	uint8_t resp_err;	/* fatal: the responder takes nothing more */
	struct roce_rmsg rmsg;
	struct {
		uint8_t pending;
		uint8_t syn;	/* AETH syndrome */
		uint32_t psn;
	} ack;
	struct roce_rd_res *res; /* ring of cfg.max_rd_atomic */
	uint32_t res_next;
	struct roce_job *jobs;	/* FIFO of 2 * cfg.max_rd_atomic */
	uint32_t job_head, job_tail;

	/* fault injection */
	struct roce_held *held;	/* reorder/delay queue, due order not kept */
	uint32_t nheld;

	uint8_t *pkt;		/* where the packet being built is: pkt_own or ops->tx_buf's */
	uint8_t pkt_own[ROCE_MAX_PKT] __attribute__((aligned(8)));
	struct roce_stats stats;
};

/* ---- roce_qp.c ------------------------------------------------------------------ */

void roce_ctx_init(struct roce_ctx *ctx, const struct roce_ops *ops, void *priv);
void roce_ctx_fini(struct roce_ctx *ctx);
/* Allocate the rings; cfg zeros mean defaults.  0 or -errno. */
int roce_qp_init(struct roce_qp *qp, struct roce_ctx *ctx, uint32_t qpn,
		 const struct roce_cfg *cfg);
void roce_qp_fini(struct roce_qp *qp);
/* RESET -> RTS: peer QPN, our first send PSN, the peer's first PSN, the
 * path MTU (already the minimum of both ends) and our path. */
int roce_qp_connect(struct roce_qp *qp, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn,
		    uint32_t mtu, const struct roce_path *path);
/* Move to ERR: every WR not completed completes with WR_FLUSH_ERR. */
void roce_qp_error(struct roce_qp *qp);

/* One received packet (the UDP payload) seen on path (sip = the sender).
 * Checks the ICRC and the headers, then hands it to the QP's requester
 * or responder.  Returns 0, or -EPROTO/-EBADMSG/-ENOENT when dropped,
 * -EPERM when it did not come from the connected peer. */
int roce_rx(struct roce_ctx *ctx, const struct roce_path *path, const uint8_t *pkt,
	    uint32_t len, uint64_t now_ns);
/* Send what may be sent now: requester packets within the window, read
 * responses, atomic ACKs, the coalesced ACK/NAK, held fault packets that
 * are due.  budget caps the packets (one QP cannot hog a thread).  Returns
 * packets sent; call again while it returns budget. */
int roce_qp_progress(struct roce_qp *qp, uint64_t now_ns, int budget);
/* The next time roce_qp_timer must run (retransmission, RNR wait, delayed
 * packets), or UINT64_MAX. */
uint64_t roce_qp_deadline(const struct roce_qp *qp);
void roce_qp_timer(struct roce_qp *qp, uint64_t now_ns);
/* 1 while the QP has work in flight (WRs not completed, responses or an
 * ACK not yet sent, held packets). */
int roce_qp_busy(const struct roce_qp *qp);
const char *roce_qp_state_name(int state);

/* ---- roce_req.c ----------------------------------------------------------------- */

/* Queue wr (copied).  0, -EAGAIN when the engine's ring is full, -EINVAL
 * for a malformed WR, -EIO when the QP is in ERR. */
int roce_post(struct roce_qp *qp, const struct roce_wr *wr);
int roce_req_send(struct roce_qp *qp, int budget);
void roce_req_rx(struct roce_qp *qp, const uint8_t *pkt, uint32_t payload_len);
void roce_req_timer(struct roce_qp *qp);
void roce_req_flush(struct roce_qp *qp, uint8_t status);
uint32_t roce_wr_npkts(const struct roce_qp *qp, const struct roce_wr *wr);

/* ---- roce_resp.c ---------------------------------------------------------------- */

void roce_resp_rx(struct roce_qp *qp, const uint8_t *pkt, uint32_t payload_len);
int roce_resp_send(struct roce_qp *qp, int budget);
int roce_resp_busy(const struct roce_qp *qp);

/* ---- roce_fault.c --------------------------------------------------------------- */

/* Parse the packet-level part of a GDAK_FAULTS spec (docs/UDP.md); entries
 * of other kinds are left to their owners.  *out is NULL when the spec has
 * none.  0 or -EINVAL (with a message naming the problem). */
int roce_fault_parse(const char *spec, struct roce_fault **out);
void roce_fault_free(struct roce_fault *f);
/* Send pkt through the fault injector and the wire (every packet goes
 * through here).  Returns what ops->xmit returned, 0 for a dropped one. */
int roce_emit(struct roce_qp *qp, uint8_t *pkt, uint32_t len);
/* Release held packets that are due (all of them with force). */
int roce_fault_release(struct roce_qp *qp, int force);
uint64_t roce_fault_deadline(const struct roce_qp *qp);
void roce_fault_qp_fini(struct roce_qp *qp);

/* Internal (roce_qp.c): complete the packet in qp->pkt whose extension
 * headers and plen payload bytes are in place: BTH, pad, ICRC.  Returns
 * its length. */
uint32_t roce_pkt_finish(struct roce_qp *qp, uint8_t opcode, int se, int ackreq, uint32_t psn,
			 uint32_t plen);
/* Internal: point qp->pkt at the buffer the next packet is built in. */
static inline uint8_t *roce_tx_begin(struct roce_qp *qp)
{
	qp->pkt = qp->ctx->ops->tx_buf ? qp->ctx->ops->tx_buf(qp) : qp->pkt_own;
	return qp->pkt;
}
/* Internal: build the BTH and send a bare ACK/NAK (roce_resp.c). */
int roce_send_ack(struct roce_qp *qp, uint8_t syn, uint32_t psn);

#endif /* GDAK_ROCE_H */
