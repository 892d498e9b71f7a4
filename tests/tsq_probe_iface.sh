#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq_probe's interfaces for operators:
#  - stats and histograms are root only (mode 0400): traffic timing must not
#    leak to containers;
#  - tsq-probe-stat escapes Prometheus label values and reports histograms
#    the kernel left out ("truncated N") instead of dropping them silently;
#  - fault_ppm cannot be armed without fault_inject=1, not even while init
#    runs (test_fail_init=4 holds init for two seconds: a test build,
#    tests/mutants/tsq_probe/initfail.patch, that needs the kernel headers,
#    else this check skips);
#  - the first injected fault taints the kernel (TAINT_TEST, bit 18; on a
#    kernel without it, 5.10, TAINT_USER, bit 6) and
#    says so once in dmesg.
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# it loads tsq_probe with fault injection; a tsq_probe loaded before is
# reloaded with its parameters, one that was not is unloaded.
. "$(dirname "$0")/lib.sh"
require_disruptive "fault injection in tsq_probe"
require_tsq_probe
require_cmd tc
cli=$TAILFIX_ROOT/tsq_probe/tsq-probe-stat
res=$(mktemp -d)
on_exit "rm -rf $res"

modprobe tsq_probe || fail "modprobe tsq_probe"
check "stats is mode 0400" test "$(stat -c %a /sys/kernel/tsq_probe/stats)" = 400
check "histograms is mode 0400" test "$(stat -c %a /sys/kernel/tsq_probe/histograms)" = 400
if command -v setpriv >/dev/null; then
	check "an unprivileged user cannot read stats" \
		bash -c "! setpriv --reuid=65534 --regid=65534 --clear-groups cat /sys/kernel/tsq_probe/stats >/dev/null 2>&1"
else
	check_skip "an unprivileged user cannot read stats" "no setpriv"
fi
check "root reads stats" grep -q '^lost_wakeups ' /sys/kernel/tsq_probe/stats
check "histograms ends with a whole line" bash -c "tail -c1 /sys/kernel/tsq_probe/histograms | od -An -c | grep -q '\\\\n'"
modprobe -r tsq_probe

# tsq-probe-stat on a fake sysfs directory: a device name with a double
# quote and a backslash (both legal in interface names) and a cut file.
fake=$res/fake
mkdir -p "$fake"
printf 'autocork 1\nlost_wakeups 0\ncork_hold_max_ns 10\n' >"$fake/stats"
printf '%s\n' 'hist cork_hold_ns - max_ns 10 sum_ns 20' '8 16 2' \
	'hist txc_ns a"b\c max_ns 10 sum_ns 20' '8 16 2' 'truncated 3' >"$fake/histograms"
TSQ_PROBE_SYSFS=$fake "$cli" --prometheus >"$res/prom"
TSQ_PROBE_SYSFS=$fake "$cli" >"$res/table"
check "Prometheus label value escaped" grep -qF 'device="a\"b\\c",le=' "$res/prom"
check "no unescaped quote in a label" bash -c "! grep -qF 'device=\"a\"b' '$res/prom'"
check "Prometheus reports left-out histograms" grep -qx 'tsq_probe_histograms_truncated 3' "$res/prom"
check "the table reports left-out histograms" grep -q '3 histograms left out' "$res/table"
check "a truncated line is not read as a bucket" bash -c "! grep -q 'le=\"3e-09\"' '$res/prom'"

# fault_ppm during init without fault_inject=1: refused.  test_fail_init
# is in a test build only (the shipped module has no test parameter): put
# where modprobe finds tsq_probe for this check, the installed one back
# after it.
dmesg_mark
if why=$(mutants_unavailable); then
	check_skip "init reached its sysfs files and held (test_fail_init=4)" "no test build: $why"
	check_skip "fault_ppm refused while init runs without fault_inject=1" "no test build: $why"
else
	mutants_setup tsq_probe tsq_probe tsq_probe
	mutant_build initfail "$MUT_PATCHES/initfail.patch" ||
		fail "tsq_probe with test_fail_init (initfail.patch) does not build"
	mutant_install initfail || fail "cannot put the test build in place of $MUT_INSTALLED"
	modprobe tsq_probe test_fail_init=4 2>/dev/null &
	mp=$!
	# /sys/module/tsq_probe/parameters exists before init runs (a write
	# there is the load-time parser's, which init then checks);
	# /sys/kernel/tsq_probe is made by init itself, after the lock.
	in_init=no
	wait_for 20 test -e /sys/kernel/tsq_probe/stats && in_init=yes
	armed=no
	echo 500000 >/sys/module/tsq_probe/parameters/fault_ppm 2>/dev/null && armed=yes
	wait $mp
	check "init reached its sysfs files and held (test_fail_init=4)" test "$in_init" = yes
	# Refused by the setter's lock, not by init's own check of the pair.
	dmesg_since | grep -qF 'fault_ppm=500000 refused: load the module with fault_inject=1 first' &&
		[ "$armed" = no ] && armed=refused
	check "fault_ppm refused while init runs without fault_inject=1" test "$armed" = refused
	wait_for 10 test ! -e /sys/module/tsq_probe
	mutant_uninstall
fi

# The first injected fault taints the kernel and says so once.
rr_setup
modprobe tsq_probe fault_inject=1 recover=1 || fail "modprobe tsq_probe fault_inject=1"
check "no taint message before a fault" bash -c "! dmesg | tail -n +$((_dmesg_lines + 1)) | grep -q 'kernel tainted'"
echo 300000 >/sys/module/tsq_probe/parameters/fault_ppm || fail "fault_ppm=300000 refused"
# A fault can only hit a completion of a TSQ-throttled socket: how many a
# run of 200 requests gets depends on timing (seen: none, once in a 6.12
# guest).  More traffic until one is injected, at most five runs, counted.
runs=0
while [ "$(tsq_stat faults_injected)" -eq 0 ] && [ "$runs" -lt 5 ]; do
	rr_run "$res/rr" --requests 200 --rate 80 --conns 4 || fail "traffic"
	runs=$((runs + 1))
done
log "traffic runs of 200 requests until a fault was injected: $runs"
echo 0 >/sys/module/tsq_probe/parameters/fault_ppm
check "faults were injected ($runs traffic runs)" cmp_num "$(tsq_stat faults_injected)" ">" 0
read -r tletter tbit < <(tsq_fault_taint)
check "kernel tainted ($tletter, bit $tbit: TAINT_TEST, or TAINT_USER where the kernel has none)" \
	bash -c "[ \$(( \$(cat /proc/sys/kernel/tainted) >> $tbit & 1 )) = 1 ]"
said() { dmesg | tail -n +"$((_dmesg_lines + 1))" | grep -c 'tsq_probe: fault injected.*kernel tainted'; }
wait_for 5 cmp_num "$(said)" ">=" 1
check "dmesg says so exactly once ($(said))" cmp_num "$(said)" "==" 1
modprobe -r tsq_probe
ksft_finish
