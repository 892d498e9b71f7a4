#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A load that fails late leaves nothing behind.  Under traffic with faults
# injected and recover=0 (every suspect goes to the check work and holds a
# socket reference), test_fail_init=N makes init fail at stage
# N: 1 after the tcp_wfree probe, 2 after the __dev_queue_xmit hook, 3 after
# tcp_push, 4 after the sysfs files.  Each time: modprobe fails with one
# "refusing to load" line, the module is gone, no kprobe or ftrace_ops is
# left, dmesg is clean; at the end, once the traffic has stopped, every
# TCP socket has been freed: the TCP slab holds no more objects than
# before the traffic (a leaked reference keeps a socket allocated
# forever, while sockstat's "alloc" drops at close whatever the
# references).
# test_fail_init is no parameter of the shipped module: the test builds
# tsq_probe from the installed DKMS source with
# tests/mutants/tsq_probe/initfail.patch (kernel headers and patch(1)
# needed, else it skips) and puts it where modprobe finds tsq_probe until
# it ends; the installed module is put back on exit.
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# it makes tsq_probe loads fail under fault injection; a tsq_probe loaded
# before is reloaded with its parameters, one that was not stays unloaded.
. "$(dirname "$0")/lib.sh"
require_disruptive "fault injection in tsq_probe"
require_tsq_probe
require_cmd tc
mutants_setup tsq_probe tsq_probe tsq_probe
mutant_build initfail "$MUT_PATCHES/initfail.patch" || fail "tsq_probe with test_fail_init (initfail.patch) does not build"
mutant_install initfail || fail "cannot put the test build in place of $MUT_INSTALLED"

# TCP sockets allocated: the slab's objects after flushing the per-CPU slabs.
tcp_objs() {
	echo 1 >/sys/kernel/slab/TCP/shrink 2>/dev/null
	awk '{ print $1 }' /sys/kernel/slab/TCP/objects
}
[ -r /sys/kernel/slab/TCP/objects ] || skip "no /sys/kernel/slab/TCP (SLUB sysfs)"
mount -t debugfs none /sys/kernel/debug 2>/dev/null
# kprobes/list names the probed function, not the module that owns the
# probe: count the probes on each function tsq_probe hooks, against before.
KPROBES=/sys/kernel/debug/kprobes/list
kp0=$(mktemp)
on_exit "rm -f $kp0"
cat "$KPROBES" >"$kp0" 2>/dev/null || kp0=
no_probe_left() {
	local now rc

	now=$(mktemp)
	cat "$KPROBES" >"$now" || { rm -f "$now"; return 1; }
	kprobes_same "$kp0" "$now" tcp_push __dev_queue_xmit tcp_wfree
	rc=$?
	rm -f "$now"
	return $rc
}
# the tcp_wfree hook may be an ftrace_ops (wfree_attach=ftrace)
ENABLED=$(tracefs_file enabled_functions)
ft0=$(mktemp)
on_exit "rm -f $ft0"
cat "$ENABLED" >"$ft0" 2>/dev/null || ft0=
no_ftrace_left() {
	local now n0 n

	now=$(mktemp)
	cat "$ENABLED" >"$now" || { rm -f "$now"; return 1; }
	n0=$(ftrace_count "$ft0" tcp_wfree) n=$(ftrace_count "$now" tcp_wfree)
	rm -f "$now"
	[ "$n" -eq "$n0" ] || { log "ftrace_ops on tcp_wfree: $n0 before, $n after"; return 1; }
}

rr_setup
objs0=$(tcp_objs)
res=$(mktemp -d)
on_exit "rm -rf $res"
rr_background "$res/traffic"
traffic=$TRAFFIC

queued_total=0
for stage in 1 2 3 4; do
	dmesg_mark
	if modprobe tsq_probe fault_inject=1 fault_ppm=500000 recover=0 test_fail_init=$stage \
		2>"$res/modprobe.$stage"; then
		check "stage $stage: modprobe fails" false
		modprobe -r tsq_probe
		continue
	fi
	check "stage $stage: modprobe fails" true
	lines=$(dmesg | tail -n +"$((_dmesg_lines + 1))" | grep -c 'tsq_probe: refusing to load')
	check "stage $stage: one 'refusing to load' line in dmesg ($lines)" cmp_num "$lines" "==" 1
	q=$(dmesg | tail -n +"$((_dmesg_lines + 1))" | sed -n 's/.*, \([0-9]*\) checks queued$/\1/p' | tail -1)
	log "stage $stage: ${q:-?} checks were queued when init failed"
	queued_total=$((queued_total + ${q:-0}))
	check "stage $stage: module not loaded" test ! -e /sys/module/tsq_probe
	if [ -n "$kp0" ]; then
		check "stage $stage: no kprobe left" no_probe_left
	else
		check_skip "stage $stage: no kprobe left" "no readable $KPROBES (debugfs)"
	fi
	if [ -n "$ft0" ]; then
		check "stage $stage: no ftrace_ops left" no_ftrace_left
	else
		check_skip "stage $stage: no ftrace_ops left" "no readable tracefs enabled_functions"
	fi
	check "stage $stage: dmesg clean" dmesg_clean
done
check "the error paths had checks (socket references) to undo ($queued_total)" \
	cmp_num "$queued_total" ">" 0
check "traffic still flowing" kill -0 "$traffic"
kill "$traffic"
wait "$traffic" 2>/dev/null
freed() { cmp_num "$(tcp_objs)" "<=" "$objs0"; }
wait_for 30 freed
check "every TCP socket freed once the traffic stopped ($(tcp_objs) TCP objects, $objs0 before)" freed
check "a normal load still works" modprobe tsq_probe
modprobe -r tsq_probe
ksft_finish
