#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Model check of the tcp_push()/tcp_wfree() TSQ wake-up handshake
# (tsq_probe/model/tsq_wakeup.pml) with spin, per completer side and memory
# model (see the model's header for what each knob means):
#   arm64 (the hardware that loses wake-ups):
#     - 6.1.y's tcp_wfree() (READ_ONCE) with the tcp_push() barrier: lost
#       wake-up found -- the race patch 0002 closes;
#     - 6.12's tcp_wfree() (smp_load_acquire, = 6.1.y + patch 0002) with the
#       barrier: the full state space has none, and corking is reachable;
#     - without the barrier (6.1.y before 6.1.76 = what patch 0001 fixes):
#       lost wake-up found even with 6.12's completer;
#   LKMM (what the kernel memory model promises on every architecture):
#     - 6.12's completer with the barrier still loses: release-then-acquire
#       is not a strong fence, so LKMM does not guarantee 6.12's code;
#     - a full barrier (smp_mb__after_atomic()) after the refcount RMW does;
#   x86: no loss even without the barrier (locked RMWs are full barriers).

. "$(dirname "$0")/../lib.sh"

require_cmd spin gcc

MODEL=$TAILFIX_ROOT/tsq_probe/model/tsq_wakeup.pml
[ -f "$MODEL" ] || fail "model $MODEL missing"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# shellcheck source=../../tsq_probe/model/spin.sh
. "$TAILFIX_ROOT/tsq_probe/model/spin.sh"

# The knobs of each kernel variant.
K61="-DCOMPLETER=C61 -DBARRIER=1"		# 6.1.76 .. 6.1.192
K61_PATCHED="-DCOMPLETER=C612 -DBARRIER=1"	# 6.1.y + patch 0002
K612="-DCOMPLETER=C612 -DBARRIER=1"		# 6.12.118, mainline
K61_OLD="-DCOMPLETER=C61 -DBARRIER=0"		# 6.1.y before 6.1.76

# shellcheck disable=SC2086 # the knob lists are meant to split
{
check "arm64, 6.1 completer + tcp_push() barrier: spin finds a lost wake-up" \
	finds_violation arm64_61 -DMM=MM_ARM64 $K61
check "arm64, 6.12 completer + barrier: the full state space has no lost wake-up" \
	proves arm64_612 -DMM=MM_ARM64 $K612
check "arm64, 6.12 completer + barrier: the pusher can still cork (not vacuous)" \
	finds_violation arm64_612_vac -DMM=MM_ARM64 $K612 -DVACUITY=1
check "arm64, 6.1 + patch 0002 (smp_load_acquire): no lost wake-up" \
	proves arm64_61_patched -DMM=MM_ARM64 $K61_PATCHED
check "arm64, no tcp_push() barrier (6.1 before 6.1.76): lost wake-up" \
	finds_violation arm64_61_old -DMM=MM_ARM64 $K61_OLD
check "arm64, no barrier but 6.12 completer: still a lost wake-up (0001 needed)" \
	finds_violation arm64_612_nobarrier -DMM=MM_ARM64 -DCOMPLETER=C612 -DBARRIER=0
check "LKMM, 6.1 completer + barrier: lost wake-up" \
	finds_violation lkmm_61 -DMM=MM_LKMM $K61
check "LKMM, 6.12 completer + barrier: lost wake-up (release+acquire is no strong fence)" \
	finds_violation lkmm_612 -DMM=MM_LKMM $K612
check "LKMM, smp_mb__after_atomic() completer + barrier: no lost wake-up" \
	proves lkmm_mb -DMM=MM_LKMM -DCOMPLETER=CMB -DBARRIER=1
check "LKMM, smp_mb__after_atomic() completer + barrier: corking reachable" \
	finds_violation lkmm_mb_vac -DMM=MM_LKMM -DCOMPLETER=CMB -DBARRIER=1 -DVACUITY=1
check "LKMM, smp_mb__after_atomic() completer, no barrier: lost wake-up" \
	finds_violation lkmm_mb_nobarrier -DMM=MM_LKMM -DCOMPLETER=CMB -DBARRIER=0
check "x86, 6.1 completer, no barrier: no lost wake-up (locked RMWs)" \
	proves x86_61_old -DMM=MM_X86 $K61_OLD
check "x86, 6.1 completer, no barrier: corking reachable" \
	finds_violation x86_61_old_vac -DMM=MM_X86 $K61_OLD -DVACUITY=1
}

# The checks above must be able to fail: against mutants of the model, the
# verdicts flip.  mutant TAG SED-EXPR: a copy of the model edited by SED-EXPR.
mutant() {
	local f=$TMP/mutant-$1.pml
	sed -e "$2" "$MODEL" >"$f" && ! cmp -s "$MODEL" "$f" && echo "$f"
}

# env_not MODEL CHECK ARGS...: CHECK with MODEL as the model does NOT pass.
env_not() {
	local m=$1
	shift
	[ -n "$m" ] || return 1
	! MODEL_SRC=$m "$@"
}

# shellcheck disable=SC2086
{
# Stores never wait in a buffer (sequential consistency): no loss anywhere,
# so the arm64 6.1 check must not find one.
m=$(mutant sc 's/^#define \(WFREE\|PUSH\)_ORDERED 0$/#define \1_ORDERED 1/')
check "mutant (no store buffering): the 6.1 loss is no longer found" \
	env_not "$m" finds_violation mut_sc -DMM=MM_ARM64 $K61
# LDAR modelled as a plain load: the 6.12 proof must break.
m=$(mutant rcpc 's/^#elif COMPLETER == C612 && MM == MM_ARM64$/#elif 0/')
check "mutant (arm64 acquire not RCsc): the 6.12 proof breaks" \
	env_not "$m" proves mut_rcpc -DMM=MM_ARM64 $K612
}

ksft_finish
