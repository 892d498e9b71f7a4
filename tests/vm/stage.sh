#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# stage.sh KIND: make a bootable guest disk with this checkout installed
# (KIND: amd64, arm64, arm64-min or amd64-trixie, see image.sh; amd64-debug
# is the amd64 root with the debug kernel of debug-kernel.sh installed).
# Prints the path of the disk image.  Steps:
#   1. a copy of the cached base root (image.sh);
#   2. the package copied to /usr/src/ena-tcp-tailfix-VERSION and installed
#      with dkms add/build/install for every kernel of the image -- the real
#      dkms.conf, as a user runs it; the build log is kept next to the image
#      (arm64-min, a root without dkms or a compiler: cross-built on this
#      host and installed where DKMS installs them, see stage_cross);
#   3. the tests, helper tools and benchmarks under /opt/tailfix;
#   4. an ext4 disk made from that tree (mke2fs -d, nothing mounted).
# TAILFIX_STAGE_DEB=1 (amd64 only; for tests/pkg_lifecycle.sh): steps 2 and
# the amzn-drivers builds are left out.  Instead the disk gets the package as
# an operator gets it: the .deb of scripts/package.sh (built here on the
# host) in /opt/tailfix/debs/, not installed, nothing of ours in /usr/src,
# /var/lib/dkms, /etc or /usr/lib; linux-source-X.Y.tar.xz of each staged
# kernel's series in /usr/src (where ena's source comes from, as on a host
# with linux-source installed), and the headers of the kernels not matching
# TAILFIX_STAGE_KERNELS purged with apt, so that the guest's DKMS builds
# only for the kernels that boot.  With TAILFIX_STAGE_UPGRADE (an extended
# regex, for tests/vm/reboots.sh), the purged headers of the kernels that
# match it are left on the disk as .debs in /opt/tailfix/debs/upgrade:
# installing them in the guest is the kernel upgrade (DKMS builds for that
# kernel from the headers' hook), booting that kernel comes after.
# TAILFIX_STAGE_NAME names the disk ($cache/ARCH/NAME.img, default guest-
# plus a hash of this checkout's path, so two checkouts never share one);
# staging holds NAME.lock exclusively, run.sh holds it shared while booting.
set -euo pipefail
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

kind=${1:-amd64}
arch=${kind%%-*}
base=$kind
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
pkg=ena-tcp-tailfix-$version
log() { echo "stage.sh: $*" >&2; }
. "$here/vm-lib.sh"

stage_deb=${TAILFIX_STAGE_DEB:-0}
case $stage_deb in
0) ;;
1) [ "$kind" = amd64 ] || { log "TAILFIX_STAGE_DEB=1: amd64 only, not $kind"; exit 1; } ;;
*) log "TAILFIX_STAGE_DEB=$stage_deb: 0 or 1"; exit 1 ;;
esac
name=${TAILFIX_STAGE_NAME:-guest-$(echo "$top" | sha256sum | cut -c1-8)}
work=$cache/$kind/$name.root
img=$cache/$kind/$name.img
mkdir -p "$cache/$kind"
debs= local_kernels=
if [ "$kind" = amd64-debug ]; then
	base=amd64
	debs=$("$here/debug-kernel.sh") || { log "no debug kernel (tests/vm/debug-kernel.sh failed)"; exit 1; }
fi
vm_lock "$cache/$kind/$name.lock" -x "stage $name" || exit 1

# The base root, locked shared while it is copied (image.sh drops no root
# whose lock is held).
for try in 1 2 3; do
	root=$("$here/image.sh" "$base")
	vm_lock "$root.lock" -s "base root $root" || exit 1
	[ -f "$root/.tailfix-complete" ] && break
	log "$root went away, again"
done
safe_rmroot "$work"
cp -a --reflink=auto "$root" "$work"

# The package source, as `dkms add` expects it in /usr/src (with
# TAILFIX_STAGE_DEB=1 only the tests' copy in /opt/tailfix: the deb brings
# /usr/src's).
srcdir=$work/usr/src/$pkg
[ "$stage_deb" = 1 ] && srcdir=$work/opt/tailfix
mkdir -p "$srcdir"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	# (--ignore-failed-read: an untracked file a concurrent build, such as
	# check.sh's background host checks, removes while it is listed)
	git -C "$top" ls-files -co --exclude-standard -z |
		tar -C "$top" --null --ignore-failed-read -T - -cf - | tar -C "$srcdir" -xf -
