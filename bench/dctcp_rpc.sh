#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dctcp_rpc.sh RESULTS_DIR: the RPC mix of the 2018 netdev DCTCP thread, for
# cubic, in-tree dctcp and dctcp_fixed in the same run (guest, as root).
#
#   S1 --\
#         router --[tbf RATE + RED step marking at MARK_KB]--> RCV
#   S2 --/
#
# Each sender runs, at the same time, one bulk stream, back-to-back 1 MB RPCs
# and back-to-back 10 KB RPCs to the receiver (tests/tools/rpcbench); the
# receiver answers each RPC with 8 bytes.  cubic runs without ECN (the RED
# step drops), the DCTCPs negotiate ECN (the step marks).
#
# ROUNDS rounds (default 5); each round runs every algorithm once, in an
# order rotated by one each round, so that drift of the emulator hits them
# alike.  cubic_ecn is cubic with net.ipv4.tcp_ecn=1 in every namespace (the
# step marks instead of dropping); the others leave tcp_ecn as it is (the
# DCTCPs negotiate ECN themselves).
#
# Writes RESULTS_DIR/CC/rN/{s1,s2}-{1m,10k}.us (one latency per line, µs),
# RESULTS_DIR/CC/rN/{s1,s2}-stream.txt and stats.txt, RESULTS_DIR/rounds.csv
# (per round: RPCs, percentiles, goodput per class), RESULTS_DIR/summary.txt
# and summary.csv (all rounds pooled), RESULTS_DIR/ratios.txt (dctcp_fixed
# / dctcp per metric: geometric mean of the per-round ratios and its 95%
# confidence interval), RESULTS_DIR/targets.txt, RESULTS_DIR/dctcp_rpc.gp
# and, when gnuplot is installed, dctcp_rpc.png (else render it on the host
# with bench/dctcp_plot.sh RESULTS_DIR).
# Tunables (environment): SECS (per algorithm and round, default 20), ROUNDS
# (5), RATE (40mbit), MARK_KB (20), CCS ("cubic cubic_ecn dctcp dctcp_fixed").

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/lib.sh"
. "$here/bench-lib.sh"

res=${1:?usage: dctcp_rpc.sh RESULTS_DIR}
SECS=${SECS:-20}
ROUNDS=${ROUNDS:-5}
RATE=${RATE:-40mbit}
MARK_KB=${MARK_KB:-20}
CCS=${CCS:-cubic cubic_ecn dctcp dctcp_fixed}
RPCBENCH=$TOOLS_DIR/rpcbench

require_root
require_tool rpcbench
require_cmd ip tc awk sort
for cc in $CCS; do
	case $cc in
	cubic | cubic_ecn | reno) ;;
	dctcp_fixed) require_module tcp_dctcp_fixed ;;
	*) require_module "tcp_$cc" ;;
	esac
done
mkdir -p "$res" || fail "cannot create $res"
res=$(cd "$res" && pwd)

topo_router
qdisc_bottleneck "$NS_RTR" rcv "$RATE" "$MARK_KB"
log "bottleneck: tbf $RATE, RED step marking/dropping above ${MARK_KB} KB of queue"
allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
on_exit sysctl -qw "net.ipv4.tcp_allowed_congestion_control=$allowed"

stats() {	# stats FILE: counters that explain the tail
	{
		for ns in "$NS_S1" "$NS_S2" "$NS_RCV"; do
			for c in TcpExtTCPTimeouts TcpRetransSegs TcpExtTCPDelivered TcpExtTCPDeliveredCE; do
				printf '%s %s %s\n' "${ns%%-*}-${ns##*-}" "$c" "$(nstat_get "$ns" "$c")"
			done
		done
		[ -r /sys/kernel/tcp_dctcp_fixed/stats ] && sed 's/^/dctcp_fixed /' /sys/kernel/tcp_dctcp_fixed/stats
		ip netns exec "$NS_RTR" tc -s qdisc show dev rcv
	} >"$1" 2>&1
}

# tcp_ecn per namespace, restored at the end; cubic_ecn sets it to 1.
ecn_set() {
	local ns
	for ns in "$NS_S1" "$NS_S2" "$NS_RCV"; do
		ip netns exec "$ns" sysctl -qw "net.ipv4.tcp_ecn=$1" || return 1
	done
}
ecn0=$(ip netns exec "$NS_RCV" sysctl -n net.ipv4.tcp_ecn)

# one_run CC OUT: all six clients of one algorithm for SECS seconds.
port=6000
SRV_PID=
on_exit '[ -n "$SRV_PID" ] && kill "$SRV_PID"'

