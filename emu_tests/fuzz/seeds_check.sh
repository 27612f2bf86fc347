#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# seeds_check.sh GEN CORPUS - gdak-fuzz-seeds runs to its end, and every seed
# it writes is in the committed corpus with the same bytes (the generated
# part of fuzz/corpus/ is what the generator makes today).
set -u
gen=$1 corpus=$2
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
for d in "$corpus"/*/; do mkdir -p "$out/$(basename "$d")"; done
"$gen" "$out" || { echo "seeds_check: $gen failed ($?)"; exit 1; }
n=0 bad=0
for f in "$out"/*/*; do
	[ -f "$f" ] || continue
	rel=${f#"$out"/}
	n=$((n + 1))
	if [ ! -f "$corpus/$rel" ]; then
		echo "seeds_check: $rel is generated but not in $corpus"; bad=$((bad + 1))
	elif ! cmp -s "$f" "$corpus/$rel"; then
		echo "seeds_check: $rel differs from $corpus/$rel"; bad=$((bad + 1))
	fi
done
[ "$n" -gt 0 ] || { echo "seeds_check: no seed written"; exit 1; }
echo "seeds_check: $n generated seeds, $bad not in the corpus as generated"
[ "$bad" -eq 0 ]
