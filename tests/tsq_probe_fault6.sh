#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq_probe_fault.sh over IPv6: the same baseline, recover=0 and recover=1
# runs and the same checks, with the client and server speaking IPv6 (the
# xmit hook finds the TCP header behind an IPv6 header to stop the cork
# clock; the recovery path is the same socket code).
# taint-expected: N (tsq_probe taints TAINT_TEST when it injects a fault)
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why):
# fault injection hits every TCP socket of the host; a tsq_probe loaded
# before is reloaded with its parameters, one that was not is unloaded.
# 600 requests (the IPv4 run has 1200): the same checks, half the guest time.
RR_FAMILY=6 TSQ_FAULT_REQUESTS=${TSQ_FAULT_REQUESTS:-600} exec bash "$(dirname "$0")/tsq_probe_fault.sh"
