#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A tsq_probe the host had loaded (recover=0): without TAILFIX_DISRUPTIVE
# tsq_probe_load.sh skips and leaves it alone; with it, the test runs and
# reloads it with recover=0 afterwards.
cd "$(dirname "$0")/.." || exit 1
. ./lib.sh
require_disruptive "unloads tsq_probe and loads it with recover=0"
modprobe -r tsq_probe 2>/dev/null
modprobe tsq_probe recover=0 || skip "tsq_probe not installed"
on_exit modprobe -r tsq_probe
out=$(env -u TAILFIX_DISRUPTIVE ./tsq_probe_load.sh 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# nd: /'
check "not disruptive: skipped" test "$rc" -eq 4
check "not disruptive: still loaded, recover=N" test "$(cat /sys/module/tsq_probe/parameters/recover)" = N
out=$(TAILFIX_DISRUPTIVE=1 ./tsq_probe_load.sh 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# d: /'
check "disruptive: the test ran and passed" test "$rc" -eq 0
check "disruptive: reloaded afterwards with recover=N" test "$(cat /sys/module/tsq_probe/parameters/recover 2>/dev/null)" = N
ksft_finish
