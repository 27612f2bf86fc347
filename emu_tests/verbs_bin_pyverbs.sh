#!/usr/bin/env bash
# verbs_bin_pyverbs.sh - runs verbs_bin_pyverbs.py (Debian's python3-pyverbs)
# through gdak-run on this test's own address; 77 without python3-pyverbs.
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"
# Debian's pyverbs is built for Debian's python3, which need not be the
# first python3 on PATH (pyenv, venvs)
py=
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import pyverbs.device' 2>/dev/null; then
		py=$p
		break
	fi
done
[[ -n $py ]] || vb_skip "python3-pyverbs is not installed (no python3 here imports pyverbs)"
vb_init
timeout -k 5 "$VB_TMO" "$GDAK_RUN" --addr "$VB_SRV_ADDR" -- "$py" "$here/verbs_bin_pyverbs.py"
