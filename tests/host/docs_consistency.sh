#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The documents say what the tree has:
#  - tests/placement (one line per test: where make check and make
#    check-full run it, which tests/Makefile and tests/vm/check.sh read)
#    follows the rules of its header, has a line for every test script
#    under tests/ (an executable NAME.sh but lib.sh and run_tests.sh,
#    host/NAME.sh, mutants/NAME.sh) and none for a script that does not
#    exist;
#  - tests/Makefile's lists are tests/placement's, and tests/vm/check.sh
#    lists no test in its code (a list kept by hand);
#  - tests/README.md's tables have a row for each test of tests/placement
#    and no row for anything else, and each row's `make check` and
#    `make check-full` cells name the places tests/placement gives it (a
#    note in parentheses in a cell is not compared);
#  - every path under bench/results/ that a README cites exists;
#  - every file under bench/results/ is cited by a README: itself, or a
#    directory holding it at least two levels down (bench/results/X/Y/, one
#    measurement), so that no run stays in the tree that nothing reads.
# Then each check is shown to fail on a broken copy of those files (a row
# left out, a row for no test, a test added without a line or a row, a
# list kept in tests/Makefile or check.sh, a place changed, a line that
# breaks a rule of tests/placement, a citation of a missing file, a result
# cited by nothing), after the unbroken copy passed.
#   docs_consistency.sh --where   prints, per test, the two cells
#                                 tests/placement gives it (for a new row
#                                 of tests/README.md)
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"

# The READMEs whose citations count.
readmes() { (cd "$1" && ls -d README.md ./*/README* ./*/*/README* 2>/dev/null | sed 's,^\./,,' | grep -v '^bench/results/'); }

# squeeze WORDS: the words, one space between them.
squeeze() { tr -s ' \n' '  ' <<<"$1" | sed 's/^ //; s/ $//'; }

# placement ROOT AWK-ARGS...: tests/placement.awk on ROOT/tests/placement.
placement() {
	local root=$1

	shift
	awk "$@" -f "$root/tests/placement.awk" "$root/tests/placement"
}

# where ROOT: "name<TAB>make check cell<TAB>make check-full cell" per test
# of the five-column tables (all but the pkg tests), from tests/placement:
# guest tests, host checks of make check, of check-full only, mutants.
where() {
	local c

	c=$(placement "$1" -v cells=1) || { log "tests/placement cannot be read"; return 1; }
	{
		awk -F'\t' '$1 == "guest"' <<<"$c"
		awk -F'\t' '$1 == "host" && $3 == "host"' <<<"$c"
		awk -F'\t' '$1 == "host" && $3 != "host"' <<<"$c"
		awk -F'\t' '$1 == "mutant"' <<<"$c" | LC_ALL=C sort -t$'\t' -k2,2
	} | cut -f2-
}

