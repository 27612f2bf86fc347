/* SPDX-License-Identifier: MIT */
/*
 * rxe_verbs_scenarios.c - gdak.rxe.verbs_scenarios: the shared scenario
 * library (write, inline write, read, write-imm, put+signal, fetch-add,
 * compare-swap, send/recv, bad rkey -> REMOTE_ACCESS_ERR) through the NIC
 * model's verbs transport on a real verbs device: "emu:verbs:$GDAK_RXE_DEV"
 * (rxe0 in the guest of tools/rxe/gdak-rxe-vm).  Skips (77) where the
 * machine has no such device, as the host here has none.
 */
#include "gdak_test.h"
#include "rxe_util.h"
#include "scenarios.h"

int main(int argc, char **argv)
{
	const char *dev = getenv("GDAK_RXE_DEV") ? getenv("GDAK_RXE_DEV") : "rxe0";
	char device[80];

	if (!rx_have_device(dev))
		GDAK_TEST_SKIP("no verbs device %s here (the rxe guest has one: "
			       "tools/rxe/gdak-rxe-vm ctest BUILD_DIR)", dev);
	snprintf(device, sizeof(device), "emu:verbs:%s", dev);
	gdak_scen_run(device, argc > 1 ? argv[1] : NULL);
	return gdak_test_end();
}
