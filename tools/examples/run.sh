#!/usr/bin/env bash
# run.sh - how CTest runs an example: the program must exit 0 and print the
# line it ends with when it worked (so a run that printed nothing, or the
# wrong thing, fails too).  77 from the program (no GPU, no MPI) is passed on.
#   run.sh EXPECT PROGRAM [ARGS...]
#   run.sh --mpi MPIEXEC EXPECT PROGRAM [ARGS...]     under mpirun -np 2
#   run.sh --trace GDAK_TRACE_BIN EXPECT PROGRAM      then gdak-trace --errors
set -uo pipefail
mode=plain
case ${1:-} in
--mpi) mode=mpi mpiexec=$2; shift 2 ;;
--trace) mode=trace trace_bin=$2; shift 2 ;;
esac
expect=$1; shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdak-example.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

case $mode in
plain) out=$("$@" 2>&1); rc=$? ;;
mpi)
	[[ -x $mpiexec ]] || { echo "skipped: no mpirun"; exit 77; }
	# one machine: shared memory and self only, as gdak.net.mpi2
	export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
	out=$("$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$@" 2>&1); rc=$? ;;
trace)
	out=$("$@" "$tmp/ex.pcapng" 2>&1); rc=$?
	if [[ $rc == 0 ]]; then
		out+=$'\n'$("$trace_bin" --errors "$tmp/ex.pcapng" 2>&1) || rc=$?
	fi ;;
esac
printf '%s\n' "$out"
[[ $rc == 77 ]] && exit 77
[[ $rc == 0 ]] || { echo "example failed: exit $rc"; exit 1; }
grep -Eq -- "$expect" <<<"$out" || { echo "example did not print /$expect/"; exit 1; }
echo "example ok"
