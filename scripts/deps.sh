#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deps.sh [build|check|arm64]: install with apt what that job needs.
# Already-installed packages are not fetched again.
set -e
build="build-essential make gcc dkms kmod patch xz-utils linux-headers-cloud-amd64
linux-headers-6.12-cloud-amd64 linux-source-6.1 linux-source-6.12 coccinelle sparse"
check="$build qemu-system-x86 debootstrap e2fsprogs spin rsync iproute2 gnuplot-nox
ca-certificates"
arm64="qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
case ${1:-check} in
build) want=$build ;;
check) want=$check ;;
full) want="$check $arm64" ;;
*) echo "deps.sh: build|check|full" >&2; exit 2 ;;
esac
missing=()
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps.sh: installing ${missing[*]}"
[ "$(id -u)" -eq 0 ] || { echo "deps.sh: run as root (or: sudo apt-get install ${missing[*]})" >&2; exit 1; }
apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
