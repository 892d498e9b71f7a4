#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# cli/ena-tcp-tailfix against fake hosts: each case is a sysroot under a
# temporary directory (TAILFIX_SYSROOT) with its own /proc/version, sysctls,
# /sys/class/net drivers, /sys/module/ena, efivars, DKMS tree and
# /lib/modules, and fake mokutil, dkms, dpkg-query and modinfo first on PATH.
#  - check: the findings of in-tree, amzn-drivers and our ena; Secure Boot
#    off, on with the DKMS key enrolled and not; 5.10.209/5.10.223,
#    6.1.70/6.1.158, 6.12, 7.3, Ubuntu (no point release); amd64 and arm64;
#    the JSON (python3 -m json.tool) and the exit codes 0, 1 and 2.
#  - ena enable: each refusal is one line on stderr, exit 1, and leaves the
#    sysroot as it was; enable and disable call dkms unbuild before install
#    (the fake dkms's remove, like dkms 3.0.10's, unregisters the package
#    with its last build), and disable unbuilds before the setting flips.
#  - must fail: the finding checks against a fake where the finding must
#    not appear, and mutant CLIs: one that thinks 6.1 has the tcp_wfree()
#    ordering, one that flips the setting before unbuilding, one that uses
#    dkms remove.
. "$(dirname "$0")/../lib.sh"
CLI=$TAILFIX_ROOT/cli/ena-tcp-tailfix
[ -x "$CLI" ] || fail "$CLI missing"
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"
SB_VAR=SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c

# --- fake commands ----------------------------------------------------------
mkdir -p "$tmp/bin" "$tmp/bin-nomok"
# mokutil --test-key FILE: the answer is in $TAILFIX_SYSROOT/fake-mok
# (enrolled, not, or anything else for an error).
cat >"$tmp/bin/mokutil" <<'EOF'
#!/bin/bash
[ "$1" = --test-key ] || exit 2
case $(cat "$TAILFIX_SYSROOT/fake-mok" 2>/dev/null) in
enrolled) echo "$2 is already enrolled"; exit 1 ;;
not) echo "$2 is not enrolled"; exit 0 ;;
*) echo "EFI variables are not supported on this system" >&2; exit 1 ;;
esac
EOF
# dpkg-query -W -f=FMT PKG...: packages and versions from
# $TAILFIX_SYSROOT/fake-dpkg ("name version" lines, all installed).
cat >"$tmp/bin/dpkg-query" <<'EOF'
#!/bin/bash
fmt= rc=0
for a; do
	case $a in
	--admindir=*|-W) ;;
	-f=*) fmt=${a#-f=} ;;
	*) v=$(awk -v p="$a" '$1 == p { print $2 }' "$TAILFIX_SYSROOT/fake-dpkg" 2>/dev/null)
	   if [ -z "$v" ]; then echo "dpkg-query: no packages found matching $a" >&2; rc=1; continue; fi
	   o=${fmt//'${Package}'/$a}; o=${o//'${Version}'/$v}; o=${o//'${db:Status-Abbrev}'/ii }
	   printf '%b' "$o" ;;
	esac
done
exit $rc
EOF
# modinfo [-b ROOT] [-k K] -n ena | -F version FILE: the fake .ko files hold
# "version=...".  updates/ before the rest, as depmod does.
cat >"$tmp/bin/modinfo" <<'EOF'
#!/bin/bash
b= k= n=0 f=
while [ $# -gt 0 ]; do
	case $1 in
	-b) b=$2; shift ;;
	-k) k=$2; shift ;;
	-n) n=1 ;;
	-F) f=$2; shift ;;
	*) m=$1 ;;
	esac
	shift
done
if [ "$n" = 1 ]; then
	for p in updates/dkms/ena.ko* extra/ena.ko* kernel/drivers/net/ethernet/amazon/ena/ena.ko*; do
		for x in "$b/lib/modules/$k"/$p; do
			[ -e "$x" ] && { echo "${x#"$b"}"; exit 0; }
		done
	done
	echo "modinfo: ERROR: Module ena not found." >&2; exit 1
fi
[ "$f" = version ] && [ -f "$m" ] && sed -n 's/^version=//p' "$m" && exit 0
exit 1
EOF
# dkms unbuild|remove|install|add -m M -v V [-k K]: logs "verb [K]
# conf=SETTING" into $TAILFIX_SYSROOT/dkms.calls.  install copies the built
# modules to updates/dkms (ena only with ENA_DRIVER=tailfix, as dkms.conf
# lists it); unbuild deletes them; remove also takes the build away, and
# the whole version, source included, when no other kernel has a build (as
# dkms 3.0.10 does).  FAKE_DKMS_FAIL=K fails every call for K;
# FAKE_DKMS_OLD=1 has no unbuild (dkms 2.x).
cat >"$tmp/bin/dkms" <<'EOF'
#!/bin/bash
verb=$1; shift
k=
while [ $# -gt 0 ]; do
	case $1 in -m) m=$2 ;; -v) v=$2 ;; -k) k=$2 ;; esac
	shift 2
