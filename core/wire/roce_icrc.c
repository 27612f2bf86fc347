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
 * Where the CPU multiplies carry-less (x86 PCLMULQDQ), runs of 64 bytes
 * and more are folded instead, 16 bytes per multiply pair (the folding of
 * Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ";
 * here without its Barrett step: the last 16 folded bytes go through the
 * tables, which give the same register).  Folding by D bits replaces a
 * 128-bit block A = A_hi x^64 + A_lo by A_hi (x^(D+32) mod P) x^32 +
 * A_lo (x^(D-32) mod P) x^32, congruent to A x^D and below x^127; in the
 * bit-reflected lanes PCLMULQDQ works on, the x^32 and the product's
 * one-bit offset make each constant a 33-bit value: the reflected residue
 * shifted left by one.  The constants are computed at start from the
 * polynomial (gdak_roce_gf_x8n), and the folded CRC is checked against the
 * tables once before it is used.
 *
 * The IPv4 Identification field is covered too, and a receiver on a UDP
 * socket never sees it.  gdak's own packets carry ID 0 (DF datagrams of an
 * unconnected socket), but Linux rxe builds its own IPv4 header with an ID
 * from __ip_select_ident(), so its packets cannot be checked by recomputing
 * the CRC.  They can still be checked: without the pre/post inversion the
 * CRC register is linear over GF(2) in the message bits, so
 *
 *	ICRC(ID) = ICRC(0) ^ M * ID
 *
 * where column i of the 32x16 matrix M is what flipping ID bit i does to
 * the register: the byte holding it pushed through the zero bytes that
 * follow it, i.e. its one-byte CRC times x^(8n) mod P for n bytes after it.
 * A packet is accepted iff received ^ ICRC(0) lies in the span of M's
 * columns, and the solution is the ID it was sent with.  Because x is a
 * unit mod P, the factor x^(8n) is taken off the difference instead (one
 * carry-less multiply by x^(-8n), tabulated per packet length), and the
 * span test runs against one basis for n = 0, reduced once at start.
 *
 * Cost of the relaxation: a corrupted packet passes when its CRC difference
 * happens to land in a 16-dimensional subspace of the 2^32 differences, so
 * about 2^16 / 2^32 = 2^-16 of corrupted packets are falsely accepted
 * (instead of 2^-32) - still caught by nothing else, as on a real NIC that
 * is the price of not seeing the IP header.  CRC-32 detects every burst of
 * 32 bits or less, so M has full rank and the recovered ID is unique.
 */
#include <pthread.h>
#include <string.h>

#include <gdak/roce.h>

/* Reflected CRC-32 polynomial: bit 31 is x^0, bit 0 is x^31, x^32 implied. */
#define CRC_POLY 0xedb88320u
#define GF_ONE 0x80000000u	/* the polynomial 1 in that representation */

/* ICRC lengths (the UDP payload) whose ID factor is tabulated. */
#define ICRC_MIN_LEN (ROCE_BTH_LEN + ROCE_ICRC_LEN)
/* Covered bytes after the ID's low byte: 8 LRH + 20 IPv4 + 8 UDP + len - 4
 * ICRC, minus the 14 up to and including that byte. */
#define ID_TAIL(len) ((len) + 18u)

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_CLMUL 1
#include <immintrin.h>
/* Folding constants: [0] for the low lane (A_hi), [1] for the high lane
 * (A_lo); fold by 128 bits and by 512 bits (four blocks at a time). */
static uint64_t k128[2], k512[2];
static int use_clmul;
#endif

/* x^(-8 * ID_TAIL(len)) mod P, for len in ICRC_MIN_LEN..ROCE_MAX_PKT. */
static uint32_t id_unshift[ROCE_MAX_PKT + 1];
/* Echelon basis of the ID columns at distance 0: id_basis[b] has its
 * highest set bit at b (0 = no vector there); id_combo[b] the ID bits that
 * make it. */
static uint32_t id_basis[32];
static uint16_t id_combo[32];

/* a * b mod P, carry-less (reflected: shifting right multiplies by x). */
uint32_t gdak_roce_gf_mul(uint32_t a, uint32_t b)
{
	uint32_t r = 0;

	for (uint32_t bit = GF_ONE; bit; bit >>= 1) {
		if (a & bit)
			r ^= b;
		b = (b & 1) ? (b >> 1) ^ CRC_POLY : b >> 1;
	}
	return r;
}

/* x^(8n) mod P by square-and-multiply: the register effect of n zero bytes. */
uint32_t gdak_roce_gf_x8n(uint64_t n)
{
	uint32_t r = GF_ONE, sq = gdak_roce_gf_mul(GF_ONE >> 8, GF_ONE); /* x^8 */

	for (; n; n >>= 1) {
		if (n & 1)
			r = gdak_roce_gf_mul(r, sq);
		sq = gdak_roce_gf_mul(sq, sq);
	}
	return r;
}

