#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run test programs the kselftest way and print KTAP:
#	run_tests.sh prog...
# Each program runs with the timeout from ./settings; its output is indented
# as "# " diagnostics.  After each program the kernel log is checked: a WARN,
# BUG, oops, lockdep, KASAN or RCU-stall line turns the result into a failure.
# The last line is "N passed, N failed, N skipped".

cd "$(dirname "$0")" || exit 1
. ./lib.sh
trap - EXIT

timeout_s=$(sed -n 's/^timeout=//p' settings 2>/dev/null)
timeout_s=${timeout_s:-600}
can_dmesg=0
dmesg >/dev/null 2>&1 && can_dmesg=1

pass=0 failn=0 skipn=0 n=0
echo "TAP version 13"
echo "1..$#"
for prog in "$@"; do
	n=$((n + 1))
	name="selftests: tailfix: $prog"
	[ "$can_dmesg" -eq 1 ] && dmesg_mark
	if [ ! -x "$prog" ]; then
		echo "not ok $n $name # not executable"
		failn=$((failn + 1))
		continue
	fi
	timeout --kill-after=10 "$timeout_s" "./$prog" 2>&1 | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	if [ "$can_dmesg" -eq 1 ] && [ "$rc" -ne 1 ] && ! dmesg_clean; then
		echo "# kernel log has a bad line after $prog"
		rc=1
	fi
	case $rc in
	0)   echo "ok $n $name"; pass=$((pass + 1)) ;;
	4)   echo "ok $n $name # SKIP"; skipn=$((skipn + 1)) ;;
	124) echo "not ok $n $name # TIMEOUT ${timeout_s}s"; failn=$((failn + 1)) ;;
	*)   echo "not ok $n $name # exit=$rc"; failn=$((failn + 1)) ;;
	esac
done
echo "$pass passed, $failn failed, $skipn skipped"
[ "$failn" -eq 0 ]
