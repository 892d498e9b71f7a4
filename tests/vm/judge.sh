#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# judge.sh [options] RUN KVER ARCH DIR
#	The verdict on one guest run, from the files guest-init.sh wrote to
#	/results (DIR here, unpacked by run.sh from the results disk), not from
#	the console, where kernel messages interleave with the tests' output.
#	A run that did not happen, or happened only in part, is a failure:
#	  - ktap.txt (run=check or tests:...) must be whole KTAP from
#	    run_tests.sh: one plan "1..N" with N the number of tests asked for
#	    (tests/Makefile TEST_PROGS for run=check, the list for tests:...),
#	    one result line per test, in order, under its own name, and the
#	    summary "P passed, F failed, S skipped" as its last line, agreeing
#	    with the result lines;
#	  - a skip (of a test or of a subtest) not on the allowlist is a failure;
#	  - exit (TAILFIX-EXIT) must exist, and be 0 unless tests failed;
#	  - dkms-failed (the at-boot DKMS install failed), dmesg-bad.txt (the
#	    final kernel-log scan), taint-new (taint flags the run added),
#	    kmemleak-ours.txt (the package's leaks) must be absent or empty;
#	    uname must be KVER;
#	  - the console (--console) must have no panic or RCU stall, and QEMU
#	    must not have been killed by the timeout (--qemu-rc 124 or 137).
#	demo and bench runs have no KTAP: their exit status is the verdict.
# Options: --console FILE, --qemu-rc N, --timeout S, --expect "a.sh b.sh"
# (default from RUN), --allow FILE (default tests/vm/skip-allowlist).
# Prints "not ok - ..." for each problem; last line
# "RESULT KVER ARCH pass fail skip"; exits 0 when fail is 0.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
console= qrc=0 tmo=? expect= expect_set=0 allow=$here/skip-allowlist
while [ $# -gt 4 ]; do
	case $1 in
	--console) console=$2 ;;
	--qemu-rc) qrc=$2 ;;
	--timeout) tmo=$2 ;;
	--expect) expect=$2 expect_set=1 ;;
	--allow) allow=$2 ;;
	*) echo "judge.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
[ $# -eq 4 ] || { echo "usage: judge.sh [options] RUN KVER ARCH DIR" >&2; exit 2; }
run=$1 kver=$2 arch=$3 dir=$4

pass=0 fail=0 skip=0
bad() { echo "not ok - guest $kver ($arch): $*"; fail=$((fail + 1)); }

# The tests the run was asked for.
if [ "$expect_set" -eq 0 ]; then
	case $run in
	check) expect=$(make -s -C "$here/.." print-test-progs) ;;
	tests:*) expect=$(echo "${run#tests:}" | tr ',' ' ') ;;
	esac
fi

