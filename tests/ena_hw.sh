#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# On a machine with an ENA device (an EC2 instance), with the patched ena.ko
# loaded.  Skips with "no ENA device" anywhere else (QEMU has none).
#   - ethtool -i shows our driver version, ...-tailfix<PACKAGE_VERSION>;
#   - ena is loaded from updates/dkms, not from the in-tree kernel/ path;
#   - under traffic, ethtool -S read in a tight loop: every counter is
#     monotonic and the TX packet count grows;
#   - built from amzn-drivers (ethtool -i version not <running kernel
#     release>-tailfix...): every queue has tx_drop_doorbells, listed after
#     every other queue_ string, and never counts more drop-path doorbells
#     than doorbells;
#   - built from the kernel's own ena (version <kernel release>-tailfix...):
#     no drop_doorbells string at all, as in the kernel's ena (the kernel
#     series leaves the counter out so that no ethtool -S index moves).
# Traffic goes only to a peer the operator names: TAILFIX_ENA_PEER=ADDR, an
# iperf3 server reachable through the ENA interface.  Without it the traffic
# part is skipped, with the reason.  ENA_HW_SECONDS (default 10) sets the
# length of the run.

. "$(dirname "$0")/lib.sh"

ENA_DEV=
for d in "$TAILFIX_SYSFS"/class/net/*; do
	drv=$(readlink -f "$d/device/driver" 2>/dev/null) || continue
	[ "$(basename "$drv")" = ena ] || continue
	ENA_DEV=$(basename "$d")
	break
done
[ -n "$ENA_DEV" ] || skip "no ENA device"

require_cmd ethtool modinfo ip
SECONDS_RUN=${ENA_HW_SECONDS:-10}
log "ENA interface: $ENA_DEV"

PKGVER=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$TAILFIX_ROOT/dkms.conf" 2>/dev/null | head -n1)
info=$(ethtool -i "$ENA_DEV") || fail "ethtool -i $ENA_DEV failed"
ver=$(printf '%s\n' "$info" | sed -n 's/^version: //p')
log "ethtool -i version: $ver"
if [ -n "$PKGVER" ]; then
	check "ethtool -i shows -tailfix$PKGVER" [ "${ver%-tailfix"$PKGVER"}" != "$ver" ]
else
	check "ethtool -i shows a -tailfix version" [ "${ver#*-tailfix}" != "$ver" ]
fi
file=$(modinfo -n ena 2>/dev/null)
log "modinfo -n ena: $file"
check "ena comes from DKMS's directory (updates/dkms; extra on the Red Hat family)" dkms_path "$file"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# ---- traffic ------------------------------------------------------------------
PEER=${TAILFIX_ENA_PEER:-}
if [ -z "$PEER" ]; then
	check_skip "ethtool -S under traffic" "no peer named: set TAILFIX_ENA_PEER=ADDR (an iperf3 server reachable through $ENA_DEV); this test sends traffic to no one else"
	ksft_finish
fi
command -v iperf3 >/dev/null || { check_skip "ethtool -S under traffic" "iperf3 not installed"; ksft_finish; }
iperf3 -c "$PEER" -t "$((SECONDS_RUN + 2))" -P 4 >"$TMP/iperf3.log" 2>&1 &
TRAFFIC_PID=$!
on_exit kill "$TRAFFIC_PID"
log "traffic: iperf3 -P 4 to $PEER"

# ---- tight loop over ethtool -S -----------------------------------------------
n=0
deadline=$((SECONDS + SECONDS_RUN))
while [ "$SECONDS" -lt "$deadline" ]; do
	ethtool -S "$ENA_DEV" >"$TMP/raw" || fail "ethtool -S $ENA_DEV failed"
	sed -n 's/^ *\([^:]*\): \([0-9]*\)$/\1 \2/p' "$TMP/raw" >"$TMP/s.$n"
	n=$((n + 1))
done
log "$n reads of ethtool -S in ${SECONDS_RUN}s"
check "ethtool -S read at least 10 times" [ "$n" -ge 10 ]

# Every counter, read after read, never goes down (the gauges in
# ENA_GAUGES of lib.sh excepted); an empty read fails.
nonmono() {
	local i bad=0

	[ "$n" -ge 2 ] || return 1
	for ((i = 1; i < n; i++)); do
		counters_monotonic "$TMP/s.$((i - 1))" "$TMP/s.$i" || { log "read $i"; bad=1; }
	done
	return $bad
}
check "every ethtool -S counter is monotonic" nonmono

last=$TMP/s.$((n - 1))
queues=$(sed -n 's/^queue_\([0-9]*\)_tx_cnt .*/\1/p' "$last" | sort -n)
check "the interface has TX queues in ethtool -S" [ -n "$queues" ]

drop_counters() {
	local q rc=0 db dd

	for q in $queues; do
		db=$(awk -v k="queue_${q}_tx_doorbells" '$1 == k { print $2 }' "$last")
		dd=$(awk -v k="queue_${q}_tx_drop_doorbells" '$1 == k { print $2 }' "$last")
		[ -n "$dd" ] || { log "queue $q has no tx_drop_doorbells"; rc=1; continue; }
		[ "$dd" -le "${db:-0}" ] || { log "queue $q: drop_doorbells $dd > doorbells $db"; rc=1; }
		[ "$dd" -eq 0 ] || log "queue $q: $dd doorbells rung on the drop path"
	done
	return $rc
}
# The appended counters: no other queue_ string after the first of them
drop_counters_last() {
	awk '$1 !~ /^queue_/ { next }
		$1 ~ /_drop_doorbells$/ { seen = 1; next }
		seen { print "# after the counters: " $1; bad = 1 }
		END { exit bad }' "$last"
}
if [ "${ver#"$(uname -r)"-tailfix}" != "$ver" ]; then
	log "built from the kernel's own ena: no drop_doorbells counter expected"
	check "no drop_doorbells string (the kernel's ena has none)" \
		eval '! grep -q "drop_doorbells" "$last"'
else
	log "built from amzn-drivers: queue_N_tx_drop_doorbells expected"
	check "each TX queue has tx_drop_doorbells <= tx_doorbells" drop_counters
	check "the tx_drop_doorbells strings come after every other queue_ string" drop_counters_last
fi

iperf3_ok() {
	wait "$TRAFFIC_PID" && return 0
	sed 's/^/# iperf3: /' "$TMP/iperf3.log" | tail -5
	return 1
}
check "iperf3 to $PEER ran to the end" iperf3_ok

tx_sum() { awk '$1 ~ /^queue_[0-9]+_tx_cnt:?$/ { print $2 }' "$1" | sum_ints; }
before=$(tx_sum "$TMP/s.0")
after=$(tx_sum "$last")
log "TX packets over the run: $((after - before))"
check "TX packet count grew under traffic" [ "$after" -gt "$before" ]

ksft_finish
