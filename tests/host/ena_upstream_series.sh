#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ena/upstream: the fixes as series upstream can take (issue 10, 5), for a
# kernel tree and for Amazon's amzn-drivers.
#
# Kernel tree, on a git tree of the pristine ENA driver of
# linux-source-6.12:
#   - make -C ena upstream refuses without a person's FROM (and an unknown
#     UPSTREAM_TREE), and what it writes carries that From: on every patch
#     and no other identity;
#   - every patch applies with git am, in order, with full paths;
#   - the series ends in exactly the tree the build series of
#     ena/patches/6.12 makes (the same fixes, only split differently);
#   - the one state the build series never builds -- the doorbell fix
#     without its counter -- compiles warning-free (W=1) against the 6.12
#     headers, so the series stays bisectable;
#   - checkpatch --strict is clean on each patch (with SIGNOFF=1);
#   - the counter is a patch of its own, after the fix.
# amzn-drivers (UPSTREAM_TREE=amzn-drivers), on a git tree of the release
# tarball in ../shared/third_party: the same, with paths kernel/linux/ena/,
# against the build series of ena/patches/amzn-2.17; the series starts with
# the counter (the release already rings the doorbell on the drop path),
# and the state the build series never builds -- the counter and the stats
# move without the syncp split -- builds with amzn-drivers' own configure
# step against the first 6.1 or 6.12 headers.

. "$(dirname "$0")/../lib.sh"

require_cmd git make tar patch
SRC=/usr/src/linux-source-6.12.tar.xz
[ -r "$SRC" ] || skip "$SRC missing (apt-get install linux-source-6.12)"
ENA_REL=drivers/net/ethernet/amazon/ena
PERSON="Test Person <test.person@example.org>"
EDUMAZET="Eric Dumazet <edumazet@google.com>"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# git_tree DIR: a git repository of DIR as it is, one commit
git_tree() {
	git -C "$1" -c user.name=base -c user.email=base@localhost -c commit.gpgsign=false "${@:2}"
}

# a git tree with the pristine ENA directory at its real path
# (and checkpatch, from the same kernel)
tar -xJf "$SRC" -C "$TMP" --wildcards "*/$ENA_REL/*" "*/scripts/checkpatch.pl" \
	"*/scripts/spelling.txt" "*/scripts/const_structs.checkpatch" || fail "cannot unpack $ENA_REL from $SRC"
base=$(find "$TMP" -mindepth 1 -maxdepth 1 -type d | head -1)
CHECKPATCH=$base/scripts/checkpatch.pl
git_tree "$base" init -q && git_tree "$base" add -A && git_tree "$base" commit -qm pristine ||
	fail "git init of the pristine tree"

check "make -C ena upstream refuses without FROM" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream UPSTREAM_OUT="$TMP/nofrom" 2>"$TMP/nofrom.err" &&
		grep -q "set FROM=" "$TMP/nofrom.err" && ! compgen -G "$TMP/nofrom/*.patch" >/dev/null'
check "make -C ena upstream refuses an address without a name" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream FROM=x@example.org UPSTREAM_OUT="$TMP/bad" 2>/dev/null'
check "make -C ena upstream refuses an unknown UPSTREAM_TREE, writing nothing" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream FROM="$PERSON" UPSTREAM_TREE=net-next \
		UPSTREAM_OUT="$TMP/badtree" 2>"$TMP/badtree.err" &&
		grep -q "UPSTREAM_TREE=net-next" "$TMP/badtree.err" && [ ! -e "$TMP/badtree" ]'

