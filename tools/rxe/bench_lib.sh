# SPDX-License-Identifier: MIT
#
# bench_lib.sh - what bench.sh and bench_verbs.sh read out of a benchmark's
# log the same way.  Sourced (POSIX sh); the functions set no variables but
# row.

# take_row FILE SIZE NF RC WHAT WHY: the data row of SIZE (its first field,
# at least NF fields) in FILE; "-" when RC is not 0 or there is none, with
# "# WHAT failed (rc RC): WHY" on stderr.
take_row() {
	row=$(awk -v s="$2" -v n="$3" '$1 == s && NF >= n { print; exit }' "$1")
	if [ "$4" -ne 0 ] || [ -z "$row" ]; then
		echo "# $5 failed (rc $4): $6" >&2
		echo "-"
		return
	fi
	echo "$row"
}

# f ROW K: field K of ROW ("-" stays "-")
f() { [ "$1" = "-" ] && echo "-" || echo "$1" | awk -v k="$2" '{ print $k }'; }
