#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tsq_bench.sh OUTDIR [REQUESTS]: the autocork thread's workload, in a guest
# (or on a host with two NICs joined, see topo_nic_pair), side by side:
#   nofault     tsq_probe loaded, no fault;
#   fault_r0    fault_ppm=300000 (30% of completions miss TSQ_THROTTLED), recover=0;
#   fault_r1    the same fault, recover=1;
#   cost        closed-loop transactions/s without and with tsq_probe loaded,
#               alternated (A B A B) to cancel drift.
# Open loop at a fixed rate, latency from each request's intended send time.
# The server answers each request with a 1200-byte body and a 7-byte trailer
# under TCP_NODELAY: the shape that autocorks (a larger write, then a small
# one) and fits in one segment, so the client's delayed ACK is the only
# thing that ends a lost wake-up (see DESIGN.md).
# Writes OUTDIR/{nofault,fault_r0,fault_r1}.{txt,raw,stats,hist}, cost.txt,
# summary.txt.
TESTS=$(cd "$(dirname "$0")/../tests" && pwd)
. "$TESTS/lib.sh"
out=${1:?usage: tsq_bench.sh OUTDIR [REQUESTS]}
N=${2:-3000}
COST_S=${TSQ_COST_SECONDS:-20}
mkdir -p "$out"
require_tsq_probe
rr_setup
LOAD=(--requests "$N" --rate 80 --conns 4 --slow-ms 30 --delack)
{
	echo "kernel=$(uname -r) arch=$(uname -m) topology=$TOPO_KIND requests=$N rate=80 conns=4"
	echo "qdisc: $(ip netns exec "$NS_SRV" tc qdisc show dev "$SRV_DEV" | head -1)"
} >"$out/setup.txt"

modprobe tsq_probe fault_inject=1 || fail "modprobe tsq_probe"
run() {	# run NAME PPM RECOVER
	echo "$3" >/sys/module/tsq_probe/parameters/recover
	echo "$2" >/sys/module/tsq_probe/parameters/fault_ppm
	echo 1 >/sys/kernel/tsq_probe/reset
	rr_measure "$out/$1.txt" "${LOAD[@]}" --raw "$out/$1.raw" || fail "$1 run"
	cp /sys/kernel/tsq_probe/stats "$out/$1.stats"
	cp /sys/kernel/tsq_probe/histograms "$out/$1.hist"
	echo 0 >/sys/module/tsq_probe/parameters/fault_ppm
	log "$1: $(grep -E '^(p99_us|p9999_us|max_us|slow)=' "$out/$1.txt" | tr '\n' ' ')"
}
run nofault 0 1
run fault_r0 300000 0
run fault_r1 300000 1
modprobe -r tsq_probe

if [ "$COST_S" -gt 0 ]; then
	: >"$out/cost.txt"
	for round in 1 2 3; do
		for mode in without with; do
			[ $mode = with ] && modprobe tsq_probe
			rr_run "$out/cost-$mode-$round.txt" --closed --duration "$COST_S" --conns 4 ||
				fail "cost run"
			[ $mode = with ] && modprobe -r tsq_probe
			echo "$mode $round $(kv "$out/cost-$mode-$round.txt" tps)" >>"$out/cost.txt"
		done
	done
fi

# Summary table: percentiles in ms, and the targets of the issue.
{
	cat "$out/setup.txt"
	printf '\n%-10s %8s %8s %8s %8s %8s %8s %8s %8s\n' run p50 p99 p99.9 p99.99 max ">=30ms" lost recov
	for r in nofault fault_r0 fault_r1; do
		f=$out/$r.txt
		printf '%-10s %8.2f %8.2f %8.2f %8.2f %8.2f %8d %8d %8d\n' "$r" \
			"$(kv "$f" p50_us)e-3" "$(kv "$f" p99_us)e-3" "$(kv "$f" p999_us)e-3" \
			"$(kv "$f" p9999_us)e-3" "$(kv "$f" max_us)e-3" "$(kv "$f" slow)" \
			"$(kv "$out/$r.stats" lost_wakeups)" "$(kv "$out/$r.stats" recoveries)"
	done
	echo "(latencies in ms from the intended send time; lost/recov: tsq_probe counters)"
	awk -v a="$(kv "$out/fault_r1.txt" p9999_us)" -v b="$(kv "$out/nofault.txt" p9999_us)" \
		'BEGIN { printf "p99.99 fault+recover / no fault: %.2fx (target <= 1.5x)\n", a / b }'
	# Recovery delay (issue 9, 2.4): p99 of recovery_delay_ns, the upper
	# bound of the log2 bucket holding the rank.
	awk '$1 == "hist" { on = ($2 == "recovery_delay_ns"); next }
	     on && NF == 3 { nb++; hi[nb] = $2; c[nb] = $3; n += $3 }
	     END { if (!n) { print "recovery delay: no sample (target p99 <= 1 ms): NOT met"; exit }
		   for (i = 1; i <= nb; i++) { acc += c[i]; if (acc >= n * 0.99) break }
		   printf "recovery delay p99 <= %.3f ms over %d recoveries (target p99 <= 1 ms): %s\n",
			  hi[i] / 1e6, n, hi[i] <= 1e6 ? "met" : "NOT met" }' "$out/fault_r1.hist"
	if [ -s "$out/cost.txt" ]; then
		awk '$1 == "without" { w += $3; nw++ } $1 == "with" { m += $3; nm++ }
		     END { printf "tps without tsq_probe %.0f, with %.0f: cost %.1f%% (target <= 3%%)\n",
			   w / nw, m / nm, 100 * (1 - (m / nm) / (w / nw)) }' "$out/cost.txt"
	fi
} >"$out/summary.txt"
cat "$out/summary.txt"
