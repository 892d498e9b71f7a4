#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dctcp_fixed at packet level (issue 3, items 2a-2d).  A scapy peer on an
# AF_PACKET socket (dctcp_fixed_peer.py) plays the remote TCP; the kernel
# under test runs dctcp_fixed in its own namespace:
#
#   NS_K 198.18.0.1 veth0 <-> veth0 NS_P (no address: the peer kernel stays
#   silent; the peer script answers for 198.18.0.2)
#
#   2a  CWR-marked data is ACKed at once in delayed-ACK (ping-pong) mode,
#       against a segment without CWR, delayed, in the same run (medians;
#       before each timed segment, request/response rounds until the
#       request's ACK rides on the reply, i.e. the kernel is in ping-pong);
#   2b  ECE echo is exact: CE on segments 3, 4 and 7 of 10; every ACK covers
#       segments of one CE state with ECE equal to it and every CE change ends
#       an ACK; the same check must fail against cubic (classic ECN latches
#       ECE), which shows the checker can see the difference;
#   2c  the netdev trace: CE on the last request segment, the reply carries
#       ECE, the next request starts with CWR: no duplicate ACK, no
#       retransmission, no delayed ACK; and the ACK-on-data-then-CE sequence;
#
#   In every receiver case a duplicate ACK is one in the sense of RFC 5681
#   (no data, no SYN/FIN, same ACK number and window as the last ACK, while
#   the peer has data outstanding), and an ACK for old data that does not
#   open the window counts with it; window updates and repeats of an ACK
#   with nothing outstanding are only reported (dctcp_fixed_peer.py).
#   2d  sender: ECE on the reply with nothing in flight; the next request's
#       first flight is at least min_cwnd_after_ce segments (run with 4, and
#       with the default 2), in-tree dctcp alongside for comparison.

. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip ethtool python3 tc
python3 -c 'import scapy.all' 2>/dev/null || skip "python3 scapy not installed"
require_module tcp_dctcp_fixed

PARAMS=/sys/module/tcp_dctcp_fixed/parameters
PEER="$TESTS_DIR/dctcp_fixed_peer.py"
KIP=198.18.0.1
PIP=198.18.0.2

new_ns NS_K
new_ns NS_P
ip link add veth0 netns "$NS_K" type veth peer name veth0 netns "$NS_P" || fail "veth pair"
for ns in "$NS_K" "$NS_P"; do
	ip netns exec "$ns" ethtool -K veth0 tso off gso off gro off >/dev/null 2>&1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip -n "$ns" link set veth0 up
done
ip -n "$NS_K" addr add "$KIP/24" dev veth0
ip netns exec "$NS_K" sysctl -qw net.ipv4.tcp_ecn=1
KMAC=$(ip netns exec "$NS_K" cat /sys/class/net/veth0/address)
PMAC=$(ip netns exec "$NS_P" cat /sys/class/net/veth0/address)
ip -n "$NS_K" neigh replace "$PIP" lladdr "$PMAC" dev veth0 nud permanent
wait_for 10 sh -c "ip -n $NS_K link show veth0 | grep -q LOWER_UP" || fail "veth not up"

port=5100
# peer CASE CC [args...]: run one case; its output goes to $OUT.
peer() {
	local case=$1 cc=$2
	shift 2
	port=$((port + 1))
	OUT=$(ip netns exec "$NS_P" python3 "$PEER" --case "$case" --cc "$cc" \
		--kns "$NS_K" --kip "$KIP" --kmac "$KMAC" --pip "$PIP" \
		--kport "$port" --pport $((port + 30000)) "$@" 2>&1)
	local rc=$?
	printf '%s\n' "$OUT" | sed -n 's/^# /#   /p; s/^RESULT /#   RESULT /p'
	return $rc
}
stat() { cat "$PARAMS/stat_$1"; }
result() { printf '%s\n' "$OUT" | sed -n "s/^RESULT .*$1=\([^ ]*\).*/\1/p"; }

dmesg_mark

# 2a
log "2a: CWR-marked data in ping-pong mode (dctcp_fixed receiver)"
check "2a CWR-marked data ACKed at once, plain segment delayed" peer delack dctcp_fixed --trials 5

# 2b
log "2b: CE on segments 3, 4, 7 of 10 (dctcp_fixed receiver)"
s0=$(stat ce_change_acks)
check "2b ECE echo follows CE changes exactly" peer ce-pattern dctcp_fixed --pattern 0011001000 --trials 3
s1=$(stat ce_change_acks)
log "stat_ce_change_acks: $s0 -> $s1, stat_prior_run_acks: $(stat prior_run_acks)"
check "2b immediate ACKs on CE change counted" test "$s1" -ge $((s0 + 3 * 4))
check "2b ECE echo exact for CE on 1, 5, 6, 10 too" peer ce-pattern dctcp_fixed --pattern 1000110001 --trials 2
log "2b control: the same check against cubic must find the latched ECE"
if peer ce-pattern cubic --pattern 0011001000 --trials 1 >/dev/null; then
	check "2b checker detects inexact ECE (cubic control)" false
else
	check "2b checker detects inexact ECE (cubic control)" true
fi

# 2c
log "2c: CE on the last request segment, ECE on the reply, CWR on the next"
check "2c no duplicate ACK, no retransmission, CWR segment ACKed at once" peer trace dctcp_fixed --trials 4

# 2d
orig=$(cat "$PARAMS/min_cwnd_after_ce")
on_exit "echo $orig > $PARAMS/min_cwnd_after_ce"
echo 4 >"$PARAMS/min_cwnd_after_ce"
f0=$(stat floor_applied)
peer sender dctcp_fixed --trials 5
rc=$?
fixed4=$(result flights)
f1=$(stat floor_applied)
check "2d dctcp_fixed (min_cwnd_after_ce=4): first flight >= 4 segments" \
	test "$rc" -eq 0 -a "$(result min)" -ge 4 2>/dev/null
log "stat_floor_applied: $f0 -> $f1"
echo 2 >"$PARAMS/min_cwnd_after_ce"
peer sender dctcp_fixed --trials 5
rc=$?
fixed2=$(result flights)
check "2d dctcp_fixed (min_cwnd_after_ce=2): first flight >= 2 segments" \
	test "$rc" -eq 0 -a "$(result min)" -ge 2 2>/dev/null
echo "$orig" >"$PARAMS/min_cwnd_after_ce"
if modprobe tcp_dctcp 2>/dev/null; then
	peer sender dctcp --trials 5
	intree=$(result flights)
	log "2d first flight after ECE with nothing in flight, segments per round:"
	log "    dctcp_fixed min_cwnd_after_ce=4: $fixed4"
	log "    dctcp_fixed min_cwnd_after_ce=2: $fixed2"
	log "    in-tree dctcp:                   ${intree:-?}"
	check "2d in-tree dctcp measured alongside" test -n "$intree"
else
	check_skip "2d in-tree dctcp measured alongside" "tcp_dctcp not available"
fi

check "dmesg clean" dmesg_clean
ksft_finish
