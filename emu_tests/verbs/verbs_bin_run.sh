#!/usr/bin/env bash
# verbs_bin_run.sh - gdak-run itself: every wrong option or value is named
# and exits 2 without running the program; the right ones become gdak's
# environment (absolute trace path, strictness, faults, devices, addresses,
# log level); lib/gdak with libibverbs.so.1 and libmlx5.so.1 comes first on
# LD_LIBRARY_PATH (and what was there stays after it), with libefa.so.1; the program's exit
# status comes back; a missing program is 127.  With perftest installed, the
# dynamic linker resolves ib_write_bw's libibverbs.so.1 and libmlx5.so.1 to
# gdak's under gdak-run; gdak's own programs (gdak-perf, gdak-demo) never
# load lib/gdak.
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"
vb_init
R=$GDAK_RUN
out=$VB_DIR/out

# bad OPTION... -> exit 2 and stderr naming WORD; the program never runs
bad() {
	local word=$1
	shift
	rm -f "$VB_DIR/ran"
	"$R" "$@" -- touch "$VB_DIR/ran" >"$out" 2>&1
	local rc=$?
	if ((rc == 2)) && grep -qF -- "$word" "$out" && [[ ! -e $VB_DIR/ran ]]; then
		vb_ok "gdak-run $* -> 2: $(head -n 1 "$out")"
	else
		vb_fail "gdak-run $*: exit $rc (want 2), message naming '$word', program not run: $(cat "$out")"
	fi
}

bad "--bogus" --bogus
bad "--trace needs a value" --trace
bad "--devices '9'" --devices 9
bad "--devices 'x'" --devices x
bad "--devices '-1'" --devices=-1
bad "'300.1.2.3'" --addr 127.0.0.9,300.1.2.3
bad "'0.0.0.0'" --addr 0.0.0.0
bad "--addr names 1" --devices 2 --addr 127.0.0.9
bad "does not exist" --trace /nonexistent-dir/x.pcapng
bad "is a directory" --trace "$VB_DIR"
bad "--strict and --no-strict" --strict --no-strict
bad "pkt_drop:p=150%" --faults 'pkt_drop:p=150%'
bad "err:qp=1" --faults 'err:qp=1'
bad "zap:x=1" --faults 'pkt_drop:p=1%;zap:x=1'
bad "pkt_zap" --faults 'pkt_zap:p=1%'
bad "--faults: empty" --faults ''
bad "--log 'loud'" --log loud
bad "--nic-threads '0'" --nic-threads 0
bad "--nic-threads '65'" --nic-threads=65
bad "--poll 'busy'" --poll busy
"$R" >"$out" 2>&1
rc=$?
((rc == 2)) && grep -q 'no program to run' "$out"
vb_check $? "gdak-run with no program -> 2 ($rc)"

"$R" --help >"$out" 2>&1
rc=$?
((rc == 0)) && grep -q '^usage: gdak-run' "$out" && grep -q -- '--faults SPEC' "$out"
vb_check $? "gdak-run --help -> 0 and the usage"

# the environment the program gets
cd "$VB_DIR" || exit 1
LD_LIBRARY_PATH=/opt/keep GDAK_STRICT=1 "$R" --trace t.pcapng --no-strict \
	--faults 'pkt_drop:p=1%,seed=3;err:qp=*,wqe=5,syndrome=REMOTE_OP' --addr 127.0.0.7,127.0.0.8 \
	--log=info --nic-threads 2 --poll=spin -- sh -c 'env' >"$out" 2>&1
