/* SPDX-License-Identifier: MIT */
/*
 * trace_lua_names.c - gdak.trace.lua_names: the opcode, CQE opcode and
 * syndrome names in tools/gdak-trace.lua are gdak's one table
 * (core/src/mlx5_names.c): every code the C table names is in the Lua
 * table with the same name, and the Lua table names nothing else.
 *
 *   trace_lua_names tools/gdak-trace.lua
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/mlx5.h>

#include "gdak_test.h"

/* Parse "local NAME = {" ... "}" of [code] = "name" lines into names[]. */
static int load(const char *text, const char *table, char names[256][40])
{
	char head[64];
	const char *p, *end;
	int n = 0;

	snprintf(head, sizeof(head), "local %s = {\n", table);
	p = strstr(text, head);
	if (!p)
		return -1;
	p += strlen(head);
	end = strstr(p, "\n}");
	while (p && p < end) {
		unsigned code;
		char name[40];

		if (sscanf(p, " [%i] = \"%39[^\"]\",", (int *)&code, name) == 2 && code < 256) {
			snprintf(names[code], sizeof(names[code]), "%s", name);
			n++;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

static void compare(const char *text, const char *table, unsigned max,
		    const char *(*cname)(uint8_t), const char *unknown_prefix, unsigned first)
{
	static char names[256][40];
	int n;

	memset(names, 0, sizeof(names));
	n = load(text, table, names);
	CHECK(n > 0);
	for (unsigned c = 0; c < max; c++) {
		const char *want = cname((uint8_t)c);
		int known = c >= first && strncmp(want, unknown_prefix, strlen(unknown_prefix));

		if (known ? strcmp(names[c], want) : names[c][0] != 0) {
			fprintf(stderr, "%s[0x%02x]: gdak-trace.lua has '%s', the C table '%s'\n",
				table, c, names[c], known ? want : "(none)");
			CHECK(0);
		}
	}
}

int main(int argc, char **argv)
{
	char *text;
	size_t len;

	if (argc < 2)
		GDAK_TEST_SKIP("usage: %s tools/gdak-trace.lua", argv[0]);
	REQUIRE((text = gdak_test_slurp(argv[1], &len)) != NULL);
	compare(text, "wqe_ops", 256, gdak_mlx5_opcode_name, "OPCODE_0x", 0);
	compare(text, "cqe_ops", 16, gdak_mlx5_cqe_opcode_name, "CQE_0x", 0);
	compare(text, "syndromes", 256, gdak_mlx5_syndrome_name, "SYNDROME_0x", 1);
	free(text);
	return gdak_test_end();
}
