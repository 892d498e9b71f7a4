#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A kernel for which no module of the package builds never fails the kernel
# package that brings it: the hook the headers package runs on
# installation (its postinst: run-parts /etc/kernel/header_postinst.d,
# DKMS's autoinstall) exits 0, and says the package was skipped and where
# the reasons are.  Shown with the distribution's own dkms (bookworm's
# 3.0.10, trixie's 3.2) and the running kernel's headers package: a copy of
# the package under another name, every module made not to compile (a
# future kernel API break), registered in DKMS, then the headers package's
# postinst run as dpkg runs it on `apt-get install --reinstall`.
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1; the copy is removed from
# DKMS and /usr/src at exit.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd dkms
kver=$(uname -r)
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
postinst=/var/lib/dpkg/info/linux-headers-$kver.postinst
[ -x "$postinst" ] || skip "no headers package with a postinst for $kver"
grep -qE "header_postinst\.d|linux-run-hooks headers postinst" "$postinst" ||
	skip "$postinst does not run the kernel hooks (/etc/kernel/header_postinst.d)"
[ -x /etc/kernel/header_postinst.d/dkms ] || skip "DKMS's kernel hook is not installed"
require_disruptive "registers a broken copy of the package in DKMS and runs the kernel hooks"

name=tailfix-upgrade-test
src=/usr/src/$name-$ver
[ ! -e "$src" ] || fail "$src exists already"
on_exit "dkms remove $name/$ver --all >/dev/null 2>&1; rm -rf '$src'"
mkdir -p "$src"
tar -C "$TAILFIX_ROOT" --exclude='*.ko' --exclude='*.o' --exclude='ena/build-*' \
	-cf - dkms.conf Makefile scripts tsq_probe tcp_dctcp_fixed ena | tar -C "$src" -xf -
sed -i "s/^PACKAGE_NAME=.*/PACKAGE_NAME=\"$name\"/; /^POST_INSTALL=/d; /^POST_REMOVE=/d" "$src/dkms.conf"
for f in "$src/tsq_probe/tsq_main.c" "$src/tcp_dctcp_fixed/tcp_dctcp_fixed.c"; do
	sed -i '0,/^#include/s//int tailfix_broken = tailfix_undeclared;\n&/' "$f"
done
# The compiler stops at that first error instead of parsing the kernel's
# headers after it: the probe's failing builds take half the time (they
# are most of this test's minutes under emulation).
for m in tsq_probe tcp_dctcp_fixed; do
	echo 'ccflags-y += -Wfatal-errors' >>"$src/$m/Kbuild"
done
# ena: no source to be made from.
rm -f "$src/ena/prepare-source.sh"
check "dkms add of the broken copy" dkms add "$name/$ver"

rc=0
out=$("$postinst" configure 2>&1) || rc=$?
printf '%s\n' "$out" | sed 's/^/#   postinst: /'
check "the headers package's postinst exits 0 (exit $rc)" test "$rc" -eq 0
said() {
	printf '%s\n' "$out" | grep -q "^ena-tcp-tailfix: skipped for $kver: no module builds for it (why, per module: /var/lib/dkms/$name/$ver/.tailfix-probe/$kver/result)"
}
check "it says the package was skipped for $kver and where the reasons are" said
check "the reasons name each module" bash -c \
	"grep -c '^skip \(tsq_probe\|tcp_dctcp_fixed\|ena\) ' /var/lib/dkms/$name/$ver/.tailfix-probe/$kver/result | grep -qx 3"
check "dkms status: the copy is not built for $kver" \
	bash -c "! dkms status $name/$ver -k $kver 2>&1 | grep -q ': \(built\|installed\)'"
check "the package itself stays installed for $kver" \
	bash -c "dkms status ena-tcp-tailfix/$ver -k $kver 2>&1 | grep -q ': installed'"
# The package, built for $kver, is not compiled again to learn whether it
# builds there (bookworm's dkms reads its dkms.conf with another kernel's
# version during autoinstall): only the broken copy is probed.
probes=$(printf '%s\n' "$out" | grep -c 'building each module for')
check "only the broken copy is probed, not the package built for $kver ($probes probes)" test "$probes" -eq 1
ksft_finish