vb_check $? "gdak-run ... -- sh -c env exits 0"
env_of() { sed -n "s/^$1=//p" "$out"; }
[[ $(env_of GDAK_TRACE) == "$VB_DIR/t.pcapng" ]]
vb_check $? "GDAK_TRACE is absolute: '$(env_of GDAK_TRACE)'"
[[ $(env_of GDAK_STRICT) == 0 ]]
vb_check $? "--no-strict: GDAK_STRICT=0 (was 1)"
[[ $(env_of GDAK_FAULTS) == 'pkt_drop:p=1%,seed=3;err:qp=*,wqe=5,syndrome=REMOTE_OP' ]]
vb_check $? "GDAK_FAULTS as given"
[[ $(env_of GDAK_IBV_ADDR) == 127.0.0.7,127.0.0.8 && $(env_of GDAK_IBV_DEVICES) == 2 ]]
vb_check $? "--addr A,B: GDAK_IBV_ADDR=A,B and GDAK_IBV_DEVICES=2"
[[ $(env_of GDAK_LOG) == info ]]
vb_check $? "--log=info: GDAK_LOG=info"
[[ $(env_of GDAK_NIC_THREADS) == 2 && $(env_of GDAK_POLL) == spin ]]
vb_check $? "--nic-threads 2 --poll=spin: GDAK_NIC_THREADS=2, GDAK_POLL=spin"
ldp=$(env_of LD_LIBRARY_PATH)
libdir=${ldp%%:*}
[[ $ldp == "$libdir:/opt/keep" ]]
vb_check $? "LD_LIBRARY_PATH is lib/gdak then what was there: '$ldp'"
[[ -e $libdir/libibverbs.so.1 && -e $libdir/libmlx5.so.1 && -e $libdir/libefa.so.1 ]]
vb_check $? "$libdir holds libibverbs.so.1, libmlx5.so.1 and libefa.so.1"
[[ $(basename "$libdir") == gdak ]]
vb_check $? "the library directory is a lib/gdak ('$libdir')"

"$R" --strict -- sh -c 'echo "$GDAK_STRICT"' >"$out" 2>&1
[[ $(cat "$out") == 1 ]]
vb_check $? "--strict: GDAK_STRICT=1"
"$R" --devices 3 --print-env -- prog arg1 'arg 2' >"$out" 2>&1
rc=$?
((rc == 0)) && grep -q '^GDAK_IBV_DEVICES=3$' "$out" && grep -q '^prog arg1 arg 2$' "$out"
vb_check $? "--print-env shows the environment and the command, runs nothing"

"$R" -- sh -c 'exit 7'
rc=$?
vb_check $((rc != 7)) "the program's exit status comes back (7: $rc)"
"$R" -- /nonexistent/program >"$out" 2>&1
rc=$?
((rc == 127)) && grep -q "cannot run '/nonexistent/program'" "$out"
vb_check $? "a missing program: 127 and a message ($rc)"
"$R" sh -c 'exit 0'
vb_check $? "the command may follow the options without '--'"

if command -v ib_write_bw >/dev/null && command -v ldd >/dev/null; then
	"$R" -- ldd "$(command -v ib_write_bw)" >"$out" 2>&1
	rc=$?
	((rc == 0)) && grep -q "libibverbs.so.1 => $libdir/libibverbs.so.1" "$out" &&
		grep -q "libmlx5.so.1 => $libdir/libmlx5.so.1" "$out" &&
		grep -q "libefa.so.1 => $libdir/libefa.so.1" "$out"
	vb_check $? "under gdak-run, ib_write_bw loads gdak's libibverbs, libmlx5 and libefa"
	((rc == 0)) && ! grep -q 'not found' "$out"
	vb_check $? "and every other library it needs resolves"
else
	echo "(perftest or ldd not installed: the loader check is skipped)"
fi

# gdak's own programs stay on their native path: nothing of lib/gdak in
# what the loader gives them (outside gdak-run)
IFS=: read -r -a native <<<"${GDAK_NATIVE_TOOLS:-}"
for t in "${native[@]}"; do
	[[ -x $t ]] || continue
	ldd "$t" >"$out" 2>&1
	! grep -q "$libdir" "$out" && ! readelf -d "$t" 2>/dev/null | grep -q 'lib/gdak'
	vb_check $? "$(basename "$t") loads nothing from lib/gdak"
done
vb_end
