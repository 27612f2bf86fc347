/* SPDX-License-Identifier: MIT */
/*
 * gdak/dev/dev.h - the device API in one include.
 *
 * Header-only; compiles as C11 (host threads play the device) and as CUDA
 * C++ under nvcc (__device__ functions).  Layers, lowest first:
 *   types.h     descriptors the host exports (struct gdak_dev_qp / _cq)
 *   ordering.h  barriers by intent, acquire/release accessors, back-off
 *   wqe.h       reserve WQEBBs, build WQEs (caller owns the queue)
 *   db.h        doorbell record + ring by handler (DB, BF, CPU_PROXY)
 *   cq.h        poll CQEs, retire WQEs, sticky errors, bounded waits
 *   recv.h      post receive WQEs, poll the receive CQ
 *   rma.h       high level: put, put+signal, get, atomics, wait, quiet,
 *               signal waits, send; exclusive or shared QPs
 *   dc.h        the same on a DCI, the peer DCT named per call by its
 *               address vector (struct gdak_dev_av)
 *   coop.h      warp and block scopes (CUDA only)
 *
 * Memory the device code touches (buffers it fills or checks, signal
 * words, atomic results) must be addressable by whoever runs it: host
 * threads use GDAK_MEM_HOST (or HOST_MAPPED; not GDAK_MEM_GPU, which the
 * CPU cannot load from); a CUDA kernel needs GDAK_MEM_HOST_MAPPED (pinned,
 * mapped into the GPU) or GDAK_MEM_GPU.  The NIC itself reaches every kind
 * it registered.  The descriptor from gdak_qp_export() is already
 * device-visible.  Worked examples:
 * tools/examples/ (ex_write.c, ex_write_cuda.cu, ex_put_signal.c, ...).
 */
#ifndef GDAK_DEV_DEV_H
#define GDAK_DEV_DEV_H

#include <gdak/dev/types.h>
#include <gdak/dev/ordering.h>
#include <gdak/dev/wqe.h>
#include <gdak/dev/db.h>
#include <gdak/dev/cq.h>
#include <gdak/dev/recv.h>
#include <gdak/dev/rma.h>
#include <gdak/dev/dc.h>
#include <gdak/dev/coop.h>

#endif /* GDAK_DEV_DEV_H */
