#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Protective Load Balancing (issue 11, 2.1): where the kernel has PLB
# (6.2+), dctcp_fixed feeds it each window's marked share as in-tree dctcp
# does, so that a flow congested for net.ipv4.tcp_plb_rehash_rounds rounds
# is rehashed onto another path.  Judged by the kernel's own counter,
# TcpExtTCPPLBRehash of the sender's namespace, over a bulk flow through a
# bottleneck that CE-marks above 5 KB of queue (most packets of a flow that
# fills it):
#   - dctcp_fixed with net.ipv4.tcp_plb_enabled=1: rehashes (> 0);
#   - dctcp_fixed with it 0 (the default): none;
#   - in-tree dctcp with it 1, the reference: rehashes too.
# Everything is set in the test's own namespaces: no global change.
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip tc nstat python3
require_module tcp_dctcp_fixed
require_module tcp_dctcp
[ -e /proc/sys/net/ipv4/tcp_plb_enabled ] ||
	skip "PLB is not in kernel $(kver_series) (added in 6.2)"
PY=$TESTS_DIR/tsq_neutral.py
BYTES=${DCTCP_PLB_BYTES:-4194304}

topo_pair
ip netns exec "$NS_CLI" sysctl -qw net.ipv4.tcp_ecn=1
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_ecn=1
# Congested: a quarter of a round's packets marked (default a half), for 3
# rounds in a row (default 12), so that a short flow rehashes for sure.
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_plb_cong_thresh=64 net.ipv4.tcp_plb_rehash_rounds=3 ||
	fail "PLB sysctls of the sender's namespace"
qdisc_bottleneck "$NS_SRV" veth0 20mbit 5
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"
# One server per congestion control, set on its listening socket with
# TCP_CONGESTION (a namespace default other than init_net's must be in the
# global allowed list, which this test does not touch).
declare -A PORT=([dctcp_fixed]=6300 [dctcp]=6301)
for cc in dctcp_fixed dctcp; do
	ip netns exec "$NS_SRV" python3 "$PY" server --bind "$SRV_ADDR" --port "${PORT[$cc]}" \
		--mode bulk --bytes "$BYTES" --cc "$cc" --ready "$tmp/ready.$cc" >"$tmp/server.$cc" 2>&1 &
	on_exit "kill $!"
	wait_for 20 test -e "$tmp/ready.$cc" || fail "bulk server ($cc) did not start: $(tail -2 "$tmp/server.$cc")"
done

# rehashes CC PLB: one bulk flow sent with congestion control CC and
# tcp_plb_enabled=PLB in the sender's namespace; prints the
# TcpExtTCPPLBRehash delta there.
rehashes() {
	local r0 r1
	ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_plb_enabled="$2" || return 1
	r0=$(nstat_get "$NS_SRV" TcpExtTCPPLBRehash)
	ip netns exec "$NS_CLI" python3 "$PY" client --server "$SRV_ADDR" --port "${PORT[$1]}" \
		--mode bulk --bytes "$BYTES" >"$tmp/client" 2>&1 ||
		{ log "client ($1, plb $2): $(tail -2 "$tmp/client")"; return 1; }
	r1=$(nstat_get "$NS_SRV" TcpExtTCPPLBRehash)
	echo $((r1 - r0))
}

fixed_on=$(rehashes dctcp_fixed 1) || fail "dctcp_fixed flow with PLB on"
fixed_off=$(rehashes dctcp_fixed 0) || fail "dctcp_fixed flow with PLB off"
intree_on=$(rehashes dctcp 1) || fail "in-tree dctcp flow with PLB on"
log "TcpExtTCPPLBRehash: dctcp_fixed $fixed_on (PLB on), $fixed_off (PLB off); in-tree dctcp $intree_on (PLB on)"
check "in-tree dctcp rehashes a congested flow with PLB on (reference)" cmp_num "$intree_on" ">" 0
check "dctcp_fixed rehashes a congested flow with PLB on" cmp_num "$fixed_on" ">" 0
check "dctcp_fixed leaves the flow alone with PLB off (the default)" cmp_num "$fixed_off" "==" 0
ksft_finish
