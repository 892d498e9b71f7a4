#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The completer-side lost wake-up of 6.1, found and repaired: the kernel's
# tcp_wfree() misses a TSQ_THROTTLED that stays set, with nothing below TCP
# and nobody coming to clear it (fault_mode=completer: the flag is cleared
# after tsq_probe's hook has seen it set and set again when tcp_wfree()
# returns).  The server answers each request with a body and a 7-byte
# trailer under TCP_NODELAY behind a holding qdisc, so the trailer
# autocorks, as in tsq_probe_fault.sh.  Same request count, same guest,
# three runs:
#   baseline   the module in completer mode, recover=1, no fault: the
#              completions that find the flag set are looked at again,
#              and nothing is counted as lost or pushed;
#   recover=0  30% of the completions that find the flag miss it: lost
#              wake-ups are counted, nothing is pushed, and the corked
#              trailers wait for something else (the client's delayed ACK):
#              the p99 latency is more than twice both other runs';
#   recover=1  the same fault: the lost wake-ups are found and pushed,
#              every request completes.
# The verdict is the module's counters and latencies compared within the
# run; mutant 6 (tests/mutants/tsq_probe/mutant6.patch: a completion that
# finds the flag trusted to wake TSQ) must fail it (tests/mutants/tsq_mutants.sh).
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# fault injection hits every TCP socket of the host; a tsq_probe loaded
# before is reloaded with its parameters, one that was not is unloaded.
. "$(dirname "$0")/lib.sh"
require_disruptive "fault injection hits every TCP socket of the host"
require_tsq_probe
require_cmd tc

N=${TSQ_COMPLETER_REQUESTS:-600}
# A request every 50 ms on each of 4 connections: a corked trailer is not
# pushed early by the next request but waits for the client's delayed ACK.
LOAD=(--requests "$N" --rate 80 --conns 4 --slow-ms 30 --delack)
rr_setup
res=$(mktemp -d)
on_exit "rm -rf $res"
P=/sys/module/tsq_probe/parameters

# The parameter: validated at load time, one dmesg line per refusal.
check "fault_mode=bogus refused at load" \
	refused_load "fault_mode=bogus refused: must be flag or completer" fault_inject=1 fault_mode=bogus
check "fault_mode=completer without fault_inject=1 refused at load" \
	refused_load "fault_mode=completer needs fault_inject=1" fault_mode=completer
check "fault_mode=completer with wfree_attach=ftrace refused at load" \
	refused_load "fault_mode=completer hooks tcp_wfree with a kretprobe" \
	fault_inject=1 fault_mode=completer wfree_attach=ftrace

modprobe tsq_probe fault_inject=1 fault_mode=completer recover=0 ||
	fail "modprobe tsq_probe fault_inject=1 fault_mode=completer"
check "fault_mode reads completer" test "$(cat $P/fault_mode)" = completer
check "tcp_wfree hooked by the kretprobe (wfree_attach reads kprobe)" \
	test "$(cat $P/wfree_attach)" = kprobe

# run NAME RECOVER PPM: the workload; stats and results under $res/NAME.
run() {
	echo "$2" >$P/recover
	echo 1 >/sys/kernel/tsq_probe/reset
	echo "$3" >$P/fault_ppm
	rr_measure "$res/$1" "${LOAD[@]}"
	local rc=$?
	echo 0 >$P/fault_ppm
	[ "$rc" -eq 0 ] || return "$rc"
	cp /sys/kernel/tsq_probe/stats "$res/$1.stats"
	log "$1: $(tr '\n' ' ' <"$res/$1")"
	log "$1 stats: $(tr '\n' ' ' <"$res/$1.stats")"
}
runs() { run base 1 0 && run r0 0 300000 && run r1 1 300000; }
runs
rc=$?
# A client that cannot keep its schedule even after rr_measure's retries
# (an emulator slower than usual): the three runs again, once, at half the
# load (2 connections, the same 50 ms between requests on each), as
# tsq_probe_fault.sh does; the checks judge that set.
if [ "$rc" -eq 2 ]; then
	LOAD=(--requests "$N" --rate 40 --conns 2 --slow-ms 30 --delack)
	log "the client could not keep its schedule at 4 connections: the three runs again at ${LOAD[*]}"
	runs
	rc=$?
fi
[ "$rc" -eq 0 ] || fail "no trustworthy measurement (rr_measure: $rc)"

st() { kv "$res/$1.stats" "$2"; }
for r in base r0 r1; do
	check "$r: all $N requests completed" test "$(kv "$res/$r" requests)" = "$N"
done
check "baseline: no fault, no lost wake-up" \
	test "$(st base faults_injected) $(st base lost_wakeups)" = "0 0"
check "baseline: last completions with the flag set were looked at ($(st base flagged_suspects))" \
	cmp_num "$(st base flagged_suspects)" ">" 0
check "baseline: none of them was a lost wake-up or an action" \
	test "$(st base recoveries) $(st base checks_rearmed)" = "0 0"
check "recover=0: faults injected ($(st r0 faults_injected))" cmp_num "$(st r0 faults_injected)" ">" 0
check "recover=0: lost wake-ups detected with the flag left set ($(st r0 lost_wakeups))" \
	cmp_num "$(st r0 lost_wakeups)" ">" 0
check "recover=0: nothing pushed" test "$(st r0 recoveries)" = 0
check "recover=1: faults injected ($(st r1 faults_injected))" cmp_num "$(st r1 faults_injected)" ">" 0
check "recover=1: lost wake-ups detected ($(st r1 lost_wakeups))" cmp_num "$(st r1 lost_wakeups)" ">" 0
check "recover=1: each recovered ($(st r1 recoveries) of $(st r1 lost_wakeups))" \
	test "$(st r1 recoveries)" = "$(st r1 lost_wakeups)"
# The stall is real without recovery and gone with it: the trailers the
# fault left corked wait for something else, which puts recover=0's p99
# above twice both the baseline's and recover=1's.
p0=$(kv "$res/r0" p99_us)
pb=$(kv "$res/base" p99_us)
p1=$(kv "$res/r1" p99_us)
check "recover=0: p99 $p0 us above twice the baseline's $pb us" cmp_num "$p0" ">" "$((2 * pb))"
check "recover=0: p99 $p0 us above twice recover=1's $p1 us" cmp_num "$p0" ">" "$((2 * p1))"
log "late_cork_releases: baseline $(st base late_cork_releases), recover=0 $(st r0 late_cork_releases), recover=1 $(st r1 late_cork_releases); wakeup_checks: $(st base wakeup_checks) $(st r0 wakeup_checks) $(st r1 wakeup_checks); probes_missed: $(st base probes_missed) $(st r0 probes_missed) $(st r1 probes_missed)"
check "recover=0: the backstop saw corks released late ($(st r0 late_cork_releases))" \
	cmp_num "$(st r0 late_cork_releases)" ">" "$(st r1 late_cork_releases)"
ksft_finish
