#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# run-guest.sh OUTDIR: every benchmark, inside one guest run (make bench).
cd "$(dirname "$0")" || exit 1
rc=0
./tsq_bench.sh "$1/tsq" || rc=1
# BENCH_ONLY=tsq (TAILFIX_GUEST_ENV): the tsq_probe benchmark alone
if [ -x ./dctcp_rpc.sh ] && [ "${BENCH_ONLY:-}" != tsq ]; then
	SECS=${DCTCP_BENCH_SECS:-60} ./dctcp_rpc.sh "$1/dctcp" || rc=1
fi
exit $rc
