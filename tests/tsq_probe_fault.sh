#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The TSQ lost wake-up, reproduced with fault injection and repaired.
#
# The server answers each request with a body and a 7-byte trailer under
# TCP_NODELAY behind a holding qdisc, so the trailer autocorks; fault_ppm
# makes that share of TX completions miss TSQ_THROTTLED, which is what the
# tcp_push()/tcp_wfree() ordering race does on arm64 without the barrier.
# Same request count, same guest, three runs:
#   baseline   no fault: how many requests >= 30 ms emulation alone causes;
#   recover=0  fault: stalls >= 30 ms appear and are counted as lost wake-ups;
#   recover=1  fault: lost wake-ups are pushed; slow requests at most
#              baseline + max(2, 0.2% N, 3 sqrt(baseline)), and what
#              is beyond that at most 1/20 of what recover=0 adds to
#              the baseline.  Run again, at most twice (counted,
#              reported), while its excess has no late cork and no late
#              recovery behind it: an emulator stall, not a lost wake-up.
# When the client cannot keep its schedule even after rr_measure's retries
# (an emulator slower than usual: a CI run has run the 7.3 guest 1.7
# times slower than the run before, and three runs of recover=1 each fell
# 34 to 42 ms behind), all three runs are measured
# again, once, at half the load (2 connections, the same 50 ms between
# requests on each): logged, and the checks judge that set.
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# fault injection hits every TCP socket of the host; a tsq_probe loaded
# before is reloaded with its parameters, one that was not is unloaded.
. "$(dirname "$0")/lib.sh"
require_disruptive "fault injection hits every TCP socket of the host"
require_tsq_probe
require_cmd tc

N=${TSQ_FAULT_REQUESTS:-1200}
# 4 connections x 20 requests/s: a request every 50 ms on each connection, so
# a corked trailer is not pushed out early by the next request on its
# connection but waits for the client's delayed ACK (>= 40 ms).  --delack
# keeps the client in delayed-ACK mode, as a request/response client in
# steady state is (6.12 leaves it after a delayed-ACK timer fires and then
# ACKs at once when the application reads).
PER_CONN_RATE=20	# requests/s on each connection: one every 50 ms
# set_load CONNS: LOAD for CONNS connections, and its words in LOAD_WORDS.
set_load() {
	LOAD=(--requests "$N" --rate $((PER_CONN_RATE * $1)) --conns "$1" --slow-ms 30 --delack)
	LOAD_WORDS="$((PER_CONN_RATE * $1)) requests/s on $1 connections"
}
set_load 4
rr_setup
res=$(mktemp -d)
on_exit "rm -rf $res"

modprobe tsq_probe fault_inject=1 recover=0 || fail "modprobe tsq_probe fault_inject=1"

# faulty_run NAME RECOVER: the workload with 30% missed flags; rr_measure's
# status.
faulty_run() {
	local rc
	echo "$2" >/sys/module/tsq_probe/parameters/recover
	echo 1 >/sys/kernel/tsq_probe/reset
	echo 300000 >/sys/module/tsq_probe/parameters/fault_ppm
	rr_measure "$res/$1" "${LOAD[@]}"
	rc=$?
	echo 0 >/sys/module/tsq_probe/parameters/fault_ppm
	[ "$rc" -eq 0 ] || return "$rc"
	cp /sys/kernel/tsq_probe/stats "$res/$1.stats"
	cp /sys/kernel/tsq_probe/histograms "$res/$1.hist"
	log "$1: $(tr '\n' ' ' <"$res/$1")"
	log "$1 stats: $(tr '\n' ' ' <"$res/$1.stats")"
}
# Timing decides the recover=1 checks below, so the allowance scales with
# the sample: with recovery, at most baseline + max(2, 0.2% of the
# requests) slow requests, and beyond that allowance at most a twentieth of
# what the fault adds to the baseline without recovery.  One emulator hiccup is not a failure; a
# recovery that misses one lost wake-up in twenty is.
# A noisy baseline widens it: rare slow requests are counts, whose own
# spread is about their square root; three of those (CI, arm64, on a
# loaded host: baseline 3 slow requests, recover=1 7, no late cork in
# either, so none of the 7 was a lost wake-up).  allowance: sets allow
# from N and base_slow.
allowance() {
	local noise
	allow=$((N / 500 > 2 ? N / 500 : 2))
	noise=$(awk -v b="$base_slow" 'BEGIN { x = 3 * sqrt(b); n = int(x); if (n < x) n++; print n }')
	[ "$noise" -gt "$allow" ] && allow=$noise
}
# late_recoveries HIST: lost wake-ups recovered, but late (the emulator did
# not run the work item for >= 16.7 ms: recovery_delay_ns has the sample).
late_recoveries() {
	awk '$1 == "hist" { on = ($2 == "recovery_delay_ns"); next }
		on && NF == 3 && $1 >= 16777216 { n += $3 } END { print n + 0 }' "$1"
}

