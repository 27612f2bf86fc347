/* SPDX-License-Identifier: MIT */
/*
 * tr_udp.h - the "udp" transport of the NIC model (RoCEv2 over UDP sockets)
 * as far as other parts of gdak (tests, tools) need to see it.
 */
#ifndef NM_TR_UDP_H
#define NM_TR_UDP_H

#include <gdak/gdak.h>

#include "roce/roce.h"

/* The engine counters of a QP opened on "emu:udp..." (retransmissions,
 * NAKs, ICRC drops, injected faults).  0, or -EINVAL for another transport. */
int nm_tr_udp_qp_stats(struct gdak_qp *qp, struct roce_stats *st);

#endif /* NM_TR_UDP_H */
