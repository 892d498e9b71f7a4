#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Mutants for tsq_probe_load.sh: a hook on tcp_wfree stays after
# `modprobe -r tsq_probe`, standing in for one the module forgot, added by
# a modprobe wrapper:
#   kprobe  a kprobe event on tcp_wfree;
#   ftrace  the function tracer filtered to tcp_wfree (an ftrace_ops).
# Passes when the test catches each (and the probes were there while
# loaded); the tracing state is put back either way.
cd "$(dirname "$0")/.." || exit 1
. ./lib.sh
require_disruptive "hooks tcp_wfree with a kprobe and the function tracer, runs tsq_probe_load.sh"
real=$(command -v modprobe)
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T || exit 4
rc=0
for leak in kprobe ftrace; do
	case $leak in
	kprobe)
		add="echo 'p:tfmut/leak tcp_wfree' >>$T/kprobe_events"
		undo() { echo '-:tfmut/leak' >>$T/kprobe_events; }
		want='no kprobe left registered' ;;
	ftrace)
		add="echo tcp_wfree >$T/set_ftrace_filter && echo function >$T/current_tracer"
		undo() { echo nop >$T/current_tracer; echo >$T/set_ftrace_filter; }
		want='no ftrace_ops left on tcp_wfree' ;;
	esac
	bin=$(mktemp -d)
	cat >"$bin/modprobe" <<EOS
#!/bin/sh
$real "\$@"; rc=\$?
[ "\$1 \$2" = "-r tsq_probe" ] && { $add; } 2>/dev/null
exit \$rc
EOS
	chmod +x "$bin/modprobe"
	out=$(PATH=$bin:$PATH ./tsq_probe_load.sh 2>&1)
	trc=$?
	undo 2>/dev/null
	rm -rf "$bin"
	printf '%s\n' "$out" | sed "s/^/# $leak: /"
	if [ "$trc" -eq 1 ] && grep -q '^ok [0-9]* a probe registered on each' <<<"$out" &&
		grep -q "^not ok [0-9]* $want" <<<"$out"; then
		echo "# $leak leak: caught ($want)"
	else
		echo "# $leak leak: NOT caught (exit $trc)"
		rc=1
	fi
done
exit $rc
