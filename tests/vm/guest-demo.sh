#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# guest-demo.sh OUTDIR: `make demo` inside the guest -- the two-write
# workload with 30% of TX completions missing TSQ_THROTTLED, recovery off
# then on, beside a no-fault run; no cost measurement.
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
cd "$(dirname "$0")/../.." || exit 1
TSQ_COST_SECONDS=0 bench/tsq_bench.sh "$1/demo" "${TAILFIX_DEMO_REQUESTS:-1500}"
