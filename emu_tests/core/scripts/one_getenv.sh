#!/bin/bash
# The configuration table (core/src/env.c) is the library's one getenv():
# no other file of core/, device/, nic_model/ or hw_mlx5/ reads the
# environment (tests and tools read their own settings, and are not looked at).
# usage: one_getenv.sh SOURCE_DIR
set -u
src=${1:?usage: one_getenv.sh SOURCE_DIR}
cd "$src" || exit 1
# a call: the name, then an argument (the comments' "getenv()" is not one)
pat='\b(secure_)?getenv[[:space:]]*\([^)]'
hits=$(grep -rnE --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' \
	--include='*.cpp' "$pat" core device nic_model hw_mlx5)
# the pattern must still see the one real site, or it checks nothing
if ! grep -q '^core/src/env\.c:' <<<"$hits"; then
	echo "FAIL: the pattern does not find core/src/env.c's getenv; fix this script"
	exit 1
fi
other=$(grep -v '^core/src/env\.c:' <<<"$hits")
if [[ -n $other ]]; then
	echo "FAIL: library code reads the environment outside the configuration table"
	echo "(add a row to core/src/env.c and read it with gdak_env_*):"
	echo "$other"
	exit 1
fi
echo "one getenv site: core/src/env.c"
