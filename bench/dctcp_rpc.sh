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
# Writes RESULTS_DIR/CC/{s1,s2}-{1m,10k}.us (one latency per line, µs),
# RESULTS_DIR/CC/{s1,s2}-stream.txt, RESULTS_DIR/CC/stats.txt,
# RESULTS_DIR/summary.txt and summary.csv, RESULTS_DIR/dctcp_rpc.gp and, when
# gnuplot is installed, dctcp_rpc.png (else render it on the host with
# bench/dctcp_plot.sh RESULTS_DIR).
# Tunables (environment): SECS (per algorithm, default 60), RATE (40mbit),
# MARK_KB (20), CCS ("cubic dctcp dctcp_fixed").

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/lib.sh"

res=${1:?usage: dctcp_rpc.sh RESULTS_DIR}
SECS=${SECS:-60}
RATE=${RATE:-40mbit}
MARK_KB=${MARK_KB:-20}
CCS=${CCS:-cubic dctcp dctcp_fixed}
RPCBENCH=$TOOLS_DIR/rpcbench

require_root
require_tool rpcbench
require_cmd ip tc awk sort
for cc in $CCS; do
	case $cc in
	cubic | reno) ;;
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

port=6000
for cc in $CCS; do
	out=$res/$cc
	mkdir -p "$out"
	port=$((port + 1))
	log "== $cc: ${SECS} s"
	stats "$out/stats-before.txt"
	ip netns exec "$NS_RCV" "$RPCBENCH" server -p "$port" -C "$cc" &
	srv=$!
	on_exit kill "$srv"
	wait_for 10 sh -c "ip netns exec $NS_RCV ss -Hltn sport = :$port | grep -q ." ||
		fail "rpcbench server did not start"
	pids=()
	for s in 1 2; do
		ns=NS_S$s
		ip netns exec "${!ns}" "$RPCBENCH" stream -H "$RCV_ADDR" -p "$port" -C "$cc" -t "$SECS" \
			>"$out/s$s-stream.txt" 2>&1 &
		pids+=($!)
		ip netns exec "${!ns}" "$RPCBENCH" rpc -H "$RCV_ADDR" -p "$port" -C "$cc" -t "$SECS" \
			-s 1000000 -o "$out/s$s-1m.us" 2>>"$out/log.txt" &
		pids+=($!)
		ip netns exec "${!ns}" "$RPCBENCH" rpc -H "$RCV_ADDR" -p "$port" -C "$cc" -t "$SECS" \
			-s 10000 -o "$out/s$s-10k.us" 2>>"$out/log.txt" &
		pids+=($!)
	done
	bad=0
	for p in "${pids[@]}"; do
		wait "$p" || bad=1
	done
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	stats "$out/stats.txt"
	[ "$bad" -eq 0 ] || fail "a client of the $cc run failed (see $out/log.txt)"
done

