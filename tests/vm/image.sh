#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# image.sh ARCH: print the path of a cached Debian 12 guest root directory
# for ARCH (amd64 or arm64), building it first when it is missing or when its
# inputs (this script, the package list) changed.  The cache lives outside the
# checkout: $TAILFIX_CACHE (default /var/cache/ena-tcp-tailfix).
#
# The guest has the kernel matrix installed through Debian's meta packages,
# their headers, dkms and a compiler (the package is installed into it through
# the real dkms.conf by run.sh), and the tools the tests use.
set -euo pipefail

arch=${1:-amd64}
here=$(cd "$(dirname "$0")" && pwd)
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
mirror=${TAILFIX_MIRROR:-http://deb.debian.org/debian}

base_pkgs="iproute2,iputils-ping,ethtool,kmod,procps,python3,python3-scapy,iperf3,tcpdump,sockperf,ca-certificates,udev"
case $arch in
amd64) kernel_pkgs="linux-image-cloud-amd64 linux-headers-cloud-amd64 linux-image-6.12-cloud-amd64 linux-headers-6.12-cloud-amd64" ;;
arm64) kernel_pkgs="linux-image-cloud-arm64 linux-headers-cloud-arm64 linux-image-6.12-cloud-arm64 linux-headers-6.12-cloud-arm64" ;;
*) echo "image.sh: unknown arch $arch (amd64, arm64)" >&2; exit 2 ;;
esac
build_pkgs="dkms make gcc libc6-dev initramfs-tools xz-utils patch"

key=$(cat "$0" | sha256sum | cut -c1-12)
# A foreign root is also made by image-foreign.sh: part of its key.
[ "$arch" = amd64 ] || key=$(cat "$0" "$here/image-foreign.sh" | sha256sum | cut -c1-12)
root=$cache/$arch/rootfs-$key
if [ -f "$root/.tailfix-complete" ]; then
	echo "$root"
	exit 0
fi

log() { echo "image.sh: $*" >&2; }
mkdir -p "$cache/$arch"
# Drop stale images of older keys: they are big.
find "$cache/$arch" -maxdepth 1 -name 'rootfs-*' ! -name "rootfs-$key" -exec rm -rf {} + 2>/dev/null || true
tmp=$root.tmp
rm -rf "$tmp"

mounts=()
cleanup() {
	local m
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT

t0=$SECONDS
if [ "$arch" = amd64 ] && [ "$(uname -m)" = x86_64 ]; then
	log "debootstrap $arch into $tmp"
	debootstrap --variant=minbase --include="$base_pkgs" bookworm "$tmp" "$mirror" >&2
	# The host's apt sources (bookworm, -updates, -security) so the guest
	# gets the same kernel ABI as the host's headers.
	cp /etc/apt/sources.list.d/debian.sources "$tmp/etc/apt/sources.list.d/" 2>/dev/null ||
		echo "deb $mirror bookworm main" >"$tmp/etc/apt/sources.list"
	for m in proc sys dev; do
		mount --bind "/$m" "$tmp/$m"
		mounts+=("$tmp/$m")
	done
	chroot "$tmp" apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive chroot "$tmp" apt-get install -y -q --no-install-recommends \
		$kernel_pkgs $build_pkgs >&2
	chroot "$tmp" apt-get clean
	cleanup
	mounts=()
else
	# Foreign architecture: first stage here, second stage inside the guest.
	"$here/image-foreign.sh" "$arch" "$tmp" "$base_pkgs" "$kernel_pkgs $build_pkgs" >&2
fi
echo "tailfix-guest" >"$tmp/etc/hostname"
touch "$tmp/.tailfix-complete"
mv "$tmp" "$root"
log "built $root in $((SECONDS - t0)) s"
echo "$root"
