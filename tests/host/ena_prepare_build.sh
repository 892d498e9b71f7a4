#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ena/: prepare, patch and build ena.ko for every kernel with headers under
# /lib/modules whose series has a patch set (6.1, 6.12), in a scratch copy
# of ena/ so the checkout is left alone:
#   - make -C ena KVER=K W=1 succeeds and leaves build-K/ena.ko;
#   - modinfo shows version "...-tailfix<PACKAGE_VERSION of dkms.conf>" and
#     the vermagic of K; the module has no drop_doorbells string (the
#     kernel series adds no ethtool -S counter: no string index moves);
#   - no compiler warning (W=1) in the build; upstream ones are reported.
# And the failure cases, each with its own message, a non-zero status and
# no half-prepared build directory left behind:
#   - ENA_SRC pointing at nothing usable;
#   - a source the series does not apply to (a corrupted copy);
#   - a source that already has the fixes (a patched copy): "nothing to do";
#   - no source at all for the kernel;
# and prepare-source.sh --probe's verdicts that come before a compile.

. "$(dirname "$0")/../lib.sh"

require_cmd make patch tar modinfo

PKGVER=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$TAILFIX_ROOT/dkms.conf" 2>/dev/null | head -n1)
[ -n "$PKGVER" ] || fail "no PACKAGE_VERSION in $TAILFIX_ROOT/dkms.conf"

KVERS=()
for b in /lib/modules/*/build; do
	[ -f "$b/Makefile" ] || continue
	k=$(basename "$(dirname "$b")")
	s=$(printf '%s\n' "$k" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
	[ -f "$TAILFIX_ROOT/ena/patches/$s/series" ] && KVERS+=("$k")
done
[ ${#KVERS[@]} -gt 0 ] ||
	skip "no kernel headers under /lib/modules for a series ena/patches/ supports ($(cd "$TAILFIX_ROOT/ena/patches" && echo */ | tr -d /))"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"
ENA=$TMP/ena
cp -r "$TAILFIX_ROOT/ena" "$ENA"
rm -rf "$ENA"/build-* "$ENA/ena.ko"
MK=(make -C "$ENA" DKMS_CONF="$TAILFIX_ROOT/dkms.conf")

# Warnings of the build log, as "file:line: warning: ..." lines.
warnings() { grep -E '^[^ ]+:[0-9]+:[0-9]+: warning:' "$1"; }

built=()
for k in "${KVERS[@]}"; do
	log "building ena for $k"
	"${MK[@]}" KVER="$k" W=1 >"$TMP/build.log" 2>&1
	rc=$?
	grep '^ena: ' "$TMP/build.log" | sed 's/^/# /'
	[ $rc -eq 0 ] || tail -n 20 "$TMP/build.log" | sed 's/^/# /'
	if [ $rc -ne 0 ] && grep -q '^ena: no ENA source' "$TMP/build.log"; then
		check_skip "$k: prepare, patch and build" "no ENA source (linux-source-X.Y or ENA_SRC)"
		continue
	fi
	ko=$ENA/build-$k/ena.ko
	check "$k: make -C ena KVER=$k W=1 builds build-$k/ena.ko" test $rc -eq 0 -a -f "$ko"
	[ -f "$ko" ] || continue
	built+=("$k")

	ver=$(modinfo -F version "$ko")
	log "$k: modinfo version: $ver"
	check "$k: modinfo version ends in -tailfix$PKGVER" \
		test "${ver%-tailfix"$PKGVER"}" != "$ver" -a -n "${ver%-tailfix"$PKGVER"}"
	vm=$(modinfo -F vermagic "$ko")
	check "$k: vermagic is $k" [ "${vm%% *}" = "$k" ]
	check "$k: the module has no drop_doorbells string" \
		eval '! grep -qa drop_doorbells "$ko"'
	w=$(warnings "$TMP/build.log")
	[ -z "$w" ] || printf '# %s: warning: %s\n' "$k" "$w"
	check "$k: no compiler warning with W=1" [ -z "$w" ]
done

