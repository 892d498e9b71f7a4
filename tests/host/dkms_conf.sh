#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dkms.conf lists the modules DKMS will build for a kernel: all three where
# the ENA source can be found, the other two (and a reason in the build log)
# where it cannot; indices without gaps; one version for the whole package.
. "$(dirname "$0")/../lib.sh"
conf=$TAILFIX_ROOT/dkms.conf
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
else
	check_skip "with a kernel source package: all three modules" "no headers with a matching linux-source here"
fi
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$conf")
check "one version ($ver) in dkms.conf, none hard-coded elsewhere" \
	bash -c "! grep -rn --include='*.c' --include=Kbuild --include=Makefile -F '\"$ver\"' '$TAILFIX_ROOT'/tsq_probe '$TAILFIX_ROOT'/tcp_dctcp_fixed '$TAILFIX_ROOT'/ena 2>/dev/null | grep -v build-"
ksft_finish
