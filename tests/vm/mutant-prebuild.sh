#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Test builds made when a guest disk is staged, so that a guest does not
# compile under emulation what the host compiles in seconds.
#
#   mutant-prebuild.sh key SRC DIR [PATCH...]
#	the build's key: a hash of the DKMS source SRC's dkms.conf and DIR/
#	and of each PATCH, in order (none: the unpatched module).  tests/lib.sh's mutant_build takes
#	tests/mutants/prebuilt/$(uname -r)/KEY.ko instead of building when it is there.
#   mutant-prebuild.sh build ROOT SRC DIR MOD KVER OUT [PATCH...]
#	SRC's DIR copied, each PATCH applied, MOD built against KVER's
#	headers inside the root ROOT (a chroot: the guest's own compiler),
#	put in ROOT/OUT/KVER/KEY.ko.  SRC and OUT are paths inside ROOT.
#
# The key covers everything the build reads, so a test takes a prebuilt
# module only when building it there would give the same module.  Used by
# tests/vm/stage.sh (TAILFIX_STAGE_MUTANTS) and tests/lib.sh; the prebuilt
# tree is only ever on a staged guest disk (tests/mutants/prebuilt/ there).
set -euo pipefail

key() {
	local src=$1 dir=$2 f

	shift 2
	{
		cat "$src/dkms.conf"
		(cd "$src" && find "$dir" -type f | LC_ALL=C sort) | while read -r f; do
			echo "== $f"
			cat "$src/$f"
		done
		for f in "$@"; do
			echo "== patch"
			cat "$f"
		done
	} | sha256sum | cut -c1-16
}

case ${1:-} in
key)
	shift
	[ $# -ge 2 ] || { echo "usage: mutant-prebuild.sh key SRC DIR [PATCH...]" >&2; exit 2; }
	key "$@"
	;;
build)
	shift
	[ $# -ge 6 ] || { echo "usage: mutant-prebuild.sh build ROOT SRC DIR MOD KVER OUT [PATCH...]" >&2; exit 2; }
	root=$1 src=$2 dir=$3 mod=$4 kver=$5 out=$6
	shift 6
	k=$(key "$root$src" "$dir" "$@")
	tmp=$(mktemp -d "$root/tmp/prebuild.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	cp -r "$root$src/$dir" "$root$src/dkms.conf" "$tmp/"
	for p in "$@"; do
		patch -s -p1 -d "$tmp" <"$p" || { echo "mutant-prebuild.sh: $p does not apply" >&2; exit 1; }
	done
	chroot "$root" make -s -C "/lib/modules/$kver/build" M="${tmp#"$root"}/$dir" modules >&2
	mkdir -p "$root$out/$kver"
	cp "$tmp/$dir/$mod.ko" "$root$out/$kver/$k.ko"
	echo "$out/$kver/$k.ko"
	;;
*)
	echo "usage: mutant-prebuild.sh key|build ..." >&2
	exit 2
	;;
esac
