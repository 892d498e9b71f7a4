#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ena/upstream: the fixes as a series upstream can take (issue 10, 5).  On
# a git tree of the pristine ENA driver of linux-source-6.12:
#   - make -C ena upstream refuses without a person's FROM, and what it
#     writes carries that From: on every patch and no other identity;
#   - every patch applies with git am, in order, with full paths;
#   - the series ends in exactly the tree the build series of
#     ena/patches/6.12 makes (the same fixes, only split differently);
#   - the one state the build series never builds -- the doorbell fix
#     without its counter -- compiles warning-free (W=1) against the 6.12
#     headers, so the series stays bisectable;
#   - checkpatch --strict is clean on each patch (with SIGNOFF=1);
#   - the counter is a patch of its own, after the fix.

. "$(dirname "$0")/../lib.sh"

require_cmd git make tar patch
SRC=/usr/src/linux-source-6.12.tar.xz
[ -r "$SRC" ] || skip "$SRC missing (apt-get install linux-source-6.12)"
ENA_REL=drivers/net/ethernet/amazon/ena
PERSON="Test Person <test.person@example.org>"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# a git tree with the pristine ENA directory at its real path
# (and checkpatch, from the same kernel)
tar -xJf "$SRC" -C "$TMP" --wildcards "*/$ENA_REL/*" "*/scripts/checkpatch.pl" \
	"*/scripts/spelling.txt" "*/scripts/const_structs.checkpatch" || fail "cannot unpack $ENA_REL from $SRC"
base=$(find "$TMP" -mindepth 1 -maxdepth 1 -type d | head -1)
CHECKPATCH=$base/scripts/checkpatch.pl
GIT=(git -C "$base" -c user.name=base -c user.email=base@localhost -c commit.gpgsign=false)
"${GIT[@]}" init -q && "${GIT[@]}" add -A && "${GIT[@]}" commit -qm pristine || fail "git init of the pristine tree"

out=$TMP/out
check "make -C ena upstream refuses without FROM" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream UPSTREAM_OUT="$TMP/nofrom" 2>"$TMP/nofrom.err" &&
		grep -q "set FROM=" "$TMP/nofrom.err" && ! compgen -G "$TMP/nofrom/*.patch" >/dev/null'
check "make -C ena upstream refuses an address without a name" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream FROM=x@example.org UPSTREAM_OUT="$TMP/bad" 2>/dev/null'
check "make -C ena upstream FROM=... SIGNOFF=1 writes the series" \
	make -s -C "$TAILFIX_ROOT/ena" upstream FROM="$PERSON" SIGNOFF=1 UPSTREAM_OUT="$out"
mapfile -t patches < <(ls "$out"/*.patch 2>/dev/null)
log "${#patches[@]} patches: $(cd "$out" 2>/dev/null && echo *.patch)"
check "six patches" test "${#patches[@]}" -eq 6

# identities: From: is the person on every patch; every other identity
# line (a trailer ending in -by:) names the person or Eric Dumazet
ident_ok() {
	local p l bad=0
	for p in "${patches[@]}"; do
		[ "$(grep -c "^From: $PERSON\$" "$p")" = 1 ] || { log "${p##*/}: From: is not $PERSON"; bad=1; }
		while read -r l; do
			case ${l#*: } in
			"$PERSON"|"Eric Dumazet <edumazet@google.com>") ;;
			*) log "${p##*/}: identity not a person's: $l"; bad=1 ;;
			esac
		done < <(sed -n '/^---$/q; /^From: /p; /^[A-Za-z-]*-by: /p' "$p")
	done
	return $bad
}
check "every patch is From: the person, and names no team or placeholder" ident_ok
check "the doorbell fix suggested by Eric Dumazet, with a Link: to the thread" \
	eval 'grep -q "^Suggested-by: Eric Dumazet <edumazet@google.com>" "${patches[0]}" &&
		grep -q "^Link: https://lore.kernel.org/" "${patches[0]}"'

# apply one by one with git am
applied=0
for p in "${patches[@]}"; do
	if "${GIT[@]}" am -q "$p" >"$TMP/am.log" 2>&1; then
		applied=$((applied + 1))
	else
		sed 's/^/#   /' "$TMP/am.log" | head -5
		"${GIT[@]}" am --abort >/dev/null 2>&1
		break
	fi
done
check "each patch applies with git am, in order ($applied of ${#patches[@]})" test "$applied" -eq "${#patches[@]}"
check "git am kept the author" \
	test "$("${GIT[@]}" log -1 --format='%an <%ae>')" = "$PERSON"
check "only files under $ENA_REL are touched" \
	eval '[ -z "$("${GIT[@]}" diff --name-only HEAD~$applied HEAD | grep -v "^$ENA_REL/")" ]'

# the same end state as the build series
ref=$TMP/ref
"${GIT[@]}" archive "HEAD~$applied" "$ENA_REL" | tar -x -C "$TMP" --one-top-level=pristine
cp -r "$TMP/pristine/$ENA_REL" "$ref"
build_ok=1
while read -r bp; do
	case $bp in ''|'#'*) continue ;; esac
	grep -q 'tell which build' "$TAILFIX_ROOT/ena/patches/6.12/$bp" && continue
	patch -s -p1 -d "$ref" <"$TAILFIX_ROOT/ena/patches/6.12/$bp" || build_ok=0
done <"$TAILFIX_ROOT/ena/patches/6.12/series"
check "the build series (without its version patch) applies to the pristine tree" test "$build_ok" -eq 1
check "the upstream series ends in the tree the build series makes" \
	diff -r -x '*.orig' "$ref" "$base/$ENA_REL"

# the counter is its own patch, after the fix
check "patch 1 fixes the drop path without a counter; patch 2 adds drop_doorbells" \
	eval '! grep -q drop_doorbells "${patches[0]}" && grep -q "^+.*netdev_xmit_more" "${patches[0]}" &&
		grep -q "^+.*drop_doorbells" "${patches[1]}"'

# the state after patch 1 only exists in this series: it must build
KVER=$(ls -d /lib/modules/6.12.*/build 2>/dev/null | head -1 | cut -d/ -f4)
if [ -n "$KVER" ]; then
	st=$TMP/state1
	"${GIT[@]}" archive "HEAD~$((applied - 1))" "$ENA_REL" | tar -x -C "$TMP" --one-top-level=state1
	printf 'obj-m := ena.o\nena-y := ena_netdev.o ena_com.o ena_eth_com.o ena_ethtool.o ena_xdp.o\n' \
		>"$st/$ENA_REL/Kbuild"
	check "the tree after patch 1 builds with W=1 against $KVER, no warning in the ENA files" \
		eval 'make -s -C "/lib/modules/$KVER/build" M="$st/$ENA_REL" W=1 modules >"$TMP/b1.log" 2>&1 &&
			! grep -E "^$st/$ENA_REL/[^ ]*: warning:" "$TMP/b1.log" | sed "s/^/#   /" | grep -q .'
else
	check_skip "the tree after patch 1 builds" "no linux-headers for 6.12 under /lib/modules"
fi

if [ -f "$CHECKPATCH" ]; then
	cp_ok() {
		local p bad=0
		for p in "${patches[@]}"; do
			perl "$CHECKPATCH" --strict --no-tree --terse -q "$p" >"$TMP/cp.log" 2>&1 ||
				{ sed 's/^/#   /' "$TMP/cp.log"; bad=1; }
		done
		return $bad
	}
	check "checkpatch --strict is clean on every patch" cp_ok
else
	check_skip "checkpatch --strict on every patch" "no scripts/checkpatch.pl in $SRC"
fi
ksft_finish
