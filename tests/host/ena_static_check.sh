#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Static checks of the ENA patches (ena/checks/*.cocci, run by
# ena/checks/check.sh), in both directions, for each kernel series with a
# patch series (6.1, 6.12) whose ENA source can be found:
#   - the pristine source FAILS: every known instance is reported (drop
#     paths of ena_start_xmit() and ena_xdp_xmit_frame(); statistics after
#     napi_complete_done() in ena_io_poll() and ena_xdp_io_poll());
#   - the patched source PASSES both checks;
#   - neither verdict is vacuous: the checker must have examined the
#     transmit and poll functions (check.sh exits 2 otherwise).
# The source comes from ena/prepare-source.sh (linux-source-X.Y in /usr/src,
# or ENA_SRC_<X>_<Y>=..., e.g. ENA_SRC_6_12=/path/to/linux).

. "$(dirname "$0")/../lib.sh"

require_cmd spatch patch tar

ENA=$TAILFIX_ROOT/ena
CHECK=$ENA/checks/check.sh
[ -x "$CHECK" ] || fail "$CHECK missing"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# expect_found OUT FN RULE: OUT reports FN for RULE.
expect_found() { grep -q ": $2(): .*\[$3\]$" "$1"; }

ran=0
for series in $(cd "$ENA/patches" && echo */ | tr -d /); do
	var=ENA_SRC_${series//./_}
	kver=$series.0-ena-static-check
	pristine=$TMP/$series-pristine
	patched=$TMP/$series-patched

	if ! ENA_SRC=${!var:-} "$ENA/prepare-source.sh" --pristine "$kver" "$pristine" \
		>"$TMP/prep.log" 2>&1; then
		sed 's/^/# /' "$TMP/prep.log"
		check_skip "$series: static checks" "no ENA source for $series (install linux-source-$series or set $var)"
		continue
	fi
	ran=$((ran + 1))
	# Patch the extracted copy rather than extracting a second time.
	ENA_SRC=$pristine "$ENA/prepare-source.sh" "$kver" "$patched" >"$TMP/prep.log" 2>&1
	rc=$?
	sed 's/^/# /' "$TMP/prep.log"
	check "$series: the series applies to the pristine source" [ "$rc" -eq 0 ]

	"$CHECK" "$pristine" >"$TMP/pristine.out" 2>&1
	rc=$?
	sed "s/^/# $series pristine: /" "$TMP/pristine.out"
	check "$series: pristine source fails the checks (exit 1)" [ "$rc" -eq 1 ]
	check "$series: pristine: ena_start_xmit() drop path flagged" \
		expect_found "$TMP/pristine.out" ena_start_xmit tx_drop_doorbell
	check "$series: pristine: ena_xdp_xmit_frame() drop path flagged" \
		expect_found "$TMP/pristine.out" ena_xdp_xmit_frame tx_drop_doorbell
	check "$series: pristine: ena_io_poll() late statistics flagged" \
		expect_found "$TMP/pristine.out" ena_io_poll napi_stats_order
	check "$series: pristine: ena_xdp_io_poll() late statistics flagged" \
		expect_found "$TMP/pristine.out" ena_xdp_io_poll napi_stats_order

	if [ -d "$patched" ]; then
		"$CHECK" "$patched" >"$TMP/patched.out" 2>&1
		rc=$?
		sed "s/^/# $series patched: /" "$TMP/patched.out"
	else
		rc=none
	fi
	check "$series: patched source passes both checks (exit 0)" [ "$rc" = 0 ]
	rm -rf "$pristine" "$patched"
done

[ "$ran" -gt 0 ] || skip "no ENA source for any kernel series: install linux-source-6.1 / linux-source-6.12"
ksft_finish
