#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the ENA fixes as patches to mail, from the sender's identity:
#
#	write-series.sh OUT 'Name <address>' [SIGNOFF] [TREE]
#
# TREE is one of
#   net           net/: the drop-path doorbell fix, a bug fix for the net
#                 tree (Fixes:), with its cover letter;
#   net-next      net-next/: the u64_stats_sync ownership and ordering
#                 series, with its cover letter;
#   linux         (the default) both, as OUT/net and OUT/net-next;
#   amzn-drivers  amzn-drivers-2.17/: the same fixes for Amazon's
#                 repository (kernel/linux/ena/...), where the doorbell fix
#                 is already in and the series starts with its counter.
# The stored files carry no author and no Signed-off-by: the person who
# sends them is the author.  Every patch and cover letter gets 'From: Name
# <address>'; SIGNOFF=1 adds that person's Signed-off-by (the Developer's
# Certificate of Origin, which only they can give) to each patch, not to a
# cover letter.  OUT gets the files and nothing else; an OUT (or OUT/net,
# OUT/net-next) that already has .patch files is refused.  See README.
set -u

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-} from=${2:-} signoff=${3:-0} tree=${4:-linux}

die() { echo "ena upstream: $*" >&2; exit 1; }

[ -n "$out" ] || die "usage: make -C ena upstream FROM='Name <address>' [SIGNOFF=1] [UPSTREAM_TREE=linux|net|net-next|amzn-drivers] [UPSTREAM_OUT=dir]"
[ -n "$from" ] ||
	die "set FROM='Your Name <you@example.org>': the patches are yours to send"
[[ $from =~ ^[^\<\>@]*[[:alpha:]][^\<\>@]*\ \<[^\<\>[:space:]]+@[^\<\>[:space:]]+\>$ ]] ||
	die "FROM='$from' is not 'Name <address>'"
case $signoff in 0|1|'') ;; *) die "SIGNOFF=$signoff: 1 adds your Signed-off-by, 0 (default) does not" ;; esac
case $tree in
linux) dirs="net net-next" ;;
net|net-next) dirs=$tree ;;
amzn-drivers) dirs=amzn-drivers-2.17 ;;
*) die "UPSTREAM_TREE=$tree: linux (the default: net and net-next), net, net-next or amzn-drivers" ;;
esac

# dest DIR: where the files of DIR go
dest() { if [ "$tree" = linux ]; then echo "$out/$1"; else echo "$out"; fi; }

for d in $dirs; do
	o=$(dest "$d")
	if [ -d "$o" ] && compgen -G "$o/*.patch" >/dev/null; then
		die "$o already has .patch files: give an empty UPSTREAM_OUT"
	fi
	# a stored file with an identity of its own would be sent under it
	grep -l '^From: ' "$here/$d"/[0-9][0-9][0-9][0-9]-*.patch 2>/dev/null | head -1 | grep -q . &&
		die "$here/$d has a file with a From: line: the stored files carry no author"
done

for d in $dirs; do
	o=$(dest "$d") n=0
	mkdir -p "$o" || die "cannot create $o"
	for p in "$here/$d"/[0-9][0-9][0-9][0-9]-*.patch; do
		[ -f "$p" ] || continue
		# From: after the mbox "From <sha>" line; a Signed-off-by after
		# the last trailer, before the "---" that ends a patch's message
		# (a cover letter has none).
		awk -v from="$from" -v so="$signoff" '
			NR == 2 { print "From: " from }
			!done && /^---$/ { if (so == 1) print "Signed-off-by: " from; done = 1 }
			{ print }' "$p" >"$o/${p##*/}" || die "cannot write $o/${p##*/}"
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || die "no patches in $here/$d"
	echo "ena upstream: $d: $n files (cover letter included, if any) in $o"
done
