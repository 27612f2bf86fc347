/* SPDX-License-Identifier: MIT */
/*
 * gdak_ibv.h - small libibverbs helpers shared by the verbs transport
 * (nic_model/tr_verbs*.c) and the ConnectX backend (hw_mlx5/).
 */
#ifndef GDAK_IBV_H
#define GDAK_IBV_H

#include <stdint.h>
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

#endif /* GDAK_IBV_H */
