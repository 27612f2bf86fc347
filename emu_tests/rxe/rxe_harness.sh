#!/usr/bin/env bash
# gdak.rxe.harness: tools/rxe/gdak-rxe-vm boots the soft-RoCE guest, runs a
# command in it and hands back its exit status and output; bad options,
# a boot that cannot finish and a command that hangs each end with their own
# exit code and a message, never a hang.
#   rxe_harness.sh SOURCE_DIR BINARY_DIR
# Exits 77 where the harness cannot run (no qemu, no package source).
set -uo pipefail
src=$1 bin=$2
vm=$src/tools/rxe/gdak-rxe-vm
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
expect_rc() { # want got what
	if [ "$1" = "$2" ]; then ok; else bad "$3: exit $2, want $1"; fi
}
expect_in() { # file pattern what
	if grep -q -e "$2" "$1"; then ok; else bad "$3: no '$2' in the output"; fi
}

[ -z "${GDAK_IN_RXE_VM:-}" ] || { echo "SKIP: inside the rxe guest already"; exit 77; }
tmp=$(mktemp -d "$bin/rxe-harness.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# the guests this test boots keep their run directories under $tmp/run, so
# the leftover check below sees ours only (other guests may be running)
mkdir -p "$tmp/run"
export TMPDIR=$tmp/run

# ---- usage errors: no boot, exit 2, the message names the problem ----------
"$vm" --timeout soon run true > "$tmp/o" 2>&1
expect_rc 2 $? "non-numeric --timeout"
expect_in "$tmp/o" "not a number: 'soon'" "non-numeric --timeout"
"$vm" --frobnicate run true > "$tmp/o" 2>&1
expect_rc 2 $? "unknown option"
expect_in "$tmp/o" "unknown option --frobnicate" "unknown option"
"$vm" run > "$tmp/o" 2>&1
rc=$?
[ $rc = 77 ] && { cat "$tmp/o"; echo "SKIP: the rxe guest cannot be had here"; exit 77; }
expect_rc 2 $rc "run without a command"
expect_in "$tmp/o" "run needs a command" "run without a command"

# Build (or find) the guest first, so that a machine without qemu or a
# package source skips instead of failing.
"$vm" build > "$tmp/o" 2>&1
rc=$?
[ $rc = 77 ] && { cat "$tmp/o"; echo "SKIP: the rxe guest cannot be had here"; exit 77; }
expect_rc 0 $rc "build"

# ---- a real run: devices, namespace, 9p both ways, verbs traffic, exit status --
token=$RANDOM$RANDOM
echo "$token" > "$tmp/from-host"
cat > "$tmp/guest.sh" <<EOF
rdma link show
ibv_devices
cat /sys/class/infiniband/rxe0/ports/1/state
ip -n \$GDAK_RXE_NS -4 addr show gveth1
echo "host file: \$(cat $tmp/from-host)"
echo "guest-$token" > $tmp/from-guest
# RC ping-pong over rxe0 (same device; the OOB exchange goes over TCP on lo)
ibv_rc_pingpong -d rxe0 -g 1 -n 50 > /tmp/srv.log 2>&1 &
sleep 1
ibv_rc_pingpong -d rxe0 -g 1 -n 50 127.0.0.1 && wait \$! && echo "pingpong ok"
exit 3
EOF
(cd "$tmp" && "$vm" --share "$tmp" --timeout 120 run sh "$tmp/guest.sh") > "$tmp/o" 2>&1
rc=$?
expect_rc 3 $rc "guest command's exit status"
expect_in "$tmp/o" "link rxe0/1 state ACTIVE .*netdev eth0" "rxe0 on eth0"
expect_in "$tmp/o" "link rxe1/1 state ACTIVE .*netdev gveth0" "rxe1 on gveth0"
expect_in "$tmp/o" "inet 10.1.0.2/24" "gveth1 in the namespace"
expect_in "$tmp/o" "host file: $token" "host -> guest over 9p"
if [ "$(cat "$tmp/from-guest" 2>/dev/null)" = "guest-$token" ]; then ok; else bad "guest -> host over 9p"; fi
expect_in "$tmp/o" "pingpong ok" "ibv_rc_pingpong on rxe0"
[ $failed = 0 ] || cat "$tmp/o"

# ---- ctest of a build directory outside --share (cmake -B /elsewhere): it is
# shared too, at its own path, and its tests run -------------------------------
mkdir -p "$tmp/src" "$tmp/bld"
echo "$token" > "$tmp/bld/marker"
cat > "$tmp/bld/CTestTestfile.cmake" <<EOF
add_test([=[gdak.fake.outside]=] "/bin/sh" "-c" "grep -q $token $tmp/bld/marker && echo outside-ok")
set_tests_properties([=[gdak.fake.outside]=] PROPERTIES LABELS "rxe" WORKING_DIRECTORY "$tmp/bld")
EOF
"$vm" --share "$tmp/src" --timeout 120 ctest "$tmp/bld" -L rxe > "$tmp/o" 2>&1
rc=$?
expect_rc 0 $rc "ctest of a build dir outside the share"
expect_in "$tmp/o" "guest test: gdak.fake.outside .... Passed" "the outside build dir's test ran"
[ $rc = 0 ] || cat "$tmp/o"

# ---- a command that hangs is killed: 124, with the console shown ------------
"$vm" --timeout 3 run sleep 600 > "$tmp/o" 2>&1
expect_rc 124 $? "hanging command"
expect_in "$tmp/o" "command killed after 3s" "hanging command"

# ---- a boot that cannot finish in time: 125 and the console log -------------
"$vm" --boot-timeout 1 run true > "$tmp/o" 2>&1
expect_rc 125 $? "boot timeout"
expect_in "$tmp/o" "no ready rxe after 1s" "boot timeout"

# nothing left behind: no qemu of ours, no temp dirs
if pgrep -f "$tmp/run/gdak-rxe\.[A-Za-z0-9]*/" > /dev/null; then bad "qemu still running"; else ok; fi
if [ -n "$(ls -A "$tmp/run")" ]; then bad "run directories left: $(ls "$tmp/run")"; else ok; fi

echo "$passed passed, $failed failed"
[ $failed = 0 ]
