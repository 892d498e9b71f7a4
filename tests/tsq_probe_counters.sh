#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Each tsq_probe counter moves when, and only when, it should (no fault):
#  - autocork follows the kernel's own TcpExtTCPAutoCorking for the
#    body+trailer workload, and stays 0 with single writes (no cork);
#  - cork-hold and TX-completion clocks take samples for the holding device;
#  - one TCP skb in txc_sample (16) gets a TX-completion clock, every one
#    with txc_sample=1 (set at run time);
#  - lost_wakeups, recoveries and faults_injected stay 0 without a fault;
#  - kernel.ftrace_enabled=0 is accepted under the module, said once and
#    counted (completions_unseen), and completions are timed again after.
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says
# why, before touching any module): loads and unloads tsq_probe and
# switches kernel.ftrace_enabled, which it sets back.
. "$(dirname "$0")/lib.sh"
require_disruptive "loads tsq_probe, whose recovery pushes stalled sockets of the whole host, and unloads it"
require_tsq_probe
require_cmd tc nstat
modprobe tsq_probe || fail "modprobe tsq_probe"

rr_setup
res=$(mktemp -d)
on_exit "rm -rf $res"
LOAD=(--requests 400 --rate 80 --conns 4)
# The kernel's count of both ends' namespaces: tsq_probe counts the host's,
# and a client's request written while its previous one is still below TCP
# (a loaded emulator delays completions) corks too.
autocorks() {
	echo $(($(nstat_get "$NS_SRV" TcpExtTCPAutoCorking) + $(nstat_get "$NS_CLI" TcpExtTCPAutoCorking)))
}
k0=$(autocorks)
echo 1 >/sys/kernel/tsq_probe/reset
rr_run "$res/two" "${LOAD[@]}" || fail "two-write run"
k1=$(autocorks)
cp /sys/kernel/tsq_probe/stats "$res/two.stats"
cp /sys/kernel/tsq_probe/histograms "$res/two.hist"
kern=$((k1 - k0))
ours=$(kv "$res/two.stats" autocork)
log "kernel TcpExtTCPAutoCorking delta $kern, tsq_probe autocork $ours"
log "stats: $(tr '\n' ' ' <"$res/two.stats")"

check "the workload autocorks (kernel counter moved)" cmp_num "$kern" ">" 0
check "autocork > 0" cmp_num "$ours" ">" 0
check "autocork <= kernel's count" cmp_num "$ours" "<=" "$kern"
# tcp_push() may cork and then push at once when the completion already
# happened; the kernel counts those, we do not (nothing stayed corked).
check "autocork >= 80% of kernel's count" cmp_num "$ours" ">=" "$((kern * 8 / 10))"
check "cork-hold samples taken" cmp_num "$(kv "$res/two.stats" cork_samples)" ">" 0
check "TX-completion samples taken" cmp_num "$(kv "$res/two.stats" txc_samples)" ">" 0
check "per-device histogram for $SRV_DEV" grep -q "^hist txc_ns $SRV_DEV " "$res/two.hist"
check "no lost wake-up without a fault" cmp_num "$(kv "$res/two.stats" lost_wakeups)" "==" 0
check "no recovery without a fault" cmp_num "$(kv "$res/two.stats" recoveries)" "==" 0
check "no fault injected" cmp_num "$(kv "$res/two.stats" faults_injected)" "==" 0

# Sampling: at the default txc_sample (16) one TCP skb in 16 is stamped,
# drawn at random; the same run with every skb stamped (txc_sample=1, set
# at run time) gives the count to compare, within four binomial standard
# deviations (plus 2).
TP=/sys/module/tsq_probe/parameters/txc_sample
n=$(cat "$TP")
check "txc_sample defaults to 16" test "$n" = 16
echo 1 >"$TP" || fail "txc_sample=1 at run time"
on_exit "echo $n >$TP 2>/dev/null || :"
echo 1 >/sys/kernel/tsq_probe/reset
rr_run "$res/all" "${LOAD[@]}" || fail "two-write run, every skb timed"
all=$(tsq_stat txc_stamps) drawn=$(kv "$res/two.stats" txc_stamps)
echo "$n" >"$TP"
log "txc_stamps: $drawn at txc_sample=$n, $all at txc_sample=1"
check "txc_sample=1: every TCP skb timed ($all stamps, $(tsq_stat txc_samples) timed)" \
	cmp_num "$(tsq_stat txc_samples)" ">=" "$((all * 9 / 10))"
