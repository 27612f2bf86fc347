#!/usr/bin/env bash
# doctest.sh - every command README.md and docs/*.md show either runs here or
# says why it cannot (test gdak.docs.commands).
#
#   tools/doctest.sh SOURCE_DIR BUILD_DIR [FILE.md ...]
#                       (default: README.md CONTRIBUTING.md docs/*.md)
#
# A command block is a fenced block tagged sh/bash/console/shell, or an
# untagged one whose first command line starts like a command (gdak-*,
# tools/, build/, cmake, ctest, tshark, dumpcap, mpirun, ib_*, ibv_*,
# python3, VAR=value, ...).  Each must be
# preceded by a marker line:
#   <!-- doctest: run -->              run it (bash -e -o pipefail, 300 s)
#   <!-- doctest: setup CMD -->        (with a run marker, any number) run
#                                      CMD first, unshown: the file the block reads,
#                                      `need tshark jq` (missing: the block is skipped)
#   <!-- doctest: needs REASON ... --> not run here; REASON is one of
#        hardware (a ConnectX), gpu, rxe-guest (inside the soft-RoCE guest),
#        root (installs packages), long (a full build or benchmark: minutes),
#        ctest (runs CTest on the build, which a test inside CTest cannot:
#        each `ctest --test-dir build/default` line's -R and -L must select
#        at least one of the build's tests, or the block fails),
#        covered-by=TEST (a CTest test runs the same commands; TEST must
#        name a test of BUILD_DIR, or the first part of some test names;
#        gdak.hw.* tests are only checked in a build that has them)
# Run blocks execute in a scratch directory where tools/, emu_tests/, docs/
# and build/default/ are the source tree's and the build's, with the build's
# tools/ first on PATH.  A line with --follow (a reader's Ctrl-C) gets SIGINT
# after 3 s.  Exit 1 if a block is unmarked, has an unknown reason, or fails.
# (Blocks that run ctest on the build are marked, not run: a ctest inside
# the ctest that runs this would share its Testing/ bookkeeping; `needs
# ctest` checks what they select instead.)
set -uo pipefail
case ${1:-} in
-h | --help)
	sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