if [ ${#built[@]} -eq 0 ]; then
	# shellcheck disable=SC2154 # set by lib.sh's check()
	[ "$_ksft_failed" -gt 0 ] && ksft_finish
	skip "no ENA source for any kernel with headers"
fi

# ---- failure cases, on the first kernel that built ---------------------------
k=${built[0]}
good=$ENA/build-$k

# expect_fail TAG PATTERN make-args...: make fails, says PATTERN on a line
# of its own, and leaves no build directory behind.
expect_fail() {
	local tag=$1 pattern=$2 out=$TMP/$1.log rc
	shift 2
	"${MK[@]}" KVER="$k" "$@" >"$out" 2>&1
	rc=$?
	grep '^ena: ' "$out" | sed "s/^/# $tag: /"
	[ $rc -ne 0 ] || { log "$tag: make succeeded"; return 1; }
	grep -qE "$pattern" "$out" || { log "$tag: no line matching '$pattern'"; return 1; }
	[ ! -e "$ENA/build-$k" ] || { log "$tag: build-$k left behind"; return 1; }
	ls -d "$ENA/build-$k".tmp.* >/dev/null 2>&1 && { log "$tag: temporary directory left behind"; return 1; }
	return 0
}

# Keep the patched copy as the "already fixed" source, then start clean.
cp -r "$good" "$TMP/fixed"
"${MK[@]}" KVER="$k" clean >/dev/null 2>&1
check "clean removes build-$k" [ ! -e "$good" ]

check "wrong ENA_SRC: own message, non-zero" \
	expect_fail wrong-src '^ena: ENA_SRC=/nonexistent/ena-src is not' ENA_SRC=/nonexistent/ena-src

# A corrupted copy: the pristine source with ena_start_xmit()'s drop label
# renamed, so the first patch has no context to apply to.
"$TAILFIX_ROOT/ena/prepare-source.sh" --pristine "$k" "$TMP/corrupt" >/dev/null 2>&1 ||
	fail "cannot extract a pristine source for $k"
sed -i 's/error_drop_packet/error_drop_pkt/' "$TMP/corrupt/ena_netdev.c"
check "source that will not patch: own message, non-zero" \
	expect_fail corrupt '^ena: .* does not apply to .* and does not reverse-apply either: unknown ENA source' \
	ENA_SRC="$TMP/corrupt"

check "source already fixed: own message, non-zero" \
	expect_fail fixed "^ena: nothing to do: in-tree ena is fine \(.* already rings the TX doorbell on the drop path: this package's fix\)" \
	ENA_SRC="$TMP/fixed"

check "no source at all: own message naming ENA_SRC, non-zero" \
	expect_fail none '^ena: no ENA source for .*ENA_SRC=' \
	ENA_MODULES_DIR="$TMP/none" ENA_USR_SRC="$TMP/none"

"$TAILFIX_ROOT/ena/prepare-source.sh" --locate "$k" >"$TMP/probe.log" 2>&1
rc=$?
sed 's/^/# locate: /' "$TMP/probe.log"
check "--locate finds the source for $k" [ $rc -eq 0 ]
ENA_MODULES_DIR=$TMP/none ENA_USR_SRC=$TMP/none \
	"$TAILFIX_ROOT/ena/prepare-source.sh" --locate "$k" >"$TMP/probe.log" 2>&1
rc=$?
sed 's/^/# locate without source: /' "$TMP/probe.log"
check "--locate without a source: exit 1 and one line" \
	test $rc -eq 1 -a "$(wc -l <"$TMP/probe.log")" -eq 1

# --probe (the full dry run DKMS relies on; its compile is exercised by
# host/dkms_partial.sh): each failure before the compile is one line on
# stderr, nothing on stdout, its own status, and nothing left behind.
# expect_probe TAG STATUS PATTERN env...
expect_probe() {
	local tag=$1 want=$2 pattern=$3 rc
	shift 3
	env "$@" "$TAILFIX_ROOT/ena/prepare-source.sh" --probe "$k" "$TMP/probe-out" \
		>"$TMP/probe.out" 2>"$TMP/probe.err"
	rc=$?
	sed "s/^/# probe $tag: /" "$TMP/probe.err"
	[ $rc -eq "$want" ] || { log "probe $tag: exit $rc, not $want"; return 1; }
	[ ! -s "$TMP/probe.out" ] || { log "probe $tag: something on stdout"; return 1; }
	[ "$(wc -l <"$TMP/probe.err")" -eq 1 ] || { log "probe $tag: not one line"; return 1; }
	grep -qE "$pattern" "$TMP/probe.err" || { log "probe $tag: no line matching '$pattern'"; return 1; }
	[ ! -e "$TMP/probe-out" ] || { log "probe $tag: output directory left behind"; return 1; }
}
check "--probe, already fixed source: exit 5, nothing to do" \
	expect_probe fixed 5 '^ena: nothing to do: in-tree ena is fine' ENA_SRC="$TMP/fixed"
check "--probe, source that will not patch: exit 6" \
	expect_probe corrupt 6 '^ena: .* unknown ENA source' ENA_SRC="$TMP/corrupt"
check "--probe, no kernel build tree: exit 8" \
	expect_probe nokdir 8 '^ena: no kernel build tree at ' KDIR="$TMP/none"
check "--probe, no source: exit 1" \
	expect_probe none 1 '^ena: no ENA source for ' ENA_MODULES_DIR="$TMP/none" ENA_USR_SRC="$TMP/none"

ksft_finish
