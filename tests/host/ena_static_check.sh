#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Static checks of the ENA patches (ena/checks/*.cocci, run by
# ena/checks/check.sh), in both directions, for each kernel series with a
# patch series (5.10, 6.1, 6.12, 7.3) whose ENA source can be found:
#   - the pristine source FAILS: every known instance is reported (drop
#     path of ena_start_xmit(); statistics after napi_complete_done() in
#     ena_io_poll() and ena_xdp_io_poll(); the transmit path's syncp
#     written by both poll functions, by ena_unmask_interrupt() and by
#     the timer service's missed_tx and empty_rx_ring);
#   - the patched source PASSES all checks;
#   - mutants of the patched source FAIL, each with the check it breaks:
#     a drop path calling a doorbell helper that returns at once, a
#     ena_ring_tx_doorbell() that returns at once, a drop path deciding
#     on a different condition, the poll statistics moved after
#     napi_complete_done(), a second writer of napi_syncp in the transmit
#     path, unmask_interrupt counted under napi_syncp in
#     ena_unmask_interrupt(), a NAPI counter under the transmit path's
#     syncp in a poll function, and the timer's missed_tx back under the
#     transmit path's syncp;
#   - no verdict is vacuous: the checker must have examined the transmit
#     and poll functions (check.sh exits 2 otherwise), and each mutant
#     must have changed the source.
# The source comes from ena/prepare-source.sh (linux-source-X.Y in /usr/src,
# or ENA_SRC_<X>_<Y>=..., e.g. ENA_SRC_6_12=/path/to/linux), or for a
# series this Debian 12 host cannot install (5.10 from bullseye, 7.3 from
# trixie-backports) from the tarball scripts/deps.sh keeps in
# $TAILFIX_CACHE/linux-source/.

. "$(dirname "$0")/../lib.sh"

require_cmd spatch patch tar

ENA=$TAILFIX_ROOT/ena
CHECK=$ENA/checks/check.sh
[ -x "$CHECK" ] || fail "$CHECK missing"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"
JOBS=$(nproc 2>/dev/null || echo 1)

# expect_found OUT FN RULE: OUT reports FN for RULE.
expect_found() { grep -q ": $2(): .*\[$3\]$" "$1"; }

