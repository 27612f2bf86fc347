#!/usr/bin/env bash
# gdak.core.consumer: install the build tree into a temporary prefix, build
# the consumer project against it twice - with find_package(gdak) and with
# `pkg-config --cflags --libs gdak` - and run both.
#   run.sh BUILD_DIR CONSUMER_SRC_DIR CMAKE C_COMPILER GENERATOR [SANITIZE]
set -euo pipefail
build=$1 src=$2 cmake=$3 cc=$4 gen=$5 san=${6:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdak-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "consumer test: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

flags=()
if [[ -n $san ]]; then
	# a sanitized libgdak.a needs the sanitizer runtime in the final link
	flags=("-fsanitize=$san")
fi

echo "== install into $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "cmake --install failed"; }

n=0
for f in include/gdak/gdak.h include/gdak/mlx5.h include/gdak/config.h \
	 include/gdak/dev/types.h; do
	[[ -s $prefix/$f ]] || fail "$f not installed"
	n=$((n + 1))
done
lib=$(find "$prefix" -name libgdak.a -print -quit)
[[ -n $lib ]] || fail "libgdak.a not installed"
libdir=$(dirname "$lib")
for f in cmake/gdak/gdakConfig.cmake cmake/gdak/gdakConfigVersion.cmake \
	 cmake/gdak/gdakTargets.cmake pkgconfig/gdak.pc; do
	[[ -s $libdir/$f ]] || fail "${libdir#"$prefix"/}/$f not installed"
	n=$((n + 1))
done
echo "installed: ${lib#"$prefix"/} and $n headers/package files"

echo "== find_package(gdak)"
"$cmake" -S "$src" -B "$tmp/b-cmake" -G "$gen" -DCMAKE_C_COMPILER="$cc" \
	-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug \
	-DCMAKE_C_FLAGS="${flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${flags[*]}" \
	>"$tmp/cfg.log" 2>&1 || { cat "$tmp/cfg.log"; fail "configuring the consumer failed"; }
"$cmake" --build "$tmp/b-cmake" >"$tmp/bld.log" 2>&1 ||
	{ cat "$tmp/bld.log"; fail "building the consumer (CMake) failed"; }
out1=$("$tmp/b-cmake/gdak_consumer") || { echo "$out1"; fail "the CMake-built consumer failed"; }
echo "$out1"
grep -q '^consumer ok$' <<<"$out1" || fail "CMake-built consumer did not say ok"

echo "== pkg-config gdak"
export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
# gdak.pc locates its prefix from its own directory (${pcfiledir}): no
# --define-variable needed for a tree installed with --prefix.
pc=$(pkg-config --cflags --libs gdak) ||
	fail "pkg-config --cflags --libs gdak failed"
echo "pkg-config: $pc"
pc_inc=$(pkg-config --variable=includedir gdak)
pc_lib=$(pkg-config --variable=libdir gdak)
[[ -f $pc_inc/gdak/gdak.h && -f $pc_lib/libgdak.a ]] ||
	fail "gdak.pc's includedir/libdir ($pc_inc, $pc_lib) are not the installed tree"
# shellcheck disable=SC2086 # word splitting of the flags is wanted
"$cc" "${flags[@]}" -o "$tmp/consumer-pc" "$src/main.c" $pc ||
	fail "building the consumer with pkg-config flags failed"
out2=$("$tmp/consumer-pc") || { echo "$out2"; fail "the pkg-config-built consumer failed"; }
grep -q '^consumer ok$' <<<"$out2" || fail "pkg-config-built consumer did not say ok"
[[ $out1 == "$out2" ]] || fail "the two consumers disagree"
echo "both consumers ok"
echo "2 passed, 0 failed"
