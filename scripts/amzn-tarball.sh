#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# amzn-tarball.sh: print the amzn-drivers release tarball that tests and the
# guest image build ena from (ena/README.md, "Which source gives what"):
# TAILFIX_AMZN_TARBALL, else the newest in the project's ../shared/third_party
# (or /work/shared/third_party).  Exit 1, nothing printed, when there is none.
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${TAILFIX_AMZN_TARBALL:-}" ]; then
	[ -r "$TAILFIX_AMZN_TARBALL" ] && echo "$TAILFIX_AMZN_TARBALL"
	exit
fi
t=$(ls "$top"/../shared/third_party/amzn-drivers-ena_linux_*.tar.* \
	/work/shared/third_party/amzn-drivers-ena_linux_*.tar.* 2>/dev/null | sort -V | tail -n1)
[ -n "$t" ] && [ -r "$t" ] && echo "$t"