else
	tar -C "$top" --exclude=out --exclude='ena/build-*' -cf - . | tar -C "$srcdir" -xf -
fi

# The distribution's kernel source packages, where the ENA source comes
# from, visible to the build only (linked, then removed from the image).
srcs=()
for t in /usr/src/linux-source-*.tar.xz; do
	[ -f "$t" ] && [ "$stage_deb" != 1 ] || continue
	ln "$t" "$work/usr/src/" 2>/dev/null || cp "$t" "$work/usr/src/"
	srcs+=("$work/usr/src/${t##*/}")
done

# The DKMS install runs in a chroot of the guest's root: natively for amd64;
# for arm64 under qemu-user (binfmt_misc, as image-foreign.sh built that
# root), the guest's own dkms and gcc.  Only where qemu-user cannot be
# registered does a foreign root get its DKMS install at boot (guest-init.sh).
# TAILFIX_STAGE_KERNELS (a regex, default all) limits which kernels get it.
# (listed again once the debug kernel is installed; none is an error below)
stage_kernels() {
	(cd "$work/lib/modules" && ls -d */build 2>/dev/null | sed 's,/build,,' |
		grep -E "${TAILFIX_STAGE_KERNELS:-.}") || true
}
kernels=$(stage_kernels)
dkmslog=$cache/$kind/dkms.log

# chroot_mounts: /proc, /sys and /dev of this host in the root, for its
# chroot (dkms, apt), undone on exit or by the caller (mounts[]).
chroot_mounts() {
	local m

	mounts=()
	trap 'for m in "${mounts[@]}"; do umount -l "$m"; done' EXIT
	for m in proc sys dev; do
		mount --bind "/$m" "$work/$m"
		mounts+=("$work/$m")
	done
}

