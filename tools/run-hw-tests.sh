#!/usr/bin/env bash
# run-hw-tests.sh - build gdak with the ConnectX backend and run the hw label
# on a machine with a ConnectX (mlx5) RDMA device.
#
#   tools/run-hw-tests.sh [--device mlx5_0[:PORT[:GID_INDEX]]] [--build-dir DIR]
#                         [--filter SCENARIO] [--all] [-j N]
#
# --device     device for the scenarios (default: $GDAK_HW_DEVICE, else the
#              first device the mlx5 provider drives)
# --build-dir  build directory (default: build/hw, the `hw` CMake preset's)
# --filter     run only scenarios whose name contains this (e.g. bad_rkey)
# --all        after the hw label, run the whole suite (unit, emu, ...) too
# -j N         build parallelism (default: nproc)
#
# Exit status: ctest's.  Without an mlx5 device the hw tests are reported as
# skipped (exit code 77 inside ctest), never as passed.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build="$here/build/hw"
device="${GDAK_HW_DEVICE:-}"
filter=""
all=0
jobs=$(nproc 2>/dev/null || echo 2)

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--device) [ $# -ge 2 ] || { echo "run-hw-tests: --device needs a value" >&2; exit 2; }
		device="$2"; shift 2 ;;
	--build-dir) [ $# -ge 2 ] || { echo "run-hw-tests: --build-dir needs a value" >&2; exit 2; }
		build="$2"; shift 2 ;;
	--filter) [ $# -ge 2 ] || { echo "run-hw-tests: --filter needs a value" >&2; exit 2; }
		filter="$2"; shift 2 ;;
	--all) all=1; shift ;;
	-j) [ $# -ge 2 ] || { echo "run-hw-tests: -j needs a value" >&2; exit 2; }
		jobs="$2"; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "run-hw-tests: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case "$jobs" in ''|*[!0-9]*) echo "run-hw-tests: -j wants a number, got '$jobs'" >&2; exit 2 ;; esac

# What the machine offers, for the log (none of it is required to build).
echo "== RDMA devices"
if command -v ibv_devinfo >/dev/null 2>&1; then
	ibv_devinfo -l 2>/dev/null || true
else
	ls /sys/class/infiniband 2>/dev/null || echo "(none: no /sys/class/infiniband)"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
	echo "== GPUs"; nvidia-smi -L || true
fi
if [ -e /sys/module/nvidia_peermem ]; then echo "nvidia-peermem: loaded"; else echo "nvidia-peermem: not loaded (GPU MRs need dma-buf then)"; fi

echo "== configure + build ($build)"
if [ "$build" = "$here/build/hw" ]; then
	(cd "$here" && cmake --preset hw)
else
	cmake -S "$here" -B "$build" -G Ninja -DGDAK_HW_MLX5=ON -DGDAK_WERROR=ON
fi
cmake --build "$build" -j "$jobs"

[ -n "$device" ] && export GDAK_HW_DEVICE="$device"
[ -n "$filter" ] && export GDAK_SCEN_FILTER="$filter"
export GDAK_LOG="${GDAK_LOG:-info}"

echo "== hw tests (device: ${GDAK_HW_DEVICE:-first mlx5})"
rc=0
# gdak.hw.*: the scenarios (host threads, CUDA, CUDA on GPU-resident queues),
# the backend's CUDA plumbing and the PRM encoding; plus anything else
# labelled hw
ctest --test-dir "$build" -R '^gdak[.]hw[.]' --output-on-failure || rc=$?
ctest --test-dir "$build" -L hw -E '^gdak[.]hw[.]' --output-on-failure --no-tests=ignore || rc=$?
if [ "$all" = 1 ]; then
	echo "== whole suite"
	ctest --test-dir "$build" -j "$jobs" --output-on-failure || rc=$?
fi
exit "$rc"
