#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# image.sh [--cached] KIND: print the path of a cached guest root directory
# of KIND, building it first when it is missing or when its inputs changed
# (with --cached: exit 1 instead of building):
#   amd64, arm64   Debian 12 (bookworm) with its 6.1 and 6.12 cloud kernels;
#   arm64-min      Debian 12 arm64 with its 6.1 cloud kernel, unpacked only
#                  (image-extract.sh: no emulation, about a minute cold; no
#                  dkms or compiler in it: stage.sh cross-builds the
#                  package's modules on the host; tests/README.md);
#   amd64-trixie   Debian 13 (trixie) with the newest 7.x cloud kernel of
#                  trixie-backports and trixie's own 6.12 (the kernel the
#                  upgrade starts from): a 7.x kernel's headers build only
#                  with trixie's compiler and its linux-kbuild only on
#                  trixie's glibc, so DKMS must run in a trixie userland;
#   amd64-bullseye Debian 11 (bullseye) with its 5.10 cloud kernel (the
#                  kernel line of Amazon Linux 2) and linux-source-5.10,
#                  where the package's ena comes from: 5.10's headers
#                  want bullseye's gcc-10 (make check-full only).
# The cache lives outside the checkout: $TAILFIX_CACHE/KIND (default
# /var/cache/ena-tcp-tailfix).
#
# The cache key is what the root is made of: the package lists, the kernel
# versions apt offers for the matrix right now (a security update makes a
# new root, whose kernels match the host's new headers) and RECIPE, bumped
# by hand when the way the root is built changes.  Editing this script's
# comments or locking does not throw the cache away.
#
# Builds take $cache/KIND/image.lock.  Roots of other keys are dropped,
# except the newest of them (an older checkout may still want it) and any
# that a stage is copying (its rootfs-KEY.lock is held) or that a process
# uses; nothing with a mount inside is ever removed (vm-lib.sh).
#
# The guest has the kernel matrix installed through Debian's meta packages,
# their headers, dkms and a compiler (the package is installed into it through
# the real dkms.conf by run.sh), and the tools the tests use.
set -euo pipefail

only_cached=0
[ "${1:-}" = --cached ] && only_cached=1 && shift
kind=${1:-amd64}
arch=${kind%%-*}
here=$(cd "$(dirname "$0")" && pwd)
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
mirror=${TAILFIX_MIRROR:-http://deb.debian.org/debian}

base_pkgs="iproute2,iputils-ping,ethtool,kmod,procps,python3,python3-scapy,iperf3,tcpdump,sockperf,ca-certificates,udev"
suite=bookworm kernel_from= src_pkgs=
case $kind in
amd64) kernel_pkgs="linux-image-cloud-amd64 linux-headers-cloud-amd64 linux-image-6.12-cloud-amd64 linux-headers-6.12-cloud-amd64" ;;
arm64) kernel_pkgs="linux-image-cloud-arm64 linux-headers-cloud-arm64 linux-image-6.12-cloud-arm64 linux-headers-6.12-cloud-arm64" ;;
arm64-min) kernel_pkgs="linux-image-cloud-arm64" ;;
amd64-trixie)
	suite=trixie kernel_from=trixie-backports
	kernel_pkgs="linux-image-cloud-amd64 linux-headers-cloud-amd64"
	# The 7.x's own source, where the package's DKMS build takes the ENA
	# driver from (ena/prepare-source.sh); the 6.12 guests get theirs from
	# the host's linux-source-6.* (stage.sh).
	src_pkgs=linux-source ;;
amd64-bullseye)
	suite=bullseye
	kernel_pkgs="linux-image-cloud-amd64 linux-headers-cloud-amd64"
	src_pkgs=linux-source-5.10 ;;
*) echo "image.sh: unknown kind $kind (amd64, arm64, arm64-min, amd64-trixie, amd64-bullseye)" >&2; exit 2 ;;
esac
build_pkgs="dkms make gcc libc6-dev initramfs-tools xz-utils patch"
# Bump when the steps below (or image-foreign.sh's) change what a root holds.
RECIPE=1
# arm64-min: no build tools; busybox for its initramfs, make for run=check.
# extract_recipe is its RECIPE, bumped when image-extract.sh changes what
# its root holds (in the key of that kind only).
extract_recipe=
if [ "$kind" = arm64-min ]; then
	build_pkgs="busybox-static make"
	extract_recipe=1
fi

. "$here/vm-lib.sh"

# The versions apt would install of the kernel meta packages (by the names
# of this host's architecture: Debian builds every architecture's kernel
# from one source version).
kernel_versions() {
	local native p
	# (trixie-backports and bullseye are not in this host's sources: the
	# key has the package names only, and RECIPE is bumped for a new
	# kernel there)
	[ "$suite" = bookworm ] || return 0
	native=$(dpkg --print-architecture 2>/dev/null) || return 0
	for p in $kernel_pkgs; do
		apt-cache policy "${p/%-$arch/-$native}" 2>/dev/null |
			awk -v p="$p" '/Candidate:/ { print p "=" $2 }'
	done
}

