#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The harness judges runs that did not happen, or happened in part, as
# failures.  Fed fixtures, without booting anything:
#   - tests/vm/judge.sh (run.sh's verdict on a guest) with a good run, which
#     must pass, and with each kind of bad run, which must fail: missing or
#     garbled summary, non-zero exit, wrong plan, DKMS failed, a skip off
#     the allowlist, ...;
#   - the kernel-log detector of lib.sh with /dev/kmsg records (arm64's
#     "Call trace:", a WARN, a wrapped ring buffer);
#   - the taint comparator with before/after values;
#   - run_tests.sh itself on small fake tests, with a fake /dev/kmsg and a
#     fake taint file that the tests write to.
. "$(dirname "$0")/../lib.sh"

JUDGE=$TESTS_DIR/vm/judge.sh
TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

cat >"$TMP/allow" <<'EOF'
# fixture allowlist
ena_hw.sh	^no ENA device$
EOF

# fixture NAME: a results directory of a good tests:a.sh,b.sh,ena_hw.sh
# run, for the case to spoil.
fixture() {
	local d=$TMP/$1
	mkdir -p "$d"
	cat >"$d/ktap.txt" <<'EOF'
TAP version 13
1..3
# ok 1 first property
# ok 2 second property
# 1..2
ok 1 selftests: tailfix: a.sh
# ok 1 only property
# 1..1
ok 2 selftests: tailfix: b.sh
# # SKIP no ENA device
ok 3 selftests: tailfix: ena_hw.sh # SKIP no ENA device
2 passed, 0 failed, 1 skipped
EOF
	echo 0 >"$d/exit"
	echo 6.1.0-99-cloud-amd64 >"$d/uname"
	echo "$d"
}

# judge DIR [options]: judge.sh's verdict on DIR as the run
# tests:a.sh,b.sh,ena_hw.sh of 6.1.0-99-cloud-amd64.
judge() {
	local d=$1
	shift
	"$JUDGE" --allow "$TMP/allow" "$@" tests:a.sh,b.sh,ena_hw.sh 6.1.0-99-cloud-amd64 amd64 "$d" \
		>"$d.out" 2>&1
	local rc=$?
	sed 's/^/# /' "$d.out" | grep -v '^# RESULT' | head -5
	return $rc
}
judge_passes() { judge "$@" && tail -1 "$1.out" | grep -qx 'RESULT 6.1.0-99-cloud-amd64 amd64 2 0 1'; }
judge_fails() { ! judge "$@" && tail -1 "$1.out" | grep -qE '^RESULT \S+ amd64 [0-9]+ [1-9][0-9]* [0-9]+$'; }

d=$(fixture good)
check "judge: a good run passes (2 passed, 1 allowed skip)" judge_passes "$d"

d=$(fixture nosummary)
sed -i '$d' "$d/ktap.txt"
check "judge: a missing summary line fails" judge_fails "$d"

d=$(fixture garbled)
sed -i '$s/.*/2 passed, 0 faile/' "$d/ktap.txt"
check "judge: a garbled summary line fails" judge_fails "$d"

d=$(fixture cut)
head -n 7 "$TMP/good/ktap.txt" >"$d/ktap.txt"
check "judge: KTAP cut off mid-run (guest died) fails" judge_fails "$d"

d=$(fixture lying)
sed -i '$s/.*/3 passed, 0 failed, 0 skipped/' "$d/ktap.txt"
check "judge: a summary that disagrees with the result lines fails" judge_fails "$d"

d=$(fixture interleaved)
sed -i '6s/^/[   12.345678] virtio_net virtio0 eth0: renamed\n/' "$d/ktap.txt"
check "judge: a foreign (kernel) line inside the KTAP fails" judge_fails "$d"

d=$(fixture exit1)
echo 1 >"$d/exit"
check "judge: TAILFIX-EXIT 1 with every test ok fails" judge_fails "$d"

d=$(fixture noexit)
rm "$d/exit"
check "judge: no exit status (run did not finish) fails" judge_fails "$d"

d=$(fixture noktap)
rm "$d/ktap.txt"
check "judge: no results file fails" judge_fails "$d"

d=$(fixture emptyktap)
: >"$d/ktap.txt"
check "judge: an empty results file fails" judge_fails "$d"

d=$(fixture plan)
sed -i 's/^1\.\.3$/1..2/' "$d/ktap.txt"
check "judge: a plan that is not the tests asked for fails" judge_fails "$d"

d=$(fixture fewer)
check "judge: a run of fewer tests than asked for fails" \
	judge_fails "$d" --expect "a.sh b.sh ena_hw.sh c.sh"

d=$(fixture renamed)
sed -i 's/tailfix: b\.sh/tailfix: c.sh/' "$d/ktap.txt"
check "judge: a result under another test's name fails" judge_fails "$d"

