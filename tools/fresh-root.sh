#!/usr/bin/env bash
# fresh-root.sh - what a new user gets: a bare Debian 12 root (debootstrap,
# minbase), a clone of this repository's HEAD in it (no build directory, no
# compiler cache, no CUDA toolkit), then README's two commands in order, as
# written.  Prints each command's wall time and exit status; exits 0 only if
# both passed.
#
#   sudo bash tools/fresh-root.sh [options] DIR
#
#   --cuda        bind-mount the host's /usr/local/cuda read-only into the
#                 root, as CI has it (default: no toolkit, CUDA parts skipped)
#   --from-tar T  unpack the bare root from tarball T (made by --save-tar)
#                 instead of running debootstrap
#   --save-tar T  after debootstrap, keep the bare root as tarball T
#   --mirror URL  Debian mirror (default http://deb.debian.org/debian)
#   --only demo   run only the first command (tools/run-demo.sh)
#
# DIR must be empty or absent.  The logs stay in DIR/root/fresh-logs/; DIR
# itself is left in place (rm -rf --one-file-system DIR when done).  Needs
# root, debootstrap (apt-get install debootstrap) and the mirror.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

cuda=0 from_tar="" save_tar="" only=""
mirror=http://deb.debian.org/debian
while (($#)); do
	case $1 in
	--cuda) cuda=1; shift ;;
	--from-tar) from_tar=$2; shift 2 ;;
	--save-tar) save_tar=$2; shift 2 ;;
	--mirror) mirror=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "fresh-root: unknown option '$1' (try --help)" >&2; exit 2 ;;
	*) break ;;
	esac
done
(($# == 1)) || { echo "usage: fresh-root.sh [options] DIR (try --help)" >&2; exit 2; }
root=$1
say() { printf 'fresh-root: %s\n' "$*"; }
die() { say "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, mounts)"
[[ -z $only || $only == demo ]] || die "--only takes 'demo'"
if [[ -e $root ]] && [[ -n $(ls -A "$root") ]]; then
	die "$root is not empty"
fi
((cuda == 0)) || [[ -x /usr/local/cuda/bin/nvcc ]] || die "--cuda: no /usr/local/cuda/bin/nvcc here"
mkdir -p "$root"
root=$(cd "$root" && pwd)

mounts=()
cleanup() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		umount -R "${mounts[i]}" 2>/dev/null || umount -R -l "${mounts[i]}" || true
	done
}
trap cleanup EXIT

if [[ -n $from_tar ]]; then
	say "unpacking $from_tar"
	tar -C "$root" -xf "$from_tar"
else
	command -v debootstrap >/dev/null || die "debootstrap missing: apt-get install debootstrap"
	say "debootstrap --variant=minbase bookworm $root $mirror"
	t0=$(date +%s)
	debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
		die "debootstrap failed: $root.debootstrap.log"
	rm -f "$root.debootstrap.log"
	# what an installed Debian 12 lists: updates and security too
	sec=${mirror%/debian}/debian-security
	printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
		"$mirror" "$mirror" "$sec" >"$root/etc/apt/sources.list"
	say "debootstrap: $(($(date +%s) - t0)) s"
	if [[ -n $save_tar ]]; then
		tar -C "$root" -cf "$save_tar" .
		say "bare root saved as $save_tar"
	fi
fi
grep -q 'VERSION_ID="12"' "$root/etc/os-release" || die "$root is not Debian 12"
[[ ! -e $root/usr/local/cuda ]] || die "$root already has /usr/local/cuda"

# the repository as a new user clones it: HEAD, nothing built, nothing ignored
git clone -q "$src" "$root/root/gdak"
head=$(git -C "$root/root/gdak" log -1 --format='%h %s')
say "clone of $src at $head"

# The root is a mount of its own, as / is on an installed system: `ip netns`
# (gdak.net.netns) remounts / and fails on a plain directory.
mount --bind "$root" "$root" && mount --make-private "$root" && mounts+=("$root")
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
for d in sys dev; do
	mount --rbind "/$d" "$root/$d" && mount --make-rslave "$root/$d" && mounts+=("$root/$d")
done
if ((cuda)); then
	mkdir "$root/usr/local/cuda"
	mount --bind -o ro "$(readlink -f /usr/local/cuda)" "$root/usr/local/cuda"
	mount -o remount,bind,ro "$root/usr/local/cuda"
	mounts+=("$root/usr/local/cuda")
	say "/usr/local/cuda bind-mounted read-only"
fi

logs=$root/root/fresh-logs
mkdir -p "$logs"
# a login's environment, nothing of the caller's (no ccache, no CUDA paths)
run_in() { # NAME COMMAND
	local t0 rc
	t0=$(date +%s)
	set +e
	env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		chroot "$root" bash -c "cd /root/gdak && $2" >"$logs/$1.log" 2>&1
	rc=$?
	set -e
	wall=$(($(date +%s) - t0))
	say "$2: exit $rc, $wall s wall; its last lines ($logs/$1.log):"
	tail -n 12 "$logs/$1.log" | sed 's/^/    /'
	return $rc
}
status=0 summary=""
run_in demo "bash tools/run-demo.sh" || status=1
summary="run-demo.sh $wall s exit $status"
if [[ $only != demo ]]; then
	s=0
	run_in tests "bash tools/run-tests.sh" || s=1 status=1
	summary+=", run-tests.sh $wall s exit $s"
fi
say "Debian $(cat "$root/etc/debian_version"), $( ((cuda)) && echo 'with' || echo 'no') CUDA toolkit, $head: $summary"
exit $status
