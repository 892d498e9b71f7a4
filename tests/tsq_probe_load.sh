#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq_probe loads from updates/dkms with our version, exposes its sysfs files
# with every key its README documents, registers its probes and unloads
# leaving nothing behind, and has no test-only parameter; the tsq-probe-stat
# CLI reads it.
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# it loads and unloads tsq_probe (whose recovery pushes stalled sockets of
# the whole host); a tsq_probe loaded before is reloaded with its
# parameters, one that was not is unloaded.
. "$(dirname "$0")/lib.sh"
require_disruptive "loads and unloads tsq_probe, whose recovery acts on every TCP socket of the host"
require_tsq_probe
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
# The functions tsq_probe puts a kprobe or kretprobe on (tsq_probe/README.md);
# __dev_queue_xmit only where the net_dev_queue tracepoint is missing,
# tcp_wfree only where its ftrace hook is not built (kernels whose headers
# have no struct ftrace_regs, as tsq_probe/Kbuild finds it) or ftrace
# cannot trace it (expected below, once loaded).
PROBED="tcp_push"
XMIT=__dev_queue_xmit
WFREE=tcp_wfree
xmit_expect=kprobe
wfree_expect=kprobe
# (kallsyms lists the tracepoint only with KALLSYMS_ALL, which Debian's
# arm64 kernels lack: tracefs names it too, mounted here if it is not)
if ! mountpoint -q /sys/kernel/tracing && mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
	on_exit "umount /sys/kernel/tracing"
fi
if grep -q ' __tracepoint_net_dev_queue$' /proc/kallsyms ||
	[ -d /sys/kernel/tracing/events/net/net_dev_queue ] ||
	[ -d /sys/kernel/debug/tracing/events/net/net_dev_queue ]; then
	xmit_expect=tracepoint
