/* SPDX-License-Identifier: MIT */
/*
 * perf_cuda_stub.c - --cuda in a build without gdak-perf's CUDA mode.
 *
 * Kernels posting (raw GPU<->CPU doorbell ping-pong and cudaMemcpy as
 * baselines; 1..256 CTAs, one thread and one QP each) are measured by
 * gdak-perf-cuda (tools/cuda/).  A tools/perf/perf_cuda.cu implementing the
 * two functions below with the contract in perf.h would be built instead of
 * this file (tools/perf.cmake) and give gdak-perf's own tests a kernel
 * poster.
 */
#include <errno.h>

#include "perf.h"

int perf_cuda_available(const char **why)
{
	/* the CUDA benchmarks ship as their own program (tools/cuda/) */
	*why = "kernels are measured by gdak-perf-cuda (tools/cuda/, built with CUDA), "
	       "next to this program";
	return 0;
}

int perf_cuda_test(void *env, const struct perf_opts *o, size_t size, uint64_t iters,
		   struct perf_result *round, double *lat_ns)
{
	return -ENOTSUP;
}
