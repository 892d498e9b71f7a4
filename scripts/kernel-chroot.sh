#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-chroot.sh: build environments for kernels this Debian 12 host cannot
# build for with its own tools.  Newer kernels need their release's compiler
# and glibc (trixie-backports' 7.x linux-kbuild runs only on trixie's glibc),
# older ones their own gcc (bullseye's 5.10 headers want gcc-10), so each
# gets a debootstrap chroot of its Debian release holding build-essential,
# dkms and the newest cloud-amd64 headers of that series, with the
# series' linux-source-X.Y where the suite has it (the in-tree ena build).
#
#   kernel-chroot.sh setup [SUITE...]	create or refresh (apt) the chroots
#					(default: all); prints "SUITE KVER DIR"
#   kernel-chroot.sh list		the ready chroots, "SUITE KVER DIR", no
#					network, nothing changed
#   kernel-chroot.sh run SUITE CMD...	run CMD inside, with /proc mounted
#					for its duration only
#
# Commands on one chroot run one at a time (a lock per suite).
# SUITE is one of:
#   bullseye  Debian 11, linux-headers-5.10.*-cloud-amd64 (bullseye main)
#   trixie    Debian 13, the newest linux-headers-7.*-cloud-amd64 of
#             trixie-backports
# The chroots live in $TAILFIX_KCHROOT_DIR (default /var/cache/ena-tcp-tailfix/chroots),
# outside the checkout; a chroot is ready when DIR/.tailfix-kver names the
# kernel whose headers it holds.  amd64 only.  Needs root and
# http://deb.debian.org.  Nothing stays mounted: /proc is mounted for one
# command at a time and unmounted on every exit path.
set -euo pipefail
cache=${TAILFIX_KCHROOT_DIR:-${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}/chroots}
mirror=${TAILFIX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITES="bullseye trixie"

# suite_info SUITE: sets SOURCES (apt lines), HDR_RE (headers package name
# pattern), HDR_FROM (target release for apt, or empty).
suite_info() {
	case $1 in
	bullseye)
		SOURCES="deb $mirror bullseye main"
		HDR_RE='^linux-headers-5\.10\.0-[0-9]+-cloud-amd64$'
		HDR_FROM= ;;
	trixie)
		SOURCES="deb $mirror trixie main
deb $mirror trixie-backports main"
		HDR_RE='^linux-headers-7\.[0-9]+\.[0-9]+[^-]*(-[0-9]+)?-cloud-amd64$'
		HDR_FROM=trixie-backports ;;
	*)
		echo "kernel-chroot.sh: unknown suite '$1' (known: $SUITES)" >&2
		exit 2 ;;
	esac
}

die() { echo "kernel-chroot.sh: $*" >&2; exit 1; }

# Anything mounted at or below $1?
mounted_below() {
	awk -v d="$(realpath -m "$1")" '$2 == d || index($2, d "/") == 1 { f = 1 } END { exit !f }' /proc/mounts
}

# with_proc DIR CMD...: CMD with DIR/proc mounted, unmounted whatever happens.
with_proc() {
	local dir=$1 rc=0

	shift
	mountpoint -q "$dir/proc" || {
		mount -t proc proc "$dir/proc"
		# shellcheck disable=SC2064 # expand $dir now
		trap "umount '$dir/proc' 2>/dev/null || umount -l '$dir/proc'" EXIT
		trap 'exit 130' INT TERM HUP
	}
	"$@" || rc=$?
	if mountpoint -q "$dir/proc"; then
		umount "$dir/proc" || umount -l "$dir/proc"
	fi
	trap - EXIT
	return $rc
}

