#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dctcp_mutants.sh's Accurate ECN mutants alone, with their control: under
# Accurate ECN the window's CE share taken as 0 (mutant 9, the sender's
# alpha) and the core's ACK on a CE change taken back (mutant 10, the
# receiver's change-triggered ACKs) must each fail dctcp_fixed_accecn.sh,
# and the real module rebuilt must pass it.  For the 7.x guest, the kernel line
# with Accurate ECN (net.ipv4.tcp_ecn=3); the other mutants' subjects are
# judged by check-full's runs of dctcp_mutants.sh in 6.1 and 6.12.
# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says
# why); dctcp_mutants.sh puts the real module back at exit.
. "$(dirname "$0")/../lib.sh"
require_root
require_disruptive "replaces the installed tcp_dctcp_fixed module"
DCTCP_MUTANTS="9 10" exec "$TESTS_DIR/mutants/dctcp_mutants.sh"
