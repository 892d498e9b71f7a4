#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq_probe changes nothing and does nothing when nothing is wrong
# (defaults but txc_sample=1, no fault).  Writers that ask TCP to hold or
# pace data, and the request/response and small-write traffic the module
# exists for, each run
# without and then with the module in the same guest:
#   msgmore   100 bytes with MSG_MORE under TCP_NODELAY on an idle
#             connection, the rest 60 ms later: the first bytes must not
#             leave early (tcp_push() turns MSG_MORE into a local
#             TCP_NAGLE_CORK that tp->nonagle does not show);
#   paced     SO_MAX_PACING_RATE: TCP's internal pacing timer holds data;
#   sendfile  splice chunks with MSG_MORE / MSG_SENDPAGE_NOTLAST;
#   bulk      64 KiB writes: TSO auto-deferral waits for ACKs;
#   rr        requests answered with a body and a trailer (two writes);
#   small     64-byte writes under TCP_NODELAY.
# over four paths, where TX completes inside the sender's own transmit:
#   veth      a veth pair between two namespaces;
#   lo        loopback, client and server in one namespace;
#   bridge    the server sends through a bridge whose port is a veth;
#   nsflow    every flow in a pair of namespaces of its own.
# For each: the same number of segments on the wire (nstat TcpOutSegs of
# the sender's namespace) within 5% + 4 where that count is set by the
# writes (segs_unjudged says where not), and no action of the module:
# lost_wakeups, recoveries, checks_rearmed and late_cork_releases all 0;
# wakeup_checks (a suspect checked under the socket lock, no action by
# itself) at most WAKEUP_CHECK_PPM parts per million of the completions
# timed, plus 2.
. "$(dirname "$0")/lib.sh"
require_tsq_probe
require_disruptive "loads and unloads tsq_probe"
require_cmd nstat python3
PY=$TESTS_DIR/tsq_neutral.py
ROUNDS=${TSQ_NEUTRAL_ROUNDS:-20}
WAKEUP_CHECK_PPM=10000

res=$(mktemp -d)
on_exit "rm -rf $res"

# FLOW_ARGS: the tsq_neutral.py arguments of each flow.
declare -A FLOW_ARGS=(
	[msgmore]="--mode msgmore --rounds $ROUNDS --gap-ms 60"
	[paced]="--mode paced --bytes 1048576 --rate 2097152"
	[sendfile]="--mode sendfile --bytes 4194304"
	[bulk]="--mode bulk --bytes 4194304"
	[rr]="--mode rr --rounds 300"
	[small]="--mode small --bytes 262144"
)
FLOWS="msgmore paced sendfile bulk rr small"
TOPOS="veth lo bridge nsflow"

# veth_ns_pair SRV_VAR CLI_VAR NET: two new namespaces joined by a veth
# pair, server 198.18.NET.2 (dev eth0), client 198.18.NET.1.
veth_ns_pair() {
	new_ns "$1"
	new_ns "$2"
	local s=${!1} c=${!2}
	ip -n "$c" link add eth0 type veth peer name eth0 netns "$s" || fail "veth pair"
	ip -n "$s" addr add "198.18.$3.2/24" dev eth0
	ip -n "$c" addr add "198.18.$3.1/24" dev eth0
	ip -n "$s" link set eth0 up
	ip -n "$c" link set eth0 up
}

# Where each (topology, flow) runs: server and client namespace, address.
declare -A SNS CNS ADDR PORT
topo_pair
new_ns NS_LO
veth_ns_pair NS_BSRV NS_BCLI 5
# The server's address on a bridge whose port is its end of the veth.
ip -n "$NS_BSRV" addr flush dev eth0
ip -n "$NS_BSRV" link add br0 type bridge || fail "no bridge device"
ip -n "$NS_BSRV" link set eth0 master br0
ip -n "$NS_BSRV" addr add 198.18.5.2/24 dev br0
ip -n "$NS_BSRV" link set br0 up
net=10
for f in $FLOWS; do
	veth_ns_pair "NSF_$f" "NSC_$f" "$net"
	vs=NSF_$f vc=NSC_$f
	SNS[nsflow.$f]=${!vs} CNS[nsflow.$f]=${!vc} ADDR[nsflow.$f]=198.18.$net.2
	SNS[veth.$f]=$NS_SRV CNS[veth.$f]=$NS_CLI ADDR[veth.$f]=$SRV_ADDR
	SNS[lo.$f]=$NS_LO CNS[lo.$f]=$NS_LO ADDR[lo.$f]=127.0.0.1
	SNS[bridge.$f]=$NS_BSRV CNS[bridge.$f]=$NS_BCLI ADDR[bridge.$f]=198.18.5.2
	net=$((net + 1))
done

port=6100
for t in $TOPOS; do
	for f in $FLOWS; do
		k=$t.$f
		wait_for 10 ip netns exec "${CNS[$k]}" ping -c1 -W1 "${ADDR[$k]}" >/dev/null ||
			fail "$k: no connectivity to ${ADDR[$k]}"
		PORT[$k]=$port
		# shellcheck disable=SC2086
		ip netns exec "${SNS[$k]}" python3 "$PY" server --bind "${ADDR[$k]}" --port "$port" \
			${FLOW_ARGS[$f]} --ready "$res/ready.$k" >"$res/server.$k" 2>&1 &
		on_exit "kill $!"
		wait_for 20 test -e "$res/ready.$k" || fail "server $k did not start"
		port=$((port + 1))
	done
