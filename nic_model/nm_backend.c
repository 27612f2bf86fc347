/* SPDX-License-Identifier: MIT */
/* nm_backend.c - placeholder until the NIC model lands: matches "emu*" and
 * refuses to open, so gdak_open() says clearly that it is not there yet. */
#include <errno.h>
#include <string.h>
#include "gdak_backend.h"
#include "gdak_log.h"

static int nm_match(const char *dev) { return !strncmp(dev, "emu", 3); }
static int nm_open(const char *dev, struct gdak_ctx **ctx)
{
	GDAK_ERR(NULL, 0, "the NIC model is not built yet");
	return -ENOSYS;
}
const struct gdak_backend_ops gdak_nm_backend_ops = {.name = "emu", .match = nm_match, .open = nm_open};
