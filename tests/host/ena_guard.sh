#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ena_load.sh must never unload ena on a host whose network runs on it.
# A fake sysfs tree (TAILFIX_SYSFS) laid out as the kernel does it:
#   class/net/eth0 -> ../../devices/pci0000:00/0000:00:05.0/net/eth0
#   devices/.../0000:00:05.0/driver -> ../../../bus/pci/drivers/ena
#   bus/pci/drivers/ena/0000:00:05.0 -> ../../../../devices/.../0000:00:05.0
# and fake modprobe/modinfo on PATH that only log.  On the ENA tree,
# ena_load.sh (with TAILFIX_DISRUPTIVE=1, so only the guard can stop it)
# skips and never runs `modprobe -r`; on a virtio_net tree the guard stays
# quiet.  The guard ena_load.sh had before is kept here as a mutant: this
# test must catch it.
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"

# fake_tree DIR DRIVER [bind]: eth0 on a PCI device driven by DRIVER; with
# "bind" the driver directory also lists the device.
fake_tree() {
	local root=$1 drv=$2 pci=devices/pci0000:00/0000:00:05.0

	mkdir -p "$root/$pci/net/eth0" "$root/class/net" "$root/bus/pci/drivers/$drv"
	ln -s "../../$pci/net/eth0" "$root/class/net/eth0"
	ln -s ../.. "$root/$pci/net/eth0/device"
	ln -s "../../../bus/pci/drivers/$drv" "$root/$pci/driver"
	touch "$root/bus/pci/drivers/$drv/bind" "$root/bus/pci/drivers/$drv/unbind"
	[ "${3:-}" = bind ] && ln -s "../../../../$pci" "$root/bus/pci/drivers/$drv/0000:00:05.0"
	mkdir -p "$root/class/net/lo"
}
fake_tree "$tmp/ena" ena bind
fake_tree "$tmp/ena-netonly" ena
mkdir -p "$tmp/pci-only/bus/pci/drivers/ena/0000:00:06.0" "$tmp/pci-only/class/net"
fake_tree "$tmp/virtio" virtio_net bind

# Fake tools: log every call, never touch the kernel.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/modprobe" <<'EOF'
#!/bin/sh
echo "modprobe $*" >>"$FAKE_LOG"
EOF
cat >"$tmp/bin/modinfo" <<'EOF'
#!/bin/sh
echo "modinfo $*" >>"$FAKE_LOG"
case "$*" in
*-n*) echo "/lib/modules/$(uname -r)/updates/dkms/ena.ko" ;;
*version*) echo "2.8.1-tailfix0" ;;
esac
EOF
chmod +x "$tmp/bin/modprobe" "$tmp/bin/modinfo"

# run_ena_load TREE NAME [VAR=VALUE...]: ena_load.sh on a fake tree; its
# output and exit status in $tmp/NAME.{out,rc}, fake calls in $tmp/NAME.log.
run_ena_load() {
	local tree=$1 name=$2 rc=0

	shift 2
	: >"$tmp/$name.log"
	env PATH="$tmp/bin:$PATH" FAKE_LOG="$tmp/$name.log" TAILFIX_SYSFS="$tree" "$@" \
		"$TESTS_DIR/ena_load.sh" >"$tmp/$name.out" 2>&1 || rc=$?
	echo "$rc" >"$tmp/$name.rc"
	sed "s/^/# $name: /" "$tmp/$name.out" | head -5
}
skipped_without_unload() {
	[ "$(cat "$tmp/$1.rc")" = 4 ] && grep -q 'ENA device in use' "$tmp/$1.out" &&
		! grep -q -- '-r' "$tmp/$1.log"
}
run_ena_load "$tmp/ena" ena TAILFIX_DISRUPTIVE=1
check "ENA host: ena_load.sh skips and never calls modprobe -r" skipped_without_unload ena
run_ena_load "$tmp/ena-netonly" netonly TAILFIX_DISRUPTIVE=1
check "eth0 -> driver ena alone is enough" skipped_without_unload netonly

# The fakes are in use: on the virtio tree the guard lets it through, and the
# (fake) modprobe -r is what ena_load.sh calls next.
run_ena_load "$tmp/virtio" virtio TAILFIX_DISRUPTIVE=1
check "virtio_net host, disruptive: ena_load.sh goes on to modprobe -r (fake)" \
	grep -q 'modprobe -r ena' "$tmp/virtio.log"
run_ena_load "$tmp/virtio" virtio-nd TAILFIX_DISRUPTIVE=
nondisruptive() {
	[ "$(cat "$tmp/virtio-nd.rc")" = 4 ] && grep -q 'SKIP disruptive' "$tmp/virtio-nd.out" &&
		! grep -q '^modprobe' "$tmp/virtio-nd.log"
}
check "not disruptive: ena_load.sh skips before any modprobe" nondisruptive

guard() { TAILFIX_SYSFS=$1 ena_in_use; }
check "guard fires on eth0 bound to ena" guard "$tmp/ena"
check "guard fires on a PCI device bound to ena" guard "$tmp/pci-only"
no_guard() { ! guard "$1"; }
check "guard quiet on virtio_net" no_guard "$tmp/virtio"

# The mutant: ena_load.sh with the guard it had before (ls lists the driver
# directory's contents, so readlink never sees .../ena), run the same way.
# The check above must fail for it: it goes on to modprobe -r ena.
mkdir -p "$tmp/mutant"
cp "$TESTS_DIR/lib.sh" "$tmp/mutant/"
cp "$TAILFIX_ROOT/dkms.conf" "$tmp/"
awk '/^ena_in_use && skip/ {
	print "ls \"$TAILFIX_SYSFS\"/class/net/*/device/driver 2>/dev/null | xargs -r -n1 readlink 2>/dev/null | grep -q \x27/ena$\x27 && skip \"ENA device in use (old guard)\""
	next } { print }' "$TESTS_DIR/ena_load.sh" >"$tmp/mutant/ena_load.sh"
chmod +x "$tmp/mutant/ena_load.sh"
check "mutant built (guard line replaced)" grep -q 'old guard' "$tmp/mutant/ena_load.sh"
TESTS_DIR=$tmp/mutant run_ena_load "$tmp/ena" mutant TAILFIX_DISRUPTIVE=1
mutant_caught() { ! skipped_without_unload mutant && grep -q 'modprobe -r ena' "$tmp/mutant.log"; }
check "mutant (the old guard) is caught: it would modprobe -r ena on the ENA host" mutant_caught
ksft_finish
