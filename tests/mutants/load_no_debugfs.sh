#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Fake for tsq_probe_load.sh: no debugfs (unmounted, and mount fails).  The
# kprobe checks must say SKIP, not pass.
cd "$(dirname "$0")/.." || exit 1
. ./lib.sh
require_disruptive "unmounts debugfs, runs tsq_probe_load.sh"
umount /sys/kernel/debug 2>/dev/null
bin=$(mktemp -d)
printf '#!/bin/sh\nexit 32\n' >"$bin/mount"
chmod +x "$bin/mount"
out=$(PATH=$bin:$PATH ./tsq_probe_load.sh 2>&1)
rc=$?
rm -rf "$bin"
printf '%s\n' "$out" | sed 's/^/# /'
[ "$rc" -eq 0 ] && [ "$(grep -c '^ok [0-9]* .*kprobe.* # SKIP no readable' <<<"$out")" -eq 1 ] &&
	[ "$(grep -c '^ok [0-9]* a probe registered .* # SKIP no readable' <<<"$out")" -eq 1 ]
