#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ena/upstream: the fixes as mail the maintainers take (ena/upstream/README).
#
# Form, on the stored files of net/ and net-next/ (and broken copies of them,
# the mutants, each of which must fail):
#   - each series has 0000-cover-letter.patch, filled in, "[PATCH net 0/1]" /
#     "[PATCH net-next 0/N]", and every patch's subject has its tree's prefix
#     and its N/M;
#   - the net patch has a Fixes: <12+ hex> ("subject") tag; net-next has none;
#   - every patch has a Link: that is a lore message link (not a search)
#     whose message-id ena/upstream/README lists;
#   - no From: and no Signed-off-by in the stored files, and every other
#     *-by: line names someone the README names.
# make -C ena upstream: refuses without a person's FROM, an address without a
# name and an unknown UPSTREAM_TREE (writing nothing); what it writes has
# that From: on every file and that Signed-off-by on every patch.
# Kernel tree: the base is Linux 7.3.4, from Debian's linux-source-7.3
# (trixie-backports; scripts/deps.sh keeps the tarball in
# $TAILFIX_CACHE/linux-source/ through apt; the kernel part is skipped
# without it).  On a git tree of its pristine ENA directory the net patch and
# the net-next series apply with git am, in either order, to the same end;
# that end is, file for file, the end of the build series of
# ena/patches/7.3 (without its version patch): the two forms differ only in
# form (paths, messages); a copy with one other line changed or with the
# drop_doorbells string back fails that comparison.  Each patch is
# checkpatch --strict clean.  The net patch and every state of the net-next
# series also build (W=1, no warning in the ENA files) on 6.12's ENA driver
# against the 6.12 headers, so both bisect.
# amzn-drivers (UPSTREAM_TREE=amzn-drivers), on a git tree of the release
# tarball in ../shared/third_party: the same identity and Link: rules; the
# series ends in the tree the build series of ena/patches/amzn-2.17 makes,
# whose files are the build form ena/upstream/generate.sh makes of it (and
# generate.sh --check fails when one copy is edited alone);
# the counter first, the doorbell decision untouched; every Fixes: id one
# that fixes-provenance.txt records; the state after patch 2 builds.

. "$(dirname "$0")/../lib.sh"

require_cmd git make tar patch perl
SRC612=/usr/src/linux-source-6.12.tar.xz
[ -r "$SRC612" ] || skip "$SRC612 missing (apt-get install linux-source-6.12)"
SRC73=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}/linux-source/linux-source-7.3.tar.xz
UP=$TAILFIX_ROOT/ena/upstream
README=$UP/README
ENA_REL=drivers/net/ethernet/amazon/ena
PERSON="Test Person <test.person@example.org>"
EDUMAZET="Eric Dumazet <edumazet@google.com>"
[ -f "$README" ] || fail "$README missing"

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

git_tree() {
	git -C "$1" -c user.name=base -c user.email=base@localhost -c commit.gpgsign=false "${@:2}"
}

# ---- the form of a series ------------------------------------------------

# header FILE: the message part of FILE (up to the "---" or, in a cover
# letter, everything up to the shortlog's signature)
header() { sed -n '/^---$/q; p' "$1"; }

# subject FILE: the Subject: of FILE, unfolded
subject() {
	awk '/^Subject: / { s = substr($0, 10); f = 1; next }
		f && /^ / { s = s $0; next } f { exit } END { print s }' "$1"
}

