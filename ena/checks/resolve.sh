#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# resolve.sh KDIR DIR OUT: an ENA source whose code sits in kernel-version
# conditionals (amzn-drivers: "#if LINUX_VERSION_CODE >= KERNEL_VERSION(..)"
# around every doorbell decision and NAPI exit), resolved for the kernel
# whose build directory is KDIR, written to OUT for check.sh.  spatch does
# not evaluate such conditionals; it reads both branches, or neither.
#
# DIR is an ENA directory that kbuild can build (amzn-drivers'
# kernel/linux/ena after its configure step: config.h present).  It is
# copied (nothing is written in DIR) and each of its *.c files is run
# through kbuild's own preprocessing target (make M=... FILE.i, so with the
# flags of the real build) with -fdirectives-only: conditionals are
# decided as the compiler decides them for that kernel, includes are
# inlined, and no macro in the code is expanded.  The linemarkers then say
# which output line is which line of which file: OUT/FILE keeps, for each
# .c and .h of DIR, the lines the compiler keeps at their own line numbers
# and a blank line for everything else (directives, discarded branches),
# so check.sh's FILE:LINE findings point into DIR's files.
#
# Exit: 0 done, 2 could not (the make output says why).

set -u
KDIR=${1:?usage: resolve.sh KDIR DIR OUT}
DIR=${2:?usage: resolve.sh KDIR DIR OUT}
OUT=${3:?usage: resolve.sh KDIR DIR OUT}

[ -f "$KDIR/Makefile" ] || { echo "resolve: no kernel build directory $KDIR" >&2; exit 2; }
[ -f "$DIR/ena_netdev.c" ] || { echo "resolve: no ena_netdev.c in $DIR" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The directory beside DIR too: amzn-drivers' sources include ../common.
cp -r "$(dirname "$DIR")/." "$TMP/" || exit 2
B=$TMP/$(basename "$DIR")

targets=$(cd "$B" && for f in *.c; do printf '%s ' "${f%.c}.i"; done)
# shellcheck disable=SC2086 # one word per target
if ! make -s -C "$KDIR" M="$B" KCFLAGS=-fdirectives-only $targets >"$TMP/make.log" 2>&1; then
	echo "resolve: preprocessing $DIR for $KDIR failed:" >&2
	tail -20 "$TMP/make.log" | sed 's/^/  /' >&2
	exit 2
fi

mkdir -p "$OUT" || exit 2
for f in "$B"/*.c "$B"/*.h; do
	printf '%s %d\n' "$(basename "$f")" "$(wc -l <"$f")"
done >"$TMP/files"

# Linemarkers: '# LINE "PATH" FLAGS...'; the line after one is LINE of
# PATH.  Only PATHs in B are kept; a header included by several .c files
# is resolved the same way in each (same flags), the first one wins.
awk -v dir="$B" -v out="$OUT" '
	FNR == NR { len[$1] = $2; next }
	/^# [0-9]+ "/ {
		line = $2 + 0
		p = $3; gsub(/"/, "", p)
		n = p; sub(/.*\//, "", n)
		d = p; sub(/\/[^\/]*$/, "", d)
		cur = (d == dir && n in len) ? n : ""
		if (cur != "" && !(cur in owner))
			owner[cur] = FILENAME
		next
	}
	{
		if (cur != "" && owner[cur] == FILENAME && line <= len[cur])
			text[cur, line] = $0
		line++
	}
	END {
		for (f in len) {
			o = out "/" f
			printf "" > o
			for (i = 1; i <= len[f]; i++)
				print ((f, i) in text ? text[f, i] : "") > o
			close(o)
		}
	}' "$TMP/files" "$B"/*.i || exit 2
