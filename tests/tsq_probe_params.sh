#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bad parameters are refused with one clear dmesg line and change nothing.
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# it loads tsq_probe with bad and good parameters; a tsq_probe loaded before
# is reloaded with its parameters, one that was not is unloaded.
. "$(dirname "$0")/lib.sh"
require_disruptive "fault injection and parameter changes hit every TCP socket of the host"
require_tsq_probe
P=/sys/module/tsq_probe/parameters

check "fault_ppm without fault_inject=1 refused at load" \
	refused_load "fault_ppm=5 needs fault_inject=1" fault_ppm=5
check "fault_ppm out of range refused at load" \
	refused_load "fault_ppm=2000000 refused" fault_inject=1 fault_ppm=2000000
check "fault_ppm not a number refused at load" \
	refused_load "fault_ppm=lots refused" fault_inject=1 fault_ppm=lots
check "recover not a bool refused at load" \
	refused_load "invalid for parameter .recover" recover=banana
check "late_cork_ms=0 refused at load" \
	refused_load "late_cork_ms=0 refused: must be 1..1000" late_cork_ms=0
check "late_cork_ms=1001 refused at load" \
	refused_load "late_cork_ms=1001 refused" late_cork_ms=1001
check "txc_sample=0 refused at load" \
	refused_load "txc_sample=0 refused: must be 1..65536" txc_sample=0
check "txc_sample=65537 refused at load" \
	refused_load "txc_sample=65537 refused" txc_sample=65537
check "xmit_attach=ftrace refused at load" \
	refused_load "xmit_attach=ftrace refused: must be auto, tracepoint or kprobe" xmit_attach=ftrace
check "wfree_attach=tracepoint refused at load" \
	refused_load "wfree_attach=tracepoint refused: must be auto, ftrace or kprobe" wfree_attach=tracepoint

# refused_write FILE VALUE: the write fails and the value stays as it was.
refused_write() {
	local before
	before=$(cat "$1")
	! (echo "$2" >"$1") 2>/dev/null && [ "$(cat "$1")" = "$before" ]
}
modprobe tsq_probe || fail "modprobe tsq_probe"
check "fault_ppm refused at run time without fault_inject" refused_write $P/fault_ppm 1000
check "fault_inject is read-only at run time" refused_write $P/fault_inject 1
check "xmit_attach is read-only at run time" refused_write $P/xmit_attach kprobe
check "wfree_attach is read-only at run time" refused_write $P/wfree_attach kprobe
check "recover=maybe refused" refused_write $P/recover maybe
check "reset accepts only a true value" refused_write /sys/kernel/tsq_probe/reset 0
check "late_cork_ms=0 refused at run time" refused_write $P/late_cork_ms 0
check "late_cork_ms=abc refused at run time" refused_write $P/late_cork_ms abc
late_ok() { echo 40 >$P/late_cork_ms && [ "$(cat $P/late_cork_ms)" = 40 ] &&
	grep -qx "late_cork_ms 40" /sys/kernel/tsq_probe/stats && echo 20 >$P/late_cork_ms; }
check "late_cork_ms=40 accepted, shown in stats" late_ok
check "txc_sample=0 refused at run time" refused_write $P/txc_sample 0
check "txc_sample=x refused at run time" refused_write $P/txc_sample x
sample_ok() { echo 1 >$P/txc_sample && [ "$(cat $P/txc_sample)" = 1 ] &&
	grep -qx "txc_sample 1" /sys/kernel/tsq_probe/stats && echo 16 >$P/txc_sample; }
check "txc_sample=1 accepted, shown in stats" sample_ok
modprobe -r tsq_probe

modprobe tsq_probe fault_inject=1 || fail "modprobe tsq_probe fault_inject=1"
check "fault_ppm above 1000000 refused" refused_write $P/fault_ppm 1000001
check "negative fault_ppm refused" refused_write $P/fault_ppm -1
accept() { echo 1000000 >$P/fault_ppm && [ "$(cat $P/fault_ppm)" = 1000000 ] && echo 0 >$P/fault_ppm; }
check "fault_ppm=1000000 accepted with fault_inject=1" accept
modprobe -r tsq_probe
ksft_finish