d=$(fixture dkms)
echo "Error! Bad return status for module build on kernel" >"$d/dkms-failed"
check "judge: a failed DKMS install fails" judge_fails "$d"

d=$(fixture skip)
sed -i 's/^ok 1 selftests: tailfix: a\.sh$/ok 1 selftests: tailfix: a.sh # SKIP tsq_probe is not installed for 6.1.0-99-cloud-amd64/' "$d/ktap.txt"
sed -i '$s/.*/1 passed, 0 failed, 2 skipped/' "$d/ktap.txt"
check "judge: our module not installed (skip off the allowlist) fails" judge_fails "$d"

d=$(fixture skipother)
sed -i 's/^ok 3 \(.*\) # SKIP no ENA device$/ok 3 \1 # SKIP no traffic source/' "$d/ktap.txt"
check "judge: an allowed test skipping for another reason fails" judge_fails "$d"

d=$(fixture subskip)
sed -i 's/^# ok 2 second property$/# ok 2 second property # SKIP module tcp_dctcp not available/' "$d/ktap.txt"
check "judge: a subtest skip off the allowlist fails" judge_fails "$d"

d=$(fixture dmesg)
echo "WARNING: CPU: 0 PID: 1 at net/ipv4/tcp.c:1 x" >"$d/dmesg-bad.txt"
check "judge: a bad kernel-log line fails" judge_fails "$d"

d=$(fixture taint)
echo W >"$d/taint-new"
check "judge: a new taint flag fails" judge_fails "$d"

d=$(fixture kmemleak)
printf 'unreferenced object 0xffff888004a1c000 (size 64):\n  backtrace (crc 0):\n    [<ffffffffc0a01234>] 0xffffffffc0a01234\n' >"$d/kmemleak-ours.txt"
check "judge: a leak of the package's (kmemleak) fails" judge_fails "$d"

d=$(fixture kernel)
echo 6.12.0-1-cloud-amd64 >"$d/uname"
check "judge: the wrong kernel booted fails" judge_fails "$d"

d=$(fixture timeout)
check "judge: a guest killed by the timeout fails" judge_fails "$d" --qemu-rc 124

d=$(fixture panic)
echo "[ 99.1] Kernel panic - not syncing: Fatal exception" >"$TMP/console"
check "judge: a panic on the console fails" judge_fails "$d" --console "$TMP/console"

# make check's host checks run in two lanes (check.sh): ktap_merge makes
# one KTAP of them for the judge, which must pass two whole lanes and fail
# a lane cut off or short of its plan.
. "$TESTS_DIR/vm/vm-lib.sh"
lanes() {	# lanes NAME: the fixture's KTAP split in lanes a.sh b.sh and ena_hw.sh
	local d
	d=$(fixture "$1")
	{
		printf '%s\n' 'TAP version 13' '1..2'
		sed -n '3,9p' "$d/ktap.txt"	# a.sh and b.sh with their diagnostics
		echo '2 passed, 0 failed, 0 skipped'
	} >"$d.a"
	{
		printf '%s\n' 'TAP version 13' '1..1'
		sed -n '10,11p' "$d/ktap.txt"	# ena_hw.sh
		echo '0 passed, 0 failed, 1 skipped'
	} >"$d.b"
	echo "$d"
}
d=$(lanes merge)
ktap_merge "$d.a" "$d.b" >"$d/ktap.txt"
check "ktap_merge: two whole lanes make a KTAP the judge passes" judge_passes "$d"
d=$(lanes merge-cut)
ktap_merge "$d.a" <(head -n 4 "$d.b") >"$d/ktap.txt"
check "ktap_merge: a lane without its summary (cut off) fails the judge" judge_fails "$d"
d=$(lanes merge-short)
ktap_merge <(sed '/^ok 2 /d; s/^2 passed/1 passed/' "$d.a") "$d.b" >"$d/ktap.txt"
check "ktap_merge: a lane short of its plan fails the judge" judge_fails "$d"

# run=check: the plan must be tests/Makefile's TEST_PROGS.
progs=$(make -s -C "$TESTS_DIR" print-test-progs)
mkcheck() {	# mkcheck DIR N: a good run=check KTAP of the first N programs
	local d=$TMP/$1 i=0 p
	mkdir -p "$d"
	{
		echo "TAP version 13"
		echo "1..$2"
		for p in $progs; do
			i=$((i + 1))
			[ "$i" -le "$2" ] && echo "ok $i selftests: tailfix: $p"
		done
		echo "$2 passed, 0 failed, 0 skipped"
	} >"$d/ktap.txt"
	echo 0 >"$d/exit"
	echo "$d"
}
n=$(echo "$progs" | wc -w)
all=$(mkcheck checkall "$n")
short=$(mkcheck checkshort $((n - 1)))
check "judge: run=check with every TEST_PROGS passes" eval '"$JUDGE" check k amd64 "$all" >/dev/null'
check "judge: run=check one test short of TEST_PROGS fails" \
	eval '! "$JUDGE" check k amd64 "$short" >/dev/null'
