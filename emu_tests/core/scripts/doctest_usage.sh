#!/usr/bin/env bash
# gdak.docs.doctest_usage: tools/doctest.sh says how to call it and stops
# with exit 2 when its two folders are missing or are not folders; --help
# prints its header (exit 0) and nothing of the script below it; a block
# without a marker fails the run (exit 1) and names the file.
#   doctest_usage.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$(cd "$1" && pwd) bld=$(cd "$2" && pwd)
dt=$src/tools/doctest.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdak-doctest-usage.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
check() { if eval "$2"; then passes=$((passes + 1)); else echo "FAILED: $1"; fails=$((fails + 1)); fi; }

usage() { # args...: exit 2, the usage line on stderr, nothing on stdout
	bash "$dt" "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	check "exit 2 for [$*] (got $rc)" '[ $rc -eq 2 ]'
	check "usage on stderr for [$*]" 'grep -q "^doctest.sh: usage: doctest.sh SOURCE_DIR BUILD_DIR" "$tmp/err"'
	check "nothing on stdout for [$*]" '[ ! -s "$tmp/out" ]'
}
usage
usage "$src"
usage "$src" "$tmp/no-such-folder"
usage "$tmp/no-such-folder" "$bld"
: >"$tmp/a-file"
usage "$src" "$tmp/a-file"

bash "$dt" --help >"$tmp/out" 2>"$tmp/err"
rc=$?
check "--help exits 0 (got $rc)" '[ $rc -eq 0 ]'
check "--help starts with the header" 'head -1 "$tmp/out" | grep -q "^doctest.sh - every command"'
check "--help names the markers" 'grep -q "doctest: needs REASON" "$tmp/out"'
check "--help stops before the script" '! grep -q "set -uo pipefail" "$tmp/out"'
check "--help writes no error" '[ ! -s "$tmp/err" ]'

# an unmarked command block fails, and the message names the file
mkdir -p "$tmp/doc"
printf '# t\n\n```sh\necho hello\n```\n' >"$tmp/doc/unmarked.md"
bash "$dt" "$src" "$bld" "$tmp/doc/unmarked.md" >"$tmp/out" 2>&1
rc=$?
check "an unmarked block: exit 1 (got $rc)" '[ $rc -eq 1 ]'
check "an unmarked block: the file and line are named" 'grep -q "^UNMARKED: .*/unmarked.md:3: " "$tmp/out"'

echo "doctest_usage: $passes passed, $fails failed"
[ $fails -eq 0 ]