# form_ok DIR PREFIX: the series in DIR is a cover letter and N patches,
# all with "[PATCH PREFIX k/N]"; the cover letter is filled in.
form_ok() {
	local d=$1 pre=$2 n k=0 p bad=0 s
	mapfile -t ps < <(ls "$d"/[0-9][0-9][0-9][1-9]-*.patch 2>/dev/null)
	n=${#ps[@]}
	[ "$n" -gt 0 ] || { log "${d##*/}: no patches"; return 1; }
	if [ ! -f "$d/0000-cover-letter.patch" ]; then
		log "${d##*/}: no 0000-cover-letter.patch"
		bad=1
	else
		s=$(subject "$d/0000-cover-letter.patch")
		[[ $s == "[PATCH $pre 0/$n] "?* ]] || { log "${d##*/}: cover subject '$s'"; bad=1; }
		! grep -q '\*\*\* \(SUBJECT\|BLURB\) HERE \*\*\*' "$d/0000-cover-letter.patch" ||
			{ log "${d##*/}: the cover letter is not filled in"; bad=1; }
	fi
	for p in "${ps[@]}"; do
		k=$((k + 1))
		s=$(subject "$p")
		[[ $s == "[PATCH $pre $k/$n] net: ena: "?* ]] || { log "${p##*/}: subject '$s'"; bad=1; }
	done
	return $bad
}

# fixes_ok DIR WANT: every patch of DIR has a well-formed Fixes: tag (WANT=1)
# or none (WANT=0).
FIXES_ERE='^Fixes: [0-9a-f]{12,40} \("[^"]+"\)$'
fixes_ok() {
	local p l n bad=0
	for p in "$1"/[0-9][0-9][0-9][1-9]-*.patch; do
		n=$(header "$p" | grep -c '^Fixes:')
		if [ "$2" = 1 ] && [ "$n" -eq 0 ]; then
			log "${p##*/}: no Fixes:"
			bad=1
		elif [ "$2" = 0 ] && [ "$n" -ne 0 ]; then
			log "${p##*/}: a Fixes: in a net-next patch"
			bad=1
		fi
		while read -r l; do
			[[ $l =~ $FIXES_ERE ]] || { log "${p##*/}: malformed: $l"; bad=1; }
		done < <(header "$p" | grep '^Fixes:')
	done
	return $bad
}

# links_ok FILE...: each has a Link:, and every Link: is a lore link to one
# message (no query) whose message-id the README lists.
LINK_ERE='^Link: https://lore\.kernel\.org/([a-z0-9._-]+)/([^/?#&[:space:]]+@[^/?#&[:space:]]+)/?$'
links_ok() {
	local p l bad=0
	for p; do
		header "$p" | grep -q '^Link: ' || { log "${p##*/}: no Link:"; bad=1; }
		while read -r l; do
			if [[ $l =~ $LINK_ERE ]]; then
				grep -qF "<${BASH_REMATCH[2]}>" "$README" ||
					{ log "${p##*/}: message not in the README: $l"; bad=1; }
			else
				log "${p##*/}: not a link to a message: $l"
				bad=1
			fi
		done < <(header "$p" | grep '^Link: ')
	done
	return $bad
}

# idents_ok WHO FILE...: every From: and *-by: line of the message names
# someone the README names; WHO=stored: no From: and no Signed-off-by at
# all; WHO=PERSON: From: is PERSON, once, and every Signed-off-by is PERSON.
idents_ok() {
	local who=$1 p l bad=0
	shift
	for p; do
		if [ "$who" = stored ]; then
			header "$p" | grep -q '^From: \|^Signed-off-by: ' &&
				{ log "${p##*/}: a From:/Signed-off-by in a stored file"; bad=1; }
		else
			[ "$(header "$p" | grep -c "^From: $who\$")" = 1 ] ||
				{ log "${p##*/}: From: is not $who"; bad=1; }
		fi
		while read -r l; do
			case $l in
			"From: $who"|"Signed-off-by: $who") continue ;;
			From:*|Signed-off-by:*) log "${p##*/}: not the sender: $l"; bad=1; continue ;;
			esac
			grep -qF -- "${l#*: }" "$README" || { log "${p##*/}: not in the README: $l"; bad=1; }
		done < <(header "$p" | grep '^From: \|^[A-Za-z-]*-by: ')
	done
	return $bad
}