# ktap_judge EXPECTED ALLOWLIST KTAP: the KTAP checks above; prints
# problems as "not ok - ..." and last "COUNTS pass fail skip".
ktap_judge() {
	awk -v expected="$1" -v allowfile="$2" '
	function allowed(t, r,   i) {
		for (i = 1; i <= nallow; i++)
			if (atest[i] == t && r ~ areason[i])
				return 1
		return 0
	}
	function problem(msg) { print "not ok - " msg; extra++ }
	BEGIN {
		nexp = split(expected, want, " ")
		while ((getline l < allowfile) > 0) {
			if (l ~ /^[ \t]*(#|$)/)
				continue
			t = l; sub(/[ \t].*/, "", t)
			r = l; sub(/^[^ \t]+[ \t]+/, "", r)
			nallow++; atest[nallow] = t; areason[nallow] = r
		}
	}
	{ sub(/\r$/, "") }
	/^[ \t]*$/ { next }
	{ last = $0 }
	/^TAP version [0-9]+$/ { next }
	/^1\.\.[0-9]+$/ { nplan++; plan = substr($0, 4) + 0; next }
	/^# (not )?ok [0-9]+ .* # SKIP/ {
		r = $0; sub(/.* # SKIP */, "", r)
		d = $0; sub(/^# (not )?ok [0-9]+ /, "", d); sub(/ # SKIP.*/, "", d)
		nsub++; subdesc[nsub] = d; subreason[nsub] = r
		next
	}
	/^#/ { next }
	/^(not )?ok [0-9]+ / {
		ok = $1 == "ok"
		num = ok ? $2 : $3
		name = $0
		sub(/^(not )?ok [0-9]+ (selftests: tailfix: )?/, "", name)
		dir = ""
		if (index(name, " # ")) {
			dir = substr(name, index(name, " # ") + 3)
			name = substr(name, 1, index(name, " # ") - 1)
		}
		nres++
		if (num != nres)
			problem("result line " nres " is numbered " num)
		if (nres <= nexp && name != want[nres])
			problem("result " nres " is " name ", expected " want[nres])
		if (ok && dir ~ /^SKIP/) {
			rawskip++
			r = dir; sub(/^SKIP */, "", r)
			if (allowed(name, r)) {
				skips++
			} else {
				print "not ok - " name " skipped (" r "): not on the skip allowlist"
				fails++
			}
		} else if (ok) {
			rawpass++
			bad = 0
			for (i = 1; i <= nsub; i++)
				if (!allowed(name, subreason[i])) {
					print "not ok - " name ": subtest \"" subdesc[i] "\" skipped (" subreason[i] "): not on the skip allowlist"
					bad = 1
				}
			if (bad) fails++; else passes++
		} else {
			rawfail++
			fails++
		}
		nsub = 0
		next
	}
	/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ {
		nsum++; sp = $1; sf = $3; ss = $5
		next
	}
	{ ngarbled++; if (ngarbled == 1) garbled = $0 }
	END {
		if (NR == 0) {
			problem("no KTAP output at all")
		} else {
			if (nplan != 1)
				problem(nplan + 0 " plan lines (want one 1..N)")
			else if (plan != nexp)
				problem("plan 1.." plan " but " nexp " tests were asked for")
			if (nres != nexp)
				problem(nres + 0 " result lines for " nexp " tests")
			if (ngarbled)
				problem(ngarbled " unparsable lines, first: " garbled)
			if (nsum != 1 || last !~ /^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/)
				problem("summary line missing or garbled (last line: " last ")")
			else if (sp != rawpass + 0 || sf != rawfail + 0 || ss != rawskip + 0)
				problem("summary \"" last "\" disagrees with the result lines (" rawpass + 0 "/" rawfail + 0 "/" rawskip + 0 ")")
		}
		printf "COUNTS %d %d %d\n", passes, fails + extra, skips
	}' "$3"
}

case $run in
check|tests:*)
	if [ ! -f "$dir/ktap.txt" ]; then
		bad "no results file ktap.txt"
	else
		out=$(ktap_judge "$expect" "$allow" "$dir/ktap.txt")
		echo "$out" | grep -v '^COUNTS ' | sed "s/^not ok - /not ok - guest $kver ($arch): /"
		set -- $(echo "$out" | sed -n 's/^COUNTS //p')
		pass=$1 fail=$((fail + $2)) skip=$3
	fi
	;;
esac

code=$(cat "$dir/exit" 2>/dev/null)
if ! [[ $code =~ ^[0-9]+$ ]]; then
	bad "the run did not finish (no exit status${code:+, got '$code'})"
	[ -z "$console" ] || grep -E 'Kernel panic|BUG:|Oops|WARNING:|Call [Tt]race' "$console" | head -20 | sed 's/^/# /'
elif [ "${run%%:*}" != check ] && [ "${run%%:*}" != tests ]; then
	# demo/bench: no KTAP, the exit status is the verdict.
	if [ "$code" -eq 0 ]; then pass=$((pass + 1)); else bad "$run exited with $code"; fi
elif [ "$code" -ne 0 ] && [ "$fail" -eq 0 ]; then
	bad "TAILFIX-EXIT $code with no failed test"
fi
if [ -f "$dir/dkms-failed" ]; then
	bad "DKMS install at boot failed"
	sed 's/^/# /' "$dir/dkms-failed" | tail -20
fi
if [ -s "$dir/dmesg-bad.txt" ]; then
	bad "kernel log has WARN/BUG/oops/lockdep/RCU lines"
	sed 's/^/# /' "$dir/dmesg-bad.txt" | head -20
fi
if [ -s "$dir/kmemleak-ours.txt" ]; then
	bad "kmemleak: $(grep -c '^unreferenced object' "$dir/kmemleak-ours.txt") objects the package's modules leaked"
	sed 's/^/# /' "$dir/kmemleak-ours.txt" | head -20
fi
if [ -s "$dir/taint-new" ]; then
	bad "kernel tainted during the run: $(cat "$dir/taint-new")"
fi
if [ -f "$dir/uname" ] && [ "$(cat "$dir/uname")" != "$kver" ]; then
	bad "booted $(cat "$dir/uname"), not $kver"
fi
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	bad "did not power off within ${tmo}s"
fi
if [ -n "$console" ] && grep -qE 'Kernel panic|rcu: INFO|self-detected stall' "$console"; then
	bad "console shows a panic or an RCU stall"
	grep -E 'Kernel panic|rcu: INFO|self-detected stall' "$console" | head -5 | sed 's/^/# /'
fi
echo "RESULT $kver $arch $pass $fail $skip"
[ "$fail" -eq 0 ]
