#!/usr/bin/env bash
# gdak.core.configure_errors: configuring gdak with a dependency hidden fails,
# and the message names the package and the apt line that installs it.
#   core_configure_errors.sh SOURCE_DIR CMAKE GENERATOR
# Each case configures the real source tree into a temporary directory with
# CUDA and tests off (fast; the dependency checks come first anyway).
set -uo pipefail
src=$1 cmake=$2 gen=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdak-cfgerr.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
n=0

# expect pass|fail NAME PATTERN... -- [ENV=VALUE ...] -- [cmake args...]
expect() {
	local want=$1 name=$2
	shift 2
	local pats=() envs=()
	while [[ $1 != -- ]]; do pats+=("$1"); shift; done
	shift
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	n=$((n + 1))
	local out rc
	out=$(env "${envs[@]}" "$cmake" -S "$src" -B "$tmp/b$n" -G "$gen" -DGDAK_CUDA=OFF \
		-DGDAK_TESTS=OFF "$@" 2>&1)
	rc=$?
	local ok=1
	if [[ $want == fail && $rc -eq 0 ]]; then
		echo "FAIL $name: configure succeeded, expected an error"; ok=0
	elif [[ $want == pass && $rc -ne 0 ]]; then
		echo "FAIL $name: configure failed (rc $rc), expected success"; ok=0
	fi
	for p in "${pats[@]}"; do
		if ! grep -qF -- "$p" <<<"$out"; then
			echo "FAIL $name: output lacks '$p'"; ok=0
		fi
	done
	if ((ok)); then
		passed=$((passed + 1))
		echo "ok   $name"
	else
		failed=$((failed + 1))
		echo "---- cmake output ($name):"; echo "$out" | tail -n 15; echo "----"
	fi
}

# control: with nothing hidden the same configure succeeds, so every failure
# below is caused by what that case hides
expect pass "nothing hidden" "Configuring done" -- --

# rdma-core: pkg-config finds no libibverbs.pc
expect fail "rdma-core hidden from pkg-config" "libibverbs" "apt-get install libibverbs-dev" -- \
	PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= --
# libev: nothing under the usual prefixes
expect fail "libev hidden from find_*" "libev" "apt-get install libev-dev" -- -- \
	"-DCMAKE_IGNORE_PREFIX_PATH=/usr;/usr/local;/"
# libev: wrong paths given by hand
expect fail "libev include dir wrong" "libev" "apt-get install libev-dev" -- -- \
	-DLibev_INCLUDE_DIR=/nonexistent
expect fail "libev library wrong" "libev" "apt-get install libev-dev" -- -- \
	-DLibev_LIBRARY=/nonexistent/libev.a
# the hardware backend without libmlx5: a pkg-config directory holding every
# .pc file of the system's except libmlx5.pc
mkdir -p "$tmp/pc"
for d in $(pkg-config --variable=pc_path pkg-config | tr : ' '); do
	[[ -d $d ]] && cp -n "$d"/*.pc "$tmp/pc/" 2>/dev/null
done
rm -f "$tmp/pc/libmlx5.pc"
expect fail "libmlx5 hidden, GDAK_HW_MLX5=ON" "libmlx5" "apt-get install" -- \
	PKG_CONFIG_LIBDIR="$tmp/pc" PKG_CONFIG_PATH= -- -DGDAK_HW_MLX5=ON
# a bad option value is named too
expect fail "unknown sanitizer" "GDAK_SANITIZE" "memory" -- -- -DGDAK_SANITIZE=memory

echo "$passed passed, $failed failed"
((failed == 0))