# series_ok DIR PREFIX FIXES: the form checks together (the mutants' judge)
series_ok() {
	form_ok "$1" "$2" && fixes_ok "$1" "$3" &&
		links_ok "$1"/[0-9][0-9][0-9][1-9]-*.patch &&
		idents_ok stored "$1"/*.patch
}

check "README says the submitter adds their own From: and Signed-off-by" \
	grep -q 'submitter adds their own' "$README"
check "net: cover letter and one [PATCH net 1/1]" form_ok "$UP/net" net
check "net-next: cover letter and [PATCH net-next k/N]" form_ok "$UP/net-next" net-next
check "net: the patch has a well-formed Fixes: tag" fixes_ok "$UP/net" 1
check "net-next: no Fixes: (net-next material)" fixes_ok "$UP/net-next" 0
check "net, net-next, amzn-drivers: every Link: is a lore message the README lists" \
	links_ok "$UP"/net/000[1-9]-*.patch "$UP"/net-next/000[1-9]-*.patch "$UP"/amzn-drivers-2.17/000[1-9]-*.patch
check "net, net-next, amzn-drivers: no From:/Signed-off-by, every *-by: accounted for" \
	idents_ok stored "$UP"/net/*.patch "$UP"/net-next/*.patch "$UP"/amzn-drivers-2.17/*.patch
check "net: the doorbell fix suggested by Eric Dumazet, without the drop_doorbells counter" \
	eval 'grep -q "^Suggested-by: $EDUMAZET" "$UP"/net/0001-*.patch &&
		grep -q "^+.*netdev_xmit_more" "$UP"/net/0001-*.patch &&
		! grep -q drop_doorbells "$UP"/net/*.patch "$UP"/net-next/*.patch'
# leads_64 FILE...: the message names the 64-bit effect before the 32-bit one
leads_64() {
	local f
	for f; do
		sed -n '/^$/,$p' "$f" | grep -m1 '64-bit\|32-bit' | grep -q 64-bit ||
			{ log "${f##*/}: 32-bit before 64-bit, or neither"; return 1; }
	done
}
check "net-next: the 64-bit effect first, the 32-bit hang second (cover letter and every patch)" \
	leads_64 "$UP"/net-next/*.patch

# mutants: one broken copy per rule, each must fail series_ok
mutant() {
	local name=$1 tree=$2
	shift 2
	rm -rf "${TMP:?}/mut-$name" && cp -a "$UP/$tree" "$TMP/mut-$name" && (cd "$TMP/mut-$name" && eval "$*")
}
mutant no-fixes net 'sed -i "/^Fixes:/d" 0001-*.patch'
mutant short-fixes net 'sed -i "s/^Fixes: \([0-9a-f]\{11\}\)[0-9a-f]* /Fixes: \1 /" 0001-*.patch'
mutant unquoted-fixes net 'sed -i "s/^\(Fixes: [0-9a-f]*\) (\"\(.*\)\")$/\1 \2/" 0001-*.patch'
mutant search-link net 'sed -i "s|^Link: .*|Link: https://lore.kernel.org/netdev/?q=s%3A%22tcp%3A+disable+tcp_autocorking%22|" 0001-*.patch'
mutant other-msg net 'sed -i "s|^Link: https://lore.kernel.org/netdev/[^/]*/|Link: https://lore.kernel.org/netdev/20231208.1-not-listed@example.org/|" 0001-*.patch'
mutant seed-sob net 'sed -i "0,/^---\$/s//Signed-off-by: Seed 5efe1674 maintainers <maintainers@users.noreply.a-seed-5efe1674.example>\n---/" 0001-*.patch'
mutant author net 'sed -i "1a From: @AUTHOR@" 0001-*.patch'
mutant other-by net 'sed -i "s/^Suggested-by: .*/Reviewed-by: Someone Else <someone@example.org>/" 0001-*.patch'
mutant no-cover net-next 'rm 0000-cover-letter.patch'
mutant no-prefix net 'sed -i "s/^Subject: \[PATCH net 1\/1\]/Subject: [PATCH 1\/1]/" 0001-*.patch'
mutant cover-prefix net-next 'sed -i "s/^Subject: \[PATCH net-next 0\//Subject: [PATCH 0\//" 0000-cover-letter.patch'
mutant fixes-in-next net-next 'sed -i "0,/^Link:/s//Fixes: 1738cd3ed342 (\"net: ena: Add a driver for Amazon Elastic Network Adapters (ENA)\")\nLink:/" 0001-*.patch'
caught=0 missed=
for m in no-fixes short-fixes unquoted-fixes search-link other-msg seed-sob author other-by \
	no-prefix no-cover cover-prefix fixes-in-next; do
	case $m in no-cover|cover-prefix|fixes-in-next) tree=net-next pre=net-next fx=0 ;;
	*) tree=net pre=net fx=1 ;; esac
	if diff -rq "$UP/$tree" "$TMP/mut-$m" >/dev/null; then
		missed+=" $m(unchanged)"
	elif series_ok "$TMP/mut-$m" $pre $fx >"$TMP/mut.log" 2>&1; then
		missed+=" $m"
	else
		caught=$((caught + 1))
		log "mutant $m: $(grep -m1 . "$TMP/mut.log" | sed 's/^# //')"
	fi
