#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Mutant for tsq_probe_load.sh: the CLI is missing.  Passes when the test
# fails and names the CLI checks.
cd "$(dirname "$0")/.." || exit 1
. ./lib.sh
require_disruptive "runs tsq_probe_load.sh, which loads and unloads tsq_probe"
out=$(TSQ_PROBE_STAT=/nonexistent/tsq-probe-stat ./tsq_probe_load.sh 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
[ "$rc" -eq 1 ] && grep -q '^not ok [0-9]* tsq-probe-stat found' <<<"$out" &&
	grep -q '^not ok [0-9]* tsq-probe-stat exits 1 and says the module is not loaded' <<<"$out"
