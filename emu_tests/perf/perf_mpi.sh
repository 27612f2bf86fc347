#!/usr/bin/env bash
# gdak.tools.perf_mpi: `mpirun -np 2 gdak-perf -d emu:udp write_bw` works as
# the README says - rank 0 serves, rank 1 measures, the data is verified -
# and a job of another size is refused with the reason.  Correctness only.
#   perf_mpi.sh GDAK_PERF MPIEXEC HAVE_MPI
set -uo pipefail
perf=$1 mpiexec=$2 have_mpi=$3
[[ $have_mpi == ON ]] || { echo "skipped: gdak was built without MPI"; exit 77; }
[[ -x $mpiexec ]] || { echo "skipped: no mpirun"; exit 77; }
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
# Open MPI's plugins leak on purpose: LeakSanitizer (asan builds) would
# fail the run with no gdak frame in the report
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdak-perf-mpi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
check() { if eval "$2"; then passes=$((passes + 1)); else echo "FAILED: $1"; fails=$((fails + 1)); fi; }

timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -np 2 "$perf" \
	-d emu:udp -s 8 -n 500 -r 2 --no-baseline --json write_bw >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err"
check "exit 0" '[[ $rc == 0 ]]'
check "one JSON document (rank 1's)" '[[ $(grep -c "\"tool\": \"gdak-perf\"" "$tmp/out") == 1 ]]'
check "verified" 'grep -q "\"verified\": true" "$tmp/out"'
check "a message rate" 'grep -Eq "\"msg_rate\": [0-9]" "$tmp/out"'
check "rank 0 served" 'grep -q "gdak-perf: server: write_bw, waiting for a client" "$tmp/err"'
check "the server checked the rounds" 'grep -q "2 rounds, 2 checks, 0 wrong" "$tmp/err"'

timeout 60 "$mpiexec" --allow-run-as-root --oversubscribe -np 3 "$perf" -d emu:udp -n 10 \
	write_bw >"$tmp/out3" 2>&1
rc=$?
check "-np 3 refused" '[[ $rc != 0 ]] && grep -q "run 2 ranks (-np 2)" "$tmp/out3"'
echo "$passes passed, $fails failed"
[[ $fails == 0 ]]