check "txc_sample=$n: about one stamp in $n ($drawn against $all / $n)" awk -v d="$drawn" -v a="$all" -v n="$n" \
	'BEGIN { e = a / n; exit !(a > 0 && (d - e) ^ 2 <= (4 * sqrt(e * (1 - 1 / n)) + 2) ^ 2) }'

# Negative control: one write per reply never corks.
k0=$(autocorks)
echo 1 >/sys/kernel/tsq_probe/reset
ip netns exec "$NS_SRV" "$TOOLS_DIR/tailrr" server --bind "$SRV_ADDR" --port $((RR_PORT + 1)) \
	--trailer 0 --ready-file "$res/ready1" >/dev/null 2>&1 &
on_exit "kill $!"
wait_for 20 test -e "$res/ready1" || fail "second server"
RR_PORT=$((RR_PORT + 1)) rr_run "$res/one" "${LOAD[@]}" --trailer 0 || fail "single-write run"
k1=$(autocorks)
# Single writes cork only when a reply is written while the previous one of
# its connection is still below TCP (emulator stalls bunch requests): the
# kernel counted 2 of 400 in a 6.1 guest.  So: exactly 0 when the kernel saw
# none, never more than the kernel, and a small fraction of the two-write run.
kern1=$((k1 - k0))
ours1=$(tsq_stat autocork)
log "single writes: kernel TcpExtTCPAutoCorking delta $kern1, tsq_probe autocork $ours1"
if [ "$kern1" -eq 0 ]; then
	check "single writes: autocork stays 0 (kernel counted none)" cmp_num "$ours1" "==" 0
else
	check "single writes: autocork <= kernel's count ($kern1)" cmp_num "$ours1" "<=" "$kern1"
fi
check "single writes: autocork <= 5% of the two-write run's ($ours)" cmp_num "$((ours1 * 20))" "<=" "$ours"
check "single writes: TX completions still timed" cmp_num "$(tsq_stat txc_samples)" ">" 0

# The operator's off switch stays the operator's: kernel.ftrace_enabled=0
# is accepted with the module loaded; the module says once that the
# completions go unseen and counts them (completions_unseen), and times
# them again once ftrace is back on.
said_unseen() { dmesg_since | grep -q "tsq_probe: no TX completion timed"; }
wfree_mode=$(cat /sys/module/tsq_probe/parameters/wfree_attach)
if [ "$wfree_mode" != ftrace ]; then
	check_skip "kernel.ftrace_enabled=0 under the module" "the tcp_wfree hook is $wfree_mode here"
elif [ ! -w /proc/sys/kernel/ftrace_enabled ]; then
	check_skip "kernel.ftrace_enabled=0 under the module" "no writable kernel.ftrace_enabled"
else
	fe0=$(cat /proc/sys/kernel/ftrace_enabled)
	on_exit "sysctl -qw kernel.ftrace_enabled=$fe0"
	dmesg_mark
	check "sysctl kernel.ftrace_enabled=0 accepted with tsq_probe loaded" \
		sysctl -qw kernel.ftrace_enabled=0
	echo 1 >/sys/kernel/tsq_probe/reset
	rr_run "$res/off" "${LOAD[@]}" || fail "two-write run with ftrace off"
	check "ftrace off: said once in dmesg that completions go unseen" wait_for 10 said_unseen
	log "ftrace off: $(dmesg_since | grep -c 'tsq_probe: no TX completion timed') such line(s); stats: $(tr '\n' ' ' </sys/kernel/tsq_probe/stats)"
	check "ftrace off: no more than one such line" \
		cmp_num "$(dmesg_since | grep -c 'tsq_probe: no TX completion timed')" "==" 1
	check "ftrace off: completions_unseen counted ($(tsq_stat completions_unseen))" \
		cmp_num "$(tsq_stat completions_unseen)" ">" 0
	sysctl -qw kernel.ftrace_enabled=1 || fail "sysctl kernel.ftrace_enabled=1"
	echo 1 >/sys/kernel/tsq_probe/reset
	rr_run "$res/on" "${LOAD[@]}" || fail "two-write run with ftrace back on"
	check "ftrace back on: TX completions timed again ($(tsq_stat txc_samples))" \
		cmp_num "$(tsq_stat txc_samples)" ">" 0
fi
ksft_finish