# rows ROOT: "name<TAB>make check cell<TAB>make check-full cell" per row of
# the tables of ROOT/tests/README.md (| `name` | proves | needs | check | full |),
# notes in parentheses dropped from the cells.
rows() {
	awk -F'|' '/^\| `[^`]+` \|/ && NF == 7 {
		for (i = 2; i <= 6; i++) { gsub(/\([^)]*\)/, "", $i); gsub(/^ +| +$/, "", $i); gsub(/ +/, " ", $i) }
		gsub(/`/, "", $2); print $2 "\t" $5 "\t" $6 }' "$1/tests/README.md"
}
# pkg_rows ROOT: the names of the rows of the package-lifecycle table
# (| `name` | proves | needs | where |).
pkg_rows() {
	awk -F'|' '/^\| `[^`]+` \|/ && NF == 6 { gsub(/[` ]/, "", $2); print $2 }' "$1/tests/README.md"
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
placement_rules() {
	placement "$1" -v rules=1 >"$tmp/rules" 2>&1 || { while read -r l; do log "$l"; done <"$tmp/rules"; return 1; }
}
placement_has_every_script() {
	local names scripts missing gone

	names=$(placement "$1" -v cells=1 | cut -f2) || return 1
	# (run_tests.sh runs only what is executable: a file that is not, such
	# as one the host checks source, is no test)
	scripts=$(cd "$1/tests" && for f in ./*.sh host/*.sh mutants/*.sh; do [ -x "$f" ] && echo "${f#./}"; done |
		grep -vxE 'lib\.sh|run_tests\.sh')
	missing=$(grep -vxF -f <(echo "$names") <<<"$scripts")
	gone=$(grep -vxF -f <(echo "$scripts") <<<"$names")
	[ -z "$missing" ] || log "tests/placement has no line for: $(squeeze "$missing")"
	[ -z "$gone" ] || log "tests/placement has a line for what is no executable script under tests/: $(squeeze "$gone")"
	[ -z "$missing$gone" ]
}
lists_come_from_placement() {
	local t q bad=0 n f

	for t in "print-test-progs guest" "print-host-test-progs host check:host" \
		"print-host-full-test-progs host !check:host" "print-host-build-test-progs host +build" \
		"print-pkg-test-progs pkg"; do
		q=${t#* } t=${t%% *}
		[ "$(make -s -C "$1/tests" "$t")" = "$(placement "$1" -v q="$q")" ] ||
			{ log "tests/Makefile's $t is not tests/placement's '$q'"; bad=1; }
	done
	# A test in a list of check.sh's code (X=a.sh,b.sh, "tests:a.sh"), not
	# in a comment or a message.
	for n in $(placement "$1" -v cells=1 | cut -f2); do
		! grep -v '^[[:space:]]*#' "$1/tests/vm/check.sh" |
			grep -qE "(^|tests:|[=,\"'])${n//./\\.}([,\"'[:space:]]|\$)" ||
			{ log "tests/vm/check.sh lists $n in its code: where it runs belongs in tests/placement"; bad=1; }
	done
	return "$bad"
}
table_has_every_test() {
	local missing

	where "$1" >"$tmp/where" && rows "$1" >"$tmp/rows" || return 1
	missing=$(cut -f1 "$tmp/where" | grep -vxF -f <(cut -f1 "$tmp/rows"))
	missing="$missing $(placement "$1" -v q=pkg | tr ' ' '\n' | grep -vxF -f <(pkg_rows "$1"))"
	[ -z "$(squeeze "$missing")" ] || { log "tests/README.md has no row for: $(squeeze "$missing")"; return 1; }
}
table_has_only_tests() {
	local extra

	where "$1" >"$tmp/where" && rows "$1" >"$tmp/rows" || return 1
	extra=$(cut -f1 "$tmp/rows" | grep -vxF -f <(cut -f1 "$tmp/where"))
	extra="$extra $(pkg_rows "$1" | grep -vxF -f <(placement "$1" -v q=pkg | tr ' ' '\n'))"
	[ -z "$(squeeze "$extra")" ] || { log "tests/README.md has rows for what is no test of tests/placement (the pkg table: no pkg test): $(squeeze "$extra")"; return 1; }
}
table_says_where() {
	local bad

	where "$1" >"$tmp/where" && rows "$1" >"$tmp/rows" || return 1
	bad=$(grep -vxF -f "$tmp/where" "$tmp/rows" | cut -f1 | grep -xF -f <(cut -f1 "$tmp/where"))
	[ -z "$bad" ] || {
		for n in $bad; do
			log "$n: tests/README.md says '$(grep -P "^\Q$n\E\t" "$tmp/rows" | cut -f2- | sed 's/\t/ | /')'," \
				"tests/placement runs it in '$(grep -P "^\Q$n\E\t" "$tmp/where" | cut -f2- | sed 's/\t/ | /')'"
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

check "tests/placement follows the rules of its header" placement_rules "$TAILFIX_ROOT"
check "tests/placement has a line for every test script, and only for them" placement_has_every_script "$TAILFIX_ROOT"
check "tests/Makefile's lists and check.sh's runs come from tests/placement only" lists_come_from_placement "$TAILFIX_ROOT"
check "tests/README.md has a row for every test" table_has_every_test "$TAILFIX_ROOT"
check "every row of tests/README.md is a test" table_has_only_tests "$TAILFIX_ROOT"
check "each row's make check / make check-full cells are the places tests/placement gives" table_says_where "$TAILFIX_ROOT"
check "every bench/results path a README cites exists" citations_exist "$TAILFIX_ROOT"
check "every file under bench/results/ is cited by a README" results_all_cited "$TAILFIX_ROOT"

# A copy of what the checks read, to break.
copy() {
	rm -rf "$tmp/copy"
	mkdir -p "$tmp/copy/tests/vm" "$tmp/copy/tests/mutants"
	(cd "$TAILFIX_ROOT" && readmes . | tar -cf - -T - tests/README.md tests/Makefile tests/vm/check.sh \
		tests/placement tests/placement.awk tests/*.sh tests/host/*.sh tests/mutants/*.sh bench/results) |
		tar -C "$tmp/copy" -xf -
}
# must_fail CHECK WORDS: CHECK fails on the copy and its log says WORDS.
must_fail() {
	! "$1" "$tmp/copy" >"$tmp/log" 2>&1 && grep -qF -- "$2" "$tmp/log" ||
		{ sed 's/^/# got: /' "$tmp/log"; return 1; }
}
all_pass() {
	placement_rules "$1" && placement_has_every_script "$1" && lists_come_from_placement "$1" &&
		table_has_every_test "$1" && table_has_only_tests "$1" && table_says_where "$1" &&
		citations_exist "$1" && results_all_cited "$1"
}
# place NAME SED: SED on the line of test NAME in the copy's tests/placement.
place() {
	sed -i -E "\\#^${1//./\\.}[[:space:]]#$2" "$tmp/copy/tests/placement"
}

copy
check "the unbroken copy passes every check" all_pass "$tmp/copy"

copy
sed -i '/^| `tsq_probe_load\.sh` |/d' "$tmp/copy/tests/README.md"
check "broken: a test's row left out" must_fail table_has_every_test tsq_probe_load.sh

copy
sed -i '/^| `pkg_lifecycle\.sh` |/d' "$tmp/copy/tests/README.md"
check "broken: the package lifecycle's row left out" must_fail table_has_every_test pkg_lifecycle.sh

copy
sed -i '/^| `tsq_probe_counters\.sh` |/{p;s/tsq_probe_counters/tsq_probe_gone/}' "$tmp/copy/tests/README.md"
check "broken: a row for a test that does not exist" must_fail table_has_only_tests tsq_probe_gone.sh

copy
printf 'brand_new.sh 6.1 5.10,6.1,6.12,7.x,arm64 -\n' >>"$tmp/copy/tests/placement"
: >"$tmp/copy/tests/brand_new.sh"
: >"$tmp/copy/tests/mutants/brand_new_mutant.sh"
chmod +x "$tmp/copy/tests/brand_new.sh" "$tmp/copy/tests/mutants/brand_new_mutant.sh"
added_caught() {
	must_fail table_has_every_test brand_new.sh &&
		must_fail placement_has_every_script mutants/brand_new_mutant.sh
}
check "broken: a test added without its row, a mutant without its line" added_caught

copy
rm "$tmp/copy/tests/tsq_probe_params.sh"
check "broken: a line for a script that is gone" must_fail placement_has_every_script tsq_probe_params.sh

copy
echo 'TEST_PROGS += brand_new.sh' >>"$tmp/copy/tests/Makefile"
check "broken: a test added to tests/Makefile by hand" must_fail lists_come_from_placement print-test-progs

copy
echo 'NEWEST_TESTS=$NEWEST_TESTS,tsq_probe_neutral.sh' >>"$tmp/copy/tests/vm/check.sh"
check "broken: check.sh adds a test to a run by hand" must_fail lists_come_from_placement tsq_probe_neutral.sh

copy
place tsq_probe_fault.sh 's/,7\.x(:[0-9]+)?,/,/'
check "broken: tests/placement no longer runs a test where the table says" must_fail table_says_where tsq_probe_fault.sh

copy
place tsq_probe_counters.sh 's/ 6\.1,6\.12 / 6.12 /'
check "broken placement: a guest test not in make check's 6.1" must_fail placement_rules "tsq_probe_counters.sh: a guest test runs in 6.1 in the check column"

copy
place dctcp_fixed_alpha.sh 's/,arm64 +-$/ -/'
check "broken placement: a guest test left out of a check-full guest" must_fail placement_rules "dctcp_fixed_alpha.sh: a guest test runs in arm64 in the full column"

copy
place mutants/safety_fakes.sh 's/ 6\.1,6\.12 / 6.1,6.12,smp /'
check "broken placement: a mutant in a place check.sh has no run of mutants for" must_fail placement_rules "mutants/safety_fakes.sh: a mutant test cannot run in smp"

copy
place tsq_probe_params.sh 's/debug:[0-9]+/debug:1/'
check "broken placement: two tests with one number of a place" must_fail placement_rules "debug:1 in the full column is"

copy
place tsq_probe_neutral.sh 's/ 6\.1,6\.12 / 6.12,6.1 /'
check "broken placement: places out of order" must_fail placement_rules "tsq_probe_neutral.sh: the check column's places are not in the order"

copy
place host/lint.sh 's/ build$/ buid/'
check "broken placement: an unknown flag" must_fail placement_rules "host/lint.sh: flag buid is not for a host test"

copy
place ena_hw.sh 's/ -$//'
check "broken placement: a line of three fields" must_fail placement_rules "not NAME CHECK FULL FLAGS"

copy
printf '\nRaw: `bench/results/kernels/no-such-run.txt`.\n' >>"$tmp/copy/README.md"
check "broken: a README cites a result that does not exist" must_fail citations_exist no-such-run.txt

copy
printf '\nRaw: `results/6.1.0-57-cloud-amd64/tsq-cost-{ftrace,nothing}/`.\n' >>"$tmp/copy/bench/README.md"
check "broken: bench/README.md cites {a,b} of which one does not exist" must_fail citations_exist tsq-cost-nothing

copy
mkdir -p "$tmp/copy/bench/results/6.1.0-57-cloud-amd64/orphan-run"
: >"$tmp/copy/bench/results/6.1.0-57-cloud-amd64/orphan-run/summary.txt"
check "broken: a result directory cited by nothing" must_fail results_all_cited orphan-run

ksft_finish
