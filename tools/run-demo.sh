#!/usr/bin/env bash
# run-demo.sh - the main job: install the dependencies (apt), configure and
# build with the `default` preset, then run the demo.  Until gdak-demo exists
# it runs gdak-info (backends, build configuration, CUDA, verbs devices, the
# NIC model's settings).
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
echo "== build (-j$jobs)"
cmake --build --preset default -j "$jobs"

demo=$(find build/default -maxdepth 3 -type f -name gdak-demo -perm -u+x -print -quit)
if [[ -n $demo ]]; then
	echo "== $demo $*"
	exec "$demo" "$@"
fi
echo "== gdak-demo is not part of this tree yet; gdak-info shows what gdak can do here"
exec build/default/tools/gdak-info "$@"
