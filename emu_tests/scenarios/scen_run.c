/* SPDX-License-Identifier: MIT */
/* scen_run.c - the scenario table and the runner both suites call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdak_test.h"
#include "scenarios.h"

static const struct gdak_scenario table[] = {
	{ "write", scen_write, 1, 0 },
	{ "write_inline", scen_write_inline, 0, 0 },
	{ "read", scen_read, 0, 0 },
	{ "write_imm", scen_write_imm, 0, 0 },
	{ "send_recv", scen_send_recv, 0, 0 },
	{ "fetch_add", scen_fetch_add, 0, 0 },
	{ "compare_swap", scen_compare_swap, 0, 0 },
	{ "put_signal", scen_put_signal, 1, 0 },
	{ "bad_rkey", scen_bad_rkey, 0, 0 },
	{ "hl_put_get", scen_hl_put_get, 0, 0 },
	{ "hl_put_signal", scen_hl_put_signal, 1, 0 },
	{ "hl_atomics", scen_hl_atomics, 0, 0 },
	{ "hl_shared", scen_hl_shared, 1, 0 },
	/* gdak.nic.dc and gdak.hw.emu.dc run it on its own */
	{ "dc", scen_dc, 0, 1 },
};

const struct gdak_scenario *gdak_scenarios(size_t *n)
{
	*n = sizeof(table) / sizeof(table[0]);
	return table;
}

static const char *const handler_name[] = {"DB", "BF", "CPU_PROXY"};

int gdak_scen_run(const char *device, const char *filter)
{
	const char *env = getenv("GDAK_SCEN_TIMEOUT_MS");
	struct gdak_scen_cfg cfg = {.device = device, .handler = GDAK_DEV_DB_DB};
	int failed_runs = 0, runs = 0;

	if (!filter || !*filter)
		filter = getenv("GDAK_SCEN_FILTER");
	cfg.timeout_ns = (env ? strtoull(env, NULL, 10) : 20000ull) * 1000000ull;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct gdak_scenario *s = &table[i];
		int nh = s->all_handlers ? GDAK_DEV_DB_HANDLER_COUNT : 1;

		if (filter && *filter ? !strstr(s->name, filter) : s->on_request)
			continue;
		for (int h = 0; h < nh; h++) {
			unsigned before = gdak_test_failed;
			int r;

			cfg.handler = (enum gdak_dev_db_handler)h;
			r = s->run(&cfg);
			printf("scenario %-13s %-9s on %s: %s\n", s->name, handler_name[h], device,
			       r == 77 ? "skipped" : gdak_test_failed != before ? "FAILED" : "ok");
			fflush(stdout);
			failed_runs += gdak_test_failed != before;
			runs++;
		}
	}
	if (!runs) {
		gdak_test_fail(__FILE__, __LINE__, "no scenario matches the filter '%s'",
			       filter ? filter : "");
		failed_runs++;
	}
	return failed_runs;
}
