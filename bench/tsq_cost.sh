#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tsq_cost.sh OUTDIR: what tsq_probe costs at the highest packet rate the
# guest reaches, module loaded against not loaded in the same
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
# raw.txt's run lines, field by field:
#   stream ARM ROUND bytes seconds segs  d_cli d_srv busy all txc stamps
#   rr     ARM ROUND tps   seconds -     d_cli d_srv busy all txc stamps
# segs: the client's TcpOutSegs during the iperf3 run (as before); from
# d_cli on, the differences over the run (from before the client starts to
# after it ends): TcpOutSegs of the client's and the server's namespace,
# CPU ticks not idle and all CPU ticks (/proc/stat), and the module's
# txc_samples and txc_stamps, each times txc_sample (one skb in txc_sample
# is timed: these estimate all of them; 0 when not loaded).
# TSQ_COST_ICOUNT=1 (bench/tsq_cost_icount.sh, in a guest booted with
# TAILFIX_VM_ICOUNT=1): the guest's time is its instruction count, and
# summary.txt reports instructions per packet instead of ns (see there).
TESTS=$(cd "$(dirname "$0")/../tests" && pwd)
. "$TESTS/lib.sh"
out=${1:?usage: tsq_cost.sh OUTDIR | tsq_cost.sh --summary OUTDIR}
ICOUNT=${TSQ_COST_ICOUNT:-0}
ROUNDS=${TSQ_COST_ROUNDS:-5}
STREAM_S=${TSQ_COST_STREAM_SECONDS:-10}
RR_S=${TSQ_COST_RR_SECONDS:-10}

summary_wall() {	# medians per arm; ratios against off; ns per segment from the stream
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
}

# summary_icount: under instruction counting, per workload and arm, the
# medians of throughput and of guest instructions per packet (a packet: a
# TCP segment sent by either end, TcpOutSegs of both namespaces) and per
# unit of the application's work (stream: a 64-byte write; rr: a
# transaction); the instructions of a run are its seconds x 1e9 x the share
# of CPU ticks not idle.  The two differ where the module changes how the
# writes are packetised (fewer bytes per segment, more ACKs).  Loaded against off: the throughput ratio, the extra instructions
# per packet, and those per hook hit (extra per packet / the module's TX
# completions, txc_samples x txc_sample, per packet: the module's whole
# extra work, xmit stamps and sendmsg probe included, per completion).
summary_icount() {
	cat "$out/setup.txt"
	echo "hooks per arm: $(sort -u "$out/attach.txt" | tr '\n' ';')"
	echo
	awk -v arms="${arms[*]}" -v kernel="$(sed -n '1s/^kernel=\([^ ]*\).*/\1/p' "$out/setup.txt")" '
	function median(list,    v, n, i, j, t) {
		n = split(list, v, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	function lo(list,    v, n, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 < m + 0) m = v[i]; return m }
	function hi(list,    v, n, i, m) { n = split(list, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] + 0 > m + 0) m = v[i]; return m }
	($1 == "stream" || $1 == "rr") && NF >= 12 && $7 + $8 > 0 && $10 > 0 {
		k = $1 SUBSEP $2; pk = $7 + $8
		thr[k] = thr[k] " " ($1 == "stream" ? $4 * 8 / $5 / 1e6 : $4)
		ipp[k] = ipp[k] " " $5 * 1e9 * $9 / $10 / pk
		ipw[k] = ipw[k] " " $5 * 1e9 * $9 / $10 / ($1 == "stream" ? $4 / 64 : $4 * $5)
		busy[k] = busy[k] " " 100 * $9 / $10
		hpp[k] = hpp[k] " " $11 / pk
		spp[k] = spp[k] " " $12 / pk
		byround[$1, $2, $3] = ($1 == "stream" ? $4 / $5 : $4)
		n[k]++
	}
	END {
		split("stream rr", wl, " ")
		unit["stream"] = "Mbit/s"; unit["rr"] = "transactions/s"
		work["stream"] = "write"; work["rr"] = "transaction"
		na = split(arms, order, " ")
		verdict = "met"; judged = 0
		for (w = 1; w <= 2; w++) {
			W = wl[w]
			printf "%s (%s; medians over n runs, range in brackets)\n", W, unit[W]
			printf "  %-16s %3s %22s %9s %22s %13s %8s %13s %13s\n", "arm", "n", "throughput", "spread", "instructions/packet", "instr/" work[W], "busy %", "txc/packet", "stamps/packet"
			for (i = 1; i <= na; i++) {
				k = W SUBSEP order[i]
				if (!n[k])
					continue
				m = median(thr[k])
				printf "  %-16s %3d %9.2f [%.2f-%.2f] %8.2f%% %9.0f [%.0f-%.0f] %13.0f %8.1f %13.3f %13.3f\n", order[i], n[k],
				       m, lo(thr[k]), hi(thr[k]), 100 * (hi(thr[k]) - lo(thr[k])) / m,
				       median(ipp[k]), lo(ipp[k]), hi(ipp[k]), median(ipw[k]), median(busy[k]), median(hpp[k]), median(spp[k])
			}
			o = W SUBSEP "off"
			for (i = 1; i <= na; i++) {
				a = order[i]; k = W SUBSEP a
				if (a == "off" || !n[k] || !n[o])
					continue
				# A cost part (bench/cost-parts): what tp does beyond it.
				if (a ~ /^part-/) {
					t = W SUBSEP "tp"
					if (n[t])
						printf "  %s: tp minus this arm: %+.0f instructions per packet (%+.1f%% of off); this arm / off: %+.0f (%+.1f%%)\n", a,
						       median(ipp[t]) - median(ipp[k]), 100 * (median(ipp[t]) - median(ipp[k])) / median(ipp[o]),
						       median(ipp[k]) - median(ipp[o]), 100 * (median(ipp[k]) - median(ipp[o])) / median(ipp[o])
					continue
				}
				r = median(thr[k]) / median(thr[o])
				x = median(ipp[k]) - median(ipp[o])
				pct = 100 * x / median(ipp[o])
				h = median(hpp[k])
				pr = ""
				for (rd = 1; rd <= 1000; rd++)
					if ((W, a, rd) in byround && (W, "off", rd) in byround && byround[W, "off", rd] > 0)
						pr = pr " " byround[W, a, rd] / byround[W, "off", rd]
				xw = median(ipw[k]) - median(ipw[o])
				printf "  %s / off: throughput %.3fx (paired by round %.3f-%.3f); %+.0f instructions per packet (%+.1f%%), %+.0f per %s (%+.1f%%)",
				       a, r, lo(pr), hi(pr), x, pct, xw, work[W], 100 * xw / median(ipw[o])
				if (h > 0)
					printf "; %+.0f per hook hit (%.3f timed completions per packet)", x / h, h
				printf "\n"
				ok = pct <= 2
				printf "  %s %s, %s: target <= 2%% more instructions per packet: %s\n", kernel, W, a, ok ? "met" : "NOT met"
				judged++
				if (!ok)
					verdict = "NOT met"
			}
			print ""
		}
		if (judged)
			printf "%s: target <= 2%% more instructions per packet: %s\n", kernel, verdict
		else
			printf "%s: no loaded arm against off: no verdict\n", kernel
	}' "$out/raw.txt"
}


