#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A module that does not build for a kernel costs only itself, never the
# package: the real dkms.conf and the real dkms (add, then build, install or
# autoinstall) in a private DKMS tree, source tree and install tree for one
# kernel with headers (6.1 preferred), with:
#   - ENA_SRC = the kernel's ENA source with one line that does not compile;
#   - ENA_SRC = a source that already carries this package's patches;
#   - ENA_SRC = a source with Amazon's variant of the doorbell fix (the drop
#     path rings when queue entries are in use and no packet is promised);
#   - ENA_SRC = a source with Eric Dumazet's variant (an unconditional
#     doorbell on the drop path), through `dkms autoinstall`;
#   - a package whose tcp_dctcp_fixed does not compile (a copy with one
#     broken line), ENA_SRC = the pristine source, the operator opted in to
#     our ena (TAILFIX_CONF): ena and tsq_probe build.
# In each: dkms succeeds, exactly the other modules are built, make.log says
# in one line why the module was skipped, and `dkms status` (a new dkms
# process reading dkms.conf again) agrees with the build.  Then:
#   - the pristine source without the opt-in: ena builds, is not installed,
#     and make.log says so and how to opt in;
#   - a kernel upgrade for which no module builds (the package built for a
#     second kernel, then every source broken): `dkms autoinstall
#     --kernelver K`, as the kernel packages' hooks run it, exits 0 and says
#     why, and `dkms build` exits 77 (skipped), which DKMS's package postinst
#     takes as "Skipped.".  Nothing outside
# the test's temporary directory is touched: no depmod, no initramfs, no
# module signing key.

. "$(dirname "$0")/../lib.sh"

require_cmd dkms make patch tar sed
PKG=ena-tcp-tailfix
VER=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
[ -n "$VER" ] || fail "no PACKAGE_VERSION in dkms.conf"
ARCH=$(uname -m)
PREP=$TAILFIX_ROOT/ena/prepare-source.sh

