#!/usr/bin/env bash
# gdak.core.consumer: install the build tree into a temporary prefix, build
# the consumer project against it twice - with find_package(gdak) and with
# `pkg-config --cflags --libs gdak` - and run both.  When the build has the
# MPI bootstrap (HAVE_MPI=ON), the same for the MPI consumer: libgdak_mpi.a,
# gdak::mpi (find_package(gdak COMPONENTS mpi)) and pkg-config gdak-mpi with
# mpicc, each run under mpirun -np 2.
#   run.sh BUILD_DIR CONSUMER_SRC_DIR CMAKE C_COMPILER GENERATOR [SANITIZE [HAVE_MPI]]
set -euo pipefail
build=$1 src=$2 cmake=$3 cc=$4 gen=$5 san=${6:-} have_mpi=${7:-OFF}

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
# the .pc is used on other machines than the build's: no absolute library paths
if grep -Eq '(^| )/[^ ]+\.(a|so)( |$)' <<<"$pc"; then
	fail "gdak.pc's Libs name a library by its build-machine path: $pc"
fi
echo "both consumers ok"
passed=2

if [[ $have_mpi == ON ]]; then
	echo "== MPI: gdak::mpi and pkg-config gdak-mpi"
	[[ -s $libdir/libgdak_mpi.a ]] || fail "libgdak_mpi.a not installed"
	[[ -s $libdir/cmake/gdak/gdakMpiTargets.cmake ]] || fail "gdakMpiTargets.cmake not installed"
	[[ -s $libdir/pkgconfig/gdak-mpi.pc ]] || fail "gdak-mpi.pc not installed"
	mpicc=$(command -v mpicc) || fail "the build has MPI but there is no mpicc"
	mpirun=$(command -v mpirun || command -v mpiexec) || fail "no mpirun"
	export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
	# Open MPI's plugins leak on purpose: LeakSanitizer (asan builds) would
	# fail the run with no gdak frame in the report
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	run_mpi() {
		"$mpirun" --allow-run-as-root --oversubscribe -np 2 "$1"
	}
	"$cmake" -S "$src" -B "$tmp/b-mpi" -G "$gen" -DCMAKE_C_COMPILER="$cc" -DCONSUMER_MPI=ON \
		-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug \
		-DCMAKE_C_FLAGS="${flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${flags[*]}" \
		>"$tmp/cfg-mpi.log" 2>&1 ||
		{ cat "$tmp/cfg-mpi.log"; fail "configuring the MPI consumer (gdak::mpi) failed"; }
	"$cmake" --build "$tmp/b-mpi" >"$tmp/bld-mpi.log" 2>&1 ||
		{ cat "$tmp/bld-mpi.log"; fail "building the MPI consumer (CMake) failed"; }
	out3=$(run_mpi "$tmp/b-mpi/gdak_consumer_mpi" 2>&1) ||
		{ echo "$out3"; fail "the CMake-built MPI consumer failed"; }
	echo "$out3"
	grep -q '^mpi consumer ok$' <<<"$out3" || fail "CMake-built MPI consumer did not say ok"
	pcm=$(pkg-config --cflags --libs gdak-mpi) || fail "pkg-config --cflags --libs gdak-mpi failed"
	echo "pkg-config gdak-mpi: $pcm"
	# shellcheck disable=SC2086 # word splitting of the flags is wanted
	OMPI_CC=$cc "$mpicc" "${flags[@]}" -o "$tmp/consumer-mpi-pc" "$src/mpi_main.c" $pcm ||
		fail "mpicc with pkg-config gdak-mpi flags failed"
	out4=$(run_mpi "$tmp/consumer-mpi-pc" 2>&1) ||
		{ echo "$out4"; fail "the pkg-config-built MPI consumer failed"; }
	grep -q '^mpi consumer ok$' <<<"$out4" || fail "pkg-config-built MPI consumer did not say ok"
	echo "both MPI consumers ok"
	passed=4
fi
echo "$passed passed, 0 failed"
