#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Model check of the tcp_push()/tcp_wfree() TSQ wake-up handshake
# (tsq_probe/model/tsq_wakeup.pml) with spin:
#   - without the tcp_push() barrier spin finds a lost wake-up;
#   - with it, the full state space holds no lost wake-up;
#   - with it, corking is still reachable (the proof is not vacuous);
#   - with it but an unordered tcp_wfree(), the wake-up is lost again
#     (the completer's ordering is part of the argument).

. "$(dirname "$0")/../lib.sh"

require_cmd spin gcc

MODEL=$TAILFIX_ROOT/tsq_probe/model/tsq_wakeup.pml
[ -f "$MODEL" ] || fail "model $MODEL missing"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# verify TAG -DNAME=V...: generate, build and run the verifier in $TMP/TAG;
# pan's report is left in $TMP/TAG/pan.log.
verify() {
	local tag=$1 dir=$TMP/$1
	shift
	mkdir -p "$dir" && cp "$MODEL" "$dir/" || return 1
	(
		cd "$dir" || exit 1
		spin "$@" -a tsq_wakeup.pml >spin.log 2>&1 || { cat spin.log; exit 1; }
		gcc -O2 -DSAFETY -o pan pan.c >gcc.log 2>&1 || { cat gcc.log; exit 1; }
		# Exhaustive search (no bitstate); -m: depth far above the model's.
		./pan -m100000 >pan.log 2>&1
		exit 0
	) | sed 's/^/# /'
	[ "${PIPESTATUS[0]}" -eq 0 ] || { log "$tag: spin/gcc failed"; return 1; }
	return 0
}

pan_errors() { sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$TMP/$1/pan.log" | tail -n1; }

# The search covered the whole state space, not a truncated part of it.
search_complete() {
	local f=$TMP/$1/pan.log
	grep -q 'Full statespace search' "$f" &&
		! grep -qE 'max search depth too small|Search not completed' "$f"
}

# finds_violation TAG -D...: spin reports the assertion and leaves a trail;
# the trail is replayed as diagnostics.
finds_violation() {
	local tag=$1 dir=$TMP/$1
	shift
	verify "$tag" "$@" || return 1
	local n
	n=$(pan_errors "$tag")
	log "$tag: errors: ${n:-?}"
	[ "${n:-0}" -ge 1 ] && grep -q 'assertion violated' "$dir/pan.log" &&
		[ -f "$dir/tsq_wakeup.pml.trail" ] || return 1
	(cd "$dir" && spin "$@" -t tsq_wakeup.pml 2>&1) |
		grep -E '^ +(pusher|completer):|failed assertion' |
		sed -e 's/^ *//' -e "s/^/$tag trail: /" -e 's/^/# /'
	return 0
}

# proves TAG -D...: no error, and the search was exhaustive.
proves() {
	local tag=$1
	shift
	verify "$tag" "$@" || return 1
	local n states
	n=$(pan_errors "$tag")
	states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' "$TMP/$tag/pan.log")
	log "$tag: errors: ${n:-?}, ${states:-?} states stored"
	[ "$n" = 0 ] && search_complete "$tag"
}

check "without the tcp_push() barrier spin finds a lost wake-up" \
	finds_violation nobarrier -DBARRIER=0 -DWFREE_ORDERED=1
check "with the barrier the full state space has no lost wake-up" \
	proves barrier -DBARRIER=1 -DWFREE_ORDERED=1
check "with the barrier the pusher can still cork (proof not vacuous)" \
	finds_violation vacuity -DBARRIER=1 -DWFREE_ORDERED=1 -DVACUITY=1
check "the barrier alone is not enough if tcp_wfree() were unordered" \
	finds_violation unordered_wfree -DBARRIER=1 -DWFREE_ORDERED=0

ksft_finish
