#!/usr/bin/env bash
# check-format.sh - fail when a line added since BASE does not follow
# .clang-format.  Only added and changed lines are checked: the tree is never
# reformatted wholesale, so history stays readable.
#
#   bash tools/check-format.sh [BASE]    BASE defaults to .ci/format-base
#   bash tools/check-format.sh --fix [BASE]   format those lines in place
#
# Exit: 0 clean (or nothing to check), 1 unformatted lines (the diff that
# would fix them is printed), 2 usage or missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."

fix=0
if [[ ${1:-} == --fix ]]; then
	fix=1
	shift
fi
case ${1:-} in
-h | --help)
	sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
base=${1:-$(cat .ci/format-base)}
cfd=$(command -v clang-format-diff || command -v clang-format-diff-14 || true)
if [[ -z $cfd ]]; then
	echo "check-format: clang-format-diff not found: install it with apt-get install clang-format" >&2
	exit 2
fi
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
	echo "check-format: base '$base' is not a commit of this clone (shallow clone?)" >&2
	exit 2
fi
paths=('*.c' '*.h' '*.cu' '*.cuh' '*.cpp')
if ((fix)); then
	git diff -U0 --no-color "$base" -- "${paths[@]}" | "$cfd" -p1 -style=file -i
	exit 0
fi
out=$(git diff -U0 --no-color "$base" -- "${paths[@]}" | "$cfd" -p1 -style=file)
if [[ -n $out ]]; then
	printf '%s\n' "$out"
	echo "check-format: lines added since ${base:0:12} are not formatted (.clang-format);" \
		"fix them with: bash tools/check-format.sh --fix" >&2
	exit 1
fi
echo "check-format: lines added since ${base:0:12} are formatted"
