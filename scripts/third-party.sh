#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# third-party.sh amzn|packetdrill: print the third-party source tarball that
# tests and the guest images build from (never copied into the project):
#   amzn         Amazon's amzn-drivers ENA release (ena/README.md, "Which
#                source gives what"); TAILFIX_AMZN_TARBALL overrides;
#   packetdrill  Google's packetdrill (tests/tools/build-packetdrill.sh);
#                TAILFIX_PACKETDRILL_TARBALL overrides.
# Else the newest in the project's ../shared/third_party (or
# /work/shared/third_party).  Exit 1, nothing printed, when there is none.
top=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in
amzn) over=${TAILFIX_AMZN_TARBALL:-} glob='amzn-drivers-ena_linux_*.tar.*' ;;
packetdrill) over=${TAILFIX_PACKETDRILL_TARBALL:-} glob='packetdrill-*.tar.*' ;;
*) echo "usage: $0 amzn|packetdrill" >&2; exit 2 ;;
esac
if [ -n "$over" ]; then
	[ -r "$over" ] && echo "$over"
	exit
fi
t=$(ls "$top"/../shared/third_party/$glob /work/shared/third_party/$glob 2>/dev/null |
	sort -V | tail -n1)
[ -n "$t" ] && [ -r "$t" ] && echo "$t"
