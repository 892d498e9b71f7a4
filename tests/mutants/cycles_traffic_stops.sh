#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Mutant for tsq_probe_cycles.sh: the client stops (SIGSTOP: alive for
# kill -0, but no traffic) at the 3rd load of 6.  Passes when the test fails
# on traffic progress.
# taint-expected: N (tsq_probe_cycles.sh injects faults, which taints TAINT_TEST)
cd "$(dirname "$0")/.." || exit 1
. ./lib.sh
require_disruptive "runs tsq_probe_cycles.sh, which injects faults into every TCP socket, and stops its client"
real=$(command -v modprobe)
bin=$(mktemp -d)
cat >"$bin/modprobe" <<EOS
#!/bin/bash
if [ "\$1" = tsq_probe ]; then
	n=\$((\$(cat $bin/n 2>/dev/null || echo 0) + 1)); echo \$n >$bin/n
	if [ \$n -eq 3 ]; then
		for p in \$(pgrep -f 'tailrr client'); do kill -STOP \$p; echo \$p >>$bin/stopped; done
		# resume it later, or the test's final kill/wait would hang
		(sleep 150; for p in \$(cat $bin/stopped); do kill -CONT \$p; done) >/dev/null 2>&1 &
	fi
fi
exec $real "\$@"
EOS
chmod +x "$bin/modprobe"
out=$(PATH=$bin:$PATH TSQ_CYCLES=6 ./tsq_probe_cycles.sh 2>&1)
rc=$?
for p in $(cat "$bin/stopped" 2>/dev/null); do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
printf '%s\n' "$out" | sed 's/^/# /'
echo "# stopped: $(cat "$bin/stopped" 2>/dev/null | tr '\n' ' ')"
rm -rf "$bin"
[ "$rc" -eq 1 ] && grep -q '^not ok [0-9]* traffic progressed in every cycle' <<<"$out" &&
	grep -q '^not ok [0-9]* traffic still flowing after the cycles' <<<"$out"
