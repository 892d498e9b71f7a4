#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# run-guest.sh OUTDIR: every benchmark, inside one guest run (make bench).
# BENCH_ONLY=tsq|tsq_cost|dctcp|dctcp_delack (TAILFIX_GUEST_ENV): that
# benchmark alone;
# BENCH_ONLY=tsq_cost_icount (only then: a guest booted with
# TAILFIX_VM_ICOUNT=1, see tsq_cost_icount.sh); BENCH_ONLY=tsq_cost_parts
# the same with one arm per tsq_probe part emptied or left out
# (bench/cost-parts/*.patch), three rounds.
# taint-expected: N (tsq_bench.sh's fault runs: tsq_probe taints TAINT_TEST)
cd "$(dirname "$0")" || exit 1
rc=0
want() { [ -z "${BENCH_ONLY:-}" ] || [ "$BENCH_ONLY" = "$1" ]; }
if want tsq; then
	./tsq_bench.sh "$1/tsq" || rc=1
fi
if want tsq_cost; then
	./tsq_cost.sh "$1/tsq-cost" || rc=1
fi
if [ "${BENCH_ONLY:-}" = tsq_cost_icount ]; then
	./tsq_cost_icount.sh "$1/tsq-cost-icount" || rc=1
fi
if [ "${BENCH_ONLY:-}" = tsq_cost_parts ]; then
	TSQ_COST_ROUNDS=3 TSQ_COST_ARMS="off tp $(ls cost-parts/*.patch | sed 's|cost-parts/|part-|; s|\.patch$||' | tr '\n' ' ')" \
		./tsq_cost_icount.sh "$1/tsq-cost-parts" || rc=1
fi
if want dctcp && [ -x ./dctcp_rpc.sh ]; then
	SECS=${DCTCP_BENCH_SECS:-20} ROUNDS=${DCTCP_BENCH_ROUNDS:-5} ./dctcp_rpc.sh "$1/dctcp" || rc=1
fi
if want dctcp_delack; then
	./dctcp_delack.sh "$1/dctcp-delack" || rc=1
fi
exit $rc
