#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dctcp_fixed's algorithm (issue 3, item 2e): a long flow through a link that
# CE-marks a known share of the packets (netem "loss P% ecn" marks ECT
# packets with probability P instead of dropping them; segmentation offloads
# are off so one skb is one packet).  alpha, read with TCP_CC_INFO from the
# sending socket, must converge to that share, and each cwnd reduction seen
# (ca_state Open -> CWR) must set ssthresh to cwnd * (1 - alpha / 2).
# Two shares in the same run, so a module that ignored the share, or halved
# like Reno, fails.

. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip tc ethtool python3
require_module tcp_dctcp_fixed
HELPER="$TESTS_DIR/dctcp_fixed_alpha.py"
PARAMS=/sys/module/tcp_dctcp_fixed/parameters
SECS=${DCTCP_ALPHA_SECS:-8}
TOL=${DCTCP_ALPHA_TOL:-0.4}

topo_pair
ip netns exec "$NS_CLI" ethtool -K veth0 tso off gso off >/dev/null 2>&1 ||
	skip "cannot turn segmentation offloads off on veth"
tmp=$(mktemp -d)
on_exit rm -rf "$tmp"
dmesg_mark

port=5300
for pct in 5 20; do
	port=$((port + 1))
	ip netns exec "$NS_CLI" tc qdisc replace dev veth0 root netem delay 2ms loss "$pct%" ecn ||
		skip "netem with ecn marking not available"
	log "share ${pct}%: netem delay 2ms loss ${pct}% ecn on the sender's link, ${SECS} s flow"
	r0=$(cat "$PARAMS/stat_ecn_reductions")
	ip netns exec "$NS_SRV" python3 "$HELPER" sink "$port" dctcp_fixed "$tmp/ready-$port" &
	sink=$!
	wait_for 30 test -e "$tmp/ready-$port" || fail "sink did not start"
	ip netns exec "$NS_CLI" python3 "$HELPER" send "$SRV_ADDR" "$port" dctcp_fixed "$SECS" "$tmp/s$pct"
	wait "$sink"
	r1=$(cat "$PARAMS/stat_ecn_reductions")
	out=$(python3 "$HELPER" analyse "$tmp/s$pct" "0.$(printf '%02d' "$pct")" 0.4 "$TOL" 2)
	rc=$?
	printf '%s\n' "$out" | sed 's/^RESULT /# RESULT /'
	log "stat_ecn_reductions: $r0 -> $r1"
	eval "alpha_$pct=$(printf '%s\n' "$out" | sed -n 's/^RESULT alpha_mean=\([^ ]*\).*/\1/p')"
	check "2e ${pct}% marked: alpha converges to the share, reductions are cwnd*(1-alpha/2)" test "$rc" -eq 0
	check "2e ${pct}% marked: ECN reductions counted" test "$r1" -gt "$r0"
done
check "2e alpha orders the shares (20% > 2 x 5%)" cmp_num "${alpha_20:-0}" ">" "$(awk -v a="${alpha_5:-1}" 'BEGIN{print 2*a}')"
check "dmesg clean" dmesg_clean
ksft_finish
