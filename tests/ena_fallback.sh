#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Where the operator opted in to this package's ena, a host whose copy of it
# cannot be loaded (Secure Boot rejecting its signature, a damaged file)
# still gets an ena: modprobe's install rule (ena/ena-load) loads the
# kernel's own driver instead and says so in one kernel-log line.  Shown by
# damaging our ena.ko: `modprobe ena` succeeds, the loaded ena is the
# in-tree one (no out-of-tree taint, no -tailfix version), the log line is
# there; with the file restored, ours loads again.  QEMU has no ENA device:
# "loaded", not "bound" (tests/ena_hw.sh covers real instances).  The
# kernel command line's ena_tcp_tailfix.ena=in-tree takes a reboot and is
# not exercised here.
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1; never under a live ENA
# device; the module file is put back and ena left unloaded as found.
. "$(dirname "$0")/lib.sh"
require_root
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
rule=/etc/modprobe.d/ena-tcp-tailfix-ena.conf
[ -e "$rule" ] || skip "not opted in to this package's ena here (no $rule; ena-tcp-tailfix ena enable)"
ours=$(modprobe --ignore-install --show-depends ena 2>/dev/null | sed -n 's/^insmod \([^ ]*\/ena\.ko[^ ]*\).*/\1/p' | tail -1)
case $ours in
*/kernel/drivers/*|"") skip "ena for $(uname -r) resolves to the kernel's own (${ours:-none}): this package's ena was not installed" ;;
esac
# The kernel's own ena: in place (dkms 3.0), or in the archive where later
# dkms versions (trixie's 3.2) keep a module they replace -- where
# ena-load looks, in its order.
intree=$(ls /lib/modules/"$(uname -r)"/kernel/drivers/net/ethernet/amazon/ena/ena.ko* \
	/var/lib/dkms/ena-tcp-tailfix/original_module/"$(uname -r)"/*/ena.ko* 2>/dev/null | head -1)
[ -n "$intree" ] || skip "the kernel has no ena module of its own to fall back to"
ena_in_use && skip "ENA device in use here ($ENA_IN_USE): not touching its driver"
[ -d /sys/module/ena ] && skip "ena is loaded here already: not unloading it"
require_disruptive "damages this package's ena.ko to show the fallback"

check "modprobe's rule for ena is the package's ena-load" \
	grep -qx 'install ena /usr/lib/ena-tcp-tailfix/ena-load $CMDLINE_OPTS' "$rule"
TMP=$(mktemp -d)
cp -p "$ours" "$TMP/ena.ko.saved"
on_exit "rmmod ena 2>/dev/null; cp -p '$TMP/ena.ko.saved' '$ours'; rm -rf '$TMP'"
head -c 4096 "$TMP/ena.ko.saved" >"$ours"

dmesg_mark
check "modprobe ena succeeds with our ena.ko damaged" modprobe ena
check "the loaded ena is the kernel's own (no out-of-tree taint)" \
	bash -c '[ -d /sys/module/ena ] && ! grep -q O /sys/module/ena/taint'
check "its version is not ours" \
	bash -c "! grep -qs -- '-tailfix$ver\$' /sys/module/ena/version"
fallback_said() {
	[ "$(dmesg_since | grep -c "ena-tcp-tailfix: this package's ena did not load .*: loaded the kernel's own ena ($intree)")" -eq 1 ]
}
check "one kernel-log line says ours did not load and which ena was loaded" fallback_said
rmmod ena

cp -p "$TMP/ena.ko.saved" "$ours"
check "with the file restored, modprobe ena loads ours" \
	bash -c 'modprobe ena && grep -q O /sys/module/ena/taint'
check "its version is ours" grep -q -- "-tailfix$ver\$" /sys/module/ena/version
rmmod ena
check "no bad kernel-log line" dmesg_clean
ksft_finish
