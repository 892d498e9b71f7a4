#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The patches that exist in both forms are written once, here in
# ena/upstream/, in the form their maintainers take; the build form in
# ena/patches/ is made from them:
#
#	generate.sh           write the build form
#	generate.sh --check   exit 1, naming each file, when the stored build
#	                      form is not what this script writes
#
# amzn-drivers-2.17/000N-*.patch -> ../patches/amzn-2.17/000N-*.patch:
# the same file with the paths of the driver's directory (prepare-source.sh
# applies a series with patch -p1 inside kernel/linux/), so
# kernel/linux/ena/X becomes ena/X in the diff headers and the diffstat.
# The version patch of the build series (tell which build is running) has
# no upstream form and is not touched.
#
# The kernel series are not generated.  Neither carries the drop_doorbells
# counter any more, and net + net-next end in exactly the tree of the 7.3
# build series less its version patch (tests/host/ena_upstream_series.sh
# compares them file for file).  But ena/upstream/net and net-next are made
# on Linux 7.3.4 and patches/7.3 reuses 6.12's files, which are made on
# 6.12's source (other hunk offsets and context) and serve 6.12 as well:
# generating 7.3's series from upstream would add a third copy of the same
# patches rather than remove one, and 6.12's (like 5.10's and 6.1's) cannot
# be generated from a 7.3.4 diff by a change of form alone.
set -u

here=$(cd "$(dirname "$0")" && pwd)
check=0
case ${1:-} in
--check) check=1 ;;
'') ;;
*) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# PAIRS: upstream directory, build directory, path prefix to drop
PAIRS=("amzn-drivers-2.17 amzn-2.17 kernel/linux/")

# build_form PREFIX < upstream patch > build patch
build_form() {
	local p=${1//\//\\/}

	sed -E "s/^(diff --git a\/)$p(.* b\/)$p/\1\2/; s/^(--- a\/|\+\+\+ b\/)$p/\1/;
		/^---$/,/^diff --git /s/^ $p/ /"
}

rc=0
for pair in "${PAIRS[@]}"; do
	read -r up build prefix <<<"$pair"
	n=0
	for src in "$here/$up"/[0-9][0-9][0-9][0-9]-*.patch; do
		[ -f "$src" ] || continue
		dst=$here/../patches/$build/${src##*/}
		n=$((n + 1))
		if [ "$check" = 1 ]; then
			if ! build_form "$prefix" <"$src" | cmp -s - "$dst"; then
				echo "ena generate: patches/$build/${src##*/} is not the build form of upstream/$up/${src##*/} (edit the upstream file, then run ena/upstream/generate.sh)" >&2
				rc=1
			fi
		else
			build_form "$prefix" <"$src" >"$dst" || rc=1
		fi
	done
	[ "$n" -gt 0 ] || { echo "ena generate: no patches in $here/$up" >&2; rc=1; }
done
exit $rc
