#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dctcp_delack.sh RESULTS_DIR: RPC latency against a peer that delays its
# ACKs the classic way, in-tree dctcp against dctcp_fixed (guest, as root).
#
# The peer (tests/dctcp_fixed_peer.py --case delayed-rpc, scapy on an
# AF_PACKET socket, topo_raw_peer) is an RPC server behind a receiver that
# ACKs every second full-sized segment and holds a lone one DELACK_MS (40):
# RFC 1122's delayed ACK with no quick ACK for a CWR-marked segment, as
# peers other than Linux since 4.18 do.  The kernel's client sends REQ-byte
# requests (3000: three 1000-byte segments) and times each RPC until the
# 100-byte reply; the reply carries ECE as ECE_PATTERN says, cyclically
# (1111100000: episodes of congestion, five marked replies in a row, then
# five clean), so that the sender's window shrinks to its floor.  Where
# the core leaves a window of 1 after the reduction with nothing in flight
# (5.10 in-tree dctcp), the request's first segment goes alone and waits for
# the peer's timer; dctcp_fixed's floor of 2 sends two, which are ACKed at
# once.  Where the core already leaves 2 (6.1 on), both send the same.
#
# ROUNDS rounds (5), each running both algorithms in an order rotated each
# round, RPCS (1000) RPCs per run.  Writes RESULTS_DIR/CC/rN.us (one latency
# per line, µs), rounds.csv (per round: n, percentiles, RPCs that waited for
# the peer's timer), summary.txt (all rounds pooled), ratios.txt
# (dctcp_fixed / dctcp per metric, geometric mean and 95% CI) and
# verdict.txt: the p99.9 ratio's interval excluding 1.0 or not.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/lib.sh"
. "$here/bench-lib.sh"

res=${1:?usage: dctcp_delack.sh RESULTS_DIR}
ROUNDS=${ROUNDS:-5}
RPCS=${RPCS:-1000}
REQ=${REQ:-3000}
DELACK_MS=${DELACK_MS:-40}
ECE_PATTERN=${ECE_PATTERN:-1111100000}
PEER=$TESTS_DIR/dctcp_fixed_peer.py

require_root
require_cmd ip ethtool python3 awk sort
python3 -c 'import scapy.layers.inet' 2>/dev/null || skip "python3 scapy not installed"
require_module tcp_dctcp_fixed
require_module tcp_dctcp
mkdir -p "$res" || fail "cannot create $res"
res=$(cd "$res" && pwd)
topo_raw_peer
floor=$(cat /sys/module/tcp_dctcp_fixed/parameters/min_cwnd_after_ce)
{
	echo "# dctcp_delack: $(uname -r), $ROUNDS rounds x $RPCS RPCs per algorithm, request $REQ bytes (MSS 1000), reply 100 bytes"
	echo "# peer: ACK every second full-sized segment, a lone one held $DELACK_MS ms, no quick ACK on CWR; ECE on replies: $ECE_PATTERN (cyclic)"
	echo "# dctcp_fixed min_cwnd_after_ce=$floor"
} >"$res/summary.txt"

port=6100
ccs=(dctcp dctcp_fixed)
echo "cc,round,n,p50_us,p99_us,p999_us,max_us,ge40ms,held" >"$res/rounds.csv"
for round in $(seq 1 "$ROUNDS"); do
	if [ $((round % 2)) -eq 0 ]; then order=(dctcp_fixed dctcp); else order=(dctcp dctcp_fixed); fi
	for cc in "${order[@]}"; do
		port=$((port + 1))
		mkdir -p "$res/$cc"
		out=$(ip netns exec "$NS_P" timeout 900 python3 "$PEER" --case delayed-rpc --cc "$cc" \
			--kns "$NS_K" --kip "$KIP" --kmac "$KMAC" --pip "$PIP" --kport "$port" \
			--pport $((port + 30000)) --trials "$RPCS" --req "$REQ" --mss 1000 \
			--reply-ece "$ECE_PATTERN" --delack-ms "$DELACK_MS" 2>&1)
		line=$(grep '^RESULT ' <<<"$out")
		[ -n "$line" ] || { printf '%s\n' "$out" | tail -5; fail "round $round, $cc: the peer gave no result"; }
		sed -n 's/.* lat_us=\([^ ]*\).*/\1/p' <<<"$line" | tr ',' '\n' >"$res/$cc/r$round.us"
		held=$(sed -n 's/.* held=\([0-9]*\).*/\1/p' <<<"$line")
		echo "$cc,$round,$(pct "$res/$cc/r$round.us" | tr ' ' ','),$held" >>"$res/rounds.csv"
		log "round $round $cc: $(pct "$res/$cc/r$round.us") (n p50 p99 p99.9 max >=40ms, µs); held $held"
	done
done
{
	printf '%-12s %7s %9s %9s %9s %9s %6s %6s\n' cc n p50_us p99_us p99.9_us max_us ge40ms held
	for cc in "${ccs[@]}"; do
		read -r n p50 p99 p999 mx c40 <<<"$(pct "$res/$cc"/r*.us)"
		held=$(awk -F, -v c="$cc" '$1 == c { s += $9 } END { print s + 0 }' "$res/rounds.csv")
		printf '%-12s %7s %9s %9s %9s %9s %6s %6s\n' "$cc" "$n" "$p50" "$p99" "$p999" "$mx" "$c40" "$held"
	done
} >>"$res/summary.txt"
ratio_ci dctcp_fixed dctcp "$res/rounds.csv" >"$res/ratios.txt"
r=$(awk '$1 == "p999_us"' "$res/ratios.txt")
case $r in
"") v="p99.9 ratio: none (a zero in some round)" ;;
*"includes 1.0"*) v="p99.9 dctcp_fixed / dctcp $(echo $r | cut -d' ' -f2-4): the interval includes 1.0: no measurable difference on $(uname -r)" ;;
*) v="p99.9 dctcp_fixed / dctcp $(echo $r | cut -d' ' -f2-4): the interval excludes 1.0 on $(uname -r)" ;;
esac
echo "$v" >"$res/verdict.txt"
sed 's/^/# /' "$res/summary.txt" "$res/ratios.txt" "$res/verdict.txt"
check "both algorithms ran every round" test "$(($(wc -l <"$res/rounds.csv") - 1))" -eq $((2 * ROUNDS))
check "dmesg clean" dmesg_clean
ksft_finish
