#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build-modules.sh KVER OUTDIR [make args...]
# Build every module of the package for kernel KVER in OUTDIR (a copy of the
# module directories, so several kernels can be built side by side).  Extra
# arguments go to kbuild (W=1, C=2, ARCH=..., CROSS_COMPILE=...).  ena is
# built when its source can be found; otherwise the reason is printed and the
# other modules are still built.
set -e
kver=$1 out=$2
shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
kdir=${KDIR:-/lib/modules/$kver/build}
[ -d "$kdir" ] || { echo "no headers for $kver ($kdir): install linux-headers-$kver" >&2; exit 1; }
mkdir -p "$out"
cp "$top/dkms.conf" "$out/"
for d in tsq_probe tcp_dctcp_fixed; do
	[ -f "$top/$d/Kbuild" ] || continue
	mkdir -p "$out/$d"
	cp "$top/$d"/*.[ch] "$top/$d/Kbuild" "$out/$d/" 2>/dev/null || true
	make -s -C "$kdir" M="$out/$d" "$@" modules
	echo "  $kver: $out/$d/$d.ko"
done
if [ -x "$top/ena/prepare-source.sh" ]; then
	if reason=$("$top/ena/prepare-source.sh" --probe "$kver" 2>&1); then
		make -s -C "$top/ena" KVER="$kver" KDIR="$kdir" "$@"
		mkdir -p "$out/ena" && cp "$top/ena/build-$kver/ena.ko" "$out/ena/"
		echo "  $kver: $out/ena/ena.ko"
	else
		echo "  $kver: ena skipped: $reason"
	fi
fi