one_run() {
	local cc=$1 out=$2 alg=$1 srv s ns p bad=0 pids=()
	[ "$cc" = cubic_ecn ] && alg=cubic
	ecn_set "$([ "$cc" = cubic_ecn ] && echo 1 || echo "$ecn0")" || fail "cannot set tcp_ecn for $cc"
	mkdir -p "$out"
	port=$((port + 1))
	stats "$out/stats-before.txt"
	ip netns exec "$NS_RCV" "$RPCBENCH" server -p "$port" -C "$alg" &
	srv=$!
	SRV_PID=$srv
	wait_for 10 sh -c "ip netns exec $NS_RCV ss -Hltn sport = :$port | grep -q ." ||
		fail "rpcbench server did not start"
	for s in 1 2; do
		ns=NS_S$s
		ip netns exec "${!ns}" "$RPCBENCH" stream -H "$RCV_ADDR" -p "$port" -C "$alg" -t "$SECS" \
			>"$out/s$s-stream.txt" 2>&1 &
		pids+=($!)
		ip netns exec "${!ns}" "$RPCBENCH" rpc -H "$RCV_ADDR" -p "$port" -C "$alg" -t "$SECS" \
			-s 1000000 -o "$out/s$s-1m.us" 2>>"$out/log.txt" &
		pids+=($!)
		ip netns exec "${!ns}" "$RPCBENCH" rpc -H "$RCV_ADDR" -p "$port" -C "$alg" -t "$SECS" \
			-s 10000 -o "$out/s$s-10k.us" 2>>"$out/log.txt" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || bad=1
	done
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	SRV_PID=
	stats "$out/stats.txt"
	[ "$bad" -eq 0 ] || fail "a client of the $cc run failed (see $out/log.txt)"
}

read -ra ccs <<<"$CCS"
for round in $(seq 1 "$ROUNDS"); do
	order=()
	for i in "${!ccs[@]}"; do
		order+=("${ccs[$(((i + round - 1) % ${#ccs[@]}))]}")
	done
	log "== round $round of $ROUNDS: ${order[*]}, ${SECS} s each"
	for cc in "${order[@]}"; do
		one_run "$cc" "$res/$cc/r$round"
	done
done
ecn_set "$ecn0"

# ---- summary ---------------------------------------------------------------------
mbit() { cat "$@" | awk '{ s += $6 } END { printf "%.2f", s }'; }	# mbit STREAM_FILE...
ctr() {	# ctr DIR COUNTER: its delta over one run, all namespaces summed
	awk -v c="$2" 'FNR == 1 { f++ } $2 == c { s[f] += $3 } END { print s[1] - s[2] }' \
		"$1/stats.txt" "$1/stats-before.txt"
}
{
	echo "# dctcp_rpc: $(uname -r), bottleneck $RATE, marking above ${MARK_KB} KB, $ROUNDS rounds x ${SECS} s per algorithm, all rounds pooled"
	printf '%-12s %-5s %7s %9s %9s %9s %9s %6s\n' cc rpc n p50_us p99_us p99.9_us max_us ge40ms
	for cc in "${ccs[@]}"; do
		for sz in 10k 1m; do
			read -r n p50 p99 p999 mx c40 <<<"$(pct "$res/$cc"/r*/s*-"$sz".us)"
			printf '%-12s %-5s %7s %9s %9s %9s %9s %6s\n' "$cc" "$sz" "$n" "$p50" "$p99" "$p999" "$mx" "$c40"
		done
	done
	echo
	printf '%-12s %17s %9s %9s\n' cc stream_mbit/round timeouts retrans
	for cc in "${ccs[@]}"; do
		mb=$(awk -v r="$ROUNDS" '{ s += $6 } END { printf "%.2f", s / r }' "$res/$cc"/r*/s*-stream.txt)
		to=0 rt=0
		for d in "$res/$cc"/r*; do
			to=$((to + $(ctr "$d" TcpExtTCPTimeouts)))
			rt=$((rt + $(ctr "$d" TcpRetransSegs)))
		done
		printf '%-12s %17s %9s %9s\n' "$cc" "$mb" "$to" "$rt"
	done
} >"$res/summary.txt"
{
	echo "cc,rpc,n,p50_us,p99_us,p999_us,max_us,ge40ms"
	for cc in "${ccs[@]}"; do
		for sz in 10k 1m; do
			echo "$cc,$sz,$(pct "$res/$cc"/r*/s*-"$sz".us | tr ' ' ',')"
		done
	done
} >"$res/summary.csv"
# Per round: every metric the ratios are taken of.  Goodput in Mbit/s:
# RPC payload (size x count) or stream bytes, over the run's SECS.
{
	echo "cc,round,rpc10k_n,rpc10k_p50_us,rpc10k_p99_us,rpc10k_p999_us,rpc10k_max_us,rpc10k_ge40ms,rpc1m_n,rpc1m_p50_us,rpc1m_p99_us,rpc1m_max_us,rpc10k_mbit,rpc1m_mbit,stream_mbit,total_mbit"
	for cc in "${ccs[@]}"; do
		for round in $(seq 1 "$ROUNDS"); do
			d=$res/$cc/r$round
			read -r kn k50 k99 k999 kmx k40 <<<"$(pct "$d"/s*-10k.us)"
			read -r mn m50 m99 _ mmx _ <<<"$(pct "$d"/s*-1m.us)"
			awk -v cc="$cc" -v r="$round" -v t="$SECS" -v kn="$kn" -v mn="$mn" -v st="$(mbit "$d"/s*-stream.txt)" \
				-v rest="$kn,$k50,$k99,$k999,$kmx,$k40,$mn,$m50,$m99,$mmx" 'BEGIN {
				k = kn * 10000 * 8 / t / 1e6; m = mn * 1e6 * 8 / t / 1e6
				printf "%s,%d,%s,%.3f,%.3f,%.2f,%.2f\n", cc, r, rest, k, m, st, k + m + st }'
		done
	done
} >"$res/rounds.csv"
sed 's/^/# /' "$res/summary.txt"

