/* SPDX-License-Identifier: MIT */
/*
 * hw_scenarios.c - gdak.hw.scenarios: the shared scenario library
 * (emu_tests/scenarios/) against a real ConnectX.  The device is
 * $GDAK_HW_DEVICE (e.g. "mlx5_0" or "mlx5_0:1:3"), else the first RDMA
 * device the mlx5 provider drives.  Exits 77 (skipped) when this build has
 * no hardware backend or the machine has no mlx5 device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gdak_test.h"
#include "scenarios.h"

static int have_backend(void)
{
	for (const char *const *b = gdak_backends(); *b; b++)
		if (!strcmp(*b, "mlx5"))
			return 1;
	return 0;
}

/* The first mlx5 device's name, copied to out; 0 when there is none. */
static int first_mlx5(char *out, size_t len)
{
	int n = 0, found = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	if (!list)
		return 0;
	for (int i = 0; i < n && !found; i++) {
		if (mlx5dv_is_supported(list[i])) {
			snprintf(out, len, "%s", ibv_get_device_name(list[i]));
			found = 1;
		}
	}
	ibv_free_device_list(list);
	return found;
}

int main(int argc, char **argv)
{
	const char *env = getenv("GDAK_HW_DEVICE");
	char dev[64];

	if (!have_backend())
		GDAK_TEST_SKIP("this gdak was built without the hardware backend (-DGDAK_HW_MLX5=ON)");
	if (argc > 1)
		snprintf(dev, sizeof(dev), "%s", argv[1]);
	else if (env && *env)
		snprintf(dev, sizeof(dev), "%s", env);
	else if (!first_mlx5(dev, sizeof(dev)))
		GDAK_TEST_SKIP("no mlx5 RDMA device here (ibv_get_device_list found none the "
			       "mlx5 provider drives); set GDAK_HW_DEVICE on a ConnectX machine");
	printf("gdak.hw.scenarios on %s\n", dev);
	gdak_scen_run(dev, argc > 2 ? argv[2] : NULL);
	return gdak_test_end();
}