/*
 * The column of ID bit i at distance 0 from the end: bits 0..7 live in the
 * low byte (IP header byte 5, the last one), bits 8..15 in the high byte
 * one position earlier.  A lone byte v through the raw register from 0 is
 * crc_tab[0][v].
 */
static uint32_t id_column(unsigned i)
{
	if (i < 8)
		return crc_tab[0][1u << i];
	return gdak_roce_gf_mul(crc_tab[0][1u << (i - 8)], GF_ONE >> 8);
}

static void id_tables_init(void)
{
	/* x^-1 = (P - 1) / x: P's bits above x^0, shifted down, plus x^31 */
	uint32_t xinv = CRC_POLY << 1 | 1, xinv8 = GF_ONE, u;

	for (int k = 0; k < 8; k++)
		xinv8 = gdak_roce_gf_mul(xinv8, xinv);
	u = GF_ONE;
	for (uint32_t k = 0; k < ID_TAIL(ICRC_MIN_LEN); k++)
		u = gdak_roce_gf_mul(u, xinv8);
	for (uint32_t len = ICRC_MIN_LEN; len <= ROCE_MAX_PKT; len++) {
		id_unshift[len] = u;
		u = gdak_roce_gf_mul(u, xinv8);
	}
	for (unsigned i = 0; i < 16; i++) {
		uint32_t v = id_column(i);
		uint16_t m = (uint16_t)(1u << i);

		for (int b = 31; b >= 0 && v; b--) {
			if (!(v >> b & 1))
				continue;
			if (!id_basis[b]) {
				id_basis[b] = v;
				id_combo[b] = m;
				break;
			}
			v ^= id_basis[b];
			m ^= id_combo[b];
		}
	}
}

static uint32_t crc_update(uint32_t c, const uint8_t *p, size_t len);

#ifdef HAVE_CLMUL
__attribute__((target("pclmul,sse2")))
static inline __m128i fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* The raw register over p[0..len), len >= 64. */
__attribute__((target("pclmul,sse2")))
static uint32_t crc_fold(uint32_t c, const uint8_t *p, size_t len)
{
	const __m128i k1 = _mm_set_epi64x((long long)k128[1], (long long)k128[0]);
	const __m128i k4 = _mm_set_epi64x((long long)k512[1], (long long)k512[0]);
	__m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	__m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
	uint8_t last[16];

	/* the register enters as the first four bytes of the message */
	x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)c));
	p += 64;
	len -= 64;
	for (; len >= 64; p += 64, len -= 64) {
		x0 = _mm_xor_si128(fold(x0, k4), _mm_loadu_si128((const __m128i *)(const void *)p));
		x1 = _mm_xor_si128(fold(x1, k4),
				   _mm_loadu_si128((const __m128i *)(const void *)(p + 16)));
		x2 = _mm_xor_si128(fold(x2, k4),
				   _mm_loadu_si128((const __m128i *)(const void *)(p + 32)));
		x3 = _mm_xor_si128(fold(x3, k4),
				   _mm_loadu_si128((const __m128i *)(const void *)(p + 48)));
	}
	x1 = _mm_xor_si128(x1, fold(x0, k1));
	x2 = _mm_xor_si128(x2, fold(x1, k1));
	x3 = _mm_xor_si128(x3, fold(x2, k1));
	for (; len >= 16; p += 16, len -= 16)
		x3 = _mm_xor_si128(fold(x3, k1), _mm_loadu_si128((const __m128i *)(const void *)p));
	_mm_storeu_si128((__m128i *)(void *)last, x3);
	return crc_update(crc_update(0, last, 16), p, len);
}

static void clmul_init(void)
{
	uint8_t t[300];
	uint32_t a, b;

	__builtin_cpu_init();
	if (!__builtin_cpu_supports("pclmul"))
		return;
	k128[0] = (uint64_t)gdak_roce_gf_x8n(20) << 1; /* x^160 */
	k128[1] = (uint64_t)gdak_roce_gf_x8n(12) << 1; /* x^96 */
	k512[0] = (uint64_t)gdak_roce_gf_x8n(68) << 1; /* x^544 */
	k512[1] = (uint64_t)gdak_roce_gf_x8n(60) << 1; /* x^480 */
	for (unsigned i = 0; i < sizeof(t); i++)
		t[i] = (uint8_t)(i * 131 + 7);
	a = crc_update(0x12345678u, t + 1, sizeof(t) - 1);
	b = crc_fold(0x12345678u, t + 1, sizeof(t) - 1);
	use_clmul = a == b;
}
#endif

