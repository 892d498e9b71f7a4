#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tsq_cost_icount.sh OUTDIR: tsq_probe's cost counted in guest instructions
# (make bench: a guest booted with tests/vm/run.sh TAILFIX_VM_ICOUNT=1,
# QEMU -icount shift=0,sleep=off, one vCPU).  Guest time then advances one
# nanosecond per guest instruction, so a throughput measured in the guest is
# work per instruction, whatever the host's load; the ratio loaded / not
# loaded is the module's share of the CPU work.  tsq_cost.sh's workloads
# over a veth pair, arms off (not loaded) and tp (its defaults), five
# rounds of rotated pairs:
#   stream  iperf3 -N -l 64, 1 s;
#   rr      tailrr --closed, one connection, 1 s
# (1 s of guest time is 1e9 instructions, tens of thousands of packets;
# under icount a guest second takes tens of host seconds).
# summary.txt: per workload, throughput off and on, the ratio, guest
# instructions per packet off and on, the extra per hook hit, the spread,
# and "target <= 2% more instructions per packet: met" or "NOT met".
# Without instruction counting it skips (exit 4): those would be wall-time
# figures, tsq_cost.sh's.  Settings: tsq_cost.sh's TSQ_COST_* variables.
export TSQ_COST_ICOUNT=1
export TSQ_COST_ROUNDS=${TSQ_COST_ROUNDS:-5}
export TSQ_COST_STREAM_SECONDS=${TSQ_COST_STREAM_SECONDS:-1}
export TSQ_COST_RR_SECONDS=${TSQ_COST_RR_SECONDS:-1}
export TSQ_COST_ARMS=${TSQ_COST_ARMS:-off:tp}
exec "$(dirname "$0")/tsq_cost.sh" "$@"
