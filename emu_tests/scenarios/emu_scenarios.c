/* SPDX-License-Identifier: MIT */
/*
 * emu_scenarios.c - gdak.emu.scenarios: the shared scenario library against
 * the NIC model ("emu", or the device named by argv[1]).  hw_tests runs the
 * same scenarios against a ConnectX.
 */
#include "gdak_test.h"
#include "scenarios.h"

int main(int argc, char **argv)
{
	gdak_scen_run(argc > 1 ? argv[1] : "emu", argc > 2 ? argv[2] : NULL);
	return gdak_test_end();
}
