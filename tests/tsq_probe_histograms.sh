#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq_probe's TX-completion histograms stay right where the same skb, or no
# skb at all, reaches tcp_wfree() the simple way.  A 1 MiB TCP flow from a
# server namespace to a client namespace over:
#   bridge    the sender's address on a bridge, a veth enslaved to it: the
#             same skb is queued twice (br0, then the veth that completes
#             it).  It is timed once, on the veth, and is no eviction.
#   gso       a veth with TSO off: the kernel segments each GSO skb in
#             software and the segments complete, never the skb itself: it
#             is not timed (txc_sw_gso), and leaves no stamp behind.  (The
#             segments go to the driver from inside __dev_queue_xmit(),
#             past the probe: they are not timed either.)
#   vxlan     a VXLAN tunnel over a veth: the skb is queued on vxlan0, then
#             encapsulated (its transport header now UDP) on the veth.
#   churn     64 short-lived veth pairs, one after the other: each gets its
#             histogram (dev_slots_full stays 0), and the slot of a deleted
#             device is freed: none of them is left in
#             /proc/tsq_probe/histograms.
# Evictions are judged against the sample: at most 1% of txc_samples + 2.
. "$(dirname "$0")/lib.sh"
require_tsq_probe
require_disruptive "loads and unloads tsq_probe"
require_cmd python3 ethtool
PY=$TESTS_DIR/tsq_neutral.py
BYTES=1048576
PORT=6200
CHURN=${TSQ_HIST_CHURN:-64}
S=/sys/kernel/tsq_probe

res=$(mktemp -d)
on_exit "rm -rf $res"
new_ns NS_CLI
new_ns NS_SRV
ip netns exec "$NS_SRV" python3 "$PY" server --port "$PORT" --mode bulk --bytes "$BYTES" \
	--ready "$res/ready" >"$res/server" 2>&1 &
on_exit "kill $!"
wait_for 20 test -e "$res/ready" || fail "bulk server did not start"

# Every skb timed (txc_sample=1): each device's histogram is judged, not the draw.
modprobe tsq_probe txc_sample=1 || fail "modprobe tsq_probe txc_sample=1"

# veth_link SRV_DEV CLI_DEV: a veth pair, SRV_DEV in NS_SRV, CLI_DEV in NS_CLI, up.
veth_link() {
	ip -n "$NS_SRV" link add "$1" type veth peer name "$2" netns "$NS_CLI" || fail "veth $1/$2"
	ip -n "$NS_SRV" link set "$1" up
	ip -n "$NS_CLI" link set "$2" up
}

# flow ADDR OUT: the client fetches BYTES from the server at ADDR; the
# module's stats and histograms right after it go to OUT.stats, OUT.hist.
flow() {
	echo 1 >"$S/reset"
	ip netns exec "$NS_CLI" python3 "$PY" client --server "$1" --port "$PORT" \
		--mode bulk --bytes "$BYTES" >"$2" 2>&1 || { log "client to $1: $(tail -2 "$2")"; return 1; }
	cp "$S/stats" "$2.stats"
	cp "$S/histograms" "$2.hist"
}

# hist_has OUT DEV: the histograms of OUT have a non-empty txc_ns for DEV.
hist_has() { awk -v d="$2" '$1 == "hist" && $2 == "txc_ns" && $3 == d && $5 > 0 { f = 1 } END { exit !f }' "$1.hist"; }

# few_evictions OUT: txc_evicted at most 1% of txc_samples + 2.
few_evictions() {
	local n e
	n=$(kv "$1.stats" txc_samples) e=$(kv "$1.stats" txc_evicted)
	log "$(basename "$1"): txc_samples $n txc_evicted $e txc_sw_gso $(kv "$1.stats" txc_sw_gso)"
	cmp_num "$n" ">" 0 && cmp_num "$e" "<=" "$((n / 100 + 2))"
}

