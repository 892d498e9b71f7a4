#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make lint as a test: checkpatch --strict --no-tree on all our C, W=1 (and
# sparse) builds of every module for every kernel with headers here.
. "$(dirname "$0")/../lib.sh"
ls -d /lib/modules/*/build >/dev/null 2>&1 || skip "no kernel headers installed"
"$TAILFIX_ROOT/scripts/lint.sh" 2>&1 | sed 's/^/# /'
exit "${PIPESTATUS[0]}"