# tsq_cost.sh --summary OUTDIR: summary.txt again from OUTDIR's raw.txt and
# setup.txt (on the host too).
if [ "$out" = --summary ]; then
	trap - EXIT
	out=${2:?usage: tsq_cost.sh --summary OUTDIR}
	read -ra arms <<<"$(sed -n 's/^arms: \([^;]*\);.*/\1/p' "$out/setup.txt")"
	if grep -q '^qemu: -icount' "$out/setup.txt"; then
		summary_icount >"$out/summary.txt"
	else
		summary_wall >"$out/summary.txt"
	fi
	cat "$out/summary.txt"
	exit 0
fi
mkdir -p "$out"
require_tsq_probe
require_cmd iperf3 nstat
require_tool tailrr
if [ "$ICOUNT" = 1 ]; then
	# Without instruction counting these figures would be wall time under
	# TCG, which tsq_cost.sh proper measures: refuse rather than mislabel.
	[ "${TAILFIX_VM_ICOUNT:-0}" = 1 ] ||
		skip "not booted with instruction counting (tests/vm/run.sh TAILFIX_VM_ICOUNT=1)"
	[ "$(nproc)" = 1 ] || skip "instruction counting wants one vCPU, the guest has $(nproc)"
fi
topo_pair
{
	echo "kernel=$(uname -r) arch=$(uname -m) cpus=$(nproc) topology=veth rounds=$ROUNDS"
	echo "stream: iperf3 -N -l 64 -t $STREAM_S; rr: tailrr --closed --conns 1 --duration $RR_S"
	[ "$ICOUNT" = 1 ] &&
		echo "qemu: -icount shift=0,sleep=off -smp 1 -accel tcg,thread=single (tests/vm/run.sh TAILFIX_VM_ICOUNT=1): 1 guest ns = 1 guest instruction"
	echo "kernel command line: $(cat /proc/cmdline)"
	echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
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
	part-*) insmod "$MUT_TMP/m${1#part-}.ko" || fail "insmod of cost part ${1#part-}" ;;
	kp) modprobe tsq_probe xmit_attach=kprobe wfree_attach=kprobe ||
		fail "modprobe tsq_probe xmit_attach=kprobe wfree_attach=kprobe" ;;
	esac
	if [ "${1%@*}" != off ]; then
		echo "$1 xmit:$(cat /sys/module/tsq_probe/parameters/xmit_attach)" \
			"wfree:$(cat /sys/module/tsq_probe/parameters/wfree_attach)" >>"$out/attach.txt"
	fi
}

