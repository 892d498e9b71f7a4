#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The core patches in tsq_probe/patches/, checked against Debian's 6.1.192 and
# 6.12.118 sources (net/ipv4/tcp.c and tcp_output.c of linux-source-*):
#
# 0001 (7267e8dcad6b, the barrier in tcp_push()), on 6.1 and 6.12 (both have
#   it): reverse-applies with --fuzz=0, removing exactly the barrier; applies
#   forward again to that tree (= 6.1.y before 6.1.76) and restores the file
#   byte for byte.
# 0002 (smp_load_acquire() in tcp_wfree()): applies with --fuzz=0 to 6.1,
#   changing only that load, and reverses byte for byte.  6.12 already has
#   the same ordering (b548b17a93fd rewrote the loop, so the 6.1 patch can
#   neither apply nor reverse-apply there): its tcp_wfree() makes the same
#   sequence of ordered accesses as 6.1 + 0002, and git am refuses 0002.
# The model: for each tree, the knobs of tsq_probe/model/tsq_wakeup.pml are
#   read from the source (barrier after set_bit? READ_ONCE, smp_load_acquire or
#   a full barrier in tcp_wfree()?) and spin gives the arm64 verdict: 6.1 and
#   the trees without 0001 lose wake-ups, 6.1 + 0002, 6.12 and old 6.1 +
#   0001 + 0002 do not.
# git am: the series applies to a git tree of 6.1 without the barrier (with
#   Salvatore Dipietro as author of 0001), 0002 alone to 6.1.192, and git am
#   refuses what a tree already has.
# checkpatch --strict: 0002 as its submitter sends it (their From: and
#   Signed-off-by added) clean; 0001 only what upstream's commit and the
#   stable "commit <sha> upstream." line carry.
# Identities: every From: and *-by: line of both patches names someone the
#   README accounts for (0001's are upstream's own); neither carries the
#   submitter's, which the README says they add.  0001 is in the stable form:
#   the "commit <sha> upstream." line first, then upstream's message.
#   Mutants: an invented Signed-off-by and a placeholder From: fail it.
# Mutants: a 0001 with barrier() and a 0002 that keeps READ_ONCE() must fail
#   the model check.

. "$(dirname "$0")/../lib.sh"

require_cmd patch tar xz cmp diff awk git spin gcc

PDIR=$TAILFIX_ROOT/tsq_probe/patches
P1=${TSQ_PATCH1:-$PDIR/0001-tcp-Add-memory-barrier-to-tcp_push.patch}
P2=${TSQ_PATCH2:-$PDIR/0002-tcp-read-sk_tsq_flags-with-smp_load_acquire-in-tcp_wfree.patch}
[ -f "$P1" ] || fail "patch $P1 missing"
[ -f "$P2" ] || fail "patch $P2 missing"
README=$PDIR/README
[ -f "$README" ] || fail "$README missing"
SRC_DIR=${LINUX_SOURCE_DIR:-/usr/src}
for ver in 6.1 6.12; do
	[ -f "$SRC_DIR/linux-source-$ver.tar.xz" ] ||
		skip "no $SRC_DIR/linux-source-$ver.tar.xz (apt-get install linux-source-$ver)"
done

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"
# shellcheck source=../../tsq_probe/model/spin.sh
. "$TAILFIX_ROOT/tsq_probe/model/spin.sh"

FILES="net/ipv4/tcp.c net/ipv4/tcp_output.c"
CP_FILES="scripts/checkpatch.pl scripts/spelling.txt scripts/const_structs.checkpatch"

# extract VER [MORE...]: the two files (and MORE) into $TMP/src-VER/.
extract() {
	local ver=$1 f list=()
	shift
	for f in $FILES "$@"; do
		list+=("linux-source-$ver/$f")
	done
	mkdir -p "$TMP/src-$ver" &&
		tar -xJf "$SRC_DIR/linux-source-$ver.tar.xz" -C "$TMP/src-$ver" \
			--strip-components=1 "${list[@]}"
}