allowed_tests() { grep -vE '^[[:space:]]*(#|$)' "$1" | awk '{ print $1 }' | sort -u | tr '\n' ' '; }
check "judge: the real allowlist allows ena_hw.sh, dctcp_fixed_plb.sh, dctcp_fixed_ece_cwnd.sh, dctcp_fixed_accecn.sh, ena_amzn_load.sh, dkms_installed.sh, tsq_probe_load.sh and mutants/dctcp_mutants.sh only" \
	test "$(allowed_tests "$TESTS_DIR/vm/skip-allowlist")" = "dctcp_fixed_accecn.sh dctcp_fixed_ece_cwnd.sh dctcp_fixed_plb.sh dkms_installed.sh ena_amzn_load.sh ena_hw.sh mutants/dctcp_mutants.sh tsq_probe_load.sh "

# allow_re TEST: the reasons allowed for TEST, one regex per line (grep -E
# takes each line as an alternative).
allow_re() { awk -v t="$1" '$1 == t { sub(/^[^[:space:]]+[[:space:]]+/, ""); print }' "$TESTS_DIR/vm/skip-allowlist"; }
ecn_re=$(allow_re dctcp_fixed_accecn.sh)
check "judge: the AccECN skip is allowed on 6.1 and never on a 7.x kernel" eval \
	'grep -qE "$ecn_re" <<<"net.ipv4.tcp_ecn cannot be set to 3 in kernel 6.1.0-57-cloud-amd64: no Accurate ECN" &&
	! grep -qE "$ecn_re" <<<"net.ipv4.tcp_ecn cannot be set to 3 in kernel 7.3.4+deb13-cloud-amd64: no Accurate ECN"'
mut_re=$(allow_re mutants/dctcp_mutants.sh)
check "judge: the dctcp mutant skip is mutant 6's, where in-tree dctcp already sends 2, only" eval \
	'grep -qE "$mut_re" <<<"in-tree dctcp'"'"'s first flight after ECE is already 2 segments on this kernel: the floor never fires, mutant 6 is the real module'"'"'s behaviour" &&
	 ! grep -qE "$mut_re" <<<"no DKMS source under /usr/src" &&
	 ! grep -qE "$mut_re" <<<"no kernel headers for 6.1.0-57-cloud-amd64"'
amzn_re=$(allow_re ena_amzn_load.sh)
check "judge: the amzn-drivers skip is allowed on arm64 and 7.x kernels only" eval \
	'grep -qE "$amzn_re" <<<"no amzn-drivers build staged for 6.1.0-57-cloud-arm64" &&
	 grep -qE "$amzn_re" <<<"no amzn-drivers build staged for 7.3.4+deb13-cloud-amd64" &&
	 ! grep -qE "$amzn_re" <<<"no amzn-drivers build staged for 6.1.0-57-cloud-amd64" &&
	 ! grep -qE "$amzn_re" <<<"no amzn-drivers build staged for 6.12.117+deb12-cloud-amd64"'

dkms_re=$(allow_re dkms_installed.sh)
check "judge: the unsigned-modules skip is allowed for dkms 2.x only" eval \
	'grep -qE "$dkms_re" <<<"no DKMS signing certificate /var/lib/dkms/mok.pub: dkms 2.8.4 does not sign modules" &&
	 ! grep -qE "$dkms_re" <<<"no DKMS signing certificate /var/lib/dkms/mok.pub: dkms 3.0.10 does not sign modules"'

ece_re=$(allow_re dctcp_fixed_ece_cwnd.sh)
check "judge: the ECE control skip is allowed on 5.x kernels only" eval \
	'grep -qE "$ece_re" <<<"in-tree dctcp keeps cwnd at 1 on ECE at a window of 1 on kernel 5.10.0-32-cloud-amd64: no raise to control against" &&
	 ! grep -qE "$ece_re" <<<"in-tree dctcp keeps cwnd at 1 on ECE at a window of 1 on kernel 6.1.0-57-cloud-amd64: no raise to control against"'

plb_re=$(allow_re dctcp_fixed_plb.sh)
check "judge: the PLB skip is allowed on 6.1 and 5.10 only, not on 6.12 or 7.3" eval \
	'grep -qE "$plb_re" <<<"PLB is not in kernel 6.1 (added in 6.2)" &&
	 grep -qE "$plb_re" <<<"PLB is not in kernel 5.10 (added in 6.2)" &&
	 ! grep -qE "$plb_re" <<<"PLB is not in kernel 6.12 (added in 6.2)" &&
	 ! grep -qE "$plb_re" <<<"PLB is not in kernel 7.3 (added in 6.2)"' 

