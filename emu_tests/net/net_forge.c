/* SPDX-License-Identifier: MIT */
/* net_forge.c - the hostile sender of net_forge.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net_forge.h"
#include "tr_udp.h"

int forge_open(struct forge *f, const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);

	f->raw = -1;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -EINVAL;
	f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (f->fd < 0)
		return -errno;
	if (bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(f->fd, (struct sockaddr *)&sa, &sl)) {
		int e = errno;
		close(f->fd);
		return -e;
	}
	f->sip = sa.sin_addr.s_addr;
	f->sport = ntohs(sa.sin_port);
	/* IPPROTO_RAW implies IP_HDRINCL: we write the IPv4 header */
	if (!getenv("GDAK_FORGE_NO_RAW"))
		f->raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	return 0;
}

void forge_close(struct forge *f)
{
	close(f->fd);
	if (f->raw >= 0)
		close(f->raw);
}

void forge_reth(uint8_t *h, uint64_t va, uint32_t rkey, uint32_t len)
{
	reth_set(h, va, rkey, len);
}
void forge_atmeth(uint8_t *h, uint64_t va, uint32_t rkey, uint64_t swap_add, uint64_t cmp)
{
	atmeth_set(h, va, rkey, swap_add, cmp);
}
void forge_aeth(uint8_t *h, uint8_t syn, uint32_t msn)
{
	aeth_set(h, syn, msn);
}

uint32_t forge_build(uint8_t *pkt, const struct roce_path *path, uint8_t opcode, uint32_t dqpn,
		     uint32_t psn, const void *ext, uint32_t ext_len, const void *payload,
		     uint32_t plen)
{
	uint32_t pad = (4 - (plen & 3)) & 3;
	uint32_t len = ROCE_BTH_LEN + ext_len + plen + pad + ROCE_ICRC_LEN;

	bth_set(pkt, opcode, 0, pad, ROCE_PKEY_DEFAULT, dqpn, 1, psn);
	if (ext_len)
		memcpy(pkt + ROCE_BTH_LEN, ext, ext_len);
	if (plen)
		memcpy(pkt + ROCE_BTH_LEN + ext_len, payload, plen);
	memset(pkt + ROCE_BTH_LEN + ext_len + plen, 0, pad);
	gdak_roce_icrc_set(path, pkt, len);
	return len;
}

int forge_send_raw(struct forge *f, uint32_t dip, uint16_t dport, const void *pkt, uint32_t len)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(dport),
				  .sin_addr = { .s_addr = dip } };

	return sendto(f->fd, pkt, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len
		       ? 0
		       : -errno;
}

int forge_send(struct forge *f, uint32_t dip, uint16_t dport, uint8_t opcode, uint32_t dqpn,
	       uint32_t psn, const void *ext, uint32_t ext_len, const void *payload, uint32_t plen)
{
	uint8_t pkt[ROCE_MAX_PKT];
	struct roce_path p = { .sip = f->sip, .dip = dip, .sport = f->sport, .dport = dport };
	uint32_t len = forge_build(pkt, &p, opcode, dqpn, psn, ext, ext_len, payload, plen);

	return forge_send_raw(f, dip, dport, pkt, len);
}

int forge_spoof(struct forge *f, const struct roce_path *path, const void *pkt, uint32_t len)
{
	uint8_t d[20 + 8 + ROCE_MAX_PKT];
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr = { .s_addr = path->dip } };
	uint32_t tot = 20 + 8 + len;

	if (len > ROCE_MAX_PKT)
		return -EINVAL;
	if (f->raw < 0) {
		struct udp_inbox *ib = udp_inbox_attach(path->dip, path->dport);
		struct iovec v = { .iov_base = (void *)(uintptr_t)pkt, .iov_len = len };
		int r = 0;

		if (!ib)
			return -ENOTSUP;
		/* a full inbox takes nothing: wait for its owner (bounded) */
		for (int i = 0;
		     i < 30000 && !(r = udp_inbox_push(ib, path->sip, path->sport, &v, 1)); i++)
			usleep(1000);
		udp_inbox_put(ib);
		return r == 1 ? 0 : r < 0 ? r : -ETIMEDOUT;
	}
	/* DF, as the NIC model's own sockets send; the kernel fills the IPv4
	 * checksum (and an ID, which the receiver's ICRC check solves for) */
	gdak_roce_ipv4_udp(d, path, len, 0, 0);
	memcpy(d + 28, pkt, len);
	return sendto(f->raw, d, tot, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)tot
		       ? 0
		       : -errno;
}
