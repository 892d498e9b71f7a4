#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Called by DKMS after installing or removing ena-tcp-tailfix for kernel $1.
# The initramfs of cloud kernels carries ena.ko: rebuild it so that the
# driver loaded at boot is the one depmod now prefers (ours after install,
# the in-tree one after removal).
kver=$1
initrd=/boot/initrd.img-$kver
[ -n "$kver" ] && [ -f "$initrd" ] || exit 0
command -v lsinitramfs >/dev/null 2>&1 || exit 0
if lsinitramfs "$initrd" 2>/dev/null | grep -q '/ena\.ko'; then
	echo "ena-tcp-tailfix: refreshing $initrd (it carries ena.ko)"
	update-initramfs -u -k "$kver" >/dev/null
fi
exit 0
