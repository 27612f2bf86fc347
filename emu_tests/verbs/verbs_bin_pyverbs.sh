#!/usr/bin/env bash
# verbs_bin_pyverbs.sh - runs verbs_bin_pyverbs.py (Debian's python3-pyverbs)
# through gdak-run on this test's own address; 77 without python3-pyverbs.
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"
py=$(vb_pyverbs_python)
[[ -n $py ]] || vb_skip "python3-pyverbs is not installed (no python3 here imports pyverbs)"
vb_init
timeout -k 5 "$VB_TMO" "$GDAK_RUN" --addr "$VB_SRV_ADDR" -- "$py" "$here/verbs_bin_pyverbs.py"
