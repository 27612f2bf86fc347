#!/usr/bin/env bash
# verbs_bin_install.sh CMAKE BUILD_DIR - the installed layout: cmake
# --install into a temporary prefix puts libibverbs.so.1, libmlx5.so.1 and
# libefa.so.1 in <prefix>/lib/gdak, gdak-run in <prefix>/bin, and the
# installed gdak-run (the build tree out of sight) finds that lib/gdak,
# with which ib_write_bw resolves all three.  77 when the build tree is not
# fully built (install has files to copy that do not exist yet).
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"
cmake=${1:?usage: verbs_bin_install.sh CMAKE BUILD_DIR}
build=${2:?usage: verbs_bin_install.sh CMAKE BUILD_DIR}
vb_init
prefix=$VB_DIR/prefix
if ! "$cmake" --install "$build" --prefix "$prefix" >"$VB_DIR/install.log" 2>&1; then
	if grep -q 'cannot find' "$VB_DIR/install.log"; then
		vb_skip "the build tree is not fully built: $(grep -m1 -A1 'cannot find' "$VB_DIR/install.log" | tr -s ' \n' ' ')"
	fi
	vb_fail "cmake --install failed"
	tail -n 20 "$VB_DIR/install.log" >&2
	vb_end
fi
vb_ok "cmake --install --prefix $prefix"
for l in libibverbs.so.1 libmlx5.so.1 libefa.so.1; do
	[[ -e $prefix/lib/gdak/$l ]]
	vb_check $? "$prefix/lib/gdak/$l installed"
done
[[ ! -e $prefix/lib/gdak/libmlx5.so && ! -e $prefix/lib/gdak/libefa.so && ! -e $prefix/lib/gdak/libibverbs.so ]]
vb_check $? "no link-time names (lib*.so) in lib/gdak: nothing links against them by accident"
[[ -x $prefix/bin/gdak-run ]]
vb_check $? "$prefix/bin/gdak-run installed"
env -u LD_LIBRARY_PATH "$prefix/bin/gdak-run" --print-env -- true >"$VB_DIR/env" 2>&1
grep -qx "LD_LIBRARY_PATH=$(realpath "$prefix/lib/gdak")" "$VB_DIR/env"
vb_check $? "the installed gdak-run uses the installed lib/gdak: $(head -n 1 "$VB_DIR/env")"
if command -v ib_write_bw >/dev/null; then
	"$prefix/bin/gdak-run" -- ldd "$(command -v ib_write_bw)" >"$VB_DIR/ldd" 2>&1
	n=$(grep -c "=> $(realpath "$prefix/lib/gdak")/lib\(ibverbs\|mlx5\|efa\)\.so\.1" "$VB_DIR/ldd")
	vb_check $((n != 3)) "installed: ib_write_bw resolves gdak's three libraries ($n)"
fi
vb_end
