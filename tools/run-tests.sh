#!/usr/bin/env bash
# run-tests.sh - the test command: install the dependencies (apt), configure
# and build with the `default` preset, run every test with CTest.  Tests that
# cannot run here (no GPU, no ConnectX, no qemu...) are shown as skipped.
#
#   bash tools/run-tests.sh [extra ctest arguments, e.g. -L unit or -R gdak.core]
#
# Exits with CTest's status.  GDAK_SKIP_DEPS=1 skips the apt step.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ ${GDAK_SKIP_DEPS:-0} != 1 ]]; then
	bash tools/install-deps.sh
fi
jobs=$(nproc 2>/dev/null || echo 2)
echo "== configure (preset default)"
cmake --preset default
echo "== build (-j$jobs)"
cmake --build --preset default -j "$jobs"
echo "== test"
set +e
ctest --preset default "$@"
rc=$?
set -e
echo "run-tests: ctest exited $rc"
exit $rc