done
r=$TAILFIX_SYSROOT
conf=$(sed -n 's/^ENA_DRIVER=//p' "$r/etc/ena-tcp-tailfix.conf" 2>/dev/null)
echo "$verb${k:+ $k} conf=${conf:-none}" >>"$r/dkms.calls"
[ -z "$k" ] || [ "$k" != "${FAKE_DKMS_FAIL:-}" ] || { echo "Error! Bad return status for module build on kernel: $k" >&2; exit 10; }
t=$r/var/lib/dkms/$m/$v
[ "$verb" = add ] || [ -e "$t/source" ] || { echo "Error! The module/version combo: $m-$v is not located in the DKMS tree." >&2; exit 3; }
dst=$r/lib/modules/$k/updates/dkms
case $verb in
unbuild)
	[ "${FAKE_DKMS_OLD:-0}" = 0 ] || { echo "Error! Unknown action specified: unbuild" >&2; exit 1; }
	rm -f "$dst"/{tsq_probe,tcp_dctcp_fixed,ena}.ko* ;;
remove)
	rm -f "$dst"/{tsq_probe,tcp_dctcp_fixed,ena}.ko*
	mv "$t/$k" "$r/kept-build-$k"
	ls -d "$t"/*/*/module >/dev/null 2>&1 || rm -rf "$t" ;;
add)
	mkdir -p "$t/source" ;;
install)
	# A build taken away by remove comes back as if rebuilt.
	[ -d "$t/$k" ] || mv "$r/kept-build-$k" "$t/$k" 2>/dev/null
	mkdir -p "$dst"
	for f in "$t/$k"/*/module/*.ko*; do
		[ -e "$f" ] || continue
		case ${f##*/} in ena.ko*) [ "$conf" = tailfix ] || continue ;; esac
		cp "$f" "$dst/"
	done ;;
