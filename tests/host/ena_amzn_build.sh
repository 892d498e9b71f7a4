#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ena/ with Amazon's out-of-tree driver (amzn-drivers) as the source, the
# release tarball of ../shared/third_party, for every kernel
# with headers in 6.1 and 6.12:
#   - ENA_SRC at a checkout, at its kernel/linux/ena, or at the tarball is
#     recognised as amzn-drivers (--locate);
#   - the dry run DKMS uses (--probe) patches it with patches/amzn-2.17
#     and builds ena.ko with amzn-drivers' own configure.sh and Makefile:
#     vermagic of the kernel, version "2.17.0g-tailfix<PACKAGE_VERSION>"
#     (Amazon's release and ours), the tx_drop_doorbells counter inside;
#   - make -C ena KVER=... does the same through ena/Makefile (one kernel);
#   - ena/checks' semantic patches, on the source resolved for the kernel
#     (ena/checks/resolve.sh): the release fails, the patched source
#     passes, a mutant of its drop path fails;
#   - one line, a distinct exit status and nothing left behind for: a
#     source that already carries the series (5), a release the series
#     does not apply to (6), a release without the drop-path doorbell (6).
# No source of amzn-drivers is kept; everything is unpacked in a temporary
# directory.

. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ena_amzn_common.sh"

require_cmd make patch tar modinfo strings
amzn_setup
PREP=$TAILFIX_ROOT/ena/prepare-source.sh
PKGVER=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$TAILFIX_ROOT/dkms.conf" | head -n1)

locates_amzn() {	# locates_amzn ENA_SRC
	ENA_SRC=$1 "$PREP" --locate "${KVERS[0]}" 2>&1 | grep -q 'amzn-drivers'
}
check "--locate: a checkout is amzn-drivers" locates_amzn "$CO"
check "--locate: its kernel/linux/ena is amzn-drivers" locates_amzn "$CO/kernel/linux/ena"
check "--locate: the release tarball is amzn-drivers" locates_amzn "$TARBALL"

