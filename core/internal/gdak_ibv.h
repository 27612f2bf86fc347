/* SPDX-License-Identifier: MIT */
/*
 * gdak_ibv.h - small libibverbs helpers shared by the verbs transport
 * (nic_model/tr_verbs*.c) and the ConnectX backend (hw_mlx5/).
 */
#ifndef GDAK_IBV_H
#define GDAK_IBV_H

#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

/* IBV_MTU_* for a byte count, rounded down to a legal path MTU (256 minimum):
 * a link MTU of 1500 gives IBV_MTU_1024, never an assumed 4096. */
static inline enum ibv_mtu gdak_ibv_mtu_enum(uint32_t bytes)
{
	if (bytes >= 4096)
		return IBV_MTU_4096;
	if (bytes >= 2048)
		return IBV_MTU_2048;
	if (bytes >= 1024)
		return IBV_MTU_1024;
	if (bytes >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* RoCE: the index of the port's first RoCEv2 GID that holds an IPv4 address
 * (IPv4-mapped), else of its first RoCEv2 one (IPv6); -1 when none of the
 * table's len entries is RoCEv2.  The udp transport and kernel rxe speak
 * RoCEv2 only. */
static inline int gdak_ibv_roce_v2_gid(struct ibv_context *ctx, uint8_t port, int len)
{
	static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	int v6 = -1;

	for (int i = 0; i < len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (!memcmp(e.gid.raw, v4_mapped, sizeof(v4_mapped)))
			return i;
		if (v6 < 0)
			v6 = i;
	}
	return v6;
}

#endif /* GDAK_IBV_H */
