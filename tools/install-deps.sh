#!/usr/bin/env bash
# install-deps.sh - install, with apt, everything gdak needs to build and run
# its tests on a fresh Debian 12 or Ubuntu 24.04.
#
#   bash tools/install-deps.sh [--check] [--help]
#
# Idempotent: when every package is already installed it changes nothing and
# does not even run apt-get update.  Works as root, or through sudo.  Never
# installs a CUDA toolkit: it reports the one it finds (/usr/local/cuda or
# nvcc on PATH), and gdak builds its CUDA parts only when one is there.
#   --check   only report what is missing; exit 1 if something is
set -euo pipefail

# Needed to configure, build and run the unit/emu/net tests.
REQUIRED=(
	cmake ninja-build gcc g++ pkg-config	# build
	libibverbs-dev rdma-core ibverbs-utils	# rdma-core: mlx5dv.h, libibverbs, libmlx5
	libev-dev				# the NIC model's event loop (libev.a)
	iproute2				# network namespaces for the net tests
)
# Needed by optional test labels and tools; each missing one only skips what
# needs it (tests exit 77), so a failure to install one is a warning.
OPTIONAL=(
	valgrind				# memcheck label
	clang					# fuzz preset (libFuzzer)
	tshark					# trace tests: Wireshark decodes gdak's pcapng
	qemu-system-x86 busybox-static jq	# rxe label: soft-RoCE in a qemu guest (tools/rxe)
	perftest				# rxe guest baselines; verbs_bin tests through gdak-run
	rdmacm-utils python3-pyverbs		# verbs_bin tests: rdma-core's programs, pyverbs
	libopenmpi-dev openmpi-bin		# multi-process examples
	python3-matplotlib			# plots in docs/BENCHMARKS.md
)

check_only=0
for a in "$@"; do
	case $a in
	--check) check_only=1 ;;
	-h | --help)
		sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "install-deps.sh: unknown argument '$a' (try --help)" >&2
		exit 2
		;;
	esac
done

say() { printf 'install-deps: %s\n' "$*"; }

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
	say "this script needs a Debian or Ubuntu system (apt-get, dpkg-query)" >&2
	exit 1
fi
if [[ -r /etc/os-release ]]; then
	# shellcheck disable=SC1091
	. /etc/os-release
	case "${ID:-}:${VERSION_ID:-}" in
	debian:12 | ubuntu:24.04) ;;
	*) say "note: tested on Debian 12 and Ubuntu 24.04; this is ${PRETTY_NAME:-unknown}" ;;
	esac
fi

installed() {
	[[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

missing_req=() missing_opt=()
for p in "${REQUIRED[@]}"; do installed "$p" || missing_req+=("$p"); done
for p in "${OPTIONAL[@]}"; do installed "$p" || missing_opt+=("$p"); done

report_cuda() {
	local nvcc=""
	if [[ -x /usr/local/cuda/bin/nvcc ]]; then
		nvcc=/usr/local/cuda/bin/nvcc
	elif command -v nvcc >/dev/null; then
		nvcc=$(command -v nvcc)
	fi
	if [[ -n $nvcc ]]; then
		local v
		v=$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
		say "CUDA toolkit: $nvcc (release ${v:-?}): CUDA tests and tools will be built"
	else
		say "CUDA toolkit: none found (/usr/local/cuda/bin/nvcc, PATH): gdak builds without"
		say "  its CUDA parts and runs device code on CPU threads (installing CUDA is up to you)"
	fi
	if [[ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 || -e /usr/lib64/libcuda.so.1 ]] ||
		ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
		say "CUDA driver: libcuda.so.1 present (GPU tests run if a GPU is visible)"
	else
		say "CUDA driver: libcuda.so.1 absent: tests labelled cuda will be skipped"
	fi
}

if ((${#missing_req[@]} == 0 && ${#missing_opt[@]} == 0)); then
	say "all ${#REQUIRED[@]} required and ${#OPTIONAL[@]} optional packages are installed; nothing to do"
	report_cuda
	exit 0
fi
if ((check_only)); then
	((${#missing_req[@]})) && say "missing (required): ${missing_req[*]}"
	((${#missing_opt[@]})) && say "missing (optional): ${missing_opt[*]}"
	report_cuda
	exit 1
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null; then
		SUDO=(sudo)
		say "not root: using sudo"
	else
		say "need root or sudo to install: ${missing_req[*]} ${missing_opt[*]}" >&2
		exit 1
	fi
fi

export DEBIAN_FRONTEND=noninteractive
APT=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q
	-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

# tshark asks whether non-root users may capture; answer no, without a prompt.
if [[ " ${missing_opt[*]} " == *" tshark "* ]] && command -v debconf-set-selections >/dev/null; then
	echo "wireshark-common wireshark-common/install-setuid boolean false" |
		"${SUDO[@]}" debconf-set-selections
fi

say "apt-get update"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q update

if ((${#missing_req[@]})); then
	say "installing (required): ${missing_req[*]}"
	"${APT[@]}" install --no-install-recommends "${missing_req[@]}"
fi
if ((${#missing_opt[@]})); then
	say "installing (optional): ${missing_opt[*]}"
	if ! "${APT[@]}" install --no-install-recommends "${missing_opt[@]}"; then
		# one unavailable package must not cost the others
		for p in "${missing_opt[@]}"; do
			installed "$p" && continue
			"${APT[@]}" install --no-install-recommends "$p" ||
				say "warning: could not install $p; tests that need it will be skipped"
		done
	fi
fi

still=()
for p in "${REQUIRED[@]}"; do installed "$p" || still+=("$p"); done
if ((${#still[@]})); then
	say "required packages still missing: ${still[*]}" >&2
	exit 1
fi
say "done"
report_cuda