esac
EOF
chmod +x "$tmp"/bin/*
cp "$tmp"/bin/{dpkg-query,modinfo,dkms} "$tmp/bin-nomok/"

# --- fake hosts -------------------------------------------------------------
# mkhost NAME KREL "DEBIAN-VERSION|ubuntu|-" ARCH DRIVER SB: a sysroot in
# $tmp/NAME.  DRIVER: in-tree, amzn (2.17.0g), amzn-old (2.11.0g), ours,
# virtio.  SB: legacy, off, on-enrolled, on-not, on-nomok.  DKMS: our
# package registered and built for KREL (tsq_probe, tcp_dctcp_fixed, ena),
# the first two installed; headers and a headers metapackage present.
mkhost() {
	local name=$1 k=$2 deb=$3 arch=$4 drv=$5 sb=$6 r=$tmp/$1 pv a dev

	rm -rf "$r"
	mkdir -p "$r/proc/sys/kernel" "$r/proc/sys/net/ipv4" "$r/etc" "$r/sys/module" "$r/var/lib/dpkg"
	case $deb in
	ubuntu) pv="Linux version $k (buildd@lcy02) (gcc (Ubuntu 11.4.0) 11.4.0) #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024" ;;
	-) pv="Linux version $k (builder@host) (gcc 12) #1 SMP" ;;
	*) pv="Linux version $k (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian $deb (2025-10-01)" ;;
	esac
	echo "$pv" >"$r/proc/version"
	echo "$k" >"$r/proc/sys/kernel/osrelease"
	echo "$arch" >"$r/proc/sys/kernel/arch"
	printf 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n' >"$r/etc/os-release"
	echo 1 >"$r/proc/sys/net/ipv4/tcp_autocorking"
	echo cubic >"$r/proc/sys/net/ipv4/tcp_congestion_control"
	echo "reno cubic" >"$r/proc/sys/net/ipv4/tcp_allowed_congestion_control"
	echo "reno cubic" >"$r/proc/sys/net/ipv4/tcp_available_congestion_control"
	: >"$r/var/lib/dpkg/status"
	a=$arch; [ "$a" = aarch64 ] && a=arm64; [ "$a" = x86_64 ] && a=amd64
	echo "linux-headers-cloud-$a 1" >"$r/fake-dpkg"

	# eth0: PCI device bound to DRIVER; lo: no device.
	dev=devices/pci0000:00/0000:00:05.0
	mkdir -p "$r/sys/$dev" "$r/sys/class/net/eth0" "$r/sys/class/net/lo"
	ln -s "../../../$dev" "$r/sys/class/net/eth0/device"
	case $drv in
	virtio) mkdir -p "$r/sys/bus/virtio/drivers/virtio_net" "$r/sys/module/virtio_net"
		ln -s ../../../bus/virtio/drivers/virtio_net "$r/sys/$dev/driver"
		ln -s ../../../../module/virtio_net "$r/sys/bus/virtio/drivers/virtio_net/module" ;;
	*) mkdir -p "$r/sys/bus/pci/drivers/ena" "$r/sys/module/ena"
		ln -s ../../../bus/pci/drivers/ena "$r/sys/$dev/driver"
		ln -s ../../../../module/ena "$r/sys/bus/pci/drivers/ena/module"
		echo 0A1B2C3D4E5F60718293A4B >"$r/sys/module/ena/srcversion" ;;
	esac
	case $drv in
	amzn) echo 2.17.0g >"$r/sys/module/ena/version" ;;
	amzn-old) echo 2.11.0g >"$r/sys/module/ena/version" ;;
	ours) echo "$k-tailfix0.1.0" >"$r/sys/module/ena/version" ;;
	esac

	case $sb in
	legacy) ;;
	off) mkdir -p "$r/sys/firmware/efi/efivars"; printf '\006\000\000\000\000' >"$r/sys/firmware/efi/efivars/$SB_VAR" ;;
	on-*) mkdir -p "$r/sys/firmware/efi/efivars"; printf '\006\000\000\000\001' >"$r/sys/firmware/efi/efivars/$SB_VAR" ;;
	esac
	case $sb in on-enrolled) echo enrolled >"$r/fake-mok" ;; on-not) echo not >"$r/fake-mok" ;; on-nomok) echo error >"$r/fake-mok" ;; esac
	mkdir -p "$r/var/lib/dkms" "$r/usr/lib/ena-tcp-tailfix"
	echo "fake key" >"$r/var/lib/dkms/mok.pub"
	printf '#!/bin/sh\n' >"$r/usr/lib/ena-tcp-tailfix/ena-load"
	chmod +x "$r/usr/lib/ena-tcp-tailfix/ena-load"
	addkernel "$name" "$k" "$arch"
	[ "$drv" != ours ] || { echo ENA_DRIVER=tailfix >"$r/etc/ena-tcp-tailfix.conf"
		echo "version=$k-tailfix0.1.0" >"$r/lib/modules/$k/updates/dkms/ena.ko.xz"; }
}

# addkernel NAME KREL ARCH: a kernel with headers, its in-tree ena, and our
# package built for it (ena included) with tsq_probe and tcp_dctcp_fixed
# installed.
addkernel() {
	local r=$tmp/$1 k=$2 m=$tmp/$1/var/lib/dkms/ena-tcp-tailfix/0.1.0 f

	mkdir -p "$r/lib/modules/$k/build" "$r/lib/modules/$k/kernel/drivers/net/ethernet/amazon/ena" \
		"$r/lib/modules/$k/updates/dkms" "$m/source" "$m/$k/$3/module"
	echo "version=" >"$r/lib/modules/$k/kernel/drivers/net/ethernet/amazon/ena/ena.ko.xz"
	echo 'PACKAGE_NAME="ena-tcp-tailfix"' >"$m/source/dkms.conf"
	for f in tsq_probe tcp_dctcp_fixed ena; do
		echo "version=$k-tailfix0.1.0" >"$m/$k/$3/module/$f.ko.xz"
	done
	for f in tsq_probe tcp_dctcp_fixed; do
		cp "$m/$k/$3/module/$f.ko.xz" "$r/lib/modules/$k/updates/dkms/"
	done
}

# run NAME [args...]: the CLI on host NAME; output in $tmp/NAME.out (stdout),
# .err (stderr), exit status in .rc.
run() {
	local name=$1 rc=0

	shift
	TAILFIX_SYSROOT=$tmp/$name PATH="${FAKE_BIN:-$tmp/bin}:$PATH" ENA_SRC='' \
		"${TEST_CLI:-$CLI}" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	echo "$rc" >"$tmp/$name.rc"
}
rc_is() { [ "$(cat "$tmp/$1.rc")" = "$2" ] || { log "$1: exit $(cat "$tmp/$1.rc"), want $2"; sed 's/^/#   /' "$tmp/$1.out" "$tmp/$1.err"; return 1; }; }
# finding_is NAME ID STATUS [REGEX]: the table of NAME has finding ID with
# STATUS, and its line matches REGEX.
finding_is() {
	local line

	line=$(awk -v id="$2" '$2 == id' "$tmp/$1.out")
	[ -n "$line" ] || { log "$1: no finding $2"; return 1; }
	[ "$(echo "$line" | awk '{ print $1 }')" = "$3" ] || { log "$1: $line"; return 1; }
	[ -z "${4:-}" ] || echo "$line" | grep -Eq -- "$4" || { log "$1: '$line' does not match /$4/"; return 1; }
}
# json_ok NAME: `check --json` on NAME is valid JSON whose findings have the
# four keys and a known status, and whose statuses agree with the table.
json_ok() {
	TAILFIX_SYSROOT=$tmp/$1 PATH="$tmp/bin:$PATH" "$CLI" check --json >"$tmp/$1.json" 2>/dev/null
	python3 -m json.tool "$tmp/$1.json" >/dev/null || { log "$1: invalid JSON"; return 1; }
	python3 - "$tmp/$1.json" "$tmp/$1.out" <<'EOF' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
table = {}
for line in open(sys.argv[2]):
    f = line.split(None, 2)
    if len(f) >= 2 and f[0] in ("ok", "action", "unknown"):
        table[f[1]] = f[0]
got = {}
for f in d["findings"]:
    assert set(f) == {"id", "status", "evidence", "recommendation"}, f
    assert f["status"] in ("ok", "action", "unknown"), f
    got[f["id"]] = f["status"]
if got != table:
    print("# json %s != table %s" % (got, table))
    sys.exit(1)
EOF
}
# check_host NAME: run check, and check its JSON.
check_host() { run "$1" check; check "$1: check --json is valid and agrees with the table" json_ok "$1"; }

# --- check: kernels and architectures ------------------------------------
mkhost deb61-158-arm64 6.1.0-41-cloud-arm64 6.1.158-1 aarch64 in-tree legacy
check_host deb61-158-arm64
check "6.1.158 arm64: tcp_push() barrier present (6.1.76+)" finding_is deb61-158-arm64 tcp_push_barrier ok '6\.1\.158 >= 6\.1\.76'
check "6.1.158 arm64: tcp_wfree() ordering missing: action" finding_is deb61-158-arm64 tcp_wfree_order action 'plain load.*aarch64 is weakly ordered'
check "6.1.158 arm64: autocorking flagged" finding_is deb61-158-arm64 tcp_autocorking action
check "6.1.158 arm64: in-tree ena, neither fix, opt-in recommended" finding_is deb61-158-arm64 nic:eth0 action 'ena \(in-tree\) version none.*doorbell-on-drop fix: no; NAPI-statistics fix: no.*ena enable'
check "6.1.158 arm64: lo (no device) has no line" bash -c "! grep -q 'nic:lo' '$tmp/deb61-158-arm64.out'"
check "6.1.158 arm64: exit 1 (action)" rc_is deb61-158-arm64 1

# tsq_probe loaded with recover=1 recovers lost wake-ups: no action left.
mkhost deb61-probe 6.1.0-41-cloud-arm64 6.1.158-1 aarch64 virtio legacy
mkdir -p "$tmp/deb61-probe/sys/module/tsq_probe/parameters" && echo 1 >"$tmp/deb61-probe/sys/module/tsq_probe/parameters/recover"
check_host deb61-probe
check "6.1.158 arm64 with tsq_probe recover=1: ordering gap covered, autocorking ok, exit 0" bash -c \
	"$(declare -f finding_is rc_is log); tmp='$tmp'; finding_is deb61-probe tcp_wfree_order ok 'recover=1' &&
	 finding_is deb61-probe tcp_autocorking ok && rc_is deb61-probe 0"

mkhost deb612-arm64 6.12.57+deb13-cloud-arm64 6.12.57-1 aarch64 ours off
check_host deb612-arm64
check "6.12 arm64: tcp_wfree() ordering present" finding_is deb612-arm64 tcp_wfree_order ok 'smp_load_acquire'
check "6.12 arm64: barrier present" finding_is deb612-arm64 tcp_push_barrier ok
check "6.12 arm64: our ena, both fixes" finding_is deb612-arm64 nic:eth0 ok 'ena \(ours\) version 6\.12\.57\+deb13-cloud-arm64-tailfix0\.1\.0.*doorbell-on-drop fix: yes; NAPI-statistics fix: yes'
check "6.12 arm64: Secure Boot off (efivar 0)" finding_is deb612-arm64 secure_boot ok 'disabled'
check "6.12 arm64: opted in, nothing to do: exit 0" rc_is deb612-arm64 0
check "6.12 arm64: opt-in state shown" finding_is deb612-arm64 ena_optin ok 'ENA_DRIVER=tailfix'

mkhost deb61-70-arm64 6.1.0-17-cloud-arm64 6.1.70-1 aarch64 in-tree legacy
check_host deb61-70-arm64
check "6.1.70 arm64: tcp_push() barrier absent: action" finding_is deb61-70-arm64 tcp_push_barrier action '6\.1\.70 < 6\.1\.76'
mkhost deb61-70-amd64 6.1.0-17-cloud-amd64 6.1.70-1 x86_64 in-tree legacy
check_host deb61-70-amd64
check "6.1.70 amd64: barrier absent but x86 is safe: ok" finding_is deb61-70-amd64 tcp_push_barrier ok 'absent|no:.*x86_64.*full barrier|does not matter'
check "6.1.70 amd64: tcp_wfree() plain load does not matter on x86" finding_is deb61-70-amd64 tcp_wfree_order ok 'does not matter here'

mkhost deb510-209-arm64 5.10.0-28-cloud-arm64 5.10.209-2 aarch64 in-tree legacy
check_host deb510-209-arm64
check "5.10.209 arm64: barrier absent (5.10.210+)" finding_is deb510-209-arm64 tcp_push_barrier action '5\.10\.209 < 5\.10\.210'
mkhost deb510-223-arm64 5.10.0-32-cloud-arm64 5.10.223-1 aarch64 in-tree legacy
check_host deb510-223-arm64
check "5.10.223 arm64: barrier present" finding_is deb510-223-arm64 tcp_push_barrier ok '5\.10\.223 >= 5\.10\.210'
check "5.10.223 arm64: tcp_wfree() ordering missing" finding_is deb510-223-arm64 tcp_wfree_order action

mkhost deb73-amd64 7.3.4+deb13-cloud-amd64 7.3.4-1~bpo13+1 x86_64 amzn off
check_host deb73-amd64
check "7.3 amd64: barrier in mainline" finding_is deb73-amd64 tcp_push_barrier ok 'mainline since v6\.8'
check "7.3 amd64: amzn-drivers 2.17.0g: doorbell yes, NAPI no" finding_is deb73-amd64 nic:eth0 action 'ena \(amzn\) version 2\.17\.0g.*doorbell-on-drop fix: yes \(since 2\.12\.0\); NAPI-statistics fix: no'
mkhost deb73-amzn-old 7.3.4+deb13-cloud-amd64 7.3.4-1~bpo13+1 x86_64 amzn-old off
check_host deb73-amzn-old
check "amzn-drivers 2.11.0g: no doorbell fix" finding_is deb73-amzn-old nic:eth0 action 'doorbell-on-drop fix: no \(fixed in 2\.12\.0\)'

mkhost virtio 6.12.57+deb13-cloud-amd64 6.12.57-1 x86_64 virtio legacy
check_host virtio
check "virtio_net: not ena, nothing to do" finding_is virtio nic:eth0 ok 'driver virtio_net.*not ena'
check "virtio_net amd64 6.12: exit 0" rc_is virtio 0

# Ubuntu: no upstream point release in /proc/version.
mkhost ubuntu-arm64 5.15.0-105-generic ubuntu aarch64 in-tree legacy
check_host ubuntu-arm64
check "Ubuntu arm64: barrier cannot be told: unknown" finding_is ubuntu-arm64 tcp_push_barrier unknown 'cannot tell: /proc/version names no upstream point release'
check "Ubuntu arm64: exit 2 (cannot tell)" rc_is ubuntu-arm64 2
check "Ubuntu arm64: the kernel line says point release unknown" finding_is ubuntu-arm64 kernel ok 'point release unknown'
mkhost ubuntu-amd64 5.15.0-105-generic ubuntu x86_64 virtio legacy
check_host ubuntu-amd64
check "Ubuntu amd64: cannot tell, but x86 does not need it: exit 0" rc_is ubuntu-amd64 0
mkhost noproc 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 virtio legacy
rm -f "$tmp/noproc/proc/version" "$tmp/noproc/proc/sys/kernel/osrelease"
run noproc check
check "no /proc/version: kernel unknown, exit 2" bash -c \
	"$(declare -f finding_is rc_is log); tmp='$tmp'; finding_is noproc kernel unknown && rc_is noproc 2"

# --- check: Secure Boot, DKMS state, headers ------------------------------
mkhost sb-enrolled 6.12.57+deb13-cloud-amd64 6.12.57-1 x86_64 virtio on-enrolled
check_host sb-enrolled
check "Secure Boot on, key enrolled: ok" finding_is sb-enrolled mok_key ok 'is enrolled'
check "Secure Boot on, key enrolled: exit 0" rc_is sb-enrolled 0
mkhost sb-not 6.12.57+deb13-cloud-amd64 6.12.57-1 x86_64 virtio on-not
check_host sb-not
check "Secure Boot on, key not enrolled: action (mokutil --import)" finding_is sb-not mok_key action 'not enrolled.*mokutil --import'
check "Secure Boot on: reported enabled" finding_is sb-not secure_boot ok 'enabled'
mkhost sb-nomok 6.12.57+deb13-cloud-amd64 6.12.57-1 x86_64 virtio on-nomok
check_host sb-nomok
check "Secure Boot on, mokutil cannot tell: unknown, exit 2" bash -c \
	"$(declare -f finding_is rc_is log); tmp='$tmp'; finding_is sb-nomok mok_key unknown && rc_is sb-nomok 2"

mkhost dkms-new 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 virtio legacy
mkdir -p "$tmp/dkms-new/lib/modules/6.12.57+deb13-cloud-amd64"
: >"$tmp/dkms-new/fake-dpkg"
check_host dkms-new
check "DKMS: built and installed for 6.1 (no ena: no opt-in)" finding_is dkms-new dkms:6.1.0-41-cloud-amd64 ok 'built for 6\.1\.0-41-cloud-amd64/x86_64: ena tcp_dctcp_fixed tsq_probe; installed: updates/dkms/tsq_probe updates/dkms/tcp_dctcp_fixed;'
check "DKMS: newest kernel without headers or build: action" finding_is dkms-new dkms:6.12.57+deb13-cloud-amd64 action 'not built.*headers: no.*install the headers'
check "no headers metapackage: action" finding_is dkms-new headers_meta action 'apt-get install linux-headers-cloud-amd64'
mkhost stray-ena 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 virtio legacy
cp "$tmp/stray-ena/var/lib/dkms/ena-tcp-tailfix/0.1.0/6.1.0-41-cloud-amd64/x86_64/module/ena.ko.xz" "$tmp/stray-ena/lib/modules/6.1.0-41-cloud-amd64/updates/dkms/"
check_host stray-ena
check "our ena installed without the opt-in: action (ena disable)" finding_is stray-ena dkms:6.1.0-41-cloud-amd64 action 'without the opt-in.*ena disable'
# amzn-drivers' ena, which DKMS installs to the same directory, is not ours.
mkhost amzn-ena 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 amzn legacy
echo "version=2.17.0g" >"$tmp/amzn-ena/lib/modules/6.1.0-41-cloud-amd64/updates/dkms/ena.ko.xz"
check_host amzn-ena
check "amzn-drivers' ena in updates/dkms: shown as another's, no action for our DKMS state" \
	finding_is amzn-ena dkms:6.1.0-41-cloud-amd64 ok 'installed: .*updates/dkms/ena\(other\)'
run amzn-ena ena status
check "ena status: amzn-drivers' ena resolves to other" grep -q 'modprobe ena -> other /lib/modules/.*/updates/dkms/ena.ko.xz' "$tmp/amzn-ena.out"