# measure_set: the baseline, recover=0 and recover=1 runs at LOAD;
# rr_measure's status (2: the client could not keep its schedule).
r1_retries=0
measure_set() {
	echo 1 >/sys/kernel/tsq_probe/reset
	rr_measure "$res/base" "${LOAD[@]}" || return
	cp /sys/kernel/tsq_probe/stats "$res/base.stats"
	base_slow=$(kv "$res/base" slow)
	log "baseline: $(tr '\n' ' ' <"$res/base")"
	log "baseline stats: $(tr '\n' ' ' <"$res/base.stats")"
	allowance
	faulty_run r0 0 || return
	faulty_run r1 1 || return
	# Slow requests beyond the allowance with nothing the module counts
	# to explain them -- no late cork (the backstop sees every lost
	# wake-up that ends late) and no late recovery -- are an emulator
	# stall (6.1 in CI's fresh-cache run: 4 slow requests against 0 + 2,
	# 0 late corks, recovery delays all under 1.5 ms; the 6.12 and 7.x
	# guests beside the 6.1 guest: 4 then 3, and 3 then 7): recover=1
	# runs again, at most twice, and the last run is judged.  Counted and
	# reported; a recovery that fails leaves late corks and gets no rerun.
	local again
	for again in 1 2; do
		[ "$(kv "$res/r1" slow)" -gt $((base_slow + allow)) ] &&
			[ "$(kv "$res/r1.stats" late_cork_releases)" = 0 ] &&
			[ "$(late_recoveries "$res/r1.hist")" = 0 ] || break
		r1_retries=$((r1_retries + 1))
		log "recover=1: $(kv "$res/r1" slow) requests >= 30 ms, none explained by a late cork or a late recovery: an emulator stall; recover=1 again ($again of at most 2 per set of runs)"
		faulty_run r1 1 || return
	done
}
measure_set
rc=$?
if [ "$rc" -eq 2 ]; then
	full_load=$LOAD_WORDS
	set_load 2
	log "the client could not keep its schedule at $full_load: the baseline, recover=0 and recover=1 again at $LOAD_WORDS (the same $((1000 / PER_CONN_RATE)) ms per connection)"
	measure_set
	rc=$?
fi
[ "$rc" -eq 0 ] || fail "no trustworthy measurement (rr_measure: $rc)"

r0_slow=$(kv "$res/r0" slow)
r1_slow=$(kv "$res/r1" slow)
check "faults were injected (recover=0)" cmp_num "$(kv "$res/r0.stats" faults_injected)" ">" 0
check "lost wake-ups detected (recover=0)" cmp_num "$(kv "$res/r0.stats" lost_wakeups)" ">" 0
check "no recovery attempted with recover=0" cmp_num "$(kv "$res/r0.stats" recoveries)" "==" 0
check "recover=0: requests >= 30 ms appear ($r0_slow, baseline $base_slow)" \
	cmp_num "$r0_slow" ">" "$base_slow"
check "recover=0: max latency shows the delayed-ACK stall (>= 40 ms)" \
	cmp_num "$(kv "$res/r0" max_us)" ">=" 40000
check "faults were injected (recover=1)" cmp_num "$(kv "$res/r1.stats" faults_injected)" ">" 0
check "lost wake-ups detected and recovered (recover=1)" \
	cmp_num "$(kv "$res/r1.stats" recoveries)" ">" 0
check "every lost wake-up was recovered" \
	cmp_num "$(kv "$res/r1.stats" recoveries)" "==" "$(kv "$res/r1.stats" lost_wakeups)"