done
check "mutants caught: missing, short and unquoted Fixes:, search and unlisted Link:, invented Signed-off-by, placeholder From:, unknown *-by:, no tree prefix, no cover letter, cover without prefix, Fixes: in net-next${missed:+ (missed:$missed)}" \
	test "$caught" -eq 12
check "the stored series pass the same judge" \
	eval 'series_ok "$UP/net" net 1 && series_ok "$UP/net-next" net-next 0'

# ---- make -C ena upstream ---------------------------------------------------
check "make -C ena upstream refuses without FROM" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream UPSTREAM_OUT="$TMP/nofrom" 2>"$TMP/nofrom.err" &&
		grep -q "set FROM=" "$TMP/nofrom.err" && ! compgen -G "$TMP/nofrom/*.patch" >/dev/null'
check "make -C ena upstream refuses an address without a name" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream FROM=x@example.org UPSTREAM_OUT="$TMP/bad" 2>/dev/null'
check "make -C ena upstream refuses an unknown UPSTREAM_TREE, writing nothing" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream FROM="$PERSON" UPSTREAM_TREE=linux-next \
		UPSTREAM_OUT="$TMP/badtree" 2>"$TMP/badtree.err" &&
		grep -q "UPSTREAM_TREE=linux-next" "$TMP/badtree.err" && [ ! -e "$TMP/badtree" ]'
OUT=$TMP/out
check "make -C ena upstream FROM=... SIGNOFF=1 writes net/ and net-next/" \
	make -s -C "$TAILFIX_ROOT/ena" upstream FROM="$PERSON" SIGNOFF=1 UPSTREAM_OUT="$OUT"
# signed_each: every written patch has the sender's Signed-off-by, no
# cover letter has one
signed_each() {
	local p
	for p in "$OUT"/net/000[1-9]-*.patch "$OUT"/net-next/000[1-9]-*.patch; do
		header "$p" | grep -qx "Signed-off-by: $PERSON" || { log "${p##*/}: not signed off"; return 1; }
	done
	! cat "$OUT"/net/0000-*.patch "$OUT"/net-next/0000-*.patch | grep -q '^Signed-off-by:'
}
check "what it writes: From: the sender on every file, the sender's Signed-off-by on every patch, no other identity" \
	eval 'idents_ok "$PERSON" "$OUT"/net/*.patch "$OUT"/net-next/*.patch && signed_each'
check "make -C ena upstream refuses an UPSTREAM_OUT that has patches" \
	eval '! make -s -C "$TAILFIX_ROOT/ena" upstream FROM="$PERSON" UPSTREAM_OUT="$OUT" 2>/dev/null'

CHECKPATCH=
tar -xJf "$SRC612" -C "$TMP" --wildcards "*/$ENA_REL/*" "*/scripts/checkpatch.pl" \
	"*/scripts/spelling.txt" "*/scripts/const_structs.checkpatch" || fail "cannot unpack $ENA_REL from $SRC612"
base612=$(find "$TMP" -mindepth 1 -maxdepth 1 -type d -name 'linux-source-6.12*' | head -1)
[ -f "$base612/scripts/checkpatch.pl" ] && CHECKPATCH=$base612/scripts/checkpatch.pl

# checkpatch looks each Fixes: id up in the git repository of its working
# directory (or GIT_DIR): CP_GIT_DIR is that history, else the look-up is
# left out (CP_IGNORE).
cp_ok() {
	local p bad=0
	for p; do
		(cd "$TMP" && GIT_DIR=${CP_GIT_DIR:-$TMP/no-history} perl "$CHECKPATCH" --strict --no-tree \
			--terse -q ${CP_IGNORE:+--ignore "$CP_IGNORE"} "$p") >"$TMP/cp.log" 2>&1 ||
			{ sed 's/^/#   /' "$TMP/cp.log"; bad=1; }
	done
	return $bad
}

# am_all GITDIR PATCH...: git am each in order; prints how many applied
am_all() {
	local g=$1 p n=0
	shift
	for p; do
		if git_tree "$g" am -q "$p" >"$TMP/am.log" 2>&1; then
			n=$((n + 1))
		else
			sed 's/^/#   /' "$TMP/am.log" | head -5 >&2
			git_tree "$g" am --abort >/dev/null 2>&1
			break
		fi
	done
	echo "$n"
}

# same_tree A B: B's ENA files are A's, byte for byte (the first
# differences logged)
same_tree() {
	diff -r -x '*.orig' "$1" "$2" >"$TMP/tree.diff" && return 0
	grep '^[<>]' "$TMP/tree.diff" | head -8 | sed 's/^/#   /'
	return 1
}