# --- usage ------------------------------------------------------------------
run deb612-arm64 check --bogus
check "check --bogus: exit 2, one line" bash -c "[ \$(cat '$tmp/deb612-arm64.rc') = 2 ] && [ \$(wc -l <'$tmp/deb612-arm64.err') = 1 ]"
run deb612-arm64 ena
check "ena without a verb: exit 2, usage line" bash -c "[ \$(cat '$tmp/deb612-arm64.rc') = 2 ] && grep -q '^usage: ena-tcp-tailfix' '$tmp/deb612-arm64.err'"
run deb612-arm64 --help
check "--help: exit 0, names the subcommands" bash -c "[ \$(cat '$tmp/deb612-arm64.rc') = 0 ] && grep -q 'ena enable' '$tmp/deb612-arm64.out' && grep -q 'check \[--json\]' '$tmp/deb612-arm64.out'"

# --- ena enable: refusals change nothing --------------------------------
# listing NAME: every path of the sysroot with its type, size, mode and
# content checksum.
listing() {
	(cd "$tmp/$1" && find . -printf '%p %y %s %m %l\n' | sort &&
		find . -type f -exec md5sum {} + | sort -k2)
}
# refused NAME REGEX: `ena enable` on NAME exits 1 with one stderr line
# matching REGEX, calls no dkms, and leaves the sysroot as it was.
refused() {
	listing "$1" >"$tmp/$1.before"
	run "$1" ena enable
	listing "$1" >"$tmp/$1.after"
	rc_is "$1" 1 || return 1
	[ "$(wc -l <"$tmp/$1.err")" = 1 ] || { log "$1: stderr:"; sed 's/^/#   /' "$tmp/$1.err"; return 1; }
	grep -Eq -- "$2" "$tmp/$1.err" || { log "$1: '$(cat "$tmp/$1.err")' does not match /$2/"; return 1; }
	[ ! -e "$tmp/$1/dkms.calls" ] || { log "$1: dkms was called"; return 1; }
	cmp -s "$tmp/$1.before" "$tmp/$1.after" || { log "$1: the sysroot changed:"; diff "$tmp/$1.before" "$tmp/$1.after" | sed 's/^/#   /'; return 1; }
}
mkhost r-sb 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 in-tree on-not
check "enable refused: Secure Boot on, key not enrolled" refused r-sb 'refused: Secure Boot is enforcing.*not enrolled'
mkhost r-sbmok 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 in-tree on-nomok
check "enable refused: Secure Boot on, enrolment cannot be checked" refused r-sbmok 'refused: Secure Boot is enforcing.*mokutil --test-key'
mkhost r-amzn 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 amzn off
mkdir -p "$tmp/r-amzn/var/lib/dkms/amzn-drivers/2.17.0/source"
printf 'PACKAGE_NAME="amzn-drivers"\nBUILT_MODULE_NAME[0]="ena"\nDEST_MODULE_LOCATION[0]="/updates"\n' \
	>"$tmp/r-amzn/var/lib/dkms/amzn-drivers/2.17.0/source/dkms.conf"