key=$(printf '%s\n' "recipe=$RECIPE" "arch=$arch$([ "$kind" = "$arch" ] || echo " kind=$kind")" "$base_pkgs" "$kernel_pkgs" "$build_pkgs" \
	${kernel_from:+"with the $suite kernel"} ${src_pkgs:+"$src_pkgs"} \
	${extract_recipe:+"extract-recipe=$extract_recipe"} "$(kernel_versions)" | sha256sum | cut -c1-12)
root=$cache/$kind/rootfs-$key
if [ -f "$root/.tailfix-complete" ]; then
	echo "$root"
	exit 0
fi
[ "$only_cached" = 0 ] || exit 1

log() { echo "image.sh: $*" >&2; }
mkdir -p "$cache/$kind"
vm_lock "$cache/$kind/image.lock" -x "the $kind image build" || exit 1
if [ -f "$root/.tailfix-complete" ]; then	# built while we waited
	echo "$root"
	exit 0
fi
log "kernels: $(kernel_versions | tr '\n' ' ')(key $key)"
# Drop roots of other keys (they are big), but the newest, and none in use.
keep=$(ls -dt "$cache/$kind"/rootfs-* 2>/dev/null | grep -v -e "/rootfs-$key\$" -e '\.tmp$' -e '\.lock$' | head -1 || true)
for old in "$cache/$kind"/rootfs-*; do
	case $old in "$root"|"$root.tmp"|*.lock|"$keep") continue ;; esac
	[ -d "$old" ] || continue
	if ! vm_lock_free "${old%.tmp}.lock" || vm_in_use "$old"; then
		log "keeping $old: in use"
		continue
	fi
	log "dropping $old"
	safe_rmroot "$old" || true
done
tmp=$root.tmp
safe_rmroot "$tmp" || exit 1

mounts=()
cleanup() {
	local m
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT

t0=$SECONDS
if [ "$arch" = amd64 ] && [ "$(uname -m)" = x86_64 ]; then
	log "debootstrap $suite $arch into $tmp (a few minutes)"
	debootstrap --variant=minbase --include="$base_pkgs" "$suite" "$tmp" "$mirror" >&2
	if [ "$suite" = bookworm ]; then
		# The host's apt sources (bookworm, -updates, -security) so the
		# guest gets the same kernel ABI as the host's headers.
		cp /etc/apt/sources.list.d/debian.sources "$tmp/etc/apt/sources.list.d/" 2>/dev/null ||
			echo "deb $mirror bookworm main" >"$tmp/etc/apt/sources.list"
	else
		# (bullseye: main only; its security suite's newest kernel is
		# not on this mirror)
		printf 'deb %s %s main\n' "$mirror" "$suite" ${kernel_from:+"$mirror" "$kernel_from"} \
			>"$tmp/etc/apt/sources.list"
	fi
	for m in proc sys dev; do
		mount --bind "/$m" "$tmp/$m"
		mounts+=("$tmp/$m")
	done
	chroot "$tmp" apt-get update -q >&2
	# With kernel_from, the suite's own kernel too (trixie's 6.12), by the
	# ABI name its meta package depends on: the kernel a host runs before
	# it takes the newer one; stage.sh installs the package on it, then
	# upgrades to the newer one through apt (DKMS autoinstall).
	suite_kernel=
	if [ -n "$kernel_from" ]; then
		suite_kernel=$(chroot "$tmp" apt-cache show $(printf "%s/$suite " $kernel_pkgs) |
			sed -n 's/^Depends: \(linux-[a-z]*-[^ ,]*\).*/\1/p')
		[ -n "$suite_kernel" ] || { log "no $suite kernel found for $kernel_pkgs"; exit 1; }
	fi
	log "installing the kernels, their headers and the build tools"
	DEBIAN_FRONTEND=noninteractive chroot "$tmp" apt-get install -y -q --no-install-recommends \
		${kernel_from:+-t "$kernel_from"} $kernel_pkgs $suite_kernel $src_pkgs $build_pkgs >&2
	chroot "$tmp" apt-get clean
	cleanup
	mounts=()
elif [ "$kind" = arm64-min ]; then
	"$here/image-extract.sh" "$arch" "$tmp" "$base_pkgs,$(echo $kernel_pkgs $build_pkgs | tr ' ' ,)" >&2
else
	# Foreign architecture: first stage here, second stage inside the guest.
	"$here/image-foreign.sh" "$arch" "$tmp" "$base_pkgs" "$kernel_pkgs $build_pkgs" >&2
fi
echo "tailfix-guest" >"$tmp/etc/hostname"
touch "$tmp/.tailfix-complete"
mv "$tmp" "$root"
log "built $root in $((SECONDS - t0)) s"
echo "$root"
