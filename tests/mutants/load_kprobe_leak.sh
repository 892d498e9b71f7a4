#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Mutant for tsq_probe_load.sh: a kprobe on tcp_wfree stays registered after
# `modprobe -r tsq_probe` (a kprobe event added by a modprobe wrapper stands
# in for a probe the module forgot).  Passes when the test catches it.
cd "$(dirname "$0")/.." || exit 1
real=$(command -v modprobe)
bin=$(mktemp -d)
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing || exit 4
cat >"$bin/modprobe" <<EOS
#!/bin/sh
$real "\$@"; rc=\$?
[ "\$1 \$2" = "-r tsq_probe" ] && echo 'p:tfmut/leak tcp_wfree' >>/sys/kernel/tracing/kprobe_events 2>/dev/null
exit \$rc
EOS
chmod +x "$bin/modprobe"
out=$(PATH=$bin:$PATH ./tsq_probe_load.sh 2>&1)
rc=$?
echo '-:tfmut/leak' >>/sys/kernel/tracing/kprobe_events
rm -rf "$bin"
printf '%s\n' "$out" | sed 's/^/# /'
[ "$rc" -eq 1 ] && grep -q '^ok [0-9]* a probe registered on each' <<<"$out" &&
	grep -q '^not ok [0-9]* no kprobe left registered' <<<"$out"
