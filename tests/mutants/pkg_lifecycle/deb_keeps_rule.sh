#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# deb_keeps_rule.sh DEB OUT: a mutant of the package for
# tests/pkg_lifecycle.sh's control: DEB unpacked with dpkg-deb, the lines of
# its prerm and postrm that remove /etc/modprobe.d/ena-tcp-tailfix-ena.conf
# (and, on purge, /etc/ena-tcp-tailfix.conf) replaced by ':', packed again
# as OUT.
# A purge of OUT leaves the modprobe rule behind: pkg_lifecycle.sh's
# leftover check must find it.  Fails, saying why, when a script has no
# such line to delete (the package changed: update this mutant with it).
set -euo pipefail
deb=$1 out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -R "$deb" "$tmp/pkg"
for s in prerm postrm; do
	f=$tmp/pkg/DEBIAN/$s
	[ -f "$f" ] || { echo "deb_keeps_rule.sh: $deb has no $s" >&2; exit 1; }
	n=$(grep -c '^[[:space:]]*rm -f .*/etc/modprobe\.d/ena-tcp-tailfix-ena\.conf' "$f" || true)
	[ "$n" -gt 0 ] || { echo "deb_keeps_rule.sh: no line of $s removes the rule" >&2; exit 1; }
	sed -i 's,^\([[:space:]]*\)rm -f .*/etc/modprobe\.d/ena-tcp-tailfix-ena\.conf.*,\1: mutant: the rule stays,' "$f"
	sh -n "$f"
	echo "deb_keeps_rule.sh: $s: $n line(s) that removed the rule replaced by ':'"
done
dpkg-deb --root-owner-group -b "$tmp/pkg" "$out" >/dev/null