btf_re=$(allow_re tsq_probe_load.sh)
check "judge: the no-BTF skip is allowed on the debug kernel only" eval \
	'grep -qE "$btf_re" <<<"no /sys/kernel/btf/vmlinux on 6.12.118-tailfix-debug" &&
	 ! grep -qE "$btf_re" <<<"no /sys/kernel/btf/vmlinux on 6.12.118+deb12-cloud-amd64" &&
	 ! grep -qE "$btf_re" <<<"no /sys/kernel/btf/vmlinux"'

# ---- the kernel-log detector ----
kmsg() {	# kmsg FIRST_SEQ line...: /dev/kmsg records from FIRST_SEQ on
	local s=$1 l
	shift
	for l in "$@"; do
		printf '4,%d,%d,-;%s\n' "$s" "$((s * 1000))" "$l"
		s=$((s + 1))
	done
}
flags() { kmsg "$@" | kmsg_scan 9 | dmesg_bad_lines | grep -q .; }
check "dmesg: arm64 'Call trace:' is flagged" flags 10 "ok" "Call trace:"
check "dmesg: x86 'Call Trace:' is flagged" flags 10 "Call Trace:"
check "dmesg: a WARN is flagged" flags 10 "WARNING: CPU: 1 PID: 7 at kernel/x.c:2 f+0x1/0x2"
check "dmesg: an RCU stall is flagged" flags 10 "rcu: INFO: rcu_preempt self-detected stall on CPU"
check "dmesg: a KFENCE report is flagged" flags 10 "BUG: KFENCE: use-after-free read in f+0x1/0x2"
check "dmesg: KFENCE's boot line is not flagged" eval '! flags 10 "kfence: initialized - using 2097152 bytes for 255 objects"'
check "dmesg: ordinary lines are not flagged" eval '! flags 10 "tsq_probe: loaded" "eth0: link up"'
check "dmesg: bad lines before the mark are not flagged" \
	eval '! { kmsg 5 "WARNING: old" "x" "y" "z" "w" "ok" | kmsg_scan 9 | dmesg_bad_lines | grep -q .; }'
check "dmesg: a wrapped ring buffer (first record after mark+1) is a gap" \
	eval 'kmsg 14 "ok" | kmsg_scan 9 | dmesg_bad_lines | grep -q "^GAP: kernel log records 10..13 lost"'
check "dmesg: records missing in the middle are a gap" \
	eval '{ kmsg 10 a; kmsg 12 b; } | kmsg_scan 9 | grep -q "^GAP"'
check "dmesg: continuation (dictionary) lines are skipped" \
	eval '! { kmsg 10 a; echo " SUBSYSTEM=WARNING: x"; } | kmsg_scan 9 | dmesg_bad_lines | grep -q .'

# ---- the taint comparator ----
OE=$(((1 << 12) | (1 << 13)))
taint_is() {	# taint_is BEFORE AFTER LETTERS: taint_new fails naming LETTERS
	local out
	! out=$(taint_new "$1" "$2") && [ "$out" = "$3" ]
}
check "taint: W (bit 9) appearing fails" taint_is 0 $((1 << 9)) W
check "taint: D (bit 7) appearing fails" taint_is $OE $((OE | 1 << 7)) D
check "taint: L and K (bits 14, 15) appearing fail" taint_is 0 $((3 << 14)) "L K"
check "taint: O and E (our modules) are expected" taint_new 0 $OE
check "taint: a flag set before the test is not new" taint_new $((1 << 9)) $((1 << 9 | OE))

# ---- run_tests.sh on fake tests, fake kernel log and taint ----
fake=$TMP/fake
mkdir -p "$fake"
export TAILFIX_KMSG=$fake/kmsg TAILFIX_TAINT_FILE=$fake/tainted
kmsg 1 "booted" >"$TAILFIX_KMSG"
echo 0 >"$TAILFIX_TAINT_FILE"
mkt() {	# mkt NAME BODY: a fake test program
	printf '#!/bin/bash\n. %q/lib.sh\n%s\n' "$TESTS_DIR" "$2" >"$fake/$1"
	chmod +x "$fake/$1"
}
mkt pass.sh 'check "fine" true; ksft_finish'
mkt skip.sh 'skip "reason for the fixture"'
mkt warn.sh "printf '4,2,0,-;WARNING: CPU: 0 PID: 1 at x\n' >>$TAILFIX_KMSG; exit 0"
mkt wrap.sh "printf '4,9,0,-;ok\n' >>$TAILFIX_KMSG; exit 0"
mkt taint.sh "echo 512 >$TAILFIX_TAINT_FILE; exit 0"
mkt ourtaint.sh "echo $((512 | OE)) >$TAILFIX_TAINT_FILE; exit 0"
rel=$(realpath --relative-to="$TESTS_DIR" "$fake")
(cd "$TESTS_DIR" && ./run_tests.sh "$rel/pass.sh" "$rel/skip.sh" "$rel/warn.sh" "$rel/wrap.sh" \
	"$rel/taint.sh" "$rel/ourtaint.sh") >"$fake/ktap.txt" 2>&1