if [[ " $CCS " == *" dctcp_fixed "* && " $CCS " == *" dctcp "* ]]; then
	ratio_ci dctcp_fixed dctcp "$res/rounds.csv" >"$res/ratios.txt"
	sed 's/^/# /' "$res/ratios.txt"
fi

# The targets, reported (the run itself only fails when it
# could not run)
get() { awk -F, -v c="$1" -v r="$2" -v f="$3" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
	$1 == c && $2 == r { print $h[f] }' "$res/summary.csv"; }
smbit() { awk -v r="$ROUNDS" '{ s += $6 } END { printf "%.2f", s / r }' "$res/$1"/r*/s*-stream.txt; }
if [[ " $CCS " == *" dctcp_fixed "* ]]; then
	# Sized per RPC: a 1 MB RPC through a shared 40 Mbit/s link takes
	# over 200 ms whatever the algorithm, so only the 10 KB RPCs have a
	# 40 ms target.
	n40=$(get dctcp_fixed 10k ge40ms)
	echo "TARGET no dctcp_fixed 10 KB RPC >= 40 ms: $([ "$n40" -eq 0 ] && echo met || echo "NOT met ($n40)")"
	if [[ " $CCS " == *" cubic "* ]]; then
		cmp_num "$(get dctcp_fixed 10k p999_us)" "<=" "$(get cubic 10k p999_us)" && v=met || v="NOT met"
		echo "TARGET 10 KB p99.9 dctcp_fixed <= cubic: $v ($(get dctcp_fixed 10k p999_us) vs $(get cubic 10k p999_us) us)"
	fi
	if [[ " $CCS " == *" dctcp "* ]]; then
		cmp_num "$(get dctcp_fixed 10k p999_us)" "<=" "$(awk -v a="$(get dctcp 10k p999_us)" 'BEGIN { print 1.1 * a }')" && v=met || v="NOT met"
		echo "TARGET 10 KB p99.9 dctcp_fixed <= 1.1 x dctcp: $v ($(get dctcp_fixed 10k p999_us) vs $(get dctcp 10k p999_us) us)"
		cmp_num "$(smbit dctcp_fixed)" ">=" "$(awk -v a="$(smbit dctcp)" 'BEGIN { print 0.95 * a }')" && v=met || v="NOT met"
		echo "TARGET stream dctcp_fixed >= 0.95 x dctcp: $v ($(smbit dctcp_fixed) vs $(smbit dctcp) Mbit/s per round)"
		# no ratio's interval excludes 1.0 on the wrong side (more latency,
		# fewer RPCs or less goodput); with 5 rounds that shows no
		# difference, not equivalence
		worse=$(awk '/^#/ || $2 == "-" { next } {
			gsub(/[\[\],]/, " "); lat = ($1 ~ /_us$|ge40ms$/)
			if ((lat && $3 > 1) || (!lat && $4 < 1)) { printf "%s%s %s", sep, $1, $2; sep = ", " } }' "$res/ratios.txt")
		echo "TARGET no worse than dctcp (every dctcp_fixed/dctcp interval includes 1.0 or is better): $([ -z "$worse" ] && echo met || echo "NOT met (worse: $worse)")"
	fi
fi | tee "$res/targets.txt" | sed 's/^/# /'

cp "$here/dctcp_rpc.gp" "$res/dctcp_rpc.gp"
if command -v gnuplot >/dev/null; then
	(cd "$res" && gnuplot dctcp_rpc.gp) && log "plot: $res/dctcp_rpc.png"
else
	log "gnuplot not installed here: render with bench/dctcp_plot.sh $res"
fi
exit 0
