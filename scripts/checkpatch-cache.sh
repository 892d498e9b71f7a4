#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch-cache.sh: print the path of a checkpatch.pl that can run, the
# kernel's scripts/checkpatch.pl (with the spelling.txt and
# const_structs.checkpatch it reads) taken once from the newest
# /usr/src/linux-source-*.tar.xz into the cache.  Callers that run at the
# same time (lint.sh, tests/host/dctcp_upstream.sh in another lane) wait
# for one extraction under the cache's lock; none sees half a copy.
# Exit 1 with the reason on stderr when there is no kernel source.
set -uo pipefail
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
cp_dir=$cache/checkpatch
mkdir -p "$cache" || exit 1
exec 9>"$cp_dir.lock"
flock 9
if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -1)
	[ -n "$tarball" ] || { echo "no /usr/src/linux-source-*.tar.xz (apt-get install linux-source-6.12)" >&2; exit 1; }
	base=$(basename "$tarball" .tar.xz)
	tmp=$(mktemp -d "$cache/checkpatch.XXXXXX") || exit 1
	if ! tar -xJf "$tarball" -C "$tmp" --strip-components=1 "$base/scripts/checkpatch.pl" \
		"$base/scripts/spelling.txt" "$base/scripts/const_structs.checkpatch"; then
		rm -rf "$tmp"
		echo "cannot take scripts/checkpatch.pl out of $tarball" >&2
		exit 1
	fi
	rm -rf "$cp_dir"
	mv "$tmp" "$cp_dir"
fi
echo "$cp_dir/scripts/checkpatch.pl"
