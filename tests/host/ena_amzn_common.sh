# SPDX-License-Identifier: GPL-2.0
#
# Sourced, after ../lib.sh, by the host checks that build or read Amazon's
# out-of-tree ENA driver (amzn-drivers); not a test of its own.
#
# amzn_setup: skips without the release tarball (../shared/third_party, or
# TAILFIX_AMZN_TARBALL=) or without 6.1 or 6.12 headers; else sets
#   TARBALL  the release tarball,
#   KVERS    the 6.1 and 6.12 kernels with headers under /lib/modules,
#   TMP      a temporary directory, removed on exit,
#   CO       the tarball unpacked in TMP (the checkout's top directory).
# Nothing of amzn-drivers is kept outside TMP.

amzn_setup() {
	local b

	TARBALL=$("$TAILFIX_ROOT/scripts/third-party.sh" amzn)
	[ -n "$TARBALL" ] || skip "no amzn-drivers release tarball (../shared/third_party, or TAILFIX_AMZN_TARBALL=)"
	KVERS=()
	for b in /lib/modules/6.1.*/build /lib/modules/6.12.*/build; do
		[ -f "$b/Makefile" ] && KVERS+=("$(basename "$(dirname "$b")")")
	done
	[ ${#KVERS[@]} -gt 0 ] || skip "no 6.1 or 6.12 kernel headers under /lib/modules"
	log "amzn-drivers from $TARBALL; kernels: ${KVERS[*]}"

	TMP=$(mktemp -d)
	on_exit rm -rf "$TMP"
	tar -xf "$TARBALL" -C "$TMP" || fail "cannot unpack $TARBALL"
	CO=$(ls -d "$TMP"/*/kernel/linux/ena 2>/dev/null | head -1)
	CO=${CO%/kernel/linux/ena}
	[ -n "$CO" ] || fail "$TARBALL has no kernel/linux/ena"
}