sed 's/^/# /' "$fake/ktap.txt" | grep -v '^# # '
line() { grep -qx "$1" "$fake/ktap.txt"; }
check "run_tests: a passing test passes, its subtests have a plan" \
	eval 'line "ok 1 selftests: tailfix: $rel/pass.sh" && line "# 1..1"'
check "run_tests: a skip carries its reason" \
	line "ok 2 selftests: tailfix: $rel/skip.sh # SKIP reason for the fixture"
check "run_tests: a WARN in the kernel log fails the test" \
	line "not ok 3 selftests: tailfix: $rel/warn.sh # exit=1"
check "run_tests: a gap in the kernel log fails the test" \
	line "not ok 4 selftests: tailfix: $rel/wrap.sh # exit=1"
check "run_tests: a new W taint fails the test" \
	line "not ok 5 selftests: tailfix: $rel/taint.sh # exit=1"
check "run_tests: O and E added to an old W pass" \
	line "ok 6 selftests: tailfix: $rel/ourtaint.sh"
check "run_tests: summary line" line "2 passed, 3 failed, 1 skipped"
# ... and judge.sh reads it as KTAP, the fake skip off its allowlist.
echo 1 >"$fake/exit"
check "judge: run_tests.sh's own output is parsed, its failures counted" \
	eval '! "$JUDGE" --allow "$TMP/allow" --expect "$rel/pass.sh $rel/skip.sh $rel/warn.sh $rel/wrap.sh $rel/taint.sh $rel/ourtaint.sh" tests:x k amd64 "$fake" >"$fake/j" &&
		tail -1 "$fake/j" | grep -qx "RESULT k amd64 2 4 0"'

# A flag a program declares it sets on purpose (tsq_probe's fault injection
# taints N) passes that program; the same flag undeclared fails.  (A kernel
# with TAINT_TEST, whatever this host runs: see tsq_fault_taint.)
export TAILFIX_TSQ_TAINT="N 18"
mkt undeclared.sh "echo $((1 << 18)) >$TAILFIX_TAINT_FILE; exit 0"
mkt declared.sh "# taint-expected: N (fixture)
echo $((1 << 18)) >$TAILFIX_TAINT_FILE; exit 0"
taint_run() {	# taint_run PROG KTAP-LINE: from an untainted kernel
	echo 0 >"$TAILFIX_TAINT_FILE"
	(cd "$TESTS_DIR" && ./run_tests.sh "$rel/$1") 2>&1 | grep -qx "$2"
}
check "run_tests: N set by a program that does not declare it fails" \
	taint_run undeclared.sh "not ok 1 selftests: tailfix: $rel/undeclared.sh # exit=1"
check "run_tests: N declared with '# taint-expected: N' passes" \
	taint_run declared.sh "ok 1 selftests: tailfix: $rel/declared.sh"
# A helper called before it is defined: the check after it passes, the
# program exits 0, and the runner fails it (ena_upstream_series.sh had one).
mkt shellerr.sh 'check "negated, passes for the wrong reason" eval "! helper_defined_later"; ksft_finish'
check "run_tests: a shell error (command not found) fails a program that exits 0" \
	taint_run shellerr.sh "not ok 1 selftests: tailfix: $rel/shellerr.sh # exit=1"
# A check that failed is not hidden by a skip after it; a run in which no
# program passed says so in one line before the summary, and exits 1.
# rt PROG...: run_tests.sh on the fake programs, from an untainted kernel;
# output in $fake/rt.txt, exit status in $fake/rt.rc.
rt() {
	local p args=()
	for p in "$@"; do args+=("$rel/$p"); done
	echo 0 >"$TAILFIX_TAINT_FILE"
	(cd "$TESTS_DIR" && ./run_tests.sh "${args[@]}") >"$fake/rt.txt" 2>&1
	echo $? >"$fake/rt.rc"
}
rt_has() { grep -qx "$1" "$fake/rt.txt"; }
mkt notokskip.sh 'check "broken" false; skip "a later reason"'
mkt okskip.sh 'check "fine" true; skip "a later reason"'
rt pass.sh notokskip.sh okskip.sh
check "run_tests: 'not ok' and then a skip (exit 4) is a failure, and says why" \
	eval 'rt_has "not ok 2 selftests: tailfix: $rel/notokskip.sh # exit=1" &&
		rt_has "# $rel/notokskip.sh printed '"'not ok'"' and then skipped (exit 4): a skip does not hide a failed check" &&
		[ "$(cat "$fake/rt.rc")" != 0 ]'
