#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run test programs the kselftest way and print KTAP:
#	run_tests.sh prog...
# Each program runs with the timeout from ./settings; its output is indented
# as "# " diagnostics.  After each program:
#   - the kernel log since the program started (read by /dev/kmsg sequence
#     number, so a wrapped ring buffer is reported, not skipped) is checked:
#     a WARN, BUG, oops, lockdep, KASAN or RCU-stall line fails the program;
#   - /proc/sys/kernel/tainted is compared with its value before: a new
#     flag other than O and E (our out-of-tree, unsigned modules) and those
#     the program declares ("# taint-expected: N ...") fails it;
#   - a shell error in its output ("line N: x: command not found",
#     "unbound variable", "syntax error") fails it;
#   - our modules (loaded or not, their parameters) and the TCP sysctls a
#     test may touch (host_state) must be as they were before: a program
#     that leaves them changed fails, whatever it printed.
# A skipped program's line carries its reason: "ok N name # SKIP reason".
# A program that printed "not ok" and then skipped failed: its skip would
# hide a check that failed.  A run in which no program passed showed
# nothing: it says so in one line ("# no test passed: ...") and exits 1.
# The last line is "N passed, N failed, N skipped".

cd "$(dirname "$0")" || exit 1
. ./lib.sh
trap - EXIT

timeout_s=$(sed -n 's/^timeout=//p' settings 2>/dev/null)
timeout_s=${TAILFIX_TEST_TIMEOUT:-${timeout_s:-600}}
can_dmesg=0
[ -n "$(_kmsg_dump | head -1)" ] && can_dmesg=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT

pass=0 failn=0 skipn=0 n=0
echo "TAP version 13"
echo "1..$#"
[ "$can_dmesg" -eq 1 ] || echo "# /dev/kmsg not readable: kernel log not checked"
for prog in "$@"; do
	n=$((n + 1))
	name="selftests: tailfix: $prog"
	[ "$can_dmesg" -eq 1 ] && dmesg_mark
	taint0=$(taint_read)
	state0=$(host_state)
	if [ ! -x "$prog" ]; then
		echo "not ok $n $name # not executable"
		failn=$((failn + 1))
		continue
	fi
	t0=$SECONDS
	timeout --kill-after=10 "$timeout_s" "./$prog" 2>&1 | tee "$out" | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	echo "# $prog took $((SECONDS - t0)) s"
	if [ "$can_dmesg" -eq 1 ] && ! dmesg_clean; then
		echo "# kernel log has a bad line (or a gap) after $prog"
		[ "$rc" -eq 124 ] || rc=1
	fi
	if ! taints=$(TAINT_OK="$TAINT_OK$(taint_expected "$prog")" taint_new "$taint0" "$(taint_read)"); then
		echo "# kernel taint after $prog: new flags $taints (was $taint0, now $(taint_read))"
		[ "$rc" -eq 124 ] || rc=1
	fi
	# A shell error (a helper called before it is defined, an unset
	# variable) can make a check pass for the wrong reason: it fails.
	if grep -qE ': line [0-9]+: (.*: (command not found|unbound variable)|syntax error)' "$out"; then
		echo "# shell error in $prog's output: a check may have passed for the wrong reason"
		[ "$rc" -eq 124 ] || rc=1
	fi
	changed=$(state_diff "$state0" "$(host_state)")
	if [ -n "$changed" ]; then
		echo "# $prog left the host changed:"
		printf '%s\n' "$changed" | sed 's/^/#   /'
		[ "$rc" -eq 124 ] || rc=1
	fi
	if [ "$rc" -eq 4 ] && grep -qE '^not ok [0-9]+ ' "$out"; then
		echo "# $prog printed 'not ok' and then skipped (exit 4): a skip does not hide a failed check"
		rc=1
	fi
	case $rc in
	0)   echo "ok $n $name"; pass=$((pass + 1)) ;;
	4)   reason=$(sed -n 's/^# SKIP //p' "$out" | tail -1)
	     echo "ok $n $name # SKIP ${reason:-no reason given}"; skipn=$((skipn + 1)) ;;
	124) echo "not ok $n $name # TIMEOUT ${timeout_s}s"; failn=$((failn + 1)) ;;
	*)   echo "not ok $n $name # exit=$rc"; failn=$((failn + 1)) ;;
	esac
done
# (a diagnostic line: the summary stays the last line, which CI and
# tests/vm/judge.sh parse)
if [ "$pass" -eq 0 ]; then
	hint=
	[ "$failn" -gt 0 ] || hint=" (root? TAILFIX_DISRUPTIVE=1? the modules installed? see the skip reasons)"
	echo "# no test passed: $failn failed, $skipn skipped of $#: this run shows nothing works here$hint"
fi
echo "$pass passed, $failn failed, $skipn skipped"
[ "$failn" -eq 0 ] && [ "$pass" -gt 0 ]
