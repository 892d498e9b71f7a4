#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the ENA fixes as a series for a kernel tree, to apply with git am:
#
#	write-series.sh OUT 'Name <address>' [SIGNOFF] [TREE]
#
# TREE is linux (the default) or amzn-drivers.  The series in linux-6.12/
# is the build series of ../patches/6.12 in the form upstream takes: full
# paths (drivers/net/ethernet/amazon/ena/...), one logical change per patch
# (the drop_doorbells counter separate from the doorbell fix), Suggested-by
# where the idea was Eric Dumazet's, a Link: to the discussion.  The series
# in amzn-drivers-2.17/ is, in the same form, the build series of
# ../patches/amzn-2.17 without its version patch, for Amazon's repository
# (full paths kernel/linux/ena/...; the doorbell fix is already there, so
# it starts with the counter).  It carries no author and no Signed-off-by: the
# person who sends it is the author (the From: of every patch becomes
# 'Name <address>'), and SIGNOFF=1 adds that person's Signed-off-by, the
# Developer's Certificate of Origin, which only they can give.  OUT gets
# the patches and nothing else; an OUT that has .patch files is refused.
set -u

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-} from=${2:-} signoff=${3:-0} tree=${4:-linux}

die() { echo "ena upstream: $*" >&2; exit 1; }

[ -n "$out" ] || die "usage: make -C ena upstream FROM='Name <address>' [SIGNOFF=1] [UPSTREAM_TREE=linux|amzn-drivers] [UPSTREAM_OUT=dir]"
[ -n "$from" ] ||
	die "set FROM='Your Name <you@example.org>': the patches are yours to send"
[[ $from =~ ^[^\<\>@]*[[:alpha:]][^\<\>@]*\ \<[^\<\>[:space:]]+@[^\<\>[:space:]]+\>$ ]] ||
	die "FROM='$from' is not 'Name <address>'"
case $signoff in 0|1|'') ;; *) die "SIGNOFF=$signoff: 1 adds your Signed-off-by, 0 (default) does not" ;; esac
case $tree in
linux) dir=linux-6.12 what="drivers/net/ethernet/amazon/ena (base: linux-source-6.12)" ;;
amzn-drivers) dir=amzn-drivers-2.17 what="kernel/linux/ena of amzn-drivers (base: release 2.17.0)" ;;
*) die "UPSTREAM_TREE=$tree: linux (the default) or amzn-drivers" ;;
esac
if [ -d "$out" ] && compgen -G "$out/*.patch" >/dev/null; then
	die "$out already has .patch files: give an empty UPSTREAM_OUT"
fi
mkdir -p "$out" || die "cannot create $out"

n=0
for p in "$here/$dir"/[0-9][0-9][0-9][0-9]-*.patch; do
	# From: is the second line; a Signed-off-by goes after the last
	# trailer, before the "---" that ends the message.
	awk -v from="$from" -v so="$signoff" '
		NR == 2 && /^From: / { print "From: " from; next }
		!done && /^---$/ { if (so == 1) print "Signed-off-by: " from; done = 1 }
		{ print }' "$p" >"$out/${p##*/}" || die "cannot write $out/${p##*/}"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || die "no patches in $here/$dir"
echo "ena upstream: $n patches for $what in $out"