check "run_tests: only 'ok' lines and then a skip stays a skip" \
	rt_has "ok 3 selftests: tailfix: $rel/okskip.sh # SKIP a later reason"
check "run_tests: ... and the summary counts the failure" rt_has "1 passed, 1 failed, 1 skipped"
rt skip.sh okskip.sh
check "run_tests: nothing passed: one 'no test passed' line, then the summary, last" \
	eval '[ "$(tail -1 "$fake/rt.txt")" = "0 passed, 0 failed, 2 skipped" ] &&
		[ "$(grep -c "no test passed" "$fake/rt.txt")" = 1 ] &&
		tail -2 "$fake/rt.txt" | head -1 | grep -q "^# no test passed: 0 failed, 2 skipped of 2: "'
check "run_tests: nothing passed, only skips: exit status 1" test "$(cat "$fake/rt.rc")" = 1
rt pass.sh skip.sh
check "run_tests: one passed and one skipped: exit 0, no 'no test passed' line" \
	eval '[ "$(cat "$fake/rt.rc")" = 0 ] && ! grep -q "no test passed" "$fake/rt.txt"'
# judge.sh reads the all-skip run as whole KTAP (the line is a diagnostic),
# and fails it: its skips are allowed here, its exit status is not 0.
rt skip.sh
mkdir -p "$fake/allskip"
cp "$fake/rt.txt" "$fake/allskip/ktap.txt"
cp "$fake/rt.rc" "$fake/allskip/exit"
printf '%s\treason for the fixture\n' "$rel/skip.sh" >"$fake/allskip.allow"
check "judge: a run in which nothing passed is whole KTAP, and fails (its exit status)" \
	eval '! "$JUDGE" --allow "$fake/allskip.allow" --expect "$rel/skip.sh" tests:x k amd64 "$fake/allskip" >"$fake/allskip.j" &&
		! grep -q unparsable "$fake/allskip.j" && grep -q "TAILFIX-EXIT 1 with no failed test" "$fake/allskip.j" &&
		tail -1 "$fake/allskip.j" | grep -qx "RESULT k amd64 0 1 1"'
check "taint_expected: the fault-injecting tests declare N, tsq_probe_load.sh nothing" \
	eval '[ "$(cd "$TESTS_DIR" && taint_expected tsq_probe_fault.sh)" = N ] &&
		[ -z "$(cd "$TESTS_DIR" && taint_expected tsq_probe_load.sh)" ]'

# A program that leaves our modules or the TCP sysctls changed fails, even
# when it passed; one killed by the timeout still runs its cleanup (bash
# runs the EXIT trap of lib.sh when SIGTERM ends it).
sr=$TMP/stateroot
export TAILFIX_SYSFS=$sr/sys TAILFIX_PROCFS=$sr/proc
mkdir -p "$sr/sys/module/tsq_probe/parameters" "$sr/proc/sys/net/ipv4"
fi_param=$sr/sys/module/tsq_probe/parameters/fault_inject
echo N >"$fi_param"
echo cubic >"$sr/proc/sys/net/ipv4/tcp_congestion_control"
mkt leaves.sh "echo Y >$fi_param; exit 0"
mkt restores.sh "on_exit 'echo N >$fi_param'; echo Y >$fi_param; exit 0"
mkt unloads.sh "rm -r $sr/sys/module/tsq_probe; exit 0"
mkt sysctl.sh "echo dctcp_fixed >$sr/proc/sys/net/ipv4/tcp_congestion_control; exit 0"
# the sleep is what the timeout interrupts, not a synchronisation
mkt hangs.sh "on_exit 'echo N >$fi_param'; echo Y >$fi_param; sleep 60; exit 0"
state_run() {	# state_run PROG KTAP-LINE [TIMEOUT]: from the initial state
	rm -rf "$sr/sys/module/tsq_probe"
	mkdir -p "$sr/sys/module/tsq_probe/parameters"
	echo N >"$fi_param"
	echo cubic >"$sr/proc/sys/net/ipv4/tcp_congestion_control"
	(cd "$TESTS_DIR" && TAILFIX_TEST_TIMEOUT=${3:-60} ./run_tests.sh "$rel/$1") >"$fake/state.txt" 2>&1
	sed -n 's/^# \(.*left the host changed\)/# \1/p; s/^#   \([-+] .*\)/#   \1/p' "$fake/state.txt"
	grep -qx "$2" "$fake/state.txt"
}
check "run_tests: a module parameter left changed fails a passing program" \
	state_run leaves.sh "not ok 1 selftests: tailfix: $rel/leaves.sh # exit=1"
