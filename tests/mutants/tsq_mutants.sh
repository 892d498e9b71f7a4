#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Wrong tsq_probes the tsq_probe tests must catch.  In a guest: copies
# tsq_probe from the installed DKMS source, applies
# tests/mutants/tsq_probe/mutantN.patch to the copy (the shipped source has
# no test code), builds it (tests/lib.sh's mutant_build), puts it where
# modprobe finds the real one, runs the test that must catch it, and puts
# the real module back.  Passes for a mutant when its test FAILS (exit 1,
# not a skip), and for the real module (N=0, the copy built unpatched) when
# the same tests pass.  A patch that no longer applies fails its mutant
# ("mutant N builds").  Each patch says what it breaks:
#   1  tsq_probe_bh.sh:   a socket whose last push sent nothing pushed again
#   2  tsq_probe_load.sh: the tcp_wfree ftrace hook left out of the build
#   3  tsq_probe_counters.sh: every push with unsent data counted as
#      autocork (single writes must leave autocork at 0)
#   4  tsq_probe_neutral.sh: the segment being transmitted judged as a
#      lost wake-up candidate (healthy traffic checked under the lock)
#   5  tsq_probe_pureack.sh: a pure ACK below taken for a completion to come
#   6  tsq_probe_completer.sh: a last completion that finds TSQ_THROTTLED
#      set trusted to wake TSQ (the completer-side race goes unseen)
#   7  tsq_probe_counters.sh: txc_sample ignored, every TCP skb timed
#   tests:mutants/tsq_mutants.sh   (TSQ_MUTANTS=1 or 4+6 to run a subset)
# taint-expected: N (tsq_probe_bh.sh injects faults, which taints TAINT_TEST)
. "$(dirname "$0")/../lib.sh"
require_root
require_disruptive "replaces the installed tsq_probe module"
require_module tsq_probe
mutants_setup tsq_probe tsq_probe tsq_probe

declare -A CATCH=(
	[1]=tsq_probe_bh.sh	# pushes again a socket whose last push sent nothing: a loop
	[2]=tsq_probe_load.sh	# the tcp_wfree ftrace hook left out of the build
	[3]=tsq_probe_counters.sh	# autocork counted for pushes that did not cork
	# 4: a completion of the segment being transmitted right now judged as
	# a lost wake-up candidate: a check for every such completion
	[4]=tsq_probe_neutral.sh
	[5]=tsq_probe_pureack.sh	# a pure ACK below taken for a completion to come
	# 6: a last completion that finds TSQ_THROTTLED set trusted to wake
	# TSQ: the completer-side lost wake-up (the flag left set) goes unseen
	[6]=tsq_probe_completer.sh
	[7]=tsq_probe_counters.sh	# txc_sample ignored: every TCP skb timed
)
# Mutant 2 differs from the real module (m0, rebuilt) only where it has the hook.
mutant_applies() {
	[ "$1" != 2 ] || nm "$MUT_TMP/m0.ko" | grep -qw wfree_ftrace_hit ||
		{ echo "the real tsq_probe has no ftrace hook on this kernel: nothing to leave out"; return 1; }
}
# TSQ_MUTANTS: numbers separated by anything but a digit ("4+6": the
# guest's kernel command line takes no space or comma).
mutants_judge CATCH "$(tr -c '0-9' ' ' <<<"${TSQ_MUTANTS:-1 2 3 4 5 6 7}")"
ksft_finish