# counters: what a run is measured by, as one line of numbers (differences
# of two of them: delta A B).
st=/sys/kernel/tsq_probe/stats
counters() {
	echo "$(nstat_get "$NS_CLI" TcpOutSegs) $(nstat_get "$NS_SRV" TcpOutSegs)" \
		"$(awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)" \
		"$(n=$(kv "$st" txc_sample 2>/dev/null || :); echo $(($(kv "$st" txc_samples 2>/dev/null || echo 0) * ${n:-1})) \
			$(($(kv "$st" txc_stamps 2>/dev/null || echo 0) * ${n:-1})))" |
		awk '{ for (i = 1; i <= 6; i++) printf "%s%.0f", (i > 1 ? " " : ""), $i + 0; print "" }'
}
delta() { awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, " "); split(b, y, " "); for (i = 1; i <= n; i++) printf "%s%.0f", (i > 1 ? " " : ""), y[i] - x[i]; print "" }'; }

: >"$out/raw.txt"
: >"$out/attach.txt"
# TSQ_COST_ARMS (default "off tp wk kp"); TSQ_COST_CLOCKSOURCES="hpet tsc"
# (or hpet:tsc):
# every arm once per clocksource in each round (ARM@CLOCKSOURCE), to tell
# what the clock reads cost from what the hooks cost.
default_arms="off tp wk kp"
[ "$ICOUNT" = 1 ] && default_arms="off tp"
read -ra arms <<<"${TSQ_COST_ARMS:-$default_arms}"
if [ -n "${TSQ_COST_CLOCKSOURCES:-}" ]; then
	base=("${arms[@]}") arms=()
	for cs in $TSQ_COST_CLOCKSOURCES; do
		for a in "${base[@]}"; do arms+=("$a@$cs"); done
	done
fi
echo "arms: ${arms[*]}; clocksource at the start: $CS_BEFORE" >>"$out/setup.txt"
# part-NAME: tsq_probe with bench/cost-parts/NAME.patch, built from the DKMS
# source (or taken from the staging's test builds: tests/lib.sh mutant_build).
parts=$(printf '%s\n' "${arms[@]}" | sed -n 's/^part-\([^@]*\).*/\1/p' | sort -u)
if [ -n "$parts" ]; then
	mutants_setup tsq_probe tsq_probe tsq_probe
	for p in $parts; do
		mutant_build "$p" "$(dirname "$0")/cost-parts/$p.patch" || fail "cost part $p does not build"
		echo "part-$p: $(sed -n '/^$/q; p' "$(dirname "$0")/cost-parts/$p.patch" | tr '\n' ' ')" >>"$out/setup.txt"
	done
fi
narms=${#arms[@]}
for round in $(seq 1 "$ROUNDS"); do
	for ((i = 0; i < narms; i++)); do
		a=${arms[$(((i + round) % narms))]}
		arm "$a"
		c0=$(counters)
		f=$out/stream-$a-$round.json
		if timeout $((STREAM_S + 30)) ip netns exec "$NS_CLI" iperf3 -c "$SRV_ADDR" -p 5299 \
			-N -l 64 -t "$STREAM_S" -J </dev/null >"$f" 2>&1; then
			d=$(delta "$c0" "$(counters)")
			python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))["end"]["sum_sent"]
print(j["bytes"], "%.3f" % j["seconds"])' "$f" |
				{ read -r b t; echo "stream $a $round $b $t ${d%% *} $d"; } >>"$out/raw.txt"
		else
			log "stream $a round $round failed: $(tail -2 "$f")"
		fi
		c0=$(counters)
		rr_run "$out/rr-$a-$round.txt" --closed --duration "$RR_S" --conns 1 --trailer 0 &&
			echo "rr $a $round $(kv "$out/rr-$a-$round.txt" tps) $(kv "$out/rr-$a-$round.txt" elapsed_s) -" \
				"$(delta "$c0" "$(counters)")" >>"$out/raw.txt"
		# What the loaded module saw in the arm (stream and rr; it is loaded
		# afresh for each arm): a hook that drops hits does less work.
		[ ! -r "$st" ] ||
			echo "hooks $a $round txc_samples $(kv "$st" txc_samples) probes_missed $(kv "$st" probes_missed)" >>"$out/raw.txt"
		log "round $round, $a done (${SECONDS}s in)"
	done
done
arm off${TSQ_COST_CLOCKSOURCES:+@$CS_BEFORE}

if [ "$ICOUNT" = 1 ]; then
	summary_icount >"$out/summary.txt"
else
	summary_wall >"$out/summary.txt"
fi
cat "$out/summary.txt"