# series_checks TREE GITDIR REL BUILD_SERIES BUILD_ROOT N: write the series
# for TREE with make, apply it to the pristine GITDIR with git am, compare
# the end state of REL with BUILD_SERIES (without its version patch)
# applied with patch -p1 in BUILD_ROOT (a directory of the pristine tree,
# relative to GITDIR), run checkpatch.  Sets patches[] and applied.
series_checks() {
	local tree=$1 git=$2 rel=$3 bs=$4 broot=$5 n=$6
	local out=$TMP/out-$tree ref=$TMP/ref-$tree bp ok=1

	check "$tree: make -C ena upstream FROM=... SIGNOFF=1 writes the series" \
		make -s -C "$TAILFIX_ROOT/ena" upstream FROM="$PERSON" SIGNOFF=1 \
			UPSTREAM_TREE="$tree" UPSTREAM_OUT="$out"
	mapfile -t patches < <(ls "$out"/*.patch 2>/dev/null)
	log "$tree: ${#patches[@]} patches: $(cd "$out" 2>/dev/null && echo *.patch)"
	check "$tree: $n patches" test "${#patches[@]}" -eq "$n"
	check "$tree: every patch is From: the person, and names no team or placeholder" ident_ok
	check "$tree: every patch has a Link: to the thread" \
		eval '[ "$(grep -l "^Link: https://lore.kernel.org/" "${patches[@]}" | wc -l)" -eq "$n" ]'

	applied=0
	for bp in "${patches[@]}"; do
		if git_tree "$git" am -q "$bp" >"$TMP/am.log" 2>&1; then
			applied=$((applied + 1))
		else
			sed 's/^/#   /' "$TMP/am.log" | head -5
			git_tree "$git" am --abort >/dev/null 2>&1
			break
		fi
	done
	check "$tree: each patch applies with git am, in order ($applied of $n)" test "$applied" -eq "$n"
	check "$tree: git am kept the author" \
		test "$(git_tree "$git" log -1 --format='%an <%ae>')" = "$PERSON"
	check "$tree: only files under $rel are touched" \
		eval '[ -z "$(git_tree "$git" diff --name-only "HEAD~$applied" HEAD | grep -v "^$rel/")" ]'

	# the same end state as the build series
	mkdir "$ref"
	git_tree "$git" archive "HEAD~$applied" "$broot" | tar -x -C "$ref"
	while read -r bp; do
		case $bp in ''|'#'*) continue ;; esac
		grep -q 'tell which build' "$bs/$bp" && continue
		patch -s -p1 -d "$ref/$broot" <"$bs/$bp" || ok=0
	done <"$bs/series"
	check "$tree: the build series (without its version patch) applies to the pristine tree" test "$ok" -eq 1
	check "$tree: the upstream series ends in the tree the build series makes" \
		diff -r -x '*.orig' "$ref/$rel" "$git/$rel"

	if [ -f "$CHECKPATCH" ]; then
		check "$tree: checkpatch --strict is clean on every patch${CP_NOTE:-}" cp_ok
	else
		check_skip "$tree: checkpatch --strict on every patch" "no scripts/checkpatch.pl in $SRC"
	fi
}

# identities: From: is the person on every patch; every other identity
# line (a trailer ending in -by:) names the person or Eric Dumazet
ident_ok() {
	local p l bad=0
	for p in "${patches[@]}"; do
		[ "$(grep -c "^From: $PERSON\$" "$p")" = 1 ] || { log "${p##*/}: From: is not $PERSON"; bad=1; }
		while read -r l; do
			case ${l#*: } in
			"$PERSON"|"$EDUMAZET") ;;
			*) log "${p##*/}: identity not a person's: $l"; bad=1 ;;
			esac
		done < <(sed -n '/^---$/q; /^From: /p; /^[A-Za-z-]*-by: /p' "$p")
	done
	return $bad
}

# checkpatch looks each Fixes: id up in the git repository of its working
# directory (or GIT_DIR): CP_GIT_DIR is that history, else the look-up is
# left out (CP_IGNORE).
cp_ok() {
	local p bad=0
	for p in "${patches[@]}"; do
		(cd "$TMP" && GIT_DIR=${CP_GIT_DIR:-$TMP/no-history} perl "$CHECKPATCH" --strict --no-tree \
			--terse -q ${CP_IGNORE:+--ignore "$CP_IGNORE"} "$p") >"$TMP/cp.log" 2>&1 ||
			{ sed 's/^/#   /' "$TMP/cp.log"; bad=1; }
	done
	return $bad
}