fi
KPROBES=/sys/kernel/debug/kprobes/list
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"
[ -d /sys/kernel/debug/kprobes ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
ENABLED=$(tracefs_file enabled_functions)
ftraced() { [ -n "$ENABLED" ] && cat "$ENABLED" >"$1"; }
ftraced "$tmp/ft.before"

# The CLI as installed (make install: /usr/local/sbin, a package: /usr/sbin),
# else the checkout's copy; TSQ_PROBE_STAT names another one.
cli=${TSQ_PROBE_STAT:-}
if [ -z "$cli" ]; then
	for c in "$(command -v tsq-probe-stat)" /usr/local/sbin/tsq-probe-stat /usr/sbin/tsq-probe-stat \
		"$TAILFIX_ROOT/tsq_probe/tsq-probe-stat"; do
		[ -n "$c" ] && [ -x "$c" ] && cli=$c && break
	done
fi
log "CLI: ${cli:-none found}"

kprobes=0
cat "$KPROBES" >"$tmp/kp.before" 2>/dev/null && kprobes=1

has_version() { [ "$(modinfo -F version tsq_probe)" = "$ver" ]; }
from_dkms() { dkms_path "$(modinfo -n tsq_probe)"; }
check "modinfo shows version $ver" has_version
# Test hooks are patches the tests apply to a copy (tests/mutants/tsq_probe/):
# the installed module has parameters, none of them a test's.
no_test_param() { modinfo -p tsq_probe | grep -q '^recover:' && ! modinfo -p tsq_probe | grep -qi test; }
check "the installed module has no test-only parameter" no_test_param
check "module file is under DKMS's directory (updates/dkms; extra on the Red Hat family)" from_dkms
check "modprobe tsq_probe" modprobe tsq_probe
hook_built() { grep -q ' wfree_ftrace_hit[[:space:]]*\[tsq_probe\]' /proc/kallsyms; }
hook_not_built() { ! hook_built; }
# ftrace is expected where the module has its ftrace hook for this kernel
# (its callback is in kallsyms: tsq_probe/Kbuild found struct ftrace_regs)
# and ftrace can trace tcp_wfree.
# Without tracefs (not mounted, and mount refused) nobody can say whether
# tcp_wfree is traceable: the hook's attach is then unknown, not kprobe.
if hook_built && [ -z "$ENABLED" ]; then
	wfree_expect=unknown
elif hook_built && grep -q "^$WFREE\( \|$\)" "${ENABLED%/*}/available_filter_functions"; then
	wfree_expect=ftrace
fi
log "expected: xmit_attach=$xmit_expect wfree_attach=$wfree_expect (enabled_functions: ${ENABLED:-none})"
# That expectation trusts the build to have the hook where it should.  The
# running kernel says so itself, apart from the headers tsq_probe/Kbuild
# read: its BTF names struct ftrace_regs where ftrace callbacks get one
# (5.11 on).  Caught: tsq_mutants.sh's mutant 2, the hook left out.
BTF=/sys/kernel/btf/vmlinux
if [ ! -r "$BTF" ]; then
	check_skip "the ftrace hook built as the running kernel's BTF says" "no $BTF on $(uname -r)"
elif tr '\0' '\n' <"$BTF" | grep -qx ftrace_regs; then
	check "the ftrace hook built: the running kernel has struct ftrace_regs (BTF)" hook_built
else
	check "no ftrace hook built: the running kernel has no struct ftrace_regs (BTF)" hook_not_built
fi

mapfile -t keys < <(doc_keys "$TAILFIX_ROOT/tsq_probe/README.md")
log "keys documented in tsq_probe/README.md: ${keys[*]}"
check "stats has every documented key (${#keys[@]})" stats_has_keys /sys/kernel/tsq_probe/stats "${keys[@]}"
check "histograms readable" grep -q '^hist cork_hold_ns' /sys/kernel/tsq_probe/histograms
reset_zeroes() {
	echo 1 >/sys/kernel/tsq_probe/reset &&
	! grep -vE '^(recover|fault_ppm|late_cork_ms|txc_sample) ' /sys/kernel/tsq_probe/stats | grep -qv ' 0$'
}
check "reset zeroes every counter" reset_zeroes
check "xmit_attach reads $xmit_expect (net_dev_queue tracepoint or not)" \
	test "$(cat /sys/module/tsq_probe/parameters/xmit_attach)" = "$xmit_expect"
wfree_now=$(cat /sys/module/tsq_probe/parameters/wfree_attach)
if [ "$wfree_expect" = unknown ]; then
	check "wfree_attach reads ftrace or kprobe (no tracefs: which one is unknown)" \
		grep -qxE 'ftrace|kprobe' <<<"$wfree_now"
else
	check "wfree_attach reads $wfree_expect (ftrace hook built and tcp_wfree traceable, or not)" \
		test "$wfree_now" = "$wfree_expect"
fi
if [ "$wfree_expect" = ftrace ]; then
	ftraced "$tmp/ft.loaded"
	# (what calls the hook: a trampoline of its own, or the ops list)
	log "enabled_functions: $(grep "^$WFREE " "$tmp/ft.loaded" | tr -s '\t ' ' ')"
	check "an ftrace_ops more on $WFREE" \
		cmp_num "$(ftrace_count "$tmp/ft.loaded" $WFREE)" ">" "$(ftrace_count "$tmp/ft.before" $WFREE)"
fi
[ "$wfree_now" = ftrace ] || PROBED="$PROBED $WFREE"
if [ "$kprobes" = 1 ]; then
	cat "$KPROBES" >"$tmp/kp.loaded"
	check "a probe registered on each of $PROBED" kprobes_added "$tmp/kp.before" "$tmp/kp.loaded" $PROBED
	[ "$wfree_expect" = ftrace ] &&
		check "no kprobe on $WFREE (ftrace hooks it)" kprobes_same "$tmp/kp.before" "$tmp/kp.loaded" $WFREE
	if [ "$xmit_expect" = tracepoint ]; then
		check "no kprobe on $XMIT (the tracepoint hooks it)" \
			kprobes_same "$tmp/kp.before" "$tmp/kp.loaded" $XMIT
	else
		check "a kprobe on $XMIT (no tracepoint)" kprobes_added "$tmp/kp.before" "$tmp/kp.loaded" $XMIT
	fi
else
	check_skip "a probe registered on each of $PROBED" "no readable $KPROBES (debugfs)"
fi

check "tsq-probe-stat found (installed or in the checkout)" test -x "$cli"
cli_table() { "$cli" >"$tmp/cli.out" && grep -q '^lost_wakeups ' "$tmp/cli.out"; }
check "tsq-probe-stat prints the counters" cli_table
cli_prom() {
	"$cli" --prometheus >"$tmp/cli.prom" &&
	grep -q '^tsq_probe_lost_wakeups_total 0' "$tmp/cli.prom" &&
	grep -q '^# TYPE tsq_probe_cork_hold_seconds histogram' "$tmp/cli.prom"
}
check "tsq-probe-stat --prometheus prints counters and histograms" cli_prom
check "rmmod tsq_probe" modprobe -r tsq_probe
cli_unloaded() {
	local rc=0

	"$cli" >"$tmp/cli.out" 2>&1 || rc=$?
	[ "$rc" -eq 1 ] && grep -q 'not found: is tsq_probe loaded' "$tmp/cli.out" ||
		{ log "exit $rc: $(head -2 "$tmp/cli.out")"; return 1; }
}
check "tsq-probe-stat exits 1 and says the module is not loaded" cli_unloaded
check "sysfs directory gone after unload" test ! -e /sys/kernel/tsq_probe
if [ "$kprobes" = 1 ]; then
	cat "$KPROBES" >"$tmp/kp.after"
	check "no kprobe left registered" kprobes_same "$tmp/kp.before" "$tmp/kp.after" $PROBED $XMIT $WFREE
else
	check_skip "no kprobe left registered" "no readable $KPROBES (debugfs)"
fi
if [ -n "$ENABLED" ]; then
	ftraced "$tmp/ft.after"
	check "no ftrace_ops left on $WFREE" \
		cmp_num "$(ftrace_count "$tmp/ft.after" $WFREE)" "==" "$(ftrace_count "$tmp/ft.before" $WFREE)"
fi
if [ "$wfree_expect" = kprobe ]; then
	check "wfree_attach=ftrace refused where it is not available, with its reason" \
		refused_load "wfree_attach=ftrace: cannot attach to tcp_wfree through ftrace" wfree_attach=ftrace
elif [ "$wfree_expect" = unknown ]; then
	check_skip "wfree_attach=ftrace refused where it is not available" \
		"tracefs not mounted: whether tcp_wfree is traceable is unknown"
fi

# The fallbacks, asked for: kprobes on __dev_queue_xmit and tcp_wfree that
# time TX completions and cork holds as the default hooks do
# (tsq_probe_counters.sh checks the default attach under the same workload).
check "modprobe tsq_probe xmit_attach=kprobe wfree_attach=kprobe" \
	modprobe tsq_probe xmit_attach=kprobe wfree_attach=kprobe
check "xmit_attach and wfree_attach read kprobe" \
	test "$(cat /sys/module/tsq_probe/parameters/xmit_attach) $(cat /sys/module/tsq_probe/parameters/wfree_attach)" = "kprobe kprobe"
if [ "$kprobes" = 1 ]; then
	cat "$KPROBES" >"$tmp/kp.forced"
	check "xmit_attach=kprobe wfree_attach=kprobe: a kprobe on $XMIT and on $WFREE" \
		kprobes_added "$tmp/kp.before" "$tmp/kp.forced" $XMIT $WFREE
fi
if command -v tc >/dev/null && [ -x "$TOOLS_DIR/tailrr" ]; then
	rr_setup
	echo 1 >/sys/kernel/tsq_probe/reset
	check "xmit_attach=kprobe: two-write traffic" rr_run "$tmp/rr" --requests 200 --rate 80 --conns 2
	log "stats: $(tr '\n' ' ' </sys/kernel/tsq_probe/stats)"
	check "xmit_attach=kprobe: TX completions timed" cmp_num "$(tsq_stat txc_samples)" ">" 0
	# A cork needs the first write's skb still below TCP at the second
	# write; on a slow (debug) kernel the completion can win every time.
	# No autocork, no cork to time: say so.
	for try in 2 3; do
		cmp_num "$(tsq_stat autocork)" "==" 0 2>/dev/null || break
		log "run $((try - 1)): no autocork (wakeup_checks $(tsq_stat wakeup_checks)): run $try of 3"
		rr_run "$tmp/rr" --requests 200 --rate 80 --conns 2 || break
	done
	if cmp_num "$(tsq_stat autocork)" "==" 0 2>/dev/null; then
		check_skip "xmit_attach=kprobe: cork holds timed" \
			"no autocork in 3 runs: each TX completion came before the second write"
	else
		check "xmit_attach=kprobe: cork holds timed" \
			cmp_num "$(tsq_stat cork_samples)" ">" 0
	fi
else
	check_skip "xmit_attach=kprobe: traffic timed" "no tc or tests/tools/tailrr"
fi
check "rmmod tsq_probe (xmit_attach=kprobe)" modprobe -r tsq_probe
if [ "$kprobes" = 1 ]; then
	cat "$KPROBES" >"$tmp/kp.after2"
	check "xmit_attach=kprobe: no kprobe left registered" \
		kprobes_same "$tmp/kp.before" "$tmp/kp.after2" $PROBED $XMIT $WFREE
fi
ksft_finish
