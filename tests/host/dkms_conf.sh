#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dkms.conf lists the modules DKMS will build for a kernel: all three where
# the ENA source can be found and the operator opted in to our ena
# (ENA_DRIVER=tailfix in TAILFIX_CONF), the other two (and a reason in the
# build log) otherwise; indices without gaps; one version for the whole
# package; a kernel where nothing builds is excluded (BUILD_EXCLUSIVE_KERNEL
# matching nothing, no AUTOINSTALL); an amzn-drivers checkout in /usr/src is
# never taken as the ENA source on its own.
. "$(dirname "$0")/../lib.sh"
conf=$TAILFIX_ROOT/dkms.conf
optin=$(mktemp)
on_exit rm -f "$optin"
echo ENA_DRIVER=tailfix >"$optin"
export TAILFIX_CONF=$optin
modules_for() {	# modules_for KVER [ENA_SRC]: what dkms would build
	ENA_SRC=${2:-} kernelver=$1 bash -c '. "$0"; echo "${BUILT_MODULE_NAME[*]}|${#BUILT_MODULE_LOCATION[@]}|$PACKAGE_VERSION"' "$conf"
}
fake=5.99.0-1-nosource-amd64
out=$(modules_for "$fake" /nonexistent)
log "no ENA source for $fake: $out"
check "no ENA source: tsq_probe and tcp_dctcp_fixed only" test "${out%%|*}" = "tsq_probe tcp_dctcp_fixed"
check "no ENA source: locations match names" test "$(echo "$out" | cut -d'|' -f2)" = 2
# The probe, with nowhere to find a source, exits 1 with its one "ena: " line
# naming the kernel, the package and ENA_SRC.  TAILFIX_PREPARE_SOURCE swaps
# the script for a fake (host/lib_selftest.sh).
prepare=${TAILFIX_PREPARE_SOURCE:-$TAILFIX_ROOT/ena/prepare-source.sh}
says_why() {
	local empty rc=0 out

	empty=$(mktemp -d)
	out=$(ENA_MODULES_DIR=$empty ENA_USR_SRC=$empty "$prepare" --probe "$fake" 2>&1) || rc=$?
	rmdir "$empty"
	log "probe: exit $rc: $out"
	[ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
		printf '%s\n' "$out" | grep -q "^ena: no ENA source for $fake: .*linux-source-5\.99.*ENA_SRC="
}
check "no ENA source: the probe says why and how to provide it" says_why
k=$(ls -d /lib/modules/*/build 2>/dev/null | sed 's,/lib/modules/,,;s,/build,,' | head -1)
series=$(echo "$k" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
if [ -n "$k" ] && [ -f "/usr/src/linux-source-$series.tar.xz" ]; then
	out=$(modules_for "$k")
	log "$k: $out"
	check "with linux-source-$series: all three modules" test "${out%%|*}" = "tsq_probe tcp_dctcp_fixed ena"
	out=$(TAILFIX_CONF=/nonexistent modules_for "$k")
	check "with linux-source-$series, not opted in: no ena" test "${out%%|*}" = "tsq_probe tcp_dctcp_fixed"
else
	check_skip "with a kernel source package: all three modules" "no headers with a matching linux-source here"
fi
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$conf")
check "one version ($ver) in dkms.conf, none hard-coded elsewhere" \
	bash -c "! grep -rn --include='*.c' --include=Kbuild --include=Makefile -F '\"$ver\"' '$TAILFIX_ROOT'/tsq_probe '$TAILFIX_ROOT'/tcp_dctcp_fixed '$TAILFIX_ROOT'/ena 2>/dev/null | grep -v build-"

# Inside a DKMS tree (dkms.conf read as .../<name>/<version>/source/dkms.conf):
# once built for a kernel, the list is what DKMS kept for it, whatever the
# ENA source says now; before, the probe decides and keeps its verdicts.
tree=$(mktemp -d)
on_exit rm -rf "$tree"
pkgdir=$tree/ena-tcp-tailfix/$ver
mkdir -p "$pkgdir" && ln -s "$TAILFIX_ROOT" "$pkgdir/source"
in_tree_modules() {	# in_tree_modules KVER: what dkms would build, read as dkms does
	kernelver=$1 arch=x86_64 kernel_source_dir=/nonexistent/build \
		bash -c '. "$0"; echo "${BUILT_MODULE_NAME[*]}"' "$pkgdir/source/dkms.conf" 2>/dev/null
}
excluded() {	# excluded KVER: dkms would skip KVER (exit 77), autoinstall pass it by
	kernelver=$1 arch=x86_64 kernel_source_dir=/nonexistent/build \
		bash -c '. "$0"; [ -z "$AUTOINSTALL" ] && [ -n "$BUILD_EXCLUSIVE_KERNEL" ] &&
			! [[ $kernelver =~ $BUILD_EXCLUSIVE_KERNEL ]]' "$pkgdir/source/dkms.conf" 2>/dev/null
}
mkdir -p "$pkgdir/$fake/x86_64/module"
touch "$pkgdir/$fake/x86_64/module/tsq_probe.ko" "$pkgdir/$fake/x86_64/module/ena.ko.xz"
out=$(in_tree_modules "$fake")
log "built for $fake (tsq_probe, ena): $out"
check "built: dkms.conf lists exactly the modules DKMS kept" test "$out" = "tsq_probe ena"
out=$(TAILFIX_CONF=/nonexistent in_tree_modules "$fake")
check "built, not opted in: ena is not listed" test "$out" = "tsq_probe"
nohdr=5.99.0-2-noheaders-amd64
out=$(in_tree_modules "$nohdr")
log "not built, no headers for $nohdr: $out; probe: $(cat "$pkgdir/.tailfix-probe/$nohdr/result" 2>/dev/null | paste -sd';' -)"
check "not built: the probe ran and kept one verdict per module" \
	test "$(grep -c '^skip .* no kernel build tree at /nonexistent/build' "$pkgdir/.tailfix-probe/$nohdr/result" 2>/dev/null)" -eq 3
check "nothing builds: dkms.conf still lists tsq_probe and tcp_dctcp_fixed" \
	test "$out" = "tsq_probe tcp_dctcp_fixed"
check "nothing builds: the kernel is excluded (no AUTOINSTALL, BUILD_EXCLUSIVE_KERNEL matching nothing)" \
	excluded "$nohdr"
not_excluded() { ! excluded "$1"; }
check "built: a kernel that builds is not excluded" not_excluded "$fake"

# An amzn-drivers checkout where Amazon's recipe puts it is not taken.
usr=$(mktemp -d)
on_exit rm -rf "$usr"
mkdir -p "$usr/amzn-drivers-2.17.0/kernel/linux/ena"
touch "$usr/amzn-drivers-2.17.0/kernel/linux/ena/configure.sh" "$usr/amzn-drivers-2.17.0/kernel/linux/ena/ena_netdev.c"
check "an amzn-drivers checkout in /usr/src is not an ENA source on its own" \
	bash -c "! ENA_MODULES_DIR=$usr ENA_USR_SRC=$usr '$prepare' --locate $fake >/dev/null 2>&1"
check "... but ENA_SRC can name it" \
	bash -c "ENA_MODULES_DIR=$usr ENA_USR_SRC=$usr ENA_SRC=$usr/amzn-drivers-2.17.0 '$prepare' --locate $fake >/dev/null 2>&1"
ksft_finish
