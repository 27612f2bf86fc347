#!/usr/bin/env bash
# hwemu_run.sh - gdak's ConnectX backend (hw_mlx5) against the emulated mlx5
# device: the program runs under gdak-run (gdak's libibverbs.so.1 and
# libmlx5.so.1), host threads play the device, and what it printed is
# checked - data verified, every scenario passed, no strict-mode violation,
# the trace readable - not just its exit status.
#
#   hwemu_run.sh demo|perf TEST|scenarios [traced]
#
# Environment (hw_tests/hwemu.cmake sets it): GDAK_RUN, GDAK_TRACE_TOOL,
# HWEMU_DEMO, HWEMU_PERF, HWEMU_SCEN; GDAK_HW_QP_PATH picks the QP path.
set -uo pipefail

run=${GDAK_RUN:?GDAK_RUN is not set}
kind=${1:?usage: hwemu_run.sh demo|perf TEST|scenarios [traced]}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
fail=0

has() {
	if grep -qE -- "$1" "$out"; then
		echo "ok: $2"
	else
		echo "FAIL: $2 (no line matching /$1/)"
		fail=1
	fi
}

lacks() {
	if grep -qE -- "$1" "$out"; then
		echo "FAIL: $2:"
		grep -E -- "$1" "$out" | head -5
		fail=1
	else
		echo "ok: $2"
	fi
}

status() {
	if [ "$1" -eq 0 ]; then
		echo "ok: exit status 0"
	else
		echo "FAIL: exit status $1"
		fail=1
	fi
}

trace_ok() {
	if "${GDAK_TRACE_TOOL:?}" --summary "$1" >"$tmp/summary" 2>&1; then
		echo "ok: the trace reads back ($(wc -l <"$tmp/summary") summary lines)"
	else
		echo "FAIL: gdak-trace --summary $1:"
		tail -5 "$tmp/summary"
		fail=1
	fi
}

cd "$tmp" || exit 1
case $kind in
demo)
	# untraced: the hw backend's ring capture is closed at exit, after
	# the demo reads its trace back (scenarios traced covers the trace)
	GDAK_DEVICE=mlx5_0 "$run" -- "${HWEMU_DEMO:?}" -n 50 --no-trace >"$out" 2>&1
	rc=$?
	status $rc
	for op in put get fetch_add 'put_signal\+wait' 'send/recv'; do
		has "^verified $op: " "$op: data verified by the program"
	done
	has "device mlx5_0" "the demo ran on the emulated mlx5_0"
	lacks "nm_violation|FAILED" "no strict-mode violation, no failed operation"
	;;
perf)
	test=${2:?perf needs a test name}
	GDAK_LOG=info "$run" -- "${HWEMU_PERF:?}" -d mlx5_0 -n 200 -r 1 "$test" >"$out" 2>&1
	rc=$?
	status $rc
	has "data verified: yes" "$test: the last iteration's data verified"
	# both QPs are in this process: their packets go inbox to inbox, not
	# through the kernel and the device's 4791 reader (gv_addr.c dir_lookup)
	has "at 127[.]0[.]0[.][0-9]+:4791, .*in this process: no kernel in between" \
		"the two QPs of one process connect without the kernel in between"
	lacks "nm_violation|data verified: no" "no strict-mode violation"
	;;
scenarios)
	targs=()
	if [ "${2:-}" = traced ]; then
		targs=(--trace "$tmp/scen.pcapng")
	fi
	GDAK_HW_NO_GPU_MAP=1 "$run" "${targs[@]}" -- "${HWEMU_SCEN:?}" mlx5_0 >"$out" 2>&1
	rc=$?
	status $rc
	has "^gdak.hw.scenarios on mlx5_0" "the scenarios ran on the emulated mlx5_0"
	has "^[1-9][0-9]* passed, 0 failed" "every scenario check passed"
	for h in DB BF CPU_PROXY; do
		has "^scenario write +$h +on mlx5_0: ok" "handler $h"
	done
	lacks ": FAIL|nm_violation" "no failed scenario, no strict-mode violation"
	if [ "${2:-}" = traced ]; then
		# two writers in the process (gdak's libibverbs carries the NIC
		# model's, hw_mlx5 its ring capture): one file each
		trace_ok "$tmp/scen.pcapng"
		trace_ok "$tmp/scen.pcapng-2"
	fi
	;;
*)
	echo "hwemu_run.sh: unknown kind '$kind'" >&2
	exit 2
	;;
esac
if [ $fail -ne 0 ]; then
	echo "---- output of the run (last 40 lines)"
	tail -40 "$out"
fi
exit $fail