static void len_tab_init(void);
static void icrc_self_check(void);

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
	id_tables_init();
#ifdef HAVE_CLMUL
	clmul_init();
#endif
	len_tab_init();
	icrc_self_check();
}

/* The raw register update (no pre/post inversion). */
static uint32_t crc_update(uint32_t c, const uint8_t *p, size_t len)
{
#ifdef HAVE_CLMUL
	if (len >= 64 && use_clmul)
		return crc_fold(c, p, len);
#endif
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

uint32_t gdak_roce_crc32(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_tab_init);
	return ~crc_update(~crc, buf, len);
}

/*
 * The 36 bytes before the BTH (LRH ones, IPv4, UDP headers) differ between
 * packets of one path only in the two length fields.  The raw register is
 * affine in the message bits, so the register after those 36 bytes is the
 * one for lengths 0 (kept per path in a small per-thread cache: a QP pair
 * uses two paths) xor what each length byte alone contributes (len_tab:
 * the IPv4 total length's high and low byte, then the UDP length's).
 * Small packets (ACKs, 8-byte WRITEs) spend half their ICRC on those bytes.
 */
#define PH_LEN (8 + 20 + 8)
static uint32_t len_tab[4][256];

struct path_base {
	struct roce_path path;
	uint32_t reg;
	int valid;
};
static __thread struct path_base base_cache[4];
static __thread unsigned base_next;

static int use_path_cache;	/* the cached form agreed with the plain one at start */

/* The fields a router may change, in the 8 + 20 + 8 + 12 bytes up to the
 * BTH's end: replaced by ones (IBA 7.8.1, A17.3.3).  ph[0..7] stands for
 * the LRH. */
static void mask_variant(uint8_t *ph)
{
	uint8_t *ip = ph + 8, *udp = ip + GDAK_ROCE_IPV4_LEN;

	memset(ph, 0xff, 8);
	ip[1] = 0xff;		     /* TOS (DSCP, ECN) */
	ip[8] = 0xff;		     /* TTL */
	roce_put16(ip + 10, 0xffff); /* header checksum */
	roce_put16(udp + 6, 0xffff); /* UDP checksum */
	udp[8 + 4] = 0xff;	     /* BTH resv8a (FECN/BECN) */
}

/* The 36 bytes before the BTH with both length fields 0 (the headers
 * gdak_roce_ipv4_udp builds, ID 0, masked); ph has room for a BTH after
 * them, which mask_variant touches. */
static void pseudo_hdr0(const struct roce_path *path, uint8_t *ph)
{
	uint8_t *ip = ph + 8;

	gdak_roce_ipv4_udp(ip, path, 0, 0, 0);
	roce_put16(ip + 2, 0);
	roce_put16(ip + GDAK_ROCE_IPV4_LEN + 4, 0);
	mask_variant(ph);
}

static void len_tab_init(void)
{
	static const unsigned pos[4] = {8 + 2, 8 + 3, 8 + 20 + 4, 8 + 20 + 5};
	uint8_t m[PH_LEN];

	for (unsigned f = 0; f < 4; f++) {
		for (unsigned v = 0; v < 256; v++) {
			memset(m, 0, sizeof(m));
			m[pos[f]] = (uint8_t)v;
			len_tab[f][v] = crc_update(0, m, sizeof(m));
		}
	}
}

/* The raw register after the 36 bytes before the BTH, for a packet of len
 * bytes (the UDP payload) on path. */
static uint32_t path_reg(const struct roce_path *path, uint32_t len)
{
	uint32_t ip_len = 20 + 8 + len, udp_len = 8 + len, reg = 0;
	struct path_base *b = NULL;

	for (unsigned i = 0; i < 4; i++) {
		struct path_base *e = &base_cache[i];

		if (e->valid && e->path.sip == path->sip && e->path.dip == path->dip &&
		    e->path.sport == path->sport && e->path.dport == path->dport) {
			b = e;
			break;
		}
	}
	if (!b) {
		uint8_t ph[PH_LEN + ROCE_BTH_LEN] = { 0 };

		b = &base_cache[base_next++ % 4];
		pseudo_hdr0(path, ph);
		b->path = *path;
		b->reg = crc_update(0xffffffffu, ph, PH_LEN);
		b->valid = 1;
	}
	reg = b->reg;
	return reg ^ len_tab[0][(ip_len >> 8) & 0xff] ^ len_tab[1][ip_len & 0xff] ^
	       len_tab[2][(udp_len >> 8) & 0xff] ^ len_tab[3][udp_len & 0xff];
}

