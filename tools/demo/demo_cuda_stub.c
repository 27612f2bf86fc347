/* SPDX-License-Identifier: MIT */
/*
 * demo_cuda_stub.c - the demo's CUDA path in a build without it.
 *
 * tools/demo/demo_cuda.cu (built instead of this file by tools/demo.cmake
 * when CUDA is enabled and the file exists) runs demo_device.c's operations
 * as a CUDA kernel on the same struct demo_args: the initiator as one block,
 * the target as another.  Without it the demo runs on host threads.
 */
#include <errno.h>

#include "demo.h"

int demo_cuda_available(const char **why)
{
	*why = "built without the demo's CUDA path (tools/demo/demo_cuda.cu)";
	return 0;
}

int demo_cuda_run(struct demo_args *a)
{
	return -ENOTSUP;
}
