#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The dctcp patch for net-next (tcp_dctcp_fixed/upstream/) is what its
# README says: it applies with git am to tcp_dctcp.c of Debian's
# linux-source-7.3 and leaves exactly one read of dctcp_shift_g in
# dctcp_update_alpha(), a READ_ONCE(); the stored file has no From: and no
# *-by: line (the sender adds theirs); its subject says [PATCH net-next];
# checkpatch --strict finds nothing but the missing Signed-off-by.  Shown
# failing on a copy with a changed context line, on one that keeps the
# second read, and on one with an identity.
. "$(dirname "$0")/../lib.sh"
require_cmd git tar
SRC73=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}/linux-source/linux-source-7.3.tar.xz
[ -r "$SRC73" ] || skip "$SRC73 missing (scripts/deps.sh check puts it there)"
PATCH=$(ls "$TAILFIX_ROOT"/tcp_dctcp_fixed/upstream/0001-*.patch 2>/dev/null | head -1)
[ -n "$PATCH" ] || fail "no tcp_dctcp_fixed/upstream/0001-*.patch"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"
CP=$("$TAILFIX_ROOT/scripts/checkpatch-cache.sh" 2>"$TMP/cp.err")
tar -xJf "$SRC73" -C "$TMP" --wildcards '*/net/ipv4/tcp_dctcp.c' || fail "cannot unpack tcp_dctcp.c from $SRC73"
base=$(ls "$TMP"/*/net/ipv4/tcp_dctcp.c)

# applies P: git am of P (with a sender added) onto the 7.3 file, then one
# marked read of dctcp_shift_g in dctcp_update_alpha().
applies() {
	local r=$TMP/repo

	rm -rf "$r" && mkdir -p "$r/net/ipv4" && cp "$base" "$r/net/ipv4/" || return 1
	git -C "$r" init -q && git -C "$r" add . &&
		git -C "$r" -c user.name=base -c user.email=base@localhost commit -qm base || return 1
	sed '1a From: Test Person <test.person@example.org>' "$1" >"$TMP/send.patch"
	git -C "$r" -c user.name=t -c user.email=t@localhost am -q "$TMP/send.patch" >/dev/null 2>&1 ||
		{ log "git am failed"; git -C "$r" am --abort 2>/dev/null; return 1; }
	# (the function's code, without its comments)
	awk '/^__bpf_kfunc static void dctcp_update_alpha\(/,/^}/' "$r/net/ipv4/tcp_dctcp.c" |
		grep -vE '^[[:space:]]*(/\*|\*)' >"$TMP/fn"
	[ "$(grep -c 'dctcp_shift_g' "$TMP/fn")" = 1 ] && grep -q 'READ_ONCE(dctcp_shift_g)' "$TMP/fn" ||
		{ log "dctcp_update_alpha() reads dctcp_shift_g: $(grep -c 'dctcp_shift_g' "$TMP/fn") times, marked: $(grep -c 'READ_ONCE(dctcp_shift_g)' "$TMP/fn")"; return 1; }
}
no_identity() {
	! sed -n '/^---$/q; p' "$1" | grep -q '^From: \|-by: ' || { log "an identity in $1"; return 1; }
}
net_next() { grep -q '^Subject: \[PATCH net-next\] tcp: dctcp: ' "$1"; }
checkpatch_only_sob() {
	local out

	out=$("$CP" --strict --no-tree --terse --show-types "$1" 2>&1 | grep -E ':(ERROR|WARNING|CHECK):' | grep -v MISSING_SIGN_OFF)
	[ -z "$out" ] || { log "checkpatch: $out"; return 1; }
}

check "the patch applies with git am to 7.3's tcp_dctcp.c, one READ_ONCE(dctcp_shift_g) left" applies "$PATCH"
check "no From: and no *-by: line in the stored patch" no_identity "$PATCH"
check "its subject is [PATCH net-next] tcp: dctcp: ..." net_next "$PATCH"
if [ -n "$CP" ]; then
	check "checkpatch --strict: nothing but the missing Signed-off-by" checkpatch_only_sob "$PATCH"
else
	check_skip "checkpatch --strict" "$(cat "$TMP/cp.err")"
fi

sed 's/^ \t\tu32 alpha = ca->dctcp_alpha;$/ \t\tu32 alpha = READ_ONCE(ca->dctcp_alpha);/' "$PATCH" >"$TMP/m-context.patch"
check "mutant with a context line 7.3 lacks: the apply check fails" fails applies "$TMP/m-context.patch"
sed 's/^-\t\t\tdelivered_ce <<= (10 - dctcp_shift_g);$/ \t\t\tdelivered_ce <<= (10 - dctcp_shift_g);/; /^+\t\t\tdelivered_ce <<= (10 - shift_g);$/d' \
	"$PATCH" >"$TMP/m-second.patch"
check "mutant that keeps the second read: the apply check fails" fails applies "$TMP/m-second.patch"
sed '1a Signed-off-by: Some One <some.one@example.org>' "$PATCH" >"$TMP/m-sob.patch"
check "mutant with a Signed-off-by: the identity check fails" fails no_identity "$TMP/m-sob.patch"
ksft_finish