# ---- summary ---------------------------------------------------------------------
pct() {	# pct FILE... : n p50 p99 p99.9 max n>=40ms (values in µs)
	cat "$@" | sort -n | awk '{ v[NR] = $1 } END {
		n = NR; if (!n) { print "0 - - - - -"; exit }
		q[1] = 0.5; q[2] = 0.99; q[3] = 0.999
		for (i = 1; i <= 3; i++) { k = int(q[i] * n + 0.999999); if (k < 1) k = 1; r[i] = v[k] }
		c = 0; for (i = 1; i <= n; i++) if (v[i] >= 40000) c++
		printf "%d %.0f %.0f %.0f %.0f %d\n", n, r[1], r[2], r[3], v[n], c }'
}
{
	echo "# dctcp_rpc: $(uname -r), bottleneck $RATE, marking above ${MARK_KB} KB, ${SECS} s per algorithm"
	printf '%-12s %-5s %7s %9s %9s %9s %9s %6s\n' cc rpc n p50_us p99_us p99.9_us max_us ge40ms
	for cc in $CCS; do
		for sz in 10k 1m; do
			read -r n p50 p99 p999 mx c40 <<<"$(pct "$res/$cc"/s*-"$sz".us)"
			printf '%-12s %-5s %7s %9s %9s %9s %9s %6s\n' "$cc" "$sz" "$n" "$p50" "$p99" "$p999" "$mx" "$c40"
		done
	done
	echo
	printf '%-12s %12s %9s %9s\n' cc stream_mbit timeouts retrans
	for cc in $CCS; do
		mb=$(awk '{ s += $6 } END { printf "%.2f", s }' "$res/$cc"/s*-stream.txt)
		to=$(awk '$2 == "TcpExtTCPTimeouts" { s += $3 } END { print s + 0 }' "$res/$cc/stats.txt")
		to0=$(awk '$2 == "TcpExtTCPTimeouts" { s += $3 } END { print s + 0 }' "$res/$cc/stats-before.txt")
		rt=$(awk '$2 == "TcpRetransSegs" { s += $3 } END { print s + 0 }' "$res/$cc/stats.txt")
		rt0=$(awk '$2 == "TcpRetransSegs" { s += $3 } END { print s + 0 }' "$res/$cc/stats-before.txt")
		printf '%-12s %12s %9s %9s\n' "$cc" "$mb" $((to - to0)) $((rt - rt0))
	done
} >"$res/summary.txt"
{
	echo "cc,rpc,n,p50_us,p99_us,p999_us,max_us,ge40ms"
	for cc in $CCS; do
		for sz in 10k 1m; do
			echo "$cc,$sz,$(pct "$res/$cc"/s*-"$sz".us | tr ' ' ',')"
		done
	done
} >"$res/summary.csv"
sed 's/^/# /' "$res/summary.txt"

# issue 3 targets, reported (the run itself only fails when it could not run)
get() { awk -F, -v c="$1" -v r="$2" -v f="$3" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
	$1 == c && $2 == r { print $h[f] }' "$res/summary.csv"; }
mbit() { awk '{ s += $6 } END { printf "%.2f", s }' "$res/$1"/s*-stream.txt; }
if [[ " $CCS " == *" dctcp_fixed "* ]]; then
	n40=$(($(get dctcp_fixed 10k ge40ms) + $(get dctcp_fixed 1m ge40ms)))
	echo "TARGET no dctcp_fixed RPC >= 40 ms: $([ "$n40" -eq 0 ] && echo met || echo "NOT met ($n40)")"
	if [[ " $CCS " == *" cubic "* ]]; then
		cmp_num "$(get dctcp_fixed 10k p999_us)" "<=" "$(get cubic 10k p999_us)" && v=met || v="NOT met"
		echo "TARGET 10 KB p99.9 dctcp_fixed <= cubic: $v ($(get dctcp_fixed 10k p999_us) vs $(get cubic 10k p999_us) us)"
	fi
	if [[ " $CCS " == *" dctcp "* ]]; then
		cmp_num "$(get dctcp_fixed 10k p999_us)" "<=" "$(awk -v a="$(get dctcp 10k p999_us)" 'BEGIN { print 1.1 * a }')" && v=met || v="NOT met"
		echo "TARGET 10 KB p99.9 dctcp_fixed <= 1.1 x dctcp: $v ($(get dctcp_fixed 10k p999_us) vs $(get dctcp 10k p999_us) us)"
		cmp_num "$(mbit dctcp_fixed)" ">=" "$(awk -v a="$(mbit dctcp)" 'BEGIN { print 0.95 * a }')" && v=met || v="NOT met"
		echo "TARGET stream dctcp_fixed >= 0.95 x dctcp: $v ($(mbit dctcp_fixed) vs $(mbit dctcp) Mbit/s)"
	fi
fi | tee "$res/targets.txt" | sed 's/^/# /'

cp "$here/dctcp_rpc.gp" "$res/dctcp_rpc.gp"
if command -v gnuplot >/dev/null; then
	(cd "$res" && gnuplot dctcp_rpc.gp) && log "plot: $res/dctcp_rpc.png"
else
	log "gnuplot not installed here: render with bench/dctcp_plot.sh $res"
fi
exit 0