check "enable refused: amzn-drivers registered in DKMS" refused r-amzn 'refused: another DKMS package builds a module named ena \(amzn-drivers/2\.17\.0\)'
check_host r-amzn
check "amzn-drivers in DKMS: the ena line says the opt-in would be refused, and why" \
	finding_is r-amzn nic:eth0 action 'ena \(amzn\).*ena enable would be refused: another DKMS package builds a module named ena'
mkhost r-src 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 in-tree off
mkdir -p "$tmp/r-src/usr/src" && : >"$tmp/r-src/usr/src/linux-source-6.1.tar.xz"
echo "linux-source-6.1 6.1.153-1" >>"$tmp/r-src/fake-dpkg"
check "enable refused: linux-source-6.1 6.1.153-1 vs running Debian 6.1.158-1" refused r-src 'linux-source-6\.1 6\.1\.153-1 but the running kernel is Debian 6\.1\.158-1'
mkhost r-unreg 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 in-tree off
rm -rf "$tmp/r-unreg/var/lib/dkms/ena-tcp-tailfix"
check "enable refused: package not registered in DKMS" refused r-unreg 'refused: ena-tcp-tailfix is not registered in DKMS'
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	# A copy the other user can reach (the checkout may sit under /root).
	pub=$(mktemp -d)
	on_exit "rm -rf $pub"
	chmod 755 "$pub" && cp "$CLI" "$pub/" && chmod 755 "$pub/${CLI##*/}"
	nonroot() {
		local rc=0 err

		err=$(env -u TAILFIX_SYSROOT setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$pub/${CLI##*/}" ena enable 2>&1 >/dev/null) || rc=$?
		if [ "$rc" != 1 ] || [ "$(printf '%s\n' "$err" | wc -l)" != 1 ] ||
			! printf '%s\n' "$err" | grep -q 'must be run as root'; then
			log "non-root: exit $rc: $err"
			return 1
		fi
	}
	check "enable refused: not root (one line, exit 1)" nonroot
else
	check_skip "enable refused: not root" "needs root and setpriv to run it as another user"
fi
mkhost r-load 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 in-tree off
rm "$tmp/r-load/usr/lib/ena-tcp-tailfix/ena-load"
check "enable refused: no ena-load helper (the modprobe rule would load no ena at all)" refused r-load \
	'refused: /usr/lib/ena-tcp-tailfix/ena-load is missing'
run r-sb check
check "check under a refusal: the in-tree ena line says enable would be refused, and why" \
	finding_is r-sb nic:eth0 action 'ena enable would be refused: Secure Boot is enforcing'
# The controls: a Secure Boot host whose key is enrolled and a source at the
# running kernel's version are not refused (the refusals above are for
# their reason).
mkhost c-ok 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 in-tree on-enrolled
mkdir -p "$tmp/c-ok/usr/src" && : >"$tmp/c-ok/usr/src/linux-source-6.1.tar.xz"
echo "linux-source-6.1 6.1.158-1" >>"$tmp/c-ok/fake-dpkg"
addkernel c-ok 6.12.57+deb13-cloud-amd64 x86_64
run c-ok ena enable
check "enable (Secure Boot with the key enrolled, matching source): exit 0" rc_is c-ok 0

# --- ena enable / disable -------------------------------------------------
K1=6.1.0-41-cloud-amd64 K2=6.12.57+deb13-cloud-amd64
check "enable: ENA_DRIVER=tailfix in the conf file, with a comment" bash -c \
	"grep -qx 'ENA_DRIVER=tailfix' '$tmp/c-ok/etc/ena-tcp-tailfix.conf' && grep -q '^#.*ena disable' '$tmp/c-ok/etc/ena-tcp-tailfix.conf'"
printf '%s\n' '# Written by `ena-tcp-tailfix ena enable`, removed by `ena-tcp-tailfix ena disable`.' \
	'install ena /usr/lib/ena-tcp-tailfix/ena-load $CMDLINE_OPTS' >"$tmp/modprobe.want"
check "enable: the modprobe.d file is exactly the two lines" cmp "$tmp/modprobe.want" "$tmp/c-ok/etc/modprobe.d/ena-tcp-tailfix-ena.conf"
printf '%s\n' "unbuild $K1 conf=tailfix" "install $K1 conf=tailfix" "unbuild $K2 conf=tailfix" "install $K2 conf=tailfix" >"$tmp/enable.calls"
check "enable: dkms unbuild then install, per kernel, after the setting" cmp "$tmp/enable.calls" "$tmp/c-ok/dkms.calls"
check "enable: ena installed for both kernels, said so, with the reboot hint" bash -c \
	"[ -e '$tmp/c-ok/lib/modules/$K1/updates/dkms/ena.ko.xz' ] && [ -e '$tmp/c-ok/lib/modules/$K2/updates/dkms/ena.ko.xz' ] &&
	 [ \$(grep -c 'ena is now installed: reboot (or rmmod ena && modprobe ena off the network path)' '$tmp/c-ok.out') = 2 ]"
run c-ok ena status
check "status after enable: both kernels resolve to ours" bash -c \
	"grep -q '^setting: ENA_DRIVER=tailfix' '$tmp/c-ok.out' && [ \$(grep -c '^kernel .*: modprobe ena -> ours /lib/modules/.*/updates/dkms/ena.ko.xz' '$tmp/c-ok.out') = 2 ]"

rm -f "$tmp/c-ok/dkms.calls"
run c-ok ena disable
printf '%s\n' "unbuild $K1 conf=tailfix" "unbuild $K2 conf=tailfix" "install $K1 conf=in-tree" "install $K2 conf=in-tree" >"$tmp/disable.calls"
check "disable: every dkms unbuild before the setting flips, then install" cmp "$tmp/disable.calls" "$tmp/c-ok/dkms.calls"
check "disable: exit 0, ENA_DRIVER=in-tree, modprobe rule gone, no ena of ours" bash -c \
	"[ \$(cat '$tmp/c-ok.rc') = 0 ] && grep -qx 'ENA_DRIVER=in-tree' '$tmp/c-ok/etc/ena-tcp-tailfix.conf' &&
	 [ ! -e '$tmp/c-ok/etc/modprobe.d/ena-tcp-tailfix-ena.conf' ] && ! ls '$tmp/c-ok/lib/modules/'*/updates/dkms/ena.ko* 2>/dev/null &&
	 [ -e '$tmp/c-ok/lib/modules/$K1/updates/dkms/tsq_probe.ko.xz' ]"
check "disable: both kernels resolve to the in-tree ena" bash -c \
	"[ \$(grep -c 'modprobe ena -> .*kernel/drivers/net/ethernet/amazon/ena/ena.ko.xz (in-tree)' '$tmp/c-ok.out') = 2 ]"
rm -f "$tmp/c-ok/dkms.calls"
run c-ok ena disable
check "disable again: exit 0, no dkms call (idempotent)" bash -c \
	"[ \$(cat '$tmp/c-ok.rc') = 0 ] && [ ! -e '$tmp/c-ok/dkms.calls' ] && grep -q 'already disabled' '$tmp/c-ok.out'"
run c-ok check
check "check after disable: opt-in off" finding_is c-ok ena_optin ok 'ENA_DRIVER=in-tree'
check "check after disable: the in-tree ena, opt-in recommended" finding_is c-ok nic:eth0 action 'ena \(in-tree\).*ena enable'

# A kernel whose dkms step fails: said, the other kernel done, exit 1.
mkhost f-one 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 in-tree off
addkernel f-one "$K2" x86_64
FAKE_DKMS_FAIL=$K1 run f-one ena enable
check "enable with one kernel failing in dkms: exit 1, the other kernel installed" bash -c \
	"[ \$(cat '$tmp/f-one.rc') = 1 ] && grep -q '$K1: the dkms rebuild failed' '$tmp/f-one.err' &&
	 [ -e '$tmp/f-one/lib/modules/$K2/updates/dkms/ena.ko.xz' ] && grep -q '$K2: ena is now installed' '$tmp/f-one.out'"

# A disable whose dkms step fails for one kernel: ours stays installed
# there, so the modprobe rule (the fallback through ena-load) stays too.
mkhost f-dis "$K1" 6.1.158-1 x86_64 ours off
addkernel f-dis "$K2" x86_64
echo "version=$K2-tailfix0.1.0" >"$tmp/f-dis/lib/modules/$K2/updates/dkms/ena.ko.xz"
run f-dis ena enable
FAKE_DKMS_FAIL=$K1 run f-dis ena disable
check "disable with dkms failing for one kernel: exit 1, the modprobe rule kept, said so" bash -c \
	"[ \$(cat '$tmp/f-dis.rc') = 1 ] && [ -e '$tmp/f-dis/etc/modprobe.d/ena-tcp-tailfix-ena.conf' ] &&
	 grep -q 'still installed for $K1: .*kept' '$tmp/f-dis.err' && [ ! -e '$tmp/f-dis/lib/modules/$K2/updates/dkms/ena.ko.xz' ]"
run f-dis ena disable
check "disable again once dkms works: exit 0, the rule gone" bash -c \
	"[ \$(cat '$tmp/f-dis.rc') = 0 ] && [ ! -e '$tmp/f-dis/etc/modprobe.d/ena-tcp-tailfix-ena.conf' ]"

# --- the checks must be able to fail ---------------------------------------
# A wrong fake: the 6.12 arm64 host must NOT show the tcp_wfree() exposure,
# and the amd64 6.1.70 host must NOT show a barrier action.
check "must fail: the tcp_wfree() exposure check on 6.12 arm64" bash -c \
	"$(declare -f finding_is log); tmp='$tmp'; ! finding_is deb612-arm64 tcp_wfree_order action >/dev/null"
check "must fail: a barrier action on 6.1.70 amd64" bash -c \
	"$(declare -f finding_is log); tmp='$tmp'; ! finding_is deb61-70-amd64 tcp_push_barrier action >/dev/null"
# A mutant CLI that thinks the tcp_wfree() ordering came with 6.1.
sed 's/ver_ge "\$KSERIES" 6\.2; then/ver_ge "$KSERIES" 6.1; then/' "$CLI" >"$tmp/mutant"
chmod +x "$tmp/mutant"
TEST_CLI=$tmp/mutant run deb61-158-arm64 check
check "must fail: mutant (tcp_wfree() ordering from 6.1) misses the 6.1.158 arm64 exposure" bash -c \
	"! cmp -s '$CLI' '$tmp/mutant' && ! ( $(declare -f finding_is log); tmp='$tmp'; finding_is deb61-158-arm64 tcp_wfree_order action >/dev/null )"
# A mutant disable that flips the setting before removing: the order check
# must catch it.
awk '/^cmd_ena_disable\(\)/ { inf = 1 }
	inf && /# Unbuild while the setting still lists ena/ { print "\twrite_conf in-tree"; inf = 0 }
	{ print }' "$CLI" >"$tmp/mutant-order"
chmod +x "$tmp/mutant-order"
mkhost m-order 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 ours off
TEST_CLI=$tmp/mutant-order run m-order ena disable
check "must fail: mutant (setting flipped before dkms unbuild) fails the order check" bash -c \
	"! cmp -s '$CLI' '$tmp/mutant-order' && ! grep -qx 'unbuild 6.1.0-41-cloud-amd64 conf=tailfix' '$tmp/m-order/dkms.calls'"
# dkms remove of the only kernel built unregisters the package (dkms
# 3.0.10): an enable built on remove + install leaves nothing registered.
sed 's/^\tdkms unbuild -m "\$PKG" -v "\$1" -k "\$2" && return 0$/\tdkms remove -m "$PKG" -v "$1" -k "$2"; return/' \
	"$CLI" >"$tmp/mutant-remove"
chmod +x "$tmp/mutant-remove"
mkhost m-remove 6.1.0-41-cloud-amd64 6.1.158-1 x86_64 in-tree off
TEST_CLI=$tmp/mutant-remove run m-remove ena enable
check "must fail: mutant (dkms remove instead of unbuild) unregisters the package of a one-kernel host" bash -c \
	"! cmp -s '$CLI' '$tmp/mutant-remove' && [ \$(cat '$tmp/m-remove.rc') = 1 ] &&
	 [ ! -e '$tmp/m-remove/var/lib/dkms/ena-tcp-tailfix/0.1.0/source' ]"
# The same one-kernel host with the real CLI, and with a dkms that has no
# unbuild (remove, then add the source back).
mkhost one "$K1" 6.1.158-1 x86_64 in-tree off
run one ena enable
check "one-kernel host: enable keeps the package registered, ena installed" bash -c \
	"[ \$(cat '$tmp/one.rc') = 0 ] && [ -e '$tmp/one/var/lib/dkms/ena-tcp-tailfix/0.1.0/source' ] &&
	 [ -e '$tmp/one/lib/modules/$K1/updates/dkms/ena.ko.xz' ]"
mkhost old "$K1" 6.1.158-1 x86_64 in-tree off
FAKE_DKMS_OLD=1 run old ena enable
printf '%s\n' "unbuild $K1 conf=tailfix" "remove $K1 conf=tailfix" "add conf=tailfix" "install $K1 conf=tailfix" >"$tmp/old.calls"
check "dkms without unbuild: remove, add back, install; ena installed" bash -c \
	"[ \$(cat '$tmp/old.rc') = 0 ] && cmp '$tmp/old.calls' '$tmp/old/dkms.calls' &&
	 [ -e '$tmp/old/lib/modules/$K1/updates/dkms/ena.ko.xz' ]"
ksft_finish
