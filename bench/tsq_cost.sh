#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tsq_cost.sh OUTDIR: what tsq_probe costs at the highest packet rate the
# guest reaches (issue 9, 2.3), module loaded against not loaded in the same
# run, with the attach mechanisms side by side:
#   off  tsq_probe not loaded;
#   tp   loaded with its defaults (xmit_attach=auto: the net_dev_queue
#        tracepoint where the kernel has it; wfree_attach=auto: ftrace on
#        tcp_wfree where the module has that hook for the kernel);
#   wk   the tracepoint, and wfree_attach=kprobe (the hooks of the builds
#        before the ftrace hook);
#   kp   xmit_attach=kprobe wfree_attach=kprobe (every hook a kprobe, as
#        the first builds had it).
# Workloads, over a veth pair (topo_pair; every packet crosses
# __dev_queue_xmit() and every TCP skb tcp_wfree()):
#   stream  iperf3 -N -l 64 for STREAM_S seconds: MB/s, and the client's
#           TcpOutSegs per second;
#   rr      one-connection closed-loop request/response (tailrr --closed):
#           transactions/s.
# ROUNDS rounds, the arms in a rotated order each round, so that drift
# hits every arm alike; medians per arm.  The per-segment cost in ns is the
# difference of busy time per segment (1e9 / segments per second, the guest
# being CPU-bound in the stream), an estimate, not a measurement of one hit.
# Writes OUTDIR/setup.txt, attach.txt (the hooks each loaded arm got),
# raw.txt (one line per run: workload arm round value...; per loaded arm
# and round, "hooks": the module's txc_samples and probes_missed),
# stream-ARM-ROUND.json, rr-ARM-ROUND.txt, summary.txt.
TESTS=$(cd "$(dirname "$0")/../tests" && pwd)
. "$TESTS/lib.sh"
out=${1:?usage: tsq_cost.sh OUTDIR}
ROUNDS=${TSQ_COST_ROUNDS:-5}
STREAM_S=${TSQ_COST_STREAM_SECONDS:-10}
RR_S=${TSQ_COST_RR_SECONDS:-10}
mkdir -p "$out"
require_tsq_probe
require_cmd iperf3 nstat
require_tool tailrr
topo_pair
{
	echo "kernel=$(uname -r) arch=$(uname -m) cpus=$(nproc) topology=veth rounds=$ROUNDS"
	echo "stream: iperf3 -N -l 64 -t $STREAM_S; rr: tailrr --closed --conns 1 --duration $RR_S"
} >"$out/setup.txt"

ip netns exec "$NS_SRV" iperf3 -s -B "$SRV_ADDR" -p 5299 </dev/null >/dev/null 2>&1 &
on_exit "kill $!"
ip netns exec "$NS_SRV" "$TOOLS_DIR/tailrr" server --bind "$SRV_ADDR" --port "$RR_PORT" \
	--trailer 0 --ready-file "$out/.ready" >/dev/null 2>&1 &
on_exit "kill $! ; rm -f $out/.ready"
wait_for 20 test -e "$out/.ready" || fail "tailrr server did not start"
wait_for 20 sh -c "ip netns exec $NS_SRV ss -ltn | grep -q ':5299 '" || fail "iperf3 server did not start"

# (lists separated by spaces or colons: TAILFIX_GUEST_ENV values have no spaces)
TSQ_COST_CLOCKSOURCES=$(echo "${TSQ_COST_CLOCKSOURCES:-}" | tr : " ")
TSQ_COST_ARMS=$(echo "${TSQ_COST_ARMS:-}" | tr : " ")
CS_FILE=/sys/devices/system/clocksource/clocksource0/current_clocksource
CS_BEFORE=$(cat "$CS_FILE" 2>/dev/null)
if [ -n "${TSQ_COST_CLOCKSOURCES:-}" ]; then
	for cs in $TSQ_COST_CLOCKSOURCES; do
		grep -qw "$cs" "${CS_FILE%current_clocksource}available_clocksource" ||
			fail "clocksource $cs not available (have: $(cat "${CS_FILE%current_clocksource}available_clocksource"); the amd64 guest needs TAILFIX_VM_TSC=reliable for tsc)"
	done
	on_exit "echo $CS_BEFORE >$CS_FILE"
fi

arm() {	# arm ARM[@CLOCKSOURCE], ARM off|tp|wk|kp: put tsq_probe in that state
	modprobe -r tsq_probe 2>/dev/null
	case $1 in *@*) echo "${1#*@}" >"$CS_FILE" || fail "cannot select clocksource ${1#*@}" ;; esac
	case ${1%@*} in
	tp) modprobe tsq_probe || fail "modprobe tsq_probe" ;;
	wk) modprobe tsq_probe wfree_attach=kprobe || fail "modprobe tsq_probe wfree_attach=kprobe" ;;
	kp) modprobe tsq_probe xmit_attach=kprobe wfree_attach=kprobe ||
		fail "modprobe tsq_probe xmit_attach=kprobe wfree_attach=kprobe" ;;
	esac
	if [ "${1%@*}" != off ]; then
		echo "$1 xmit:$(cat /sys/module/tsq_probe/parameters/xmit_attach)" \
			"wfree:$(cat /sys/module/tsq_probe/parameters/wfree_attach)" >>"$out/attach.txt"
	fi
}