# One kernel with headers, a patch series and an ENA source; 6.1 first.
K=
for b in /lib/modules/6.1.*/build /lib/modules/*/build; do
	[ -f "$b/Makefile" ] || continue
	k=$(basename "$(dirname "$b")")
	"$PREP" --locate "$k" >/dev/null 2>&1 || continue
	K=$k
	break
done
[ -n "$K" ] || skip "no kernel with headers and an ENA source (linux-source-X.Y) here"
log "kernel $K ($ARCH), package $PKG $VER"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"
start=$(date +%s)
host_dkms() { ls -lA /var/lib/dkms 2>&1; }
host_before=$(host_dkms)

# The ENA sources: the pristine one, then edited copies.
"$PREP" --pristine "$K" "$TMP/ena-pristine" >"$TMP/prep.log" 2>&1 ||
	{ sed 's/^/# /' "$TMP/prep.log"; fail "cannot extract the pristine ENA source for $K"; }
variant() { rm -rf "$TMP/ena-$1" && cp -r "$TMP/ena-pristine" "$TMP/ena-$1"; }

variant broken
echo 'static int tailfix_broken(void) { return tailfix_undeclared; }' >>"$TMP/ena-broken/ena_com.c"

ENA_SRC=$TMP/ena-pristine "$PREP" "$K" "$TMP/ena-ours" >"$TMP/prep.log" 2>&1 ||
	{ sed 's/^/# /' "$TMP/prep.log"; fail "cannot patch the pristine ENA source for $K"; }

# Amazon's variant: the helper their ena_eth_com.h has, and the drop path
# ringing when entries are in use and no further packet is promised.
variant amzn
sed -i '/^static inline int ena_com_free_q_entries(/i\
static inline u16 ena_com_used_q_entries(struct ena_com_io_sq *io_sq)\
{\
	return io_sq->tail - io_sq->next_to_comp;\
}\
' "$TMP/ena-amzn/ena_eth_com.h"
sed -i '/^error_drop_packet:/a\
	if (!netdev_xmit_more() \&\& ena_com_used_q_entries(tx_ring->ena_com_io_sq))\
		ena_ring_tx_doorbell(tx_ring);\
' "$TMP/ena-amzn/ena_netdev.c"

# Eric Dumazet's variant (seed thread): ring unconditionally after the free.
variant eric
sed -i '/^error_drop_packet:/,/return NETDEV_TX_OK;/s/^\tdev_kfree_skb(skb);$/&\
	\/* Make sure to ring the doorbell. *\/\
	ena_ring_tx_doorbell(tx_ring);/' "$TMP/ena-eric/ena_netdev.c"

for v in amzn eric; do
	grep -A3 '^error_drop_packet:' "$TMP/ena-$v/ena_netdev.c" | grep -q 'ena_ring_tx_doorbell(' ||
		fail "could not make the $v variant of the drop path"
done

# The package as `make install` puts it in /usr/src, without the DKMS
# hooks that would refresh this host's initramfs.
pkgcopy() {
	local d=$1

	mkdir -p "$d"
	tar -C "$TAILFIX_ROOT" --exclude='ena/build-*' --exclude='*.ko' --exclude='*.o' \
		-cf - dkms.conf Makefile scripts tsq_probe tcp_dctcp_fixed ena | tar -C "$d" -xf -
	sed -i '/^POST_INSTALL=/d; /^POST_REMOVE=/d' "$d/dkms.conf"
}
pkgcopy "$TMP/pkg"
pkgcopy "$TMP/pkg-dctcp"
sed -i '0,/^#include/s//int tailfix_broken = tailfix_undeclared;\n&/' \
	"$TMP/pkg-dctcp/tcp_dctcp_fixed/tcp_dctcp_fixed.c"

# The operator's opt-in to our ena (dkms.conf reads TAILFIX_CONF).
echo ENA_DRIVER=tailfix >"$TMP/opted-in.conf"
: >"$TMP/default.conf"

# run_case NAME PKGDIR ENA_SRC ACTION [CONF]: dkms add + ACTION for K in a
# private tree, with the setting file CONF (default: opted in); leaves
# $TMP/NAME/{dkms.log,modules,make.log,status}.
run_case() {
	local name=$1 pkg=$2 src=$3 action=$4 conf=${5:-$TMP/opted-in.conf} d=$TMP/$1 t0 rc
	local dk

	mkdir -p "$d/src" "$d/dkms" "$d/install/$K"
	cp -r "$pkg" "$d/src/$PKG-$VER"
	dk=(env ENA_SRC="$src" sign_file="$d/no-sign-file" TAILFIX_CONF="$conf"
	    dkms --dkmstree "$d/dkms" --sourcetree "$d/src" --installtree "$d/install")
	t0=$(date +%s)
	"${dk[@]}" add "$PKG/$VER" >"$d/dkms.log" 2>&1
	case $action in
	build) "${dk[@]}" build "$PKG/$VER" -k "$K" >>"$d/dkms.log" 2>&1 ;;
	install) "${dk[@]}" install "$PKG/$VER" -k "$K" --no-depmod --no-initrd >>"$d/dkms.log" 2>&1 ;;
	autoinstall) "${dk[@]}" autoinstall -k "$K" --no-depmod --no-initrd >>"$d/dkms.log" 2>&1 ;;
	esac
	rc=$?
	log "$name: dkms $action: exit $rc in $(($(date +%s) - t0)) s"
	echo "$rc" >"$d/rc"
	ls "$d/dkms/$PKG/$VER/$K/$ARCH/module" 2>/dev/null | sed 's/\.ko.*//' | sort | paste -sd' ' - >"$d/modules"
	cp "$d/dkms/$PKG/$VER/$K/$ARCH/log/make.log" "$d/make.log" 2>/dev/null ||
		cp "$d/dkms/$PKG/$VER/build/make.log" "$d/make.log" 2>/dev/null || : >"$d/make.log"
	"${dk[@]}" status "$PKG/$VER" -k "$K" >"$d/status" 2>&1
	grep '^ena-tcp-tailfix: ' "$d/make.log" | sed "s/^/# $name: make.log: /"
	sed "s/^/# $name: status: /" "$d/status"
	if [ "$rc" -ne 0 ]; then
		tail -n 15 "$d/dkms.log" | sed "s/^/# $name: dkms: /"
		tail -n 15 "$d/make.log" | sed "s/^/# $name: make.log: /"
	fi
}

