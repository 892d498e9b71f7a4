#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# On a machine with an ENA device (an EC2 instance), with the patched ena.ko
# loaded.  Skips with "no ENA device" anywhere else (QEMU has none).
#   - ethtool -i shows our driver version, ...-tailfix<PACKAGE_VERSION>;
#   - ena is loaded from updates/dkms, not from the in-tree kernel/ path;
#   - under traffic, ethtool -S read in a tight loop: every counter is
#     monotonic, every queue has tx_drop_doorbells, a queue never counts
#     more drop-path doorbells than doorbells, and the TX packet count grows.
# Traffic: iperf3 to ENA_HW_PEER when it is set (an iperf3 server reachable
# through the ENA interface), otherwise UDP datagrams to the discard port of
# the default gateway, which leave through the NIC whether or not anything
# listens.  ENA_HW_SECONDS (default 10) sets the length of the run.

. "$(dirname "$0")/lib.sh"

ENA_DEV=
for d in /sys/class/net/*; do
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
ver=$(ethtool -i "$ENA_DEV" | sed -n 's/^version: //p')
log "ethtool -i version: $ver"
if [ -n "$PKGVER" ]; then
	check "ethtool -i shows -tailfix$PKGVER" [ "${ver%-tailfix"$PKGVER"}" != "$ver" ]
else
	check "ethtool -i shows a -tailfix version" [ "${ver#*-tailfix}" != "$ver" ]
fi
file=$(modinfo -n ena 2>/dev/null)
log "modinfo -n ena: $file"
check "ena comes from updates/dkms" [ "${file#*/updates/dkms/}" != "$file" ]

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# ---- traffic ------------------------------------------------------------------
start_traffic() {
	local gw

	if [ -n "${ENA_HW_PEER:-}" ] && command -v iperf3 >/dev/null; then
		iperf3 -c "$ENA_HW_PEER" -t "$((SECONDS_RUN + 2))" -P 4 >"$TMP/iperf3.log" 2>&1 &
		TRAFFIC_PID=$!
		log "traffic: iperf3 -P 4 to $ENA_HW_PEER"
		return 0
	fi
	gw=$(ip -4 route show default dev "$ENA_DEV" | awk '{ print $3; exit }')
	[ -n "$gw" ] || return 1
	command -v python3 >/dev/null || return 1
	python3 - "$gw" "$((SECONDS_RUN + 2))" <<'EOF' &
import socket, sys, time
dst, end = (sys.argv[1], 9), time.time() + float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
buf = b"\0" * 1200
while time.time() < end:
    for _ in range(64):
        try:
            s.sendto(buf, dst)
        except OSError:
            time.sleep(0.001)
EOF
	TRAFFIC_PID=$!
	log "traffic: UDP datagrams to $gw:9 (discard)"
}

TRAFFIC_PID=
start_traffic || skip "no traffic source: set ENA_HW_PEER (iperf3 server) or give $ENA_DEV an IPv4 default route and python3"
on_exit kill "$TRAFFIC_PID"

# ---- tight loop over ethtool -S -----------------------------------------------
n=0
deadline=$((SECONDS + SECONDS_RUN))
while [ "$SECONDS" -lt "$deadline" ]; do
	ethtool -S "$ENA_DEV" | sed -n 's/^ *\([^:]*\): \([0-9]*\)$/\1 \2/p' >"$TMP/s.$n" ||
		fail "ethtool -S $ENA_DEV failed"
	n=$((n + 1))
done
log "$n reads of ethtool -S in ${SECONDS_RUN}s"
check "ethtool -S read at least 10 times" [ "$n" -ge 10 ]

# Every counter, read after read, never goes down.
nonmono() {
	local i bad=0

	for ((i = 1; i < n; i++)); do
		awk -v r="$i" 'NR == FNR { prev[$1] = $2; next }
			($1 in prev) && $2 < prev[$1] {
				printf "# read %d: %s went from %s to %s\n", r, $1, prev[$1], $2; bad = 1 }
			END { exit bad }' "$TMP/s.$((i - 1))" "$TMP/s.$i" || bad=1
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
check "each TX queue has tx_drop_doorbells <= tx_doorbells" drop_counters

tx_sum() { awk '$1 ~ /^queue_[0-9]+_tx_cnt$/ { s += $2 } END { print s + 0 }' "$1"; }
before=$(tx_sum "$TMP/s.0")
after=$(tx_sum "$last")
log "TX packets over the run: $((after - before))"
check "TX packet count grew under traffic" [ "$after" -gt "$before" ]

ksft_finish
