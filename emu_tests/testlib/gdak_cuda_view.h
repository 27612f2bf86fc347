/* SPDX-License-Identifier: MIT */
/*
 * gdak_cuda_view.h - host memory (a ring, a record, the UAR register page)
 * mapped for a CUDA kernel, as the verbs / DEVX CUDA tests let a kernel be
 * the device of queues gdak's libibverbs or libmlx5 made.  CUDA host code.
 */
#ifndef GDAK_CUDA_VIEW_H
#define GDAK_CUDA_VIEW_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "gdak_test.h"
}

/* A CUDA runtime call that must succeed: else the test fails and exits. */
#define GDAK_CU_REQUIRE(call)                                               \
	do {                                                                \
		cudaError_t e_ = (call);                                    \
		if (e_ != cudaSuccess) {                                    \
			gdak_test_fail(__FILE__, __LINE__, "%s: %s", #call, \
				       cudaGetErrorString(e_));             \
			(void)gdak_test_end();                              \
			exit(1);                                            \
		}                                                           \
	} while (0)

/* The device address of [p, p + len): its pages registered mapped (the
 * register page is ordinary memory here: a mapped registration, not an I/O
 * one).  Memory registered already, whole or in part (a neighbour's page,
 * or what the NIC model shares with the GPU itself), is fine: the pointer
 * tells.  Fails the test and exits when neither works. */
static inline void *gdak_cuda_view(void *p, size_t len)
{
	uintptr_t b = (uintptr_t)p & ~(uintptr_t)4095;
	size_t l = (((uintptr_t)p + len + 4095) & ~(uintptr_t)4095) - b;
	cudaError_t e = cudaHostRegister((void *)b, l, cudaHostRegisterMapped);
	void *d = NULL;

	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		if (cudaHostGetDevicePointer(&d, p, 0) != cudaSuccess) {
			fprintf(stderr, "cudaHostRegister(%p, %zu): %s\n", (void *)b, l,
				cudaGetErrorString(e));
			gdak_test_fail(__FILE__, __LINE__, "cudaHostRegister: %s",
				       cudaGetErrorString(e));
			exit(1);
		}
		return d;
	}
	e = cudaHostGetDevicePointer(&d, p, 0);
	if (e != cudaSuccess) {
		gdak_test_fail(__FILE__, __LINE__, "cudaHostGetDevicePointer: %s",
			       cudaGetErrorString(e));
		exit(1);
	}
	return d;
}

#endif
