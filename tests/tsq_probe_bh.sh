#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tcp_wfree() from task context with BH enabled, inside the sendmsg() that
# owns the socket: the hook must queue its suspect without a lock a softirq
# takes, and the check must wait for the owner instead of pushing under it.
# A sender writes as fast as it can while a blackhole route for the peer
# makes ip_queue_xmit() drop every skb inside tcp_sendmsg() (task context,
# BH enabled), so the tcp_wfree probe runs there; fault injection makes it
# queue suspects.  The stock kernels have no lockdep, so a deadlock itself
# cannot be reported: the test proves the path ran (txc_task), that the
# pushes sending nothing do not loop, that the flow recovers once the route
# is gone, and that dmesg stays clean (a softirq spinning on a lock would
# show as a soft lockup or RCU stall).
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# it injects faults into every TCP socket of the host; a tsq_probe loaded
# before is reloaded with its parameters, one that was not is unloaded.
. "$(dirname "$0")/lib.sh"
require_tsq_probe
require_disruptive "fault injection in tsq_probe"
require_cmd python3 nstat ss
PY=$TESTS_DIR/tsq_neutral.py
SECONDS_RUN=${TSQ_BH_SECONDS:-8}

topo_pair
res=$(mktemp -d)
on_exit "rm -rf $res"
dmesg_mark
modprobe tsq_probe fault_inject=1 fault_ppm=300000 recover=1 || fail "modprobe tsq_probe"

ip netns exec "$NS_SRV" python3 "$PY" server --bind "$SRV_ADDR" --port 6200 --mode blast \
	--seconds "$SECONDS_RUN" --once --ready "$res/ready" >"$res/server" 2>&1 &
srv=$!
on_exit "kill $srv"
wait_for 20 test -e "$res/ready" || fail "blast server did not start"
ip netns exec "$NS_CLI" python3 "$PY" client --server "$SRV_ADDR" --port 6200 --mode blast \
	>"$res/client" 2>&1 &
cli=$!
on_exit "kill $cli"
wait_for 10 grep -q '^txc_samples [1-9]' /sys/kernel/tsq_probe/stats || fail "no traffic seen"

task0=$(tsq_stat txc_task)
ip -n "$NS_SRV" route add blackhole "$CLI_ADDR/32" || fail "blackhole route"
wait_for 10 cmp_num "$(tsq_stat txc_task)" ">" "$task0"
# Keep the drops going a little longer: wait for 50 more task-context hits.
task1=$(tsq_stat txc_task)
wait_for 5 bash -c "[ \$(awk '\$1 == \"txc_task\" { print \$2 }' /sys/kernel/tsq_probe/stats) -gt $((task1 + 50)) ]"
# The client's segments in, while the route drops everything the server
# sends it: the recovery check counts from here.  (Read after the route
# was back, the flow could already have caught up and ended on the debug
# kernel, and the check then waited for segments that never came.)
in0=$(nstat_get "$NS_CLI" TcpInSegs)
ip -n "$NS_SRV" route del blackhole "$CLI_ADDR/32" || fail "deleting the blackhole"
cp /sys/kernel/tsq_probe/stats "$res/stats.drop"
log "stats during the drops: $(tr '\n' ' ' <"$res/stats.drop")"

check "tcp_wfree() ran in task context with BH enabled (txc_task $(kv "$res/stats.drop" txc_task))" \
	cmp_num "$(kv "$res/stats.drop" txc_task)" ">" "$task0"
log "suspects checked under the lock (any context): $(kv "$res/stats.drop" wakeup_checks)"
# A push that the route drops sends nothing; its skb completes and makes
# the socket a suspect again.  Pushing it again at once is a busy loop for
# as long as the route is gone (before repush_skipped: 186043 idle pushes
# in this test on 6.1); one idle push per socket and snd_nxt is the design.
idle=$(kv "$res/stats.drop" recoveries_idle)
check "no push loop under the blackhole: idle pushes ($idle) at most 20, skipped repushes $(kv "$res/stats.drop" repush_skipped)" \
	cmp_num "$idle" "<=" 20
flowing() { cmp_num "$(nstat_get "$NS_CLI" TcpInSegs)" ">" "$in0"; }
# The sender's next retransmission comes when its backed-off RTO fires
# (on the debug kernel the drops lasted long enough for a backoff past the
# 20 s this test used to allow): the kernel's own timer plus 20 s.
rto_s=$(ip netns exec "$NS_SRV" ss -Htin sport = :6200 |
	sed -n 's/.* rto:\([0-9.]*\).*/\1/p' | awk '{ s = int($1 / 1000) + 1; if (s > m) m = s } END { print m + 0 }')
log "sender's RTO when the route came back: up to ${rto_s} s"
check "the flow recovers once the route is back (within the sender's RTO + 20 s)" \
	wait_for $((rto_s + 20)) flowing
check "sender finished" wait_for $((SECONDS_RUN + 30)) bash -c "! kill -0 $srv 2>/dev/null"
log "server: $(tr '\n' ' ' <"$res/server"), client: $(tr '\n' ' ' <"$res/client")"
check "rmmod tsq_probe" modprobe -r tsq_probe
check "dmesg clean (no soft lockup, RCU stall, WARN)" dmesg_clean
ksft_finish