# state_tree GITDIR REV REL NAME: REL of GITDIR at REV, in $TMP/NAME
state_tree() {
	git_tree "$1" archive "$2" "$3" | tar -x -C "$TMP" --one-top-level="$4"
}

# --- the kernel tree ----------------------------------------------------
series_checks linux "$base" "$ENA_REL" "$TAILFIX_ROOT/ena/patches/6.12" "$ENA_REL" 6
check "linux: the doorbell fix suggested by Eric Dumazet" \
	grep -q "^Suggested-by: $EDUMAZET" "${patches[0]}"
# the counter is its own patch, after the fix
check "linux: patch 1 fixes the drop path without a counter; patch 2 adds drop_doorbells" \
	eval '! grep -q drop_doorbells "${patches[0]}" && grep -q "^+.*netdev_xmit_more" "${patches[0]}" &&
		grep -q "^+.*drop_doorbells" "${patches[1]}"'

# the state after patch 1 only exists in this series: it must build
KVER=$(ls -d /lib/modules/6.12.*/build 2>/dev/null | head -1 | cut -d/ -f4)
if [ -n "$KVER" ]; then
	st=$TMP/state1
	state_tree "$base" "HEAD~$((applied - 1))" "$ENA_REL" state1
	printf 'obj-m := ena.o\nena-y := ena_netdev.o ena_com.o ena_eth_com.o ena_ethtool.o ena_xdp.o\n' \
		>"$st/$ENA_REL/Kbuild"
	check "linux: the tree after patch 1 builds with W=1 against $KVER, no warning in the ENA files" \
		eval 'make -s -C "/lib/modules/$KVER/build" M="$st/$ENA_REL" W=1 modules >"$TMP/b1.log" 2>&1 &&
			! grep -E "^$st/$ENA_REL/[^ ]*: warning:" "$TMP/b1.log" | sed "s/^/#   /" | grep -q .'
else
	check_skip "linux: the tree after patch 1 builds" "no linux-headers for 6.12 under /lib/modules"
fi

# --- amzn-drivers ---------------------------------------------------------
TARBALL=$("$TAILFIX_ROOT/scripts/third-party.sh" amzn)
case ${TARBALL##*/} in
'')
	check_skip "amzn-drivers: the series" \
		"no amzn-drivers release tarball (../shared/third_party, or TAILFIX_AMZN_TARBALL=)"
	ksft_finish ;;
*_2.17.*) ;;
*)
	check_skip "amzn-drivers: the series" "${TARBALL##*/} is not release 2.17, the series' base"
	ksft_finish ;;
esac
mkdir "$TMP/amzn"
tar -xf "$TARBALL" -C "$TMP/amzn" || fail "cannot unpack $TARBALL"
abase=$(ls -d "$TMP"/amzn/*/kernel/linux/ena 2>/dev/null | head -1)
abase=${abase%/kernel/linux/ena}
[ -n "$abase" ] || fail "$TARBALL has no kernel/linux/ena"
git_tree "$abase" init -q && git_tree "$abase" add -A && git_tree "$abase" commit -qm pristine ||
	fail "git init of the pristine amzn-drivers tree"

# Fixes: ids are amzn-drivers commits: checked against its history when
# TAILFIX_AMZN_GIT names a clone of it, else only the look-up is left out
# (the ids and the blame behind them are in fixes-provenance.txt).
if [ -n "${TAILFIX_AMZN_GIT:-}" ]; then
	CP_GIT_DIR=$(git -C "$TAILFIX_AMZN_GIT" rev-parse --absolute-git-dir 2>/dev/null) ||
		fail "TAILFIX_AMZN_GIT=$TAILFIX_AMZN_GIT is not a git clone of amzn-drivers"
	CP_NOTE=", Fixes: ids and subjects checked in $TAILFIX_AMZN_GIT"
else
	CP_IGNORE=UNKNOWN_COMMIT_ID
	CP_NOTE=" (Fixes: ids not looked up: set TAILFIX_AMZN_GIT to a clone of amzn-drivers)"
fi
series_checks amzn-drivers "$abase" kernel/linux/ena "$TAILFIX_ROOT/ena/patches/amzn-2.17" kernel/linux 3
unset CP_GIT_DIR CP_IGNORE CP_NOTE
prov=$TAILFIX_ROOT/ena/upstream/amzn-drivers-2.17/fixes-provenance.txt
fixes_recorded() {
	local id n=0 bad=0
	while read -r id; do
		n=$((n + 1))
		grep -q "^$id " "$prov" || { log "Fixes: $id is not in ${prov##*/}"; bad=1; }
	done < <(sed -n 's/^Fixes: \([0-9a-f]\{12\}\) ("[^"]*")$/\1/p' "${patches[@]}")
	[ "$n" -gt 0 ] && [ "$(grep -c '^Fixes: ' "${patches[@]}" | awk -F: '{ s += $NF } END { print s }')" -eq "$n" ] &&
		return $bad
	log "Fixes: lines that are not 'Fixes: <12 hex> (\"subject\")', or none"
	return 1
}
check "amzn-drivers: the stats patches carry Fixes: tags, each found by the blame in ${prov##*/}" \
	eval 'grep -q "^Fixes: " "${patches[1]}" && grep -q "^Fixes: " "${patches[2]}" && fixes_recorded'