# Mutants of the patched source: NAME|CHECK THAT MUST CATCH IT|perl -0pi
# expression, applied to every .c/.h (the same text in every series, or one
# substitution per shape where 5.10 writes its counters inline).
MUTANTS=(
	# the drop path calls a "doorbell" helper that returns at once
	'noop_helper|tx_drop_doorbell|s/(\(netif_xmit_stopped\(txq\) \|\| !netdev_xmit_more\(\)\)\)\n\t\t)ena_ring_tx_doorbell\(tx_ring\);/$1ena_tx_drop_doorbell(tx_ring);/; s/^(static netdev_tx_t ena_start_xmit\()/static void ena_tx_drop_doorbell(struct ena_ring *tx_ring)\n{\n}\n\n$1/m'
	# the doorbell function itself returns before writing the register
	'noop_doorbell|tx_drop_doorbell|s/(void ena_ring_tx_doorbell\(struct ena_ring \*tx_ring\)\n\{\n)/$1\tif (tx_ring)\n\t\treturn;\n/'
	# the drop path's "descriptors are pending" made a constant false
	'false_pending|tx_drop_doorbell|s/if \(tx_ring->doorbell_pending &&/if (0 &&/'
	# the pending flag never set where descriptors are queued
	'pending_never_set|tx_drop_doorbell|s/\tring->doorbell_pending = true;\n//'
	# the pending flag cleared by the transmit function before its drop test
	'pending_cleared|tx_drop_doorbell|s/(\tif \(tx_ring->doorbell_pending &&)/\ttx_ring->doorbell_pending = false;\n$1/'
	# the drop path frees the skb with a function the check does not know
	'unknown_free|tx_drop_doorbell|s/dev_kfree_skb(_any)?\(skb\);/kfree_skb(skb);/g'
	# the drop path rings on another condition than the success path
	'other_decision|tx_drop_doorbell|s/(tx_ring->doorbell_pending &&\n\t    \(netif_xmit_stopped\(txq\) \|\| )!(netdev_xmit_more\(\)\)\))/$1$2/'
	# ring before the stats: ena_io_poll() accounts after napi_complete_done()
	'stats_after_complete|napi_stats_order|s/(\t\/\* Account for this poll while it owns NAPI:.*?u64_stats_update_end\(&tx_ring->napi_syncp\);\n(?:\tWRITE_ONCE\(tx_ring->tx_stats.last_napi_jiffies, jiffies\);\n)?)\n(.*?)(\treturn ret;\n\}\n\nstatic irqreturn_t ena_intr_msix_mgmnt)/$2$1\n$3/s'
	# a second writer of napi_syncp: the transmit path
	'napi_syncp_in_xmit|napi_syncp|s/(\tskb_tx_timestamp\(skb\);\n)/$1\tu64_stats_update_begin(&tx_ring->napi_syncp);\n\ttx_ring->tx_stats.tx_poll++;\n\tu64_stats_update_end(&tx_ring->napi_syncp);\n/'
	# a second writer of napi_syncp: ena_unmask_interrupt(), called by ena_up() too
	'napi_syncp_in_unmask|napi_syncp|s/\tatomic_inc\(&tx_ring->unmasks_uncounted\);/\tu64_stats_update_begin(&tx_ring->napi_syncp);\n\ttx_ring->tx_stats.unmask_interrupt++;\n\tu64_stats_update_end(&tx_ring->napi_syncp);/'
	# a NAPI counter under the transmit path's syncp, in the poll function
	# the timer's missed_tx back under the transmit path's syncp
	'timer_in_syncp|napi_syncp|s/&tx_ring->timer_syncp/&tx_ring->syncp/'
	'syncp_in_poll|napi_syncp|s/(ena_increase_stat\(&tx_ring->tx_stats.napi_comp, 1,\n\t\t\t\t  &tx_ring->)napi_syncp/$1syncp/; s/(u64_stats_update_begin\(&tx_ring->)napi_syncp(\);\n\t\ttx_ring->tx_stats.napi_comp\+\+)/$1syncp$2/'
)