# judged_mutant NAME FILE SED DESC: the net + net-next end state with SED
# applied to FILE must fail same_tree against the build series' tree
judged_mutant() {
	local m=$TMP/ref73$1 f=$2

	mkdir "$m" && cp -a "$b73/$ENA_REL" "$m/ena" && sed -i "$3" "$m/ena/$f"
	check "7.3.4: $4" \
		eval '! cmp -s "$b73/$ENA_REL/$f" "$m/ena/$f" &&
			! same_tree "$TMP/ref73/$ENA_REL" "$m/ena" >/dev/null'
}

# builds DIR NAME: DIR (an ENA directory) builds with W=1 against the 6.12
# headers, no warning in its files
KVER=$(ls -d /lib/modules/6.12.*/build 2>/dev/null | head -1 | cut -d/ -f4)
builds() {
	printf 'obj-m := ena.o\nena-y := ena_netdev.o ena_com.o ena_eth_com.o ena_ethtool.o ena_xdp.o\n' >"$1/Kbuild"
	make -s -C "/lib/modules/$KVER/build" M="$1" W=1 modules >"$TMP/b-$2.log" 2>&1 &&
		[ -f "$1/ena.ko" ] && ! grep -E "^$1/[^ ]*: warning:" "$TMP/b-$2.log" | sed "s/^/#   /" | grep -q .
}

# ---- the kernel tree: Linux 7.3.4 ------------------------------------------
if [ ! -r "$SRC73" ]; then
	check_skip "net and net-next on Linux 7.3.4" "$SRC73 missing (scripts/deps.sh fetches it through apt)"
