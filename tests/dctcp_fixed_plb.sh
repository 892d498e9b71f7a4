#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Protective Load Balancing: where the kernel has PLB (6.2+), dctcp_fixed
# drives it as in-tree dctcp does.  Judged by the kernel's own counter,
# TcpExtTCPPLBRehash of the sender's namespace, never by timing.
#
# Forced rehash: each window's marked share feeds PLB, so that a flow
# congested for net.ipv4.tcp_plb_rehash_rounds rounds is rehashed onto
# another path.  A bulk flow through a bottleneck that CE-marks above 5 KB
# of queue (most packets of a flow that fills it):
#   - dctcp_fixed with net.ipv4.tcp_plb_enabled=1: rehashes (> 0);
#   - dctcp_fixed with it 0 (the default): none;
#   - in-tree dctcp with it 1, the reference: rehashes too.
#
# Idle rehash: PLB prefers to repath when nothing is in flight, so in-tree
# dctcp asks it again when a flight starts from idle (CA_EVENT_TX_START).
# Where tcp_ack() calls in_ack_event after cleaning the retransmit queue
# (Debian's 6.1 and 6.12, 7.3) the ACK that empties a flight already sees
# nothing in flight and makes the idle rehash itself; the check at TX_START
# then adds one where the conditions changed while the flow was idle (a PLB
# pause after an RTO ended, the sysctls).  The test changes the sysctl:
# request/response traffic on one connection (dctcp_fixed_plb.py), no
# bottleneck, every round counted as congested (tcp_plb_cong_thresh=0),
# forced rehashes out of reach (tcp_plb_rehash_rounds=31); per cycle
#   1. tcp_plb_idle_rehash_rounds=0: a reply, ACKed in full: no rehash;
#   2. tcp_plb_idle_rehash_rounds=1 while idle, then a second reply: the
#      check at its TX_START rehashes, and (on the kernels above) so does
#      the ACK that empties its flight.
#   - in-tree dctcp, the reference: at least one rehash per cycle;
#   - dctcp_fixed: as many as in-tree dctcp (a module without the check at
#     TX_START, test mutant 7 in tests/mutants/dctcp, has one per cycle
#     less, and fails);
#   - dctcp_fixed with tcp_plb_idle_rehash_rounds=0 in both steps: none
#     (the rehashes above are the idle ones).
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

# ---- idle rehash at CA_EVENT_TX_START ----
RPC_PY=$TESTS_DIR/dctcp_fixed_plb.py
CYCLES=${DCTCP_PLB_CYCLES:-5}
REPLY=10000
# no marking here: every round counts as congested by the threshold alone
tc -n "$NS_SRV" qdisc del dev veth0 root 2>/dev/null
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_plb_enabled=1 net.ipv4.tcp_plb_cong_thresh=0 \
	net.ipv4.tcp_plb_rehash_rounds=31 net.ipv4.tcp_plb_idle_rehash_rounds=0 ||
	fail "PLB idle-rehash sysctls of the sender's namespace"
declare -A RPORT=([dctcp_fixed]=6310 [dctcp]=6311)
for cc in dctcp_fixed dctcp; do
	ip netns exec "$NS_SRV" python3 "$RPC_PY" server --bind "$SRV_ADDR" --port "${RPORT[$cc]}" \
		--cc "$cc" --reply "$REPLY" --ready "$tmp/rready.$cc" >"$tmp/rserver.$cc" 2>&1 &
	on_exit "kill $!"
	wait_for 20 test -e "$tmp/rready.$cc" || fail "RPC server ($cc) did not start: $(tail -2 "$tmp/rserver.$cc")"
done

# flight_empty PORT: the server's connection on PORT has sent data and has
# nothing unacknowledged (ss shows unacked: only when it is not 0).
flight_empty() {
	local st
	st=$(ip netns exec "$NS_SRV" ss -Htin state established "( sport = :$1 )") &&
		[[ $st == *bytes_acked:* && $st != *unacked:* ]]
}

# rpc PORT: one RPC of the running client, then the server's flight ACKed.
rpc() {
	local line
	echo go >&"${CL[1]}" && read -r -t 30 line <&"${CL[0]}" && [[ $line == done* ]] ||
		{ log "RPC client: no reply (${line:-nothing read})" >&2; return 1; }
	wait_for 20 flight_empty "$1" || { log "server on port $1: flight not ACKed in 20 s" >&2; return 1; }
}

# idle_rehashes CC IDLE: CYCLES cycles of step 1 (tcp_plb_idle_rehash_rounds
# 0) and step 2 (IDLE) on one connection served with CC; prints the
# TcpExtTCPPLBRehash delta of the sender's namespace.
idle_rehashes() {
	local r0 r1 i port=${RPORT[$1]} rc=0
	coproc CL { ip netns exec "$NS_CLI" python3 "$RPC_PY" client --server "$SRV_ADDR" \
		--port "$port" --reply "$REPLY" 2>"$tmp/rclient"; }
	r0=$(nstat_get "$NS_SRV" TcpExtTCPPLBRehash)
	for ((i = 0; i < CYCLES; i++)); do
		ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_plb_idle_rehash_rounds=0 &&
			rpc "$port" &&
			ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_plb_idle_rehash_rounds="$2" &&
			rpc "$port" || { rc=1; break; }
	done
	r1=$(nstat_get "$NS_SRV" TcpExtTCPPLBRehash)
	eval "exec ${CL[1]}>&-"
	wait "$CL_PID"
	[ "$rc" = 0 ] || { log "RPC client ($1): $(tail -2 "$tmp/rclient")" >&2; return 1; }
	echo $((r1 - r0))
}

intree_idle=$(idle_rehashes dctcp 1) || fail "in-tree dctcp RPCs"
fixed_idle=$(idle_rehashes dctcp_fixed 1) || fail "dctcp_fixed RPCs"
fixed_noidle=$(idle_rehashes dctcp_fixed 0) || fail "dctcp_fixed RPCs without idle rehash"
log "TcpExtTCPPLBRehash over $CYCLES cycles: in-tree dctcp $intree_idle, dctcp_fixed $fixed_idle; dctcp_fixed with tcp_plb_idle_rehash_rounds=0 throughout: $fixed_noidle"
check "in-tree dctcp makes an idle rehash in each cycle (reference)" cmp_num "$intree_idle" ">=" "$CYCLES"
check "dctcp_fixed makes as many idle rehashes as in-tree dctcp" cmp_num "$fixed_idle" "==" "$intree_idle"
check "dctcp_fixed: no rehash with idle rehash off (those were idle rehashes)" cmp_num "$fixed_noidle" "==" 0
ksft_finish
