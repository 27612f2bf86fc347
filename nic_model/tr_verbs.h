/* SPDX-License-Identifier: MIT */
/*
 * tr_verbs.h - the verbs transport's internals (tr_verbs*.c only).
 *
 * Each emulated QP is backed by a real RC QP opened with libibverbs on a
 * verbs device (rxe, siw, an HCA): mlx5 WQEs become ibv_post_send work
 * requests, receive WQEs ibv_post_recv, and verbs completions mlx5 CQEs.
 * tr_verbs_map.c holds the one table between the two vocabularies.
 */
#ifndef TR_VERBS_H
#define TR_VERBS_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "gdak_ibv.h"

/* ---- tr_verbs_map.c ---------------------------------------------------- */

/* MLX5_CQE_SYNDROME_* for a verbs completion status (0 for IBV_WC_SUCCESS);
 * statuses mlx5 has no syndrome for map to the nearest one (see the table). */
uint8_t tv_syndrome_of(enum ibv_wc_status st);

/* The verbs opcode for an mlx5 send opcode: 0 and *out set, or -EOPNOTSUPP
 * for what plain verbs cannot express (masked atomics, WAIT, DUMP, NOP). */
int tv_wr_opcode(uint8_t mlx5_opcode, enum ibv_wr_opcode *out);

/* mlx5 receive CQE opcode (MLX5_CQE_RESP_*) and the request's mlx5 opcode
 * for a successful receive completion. */
void tv_recv_cqe_opcode(const struct ibv_wc *wc, uint8_t *cqe_opcode, uint8_t *req_opcode);

/* IBV_MTU_* for a byte count: gdak_ibv_mtu_enum() (core/src/gdak_ibv.h). */
uint32_t tv_mtu_bytes(enum ibv_mtu mtu);

#endif /* TR_VERBS_H */