else
	mkdir "$TMP/k73"
	tar -xJf "$SRC73" -C "$TMP/k73" --wildcards "*/$ENA_REL/*" || fail "cannot unpack $ENA_REL from $SRC73"
	b73=$(ls -d "$TMP"/k73/*/ | head -1)
	b73=${b73%/}
	git_tree "$b73" init -q && git_tree "$b73" add -A && git_tree "$b73" commit -qm "7.3.4" ||
		fail "git init of the 7.3.4 tree"
	git_tree "$b73" branch -q pristine
	netp=("$OUT"/net/000[1-9]-*.patch)
	nextp=("$OUT"/net-next/000[1-9]-*.patch)

	n=$(am_all "$b73" "${netp[@]}")
	check "7.3.4: the net patch applies with git am (${n}/${#netp[@]})" test "$n" -eq "${#netp[@]}"
	n=$(am_all "$b73" "${nextp[@]}")
	check "7.3.4: then the net-next series, patch by patch (${n}/${#nextp[@]})" test "$n" -eq "${#nextp[@]}"
	check "7.3.4: git am kept the sender as author; only $ENA_REL touched" \
		eval '[ "$(git_tree "$b73" log -1 --format="%an <%ae>")" = "$PERSON" ] &&
			[ -z "$(git_tree "$b73" diff --name-only pristine HEAD | grep -v "^$ENA_REL/")" ]'
	end1=$(git_tree "$b73" rev-parse HEAD)
	git_tree "$b73" checkout -q -b other pristine
	n=$(am_all "$b73" "${nextp[@]}" "${netp[@]}")
	check "7.3.4: net-next first, then net: the same end" \
		eval '[ "$n" -eq $((${#netp[@]} + ${#nextp[@]})) ] && git_tree "$b73" diff --quiet "$end1" other'
	git_tree "$b73" checkout -q "$end1"

	# the build series of 7.3 on the same pristine tree
	mkdir "$TMP/ref73"
	git_tree "$b73" archive pristine "$ENA_REL" | tar -x -C "$TMP/ref73"
	ok=1
	while read -r bp; do
		case $bp in ''|'#'*) continue ;; esac
		grep -q 'tell which build' "$TAILFIX_ROOT/ena/patches/7.3/$bp" && continue
		patch -s -p1 --fuzz=0 -d "$TMP/ref73/$ENA_REL" <"$TAILFIX_ROOT/ena/patches/7.3/$bp" || ok=0
	done <"$TAILFIX_ROOT/ena/patches/7.3/series"
	check "7.3.4: the build series (without its version patch) applies" test "$ok" -eq 1
	check "7.3.4: net + net-next end in the build series' tree, file for file" \
		same_tree "$TMP/ref73/$ENA_REL" "$b73/$ENA_REL"
	# the judge fails on an end state with one other line changed, and on
	# one with the drop_doorbells counter back in the ethtool -S strings
	judged_mutant m ena_netdev.c \
		'0,/WRITE_ONCE(tx_ring->tx_stats.last_napi_jiffies, jiffies);/s//tx_ring->tx_stats.last_napi_jiffies = jiffies;/' \
		"that comparison fails on an end state with one other line changed"
	judged_mutant c ena_ethtool.c \
		's/^\tENA_STAT_TX_ENTRY(unmask_interrupt),$/&\n\tENA_STAT_TX_ENTRY(drop_doorbells),/' \
		"and on one with the drop_doorbells string back in the Tx strings"
	if [ -n "$CHECKPATCH" ]; then
		CP_IGNORE=UNKNOWN_COMMIT_ID
		check "checkpatch --strict is clean on the net patch and each net-next patch (Fixes: id not looked up: no kernel history here)" \
			cp_ok "${netp[@]}" "${nextp[@]}"
		unset CP_IGNORE
	else
		check_skip "checkpatch --strict on the kernel series" "no scripts/checkpatch.pl in $SRC612"
	fi
fi

# ---- bisect: every state builds (6.12's ENA driver, 6.12 headers) ----------
if [ -z "$KVER" ]; then
	check_skip "the net patch and each net-next state build" "no linux-headers for 6.12 under /lib/modules"
else
	b612=$base612/$ENA_REL
	st=$TMP/s612-net
	cp -a "$b612" "$st" && patch -s -p6 --no-backup-if-mismatch -d "$st" <"$OUT"/net/0001-*.patch
	check "6.12 + the net patch: applies and builds with W=1 against $KVER, no warning" builds "$st" net
	st=$TMP/s612-next
	cp -a "$b612" "$st"
	k=0
	for p in "$OUT"/net-next/000[1-9]-*.patch; do
		k=$((k + 1))
		check "6.12 + net-next 1..$k: applies with --fuzz=0 and builds with W=1, no warning" \
			eval 'patch -s -p6 --fuzz=0 --no-backup-if-mismatch -d "$st" <"$p" && builds "$st" "next$k"'
	done
fi

# ---- amzn-drivers ---------------------------------------------------------
# patches/amzn-2.17 (less its version patch) is not edited by hand: it is
# the build form that ena/upstream/generate.sh makes of
# upstream/amzn-drivers-2.17.  --check fails when either copy is edited
# alone, and passes again once generate.sh has written the build form.
gen_check() { "$1/upstream/generate.sh" --check 2>"$TMP/gen.err"; }
check "amzn-drivers: patches/amzn-2.17 is what generate.sh makes of upstream/amzn-drivers-2.17" \
	gen_check "$TAILFIX_ROOT/ena"
gen_mutant() {	# gen_mutant NAME FILE SED: FILE of a copy of ena/ edited
	mkdir -p "$TMP/gen-$1"
	cp -r "$TAILFIX_ROOT/ena/upstream" "$TAILFIX_ROOT/ena/patches" "$TMP/gen-$1/"
	sed -i "$3" "$TMP/gen-$1/$2"
	! cmp -s "$TAILFIX_ROOT/ena/$2" "$TMP/gen-$1/$2" && ! gen_check "$TMP/gen-$1" &&
		grep -q "^ena generate: patches/amzn-2.17/0001-" "$TMP/gen.err"
}
check "amzn-drivers: generate.sh --check fails on an edited build copy and on an edited upstream copy" \
	eval 'gen_mutant build "$(cd "$TAILFIX_ROOT/ena" && ls patches/amzn-2.17/0001-*.patch)" "s/^ \tENA_STAT_TX_ENTRY(lost_interrupt),/ \tENA_STAT_TX_ENTRY(lost_interrupts),/" &&
		gen_mutant upstream "$(cd "$TAILFIX_ROOT/ena" && ls upstream/amzn-drivers-2.17/0001-*.patch)" "s/^Count those doorbells/Count these doorbells/"'
check "amzn-drivers: after an upstream edit, generate.sh writes the build form and --check passes" \
	eval '"$TMP/gen-upstream/upstream/generate.sh" && gen_check "$TMP/gen-upstream" &&
		grep -q "^Count these doorbells" "$TMP"/gen-upstream/patches/amzn-2.17/0001-*.patch'

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

AOUT=$TMP/out-amzn
check "amzn-drivers: make -C ena upstream ... UPSTREAM_TREE=amzn-drivers writes 3 patches" \
	eval 'make -s -C "$TAILFIX_ROOT/ena" upstream FROM="$PERSON" SIGNOFF=1 UPSTREAM_TREE=amzn-drivers \
		UPSTREAM_OUT="$AOUT" && [ "$(ls "$AOUT"/*.patch | wc -l)" -eq 3 ]'
mapfile -t patches < <(ls "$AOUT"/*.patch 2>/dev/null)
check "amzn-drivers: From: the sender, the sender's Signed-off-by, no other identity" \
	idents_ok "$PERSON" "${patches[@]}"
n=$(am_all "$abase" "${patches[@]}")
applied=$n
check "amzn-drivers: each patch applies with git am, in order ($n of ${#patches[@]})" test "$n" -eq "${#patches[@]}"
check "amzn-drivers: only files under kernel/linux/ena are touched" \
	eval '[ -z "$(git_tree "$abase" diff --name-only "HEAD~$applied" HEAD | grep -v "^kernel/linux/ena/")" ]'
mkdir "$TMP/aref"
git_tree "$abase" archive "HEAD~$applied" kernel/linux | tar -x -C "$TMP/aref"
ok=1
while read -r bp; do
	case $bp in ''|'#'*) continue ;; esac
	grep -q 'tell which build' "$TAILFIX_ROOT/ena/patches/amzn-2.17/$bp" && continue
	patch -s -p1 -d "$TMP/aref/kernel/linux" <"$TAILFIX_ROOT/ena/patches/amzn-2.17/$bp" || ok=0
done <"$TAILFIX_ROOT/ena/patches/amzn-2.17/series"
check "amzn-drivers: the build series (without its version patch) applies to the pristine tree" test "$ok" -eq 1
check "amzn-drivers: the upstream series ends in the tree the build series makes" \
	diff -r -x '*.orig' "$TMP/aref/kernel/linux/ena" "$abase/kernel/linux/ena"

# Fixes: ids are amzn-drivers commits: checked against its history when
# TAILFIX_AMZN_GIT names a clone of it, else only the look-up is left out
# (the ids and the blame behind them are in fixes-provenance.txt).
if [ -n "$CHECKPATCH" ]; then
	if [ -n "${TAILFIX_AMZN_GIT:-}" ]; then
		CP_GIT_DIR=$(git -C "$TAILFIX_AMZN_GIT" rev-parse --absolute-git-dir 2>/dev/null) ||
			fail "TAILFIX_AMZN_GIT=$TAILFIX_AMZN_GIT is not a git clone of amzn-drivers"
		note=", Fixes: ids and subjects checked in $TAILFIX_AMZN_GIT"
	else
		CP_IGNORE=UNKNOWN_COMMIT_ID
		note=" (Fixes: ids not looked up: set TAILFIX_AMZN_GIT to a clone of amzn-drivers)"
	fi
	check "amzn-drivers: checkpatch --strict is clean on every patch$note" cp_ok "${patches[@]}"
	unset CP_GIT_DIR CP_IGNORE
fi
prov=$UP/amzn-drivers-2.17/fixes-provenance.txt
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
AKVER=$(ls -d /lib/modules/6.1.*/build /lib/modules/6.12.*/build 2>/dev/null | head -1 | cut -d/ -f4)
if [ -n "$AKVER" ]; then
	git_tree "$abase" archive "HEAD~$((applied - 2))" kernel/linux | tar -x -C "$TMP" --one-top-level=astate2
	check "amzn-drivers: the tree after patch 2 builds (its configure step, then Kbuild) against $AKVER, no warning" \
		eval 'make -s -C "$TMP/astate2/kernel/linux/ena" BUILD_KERNEL="$AKVER" \
			KERNEL_BUILD_DIR="/lib/modules/$AKVER/build" >"$TMP/ab2.log" 2>&1 &&
			[ -f "$TMP/astate2/kernel/linux/ena/ena.ko" ] &&
			! grep -E ": warning:" "$TMP/ab2.log" | sed "s/^/#   /" | grep -q .'
else
	check_skip "amzn-drivers: the tree after patch 2 builds" "no linux-headers for 6.1 or 6.12 under /lib/modules"
fi
ksft_finish
