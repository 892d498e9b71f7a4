#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dctcp_mutants.sh's mutant 9 alone, with its control: under Accurate ECN
# the window's CE share taken as 0 must fail dctcp_fixed_accecn.sh, and the
# real module rebuilt must pass it.  For the 7.x guest, the kernel line
# with Accurate ECN (net.ipv4.tcp_ecn=3); the other mutants' subjects are
# judged by check-full's runs of dctcp_mutants.sh in 6.1 and 6.12.
# Disruptive (dctcp_mutants.sh's switch and restore).
DCTCP_MUTANTS=9 exec "$(dirname "$0")/dctcp_mutants.sh"
