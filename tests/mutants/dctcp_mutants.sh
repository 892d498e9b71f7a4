#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Wrong DCTCPs the dctcp_fixed tests must catch.  In a guest:
# copies tcp_dctcp_fixed from the installed DKMS source, applies
# tests/mutants/dctcp/mutantN.patch to the copy (the shipped source has no
# test code), builds it (tests/lib.sh's mutant_build), puts it where
# modprobe finds the real one, runs the test that must catch it, and puts
# the real module back.  Passes for a
# mutant when its test FAILS (exit 1, not a skip), and for the real module
# (N=0, the copy built unpatched) when the same tests pass, so that a
# failure is the mutant's and not the harness's.  A patch that no longer
# applies fails its mutant ("mutant N builds").  Needs the kernel headers
# and patch(1) in the guest (the image has them).
#   tests:mutants/dctcp_mutants.sh   (DCTCP_MUTANTS="1 3", or 1:3 through
#   run.sh's TAILFIX_GUEST_ENV, to run a subset)
. "$(dirname "$0")/../lib.sh"
require_root
require_disruptive "replaces the installed tcp_dctcp_fixed module"
require_module tcp_dctcp_fixed
mutants_setup tcp_dctcp_fixed tcp_dctcp_fixed dctcp

# The tests that must catch each mutant (each of them must fail).  There is
# no mutant 4 any more (a first-flight floor above the cwnd before the
# reduction): with the ssthresh floor of 2, a window of 1 goes to 2 after an
# ECE anyway (PRR, the end of the CWR episode), so it is not wrong.
declare -A CATCH=(
	# stale-shadow ECE: 2b's exact echo; the packetdrill receiver's ACK 1001
	[1]="dctcp_fixed_packets.sh dctcp_fixed_packetdrill.sh"
	# no early ACK of the prior run: 2b; the packetdrill receiver's ACK 1001
	[2]="dctcp_fixed_packets.sh dctcp_fixed_packetdrill.sh"
	# cut cwnd * alpha: reductions are cwnd * (1 - alpha/2); ssthresh 8 of 15
	[3]="dctcp_fixed_alpha.sh dctcp_fixed_packetdrill.sh"
	# every CWR taken for ECE: the local-congestion CWR is other_cwr
	[5]=dctcp_fixed_safety.sh
	# no first-flight floor: 2d's "first flight after ECE >= 2 segments"
	[6]=dctcp_fixed_packets.sh
	# no PLB check at TX_START: the idle rehashes in-tree dctcp makes
	[7]=dctcp_fixed_plb.sh
	# ssthresh 1 at a window of 1: the window-of-1 cases' floor of 2
	[8]=dctcp_fixed_ece_cwnd.sh
	# CE share 0 under AccECN: alpha against in-tree dctcp's (7.x, tcp_ecn=3)
	[9]=dctcp_fixed_accecn.sh
	# the core's ACK on a CE change taken back under AccECN: the receiver's
	# change-triggered ACKs against in-tree dctcp's (7.x, tcp_ecn=3)
	[10]=dctcp_fixed_accecn.sh
)
# Mutant 6 is told apart only where the core leaves a window of one segment
# after an ECE reduction with nothing in flight (in-tree dctcp's first flight
# is 1 on 5.10): from 6.1 on, PRR already leaves two, the floor never fires
# (2d asserts it), and the mutant is the real module's behaviour there.
# Which case holds is read from the kernel, not from its version: the real
# module's control run of dctcp_fixed_packets.sh says which 2d check it made.
mutant_applies() {	# (mutants_judge's hook)
	[ "$1" = 6 ] || return 0
	grep -q '2d in-tree dctcp sends 1 here' "$MUT_TMP/out.0.dctcp_fixed_packets.sh" && return 0
	echo "in-tree dctcp's first flight after ECE is already 2 segments on this kernel: the floor never fires, mutant 6 is the real module's behaviour"
	return 1
}

# Mutant 7 is told apart only where the kernel has PLB (6.2+): elsewhere
# dctcp_fixed_plb.sh skips, with the real module too, so neither runs.
MUTANTS=$(echo "${DCTCP_MUTANTS:-1 2 3 5 6 7 8 9 10}" | tr : " ")
if [[ " $MUTANTS " == *" 7 "* ]] && [ ! -e /proc/sys/net/ipv4/tcp_plb_enabled ]; then
	MUTANTS=$(echo " $MUTANTS " | sed 's/ 7 / /')
	check_skip "mutant 7" "no PLB in kernel $(uname -r) (net.ipv4.tcp_plb_*): no idle rehash to leave out"
fi
# Mutants 9 and 10 likewise only under Accurate ECN (7.x): elsewhere
# tcp_ecn=3 is refused and dctcp_fixed_accecn.sh skips.  Tried in a
# namespace of its own.
if ! unshare -n sysctl -qw net.ipv4.tcp_ecn=3 2>/dev/null; then
	for m in 9 10; do
		[[ " $MUTANTS " == *" $m "* ]] || continue
		MUTANTS=$(echo " $MUTANTS " | sed "s/ $m / /")
		check_skip "mutant $m" "net.ipv4.tcp_ecn=3 refused in kernel $(uname -r): no Accurate ECN"
	done
fi
# Mutant 8 shows only on a window of 1: dctcp_fixed_ece_cwnd.sh's initcwnd-1
# cases, which every floor setting runs.  One floor setting, 3 requests per
# case, as in make check: the test runs twice here (control and mutant), and
# with every pattern run twice this program once went past run_tests.sh's
# 900 s in the 6.12 guest.
export DCTCP_ECE_MINS=${DCTCP_ECE_MINS:-2} DCTCP_ECE_TRIALS=${DCTCP_ECE_TRIALS:-3}
mutants_judge CATCH "$MUTANTS"
ksft_finish