# expect NAME MODULES SKIPPED PATTERN STATE: the checks of one case.
expect() {
	local name=$1 mods=$2 skipped=$3 pattern=$4 state=$5 d=$TMP/$1

	check "$name: dkms succeeds" test "$(cat "$d/rc")" -eq 0
	check "$name: built exactly: $mods" test "$(cat "$d/modules")" = "$mods"
	check "$name: make.log says in one line why $skipped was skipped" \
		test "$(grep -c "^ena-tcp-tailfix: $skipped skipped for $K: $pattern" "$d/make.log")" -eq 1 \
		-a "$(grep -c '^ena-tcp-tailfix: .* skipped for ' "$d/make.log")" -eq 1
	check "$name: dkms status says $state, no missing module" \
		bash -c "grep -q ': $state' '$d/status' && ! grep -qi 'warning\|missing' '$d/status'"
}

run_case broken "$TMP/pkg" "$TMP/ena-broken" build
expect broken "tcp_dctcp_fixed tsq_probe" ena \
	"ena: the patched ENA source .* does not compile for $K: ena_com.c:[0-9]*:[0-9]*: error: .*tailfix_undeclared" built

run_case ours "$TMP/pkg" "$TMP/ena-ours" build
expect ours "tcp_dctcp_fixed tsq_probe" ena \
	"ena: nothing to do: in-tree ena is fine (.*: this package's fix)" built

run_case amzn "$TMP/pkg" "$TMP/ena-amzn" install
expect amzn "tcp_dctcp_fixed tsq_probe" ena \
	"ena: nothing to do: in-tree ena is fine (.*: Amazon's variant" installed
check "amzn: dkms install put both modules in the install tree" \
	test "$(find "$TMP/amzn/install/$K" -name '*.ko*' -printf '%f\n' | sed 's/\.ko.*//' | sort | paste -sd' ' -)" = \
	"tcp_dctcp_fixed tsq_probe"

run_case eric "$TMP/pkg" "$TMP/ena-eric" autoinstall
expect eric "tcp_dctcp_fixed tsq_probe" ena \
	"ena: nothing to do: in-tree ena is fine (.*: Eric Dumazet's variant" installed

run_case dctcp "$TMP/pkg-dctcp" "$TMP/ena-pristine" build
expect dctcp "ena tsq_probe" tcp_dctcp_fixed \
	"tcp_dctcp_fixed does not compile for $K: tcp_dctcp_fixed/tcp_dctcp_fixed.c:[0-9]*:[0-9]*: error: .*tailfix_undeclared" built

# Not opted in: ena is built (so the operator knows it would), not installed.
run_case default "$TMP/pkg" "$TMP/ena-pristine" install "$TMP/default.conf"
check "default: dkms succeeds" test "$(cat "$TMP/default/rc")" -eq 0
check "default: only tsq_probe and tcp_dctcp_fixed are built and installed" \
	test "$(cat "$TMP/default/modules") / $(find "$TMP/default/install/$K" -name '*.ko*' -printf '%f\n' |
		sed 's/\.ko.*//' | sort | paste -sd' ' -)" = "tcp_dctcp_fixed tsq_probe / tcp_dctcp_fixed tsq_probe"
