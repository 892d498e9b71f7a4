#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Called by DKMS after installing or removing ena-tcp-tailfix for kernel $1.
# The initramfs of cloud kernels carries ena.ko: rebuild it so that the
# driver loaded at boot is the one depmod now prefers (ours after install,
# the in-tree one after removal).  initramfs-tools (Debian/Ubuntu) or dracut
# (Amazon Linux, Fedora).
kver=$1
[ -n "$kver" ] || exit 0
# dkms (3.0.10) runs this before its own depmod: without this one, the
# initramfs would be built from the old modules.dep, which resolves ena to
# the driver DKMS has just replaced (or removed).
depmod -a "$kver" 2>/dev/null || :
if [ -f "/boot/initrd.img-$kver" ] && command -v lsinitramfs >/dev/null 2>&1; then
	if lsinitramfs "/boot/initrd.img-$kver" 2>/dev/null | grep -q '/ena\.ko'; then
		echo "ena-tcp-tailfix: refreshing /boot/initrd.img-$kver (it carries ena.ko)"
		update-initramfs -u -k "$kver" >/dev/null
	fi
elif [ -f "/boot/initramfs-$kver.img" ] && command -v lsinitrd >/dev/null 2>&1; then
	if lsinitrd "/boot/initramfs-$kver.img" 2>/dev/null | grep -q '/ena\.ko'; then
		echo "ena-tcp-tailfix: refreshing /boot/initramfs-$kver.img (it carries ena.ko)"
		dracut -f --kver "$kver" >/dev/null
	fi
fi
exit 0
