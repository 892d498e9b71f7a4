#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A pure ACK below TCP is not "a TX completion will come".  A pure ACK is
# charged 2 to sk_wmem_alloc and freed by __sock_wfree(), which never wakes
# TSQ; a socket whose only bytes below TCP are pure ACKs is stalled all the
# same.  Per round (tsq_pureack.py), behind a slow token bucket: the
# server writes a two-segment body, sends the ACK of a 1-byte message from
# the client (queued behind the body's second segment), then a trailer
# that autocorks.  Every TX completion misses TSQ_THROTTLED (fault_ppm
# 1000000), so when the second segment completes only that ACK is below:
# a lost wake-up the module must detect and recover in most rounds.  A
# module that counts any charge above the socket's own unit as "something
# below" (mutant 5, tests/mutants/tsq_probe/mutant5.patch) sees none.
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says
# why): fault injection hits every TCP socket of the host; tsq_probe is
# unloaded at the end (a tsq_probe loaded before is reloaded as it was).
. "$(dirname "$0")/lib.sh"
require_disruptive "fault injection hits every TCP socket of the host"
require_tsq_probe
require_cmd tc ethtool python3 nstat
PY=$TESTS_DIR/tsq_pureack.py
ROUNDS=${TSQ_PUREACK_ROUNDS:-20}

topo_pair
res=$(mktemp -d)
on_exit "rm -rf $res"
# One MSS per skb, and a bucket that lets one segment (and an ACK) through
# and holds the next for about 100 ms (100 kbit/s); the client's 200 ms
# between rounds fills it again.
ip netns exec "$NS_SRV" ethtool -K veth0 tso off gso off >/dev/null 2>&1 ||
	fail "cannot turn TSO/GSO off on the server's veth"
ip netns exec "$NS_SRV" tc qdisc replace dev veth0 root tbf rate 100kbit burst 1800 latency 2s ||
	fail "tbf on the server's veth"
mkfifo "$res/fifo" || fail "mkfifo"

modprobe tsq_probe fault_inject=1 || fail "modprobe tsq_probe fault_inject=1"
echo 1 >/sys/kernel/tsq_probe/reset
echo 1000000 >/sys/module/tsq_probe/parameters/fault_ppm
k0=$(nstat_get "$NS_SRV" TcpExtTCPAutoCorking)
ip netns exec "$NS_SRV" python3 "$PY" server --bind "$SRV_ADDR" --port 6200 \
	--fifo "$res/fifo" --ready "$res/ready" >"$res/server" 2>&1 &
on_exit "kill $!"
wait_for 20 test -e "$res/ready" || fail "server did not start"
ip netns exec "$NS_CLI" timeout 120 python3 "$PY" client --server "$SRV_ADDR" --port 6200 \
	--fifo "$res/fifo" --rounds "$ROUNDS" >"$res/client" 2>&1 ||
	fail "client: $(tail -3 "$res/client")"
echo 0 >/sys/module/tsq_probe/parameters/fault_ppm
k1=$(nstat_get "$NS_SRV" TcpExtTCPAutoCorking)
cp /sys/kernel/tsq_probe/stats "$res/stats"
log "stats: $(tr '\n' ' ' <"$res/stats")"
log "kernel TcpExtTCPAutoCorking delta $((k1 - k0)) in $ROUNDS rounds"

check "the trailers autocorked (kernel counter, at least half the rounds)" \
	cmp_num "$((k1 - k0))" ">=" "$((ROUNDS / 2))"
check "faults injected" cmp_num "$(kv "$res/stats" faults_injected)" ">" 0
check "lost wake-ups with only a pure ACK below: at least half the rounds ($(kv "$res/stats" lost_wakeups))" \
	cmp_num "$(kv "$res/stats" lost_wakeups)" ">=" "$((ROUNDS / 2))"
check "recovered ($(kv "$res/stats" recoveries))" \
	cmp_num "$(kv "$res/stats" recoveries)" ">=" "$((ROUNDS / 2))"
ksft_finish