: >"$out/raw.txt"
: >"$out/attach.txt"
# TSQ_COST_ARMS (default "off tp wk kp"); TSQ_COST_CLOCKSOURCES="hpet tsc"
# (or hpet:tsc):
# every arm once per clocksource in each round (ARM@CLOCKSOURCE), to tell
# what the clock reads cost from what the hooks cost.
read -ra arms <<<"${TSQ_COST_ARMS:-off tp wk kp}"
if [ -n "${TSQ_COST_CLOCKSOURCES:-}" ]; then
	base=("${arms[@]}") arms=()
	for cs in $TSQ_COST_CLOCKSOURCES; do
		for a in "${base[@]}"; do arms+=("$a@$cs"); done
	done
fi
echo "arms: ${arms[*]}; clocksource at the start: $CS_BEFORE" >>"$out/setup.txt"
narms=${#arms[@]}
for round in $(seq 1 "$ROUNDS"); do
	for ((i = 0; i < narms; i++)); do
		a=${arms[$(((i + round) % narms))]}
		arm "$a"
		s0=$(nstat_get "$NS_CLI" TcpOutSegs)
		f=$out/stream-$a-$round.json
		if timeout $((STREAM_S + 30)) ip netns exec "$NS_CLI" iperf3 -c "$SRV_ADDR" -p 5299 \
			-N -l 64 -t "$STREAM_S" -J </dev/null >"$f" 2>&1; then
			python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))["end"]["sum_sent"]
print(j["bytes"], "%.3f" % j["seconds"])' "$f" |
				{ read -r b t; echo "stream $a $round $b $t $(($(nstat_get "$NS_CLI" TcpOutSegs) - s0))"; } >>"$out/raw.txt"
		else
			log "stream $a round $round failed: $(tail -2 "$f")"
		fi
		rr_run "$out/rr-$a-$round.txt" --closed --duration "$RR_S" --conns 1 --trailer 0 &&
			echo "rr $a $round $(kv "$out/rr-$a-$round.txt" tps)" >>"$out/raw.txt"
		# What the loaded module saw in the arm (stream and rr; it is loaded
		# afresh for each arm): a hook that drops hits does less work.
		st=/sys/kernel/tsq_probe/stats
		[ ! -r "$st" ] ||
			echo "hooks $a $round txc_samples $(kv "$st" txc_samples) probes_missed $(kv "$st" probes_missed)" >>"$out/raw.txt"
	done
done
arm off${TSQ_COST_CLOCKSOURCES:+@$CS_BEFORE}

# Medians per arm; ratios against off; ns per segment from the stream.
{
	cat "$out/setup.txt"
	echo "hooks per arm: $(sort -u "$out/attach.txt" | tr '\n' ';')"
	echo
	awk -v arms="${arms[*]}" '
	function median(list,    v, n, i, j, t) {
		n = split(list, v, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	$1 == "stream" { mbs[$2] = mbs[$2] " " $4 / $5 / 1e6; sps[$2] = sps[$2] " " $6 / $5; ns[$2]++ }
	$1 == "rr" { tps[$2] = tps[$2] " " $4; nr[$2]++ }
	$1 == "hooks" { txc[$2] += $5; missed[$2] += $7 }
	END {
		for (a in ns) { m[a] = median(mbs[a]); s[a] = median(sps[a]) }
		for (a in nr) t[a] = median(tps[a])
		printf "%-9s %10s %12s %10s   (medians; n = runs)\n", "arm", "stream MB/s", "stream seg/s", "rr tps"
		n = split(arms, order, " ")
		for (i = 1; i <= n; i++) {
			a = order[i]
			printf "%-9s %10.3f %12.0f %10.0f   (n = %d, %d)\n", a, m[a], s[a], t[a], ns[a], nr[a]
		}
		for (i = 1; i <= n; i++) {
			a = order[i]
			if (a in txc)
				printf "%s: %d TX completions timed, %d probe hits missed, over its runs\n", a, txc[a], missed[a]
		}
		# each loaded arm against off with the same clocksource
		for (i = 1; i <= n; i++) {
			a = order[i]
			o = a; sub(/^[^@]*/, "off", o)
			if (a == o || !m[o] || !m[a] || !s[a] || !t[o])
				continue
			printf "%s / %s: stream %.3fx, rr %.3fx; %+.0f ns of busy time per segment; target <= 2%% loss: %s\n",
			       a, o, m[a] / m[o], t[a] / t[o], 1e9 / s[a] - 1e9 / s[o],
			       ((m[a] / m[o] >= 0.98 && t[a] / t[o] >= 0.98) ? "met" : "NOT met")
		}
	}' "$out/raw.txt"
} >"$out/summary.txt"
cat "$out/summary.txt"