in_chroot() {
	local dir=$1

	shift
	chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

ready_kver() { cat "$1/.tailfix-kver" 2>/dev/null; }

# has_headers DIR KVER: DIR/lib/modules/KVER/build, resolved inside DIR.
has_headers() {
	local l

	l=$(readlink "$1/lib/modules/$2/build") || return 1
	case $l in
	/*) [ -f "$1$l/Makefile" ] ;;
	*) [ -f "$1/lib/modules/$2/$l/Makefile" ] ;;
	esac
}

setup_one() {
	local suite=$1 dir=$cache/$1 tmp hdr src kver

	suite_info "$suite"
	mkdir -p "$cache"
	exec 8>"$cache/$suite.lock"
	flock 8
	if [ ! -x "$dir/usr/bin/apt-get" ]; then
		command -v debootstrap >/dev/null || {
			apt-get update -q >/dev/null
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
		}
		tmp=$dir.new
		mounted_below "$tmp" && die "$tmp has mounts inside: not removed"
		rm -rf "$tmp"
		echo "kernel-chroot.sh: debootstrap $suite into $dir (a few minutes)" >&2
		debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$cache/$suite.debootstrap.log" 2>&1 ||
			{ mounted_below "$tmp" || rm -rf "$tmp"; die "debootstrap $suite failed: $cache/$suite.debootstrap.log"; }
		mounted_below "$tmp" && die "debootstrap left mounts under $tmp"
		mounted_below "$dir" && die "$dir has mounts inside: not replaced"
		rm -rf "$dir"
		mv "$tmp" "$dir"
	fi
	printf '%s\n' "$SOURCES" >"$dir/etc/apt/sources.list"
	rm -f "$dir/.tailfix-kver"
	with_proc "$dir" in_chroot "$dir" apt-get update -q >/dev/null ||
		die "apt-get update failed in $dir"
	hdr=$(in_chroot "$dir" apt-cache search --names-only '^linux-headers-.*-cloud-amd64$' |
	      awk '{ print $1 }' | grep -E "$HDR_RE" | sort -V | tail -1)
	[ -n "$hdr" ] || die "$suite: no package matching $HDR_RE"
	# The kernel line's own source, where the suite has it, for DKMS's
	# in-tree ena build (ena/patches/X.Y); without it ena is skipped there.
	src=$(echo "${hdr#linux-headers-}" | sed -nE 's/^([0-9]+\.[0-9]+)\..*/linux-source-\1/p')
	in_chroot "$dir" apt-cache show "$src" >/dev/null 2>&1 || src=
	with_proc "$dir" in_chroot "$dir" apt-get install -y -q --no-install-recommends \
		${HDR_FROM:+-t "$HDR_FROM"} build-essential dkms "$hdr" $src >"$cache/$suite.apt.log" 2>&1 ||
		die "$suite: installing build-essential dkms $hdr $src failed: $cache/$suite.apt.log"
	in_chroot "$dir" apt-get clean
	kver=${hdr#linux-headers-}
	has_headers "$dir" "$kver" || die "$suite: no /lib/modules/$kver/build after installing $hdr"
	echo "$kver" >"$dir/.tailfix-kver"
	exec 8>&-
	echo "$suite $kver $dir"
}

case ${1:-} in
setup)
	shift
	[ "$(id -u)" -eq 0 ] || die "setup needs root"
	# shellcheck disable=SC2086 # a list of words
	[ "${1:-all}" != all ] || set -- $SUITES
	for s in "$@"; do
		setup_one "$s"
	done
	;;
list)
	for s in $SUITES; do
		k=$(ready_kver "$cache/$s") || continue
		! has_headers "$cache/$s" "$k" || echo "$s $k $cache/$s"
	done
	;;
run)
	[ $# -ge 3 ] || die "usage: run SUITE CMD..."
	suite=$2
	suite_info "$suite"
	dir=$cache/$suite
	shift 2
	ready_kver "$dir" >/dev/null || die "no ready chroot at $dir: $0 setup $suite"
	# One command at a time: the /proc of one must not go under another.
	exec 8>"$cache/$suite.lock"
	flock 8
	with_proc "$dir" in_chroot "$dir" "$@"
	;;
*)
	sed -n '3,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2 ;;
esac
