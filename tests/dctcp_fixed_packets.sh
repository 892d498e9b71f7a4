#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dctcp_fixed at packet level.  A scapy peer on an
# AF_PACKET socket (dctcp_fixed_peer.py) plays the remote TCP; the kernel
# under test runs dctcp_fixed in its own namespace:
#
#   NS_K 198.18.0.1 veth0 <-> veth0 NS_P (no address: the peer kernel stays
#   silent; the peer script answers for 198.18.0.2)
#
#   2a  (core check: the kernel's tcp_ecn_accept_cwr(), cubic would pass it)
#       CWR-marked data is ACKed at once in delayed-ACK (ping-pong) mode,
#       judged by the receiver namespace's TcpExtDelayedACKs: +1 for each
#       plain segment (the kernel was in delayed-ACK mode; a trial where it
#       was not is measured again and counted as a retry), +0 for every
#       CWR-marked one.  Before each timed segment, request/response rounds
#       until the request's ACK rides on the reply (ping-pong);
#   2b  ECE echo is exact: CE on segments 3, 4 and 7 of 10; every ACK covers
#       segments of one CE state with ECE equal to it and every CE change ends
#       an ACK; the same check must fail against cubic (classic ECN latches
#       ECE) for that reason (the trials ran, inexact echoes were seen),
#       which shows the checker can see the difference; in-tree dctcp must
#       pass it too (parity);
#   2c  (core check for the CWR part) the netdev trace: CE on the last
#       request segment, the reply carries ECE, the next request starts
#       with CWR: no duplicate ACK, no retransmission, no delayed-ACK timer
#       ACK (counter, as 2a); and the ACK-on-data-then-CE sequence;
#
#   In every receiver case a duplicate ACK is one in the sense of RFC 5681
#   (no data, no SYN/FIN, same ACK number and window as the last ACK, while
#   the peer has data outstanding), and an ACK for old data that does not
#   open the window counts with it; window updates and repeats of an ACK
#   with nothing outstanding are only reported (dctcp_fixed_peer.py).
#   2d  sender: ECE on the reply with nothing in flight; the next request's
#       first flight is at least 2 segments (min_cwnd_after_ce=2).  Where
#       in-tree dctcp's is 2 as well (6.1 and later: the core's PRR already
#       leaves cwnd >= 2 when the ECE ACK advances snd_una), the flights are
#       the same (parity) and the floor never fired (floor_applied +0);
#       where in-tree dctcp's is 1 (5.10's core leaves cwnd at 1), the
#       floor is what made it 2: it fired in every round.  That cwnd never
#       rises on ECE is dctcp_fixed_ece_cwnd.sh.

. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip ethtool python3 tc
python3 -c 'import scapy.layers.inet' 2>/dev/null || skip "python3 scapy not installed"
require_module tcp_dctcp_fixed

PARAMS=/sys/module/tcp_dctcp_fixed/parameters
PEER="$TESTS_DIR/dctcp_fixed_peer.py"
topo_raw_peer

port=5100
# peer CASE CC [args...]: run one case; its output goes to $OUT.
peer() {
	local case=$1 cc=$2
	shift 2
	port=$((port + 1))
	OUT=$(ip netns exec "$NS_P" python3 "$PEER" --case "$case" --cc "$cc" \
		--kns "$NS_K" --kip "$KIP" --kmac "$KMAC" --pip "$PIP" \
		--kport "$port" --pport $((port + 30000)) "$@" 2>&1)
	local rc=$?
	printf '%s\n' "$OUT" | sed -n 's/^# /#   /p; s/^RESULT /#   RESULT /p'
	return $rc
}
stat() { kv /sys/kernel/tcp_dctcp_fixed/stats "$1"; }
result() { printf '%s\n' "$OUT" | sed -n "s/^RESULT .*$1=\([^ ]*\).*/\1/p"; }

# 2d needs the default floor; setting it is disruptive (before any check)
orig=$(cat "$PARAMS/min_cwnd_after_ce")
if [ "$orig" != 2 ]; then
	require_disruptive "sets tcp_dctcp_fixed's min_cwnd_after_ce back to its default"
	on_exit "echo $orig > $PARAMS/min_cwnd_after_ce"
	echo 2 >"$PARAMS/min_cwnd_after_ce"