# ---- bridge --------------------------------------------------------------------
veth_link b0 b0c
ip -n "$NS_SRV" link add br0 type bridge || fail "bridge"
ip -n "$NS_SRV" link set b0 master br0
ip -n "$NS_SRV" link set br0 up
ip -n "$NS_SRV" addr add 198.19.1.2/24 dev br0
ip -n "$NS_CLI" addr add 198.19.1.1/24 dev b0c
wait_for 10 ip netns exec "$NS_CLI" ping -c1 -W1 198.19.1.2 >/dev/null || fail "no path over the bridge"
flow 198.19.1.2 "$res/bridge" || fail "flow over the bridge"
check "bridge: the skb timed once, on the veth that completes it" hist_has "$res/bridge" b0
check "bridge: queued twice is not an eviction" few_evictions "$res/bridge"

# ---- software GSO --------------------------------------------------------------
veth_link g0 g0c
ip netns exec "$NS_SRV" ethtool -K g0 tso off >/dev/null 2>&1 || fail "ethtool -K g0 tso off"
ip -n "$NS_SRV" addr add 198.19.2.2/24 dev g0
ip -n "$NS_CLI" addr add 198.19.2.1/24 dev g0c
wait_for 10 ip netns exec "$NS_CLI" ping -c1 -W1 198.19.2.2 >/dev/null || fail "no path over g0"
flow 198.19.2.2 "$res/gso" || fail "flow with TSO off"
check "gso: skbs segmented in software are counted, not timed (txc_sw_gso)" \
	cmp_num "$(kv "$res/gso.stats" txc_sw_gso)" ">" 0
check "gso: no stale stamps evicting later skbs" few_evictions "$res/gso"

# ---- VXLAN ---------------------------------------------------------------------
veth_link u0 u0c
ip -n "$NS_SRV" addr add 198.19.3.2/24 dev u0
ip -n "$NS_CLI" addr add 198.19.3.1/24 dev u0c
ip -n "$NS_SRV" link add vx0 type vxlan id 42 remote 198.19.3.1 local 198.19.3.2 dstport 4789 dev u0 ||
	fail "vxlan"
ip -n "$NS_CLI" link add vx0c type vxlan id 42 remote 198.19.3.2 local 198.19.3.1 dstport 4789 dev u0c ||
	fail "vxlan"
ip -n "$NS_SRV" addr add 198.19.4.2/24 dev vx0
ip -n "$NS_CLI" addr add 198.19.4.1/24 dev vx0c
ip -n "$NS_SRV" link set vx0 up
ip -n "$NS_CLI" link set vx0c up
wait_for 10 ip netns exec "$NS_CLI" ping -c1 -W1 198.19.4.2 >/dev/null || fail "no path over VXLAN"
flow 198.19.4.2 "$res/vxlan" || fail "flow over VXLAN"
check "vxlan: the encapsulated skb timed on the underlay veth" hist_has "$res/vxlan" u0
check "vxlan: queued twice is not an eviction" few_evictions "$res/vxlan"

# ---- 64 short-lived veths ------------------------------------------------------
missing="" full=0
for ((i = 0; i < CHURN; i++)); do
	veth_link "c$i" "c${i}c"
	ip -n "$NS_SRV" addr add "198.19.100.2/24" dev "c$i"
	ip -n "$NS_CLI" addr add "198.19.100.1/24" dev "c${i}c"
	if ! wait_for 10 ip netns exec "$NS_CLI" ping -c1 -W1 198.19.100.2 >/dev/null ||
		! flow 198.19.100.2 "$res/churn" || ! hist_has "$res/churn" "c$i"; then
		missing="$missing c$i"
	fi
	f=$(kv "$res/churn.stats" dev_slots_full 2>/dev/null)
	full=$((full + ${f:-0}))
	rm -f "$res/churn.stats"
	# the device goes, and its slot with it
	ip -n "$NS_SRV" link del "c$i"
done
log "churn: devices without a histogram:${missing:- none}"
check "churn: each of $CHURN veths, one after the other, got its histogram" test -z "$missing"
check "churn: no device found every slot taken (dev_slots_full)" \
	cmp_num "$full" "==" 0
# churn_freed: no histogram of a deleted c<i> left in the full file.
churn_freed() {
	! awk '$1 == "hist" && $2 == "txc_ns" && $3 ~ /^c[0-9]+$/ { print "# still there: " $0; f = 1 } END { exit !f }' \
		/proc/tsq_probe/histograms
}
check "churn: the slots of the deleted veths are free again" churn_freed
ksft_finish