done

# run_flow KEY OUT: one client run; OUT gets the client's lines plus segs=.
run_flow() {
	local k=$1 out=$2 s0 s1
	s0=$(nstat_get "${SNS[$k]}" TcpOutSegs)
	# shellcheck disable=SC2086
	ip netns exec "${CNS[$k]}" python3 "$PY" client --server "${ADDR[$k]}" --port "${PORT[$k]}" \
		${FLOW_ARGS[${k#*.}]} >"$out" || { log "$k client failed: $(tail -3 "$out")"; return 1; }
	s1=$(nstat_get "${SNS[$k]}" TcpOutSegs)
	echo "segs=$((s1 - s0))" >>"$out"
}

for t in $TOPOS; do
	for f in $FLOWS; do
		run_flow "$t.$f" "$res/$t.$f.base" || fail "$t $f without the module"
		log "$t $f without tsq_probe: $(tr '\n' ' ' <"$res/$t.$f.base")"
	done
done

# Every skb timed (txc_sample=1), so that each flow, however short, shows
# the probes saw it; the draw of txc_sample decides only which skbs get a
# clock, nothing the action counters below depend on.
modprobe tsq_probe txc_sample=1 || fail "modprobe tsq_probe txc_sample=1"
for t in $TOPOS; do
	for f in $FLOWS; do
		k=$t.$f
		echo 1 >/sys/kernel/tsq_probe/reset
		run_flow "$k" "$res/$k.mod" || fail "$t $f with the module"
		cp /sys/kernel/tsq_probe/stats "$res/$k.stats"
		log "$t $f with tsq_probe: $(tr '\n' ' ' <"$res/$k.mod")"
		log "$t $f stats: $(tr '\n' ' ' <"$res/$k.stats")"
	done
done

# same_segs BASE MOD: MOD within 5% + 4 of BASE (a handshake, a FIN, a
# window probe or two may differ between runs; an early push per request
# or per chunk does not fit).
same_segs() { cmp_num "$2" ">=" "$(($1 - $1 / 20 - 4))" && cmp_num "$2" "<=" "$(($1 + $1 / 20 + 4))"; }

# segs_unjudged TOPO FLOW: prints why the segment count of that run says
# nothing about the module, and succeeds; fails when it is judged.  Seen in
# the 6.1 guest: with every action counter of the module at 0, those counts
# still differed by 7-23% from the run without it, in both directions.
segs_unjudged() {
	if [ "$2" = small ]; then
		echo "64-byte writes coalesce whenever the one before is still below TCP: the count follows timing"
	elif [ "$1" = lo ] && [ "$2" != msgmore ] && [ "$2" != rr ]; then
		echo "one namespace counts the receiver's ACKs too, which follow timing in a stream"
	else
		return 1
	fi
}

# Totals over every run with the module, for the report.
declare -A TOTAL
for t in $TOPOS; do
	b_early=$(kv "$res/$t.msgmore.base" early)
	m_early=$(kv "$res/$t.msgmore.mod" early)
	check "$t msgmore: without the module the MSG_MORE bytes wait for the rest ($b_early of $ROUNDS early)" \
		cmp_num "$b_early" "==" 0
	check "$t msgmore: the module saw the MSG_MORE writes (app_holds)" \
		cmp_num "$(kv "$res/$t.msgmore.stats" app_holds)" ">=" "$ROUNDS"
	check "$t msgmore: with the module no reply starts early ($m_early of $ROUNDS, baseline $b_early)" \
		cmp_num "$m_early" "<=" "$b_early"
	for f in $FLOWS; do
		st=$res/$t.$f.stats
		txc=$(kv "$st" txc_samples)
		check "$t $f: the probes saw the flow (txc_samples $txc)" cmp_num "$txc" ">" 0
		for c in lost_wakeups recoveries checks_rearmed late_cork_releases; do
			check "$t $f: $c stays 0 ($(kv "$st" "$c"))" cmp_num "$(kv "$st" "$c")" "==" 0
		done
		wc=$(kv "$st" wakeup_checks)
		check "$t $f: wakeup_checks $wc at most $WAKEUP_CHECK_PPM ppm of $txc completions + 2" \
			cmp_num "$wc" "<=" "$((txc * WAKEUP_CHECK_PPM / 1000000 + 2))"
		bs=$(kv "$res/$t.$f.base" segs)
		ms=$(kv "$res/$t.$f.mod" segs)
		if why=$(segs_unjudged "$t" "$f"); then
			log "$t $f: TcpOutSegs $ms vs $bs without the module, not judged: $why"
		else
			check "$t $f: same TcpOutSegs with and without the module ($ms vs $bs)" \
				same_segs "$bs" "$ms"
		fi
		for c in txc_samples wakeup_checks; do
			TOTAL[$c]=$((${TOTAL[$c]:-0} + $(kv "$st" "$c")))
		done
	done
done
log "all runs with the module: wakeup_checks ${TOTAL[wakeup_checks]} of ${TOTAL[txc_samples]} completions timed"
ksft_finish