# (the decision's lines only gain the brace of the block the counter joins)
same_decision() {
	cmp -s <(sed -n 's/^-\(.*netdev_xmit_more.*\)$/\1/p' "$1") \
		<(sed -n 's/^+\(.*netdev_xmit_more.*\) {$/\1/p' "$1")
}
# the two checks above fail on mutants: a counter patch that also drops
# the xmit_more condition, a Fixes: id one digit off
sed 's/^+\(.*\)!netdev_xmit_more() && \(.*\) {$/+\1\2 {/' "${patches[0]}" >"$TMP/mut-decision.patch"
sed '0,/^Fixes: \([0-9a-f]\{11\}\)\([0-9a-e]\)/s//Fixes: \1f/' "${patches[2]}" >"$TMP/mut-fixes.patch"
check "amzn-drivers: mutants caught: a changed doorbell decision, a Fixes: id not recorded" \
	eval '! cmp -s "${patches[0]}" "$TMP/mut-decision.patch" && ! same_decision "$TMP/mut-decision.patch" &&
		! cmp -s "${patches[2]}" "$TMP/mut-fixes.patch" &&
		! (patches=("${patches[0]}" "${patches[1]}" "$TMP/mut-fixes.patch"); fixes_recorded)'
check "amzn-drivers: patch 1 adds the drop_doorbells counter and leaves the doorbell decision alone" \
	eval 'grep -q "^+.*drop_doorbells" "${patches[0]}" && grep -q "^-.*netdev_xmit_more" "${patches[0]}" &&
		same_decision "${patches[0]}"'
check "amzn-drivers: the stats move suggested by Eric Dumazet" \
	eval '[[ ${patches[1]##*/} == *napi_complete* ]] && grep -q "^Suggested-by: $EDUMAZET" "${patches[1]}"'

# the state after patch 2 only exists in this series: it must build
KVER=$(ls -d /lib/modules/6.1.*/build /lib/modules/6.12.*/build 2>/dev/null | head -1 | cut -d/ -f4)
if [ -n "$KVER" ]; then
	state_tree "$abase" "HEAD~$((applied - 2))" kernel/linux astate2
	check "amzn-drivers: the tree after patch 2 builds (its configure step, then Kbuild) against $KVER, no warning" \
		eval 'make -s -C "$TMP/astate2/kernel/linux/ena" BUILD_KERNEL="$KVER" \
			KERNEL_BUILD_DIR="/lib/modules/$KVER/build" >"$TMP/ab2.log" 2>&1 &&
			[ -f "$TMP/astate2/kernel/linux/ena/ena.ko" ] &&
			! grep -E ": warning:" "$TMP/ab2.log" | sed "s/^/#   /" | grep -q .'
else
	check_skip "amzn-drivers: the tree after patch 2 builds" "no linux-headers for 6.1 or 6.12 under /lib/modules"
fi
ksft_finish
