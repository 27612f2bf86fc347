/* SPDX-License-Identifier: MIT */
/*
 * perf_cuda_stub.c - --cuda in a build without gdak-perf's CUDA mode.
 *
 * The CUDA mode (kernel posts; raw GPU<->CPU doorbell ping-pong and
 * cudaMemcpy as baselines; 1..256 CTAs, one thread and one QP each) lives in
 * tools/perf/perf_cuda.cu, which tools/perf.cmake builds instead of this file
 * when CUDA is enabled and that file exists.  It implements the two
 * functions below with the contract in perf.h.
 */
#include <errno.h>

#include "perf.h"

int perf_cuda_available(const char **why)
{
	*why = "this gdak-perf was built without its CUDA mode (tools/perf/perf_cuda.cu, GDAK_CUDA)";
	return 0;
}

int perf_cuda_test(void *env, const struct perf_opts *o, size_t size, uint64_t iters,
		   struct perf_result *round, double *lat_ns)
{
	return -ENOTSUP;
}
