# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# spin.sh: run the TSQ wake-up model (tsq_wakeup.pml, next to this file)
# from a test.  Sourced after tests/lib.sh; the caller sets TMP (a scratch
# directory).  MODEL_SRC, if set, is a model file to use instead (mutants).
#
#   finds_violation TAG -DKNOB=V...	spin finds a lost wake-up (and the
#					trail is replayed as diagnostics)
#   proves TAG -DKNOB=V...		exhaustive search, no lost wake-up
#   model_verdict TAG -DKNOB=V...	prints "loss", "no-loss" or "error"

MODEL=${MODEL:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/tsq_wakeup.pml}

# verify TAG -DNAME=V...: generate, build and run the verifier in $TMP/TAG;
# pan's report is left in $TMP/TAG/pan.log.
verify() {
	local tag=$1 dir=$TMP/$1
	shift
	rm -rf "$dir" && mkdir -p "$dir" && cp "${MODEL_SRC:-$MODEL}" "$dir/tsq_wakeup.pml" || return 1
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

# model_verdict TAG -D...: "loss" (assertion violated), "no-loss" (exhaustive
# search, none) or "error"; spin's own output goes to $TMP/TAG only.
model_verdict() {
	local tag=$1
	shift
	if proves "$tag" "$@" >/dev/null; then
		echo no-loss
	elif grep -q 'assertion violated' "$TMP/$tag/pan.log" 2>/dev/null; then
		echo loss
	else
		echo error
	fi
}
