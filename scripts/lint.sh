#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lint.sh [KVER...]: the style and warning gate of every C file we own.
#   - scripts/checkpatch.pl --strict --no-tree from the kernel source package
#     (scripts/checkpatch-cache.sh) on all our .c/.h files and patches;
#   - a W=1 build of every module for each KVER (default: all kernels with
#     headers), any compiler warning fails;
#   - sparse (C=2) on our modules when sparse is installed;
#   - the same W=1 (+ sparse) cross build for every arm64 kernel whose headers
#     are unpacked in the cache (scripts/deps.sh arm64-headers, make ARCH=arm64),
#     unless arm64 KVERs are given on the command line (then only those).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
kvers=${*:-$(ls -d /lib/modules/*/build 2>/dev/null | sed 's,/lib/modules/,,;s,/build,,')}
rc=0

checkpatch=$("$top/scripts/checkpatch-cache.sh") || { echo "lint: no checkpatch"; exit 1; }
cd "$top" || exit 1
files=$(git ls-files -co --exclude-standard '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './out/*')
for f in $files; do
	case $f in ena/build-*) continue ;; esac
	if ! out=$("$checkpatch" --strict --no-tree --terse --show-types \
		--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES -f "$f" 2>&1); then
		echo "$out" | grep -v '^total:' ; rc=1
	fi
done
echo "checkpatch --strict: $(echo $files | wc -w) files, $([ $rc -eq 0 ] && echo clean || echo 'problems above')"

# Cross builds: "KVER:KDIR" entries, built with ARCH=arm64.
xheaders=$cache/arm64/headers/usr/src
xkvers=
if ! echo "$kvers" | grep -q -- '-arm64' && [ "$(uname -m)" != aarch64 ] &&
	command -v aarch64-linux-gnu-gcc >/dev/null; then
	for d in "$xheaders"/linux-headers-*-arm64/.tailfix-ready; do
		[ -f "$d" ] || continue
		d=${d%/.tailfix-ready}
		xkvers="$xkvers ${d#"$xheaders"/linux-headers-}:$d"
	done
fi

# make check wants the arm64 builds (TAILFIX_LINT_ARM64=required): their
# absence is a failure there, not a silent pass.
if [ -z "$xkvers" ] && ! echo "$kvers" | grep -q -- '-arm64' && [ "$(uname -m)" != aarch64 ]; then
	echo "lint: no arm64 headers under $xheaders: arm64 builds not checked (scripts/deps.sh arm64-headers)"
	[ "${TAILFIX_LINT_ARM64:-}" != required ] || rc=1
fi

for k in $kvers $xkvers; do
	log=$(mktemp)
	extra=()
	command -v sparse >/dev/null && extra=(C=2)
	kdir=/lib/modules/$k/build
	# An arm64 KVER given by name (make ARCH=arm64 lint) is a cross build too.
	[ -d "$kdir" ] || [ ! -f "$xheaders/linux-headers-$k/.tailfix-ready" ] ||
		k=$k:$xheaders/linux-headers-$k
	case $k in
	*:*) kdir=${k#*:} k=${k%%:*} extra+=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-) ;;
	esac
	if ! KDIR=$kdir scripts/build-modules.sh "$k" "$top/out/lint-$k" W=1 "${extra[@]}" >"$log" 2>&1; then
		cat "$log"; echo "W=1 build failed for $k"; rc=1
	elif grep -E 'warning:|error:' "$log" | grep -v "ena/build-"; then
		echo "W=1/sparse warnings for $k"; rc=1
	else
		echo "W=1$([ -z "$(command -v sparse)" ] || echo ' + sparse') build clean for $k"
	fi
	rm -f "$log"
done
exit $rc