# TAILFIX_STAGE_DEB=1 (see the top): the root of a host that has not
# installed the package yet.
stage_deb_root() {
	local k s t deb

	[ "$(uname -m)" = x86_64 ] || { log "TAILFIX_STAGE_DEB=1 needs an x86_64 build host"; exit 1; }
	[ -n "$kernels" ] || { log "no kernel in the $kind root matches '${TAILFIX_STAGE_KERNELS:-.}'"; exit 1; }
	: >"$dkmslog"
	chroot_mounts
	for k in $(cd "$work/lib/modules" && ls -d */build 2>/dev/null | sed 's,/build,,'); do
		printf '%s\n' $kernels | grep -qxF -- "$k" && continue
		if [ -n "${TAILFIX_STAGE_UPGRADE:-}" ] && echo "$k" | grep -qE -- "$TAILFIX_STAGE_UPGRADE"; then
			mkdir -p "$work/opt/tailfix/debs/upgrade"
			(cd "$work/opt/tailfix/debs/upgrade" && apt-get download -q "linux-headers-$k") >>"$dkmslog" 2>&1 ||
				{ tail -5 "$dkmslog" >&2; log "apt-get download linux-headers-$k failed"; exit 1; }
			log "TAILFIX_STAGE_DEB: linux-headers-$k as a .deb in /opt/tailfix/debs/upgrade (the upgrade of tests/vm/reboots.sh)"
		fi
		log "TAILFIX_STAGE_DEB: apt-get purge linux-headers-$k (no DKMS build for it in the guest)"
		DEBIAN_FRONTEND=noninteractive chroot "$work" apt-get purge -q -y "linux-headers-$k" >>"$dkmslog" 2>&1 ||
			{ tail -20 "$dkmslog" >&2; log "apt-get purge linux-headers-$k failed"; exit 1; }
	done
	for m in "${mounts[@]}"; do umount -l "$m"; done
	mounts=()
	trap - EXIT
	for k in $kernels; do
		s=$(echo "$k" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
		t=/usr/src/linux-source-$s.tar.xz
		if [ -f "$t" ]; then
			[ -e "$work$t" ] || ln "$t" "$work$t" 2>/dev/null || cp "$t" "$work$t"
		else
			log "TAILFIX_STAGE_DEB: no $t on this host: the guest's DKMS will not build ena for $k"
		fi
	done
	mkdir -p "$work/opt/tailfix/debs"
	deb=$("$top/scripts/package.sh" deb "$work/opt/tailfix/debs") ||
		{ log "scripts/package.sh deb failed"; exit 1; }
	log "TAILFIX_STAGE_DEB: ${deb#"$work"} on the disk, not installed"
}

# ena_opt_in: what `ena-tcp-tailfix ena enable` writes, so that the
# package's ena is installed and the one modprobe loads.
ena_opt_in() {
	echo ENA_DRIVER=tailfix >"$work/etc/ena-tcp-tailfix.conf"
	install -D -m 0755 "$top/ena/ena-load" "$work/usr/lib/ena-tcp-tailfix/ena-load"
	mkdir -p "$work/etc/modprobe.d"
	printf '%s\n' '# Written by `ena-tcp-tailfix ena enable`, removed by `ena-tcp-tailfix ena disable`.' \
		'install ena /usr/lib/ena-tcp-tailfix/ena-load $CMDLINE_OPTS' \
		>"$work/etc/modprobe.d/ena-tcp-tailfix-ena.conf"
}

# stage_cross (arm64-min, image.sh: an unpacked root without dkms or a
# compiler): each module cross-built here for each kernel of the root by
# the probe DKMS runs (scripts/build-modules.sh --probe, the same sources
# and flags; ARCH and CROSS_COMPILE from the environment), against the
# arm64 headers scripts/deps.sh unpacks, and put where DKMS puts it
# (updates/dkms; ena opted in as above), then the root's depmod.  The
# headers go into the root too, with the /lib/modules/KVER/build and source
# links, as on any host where DKMS installed the package: tests read kernel
# facts from them (lib.sh tsq_fault_taint: which taint flag a fault sets);
# nothing builds in this guest.  Nothing is emulated.  The probe's results are kept in $cache/KIND/modules with
# their key, so an unchanged checkout is not built again.  A module that
# does not build is left out with its reason, as DKMS does; none building
# fails the stage.  (The DKMS install itself is judged in the full arm64
# guest of make check-full.)
stage_cross() {
	local k hdrs dir m n l h

	kernels=$(ls "$work/lib/modules" | grep -E "${TAILFIX_STAGE_KERNELS:-.}") ||
		{ log "no kernel in the $kind root matches '${TAILFIX_STAGE_KERNELS:-.}'"; exit 1; }
	: >"$dkmslog"
	ena_opt_in
	for k in $kernels; do
		hdrs=$cache/arm64/headers/usr/src/linux-headers-$k
		[ -f "$hdrs/.tailfix-ready" ] || "$top/scripts/deps.sh" arm64-headers >&2 || true
		[ -f "$hdrs/.tailfix-ready" ] || {
			log "no arm64 headers of $k (the root's kernel) under $cache/arm64/headers:" \
			    "scripts/deps.sh arm64-headers unpacks those of this host's apt lists (apt-get update?)"
			exit 1
		}
		log "cross-building the package for $k"
		(export ARCH=arm64 KDIR=$hdrs
			[ "$(uname -m)" = aarch64 ] || export CROSS_COMPILE=aarch64-linux-gnu-
			"$top/scripts/build-modules.sh" --probe "$k" "$cache/$kind/modules" >>"$dkmslog" 2>&1) ||
			{ tail -20 "$dkmslog" >&2; log "the cross build for $k failed"; exit 1; }
		dir=$cache/$kind/modules/$k
		n=0
		mkdir -p "$work/lib/modules/$k/updates/dkms"
		while read -r verdict m reason; do
			if [ "$verdict" = ok ]; then
				cp "$dir/$m.ko" "$work/lib/modules/$k/updates/dkms/"
				n=$((n + 1))
			else
				log "$m skipped for $k: $reason"
			fi
			echo "$verdict $m $reason" >>"$dkmslog"
		done <"$dir/result"
		[ "$n" -gt 0 ] || { log "no module builds for $k (log: $dkmslog)"; exit 1; }
		depmod -b "$work" -a "$k"
		for l in build source; do
			h=$(readlink "$cache/arm64/headers/lib/modules/$k/$l") && [ -d "$cache/arm64/headers$h" ] ||
				{ log "no $l link of $k under $cache/arm64/headers"; exit 1; }
			cp -a --reflink=auto "$cache/arm64/headers$h" "$work/usr/src/"
			rm -f "$work$h/.tailfix-ready"
			ln -sfn "$h" "$work/lib/modules/$k/$l"
		done
		log "$(cd "$work/lib/modules/$k/updates/dkms" && echo *) installed for $k"
	done
}

if [ "$stage_deb" = 1 ]; then
	stage_deb_root
elif [ "$kind" = arm64-min ]; then
	stage_cross
elif { [ "$arch" = amd64 ] && [ "$(uname -m)" = x86_64 ]; } ||
	{ [ "$arch" != amd64 ] && "$here/image-foreign.sh" --binfmt "$arch"; }; then
	chroot_mounts
	# Extra kernel packages (the debug kernel), installed with dpkg as on
	# a host (the kernel's own hooks make its initramfs); then they are
	# among the kernels DKMS builds for.
	if [ -n "$debs" ]; then
		mkdir -p "$work/tmp/debs"
		cp $debs "$work/tmp/debs/"
		chroot "$work" sh -c 'dpkg -i /tmp/debs/*.deb' >"$cache/$kind/dpkg.log" 2>&1 ||
			{ tail -20 "$cache/$kind/dpkg.log" >&2; log "dpkg -i of $(echo $debs) failed"; exit 1; }
		rm -rf "$work/tmp/debs"
		kernels=$(stage_kernels)
		# (apt cannot install these again: they get `dkms install`)
		local_kernels=$(for d in $debs; do basename "$d"; done |
			sed -n 's/^linux-image-\([^_]*\)_.*/\1/p')
	fi
	[ -n "$kernels" ] || { log "no kernel in the $kind root matches '${TAILFIX_STAGE_KERNELS:-.}'"; exit 1; }
	: >"$dkmslog"
	# The guests test this package's ena: they opt in to it as an
	# operator does (what `ena-tcp-tailfix ena enable` writes), before
	# DKMS builds, so that DKMS installs it.
	ena_opt_in
	chroot "$work" dkms add "ena-tcp-tailfix/$version" >>"$dkmslog" 2>&1 ||
		{ cat "$dkmslog" >&2; log "dkms add failed"; exit 1; }
	# The oldest kernel gets `dkms install`, as on a host where the
	# package is installed; each newer one takes the kernel-upgrade path
	# of a native root: its headers are installed again with apt after the
	# package, and DKMS's own hook (/etc/kernel/header_postinst.d/dkms,
	# AUTOINSTALL in dkms.conf) must build and install the package during
	# that apt run.  Either failing fails the stage.
	first=1
	for k in $(printf '%s\n' $kernels | sort -V); do
		if [ "$first" = 1 ] || [ ! -x "$work/etc/kernel/header_postinst.d/dkms" ] ||
			[ "$arch" != amd64 ] || printf '%s\n' $local_kernels | grep -qxF -- "$k"; then
			log "dkms install $pkg for $k"
			chroot "$work" dkms install "ena-tcp-tailfix/$version" -k "$k" >>"$dkmslog" 2>&1
		else
			log "kernel upgrade to $k: apt-get install --reinstall linux-headers-$k (DKMS autoinstall)"
			# (fresh lists: a cached root's may name a .deb the mirror dropped)
			chroot "$work" apt-get update -q >>"$dkmslog" 2>&1 &&
			DEBIAN_FRONTEND=noninteractive chroot "$work" apt-get install -q -y --reinstall \
				"linux-headers-$k" >>"$dkmslog" 2>&1 &&
				chroot "$work" apt-get clean &&
				st=$(chroot "$work" dkms status "ena-tcp-tailfix/$version" -k "$k") &&
				echo "$st" | tee -a "$dkmslog" | grep ': installed' >/dev/null
		fi || {
			tail -30 "$dkmslog" >&2
			find "$work/var/lib/dkms/ena-tcp-tailfix" -name make.log -exec tail -20 {} \; >&2
			log "the package was not installed for $k (log: $dkmslog)"
			exit 1
		}
		first=0
	done
	chroot "$work" dkms status >&2
	# amzn-drivers' ena (ena/README.md), built in the same chroot for each
	# amd64 kernel (matching TAILFIX_STAGE_AMZN, a regex, default all) from
	# the release tarball, for tests/ena_amzn_load.sh.  A machine without
	# the tarball (third-party.sh exits 1) stages without it, and that
	# test skips in the guest, saying so.
	amzn_tar=$("$top/scripts/third-party.sh" amzn) ||
		{ amzn_tar=; log "no amzn-drivers release tarball (scripts/third-party.sh): no amzn-drivers ena on the disk"; }
	if [ "$arch" = amd64 ] && [ -n "$amzn_tar" ]; then
		cp "$amzn_tar" "$work/tmp/amzn-drivers.tar.xz"
		for k in $(printf '%s\n' $kernels | grep -E "${TAILFIX_STAGE_AMZN:-.}"); do
			log "amzn-drivers ena for $k"
			if chroot "$work" env ENA_SRC=/tmp/amzn-drivers.tar.xz TMPDIR=/tmp \
				"/usr/src/$pkg/ena/prepare-source.sh" --probe "$k" "/tmp/amzn-$k" >>"$dkmslog" 2>&1; then
				mkdir -p "$work/var/tmp/tailfix-amzn/$k"
				cp "$work/tmp/amzn-$k/ena.ko" "$work/var/tmp/tailfix-amzn/$k/"
			else
				log "amzn-drivers ena for $k did not build (log: $dkmslog): tests/ena_amzn_load.sh will skip"
			fi
			rm -rf "$work/tmp/amzn-$k"
		done
		rm -f "$work/tmp/amzn-drivers.tar.xz"
	fi
	# Test builds the guest would compile under emulation, made here in
	# the same root (tests/vm/mutant-prebuild.sh; taken by the tests only
	# when source and patches hash the same).  TAILFIX_STAGE_MUTANTS: DIR/
	# NAME of tests/mutants/DIR/NAME.patch (DIR/real: the module without
	# a patch) or cost-parts/NAME of bench/cost-parts/NAME.patch (tsq_probe's
	# cost parts, make bench), space-separated; "all": every tsq_probe and
	# dctcp patch and both real modules (the mutant runs of check-full).  Default:
	# tsq_probe's initfail (tsq_probe_initfail.sh, tsq_probe_iface.sh).
	if [ "$arch" = amd64 ]; then
		mut=${TAILFIX_STAGE_MUTANTS-tsq_probe/initfail}
		[ "$mut" != all ] || mut="tsq_probe/real dctcp/real $(cd "$top/tests/mutants" &&
			ls tsq_probe/*.patch dctcp/*.patch | sed 's/\.patch$//')"
		for k in $kernels; do
			for p in $mut; do
				patch=$work/usr/src/$pkg/tests/mutants/$p.patch
				case ${p%%/*} in
				tsq_probe) d=tsq_probe ;;
				dctcp) d=tcp_dctcp_fixed ;;
				cost-parts) d=tsq_probe patch=$work/usr/src/$pkg/bench/$p.patch ;;
				*) log "TAILFIX_STAGE_MUTANTS: $p: not tsq_probe/NAME, dctcp/NAME or cost-parts/NAME"; exit 1 ;;
				esac
				[ "${p#*/}" != real ] || patch=
				"$top/tests/vm/mutant-prebuild.sh" build "$work" "/usr/src/$pkg" "$d" "$d" "$k" \
					/tmp/tailfix-prebuilt $patch >>"$dkmslog" 2>&1 ||
					log "test build $p for $k failed (log: $dkmslog): the guest builds it"
			done
		done
	fi
	for m in "${mounts[@]}"; do umount -l "$m"; done
	mounts=()
