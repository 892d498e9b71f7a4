#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build-packetdrill.sh OUT [CC]: build Google's packetdrill from its source
# tarball (scripts/third-party.sh packetdrill; read, never copied into the
# project) into OUT, statically linked with CC (default gcc; the guests'
# arm64 build passes aarch64-linux-gnu-gcc).  Needs bison and flex.  An
# existing OUT built from the same tarball with the same CC is kept.
# Exit 1 with one line on stderr when there is no tarball or it does not
# build; tests/dctcp_fixed_packetdrill.sh then has no packetdrill.
#
# One change is made to the source at build time: this packetdrill's
# struct tcp_info has fields newer than 6.1 and 6.12, and its %{ }% blocks
# assert that the kernel returned at least that much.  The buffer is
# zeroed before getsockopt(), so a field the kernel lacks reads 0; the
# assertion is relaxed to "the kernel returned tcp_info" (the scripts read
# only fields every kernel of the matrix has: ca_state, cwnd, ssthresh).
set -euo pipefail
out=${1:?usage: build-packetdrill.sh OUT [CC]}
cc=${2:-gcc}
here=$(cd "$(dirname "$0")" && pwd)
tar=$("$here/../../scripts/third-party.sh" packetdrill) ||
	{ echo "build-packetdrill.sh: no packetdrill source tarball (scripts/third-party.sh)" >&2; exit 1; }
stamp="$(basename "$tar") $(stat -c %s "$tar") $cc tcp_info-relaxed"
if [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xf "$tar"
src=$(dirname "$(find "$work" -path '*/gtests/net/packetdrill/configure' | head -1)")
[ -d "$src" ] || { echo "build-packetdrill.sh: no gtests/net/packetdrill in $tar" >&2; exit 1; }
want='assert(len >= sizeof(struct _tcp_info));'
grep -qF "$want" "$src/code.c" ||
	{ echo "build-packetdrill.sh: code.c has no '$want' to relax (another packetdrill?)" >&2; exit 1; }
sed -i "s/$want/assert(len > 0);/" "$src/code.c"
if ! (cd "$src" && ./configure >/dev/null &&
	make -s CC="$cc" packetdrill-ext-libs="-static -lpthread -lrt -ldl" packetdrill) \
	>"$work/build.log" 2>&1; then
	tail -5 "$work/build.log" >&2
	echo "build-packetdrill.sh: packetdrill did not build with $cc (from $tar)" >&2
	exit 1
fi
mkdir -p "$(dirname "$out")"
cp "$src/packetdrill" "$out"
echo "$stamp" >"$out.stamp"