# built_ok KO KVER: the module is ours, for KVER, with the counter
built_ok() {
	local v
	v=$(modinfo -F version "$1" 2>/dev/null)
	log "$(basename "$(dirname "$1")"): version $v, vermagic $(modinfo -F vermagic "$1" | cut -d' ' -f1)"
	[[ $v =~ ^2\.[0-9]+\.[0-9]+g-tailfix${PKGVER//./\\.}$ ]] &&
		[ "$(modinfo -F vermagic "$1" | cut -d' ' -f1)" = "$2" ] &&
		strings "$1" | grep -qx 'drop_doorbells'
}
# (the number of patches the series lists, which the line names)
npatch=$(grep -cEv '^[[:space:]]*(#|$)' "$TAILFIX_ROOT/ena/patches/amzn-2.17/series")
for k in "${KVERS[@]}"; do
	out=$TMP/probe-$k
	line=$(ENA_SRC=$TARBALL ENA_PROBE_LOG=$TMP/probe-$k.log "$PREP" --probe "$k" "$out" 2>&1)
	rc=$?
	log "$line"
	check "--probe $k: builds from the tarball (exit 0, one line naming the release)" \
		eval '[ $rc -eq 0 ] && [[ $line == *"amzn-drivers 2."*", $npatch patches)" ]]'
	check "--probe $k: ena.ko is amzn-drivers' version + -tailfix$PKGVER, for $k, with drop_doorbells" \
		built_ok "$out/ena.ko" "$k"
	check "--probe $k: amzn-drivers' own configure step ran" test -f "$out/ena/config.h"
done

# The semantic patches (ena/checks) on amzn-drivers: its doorbell
# decisions and NAPI exits sit in LINUX_VERSION_CODE conditionals, which
# resolve.sh decides for the kernel first.  The release as Amazon ships it
# fails napi_stats_order (its poll functions count after
# napi_complete_done()); with patches/amzn-2.17 every check passes, the
# findings argued safe in amzn-2.17.accept aside; a drop path that rings
# on the wrong condition fails tx_drop_doorbell.
AMZN_EXPECT="ena_start_xmit ena_io_poll ena_af_xdp_io_poll ena_timer_service"
static_check() {	# static_check KVER DIR OUTFILE [ACCEPT]: check.sh's exit
	rm -rf "$TMP/res"
	"$TAILFIX_ROOT/ena/checks/resolve.sh" "/lib/modules/$1/build" "$2" "$TMP/res" >"$3" 2>&1 || return 2
	CHECK_EXPECT=$AMZN_EXPECT CHECK_ACCEPT=${4:-} \
		"$TAILFIX_ROOT/ena/checks/check.sh" "$TMP/res" >>"$3" 2>&1
}
if command -v spatch >/dev/null; then
	k=${KVERS[0]}
	cp -r "$CO/kernel/linux" "$TMP/pristine"
	cp "$TMP/probe-$k/ena/config.h" "$TMP/pristine/ena/"
	static_check "$k" "$TMP/pristine/ena" "$TMP/static-pristine"
	rc=$?
	sed 's/^/# pristine: /' "$TMP/static-pristine" | grep -v 'checked: ' | head -20
	check "static checks, amzn-drivers as released, $k: napi_stats_order finds ena_io_poll() and ena_af_xdp_io_poll()" \
		eval '[ $rc -eq 1 ] && grep -q "ena_io_poll(): .*\[napi_stats_order\]" "$TMP/static-pristine" &&
			grep -q "ena_af_xdp_io_poll(): .*\[napi_stats_order\]" "$TMP/static-pristine"'
	for k in "${KVERS[@]}"; do
		static_check "$k" "$TMP/probe-$k/ena" "$TMP/static-$k" "$TAILFIX_ROOT/ena/checks/amzn-2.17.accept"
		rc=$?
		grep -E '^(# accepted|[^#])' "$TMP/static-$k" | sed 's/^/# patched: /'
		check "static checks, amzn-drivers with patches/amzn-2.17, $k: clean (exit $rc)" test "$rc" -eq 0
	done
	# drop_mutant NAME SED DESC: the patched build with SED applied to
	# ena_netdev.c must fail tx_drop_doorbell on its drop path.
	drop_mutant() {
		local m=$TMP/mutant-$1 rc

		cp -r "$TMP/probe-$k" "$m"
		sed -i "$2" "$m/ena/ena_netdev.c"
		static_check "$k" "$m/ena" "$m.out" "$TAILFIX_ROOT/ena/checks/amzn-2.17.accept"
		rc=$?
		check "static checks, mutant: $3: tx_drop_doorbell fails" \
			eval '! cmp -s "$m/ena/ena_netdev.c" "$TMP/probe-$k/ena/ena_netdev.c" && [ $rc -eq 1 ] &&
				grep -q "ena_start_xmit(): drop path .*\[tx_drop_doorbell\]" "$m.out"'
	}
	drop_mutant xmit-more 's/if (!netdev_xmit_more() && ena_com_used_q_entries(/if (netdev_xmit_more() \&\& ena_com_used_q_entries(/' \
		"the drop path rings on netdev_xmit_more()"
	# "descriptors are pending" made false: a condition that never rings
	drop_mutant pending-false 's/if (!netdev_xmit_more() && ena_com_used_q_entries(tx_ring->ena_com_io_sq))/if (!netdev_xmit_more() \&\& 0)/' \
		"the drop path's pending test made 0"
else
	check "static checks on amzn-drivers" sh -c 'echo "spatch (coccinelle) not installed" >&2; false'
fi

# ena/Makefile, as make install and scripts/build-modules.sh use it
cp -r "$TAILFIX_ROOT/ena" "$TMP/enamk"
rm -rf "$TMP/enamk"/build-* "$TMP/enamk/ena.ko"
k=${KVERS[0]}
check "make -C ena KVER=$k ENA_SRC=<checkout> builds it" \
	eval 'ENA_SRC=$CO make -s -C "$TMP/enamk" KVER="$k" DKMS_CONF="$TAILFIX_ROOT/dkms.conf" \
		>"$TMP/make.log" 2>&1 && built_ok "$TMP/enamk/ena.ko" "$k"'

# refusals: one line "ena: ...", the exit status, no OUTDIR, no temporary left
refuses() {	# refuses STATUS PATTERN ENA_SRC
	local o=$TMP/refused out rc
	out=$(ENA_SRC=$3 TMPDIR=$TMP/t "$PREP" "${KVERS[0]}" "$o" 2>&1)
	rc=$?
	log "exit $rc: $out"
	[ "$rc" -eq "$1" ] && [ "$(printf '%s\n' "$out" | grep -c '^ena: ')" -ge 1 ] &&
		printf '%s\n' "$out" | tail -1 | grep -q "$2" && [ ! -e "$o" ] &&
		[ -z "$(ls -d "$o".tmp.* 2>/dev/null)" ]
}
mkdir -p "$TMP/t"
check "a tree that already carries the series: exit 5, already has this fix" \
	refuses 5 'already has this fix' "$TMP/probe-${KVERS[0]}/ena"
cp -r "$CO" "$TMP/other"
sed -i 's/^\tint tx_work_done, tx_budget, ret, rx_work_done = 0, napi_comp_call = 0;$/\tint tx_work_done, ret, tx_budget, rx_work_done = 0, napi_comp_call = 0;/' \
	"$TMP/other/kernel/linux/ena/ena_netdev.c"
check "a release the series does not know: exit 6, does not apply" \
	refuses 6 'does not apply' "$TMP/other"
cp -r "$CO" "$TMP/old"
sed -i '/^error_drop_packet:/,/^}/{/ena_ring_tx_doorbell(tx_ring);/d}' "$TMP/old/kernel/linux/ena/ena_netdev.c"
check "a release without the drop-path doorbell: exit 6, does not ring" \
	refuses 6 'does not ring the TX doorbell' "$TMP/old"
ksft_finish