# mktree NAME FROM: a copy of tree FROM (or a source dir) as $TMP/NAME.
mktree() { rm -rf "${TMP:?}/$1" && mkdir -p "$TMP/$1" && cp -a "$2/net" "$TMP/$1/"; }

# The set_bit() in tcp_push() followed, on the next line, by the barrier.
has_barrier() {
	awk '/set_bit\(TSQ_THROTTLED, &sk->sk_tsq_flags\);/ { getline n;
		if (n ~ /^[ \t]*smp_mb__after_atomic\(\);/) f = 1 }
		END { exit !f }' "$1/net/ipv4/tcp.c"
}

wfree_body() {
	awk '/^void tcp_wfree\(struct sk_buff \*skb\)/ { p = 1 } p { print }
		p && /^}/ { exit }' "$1/net/ipv4/tcp_output.c"
}

# completer_kind TREE: how tcp_wfree() reads sk_tsq_flags after the refcount
# RMW: C61 (READ_ONCE), C612 (smp_load_acquire), CMB (a full barrier between
# the two), or unknown.
completer_kind() {
	wfree_body "$1" | awk '
		/refcount_sub_and_test\(.*sk_wmem_alloc/ { rmw = 1 }
		rmw && /smp_mb(__after_atomic)?\(\);/ { mb = 1 }
		rmw && /sk->sk_tsq_flags/ {
			if (/smp_load_acquire\(&sk->sk_tsq_flags\)/) k = mb ? "CMB" : "C612"
			else if (/READ_ONCE\(sk->sk_tsq_flags\)/) k = mb ? "CMB" : "C61"
			else k = "unknown"
			print k; found = 1; exit
		}
		END { if (!found) print "unknown" }'
}

# The ordering-relevant accesses of tcp_wfree(), one per line, normalized
# (try_cmpxchg and cmpxchg are both fully ordered on success).
wfree_accesses() {
	wfree_body "$1" |
		grep -oE '(refcount_sub_and_test|refcount_read|smp_load_acquire|READ_ONCE|try_cmpxchg|cmpxchg|smp_mb[a-z_]*)\([^;]*sk->sk_(wmem_alloc|tsq_flags)|smp_mb[a-z_]*\(\)' |
		sed -E -e 's/^try_cmpxchg/cmpxchg/' \
			-e 's/^([a-z_A-Z]+)\(.*sk->(sk_[a-z_]+)$/\1 \2/'
}

accesses_differ() { ! same_accesses "$@"; }

same_accesses() {
	local a b
	a=$(wfree_accesses "$TMP/$1") b=$(wfree_accesses "$TMP/$2")
	log "tcp_wfree() accesses: $(echo "$a" | paste -sd,) vs $(echo "$b" | paste -sd,)"
	[ -n "$a" ] && [ "$a" = "$b" ]
}

# model_says TREE EXPECTED: the arm64 verdict of the model with the knobs
# read from TREE's source.
model_says() {
	local t=$TMP/$1 b=0 c v
	has_barrier "$t" && b=1
	c=$(completer_kind "$t")
	v=$(model_verdict "model-$1" -DMM=MM_ARM64 -DBARRIER=$b -DCOMPLETER="$c")
	log "$1: BARRIER=$b COMPLETER=$c -> $v (expected $2)"
	[ "$v" = "$2" ]
}

# patch_run DIR PATCH ARGS...: patch -p1 --fuzz=0 in DIR, failing on any fuzz;
# an offset is fine (line numbers differ between the series).
patch_run() {
	local dir=$1 p=$2 out rc
	shift 2
	out=$(cd "$dir" && patch -p1 --fuzz=0 --no-backup-if-mismatch -r - "$@" <"$p" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/# /'
	[ "$rc" -eq 0 ] && ! printf '%s' "$out" | grep -qiE 'fuzz|reject|FAILED'
}

# only_lines_changed A B FILE 'REMOVED-ERE' 'ADDED-ERE': B's FILE is A's with
# exactly the lines matching REMOVED-ERE taken out and ADDED-ERE put in.
only_lines_changed() {
	local d
	d=$(diff "$TMP/$1/$3" "$TMP/$2/$3" | grep '^[<>]')
	log "diff: $(printf '%s' "$d" | paste -sd'|')"
	[ -n "$d" ] && ! printf '%s\n' "$d" | grep -vqE "^< ($4)\$|^> ($5)\$"
}

same_file() { cmp "$TMP/$1/$3" "$TMP/$2/$3"; }
differs() { ! cmp -s "$TMP/$1/$3" "$TMP/$2/$3"; }

completer_is() { [ "$(completer_kind "$TMP/$1")" = "$2" ]; }
refused() { ! patch_run "$TMP/$1" "$2" --dry-run; }
series_applies() { patch_run "$TMP/$1" "$2" && patch_run "$TMP/$1" "$3"; }

# reverse_restores TREE PATCH ORIG FILE: TREE's FILE differs from ORIG's, and
# PATCH reverses in TREE, giving ORIG's FILE.
reverse_restores() {
	differs "$3" "$1" "$4" && patch_run "$TMP/$1" "$2" -R && same_file "$3" "$1" "$4"
}

# both_same TCP_FROM OUTPUT_FROM TREE: TREE's tcp.c and tcp_output.c are
# those of TCP_FROM and OUTPUT_FROM, and the latter is a patched file (not
# TCP_FROM's).
both_same() {
	same_file "$1" "$3" net/ipv4/tcp.c && same_file "$2" "$3" net/ipv4/tcp_output.c &&
		differs "$1" "$2" net/ipv4/tcp_output.c
}

# has_lines FILE LINE...: each LINE is a whole line of FILE.
has_lines() {
	local f=$1 l
	shift
	for l in "$@"; do
		grep -qxF -- "$l" "$f" || { log "missing in $(basename "$f"): $l"; return 1; }
	done
}

# mutant_loses TREE PATCH MUTANT [MORE]: MUTANT really differs from PATCH,
# applies (then MORE) to TREE, and the model then loses a wake-up.
mutant_loses() {
	! cmp -s "$2" "$3" && patch_run "$TMP/$1" "$3" &&
		{ [ -z "${4:-}" ] || patch_run "$TMP/$1" "$4"; } && model_says "$1" loss
}

# git_repo NAME TREE: a git repository holding TREE's two files.
git_repo() {
	local r=$TMP/git-$1
	mktree "git-$1" "$TMP/$2" &&
		git -C "$r" init -q &&
		git -C "$r" config user.name "tsq_core_patch test" &&
		git -C "$r" config user.email "test@localhost" &&
		git -C "$r" add -A && git -C "$r" commit -qm "base: $2"
}

git_am() { git -C "$TMP/git-$1" am -q "${@:2}" 2>&1 | sed 's/^/# /'; return "${PIPESTATUS[0]}"; }
git_am_refused() {
	! git_am "$@" && git -C "$TMP/git-$1" am --abort &&
		[ -z "$(git -C "$TMP/git-$1" status --porcelain)" ]
}
git_am_refused_each() {
	local r=$1 p
	shift
	for p in "$@"; do git_am_refused "$r" "$p" || return 1; done
}
# commit_is REPO SKIP "AUTHOR|DATE": the commit SKIP below HEAD.
commit_is() {
	[ "$(git -C "$TMP/git-$1" log -1 --skip="$2" --format='%an <%ae>|%ad' --date=iso)" = "$3" ]
}

# Both at once: each tar decompresses a whole tarball for a few files.
extract 6.1 &
pid=$!
# shellcheck disable=SC2086 # a list of paths
extract 6.12 $CP_FILES || fail "cannot extract $FILES $CP_FILES from linux-source-6.12"
wait "$pid" || fail "cannot extract $FILES from linux-source-6.1"
mktree t61 "$TMP/src-6.1"
mktree t612 "$TMP/src-6.12"

# as_sent PATCH OUT: PATCH as its submitter sends it: their From: if it has
# no author (a backport keeps upstream's), their Signed-off-by last.
PERSON="Test Person <test.person@example.org>"
as_sent() {
	awk -v p="$PERSON" 'NR == 2 && !/^From: / { print "From: " p }
		!done && /^---$/ { print "Signed-off-by: " p; done = 1 } { print }' "$1" >"$2"
}
P1S=$TMP/sent-${P1##*/}
P2S=$TMP/sent-${P2##*/}
as_sent "$P1" "$P1S" && as_sent "$P2" "$P2S" || fail "cannot write the patches as sent"

# ---- 0001: the tcp_push() barrier (7267e8dcad6b) ----
BARRIER_ERE='[[:space:]]+smp_mb__after_atomic\(\);'
for ver in 61 612; do
	name=6.${ver#6}
	check "$name: tcp_push() has the barrier after set_bit(TSQ_THROTTLED)" \
		has_barrier "$TMP/t$ver"
	mktree "t$ver-no1" "$TMP/t$ver"
	check "$name: 0001 reverse-applies with --fuzz=0 (dry run)" \
		patch_run "$TMP/t$ver-no1" "$P1" -R --dry-run
	check "$name: 0001 reverse-applies with --fuzz=0" \
		patch_run "$TMP/t$ver-no1" "$P1" -R
	check "$name: reversing 0001 removed exactly the barrier line" \
		only_lines_changed "t$ver" "t$ver-no1" net/ipv4/tcp.c "$BARRIER_ERE" 'x^'
	check "$name: without 0001 the model loses a wake-up (arm64)" \
		model_says "t$ver-no1" loss
	mktree "t$ver-re1" "$TMP/t$ver-no1"
	check "$name: 0001 applies to the tree without it with --fuzz=0" \
		patch_run "$TMP/t$ver-re1" "$P1"
	check "$name: 0001 restores tcp.c byte for byte" \
		same_file "t$ver" "t$ver-re1" net/ipv4/tcp.c
done

# ---- 0002: the tcp_wfree() load ----
check "6.1: tcp_wfree() reads sk_tsq_flags with READ_ONCE() after the RMW" \
	completer_is t61 C61
check "6.1.192 as shipped: the model loses a wake-up (arm64)" \
	model_says t61 loss
mktree t61p "$TMP/t61"
check "6.1: 0002 applies with --fuzz=0 (dry run)" \
	patch_run "$TMP/t61p" "$P2" --dry-run
check "6.1: 0002 applies with --fuzz=0" \
	patch_run "$TMP/t61p" "$P2"
check "6.1 + 0002: tcp_wfree() reads sk_tsq_flags with smp_load_acquire()" \
	completer_is t61p C612
check "6.1 + 0002: only the flags load changed (and its comment)" \
	only_lines_changed t61 t61p net/ipv4/tcp_output.c \
	'[[:space:]]for \(oval = READ_ONCE\(sk->sk_tsq_flags\);; oval = nval\) \{' \
	'[[:space:]]for \(oval = smp_load_acquire\(&sk->sk_tsq_flags\);; oval = nval\) \{|[[:space:]]/\* .* \*/'
check "6.1 + 0002: no lost wake-up in the model (arm64)" \
	model_says t61p no-loss
mktree t61p-rev "$TMP/t61p"
check "6.1 + 0002: 0002 reverse-applies and restores tcp_output.c byte for byte" \
	reverse_restores t61p-rev "$P2" t61 net/ipv4/tcp_output.c
check "6.12 has it: tcp_wfree() makes the same ordered accesses as 6.1 + 0002" \
	same_accesses t612 t61p
check "6.12 as shipped: no lost wake-up in the model (arm64)" \
	model_says t612 no-loss
check "6.1 as shipped differs from 6.12 in those accesses (the check can fail)" \
	accesses_differ t612 t61
mktree t612-p2 "$TMP/t612"
check "6.12: 0002 does not apply (b548b17a93fd rewrote the loop)" \
	refused t612-p2 "$P2"

# ---- the series on 6.1.y before 6.1.76 ----
mktree t61old12 "$TMP/t61-no1"
check "6.1 without 0001: 0001 then 0002 apply with --fuzz=0" \
	series_applies t61old12 "$P1" "$P2"
check "6.1 without 0001, + 0001 + 0002: no lost wake-up in the model (arm64)" \
	model_says t61old12 no-loss
mktree t61old1 "$TMP/t61-re1"
check "6.1 without 0001, + 0001 only: still loses on arm64 (0002 needed)" \
	model_says t61old1 loss

# ---- git am ----
git_repo old t61-no1
check "git am: 0001 and 0002 (as sent) apply to a 6.1 tree without the barrier" \
	git_am old "$P1S" "$P2S"
check "git am: 0001 keeps its upstream author and date" \
	commit_is old 1 "Salvatore Dipietro <dipiets@amazon.com>|2024-01-19 11:01:33 -0800"
check "git am: the result is 6.1.192's tcp.c and 6.1 + 0002's tcp_output.c" \
	both_same t61 t61p git-old
git_repo 61 t61
check "git am: 6.1.192 refuses 0001 (already applied)" \
	git_am_refused 61 "$P1"
check "git am: 0002 (as sent) applies to 6.1.192" \
	git_am 61 "$P2S"
git_repo 612 t612
check "git am: 6.12.118 refuses 0001 and 0002" \
	git_am_refused_each 612 "$P1" "$P2S"

# ---- provenance and style ----
check "0001: upstream author, commit line and Fixes tag" \
	has_lines "$P1" "From: Salvatore Dipietro <dipiets@amazon.com>" \
	"commit 7267e8dcad6b2f9fce05a6a06335d7040acbc2b6 upstream." \
	'Fixes: 7aa5470c2c09 ("tcp: tsq: move tsq_flags close to sk_wmem_alloc")'
check "0001: stable form, the commit line first, then upstream's message and tags" \
	eval '[ "$(sed -n "1,/^\$/d; /^commit /{p; q}; /./q" "$P1")" = \
		"commit 7267e8dcad6b2f9fce05a6a06335d7040acbc2b6 upstream." ] &&
		has_lines "$P1" \
		"On CPUs with weak memory models, reads and updates performed by tcp_push" \
		"Reviewed-by: Eric Dumazet <edumazet@google.com>" \
		"Link: https://lore.kernel.org/r/20240119190133.43698-1-dipiets@amazon.com" \
		"Signed-off-by: Paolo Abeni <pabeni@redhat.com>"'

# accounted PATCH...: every From: and *-by: line above the first "---" names
# someone the README names (a folded From: is checked by its first line).
accounted() {
	local p l bad=0
	for p; do
		while read -r l; do
			grep -qF -- "${l#*: }" "$README" || { log "${p##*/}: not in README: $l"; bad=1; }
		done < <(sed -n '/^---$/q; /^From: /p; /^[A-Za-z-]*-by: /p' "$p")
	done
	return $bad
}
check "identities: each From:/-by: line of 0001 and 0002 is accounted for in the README" \
	accounted "$P1" "$P2"
check "identities: no submitter's line in the files; the README says the submitter adds it" \
	eval '! grep -q "^From: " "$P2" && grep -q "adds their own From: and Signed-off-by" "$README"'
sed '0,/^---$/s//Signed-off-by: Seed 5efe1674 maintainers <maintainers@users.noreply.a-seed-5efe1674.example>\n---/' \
	"$P2" >"$TMP/mut-sob.patch"
sed '1a From: A Placeholder <placeholder@example.invalid>' "$P2" >"$TMP/mut-from.patch"
check "mutants: an invented Signed-off-by and a placeholder From: are caught" \
	eval '! cmp -s "$P2" "$TMP/mut-sob.patch" && ! accounted "$TMP/mut-sob.patch" &&
		! cmp -s "$P2" "$TMP/mut-from.patch" && ! accounted "$TMP/mut-from.patch"'
check "0002: Fixes tag and the upstream commit it matches" \
	has_lines "$P2" \
	'Fixes: 14afee4b6092 ("net: convert sock.sk_wmem_alloc from atomic_t to refcount_t")' \
	'b548b17a93fd ("tcp: tcp_wfree() refactoring") in v6.2, a cleanup around'

CHECKPATCH=$TMP/src-6.12/scripts/checkpatch.pl
# checkpatch_findings PATCH: "TYPE:TEXT OF THE LINE" for each finding, sorted,
# joined by "|"; the report goes to the diagnostics.  Run outside any git tree
# (the ids' style is checked then); UNKNOWN_COMMIT_ID is left out: it needs a
# kernel git tree to look the ids up in.
checkpatch_findings() {
	(cd "$TMP" && "$CHECKPATCH" --strict --no-tree --show-types --terse \
		--ignore UNKNOWN_COMMIT_ID "$1") >"$TMP/cp.log" 2>&1
	echo $? >"$TMP/cp.rc"
	sed 's/^/# /' "$TMP/cp.log" >&2
	sed -nE 's/^[^:]+:([0-9]+): [A-Z]+:([A-Z_]+):.*/\2 \1/p' "$TMP/cp.log" |
		while read -r type line; do
			echo "$type:$(sed -n "${line}p" "$1")"
		done | sort | paste -sd'|'
}
checkpatch_clean() { [ -z "$(checkpatch_findings "$1")" ] && [ "$(cat "$TMP/cp.rc")" = 0 ]; }
checkpatch_only() { [ "$(checkpatch_findings "$1")" = "$2" ]; }
check "checkpatch --strict: 0002 as sent is clean" \
	checkpatch_clean "$P2S"
# 0001 keeps upstream's line as it is (upstream has no comment on the barrier),
# upstream's message (its servlet listing has a line over 75 columns) and the
# "commit <sha> upstream." line of stable-kernel-rules.rst.
P1_EXPECTED="$(printf '%s|' \
	'COMMIT_LOG_LONG_LINE:    protected void doGet(HttpServletRequest request, HttpServletResponse response)' \
	'GIT_COMMIT_ID:commit 7267e8dcad6b2f9fce05a6a06335d7040acbc2b6 upstream.')$(printf 'MEMORY_BARRIER:+\t\t\tsmp_mb__after_atomic();')"
check "checkpatch --strict: 0001 has only upstream's and the stable line's findings" \
	checkpatch_only "$P1" "$P1_EXPECTED"

# ---- mutants: the model checks above must be able to fail ----
sed 's/^+\t\t\tsmp_mb__after_atomic();$/+\t\t\tbarrier();/' "$P1" >"$TMP/mut1.patch"
mktree tmut1 "$TMP/t61-no1"
check "mutant 0001 (barrier() instead of smp_mb__after_atomic()): model loses" \
	mutant_loses tmut1 "$P1" "$TMP/mut1.patch" "$P2"
sed 's/^+\tfor (oval = smp_load_acquire(&sk->sk_tsq_flags);; oval = nval) {$/+\tfor (oval = READ_ONCE(sk->sk_tsq_flags);; oval = nval) {/' \
	"$P2" >"$TMP/mut2.patch"
mktree tmut2 "$TMP/t61"
check "mutant 0002 (keeps READ_ONCE()): model loses, 6.12 comparison fails" \
	mutant_loses tmut2 "$P2" "$TMP/mut2.patch" && ! same_accesses t612 tmut2

ksft_finish
