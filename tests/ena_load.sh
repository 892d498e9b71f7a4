#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The patched ena.ko is what `modprobe ena` loads: its file is under
# updates/dkms (depmod prefers it over the in-tree driver), its version
# carries our suffix, and load/unload cycles are clean.  Without an ENA device
# (QEMU has none) this is as far as a guest can go; tests/ena_hw.sh covers
# real instances.
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why),
# never under a live ENA device; ena is left loaded or not, with the
# parameters it had.
. "$(dirname "$0")/lib.sh"
require_root
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
path=$(modinfo -n ena 2>/dev/null) || skip "no ena module for $(uname -r)"
dkms_path "$path" || skip "ena for $(uname -r) is the in-tree one ($path): no ENA source was found at DKMS build time"
# Never unload ena under a live ENA interface: the host would lose its
# network (tests/host/ena_guard.sh proves this guard on a fake sysfs).
ena_in_use && skip "ENA device in use here ($ENA_IN_USE): not unloading its driver under the network (see ena_hw.sh)"
require_disruptive "loads and unloads ena 20 times"
module_return_on_exit ena
check "modprobe itself resolves ena to DKMS's directory" \
	bash -c "modprobe --ignore-install --show-depends ena | grep -qE '${DKMS_DIR_ERE}ena\.ko'"
check "modinfo version ends in -tailfix$ver" bash -c "modinfo -F version ena | grep -q -- '-tailfix$ver\$'"
# dkms 2.x (Debian 12) leaves the in-tree module in place; dkms 3.x (Debian
# 13) moves it to its original_module/ archive and puts it back on removal.
check "the in-tree ena.ko is kept for rollback (in place, or in dkms's archive)" \
	bash -c "find /lib/modules/$(uname -r)/kernel /var/lib/dkms/*/original_module/$(uname -r) \
		-name 'ena.ko*' 2>/dev/null | grep -q ."

cycles=0
for ((i = 0; i < 20; i++)); do
	modprobe ena && [ -e /sys/module/ena ] && modprobe -r ena && [ ! -e /sys/module/ena ] || break
	cycles=$((cycles + 1))
done
check "20 load/unload cycles ($cycles done)" cmp_num "$cycles" "==" 20
loaded_ver() { modprobe ena && grep -q -- "-tailfix$ver" /sys/module/ena/version; }
check "the loaded module reports our version in sysfs" loaded_ver
modprobe -r ena
ksft_finish