ran=0
for series in $(cd "$ENA/patches" && echo */ | tr -d /); do
	# kernel series only: amzn-X.Y is tests/host/ena_amzn_build.sh's
	case $series in *[!0-9.]*) continue ;; esac
	var=ENA_SRC_${series//./_}
	cached=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}/linux-source/linux-source-$series.tar.xz
	[ -n "${!var:-}" ] || [ -e "/usr/src/linux-source-$series.tar.xz" ] || [ ! -f "$cached" ] ||
		printf -v "$var" '%s' "$cached"
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
	check "$series: pristine: ena_io_poll() late statistics flagged" \
		expect_found "$TMP/pristine.out" ena_io_poll napi_stats_order
	check "$series: pristine: ena_xdp_io_poll() late statistics flagged" \
		expect_found "$TMP/pristine.out" ena_xdp_io_poll napi_stats_order
	check "$series: pristine: ena_io_poll() writes the transmit syncp" \
		expect_found "$TMP/pristine.out" ena_io_poll napi_syncp
	check "$series: pristine: ena_xdp_io_poll() writes the transmit syncp" \
		expect_found "$TMP/pristine.out" ena_xdp_io_poll napi_syncp
	check "$series: pristine: ena_unmask_interrupt() writes the transmit syncp" \
		expect_found "$TMP/pristine.out" ena_unmask_interrupt napi_syncp
	check "$series: pristine: the timer's missed_tx written under the transmit syncp" \
		expect_found "$TMP/pristine.out" check_missing_comp_in_tx_queue napi_syncp
	check "$series: pristine: the timer's empty_rx_ring written under the Rx NAPI syncp" \
		expect_found "$TMP/pristine.out" check_for_empty_rx_ring napi_syncp

	if [ -d "$patched" ]; then
		"$CHECK" "$patched" >"$TMP/patched.out" 2>&1
		rc=$?
		sed "s/^/# $series patched: /" "$TMP/patched.out"
	else
		rc=none
	fi
	check "$series: patched source passes all checks (exit 0)" [ "$rc" = 0 ]

	# Each mutant goes through the rule that must catch it (CHECK_RULES),
	# the mutants of a series as many at once as there are CPUs: the
	# pristine and patched sources above went through all three.
	[ -d "$patched" ] && for m in "${MUTANTS[@]}"; do
		name=${m%%|*}; rest=${m#*|}; want=${rest%%|*}; expr=${rest#*|}
		mutant=$TMP/$series-$name
		cp -r "$patched" "$mutant"
		perl -0pi -e "$expr" "$mutant"/*.[ch]
		diff -rq "$patched" "$mutant" >/dev/null && continue
		while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
			wait -n
		done
		(CHECK_RULES=$want "$CHECK" "$mutant" >"$mutant.out" 2>&1
			echo $? >"$mutant.rc") &
	done
	wait
	[ -d "$patched" ] && for m in "${MUTANTS[@]}"; do
		name=${m%%|*}; rest=${m#*|}; want=${rest%%|*}
		mutant=$TMP/$series-$name
		if [ ! -f "$mutant.rc" ]; then
			check "$series: mutant $name changes the source" false
			rm -rf "$mutant"
			continue
		fi
		rc=$(cat "$mutant.rc")
		grep -v '^# ' "$mutant.out" | sed "s/^/# $series $name: /"
		check "$series: mutant $name fails $want (exit 1)" [ "$rc" -eq 1 ]
		check "$series: mutant $name caught by $want" grep -q "\[$want\]$" "$mutant.out"
		rm -rf "$mutant" "$mutant.out" "$mutant.rc"
	done
	rm -rf "$pristine" "$patched"
done

# CHECK_ACCEPT (ena/checks/accept.sh), on findings written by hand: an
# entry accepts only a finding of its own rule and function whose message
# it matches, and an entry that accepted nothing fails the check -- also
# when another entry for the same function did accept something.
acc=$TMP/accept
mkdir "$acc"
findings() {	# accept.sh filters them in place
	printf 'ena_netdev.c:10: f(): writes napi_syncp [napi_syncp]\nena_netdev.c:20: g(): writes napi_syncp [napi_syncp]\n' \
		>"$acc/napi_syncp.found"
	printf 'ena_netdev.c:30: f(): statistics after napi_complete_done() [napi_stats_order]\n' \
		>"$acc/napi_stats_order.found"
}
printf '# comment\nnapi_syncp\tf\twrites napi_syncp\tfine\n' >"$acc/one"
printf 'napi_syncp\tf\twrites napi_syncp\tfine\nnapi_stats_order\tf\tnot this message\tstale\n' >"$acc/stale"
findings
"$ENA/checks/accept.sh" "$acc/one" "$acc" napi_syncp napi_stats_order >"$acc/out" 2>&1
rc=$?
sed 's/^/# accept: /' "$acc/out"
check "accept: an entry takes out its own finding, and only it" \
	eval '[ $rc -eq 0 ] && grep -q "^# accepted: .* f(): writes napi_syncp .*(fine)$" "$acc/out" &&
		[ "$(cat "$acc/napi_syncp.found")" = "ena_netdev.c:20: g(): writes napi_syncp [napi_syncp]" ] &&
		[ "$(wc -l <"$acc/napi_stats_order.found")" -eq 1 ]'
findings
"$ENA/checks/accept.sh" "$acc/stale" "$acc" napi_syncp napi_stats_order >"$acc/out" 2>&1
rc=$?
sed 's/^/# accept: /' "$acc/out"
check "accept: an entry that matched nothing fails (exit 2), although its function had an accepted finding" \
	eval '[ $rc -eq 2 ] && grep -q "stale:2: nothing matched .napi_stats_order f() not this message" "$acc/out"'

[ "$ran" -gt 0 ] || skip "no ENA source for any kernel series: install linux-source-6.1 / linux-source-6.12"
ksft_finish
