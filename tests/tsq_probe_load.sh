#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq_probe loads from updates/dkms with our version, exposes its sysfs files
# with every documented key, and unloads leaving nothing behind.
. "$(dirname "$0")/lib.sh"
require_tsq_probe
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")

has_version() { [ "$(modinfo -F version tsq_probe)" = "$ver" ]; }
from_dkms() { modinfo -n tsq_probe | grep -q '/updates/dkms/'; }
check "modinfo shows version $ver" has_version
check "module file is under updates/dkms" from_dkms
check "modprobe tsq_probe" modprobe tsq_probe
keys_present() {
	local k
	for k in autocork lost_wakeups recoveries recoveries_idle wakeup_checks owner_pushes \
		faults_injected txc_samples cork_samples probes_missed recover fault_ppm; do
		grep -q "^$k [0-9]*$" /sys/kernel/tsq_probe/stats || { log "missing key $k"; return 1; }
	done
}
check "stats has every documented key" keys_present
check "histograms readable" grep -q '^hist cork_hold_ns' /sys/kernel/tsq_probe/histograms
reset_zeroes() {
	echo 1 >/sys/kernel/tsq_probe/reset &&
	! grep -vE '^(recover|fault_ppm) ' /sys/kernel/tsq_probe/stats | grep -qv ' 0$'
}
check "reset zeroes every counter" reset_zeroes
cli=$TAILFIX_ROOT/tsq_probe/tsq-probe-stat
check "tsq-probe-stat prints the counters" bash -c "'$cli' | grep -q '^lost_wakeups '"
check "tsq-probe-stat --prometheus prints counters and histograms" \
	bash -c "'$cli' --prometheus | grep -q '^tsq_probe_lost_wakeups_total 0' &&
		 '$cli' --prometheus | grep -q '^# TYPE tsq_probe_cork_hold_seconds histogram'"
check "rmmod tsq_probe" modprobe -r tsq_probe
check "tsq-probe-stat says the module is not loaded" bash -c "! '$cli' 2>&1 | grep -q '^autocork'"
check "sysfs directory gone after unload" test ! -e /sys/kernel/tsq_probe
no_probe_left() { ! grep -qs tsq_probe /sys/kernel/debug/kprobes/list; }
mount -t debugfs none /sys/kernel/debug 2>/dev/null
check "no kprobe left registered" no_probe_left
ksft_finish