check "default: make.log says ena built, not installed, and how to opt in" \
	grep -q "^ena-tcp-tailfix: ena built for $K.*, not installed: the kernel's own ena stays in use (opt in: ena-tcp-tailfix ena enable)$" \
	"$TMP/default/make.log"

# A kernel upgrade for which nothing builds.  The package is built for a
# second kernel first, as on a host that runs one, so that bookworm's dkms
# reads dkms.conf with that kernel during the autoinstall of K.
K2=
for b in /lib/modules/*/build; do
	k=$(basename "$(dirname "$b")")
	[ -f "$b/Makefile" ] && [ "$k" != "$K" ] && K2=$k && break
done
if [ -z "$K2" ]; then
	check_skip "upgrade: a kernel where nothing builds does not fail autoinstall" \
		"one kernel with headers here, two needed"
else
	d=$TMP/upgrade
	mkdir -p "$d/src" "$d/dkms" "$d/install/$K" "$d/install/$K2"
	cp -r "$TMP/pkg" "$d/src/$PKG-$VER"
	dk=(env ENA_SRC=/nonexistent sign_file="$d/no-sign-file" TAILFIX_CONF="$TMP/default.conf"
	    dkms --dkmstree "$d/dkms" --sourcetree "$d/src" --installtree "$d/install")
	"${dk[@]}" add "$PKG/$VER" >"$d/dkms.log" 2>&1
	"${dk[@]}" install "$PKG/$VER" -k "$K2" --no-depmod --no-initrd >>"$d/dkms.log" 2>&1
	check "upgrade: installed for $K2 first" grep -q ': installed' \
		<("${dk[@]}" status "$PKG/$VER" -k "$K2" 2>&1)
	# Every module made not to compile (ena: no source), as a future
	# kernel API break would.
	for f in "$d/src/$PKG-$VER/tsq_probe/tsq_main.c" "$d/src/$PKG-$VER/tcp_dctcp_fixed/tcp_dctcp_fixed.c"; do
		sed -i '0,/^#include/s//int tailfix_broken = tailfix_undeclared;\n&/' "$f"
	done
	rc=0
	"${dk[@]}" autoinstall --kernelver "$K" --no-depmod --no-initrd >"$d/auto.log" 2>&1 || rc=$?
	sed 's/^/# upgrade: autoinstall: /' "$d/auto.log"
	check "upgrade: dkms autoinstall --kernelver $K exits 0 (exit $rc)" test "$rc" -eq 0
	check "upgrade: it says the package was skipped for $K and where the reasons are" \
		grep -q "^ena-tcp-tailfix: skipped for $K: no module builds for it (why, per module: .*/.tailfix-probe/$K/result)" "$d/auto.log"
	check "upgrade: the reasons name each module" bash -c \
		"grep -q '^skip tsq_probe tsq_probe does not compile' $d/dkms/$PKG/$VER/.tailfix-probe/$K/result &&
		 grep -q '^skip tcp_dctcp_fixed tcp_dctcp_fixed does not compile' $d/dkms/$PKG/$VER/.tailfix-probe/$K/result &&
		 grep -q '^skip ena ' $d/dkms/$PKG/$VER/.tailfix-probe/$K/result"
	rc=0
	"${dk[@]}" build "$PKG/$VER" -k "$K" >"$d/build.log" 2>&1 || rc=$?
	check "upgrade: dkms build for $K exits 77, skipped (exit $rc)" test "$rc" -eq 77
	check "upgrade: nothing built or installed for $K" \
		test -z "$(find "$d/install/$K" "$d/dkms/$PKG/$VER/$K" -name '*.ko*' 2>/dev/null)"
	check "upgrade: $K2 keeps its modules" grep -q ': installed' \
		<("${dk[@]}" status "$PKG/$VER" -k "$K2" 2>&1)
fi

check "nothing written to the host's /var/lib/dkms (tree, signing key)" \
	test "$(host_dkms)" = "$host_before"
log "run time: $(($(date +%s) - start)) s"
ksft_finish