esac
if [ $# -lt 2 ] || [ ! -d "$1" ] || [ ! -d "$2" ]; then
	echo "doctest.sh: usage: doctest.sh SOURCE_DIR BUILD_DIR [FILE.md ...] (two folders; --help)" >&2
	exit 2
fi
src=$(cd "$1" && pwd) bld=$(cd "$2" && pwd)
shift 2
cd "$src" || exit 1
files=("$@")
((${#files[@]})) || files=(README.md CONTRIBUTING.md docs/*.md)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdak-doctest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/blocks" "$tmp/work/build"
for d in tools emu_tests docs core device cmake; do ln -s "$src/$d" "$tmp/work/$d"; done
ln -s "$bld" "$tmp/work/build/default"
export PATH="$bld/tools:$PATH"

# The names of the build's tests, for covered-by=TEST (CTestTestfile.cmake
# spells them add_test([=[NAME]=] ...), or add_test(NAME ...) before 3.19).
mapfile -t tests < <(find "$bld" -name CTestTestfile.cmake -exec \
	sed -nE 's/^add_test\((\[=\[)?([^] ]+)(\]=\])? .*/\2/p' {} + | sort -u)
# each test's name and labels ("name<TAB>lab1;lab2"), for `needs ctest`
find "$bld" -name CTestTestfile.cmake -exec sed -nE \
	's/^set_tests_properties\((\[=\[)?([^] ]+)(\]=\])? PROPERTIES (.*LABELS "([^"]*)")?.*/\2\t\5/p' {} + \
	>"$tmp/labels"
ctest_selects() { # BODY: every `ctest --test-dir build/default` line selects a test
	local line words i re lab ok=0
	while read -r line; do
		[[ $line == ctest\ * && $line == *"--test-dir build/default"* ]] || continue
		read -ra words <<<"${line%%#*}"
		re="" lab=""
		for ((i = 1; i < ${#words[@]}; i++)); do
			case ${words[i]} in
			-R) re=${words[i + 1]:-} ;;
			-L) lab=${words[i + 1]:-} ;;
			esac
		done
		awk -F '\t' -v re="$re" -v lab="$lab" '
			(re == "" || $1 ~ re) && (lab == "" || ";" $2 ";" ~ ";[^;]*(" lab ")[^;]*;") { found = 1 }
			END { exit !found }' "$tmp/labels" ||
			{ echo "selects no test of $bld: $line"; ok=1; }
	done <"$1"
	return $ok
}
covered() { # TEST: a test of the build, or the start of some tests' names
	local t
	for t in "${tests[@]}"; do
		[[ $t == "$1" || $t == "$1".* ]] && return 0
	done
	# the hw preset's tests exist only in a build with -DGDAK_HW_MLX5=ON
	if [[ $1 == gdak.hw.* ]]; then
		for t in "${tests[@]}"; do [[ $t == gdak.hw.* ]] && return 1; done
		return 0
	fi
	return 1
}

# Split the files into blocks: NNN.meta (file line lang marker...), NNN.body
awk -v out="$tmp/blocks" '
FNR == 1 { nmark = 0 }
!inb && /^<!-- doctest: .* -->[ \t]*$/ {
	m = $0; sub(/^<!-- doctest: /, "", m); sub(/ -->[ \t]*$/, "", m)
	marks[++nmark] = m; next
}
!inb && /^```/ {
	inb = 1; n++; lang = substr($0, 4); sub(/[ \t{].*/, "", lang)
	meta = sprintf("%s/%03d.meta", out, n); body = sprintf("%s/%03d.body", out, n)
	printf "%s\t%d\t%s\n", FILENAME, FNR, (lang == "" ? "-" : lang) > meta
	for (i = 1; i <= nmark; i++) print marks[i] > meta
	close(meta); printf "" > body; nmark = 0; next
}
inb && /^```[ \t]*$/ { inb = 0; close(body); next }
inb { print > body; next }
/[^ \t]/ { nmark = 0 }
' "${files[@]}"

is_cmd_block() { # body lang
	case $2 in sh | bash | console | shell) return 0 ;; -) ;; *) return 1 ;; esac
	local first
	first=$(grep -v '^[[:space:]]*\(#\|$\)' "$1" | head -n 1)
	[[ $first =~ ^(\$\ )?(bash\ |sh\ |sudo\ |cmake\ |ctest\ |gdak-|tools/|build/|\./|mpirun\ |mpicc\ |cc\ |tshark\ |wireshark\ |dumpcap\ |ib_|ibv_|rping\ |python3\ |ip\ |jq\ |valgrind\ |apt-get\ |git\ |[A-Z][A-Z0-9_]*=|env\ |export\ |cd\ |pkg-config\ ) ]]
}

ran=0 marked=0 failed=0 bad=0 skipped=0
declare -A why=()
for meta in "$tmp"/blocks/*.meta; do
	[[ -e $meta ]] || continue
	body=${meta%.meta}.body
	IFS=$'\t' read -r file line lang < "$meta"
	is_cmd_block "$body" "$lang" || continue
	mapfile -t marks < <(tail -n +2 "$meta")
	where="$file:$line"
	if ((${#marks[@]} == 0)); then
		echo "UNMARKED: $where: a command block without <!-- doctest: run --> or <!-- doctest: needs REASON -->"
		bad=$((bad + 1))
		continue
	fi
	setup=() run=0 needs=""
	for m in "${marks[@]}"; do
		case $m in
		run) run=1 ;;
		setup\ *) setup+=("${m#setup }") ;;
		needs\ *) needs=${m#needs } ;;
		*) echo "BAD MARKER: $where: '$m'"; bad=$((bad + 1)) ;;
		esac
	done
	if [[ -n $needs ]]; then
		for r in $needs; do
			case $r in
			covered-by=*)
				if covered "${r#covered-by=}"; then
					why[covered-by]=$((${why[covered-by]:-0} + 1))
				else
					echo "BAD REASON: $where: '$r': no test of $bld is named so"
					bad=$((bad + 1))
				fi
				;;
			ctest)
				if ctest_selects "$body" >"$tmp/out"; then
					why[$r]=$((${why[$r]:-0} + 1))
				else
					echo "FAILED: $where (needs ctest):"
					sed 's/^/    /' "$tmp/out"
					failed=$((failed + 1))
				fi
				;;
			hardware | gpu | rxe-guest | root | long) why[$r]=$((${why[$r]:-0} + 1)) ;;
			*) echo "BAD REASON: $where: '$r' (hardware gpu rxe-guest root long ctest covered-by=TEST)"
			   bad=$((bad + 1)) ;;
			esac
		done
		echo "marked: $where: needs $needs"
		marked=$((marked + 1))
		continue
	fi
	((run)) || { echo "BAD MARKER: $where: neither run nor needs"; bad=$((bad + 1)); continue; }
	{
		echo 'set -e -o pipefail'
		# setup lines may say which optional tools the block needs
		echo 'need() { for t; do command -v "$t" >/dev/null || { echo "needs $t"; exit 77; }; done; }'
		for s in "${setup[@]}"; do echo "$s"; done
		# a --follow line is what a reader stops with Ctrl-C
		sed -E 's/^([^#]*--follow)/timeout --preserve-status -s INT 3 \1/' "$body"
	} > "$tmp/run.sh"
	(cd "$tmp/work" && timeout 300 bash "$tmp/run.sh") > "$tmp/out" 2>&1
	rc=$?
	if ((rc == 0)); then
		echo "ran: $where ok"
		ran=$((ran + 1))
	elif ((rc == 77)); then
		echo "skipped: $where: $(tail -n 1 "$tmp/out")"
		skipped=$((skipped + 1))
	else
		echo "FAILED: $where (exit $rc):"
		sed 's/^/    /' "$tmp/run.sh" | tail -n +2
		echo "  output:"
		tail -n 40 "$tmp/out" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
done
summary=""
for r in "${!why[@]}"; do summary+=" $r ${why[$r]},"; done
echo "doc commands: $ran blocks ran, $skipped skipped (a tool missing), $marked marked (${summary%,} ), $bad unmarked or badly marked, $failed failed"
[[ $bad == 0 && $failed == 0 ]]