check "run_tests: a parameter changed and restored passes" \
	state_run restores.sh "ok 1 selftests: tailfix: $rel/restores.sh"
check "run_tests: a module left unloaded fails" \
	state_run unloads.sh "not ok 1 selftests: tailfix: $rel/unloads.sh # exit=1"
check "run_tests: a TCP sysctl left changed fails" \
	state_run sysctl.sh "not ok 1 selftests: tailfix: $rel/sysctl.sh # exit=1"
check "run_tests: a program killed by the timeout still restores (TIMEOUT, no change left)" \
	eval 'state_run hangs.sh "not ok 1 selftests: tailfix: $rel/hangs.sh # TIMEOUT 2s" 2 &&
		! grep -q "left the host changed" "$fake/state.txt" && [ "$(cat "$fi_param")" = N ]'
# A second SIGTERM (timeout(1) signals the test, then its process group)
# that arrives while the EXIT trap restores must not cut the restore short.
mkt term2.sh "on_exit 'sleep 1; echo N >$fi_param'; echo Y >$fi_param; : >$fake/term2.ready; sleep 60"
term_twice() {
	local pid
	echo N >"$fi_param"
	rm -f "$fake/term2.ready"
	"$fake/term2.sh" >/dev/null 2>&1 &
	pid=$!
	wait_for 10 [ -f "$fake/term2.ready" ] || return 1
	kill -TERM "$pid"
	pkill -TERM -P "$pid" -x sleep
	# the second signal lands inside the restore's one-second step
	# (a stimulus, not a synchronisation: the check is the file below)
	sleep 0.3
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	[ "$(cat "$fi_param")" = N ]
}
check "lib.sh: a second SIGTERM during the restore does not cut it short" term_twice
export TAILFIX_SYSFS=/sys
unset TAILFIX_PROCFS

# ---- guest-init.sh outside its guest ----
# Run on a host, as a plain process or as PID 1 of a PID namespace (a
# container's init), it must stop with one line before it mounts anything.
# Safe whatever the script does: it runs as nobody (no mount, no reboot, no
# write to /proc/sysrq-trigger), and the commands that change a host are
# exported bash functions (they win over the script's own PATH) that only
# log their name.
gi=$(mktemp -d)
on_exit "rm -rf $gi"
chmod 755 "$gi"
cp "$TESTS_DIR/vm/guest-init.sh" "$gi/guest-init.sh"
# The mutant: the guard left out.
awk '/^# Only as the init of a test guest/ { skip = 1 }
	!skip { print }
	skip && /^\texit 1$/ { end = 1; next }
	end && /^fi$/ { skip = 0; end = 0 }' "$gi/guest-init.sh" >"$gi/noguard.sh"
nobody=()
[ "$(id -u)" -eq 0 ] && nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# gi_run SCRIPT [WRAPPER...]: SCRIPT by bash under WRAPPER, as nobody;
# output in $gi/out, status in $gi/rc, the faked commands it called in $gi/calls.
gi_run() {
	local script=$1 c
	shift
	: >"$gi/calls"
	chmod 666 "$gi/calls"
	(
		for c in mount umount poweroff reboot halt python3 hostname ip modprobe dmesg dkms \
			tar sync mkdir ln make; do
			eval "$c() { echo \"$c \$*\" >>'$gi/calls'; return 1; }"
			export -f "${c?}"
		done
		exec env -u TAILFIX_DISRUPTIVE timeout 30 "$@" "${nobody[@]}" bash "$script"
	) >"$gi/out" 2>&1
	echo $? >"$gi/rc"
}
# refused: exit 1, one line saying so, no faked command called.
refused() {
	[ "$(cat "$gi/rc")" = 1 ] && [ "$(wc -l <"$gi/out")" = 1 ] &&
		grep -q '^guest-init.sh: refusing to run: not PID 1 of a tailfix test guest' "$gi/out" &&
		[ ! -s "$gi/calls" ] ||
		{ log "exit $(cat "$gi/rc"), $(wc -l <"$gi/out") lines ($(head -1 "$gi/out")), called: $(head -3 "$gi/calls" | tr '\n' ';')"; return 1; }
}
gi_run "$gi/guest-init.sh"
check "guest-init.sh as a plain process: refuses in one line, exit 1, before any mount" refused
pid1=(unshare --pid --fork)
[ "$(id -u)" -eq 0 ] || pid1=(unshare --user --map-root-user --pid --fork)
if "${pid1[@]}" true 2>/dev/null; then
	gi_run "$gi/guest-init.sh" "${pid1[@]}"
	check "guest-init.sh as PID 1 of a PID namespace, no tailfix.run= on the command line: refuses" refused
else
	check_skip "guest-init.sh as PID 1 of a PID namespace" "no PID namespace for $(id -un) here"
