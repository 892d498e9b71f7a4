#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A congestion signal never raises the window, and never
# sets ssthresh below 2 segments.  The kernel sends requests; the raw-socket
# peer (dctcp_fixed_peer.py --case ece-cwnd) plays the receiver, ACKs every
# segment on its own and puts ECE on the ACKs a pattern selects: on the
# reply that ends a request (the RPC case: the next flight starts with
# nothing in flight, CA_EVENT_TX_START) and on the ACKs inside a request
# (PRR while data is in flight).  Around each ECE ACK it reads the sender's
# cwnd and ssthresh with sock_diag: neither cwnd after nor a new ssthresh
# may exceed the window before the signal -- the cwnd, or inside a CWR
# episode the ssthresh that episode set (PRR may bring cwnd back up to it,
# and the end of an episode restores it, in the core, for every congestion
# control) -- or 2 segments, whichever is more; and ssthresh may not go
# below 2 (RFC 5681's 2*SMSS, the floor of every Linux congestion control,
# in-tree dctcp's included).  Initial windows 1, 2, 4 and 10 (route
# initcwnd) make windows below, at and above that floor.  The same patterns
# run against in-tree dctcp (which both rules hold for), for dctcp_fixed
# with min_cwnd_after_ce 2 and 1.  Against the module before the first rule
# (min_cwnd_after_ce=10, the old maximum) the test fails: ECE raised cwnd
# from 4 to 10; against one with an ssthresh floor of 1 (test mutant 8 in
# tests/mutants/dctcp) it fails on the window-of-1 cases: ssthresh 1.

. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip ethtool python3
python3 -c 'import scapy.layers.inet' 2>/dev/null || skip "python3 scapy not installed"
require_disruptive "sets tcp_dctcp_fixed's min_cwnd_after_ce, a module-wide parameter"
require_module tcp_dctcp_fixed

PARAMS=/sys/module/tcp_dctcp_fixed/parameters
PEER="$TESTS_DIR/dctcp_fixed_peer.py"
topo_raw_peer

port=5600
# DCTCP_ECE_TRIALS: requests per case (make check runs 3: 23 cases of 6
# took about 180 s in each guest)
TRIALS=${DCTCP_ECE_TRIALS:-6}
case $TRIALS in
[2-9] | [1-9][0-9]) ;;
*) fail "DCTCP_ECE_TRIALS=$TRIALS: 2 to 99" ;;
esac
# run CC INITCWND REPLY_PATTERN MID_PATTERN [REQUEST_BYTES]: one peer run,
# verdict in $?
run() {
	local cc=$1 icw=$2 rp=$3 mp=$4 req=${5:-8000} out rc
	port=$((port + 1))
	ip -n "$NS_K" route replace 198.18.0.0/24 dev veth0 src "$KIP" initcwnd "$icw" ||
		fail "route initcwnd $icw"
	out=$(ip netns exec "$NS_P" python3 "$PEER" --case ece-cwnd --cc "$cc" \
		--kns "$NS_K" --kip "$KIP" --kmac "$KMAC" --pip "$PIP" \
		--kport "$port" --pport $((port + 30000)) --trials "$TRIALS" \
		--req "$req" --mss 1000 --reply-ece "$rp" --mid-ece "$mp" 2>&1)
	rc=$?
	printf '%s\n' "$out" >>"$ALL_OUT"
	printf '%s\n' "$out" | sed -n 's/^# /#   /p; s/^RESULT /#   RESULT /p'
	# a run that judged nothing proves nothing
	printf '%s\n' "$out" | grep -qE '^RESULT .* judged=[1-9]' || return 1
	return $rc
}

# INITCWND:REPLY:MID[:REQUEST_BYTES].
CASES="2:1111:0 4:1111:0 4:1010:01 10:1111:1 10:0110:001 10:1011:0"
# The one-segment requests from an initial window of 1 put the ECE reply on
# a window of 1: where ssthresh meets its floor of 2 (a module that keeps
# ssthresh at the cwnd there sets 1), and where the core's PRR may bring
# cwnd to that floor of 2.
CASES_CWND1="1:1111:0:1000 1:1011:1:3000"
ALL_OUT=$(mktemp)
on_exit "rm -f $ALL_OUT"
# all_cases CC [CASES]: every case for one congestion control and one
# setting of the floor
all_cases() {
	local cc=$1 spec icw rp mp req
	for spec in ${2:-$CASES $CASES_CWND1}; do
		IFS=: read -r icw rp mp req <<<"$spec"
		run "$cc" "$icw" "$rp" "$mp" "$req" || return 1
	done
}

orig=$(cat "$PARAMS/min_cwnd_after_ce")
on_exit "echo $orig > $PARAMS/min_cwnd_after_ce"
# DCTCP_ECE_MINS: the settings to run (the mutant proof runs the old module
# with 10, which the current one refuses)
for m in ${DCTCP_ECE_MINS:-2 1}; do
	echo "$m" >"$PARAMS/min_cwnd_after_ce" || fail "cannot set min_cwnd_after_ce=$m"
	log "dctcp_fixed, min_cwnd_after_ce=$m"
	check "dctcp_fixed (min_cwnd_after_ce=$m): ECE never raises cwnd or ssthresh, nor sets ssthresh below 2" \
		all_cases dctcp_fixed
done
echo "$orig" >"$PARAMS/min_cwnd_after_ce"

have_dctcp=0
if modprobe tcp_dctcp 2>/dev/null; then
	have_dctcp=1
	log "in-tree dctcp, same patterns"
	check "in-tree dctcp: ECE never raises cwnd or ssthresh, nor sets ssthresh below 2 (parity)" \
		all_cases dctcp
else
	check_skip "in-tree dctcp: ECE never raises cwnd or ssthresh, nor sets ssthresh below 2 (parity)" \
		"tcp_dctcp not available"
fi
# The window-of-1 cases judged an ECE on a window of 1 (w1 > 0), for every
# congestion control that ran them: otherwise the floor of 2 went untested.
w1_seen() {
	local cc n
	for cc in dctcp_fixed $([ "$have_dctcp" = 1 ] && echo dctcp); do
		n=$(sed -nE "s/^RESULT cc=$cc .* w1=([0-9]+) .*/\\1/p" "$ALL_OUT" | sum_ints)
		log "$cc: $n judged ECE ACKs on a window of 1"
		[ "$n" -gt 0 ] || return 1
	done
}
check "control: ECE ACKs on a window of 1 were judged (the ssthresh floor was exercised)" w1_seen
ksft_finish