else
	[ -z "$debs" ] || { log "$kind needs an x86_64 build host (dpkg -i of its kernel in a chroot)"; exit 1; }
	touch "$work/.tailfix-dkms-at-boot"
fi
rm -f "${srcs[@]}"

# Tests, tools and benchmarks.
case $arch in
amd64) cc=gcc ;;
arm64) cc=aarch64-linux-gnu-gcc ;;
esac
make -s -C "$top/tests" tools CC="$cc" TOOLS_OUT="$cache/$arch/tools" >&2
mkdir -p "$work/opt/tailfix"
[ "$srcdir" = "$work/opt/tailfix" ] || cp -a "$work/usr/src/$pkg/." "$work/opt/tailfix/"
mkdir -p "$work/opt/tailfix/tests/tools"
cp "$cache/$arch/tools/"* "$work/opt/tailfix/tests/tools/"
if [ -d "$work/var/tmp/tailfix-amzn" ]; then
	mv "$work/var/tmp/tailfix-amzn" "$work/opt/tailfix/amzn"
fi
if [ -d "$work/tmp/tailfix-prebuilt" ]; then
	rm -rf "$work/opt/tailfix/tests/mutants/prebuilt"
	mv "$work/tmp/tailfix-prebuilt" "$work/opt/tailfix/tests/mutants/prebuilt"
fi
mkdir -p "$work/results"

size_mb=$(($(du -sm "$work" | cut -f1) + 1536))
rm -f "$img" "$img.kernels"
mke2fs -q -t ext4 -d "$work" -F "$img" "${size_mb}M" >&2
echo "$kernels" >"$img.kernels"
log "guest disk $img (${size_mb} MB) for: $(echo $kernels)"
echo "$img"