fi
gi_run "$gi/noguard.sh"
check "mutant (guest-init.sh without its guard) is caught: it goes on to mount" \
	eval '! grep -q refusing "$gi/noguard.sh" && ! refused >/dev/null && grep -q "^mount " "$gi/calls"'

# ---- run.sh around a fake QEMU: results from the disk, cancel kills it ----
fq=$TMP/fakeqemu
mkdir -p "$fq/bin" "$fq/cache/amd64/t.root/boot" "$fq/res"
touch "$fq/cache/amd64/t.root/boot/vmlinuz-9.9" "$fq/cache/amd64/t.root/boot/initrd.img-9.9" \
	"$fq/cache/amd64/t.img"
cp "$TMP/good/ktap.txt" "$TMP/good/exit" "$fq/res/"
echo 9.9 >"$fq/res/uname"
# The fake locks and writes its pid where -pidfile says (as QEMU does), the guest's /results as a tar
# onto the second -drive, prints a KTAP line a kernel message cut in two,
# then sleeps FAKE_SLEEP seconds.
cat >"$fq/bin/qemu-system-x86_64" <<'FAKE'
#!/bin/bash
while [ $# -gt 0 ]; do
	case $1 in
	-pidfile) exec {pf}>>"$2" && flock -n "$pf" || { echo "cannot lock pid file $2" >&2; exit 1; }
		echo $$ >"$2"; echo "$2" >>"${FAKE_PIDLOG:-/dev/null}"; shift ;;
	-drive) case $2 in *snapshot=on*) ;; *) res=${2#file=}; res=${res%%,*} ;; esac; shift ;;
	esac
	shift
done
tar -cf "$res" -C "$FAKE_RES" .
echo "ok 1 selftests: tailf[    3.1] random kernel line"
exec sleep "$FAKE_SLEEP"
FAKE
chmod +x "$fq/bin/qemu-system-x86_64"
fake_run() {	# fake_run SLEEP: run.sh on the fake, output in $fq/out
	env PATH="$fq/bin:$PATH" FAKE_RES="$fq/res" FAKE_SLEEP="$1" TAILFIX_CACHE="$fq/cache" \
		TAILFIX_VM_LOCK="$fq/vm.lock" "$TESTS_DIR/vm/run.sh" amd64 "$fq/cache/amd64/t.img" 9.9 \
		tests:a.sh,b.sh,ena_hw.sh >"$fq/out" 2>&1
}
judged_from_disk() {
	fake_run 0
	sed 's/^/# /' "$fq/out" | tail -3
	tail -1 "$fq/out" | grep -qx "RESULT 9.9 amd64 2 0 1"
}
check "run.sh: judged from the results disk, not the garbled console" judged_from_disk
cancelled() {
	env PATH="$fq/bin:$PATH" FAKE_RES="$fq/res" FAKE_SLEEP=300 TAILFIX_CACHE="$fq/cache" \
		TAILFIX_VM_LOCK="$fq/vm.lock" "$TESTS_DIR/vm/run.sh" amd64 "$fq/cache/amd64/t.img" 9.9 \
		tests:a.sh >"$fq/out" 2>&1 &
	local runner=$! q=
	wait_for 20 test -s "$fq/cache/amd64/logs/qemu-t-vm.pid" || return 1
	q=$(cat "$fq/cache/amd64/logs/qemu-t-vm.pid")
	kill -0 "$q" || return 1
	kill -TERM "$runner"
	wait "$runner"
	wait_for 10 eval "! kill -0 $q 2>/dev/null"
}
check "run.sh: a cancelled run (TERM) leaves no QEMU behind" cancelled
# Two guests of one disk under two machine locks (make check's second lane)
# boot side by side: each its own pid file, both judged.
side_by_side() {
	local l pids=()
	: >"$fq/pidlog"
	for l in a b; do
		env PATH="$fq/bin:$PATH" FAKE_RES="$fq/res" FAKE_SLEEP=3 FAKE_PIDLOG="$fq/pidlog" \
			TAILFIX_CACHE="$fq/cache" TAILFIX_VM_LOCK="$fq/vm-$l.lock" \
			"$TESTS_DIR/vm/run.sh" amd64 "$fq/cache/amd64/t.img" 9.9 \
			tests:a.sh,b.sh,ena_hw.sh >"$fq/out-$l" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	sed 's/^/# /' "$fq/out-a" "$fq/out-b" "$fq/pidlog" | grep -E 'RESULT|pid'
	for l in a b; do
		tail -1 "$fq/out-$l" | grep -qx "RESULT 9.9 amd64 2 0 1" || return 1
	done
	[ "$(sort -u "$fq/pidlog" | wc -l)" -eq 2 ]
}
check "run.sh: two guests of one disk under two machine locks boot side by side, each its own QEMU pid file" side_by_side

ksft_finish
