#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The documents say what the tree has:
#  - tests/README.md's table has a row for each test of tests/Makefile
#    (TEST_PROGS, HOST_TEST_PROGS, HOST_FULL_TEST_PROGS) and of
#    tests/mutants/*.sh, and no row for anything else;
#  - each row's `make check` and `make check-full` cells name the places
#    tests/vm/check.sh runs the test, computed from its lists (NEWEST_TESTS,
#    QUICK_612_LEAVE, QUICK_MUTANTS, MUTANT_TESTS, SMP_TESTS, DEBUG_TESTS,
#    DEBUG_QUICK_TESTS and the arm64 guest's leave-out pattern);
#  - every path under bench/results/ that a README cites exists;
#  - every file under bench/results/ is cited by a README: itself, or a
#    directory holding it at least two levels down (bench/results/X/Y/, one
#    measurement), so that no run stays in the tree that nothing reads.
# Then each check is shown to fail on a broken copy of those files (a row
# left out, a row for no test, a test added to the Makefile, a list of
# check.sh changed, a citation of a missing file, a result cited by
# nothing), after the unbroken copy passed.
#   docs_consistency.sh --where   prints, per test, the two cells check.sh
#                                 gives it (for a new row of tests/README.md)
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"

# The READMEs whose citations count.
readmes() { (cd "$1" && ls -d README.md ./*/README* ./*/*/README* 2>/dev/null | sed 's,^\./,,' | grep -v '^bench/results/'); }

# csv_has LIST NAME: NAME is an entry of the comma- or space-separated LIST.
csv_has() { tr ', ' '\n\n' <<<"$1" | grep -qxF -- "$2"; }
# squeeze WORDS: the words, one space between them.
squeeze() { tr -s ' \n' '  ' <<<"$1" | sed 's/^ //; s/ $//'; }