fi
dmesg_mark

# 2a
log "2a: CWR-marked data in ping-pong mode (dctcp_fixed receiver)"
check "2a CWR-marked data ACKed at once, plain segment delayed" peer delack dctcp_fixed --trials 5
# the counter check can fail: with the CWR flag left off (peer --mutant
# no-cwr) the same trials must see the delayed-ACK timer's ACKs
peer delack dctcp_fixed --trials 2 --mutant no-cwr
rc=$?
check "2a checker self-test: a segment without CWR is caught waiting for the timer" \
	sh -c "[ $rc -eq 1 ] && printf '%s\n' \"\$0\" | grep -qE '^RESULT .* cwr_delayed=[1-9]'" "$OUT"

# 2b
log "2b: CE on segments 3, 4, 7 of 10 (dctcp_fixed receiver)"
s0=$(stat ce_change_acks)
check "2b ECE echo follows CE changes exactly" peer ce-pattern dctcp_fixed --pattern 0011001000 --trials 3
s1=$(stat ce_change_acks)
log "ce_change_acks: $s0 -> $s1, prior_run_acks: $(stat prior_run_acks)"
check "2b immediate ACKs on CE change counted" test "$s1" -ge $((s0 + 3 * 4))
check "2b ECE echo exact for CE on 1, 5, 6, 10 too" peer ce-pattern dctcp_fixed --pattern 1000110001 --trials 2
log "2b control: the same check against cubic must find the latched ECE"
peer ce-pattern cubic --pattern 0011001000 --trials 1
rc=$?
# fails for the right reason only: the peer ran its trial against a cubic
# socket and found inexact echoes (not a timeout, a crash or a skip)
check "2b checker detects inexact ECE (cubic control)" sh -c \
	"[ $rc -eq 1 ] && printf '%s\n' \"\$0\" | grep -q 'congestion control: cubic' &&
	 printf '%s\n' \"\$0\" | grep -qE '^RESULT trials=1 inexact=[1-9]'" "$OUT"
if modprobe tcp_dctcp 2>/dev/null; then
	check "2b in-tree dctcp echoes exactly too (parity)" peer ce-pattern dctcp --pattern 0011001000 --trials 2
else
	check_skip "2b in-tree dctcp echoes exactly too (parity)" "tcp_dctcp not available"
fi

# 2c
log "2c: CE on the last request segment, ECE on the reply, CWR on the next"
check "2c no duplicate ACK, no retransmission, CWR segment ACKed at once" peer trace dctcp_fixed --trials 4

# 2d
f0=$(stat floor_applied)
peer sender dctcp_fixed --trials 5
rc=$?
fixed=$(result flights) fixed_min=$(result min)
f1=$(stat floor_applied)
check "2d dctcp_fixed: first flight after ECE >= 2 segments" \
	test "$rc" -eq 0 -a "${fixed_min:-0}" -ge 2
if modprobe tcp_dctcp 2>/dev/null; then
	peer sender dctcp --trials 5
	rc=$?
	intree=$(result flights) intree_min=$(result min)
	log "2d first flight after ECE with nothing in flight, segments per round:"
	log "    dctcp_fixed:   $fixed (floor_applied $f0 -> $f1)"
	log "    in-tree dctcp: ${intree:-?}"
	[ "$rc" -eq 0 ] && [ -n "$intree" ] || check "2d in-tree dctcp's run" false
	rounds=$(tr ',' '\n' <<<"$fixed" | grep -c .)
	if [ "${intree_min:-0}" -ge 2 ]; then
		check "2d in-tree dctcp's first flights are the same (parity)" \
			test "$intree" = "$fixed"
		check "2d the core already sends 2: the floor never fired (floor_applied $f0 -> $f1)" \
			test "$f1" -eq "$f0"
	elif [ -n "$intree" ]; then
		check "2d in-tree dctcp sends 1 here: the floor fired in each of the $rounds rounds (floor_applied $f0 -> $f1)" \
			test $((f1 - f0)) -ge "$rounds"
	fi
else
	check_skip "2d in-tree dctcp's first flights, and the floor" "tcp_dctcp not available"
fi

check "dmesg clean" dmesg_clean
ksft_finish