static uint32_t icrc_cached(const struct roce_path *path, const uint8_t *pkt, uint32_t len)
{
	uint8_t bth[ROCE_BTH_LEN];
	uint32_t c;

	memcpy(bth, pkt, ROCE_BTH_LEN);
	bth[4] = 0xff;				/* BTH resv8a (FECN/BECN): masked */
	c = crc_update(path_reg(path, len), bth, ROCE_BTH_LEN);
	c = crc_update(c, pkt + ROCE_BTH_LEN, len - ROCE_BTH_LEN - ROCE_ICRC_LEN);
	return ~c;
}

/* The straightforward form, kept as the reference the cached one is
 * checked against at start. */
static uint32_t icrc_plain(const struct roce_path *path, const uint8_t *pkt, uint32_t len)
{
	uint8_t ph[PH_LEN + ROCE_BTH_LEN];
	uint32_t c;

	/* ID 0: what an unconnected socket's DF datagrams carry */
	gdak_roce_ipv4_udp(ph + 8, path, len, 0, 0);
	memcpy(ph + PH_LEN, pkt, ROCE_BTH_LEN);
	mask_variant(ph);

	c = crc_update(0xffffffffu, ph, sizeof(ph));
	c = crc_update(c, pkt + ROCE_BTH_LEN, len - ROCE_BTH_LEN - ROCE_ICRC_LEN);
	return ~c;
}

uint32_t gdak_roce_icrc(const struct roce_path *path, const uint8_t *pkt, uint32_t len)
{
	pthread_once(&crc_once, crc_tab_init);
	return use_path_cache ? icrc_cached(path, pkt, len) : icrc_plain(path, pkt, len);
}

static void icrc_self_check(void)
{
	struct roce_path p = {.sip = 0x0100007f, .dip = 0x0201a8c0, .sport = 49152,
			      .dport = ROCE_UDP_PORT};
	uint8_t pkt[300];

	for (unsigned i = 0; i < sizeof(pkt); i++)
		pkt[i] = (uint8_t)(i * 37 + 11);
	use_path_cache = 1;
	for (uint32_t len = ROCE_BTH_LEN + ROCE_ICRC_LEN; len <= sizeof(pkt); len += 13)
		if (icrc_cached(&p, pkt, len) != icrc_plain(&p, pkt, len))
			use_path_cache = 0;
	memset(base_cache, 0, sizeof(base_cache));
}

uint32_t gdak_roce_icrc_ip(const uint8_t *ip, uint32_t ip_len)
{
	uint8_t ph[PH_LEN + ROCE_BTH_LEN];
	uint32_t c;

	pthread_once(&crc_once, crc_tab_init);
	if (ip_len < sizeof(ph) - 8 + ROCE_ICRC_LEN)
		return 0;
	memcpy(ph + 8, ip, sizeof(ph) - 8);
	mask_variant(ph);
	c = crc_update(0xffffffffu, ph, sizeof(ph));
	c = crc_update(c, ip + sizeof(ph) - 8, ip_len - (sizeof(ph) - 8) - ROCE_ICRC_LEN);
	return ~c;
}

void gdak_roce_icrc_set(const struct roce_path *path, uint8_t *pkt, uint32_t len)
{
	uint32_t c = gdak_roce_icrc(path, pkt, len);
	uint8_t *p = pkt + len - ROCE_ICRC_LEN;

	p[0] = (uint8_t)c; p[1] = (uint8_t)(c >> 8); p[2] = (uint8_t)(c >> 16); p[3] = (uint8_t)(c >> 24);
}

int gdak_roce_icrc_check(const struct roce_path *path, const uint8_t *pkt, uint32_t len,
			 uint16_t *ip_id)
{
	const uint8_t *p = pkt + len - ROCE_ICRC_LEN;
	uint32_t got = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	uint32_t d;
	uint16_t id = 0;

	if (len < ICRC_MIN_LEN || len > ROCE_MAX_PKT)
		return 0;
	d = got ^ gdak_roce_icrc(path, pkt, len);
	if (d) {
		/* take the distance factor off, then reduce against the basis */
		d = gdak_roce_gf_mul(d, id_unshift[len]);
		for (int b = 31; b >= 0 && d; b--) {
			if (!(d >> b & 1))
				continue;
			if (!id_basis[b])
				return 0;
			d ^= id_basis[b];
			id ^= id_combo[b];
		}
	}
	if (ip_id)
		*ip_id = id;
	return 1;
}

int gdak_roce_icrc_ok(const struct roce_path *path, const uint8_t *pkt, uint32_t len)
{
	return gdak_roce_icrc_check(path, pkt, len, NULL);
}