# where ROOT: "name<TAB>make check cell<TAB>make check-full cell" per test,
# from ROOT's tests/Makefile and tests/vm/check.sh; 1 when a list of
# check.sh cannot be read (its layout changed: update this test with it).
where() {
	local root=$1 cs=$1/tests/vm/check.sh v suite host hostfull name q f
	local NEWEST_TESTS QUICK_612_LEAVE QUICK_MUTANTS MUTANT_TESTS SMP_TESTS DEBUG_TESTS DEBUG_QUICK_TESTS ARM64_LEAVE

	for v in NEWEST_TESTS QUICK_612_LEAVE QUICK_MUTANTS MUTANT_TESTS SMP_TESTS DEBUG_TESTS DEBUG_QUICK_TESTS; do
		printf -v "$v" '%s' "$(sed -n "s/^$v=//p" "$cs" | head -1 | sed "s/^['\"]//; s/['\"]\$//")"
		[ -n "${!v}" ] || { log "cannot read $v= from tests/vm/check.sh"; return 1; }
	done
	# make check's arm64 guest: the suite less the tests this pattern matches.
	ARM64_LEAVE=$(grep -o "arm64_tests '[^']*'" "$cs" | head -1 | sed "s/^arm64_tests '//; s/'\$//")
	[ -n "$ARM64_LEAVE" ] || { log "cannot read make check's arm64_tests pattern from tests/vm/check.sh"; return 1; }
	suite=$(make -s -C "$root/tests" print-test-progs)
	host=$(make -s -C "$root/tests" print-host-test-progs)
	hostfull=$(make -s -C "$root/tests" print-host-full-test-progs)
	[ -n "$suite" ] && [ -n "$host" ] || { log "no test lists from tests/Makefile"; return 1; }
	for name in $suite $host $hostfull $(cd "$root/tests" && ls mutants/*.sh 2>/dev/null); do
		q='' f=''
		if csv_has "$host" "$name"; then
			q=host f=host
		elif csv_has "$hostfull" "$name"; then
			f=host
		fi
		if csv_has "$suite" "$name"; then
			q=6.1
			grep -qxE "$QUICK_612_LEAVE" <<<"$name" || q="$q 6.12"
			! csv_has "$NEWEST_TESTS" "$name" || q="$q 7.x"
			grep -qxE "$ARM64_LEAVE" <<<"$name" || q="$q arm64"
			f="5.10 6.1 6.12 7.x arm64"
		fi
		! csv_has "$QUICK_MUTANTS" "$name" || q="$q 6.12"
		! csv_has "$DEBUG_QUICK_TESTS" "$name" || q="$q debug"
		! csv_has "$MUTANT_TESTS" "$name" || f="$f 6.1 6.12"
		! csv_has "$DEBUG_TESTS" "$name" || f="$f debug"
		! csv_has "$SMP_TESTS" "$name" || f="$f smp"
		printf '%s\t%s\t%s\n' "$name" "$(squeeze "${q:--}")" "$(squeeze "${f:--}")"
	done | awk -F'\t' '!seen[$1]++'
}

# rows ROOT: "name<TAB>make check cell<TAB>make check-full cell" per row of
# the tables of ROOT/tests/README.md (| `name` | proves | needs | check | full |).
rows() {
	awk -F'|' '/^\| `[^`]+` \|/ && NF == 7 {
		for (i = 2; i <= 6; i++) { gsub(/^ +| +$/, "", $i); gsub(/ +/, " ", $i) }
		gsub(/`/, "", $2); print $2 "\t" $5 "\t" $6 }' "$1/tests/README.md"
}

# cited ROOT: "readme<TAB>path" for each path under bench/results/ a README
# cites: bench/results/... anywhere (../bench/results/... too), and
# results/... in bench/README.md; {a,b} expanded, trailing dots dropped.
cited() {
	local root=$1 r p pre alts suf a

	for r in $(readmes "$root"); do
		{
			grep -oE 'bench/results/[A-Za-z0-9_.@+/-]*(\{[A-Za-z0-9_.,-]*\}[A-Za-z0-9_.@+/-]*)?' "$root/$r"
			[ "$r" != bench/README.md ] ||
				grep -oE '(^|[^A-Za-z0-9_./-])results/[A-Za-z0-9_.@+/-]*(\{[A-Za-z0-9_.,-]*\}[A-Za-z0-9_.@+/-]*)?' "$root/$r" |
				sed -E 's,^[^r]?results/,bench/results/,'
		} | sed -E 's/\.+$//' | while read -r p; do
			if [[ $p == *\{*\}* ]]; then
				pre=${p%%\{*} suf=${p#*\}} alts=${p#*\{} alts=${alts%%\}*}
				for a in ${alts//,/ }; do printf '%s\t%s\n' "$r" "$pre$a$suf"; done
			else
				printf '%s\t%s\n' "$r" "$p"
			fi
		done
	done
}

# The checks, each on a tree ROOT; each logs what is wrong.
table_has_every_test() {
	local missing

	where "$1" >"$tmp/where" && rows "$1" >"$tmp/rows" || return 1
	missing=$(cut -f1 "$tmp/where" | grep -vxF -f <(cut -f1 "$tmp/rows"))
	[ -z "$missing" ] || { log "tests/README.md has no row for: $(squeeze "$missing")"; return 1; }
}
table_has_only_tests() {
	local extra

	where "$1" >"$tmp/where" && rows "$1" >"$tmp/rows" || return 1
	extra=$(cut -f1 "$tmp/rows" | grep -vxF -f <(cut -f1 "$tmp/where"))
	[ -z "$extra" ] || { log "tests/README.md has rows for what is no test of tests/Makefile or tests/mutants: $(squeeze "$extra")"; return 1; }
}
table_says_where() {
	local bad

	where "$1" >"$tmp/where" && rows "$1" >"$tmp/rows" || return 1
	bad=$(grep -vxF -f "$tmp/where" "$tmp/rows" | cut -f1 | grep -xF -f <(cut -f1 "$tmp/where"))
	[ -z "$bad" ] || {
		for n in $bad; do
			log "$n: tests/README.md says '$(grep -P "^\Q$n\E\t" "$tmp/rows" | cut -f2- | sed 's/\t/ | /')'," \
				"check.sh runs it in '$(grep -P "^\Q$n\E\t" "$tmp/where" | cut -f2- | sed 's/\t/ | /')'"
		done
		return 1
	}
}
citations_exist() {
	local r p bad=0

	while IFS=$'\t' read -r r p; do
		[ -e "$1/$p" ] || { log "$r cites $p, which does not exist"; bad=1; }
	done < <(cited "$1")
	return "$bad"
}
results_all_cited() {
	cited "$1" | cut -f2 | sed 's,/*$,,' | sort -u >"$tmp/cited"
	# Covered: the file itself, or a directory holding it two levels or
	# more below bench/results/ (bench/results/X/Y/...).
	(cd "$1" && find bench/results -type f | sort) | awk -v cited="$tmp/cited" '
		BEGIN { while ((getline p < cited) > 0) c[p] = 1 }
		{
			if ($0 in c)
				next
			n = split($0, part, "/")
			d = part[1] "/" part[2] "/" part[3]
			for (i = 4; i < n; i++) {
				d = d "/" part[i]
				if (d in c)
					next
			}
			print
		}' >"$tmp/uncited"
	[ -s "$tmp/uncited" ] || return 0
	sed -E 's,/[^/]*$,,' "$tmp/uncited" | sort | uniq -c | while read -r n d; do
		log "$d: $n file(s) cited by no README, e.g. $(grep -m1 "^$d/[^/]*\$" "$tmp/uncited")"
	done
	return 1
}

if [ "${1:-}" = --where ]; then
	where "$TAILFIX_ROOT" | column -t -s $'\t'
	exit 0
fi
require_cmd make awk

check "tests/README.md has a row for every test" table_has_every_test "$TAILFIX_ROOT"
check "every row of tests/README.md is a test" table_has_only_tests "$TAILFIX_ROOT"
check "each row's make check / make check-full cells are where check.sh runs it" table_says_where "$TAILFIX_ROOT"
check "every bench/results path a README cites exists" citations_exist "$TAILFIX_ROOT"
check "every file under bench/results/ is cited by a README" results_all_cited "$TAILFIX_ROOT"

# A copy of what the checks read, to break.
copy() {
	rm -rf "$tmp/copy"
	mkdir -p "$tmp/copy/tests/vm" "$tmp/copy/tests/mutants"
	(cd "$TAILFIX_ROOT" && readmes . | tar -cf - -T - tests/README.md tests/Makefile tests/vm/check.sh \
		tests/mutants/*.sh bench/results) | tar -C "$tmp/copy" -xf -
}
# must_fail CHECK WORDS: CHECK fails on the copy and its log says WORDS.
must_fail() {
	! "$1" "$tmp/copy" >"$tmp/log" 2>&1 && grep -qF -- "$2" "$tmp/log" ||
		{ sed 's/^/# got: /' "$tmp/log"; return 1; }
}
all_pass() {
	table_has_every_test "$1" && table_has_only_tests "$1" && table_says_where "$1" &&
		citations_exist "$1" && results_all_cited "$1"
}

copy
check "the unbroken copy passes every check" all_pass "$tmp/copy"

copy
sed -i '/^| `tsq_probe_load\.sh` |/d' "$tmp/copy/tests/README.md"
check "broken: a test's row left out" must_fail table_has_every_test tsq_probe_load.sh

copy
sed -i '/^| `tsq_probe_counters\.sh` |/{p;s/tsq_probe_counters/tsq_probe_gone/}' "$tmp/copy/tests/README.md"
check "broken: a row for a test that does not exist" must_fail table_has_only_tests tsq_probe_gone.sh

copy
echo 'TEST_PROGS += brand_new.sh' >>"$tmp/copy/tests/Makefile"
: >"$tmp/copy/tests/mutants/brand_new_mutant.sh"
added_caught() {
	must_fail table_has_every_test brand_new.sh &&
		must_fail table_has_every_test mutants/brand_new_mutant.sh
}
check "broken: a test added to tests/Makefile, a mutant to tests/mutants" added_caught

copy
sed -i -E '/^NEWEST_TESTS=/s/tsq_probe_fault\.sh,?//' "$tmp/copy/tests/vm/check.sh"
check "broken: check.sh's 7.x list no longer has a test the table puts there" must_fail table_says_where tsq_probe_fault.sh

copy
printf '\nRaw: `bench/results/kernels/no-such-run.txt`.\n' >>"$tmp/copy/README.md"
check "broken: a README cites a result that does not exist" must_fail citations_exist no-such-run.txt

copy
printf '\nRaw: `results/6.1.0-57-cloud-amd64/tsq-cost-{icount,nothing}/`.\n' >>"$tmp/copy/bench/README.md"
check "broken: bench/README.md cites {a,b} of which one does not exist" must_fail citations_exist tsq-cost-nothing

copy
mkdir -p "$tmp/copy/bench/results/6.1.0-57-cloud-amd64/orphan-run"
: >"$tmp/copy/bench/results/6.1.0-57-cloud-amd64/orphan-run/summary.txt"
check "broken: a result directory cited by nothing" must_fail results_all_cited orphan-run

ksft_finish
