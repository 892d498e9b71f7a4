#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq_probe changes nothing when nothing is wrong (defaults, no fault).
# Writers that ask TCP to hold or pace data, each run without and then with
# the module in the same guest:
#   msgmore   100 bytes with MSG_MORE under TCP_NODELAY on an idle
#             connection, the rest 60 ms later: the first bytes must not
#             leave early (tcp_push() turns MSG_MORE into a local
#             TCP_NAGLE_CORK that tp->nonagle does not show);
#   paced     SO_MAX_PACING_RATE: TCP's internal pacing timer holds data;
#   sendfile  splice chunks with MSG_MORE / MSG_SENDPAGE_NOTLAST;
#   bulk      64 KiB writes: TSO auto-deferral waits for ACKs.
# For each: no lost wake-up, no recovery, and the same number of segments
# on the wire (nstat TcpOutSegs of the sender's namespace) within 5% + 4.
. "$(dirname "$0")/lib.sh"
require_tsq_probe
require_disruptive "loads and unloads tsq_probe"
require_cmd nstat python3
PY=$TESTS_DIR/tsq_neutral.py
ROUNDS=${TSQ_NEUTRAL_ROUNDS:-20}

topo_pair
res=$(mktemp -d)
on_exit "rm -rf $res"

# FLOWS: name, then the tsq_neutral.py arguments of that flow.
declare -A FLOW_ARGS=(
	[msgmore]="--mode msgmore --rounds $ROUNDS --gap-ms 60"
	[paced]="--mode paced --bytes 1048576 --rate 2097152"
	[sendfile]="--mode sendfile --bytes 4194304"
	[bulk]="--mode bulk --bytes 4194304"
)
FLOWS="msgmore paced sendfile bulk"
declare -A PORT
port=6100
for f in $FLOWS; do
	PORT[$f]=$port
	# shellcheck disable=SC2086
	ip netns exec "$NS_SRV" python3 "$PY" server --bind "$SRV_ADDR" --port "$port" \
		${FLOW_ARGS[$f]} --ready "$res/ready.$f" >"$res/server.$f" 2>&1 &
	on_exit "kill $!"
	wait_for 20 test -e "$res/ready.$f" || fail "server $f did not start"
	port=$((port + 1))
done

# run_flow FLOW OUT: one client run; OUT gets the client's lines plus segs=.
run_flow() {
	local f=$1 out=$2 s0 s1
	s0=$(nstat_get "$NS_SRV" TcpOutSegs)
	# shellcheck disable=SC2086
	ip netns exec "$NS_CLI" python3 "$PY" client --server "$SRV_ADDR" --port "${PORT[$f]}" \
		${FLOW_ARGS[$f]} >"$out" || { log "$f client failed: $(tail -3 "$out")"; return 1; }
	s1=$(nstat_get "$NS_SRV" TcpOutSegs)
	echo "segs=$((s1 - s0))" >>"$out"
}

for f in $FLOWS; do
	run_flow "$f" "$res/$f.base" || fail "$f without the module"
	log "$f without tsq_probe: $(tr '\n' ' ' <"$res/$f.base")"
done

modprobe tsq_probe || fail "modprobe tsq_probe"
for f in $FLOWS; do
	echo 1 >/sys/kernel/tsq_probe/reset
	run_flow "$f" "$res/$f.mod" || fail "$f with the module"
	cp /sys/kernel/tsq_probe/stats "$res/$f.stats"
	log "$f with tsq_probe: $(tr '\n' ' ' <"$res/$f.mod")"
	log "$f stats: $(tr '\n' ' ' <"$res/$f.stats")"
done

# same_segs BASE MOD: MOD within 5% + 4 of BASE (a handshake, a FIN, a
# window probe or two may differ between runs; an early push per request
# or per chunk does not fit).
same_segs() { cmp_num "$2" ">=" "$(($1 - $1 / 20 - 4))" && cmp_num "$2" "<=" "$(($1 + $1 / 20 + 4))"; }

b_early=$(kv "$res/msgmore.base" early)
m_early=$(kv "$res/msgmore.mod" early)
check "msgmore: without the module the MSG_MORE bytes wait for the rest ($b_early of $ROUNDS early)" \
	cmp_num "$b_early" "==" 0
check "msgmore: the module saw the MSG_MORE writes (app_holds)" \
	cmp_num "$(kv "$res/msgmore.stats" app_holds)" ">=" "$ROUNDS"
check "msgmore: with the module no reply starts early ($m_early of $ROUNDS, baseline $b_early)" \
	cmp_num "$m_early" "<=" "$b_early"
for f in $FLOWS; do
	check "$f: the probes saw the flow (txc_samples)" \
		cmp_num "$(kv "$res/$f.stats" txc_samples)" ">" 0
	check "$f: no lost wake-up" cmp_num "$(kv "$res/$f.stats" lost_wakeups)" "==" 0
	check "$f: no recovery" cmp_num "$(kv "$res/$f.stats" recoveries)" "==" 0
	# late_cork_releases is judged by time (late_cork_ms): an emulator
	# stall between a completion and the TSQ tasklet may add one or two.
	cs=$(kv "$res/$f.stats" cork_samples)
	lc=$(kv "$res/$f.stats" late_cork_releases)
	check "$f: late cork releases at most max(2, 0.2% of $cs corks) ($lc)" \
		cmp_num "$lc" "<=" "$((cs / 500 > 2 ? cs / 500 : 2))"
	bs=$(kv "$res/$f.base" segs)
	ms=$(kv "$res/$f.mod" segs)
	check "$f: same TcpOutSegs with and without the module ($ms vs $bs)" same_segs "$bs" "$ms"
done
ksft_finish
