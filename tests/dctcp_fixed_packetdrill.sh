#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# DCTCP packet by packet: packetdrill plays the peer through
# its tun device, in a network namespace of its own, and each script in
# tests/packetdrill/ says which packet the kernel must send next and what
# its window must be; a packet with another ACK number or ECE flag, or
# another ssthresh, fails it.  The verdicts are on packet contents and
# socket state, not on time: the tolerance (PD_TOLERANCE_US) only bounds
# how long packetdrill waits for a packet, and is wide because the guests
# are emulated (a delayed ACK where an immediate one is written passes it,
# the same ACK's ECE flag still decides).
#   dctcp_recv_ce.pkt     the receiver's ECE echo and CE-change ACKs
#   dctcp_send_alpha.pkt  the sender's cut, cwnd * (1 - alpha / 2)
# Each runs against dctcp_fixed and in-tree dctcp (parity), and against
# reno, which must fail it (the control: the script tells DCTCP from an
# RFC 3168 stack).  tests/mutants/dctcp_mutants.sh shows it catching the
# stale-echo, no-early-ACK and alpha-cut mutants.

. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_module tcp_dctcp_fixed
PD=$TOOLS_DIR/packetdrill
[ -x "$PD" ] || skip "packetdrill not built (tests/tools/build-packetdrill.sh $PD: needs bison, flex and its source, see scripts/third-party.sh)"
if [ ! -c /dev/net/tun ]; then
	module_load_own tun
	wait_for 5 test -c /dev/net/tun || skip "no /dev/net/tun (tun module) for packetdrill"
fi
SCRIPTS=$TESTS_DIR/packetdrill
TOL=${PD_TOLERANCE_US:-100000}

new_ns NS
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"

# pd CC SCRIPT: run SCRIPT with CC filled in; its output in $tmp/out
pd() {
	local cc=$1 s=$2
	sed -e "s/@CC@/$cc/g" -e "s/@CCLEN@/${#cc}/g" "$SCRIPTS/$s.pkt" >"$tmp/$cc-$s.pkt"
	(cd "$tmp" && ip netns exec "$NS" "$PD" --tolerance_usecs="$TOL" "$cc-$s.pkt") \
		>"$tmp/out" 2>&1
}
# passes CC SCRIPT: the script passes with CC (its output logged if not)
passes() {
	pd "$1" "$2" && return 0
	sed 's/^/#   /' "$tmp/out" | head -8
	return 1
}
# refuted CC SCRIPT: the script fails with CC on a packet's contents or an
# assertion on tcp_info, both after the handshake went through (not on
# setup or on time: a broken script or a slow guest would "fail" every CC)
refuted() {
	if pd "$1" "$2"; then
		log "$2 passed with $1"
		return 1
	fi
	grep -E 'error|Assertion' "$tmp/out" | head -3 | sed 's/^/#   /'
	grep -qE 'error handling packet: live packet field|AssertionError' "$tmp/out"
}

have_dctcp=0
if [ -e "$TAILFIX_SYSFS/module/tcp_dctcp" ] || modprobe -n tcp_dctcp 2>/dev/null; then
	module_load_own tcp_dctcp && have_dctcp=1
fi

dmesg_mark
for s in dctcp_recv_ce dctcp_send_alpha; do
	check "$s: dctcp_fixed" passes dctcp_fixed "$s"
	if [ "$have_dctcp" = 1 ]; then
		check "$s: in-tree dctcp (parity)" passes dctcp "$s"
	else
		check_skip "$s: in-tree dctcp (parity)" "tcp_dctcp not available"
	fi
	check "$s: reno fails it (control: the script tells DCTCP from RFC 3168)" refuted reno "$s"
done
check "dmesg clean" dmesg_clean
ksft_finish
