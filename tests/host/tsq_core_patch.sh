#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The core fix in tsq_probe/patches/ (the barrier after set_bit(TSQ_THROTTLED)
# in tcp_push()) must be exactly the inverse of what Debian's 6.1 and 6.12
# sources contain.  For each linux-source tarball, on its net/ipv4/tcp.c:
#   1. the patch reverse-applies cleanly (--fuzz=0, dry run, then for real);
#   2. the result has no barrier after the set_bit any more;
#   3. applying the patch forward restores the file byte for byte.

. "$(dirname "$0")/../lib.sh"

require_cmd patch tar xz cmp

PATCH=$TAILFIX_ROOT/tsq_probe/patches/0001-tcp-add-a-full-barrier-after-setting-TSQ_THROTTLED-in-tcp_push.patch
[ -f "$PATCH" ] || fail "patch $PATCH missing"
SRC_DIR=${LINUX_SOURCE_DIR:-/usr/src}

TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# The set_bit() in tcp_push() followed, on the next line, by the barrier.
has_barrier() {
	awk '/set_bit\(TSQ_THROTTLED, &sk->sk_tsq_flags\);/ { getline n;
		if (n ~ /^[ \t]*smp_mb__after_atomic\(\);/) f = 1 }
		END { exit !f }' "$1"
}

lacks_barrier() { ! has_barrier "$1"; }

# only_barrier_removed ORIG NEW: NEW is ORIG less one line, the barrier.
only_barrier_removed() {
	local d
	d=$(diff "$1" "$2" | grep '^[<>]')
	log "diff: $d"
	[ "$(printf '%s\n' "$d" | wc -l)" -eq 1 ] &&
		printf '%s\n' "$d" | grep -qE '^<[[:space:]]+smp_mb__after_atomic\(\);$'
}

# restored ORIG REVERSED NOW: NOW is ORIG again, after a real change.
restored() { ! cmp -s "$1" "$2" && cmp "$1" "$3"; }

# patch_run DIR ARGS...: patch -p1 --fuzz=0 in DIR, failing on any fuzz,
# offset is fine (line numbers differ between the series).
patch_run() {
	local dir=$1 out
	shift
	out=$(cd "$dir" && patch -p1 --fuzz=0 --no-backup-if-mismatch \
		-r - "$@" <"$PATCH" 2>&1)
	local rc=$?
	printf '%s\n' "$out" | sed 's/^/# /'
	[ "$rc" -eq 0 ] && ! printf '%s' "$out" | grep -qiE 'fuzz|reject|FAILED'
}

# check_series VER: the three properties on linux-source-VER.
check_series() {
	local ver=$1 tarball=$SRC_DIR/linux-source-$1.tar.xz
	local dir=$TMP/$1 file=linux-source-$1/net/ipv4/tcp.c

	if [ ! -f "$tarball" ]; then
		check_skip "$ver: patch reverse-applies to net/ipv4/tcp.c" \
			"$tarball missing (apt-get install linux-source-$ver)"
		return
	fi
	mkdir -p "$dir"
	if ! tar -xJf "$tarball" -C "$dir" "$file"; then
		check "$ver: extract net/ipv4/tcp.c from $tarball" false
		return
	fi
	local work=$dir/linux-source-$ver
	cp "$dir/$file" "$TMP/tcp.c.$ver.orig"
	check "$ver: source has the barrier after set_bit(TSQ_THROTTLED)" \
		has_barrier "$work/net/ipv4/tcp.c"
	check "$ver: patch reverse-applies with --fuzz=0 (dry run)" \
		patch_run "$work" -R --dry-run
	check "$ver: patch reverse-applies with --fuzz=0" \
		patch_run "$work" -R
	cp "$work/net/ipv4/tcp.c" "$TMP/tcp.c.$ver.reversed"
	check "$ver: reversed file lacks the barrier" \
		lacks_barrier "$work/net/ipv4/tcp.c"
	check "$ver: reversing removed exactly the barrier line" \
		only_barrier_removed "$TMP/tcp.c.$ver.orig" "$work/net/ipv4/tcp.c"
	check "$ver: patch applies forward again with --fuzz=0" \
		patch_run "$work"
	check "$ver: forward patch restores tcp.c byte for byte" \
		restored "$TMP/tcp.c.$ver.orig" "$TMP/tcp.c.$ver.reversed" \
		"$work/net/ipv4/tcp.c"
}

found=0
for ver in 6.1 6.12; do
	[ -f "$SRC_DIR/linux-source-$ver.tar.xz" ] && found=$((found + 1))
done
[ "$found" -gt 0 ] ||
	skip "no $SRC_DIR/linux-source-{6.1,6.12}.tar.xz (apt-get install linux-source-6.1 linux-source-6.12)"

check_series 6.1
check_series 6.12

ksft_finish
