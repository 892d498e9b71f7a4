#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The ena.ko built from Amazon's amzn-drivers loads the way the
# DKMS one does.  tests/vm/stage.sh builds it on the host for each amd64
# kernel of the guest image (ena/prepare-source.sh --probe with ENA_SRC at
# the amzn-drivers release tarball) into /opt/tailfix/amzn/KVER/ena.ko; here
# it takes the place of the DKMS ena.ko (same file, same compression) for
# the test, and the DKMS one is put back after:
#   - modprobe resolves ena to DKMS's directory and loads the amzn build;
#   - its version, in modinfo and sysfs, is amzn-drivers' release with our
#     suffix (2.17.0g-tailfixVERSION);
#   - 10 load/unload cycles are clean (the runner checks the kernel log);
#   - the DKMS ena.ko is back afterwards.
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why),
# never under a live ENA device; the DKMS ena.ko file and ena's loaded state
# are restored.
. "$(dirname "$0")/lib.sh"
require_root
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
ko=${TAILFIX_AMZN_KO:-/opt/tailfix/amzn/$(uname -r)/ena.ko}
[ -f "$ko" ] || skip "no amzn-drivers build staged for $(uname -r)"
ena_in_use && skip "ENA device in use here ($ENA_IN_USE): not unloading its driver under the network"
require_disruptive "replaces the installed ena.ko for the test, loads and unloads ena"
path=$(modinfo -n ena 2>/dev/null) || skip "no ena module for $(uname -r)"
dkms_path "$path" || fail "ena for $(uname -r) is not the DKMS one ($path): nothing to swap the amzn build in for"
module_return_on_exit ena
modprobe -r ena 2>/dev/null
dkms_ver=$(modinfo -F version ena)
keep=$(mktemp)
cp "$path" "$keep" || fail "cannot keep a copy of $path"
on_exit "cp '$keep' '$path'; rm -f '$keep'"
ko_put_as "$path" "$ko" || fail "cannot put $ko in place of $path"
amzn_ver=$(modinfo -F version "$ko")
log "amzn build: $ko, version $amzn_ver"
check "the amzn build's version is amzn-drivers' release + -tailfix$ver" \
	eval '[[ $amzn_ver =~ ^2\.[0-9]+\.[0-9]+g-tailfix${ver//./\\.}$ ]]'
check "modprobe resolves ena to DKMS's directory" \
	bash -c "modprobe --ignore-install --show-depends ena | grep -qE '${DKMS_DIR_ERE}ena\.ko'"
check "modprobe ena loads it: sysfs shows the amzn version" \
	eval 'modprobe ena && [ "$(cat /sys/module/ena/version)" = "$amzn_ver" ]'
cycles=0
for ((i = 0; i < 10; i++)); do
	modprobe -r ena && [ ! -e /sys/module/ena ] && modprobe ena && [ -e /sys/module/ena ] || break
	cycles=$((cycles + 1))
done
check "10 load/unload cycles ($cycles done)" cmp_num "$cycles" "==" 10
modprobe -r ena
cp "$keep" "$path"
check "the DKMS ena.ko is back ($dkms_ver)" test "$(modinfo -F version ena)" = "$dkms_ver"
ksft_finish
