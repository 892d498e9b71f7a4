#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 100 load/unload cycles under traffic, with faults injected and recovery on,
# so probes fire and checks are queued while the module goes away.  Traffic
# must make progress in every cycle (bytes the client's sockets received, as
# ss reports them), and after the last.  The runner fails the test on any
# WARN/BUG/lockdep/KASAN line in dmesg.
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# it injects faults into every TCP socket of the host; a tsq_probe loaded
# before is reloaded with its parameters, one that was not is unloaded.
. "$(dirname "$0")/lib.sh"
require_disruptive "fault injection hits every TCP socket of the host"
require_tsq_probe
require_tcp_diag
require_cmd tc
CYCLES=${TSQ_CYCLES:-100}

rr_setup
res=$(mktemp -d)
on_exit "rm -rf $res"
rr_background "$res/traffic"
traffic=$TRAFFIC

# rx_bytes: payload bytes the client's connections have received so far.
rx_bytes() {
	ip netns exec "$NS_CLI" ss -Htni dst "$SRV_ADDR" |
		sed -n 's/.*bytes_received:\([0-9]*\).*/\1/p' | sum_ints
}
# progressed: more bytes received than $b0.
progressed() { [ "$(rx_bytes)" -gt "$b0" ]; }

# stuck: say what the traffic looks like (once), for the cycle that saw
# none; the loop stops after three such cycles in a row instead of
# crawling into the runner's timeout.
said=0
stuck() {
	[ "$said" -eq 0 ] || return 0
	said=1
	log "cycle $1: no progress; client $(kill -0 "$traffic" 2>/dev/null && echo alive || echo gone)," \
		"last output: $(tail -2 "$res/traffic" | tr '\n' ' ')"
	ip netns exec "$NS_CLI" ss -tnio dst "$SRV_ADDR" | sed 's/^/#   cli: /'
	ip netns exec "$NS_SRV" ss -tnio src "$SRV_ADDR" | sed 's/^/#   srv: /'
	[ -r /sys/kernel/tsq_probe/stats ] && log "stats: $(tr '\n' ' ' </sys/kernel/tsq_probe/stats)"
	log "qdisc: $(ip netns exec "$NS_SRV" tc -s qdisc show dev "$SRV_DEV" | tr '\n' ' ')"
	[ "$TOPO_KIND" != nic ] || nic_pair_state "$SRV_DEV" "$CLI_DEV"
}

# no_stamp_diag: for a cycle whose traffic moved but had no completion
# timed (twice on arm64, not explained): is it the net_dev_queue tracepoint
# itself (a trace event on it rides the same static branch) or what
# tsq_probe's probe does with it?  Traced in an instance of its own, so
# the host's own tracing is left alone; removed after.
no_stamp_diag() {
	local d ev n

	log "attach: xmit $(cat /sys/module/tsq_probe/parameters/xmit_attach)," \
		"wfree $(cat /sys/module/tsq_probe/parameters/wfree_attach)"
	d=$(tracefs_file instances) || { log "no tracefs instances: no more to say"; return 0; }
	d=$d/tailfix-cycles-$$
	mkdir "$d" 2>/dev/null && ev=$d/events/net/net_dev_queue/enable && [ -w "$ev" ] ||
		{ rmdir "$d" 2>/dev/null; log "no net_dev_queue event to trace"; return 0; }
	echo 1 >"$ev"
	wait_for 5 grep -q 'net_dev_queue:' "$d/trace"
	echo 0 >"$ev"
	n=$(grep -c 'net_dev_queue:' "$d/trace")
	log "net_dev_queue trace events within 5 s: $n; per CPU:" \
		"$(grep 'net_dev_queue:' "$d/trace" | grep -o '\[[0-9]*\]' | sort | uniq -c | tr -s ' \n' ' ')"
	log "txc_samples now $(tsq_stat txc_samples)"
	rmdir "$d"
}

done_cycles=0
moved=0
flowed=0
dead=0
for ((i = 0; i < CYCLES; i++)); do
	modprobe tsq_probe fault_inject=1 fault_ppm=300000 recover=1 || break
	b0=$(rx_bytes)
	# The requests go on while the module is loaded,
	if wait_for 10 progressed; then
		flowed=$((flowed + 1)) dead=0
	else
		stuck "$i"
		dead=$((dead + 1))
	fi
	# and once they have, the probes have seen it: a completion has been
	# timed.  (In this order: the traffic can sit out a retransmission
	# timeout at load time, and a probe cannot time what was not sent --
	# CI's arm64 guest once had no sample in the first 10 s of a cycle.)
	if wait_for 10 grep -q '^txc_samples [1-9]' /sys/kernel/tsq_probe/stats; then
		moved=$((moved + 1))
	elif [ "$moved" -eq "$i" ]; then
		log "cycle $i: traffic moved, no completion timed; stats: $(tr '\n' ' ' </sys/kernel/tsq_probe/stats)"
		no_stamp_diag
	fi
	modprobe -r tsq_probe || break
	done_cycles=$((done_cycles + 1))
	[ "$dead" -lt 3 ] || { log "no progress in 3 cycles in a row: stopping"; break; }
done
log "cycles: $done_cycles/$CYCLES, probes saw traffic in $moved, traffic progressed in $flowed"
check "$CYCLES load/unload cycles under traffic" cmp_num "$done_cycles" "==" "$CYCLES"
check "probes saw traffic in every cycle" cmp_num "$moved" "==" "$CYCLES"
check "traffic progressed in every cycle" cmp_num "$flowed" "==" "$CYCLES"
b0=$(rx_bytes)
check "traffic still flowing after the cycles" wait_for 10 progressed
kill "$traffic"
wait "$traffic" 2>/dev/null
check "module gone" test ! -e /sys/module/tsq_probe
ksft_finish
