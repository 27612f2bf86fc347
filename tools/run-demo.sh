#!/usr/bin/env bash
# run-demo.sh - the main job: install the dependencies (apt), configure with
# the `default` preset, build what the demo runs (gdak-demo and gdak-trace,
# which it calls to show its trace; run-tests.sh builds the rest), then run
# gdak-demo.
#
#   bash tools/run-demo.sh [arguments for the demo]
#
# GDAK_SKIP_DEPS=1 skips the apt step.
set -euo pipefail
cd "$(dirname "$0")/.."

# the demo needs the build dependencies only; run-tests.sh installs the
# test tools (valgrind, qemu, tshark, MPI, ...)
if [[ ${GDAK_SKIP_DEPS:-0} != 1 ]]; then
	bash tools/install-deps.sh --required-only
fi
jobs=$(nproc 2>/dev/null || echo 2)
echo "== configure (preset default)"
cmake --preset default
echo "== build gdak-demo gdak-trace (-j$jobs)"
cmake --build --preset default -j "$jobs" --target gdak-demo gdak-trace
echo "== build/default/tools/gdak-demo $*"
exec build/default/tools/gdak-demo "$@"
