#!/usr/bin/env bash
# run-sanitizers.sh - the sanitizer, Valgrind and fuzz-replay runs
# (docs/RELIABILITY.md).
#
#   bash tools/run-sanitizers.sh [asan|tsan|memcheck|fuzz|all] [extra ctest arguments]
#
#   asan      preset asan: AddressSanitizer + UndefinedBehaviorSanitizer,
#             configure, build, ctest labels unit|emu|net (build/asan)
#   tsan      preset tsan: ThreadSanitizer, same labels (build/tsan)
#   memcheck  preset default: the memcheck label (every MEMCHECK test under
#             Valgrind: zero errors, zero definite leaks) (build/default)
#   fuzz      preset fuzz (clang): the libFuzzer binaries and the corpus
#             replay (label fuzz) (build/fuzz); FUZZ_SECONDS=N also runs
#             each fuzzer N seconds from its corpus (-jobs=1)
#   all       asan, tsan, memcheck (the default)
#
# Exits non-zero when any run fails; prints each run's wall time.
# GDAK_SAN_JOBS sets the build parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${GDAK_SAN_JOBS:-$(nproc 2>/dev/null || echo 2)}
what=${1:-all}
[[ $# -gt 0 ]] && shift
status=0

# Sanitizers stop at the first report and say where; leaks are errors.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
tsan_opts="halt_on_error=1:second_deadlock_stack=1:history_size=4"
# tools/tsan.supp holds only suppressions with a written reason (none when
# it has no entries).
if [[ -f tools/tsan.supp ]] && grep -qv '^\s*\(#\|$\)' tools/tsan.supp; then
	tsan_opts="$tsan_opts:suppressions=$PWD/tools/tsan.supp"
fi
export TSAN_OPTIONS=${TSAN_OPTIONS:-$tsan_opts}

run() { # name, command...
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	echo "== $name: $*"
	set +e
	"$@"
	rc=$?
	set -e
	echo "== $name: exit $rc after $(( $(date +%s) - t0 )) s"
	[[ $rc -eq 0 ]] || status=1
	return 0
}

workflow() { # preset, ctest args...
	local p=$1
	shift
	run "$p configure" cmake --preset "$p" || return 0
	run "$p build" cmake --build --preset "$p" -j "$jobs"
	run "$p test" ctest --preset "$p" "$@"
}

fuzz() {
	# clang warns where gcc does not (-Wcast-align in shared headers):
	# the fuzz build does not make warnings errors
	run "fuzz configure" cmake --preset fuzz -DGDAK_WERROR=OFF
	run "fuzz build" cmake --build --preset fuzz -j "$jobs"
	run "fuzz replay" ctest --preset fuzz "$@"
	if [[ -n ${FUZZ_SECONDS:-} ]]; then
		for t in trace roce wqe; do
			mkdir -p "build/fuzz/work-$t" build/fuzz/artifacts
			run "fuzz $t ${FUZZ_SECONDS}s" "build/fuzz/emu_tests/gdak-fuzz-$t" \
				-max_total_time="$FUZZ_SECONDS" -jobs=1 -print_final_stats=1 \
				-artifact_prefix="build/fuzz/artifacts/$t-" \
				"build/fuzz/work-$t" "emu_tests/fuzz/corpus/$t"
		done
	fi
}

case $what in
asan) workflow asan "$@" ;;
tsan) workflow tsan "$@" ;;
memcheck)
	run "default configure" cmake --preset default
	run "default build" cmake --build --preset default -j "$jobs"
	run "memcheck" ctest --preset default -L memcheck "$@"
	;;
fuzz) fuzz "$@" ;;
all)
	workflow asan "$@"
	workflow tsan "$@"
	run "default configure" cmake --preset default
	run "default build" cmake --build --preset default -j "$jobs"
	run "memcheck" ctest --preset default -L memcheck "$@"
	;;
*)
	echo "usage: $0 [asan|tsan|memcheck|fuzz|all] [ctest arguments]" >&2
	exit 2
	;;
esac
echo "run-sanitizers: $what: $([[ $status -eq 0 ]] && echo passed || echo FAILED)"
exit $status
