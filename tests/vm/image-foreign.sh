#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# image-foreign.sh ARCH DIR BASE_PKGS EXTRA_PKGS
#	Build a Debian 12 root of a foreign architecture (arm64) in DIR, for
#	image.sh: debootstrap's first stage here, its second stage and the
#	apt-get install of EXTRA_PKGS (kernels, headers, dkms, gcc) in a chroot
#	whose ARCH binaries run under qemu-user (binfmt_misc).  BASE_PKGS is
#	debootstrap's comma-separated --include list.
# image-foreign.sh --binfmt ARCH
#	Only make sure ARCH binaries run on this host (stage.sh uses it before
#	its chroot `dkms install`).
#
# Why qemu-user and not the second stage inside a qemu-system guest: both
# work on this kind of machine (root can mount binfmt_misc and register
# qemu-user-static), but the chroot keeps the host's network (apt-get
# works as in the amd64 image, no offline .deb mirror), and the emulated
# programs run several times faster than under full-system TCG.  The guests
# that run the tests are real arm64 kernels under qemu-system-aarch64.
set -euo pipefail

log() { echo "image-foreign.sh: $*" >&2; }

# qemu-user's name and Debian's multiarch name for ARCH.
qemu_arch() {
	case $1 in
	arm64) echo aarch64 ;;
	*) log "unknown foreign architecture $1 (arm64)"; exit 2 ;;
	esac
}

# binfmt ARCH: register qemu-user-static for ARCH ELF binaries unless done.
# The F flag (from Debian's binfmt.d file) opens the interpreter now, so it
# also works inside a chroot that has no qemu binary.
binfmt() {
	local q conf dir=/proc/sys/fs/binfmt_misc
	q=$(qemu_arch "$1")
	conf=/usr/lib/binfmt.d/qemu-$q.conf
	[ -f "$conf" ] || { log "no $conf: apt-get install qemu-user-static"; exit 1; }
	[ -f "$dir/register" ] || mount -t binfmt_misc binfmt_misc "$dir" ||
		{ log "cannot mount binfmt_misc on $dir"; exit 1; }
	if ! grep -qs '^enabled' "$dir/qemu-$q"; then
		[ -e "$dir/qemu-$q" ] && echo 1 >"$dir/qemu-$q" ||
			cat "$conf" >"$dir/register" ||
			{ log "cannot register $conf with binfmt_misc"; exit 1; }
	fi
	grep -q '^enabled' "$dir/status" || echo 1 >"$dir/status"
}

if [ "${1:-}" = --binfmt ]; then
	binfmt "${2:?arch}"
	exit 0
fi

arch=$1 dir=$2 base_pkgs=$3 extra_pkgs=$4
mirror=${TAILFIX_MIRROR:-http://deb.debian.org/debian}
binfmt "$arch"

mounts=()
cleanup() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT

t=$SECONDS
log "debootstrap --foreign $arch into $dir"
debootstrap --foreign --arch="$arch" --variant=minbase --include="$base_pkgs" \
	bookworm "$dir" "$mirror" >&2
log "first stage $((SECONDS - t)) s; second stage under qemu-$(qemu_arch "$arch")"
t=$SECONDS
chroot "$dir" /debootstrap/debootstrap --second-stage >&2
log "second stage $((SECONDS - t)) s"

# The host's apt sources (bookworm, -updates, -security), so the guest gets
# the kernel ABI the host's arm64 headers have.
cp /etc/apt/sources.list.d/debian.sources "$dir/etc/apt/sources.list.d/" 2>/dev/null ||
	echo "deb $mirror bookworm main" >"$dir/etc/apt/sources.list"
for m in proc sys dev; do
	mount --bind "/$m" "$dir/$m"
	mounts+=("$dir/$m")
done
cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
# The guest's initramfs only has to reach the virtio disk (virtio_blk and
# virtio_pci are modules in the arm64 cloud kernels; ext4 is built in).  A
# short module list instead of "most" makes every mkinitramfs run (kernel
# install, DKMS post-install) minutes faster under emulation.
mkdir -p "$dir/etc/initramfs-tools/conf.d"
echo "MODULES=list" >"$dir/etc/initramfs-tools/conf.d/tailfix-guest.conf"
mkdir -p "$dir/usr/share/initramfs-tools/modules.d"
printf '%s\n' virtio_pci virtio_blk virtio_mmio >"$dir/usr/share/initramfs-tools/modules.d/tailfix-guest"
t=$SECONDS
chroot "$dir" apt-get update -q >&2
# shellcheck disable=SC2086 # word splitting of the package list is wanted
DEBIAN_FRONTEND=noninteractive chroot "$dir" apt-get install -y -q --no-install-recommends \
	$extra_pkgs >&2
chroot "$dir" apt-get clean
log "apt-get install $((SECONDS - t)) s"