# A lost wake-up the module did recover, but late, is a timing matter for
# the benchmark (make bench: recovery delay p99), not a missed one: counted
# and reported, and not held against the recovery.
slow_recoveries=$(late_recoveries "$res/r1.hist")
log "recover=1: $slow_recoveries recoveries took >= 16.7 ms (recovery_delay_ns); recover=1 runs retried: $r1_retries"
sed -n '/^hist recovery_delay_ns/,/^hist [a-z_]* [^-]/p' "$res/r1.hist" | sed '$d' | sed 's/^/#   /' 
# Known gap (arm64, 2 vCPUs): a few injected faults end in a stall the
# handshake check does not see; late_cork_releases (the backstop) counts
# each.  When the excess over the allowance is no more than those -- and the
# 1/20 check below holds -- it is reported as XFAIL, not hidden; any excess
# the backstop did not see, or a recovery that misses more, still fails.
#
# The gap is judged by the backstop's own count, stall for stall: at most
# one cork in twenty of those late without recovery (r0) may be late with
# it.  Counted in requests instead, the same misses can exceed a twentieth:
# a request of r0 often holds several stalls (CI, arm64: 8 slow requests
# of 1200 with recovery, 137 without; 8 late corks against about 226).
r1_late=$(kv "$res/r1.stats" late_cork_releases)
r0_late=$(kv "$res/r0.stats" late_cork_releases)
log "recover=1: late_cork_releases $r1_late (recover=0: $r0_late), probes_missed $(kv "$res/r1.stats" probes_missed) (a tcp_wfree hit the kernel did not deliver is a completion nobody checked)"
excess=$((r1_slow - slow_recoveries - base_slow - allow))
known_gap=0
if [ "$excess" -gt 0 ] && [ "$excess" -le "${r1_late:-0}" ] &&
	[ $((r1_late * 20)) -le "${r0_late:-0}" ]; then
	known_gap=1
fi
gap_why="known gap: $r1_late lost wake-ups missed by the handshake check, seen by late_cork_releases, at most 1/20 of recover=0's $r0_late (README: known gaps)"
desc="recover=1: requests >= 30 ms, less the $slow_recoveries late recoveries, at most baseline + max(2, 0.2% of $N, 3 sqrt(baseline)) ($r1_slow vs $base_slow + $allow)"
within() { cmp_num "$((r1_slow - slow_recoveries))" "<=" "$((base_slow + allow))"; }
# The twentieth compares what the fault adds, on both sides: recover=1's
# slow requests beyond baseline + allowance against recover=0's beyond the
# baseline.  Both runs carry the baseline's own slow requests; without
# taking them off, a noisy baseline alone fails it (CI, arm64 beside the
# 7.x guest at half load: baseline 25, recover=1 36 -- within baseline +
# allowance -- recover=0 127).  With few slow requests in r0 (15 of 600 in
# CI's IPv6 run), the allowance keeps one emulator hiccup in r1 (no lost
# wake-up, no late cork) from being more than a twentieth by itself.
r1_beyond=$excess
[ "$r1_beyond" -lt 0 ] && r1_beyond=0
r0_added=$((r0_slow - base_slow))
twentieth() { cmp_num "$((r1_beyond * 20))" "<=" "$r0_added"; }
desc20="recover=1: requests >= 30 ms beyond baseline + allowance ($r1_slow - $slow_recoveries late recoveries - $base_slow - $allow), at most 1/20 of recover=0's beyond the baseline ($r1_beyond x 20 vs $r0_slow - $base_slow)"
if [ "$known_gap" = 1 ]; then
	check_xfail "$desc" "$gap_why" within
	check_xfail "$desc20" "$gap_why" twentieth
else
	check "$desc" within
	check "$desc20" twentieth
fi

# The backstop sees the symptom, whoever lost the wake-up: late cork
# releases appear with the fault and no recovery, and recovery removes them
# as it removes the slow requests.
base_late=$(kv "$res/base.stats" late_cork_releases)
r0_late=$(kv "$res/r0.stats" late_cork_releases)
r1_late=$(kv "$res/r1.stats" late_cork_releases)
check "late_cork_releases: baseline at most max(2, 0.2% of $N) ($base_late)" \
	cmp_num "$base_late" "<=" "$allow"
check "late_cork_releases: the fault without recovery shows them ($r0_late, baseline $base_late)" \
	cmp_num "$r0_late" ">" "$((base_late + allow))"
check "late_cork_releases: recovery removes them (recover=1: $r1_late x 20 vs $r0_late)" \
	cmp_num "$((r1_late * 20))" "<=" "$r0_late"

# The recovery delay: one sample per recovered cork, none without recovery.
# (Its p99 is a benchmark figure, not judged here: make bench.)
hist_count() { awk -v h="$2" '$1 == "hist" { on = ($2 == h); next } on && NF == 3 { n += $3 } END { print n + 0 }' "$1"; }
rd0=$(hist_count "$res/r0.hist" recovery_delay_ns)
rd1=$(hist_count "$res/r1.hist" recovery_delay_ns)
rec1=$(kv "$res/r1.stats" recoveries)
log "recovery_delay_ns samples: recover=0 $rd0, recover=1 $rd1 (recoveries $rec1)"
check "recovery_delay_ns: no sample with recover=0" cmp_num "$rd0" "==" 0
check "recovery_delay_ns: recovered corks timed with recover=1 ($rd1, recoveries $rec1)" \
	cmp_num "$rd1" ">=" "$((rec1 / 2))"
check "recovery_delay_ns: some sample with recover=1" cmp_num "$rd1" ">" 0
ksft_finish
