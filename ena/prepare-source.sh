#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# prepare-source.sh - put the kernel's own ENA driver source for one kernel
# into a build directory and apply this package's patches to it.
#
# Usage: prepare-source.sh KVER OUTDIR
#        prepare-source.sh --pristine KVER OUTDIR
#        prepare-source.sh --probe KVER [OUTDIR]
#        prepare-source.sh --locate KVER
#        prepare-source.sh --id KVER
#
#   KVER     kernel release the module is built for (e.g. 6.1.0-57-cloud-amd64)
#   OUTDIR   directory to create; it receives the ENA *.c/*.h files, patched.
#            Any previous content is replaced, and nothing is left behind
#            when preparation fails.
#   --pristine  extract without applying the patches (for checks and tests).
#   --probe  a full dry run: extract, check, patch and compile ena.ko against
#            the kernel's build tree (KDIR, default /lib/modules/KVER/build)
#            in a temporary directory, and say in one line whether ena builds
#            for KVER (exit 0, the line on stdout) or why not (exit status
#            below, the line on stderr).  With OUTDIR, the patched and built
#            tree (with ena.ko) is left there on success.  ENA_PROBE_LOG=FILE
#            keeps the compiler output.  About a minute per kernel.
#   --locate only tell (one line, exit 0/1) whether a source is available for
#            KVER; nothing is extracted or decompressed.
#   --id     print what identifies the source that would be used (its path
#            and the size and time of its files), for caching probe results.
#
# Where the source comes from, first match wins:
#   1. ENA_SRC=PATH: a kernel source tree, the ENA driver directory itself
#      (the one holding ena_netdev.c), or a tarball of either; or Amazon's
#      out-of-tree driver: an amzn-drivers checkout, its kernel/linux/ena
#      directory, or a release tarball of it (see "amzn-drivers" below).
#   2. /lib/modules/KVER/source, if it holds drivers/net/ethernet/amazon/ena/.
#   3. The distribution's kernel source package for KVER's series X.Y
#      (6.1.0-57-cloud-amd64 -> 6.1): /usr/src/linux-source-X.Y.tar.*
#      (Debian), /usr/src/linux-source-X.Y.*/linux-source-X.Y.*.tar.* (Ubuntu)
#      or an already unpacked /usr/src/linux-source-X.Y[.*]/ tree.
#   A kernel source of a series with no patches/X.Y (Ubuntu's 5.15 and 6.8)
#   does not fall through to amzn-drivers: exit 4 says to set ENA_SRC.
#   An amzn-drivers checkout under /usr/src is never taken on its own: on a
#   host that installed Amazon's driver with its own DKMS recipe, that
#   package owns ena (ena-tcp-tailfix ena enable refuses there).  To build
#   from amzn-drivers on purpose (Amazon Linux, RHEL: no kernel source
#   package), set ENA_SRC to the checkout or its release tarball.
#
# amzn-drivers: the out-of-tree driver builds from kernel headers alone; its
# own configure.sh compile-tests the kernel's features.  It already rings
# the doorbell on the drop path (2.12.0 and later), so the in-tree series
# does not apply: patches/amzn-X.Y (X.Y of its DRV_MODULE_GEN version, 2.17
# for 2.17.0) adds the drop-doorbell counter, the NAPI statistics fix and
# the version suffix.  OUTDIR then holds its ena/ and common/ directories
# and a file .amzn-drivers with its version; ena/Makefile builds it with
# its own Makefile.
#
# A source whose ena_start_xmit() drop path already rings the TX doorbell
# (this package's fix, Amazon's variant in amzn-drivers >= 2.12.0, or the
# unconditional doorbell Eric Dumazet suggested in the seed thread) needs
# nothing from this package: "nothing to do: in-tree ena is fine", exit 5.
#
# Patches: patches/X.Y/series lists them in order; they are applied with
# patch -p1 --fuzz=0.  ENA_SERIES=X.Y picks another directory (for a kernel
# series without its own).  When a patch fails, the one-line message says
# whether the source already has the change (the patch reverse-applies) or
# is simply a version these patches do not know.
#
# Exit status: 0 ok; 1 usage or probe/locate found nothing; 2 ENA_SRC is not
# usable; 3 no source found; 4 no patch series for the kernel series;
# 5 the source already has the changes; 6 a patch does not apply;
# 7 (--probe) the patched source does not compile; 8 (--probe) no kernel
# build tree for KVER.
# Every failure prints one line starting with "ena: " on stderr.
#
# For tests, ENA_MODULES_DIR (default /lib/modules) and ENA_USR_SRC
# (default /usr/src) move the places searched in steps 2 and 3.

set -u

ENA_REL=drivers/net/ethernet/amazon/ena
HERE=$(cd "$(dirname "$0")" && pwd)
MODULES_DIR=${ENA_MODULES_DIR:-/lib/modules}
USR_SRC=${ENA_USR_SRC:-/usr/src}

die()
{
	local rc=$1

	shift
	echo "ena: $*" >&2
	[ "$PROBE_LOG" = /dev/null ] || echo "ena: $*" >>"$PROBE_LOG"
	exit "$rc"
}

# Progress and warnings: on stdout and stderr, or only into the log when
# probing (a probe says one line).
say()
{
	if [ "$mode" = probe ]; then
		echo "ena: $*" >>"$PROBE_LOG"
	else
		echo "ena: $*"
	fi
}

warn()
{
	if [ "$mode" = probe ]; then
		echo "ena: warning: $*" >>"$PROBE_LOG"
	else
		echo "ena: warning: $*" >&2
	fi
}

usage()
{
	echo "usage: $0 [--pristine] KVER OUTDIR | --probe KVER [OUTDIR] | --locate KVER | --id KVER" >&2
	exit 1
}

mode=prepare
case ${1:-} in
--probe) mode=probe; shift ;;
--pristine) mode=pristine; shift ;;
--locate) mode=locate; shift ;;
--id) mode=id; shift ;;
esac
[ $# -ge 1 ] || usage
KVER=$1
OUTDIR=${2:-}
case $mode in
prepare | pristine) [ -n "$OUTDIR" ] || usage ;;
esac
# locate and probe report a missing source with exit 1, like before.
probe=0
case $mode in
probe | locate | id) probe=1 ;;
esac
pristine=0
[ $mode = pristine ] && pristine=1
PROBE_LOG=/dev/null
PROBE_OUT=
PROBE_TMP=
if [ $mode = probe ] && [ -n "${ENA_PROBE_LOG:-}" ]; then
	PROBE_LOG=$ENA_PROBE_LOG
	: >"$PROBE_LOG" || PROBE_LOG=/dev/null
fi

SERIES=$(printf '%s\n' "$KVER" | sed -n 's/^\([0-9]\{1,\}\.[0-9]\{1,\}\).*/\1/p')
[ -n "$SERIES" ] || die 1 "cannot tell the kernel series (X.Y) of '$KVER'"
PATCHES=$HERE/patches/${ENA_SERIES:-$SERIES}

how_to="install linux-source-$SERIES (apt-get install linux-source-$SERIES) or set ENA_SRC=<kernel tree | ENA directory | amzn-drivers checkout | tarball>"

is_tarball()
{
	case "$1" in
	*.tar | *.tar.* | *.tgz | *.tbz2 | *.txz) [ -f "$1" ] ;;
	*) return 1 ;;
	esac
}

# Sets SRC_KIND (dir or tarball), SRC_PATH and SRC_DESC, or fails.
locate_source()
{
	local d t

	if [ -n "${ENA_SRC:-}" ]; then
		if [ -f "$ENA_SRC/kernel/linux/ena/configure.sh" ] &&
		   [ -f "$ENA_SRC/kernel/linux/ena/ena_netdev.c" ]; then
			SRC_KIND=amzn SRC_PATH=$ENA_SRC/kernel/linux
			SRC_DESC="amzn-drivers checkout ENA_SRC=$ENA_SRC"
		elif [ -f "$ENA_SRC/configure.sh" ] && [ -f "$ENA_SRC/ena_netdev.c" ] &&
		     [ -d "$ENA_SRC/../common/ena_com" ]; then
			SRC_KIND=amzn SRC_PATH=$(cd "$ENA_SRC/.." && pwd)
			SRC_DESC="amzn-drivers ENA directory ENA_SRC=$ENA_SRC"
		elif is_tarball "$ENA_SRC" && [ -r "$ENA_SRC" ] &&
		     tar -tf "$ENA_SRC" 2>/dev/null | head -n 400 |
		     grep -q '^[^/]*/kernel/linux/ena/configure\.sh$'; then
			SRC_KIND=amzn-tarball SRC_PATH=$ENA_SRC
			SRC_DESC="amzn-drivers tarball ENA_SRC=$ENA_SRC"
		elif [ -f "$ENA_SRC/$ENA_REL/ena_netdev.c" ]; then
			SRC_KIND=dir SRC_PATH=$ENA_SRC/$ENA_REL
			SRC_DESC="kernel tree ENA_SRC=$ENA_SRC"
		elif [ -f "$ENA_SRC/ena_netdev.c" ]; then
			SRC_KIND=dir SRC_PATH=$ENA_SRC
			SRC_DESC="ENA directory ENA_SRC=$ENA_SRC"
		elif is_tarball "$ENA_SRC" && [ -r "$ENA_SRC" ]; then
			SRC_KIND=tarball SRC_PATH=$ENA_SRC
			SRC_DESC="tarball ENA_SRC=$ENA_SRC"
		else
			die 2 "ENA_SRC=$ENA_SRC is not a kernel tree with $ENA_REL/, an ENA directory with ena_netdev.c, an amzn-drivers checkout, or a readable tarball"
		fi
		return 0
	fi

	d=$MODULES_DIR/$KVER/source
	if [ -f "$d/$ENA_REL/ena_netdev.c" ]; then
		SRC_KIND=dir SRC_PATH=$d/$ENA_REL
		SRC_DESC="kernel tree $d"
		return 0
	fi

	for t in "$USR_SRC/linux-source-$SERIES".tar.* \
		 "$USR_SRC/linux-source-$SERIES".[0-9]*.tar.* \
		 "$USR_SRC/linux-source-$SERIES/linux-source-$SERIES".tar.* \
		 "$USR_SRC/linux-source-$SERIES".[0-9]*/"linux-source-$SERIES".[0-9]*.tar.*; do
		if is_tarball "$t" && [ -r "$t" ]; then
			SRC_KIND=tarball SRC_PATH=$t
			SRC_DESC="linux-source tarball $t"
			return 0
		fi
	done
	for d in "$USR_SRC/linux-source-$SERIES" \
		 "$USR_SRC/linux-source-$SERIES".[0-9]*; do
		if [ -f "$d/$ENA_REL/ena_netdev.c" ]; then
			SRC_KIND=dir SRC_PATH=$d/$ENA_REL
			SRC_DESC="kernel tree $d"
			return 0
		fi
	done

	[ $probe -eq 1 ] && die 1 "no ENA source for $KVER: $how_to"
	die 3 "no ENA source for $KVER: $how_to"
}

locate_source
# (an amzn-drivers source: its series is known once its version is read)
case $SRC_KIND in
amzn*) ;;
*) [ -f "$PATCHES/series" ] ||
	die 4 "no patch series for kernel series ${ENA_SERIES:-$SERIES} ($PATCHES/series; available: $(cd "$HERE/patches" && echo */ | tr -d /)); to build Amazon's driver instead, set ENA_SRC=<amzn-drivers checkout or release tarball>" ;;
esac

case $mode in
locate)
	echo "ena: source for $KVER: $SRC_DESC"
	exit 0
	;;
id)
	echo "$SRC_KIND $SRC_PATH"
	if [ "$SRC_KIND" = dir ]; then
		stat -L -c '%n %s %Y' "$SRC_PATH"/*.[ch]
	elif [ "$SRC_KIND" = amzn ]; then
		stat -L -c '%n %s %Y' "$SRC_PATH"/ena/* "$SRC_PATH"/common/ena_com/*
	else
		stat -L -c '%n %s %Y' "$SRC_PATH"
	fi
	exit 0
	;;
probe)
	# The dry run prepares into a scratch directory and compiles there.
	KDIR=${KDIR:-/lib/modules/$KVER/build}
	[ -f "$KDIR/Makefile" ] ||
		die 8 "no kernel build tree at $KDIR: install the headers for $KVER (Debian: linux-headers-$KVER) or set KDIR="
	PROBE_OUT=${OUTDIR%/}
	PROBE_TMP=$(mktemp -d "${TMPDIR:-/tmp}/ena-probe.XXXXXX") || die 1 "cannot create a temporary directory"
	OUTDIR=$PROBE_TMP/ena
	;;
esac

OUTDIR=${OUTDIR%/}
WORK=$(mktemp -d "$OUTDIR.tmp.XXXXXX") || die 1 "cannot create a directory next to $OUTDIR"
trap 'rm -rf "$WORK" ${PROBE_TMP:+"$PROBE_TMP"}' EXIT
# TREE: what is patched and built; an in-tree source is a flat ENA
# directory, amzn-drivers keeps ena/ and common/ side by side.
case $SRC_KIND in
amzn*) TREE=$WORK/amzn ;;
*) TREE=$WORK/ena ;;
esac
mkdir "$TREE"

# The kernel version the source comes from, from its top-level Makefile.
source_version()
{
	sed -n 's/^\(VERSION\|PATCHLEVEL\|SUBLEVEL\) = \([0-9]*\)$/\2/p' "$1" 2>/dev/null |
		paste -sd. -
}

SRC_VERSION=
case $SRC_KIND in
dir)
	cp -p "$SRC_PATH"/*.[ch] "$WORK/ena/" ||
		die 2 "cannot copy the ENA files from $SRC_PATH"
	[ -f "$SRC_PATH/../../../../../Makefile" ] &&
		SRC_VERSION=$(source_version "$SRC_PATH/../../../../../Makefile")
	;;
tarball)
	# Kernel tarballs have one top directory: try PREFIX/drivers/...
	# first, which costs one pass over the archive; list it to find
	# ena_netdev.c anywhere else only when that fails.
	mkdir "$WORK/x"
	first=$(tar -tf "$SRC_PATH" 2>/dev/null | head -n1)
	prefix=${first%%/*}
	member=$prefix/$ENA_REL
	top=$prefix/Makefile
	if ! tar -xf "$SRC_PATH" -C "$WORK/x" "$member" "$top" 2>/dev/null ||
	   [ ! -f "$WORK/x/$member/ena_netdev.c" ]; then
		rm -rf "$WORK/x" && mkdir "$WORK/x"
		member=$(tar -tf "$SRC_PATH" 2>/dev/null |
			 grep -m1 -E '(^|/)ena_netdev\.c$')
		[ -n "$member" ] ||
			die 2 "$SRC_DESC has no ena_netdev.c (is it a kernel source tarball?)"
		member=${member%ena_netdev.c}
		member=${member%/}
		member=${member:-.}
		top=
		tar -xf "$SRC_PATH" -C "$WORK/x" "$member" 2>/dev/null ||
			die 2 "cannot extract $member from $SRC_PATH"
	fi
	cp -p "$WORK/x/$member"/*.[ch] "$WORK/ena/" ||
		die 2 "no ENA source files in $member of $SRC_PATH"
	[ -n "$top" ] && SRC_VERSION=$(source_version "$WORK/x/$top")
	rm -rf "$WORK/x"
	;;
amzn)
	cp -pr "$SRC_PATH/ena" "$SRC_PATH/common" "$TREE/" ||
		die 2 "cannot copy ena/ and common/ from $SRC_PATH"
	;;
amzn-tarball)
	mkdir "$WORK/x"
	tar -xf "$SRC_PATH" -C "$WORK/x" --wildcards '*/kernel/linux/ena' '*/kernel/linux/common' 2>/dev/null ||
		die 2 "cannot extract kernel/linux/ena and kernel/linux/common from $SRC_PATH"
	cp -pr "$WORK/x"/*/kernel/linux/ena "$WORK/x"/*/kernel/linux/common "$TREE/" ||
		die 2 "no kernel/linux/ena in $SRC_PATH"
	rm -rf "$WORK/x"
	;;
esac
# amzn-drivers: its release (DRV_MODULE_GEN_*) picks the series.
AMZN_VERSION=
case $SRC_KIND in
amzn*)
	AMZN_VERSION=$(sed -n 's/^#define[[:space:]]*DRV_MODULE_GEN_\(MAJOR\|MINOR\|SUBMINOR\)[[:space:]]*\([0-9]*\).*/\2/p' \
		"$TREE/ena/ena_netdev.h" 2>/dev/null | paste -sd. -)
	[ -n "$AMZN_VERSION" ] || die 2 "$SRC_DESC: no DRV_MODULE_GEN_* version in ena/ena_netdev.h"
	SRC_VERSION="amzn-drivers $AMZN_VERSION"
	PATCHES=$HERE/patches/${ENA_SERIES:-amzn-${AMZN_VERSION%.*}}
	[ -f "$PATCHES/series" ] ||
		die 4 "no patch series for amzn-drivers $AMZN_VERSION ($PATCHES/series); available: $(cd "$HERE/patches" && echo */ | tr -d /)"
	;;
esac
say "using ENA source of ${SRC_VERSION:-an unknown kernel version} from $SRC_DESC for $KVER"
case $SRC_VERSION in
"" | "$SERIES" | "$SERIES".* | amzn-drivers*) ;;
*) warn "the source is from $SRC_VERSION, the kernel is $KVER (series $SERIES)" ;;
esac

# The drop path of ena_start_xmit(): from the error_drop_packet label to the
# end of the function.
drop_path()
{
	awk '/^(static )?netdev_tx_t ena_start_xmit\(/ { f = 1 }
	     f && /^error_drop_packet:/ { d = 1 }
	     d { print }
	     d && /^}/ { exit }' "$1"
}

# Which fix of the missing doorbell the source already has, if any: this
# package's series (its doorbell_pending flag, or the ena_tx_drop_doorbell()
# helper of its first releases), Amazon's doorbell when queue entries are in use and no
# further packet is promised, or an unconditional doorbell.
doorbell_fix()
{
	local dp

	dp=$(drop_path "$1/ena_netdev.c")
	if printf '%s\n' "$dp" | grep -q 'doorbell_pending\|ena_tx_drop_doorbell('; then
		echo "this package's fix"
	elif printf '%s\n' "$dp" | grep -q 'ena_com_used_q_entries(.*)' &&
	     printf '%s\n' "$dp" | grep -q 'ena_ring_tx_doorbell('; then
		echo "Amazon's variant, as in amzn-drivers 2.12.0 and later"
	elif printf '%s\n' "$dp" | grep -q '^[[:space:]]*ena_ring_tx_doorbell(' &&
	     ! printf '%s\n' "$dp" | grep -B1 '^[[:space:]]*ena_ring_tx_doorbell(' | grep -q '^[[:space:]]*if'; then
		echo "Eric Dumazet's variant, an unconditional doorbell"
	elif printf '%s\n' "$dp" | grep -q 'ena_ring_tx_doorbell(\|ena_com_write_sq_doorbell('; then
		echo "a doorbell call"
	fi
}

if [ $pristine -eq 0 ] && [ -z "$AMZN_VERSION" ]; then
	fix=$(doorbell_fix "$WORK/ena")
	[ -z "$fix" ] ||
		die 5 "nothing to do: in-tree ena is fine ($SRC_DESC already rings the TX doorbell on the drop path: $fix)"
fi
# amzn-drivers has its own doorbell fix; the series adds the rest, and
# needs that fix: an older release is not what patches/amzn-X.Y knows.
if [ $pristine -eq 0 ] && [ -n "$AMZN_VERSION" ]; then
	fix=$(doorbell_fix "$TREE/ena")
	[ -n "$fix" ] || die 6 "$SRC_DESC does not ring the TX doorbell on the drop path: not a release patches/${PATCHES##*/} supports"
	say "the drop-path doorbell is already there ($fix)"
fi

# patch(1) quietly, no fuzz, no questions, no backup files.
try_patch()
{
	patch -d "$1" -p1 --fuzz=0 -f -s --no-backup-if-mismatch "${@:3}" <"$2" >/dev/null 2>&1
}

PATCH_LIST=()
[ $pristine -eq 1 ] ||
	mapfile -t PATCH_LIST < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$PATCHES/series")
n=${#PATCH_LIST[@]}
for ((i = 0; i < n; i++)); do
	p=$PATCHES/${PATCH_LIST[i]}
	[ -f "$p" ] || die 1 "patch ${PATCH_LIST[i]} is listed in $PATCHES/series but missing"
	if try_patch "$TREE" "$p" --dry-run; then
		try_patch "$TREE" "$p" || die 6 "${PATCH_LIST[i]} failed after a clean dry run"
		continue
	fi
	# Already fixed?  Either the rest of the series comes off in reverse
	# order (a copy patched before) or this patch alone reverse-applies.
	cp -a "$TREE" "$WORK/rev"
	fixed=1
	for ((j = n - 1; j >= i; j--)); do
		try_patch "$WORK/rev" "$PATCHES/${PATCH_LIST[j]}" -R || { fixed=0; break; }
	done
	if [ $fixed -eq 0 ] && try_patch "$TREE" "$p" -R --dry-run; then
		fixed=1
	fi
	if [ $fixed -eq 1 ]; then
		die 5 "${PATCH_LIST[i]} does not apply because $SRC_DESC already has this fix (the patch reverse-applies): use a pristine source"
	fi
	die 6 "${PATCH_LIST[i]} does not apply to $SRC_DESC (${SRC_VERSION:-unknown version}) and does not reverse-apply either: unknown ENA source, not supported by patches/${PATCHES##*/}; set ENA_SRC= to the pristine source of this kernel"
done
if [ $pristine -eq 1 ]; then
	say "pristine source, no patch applied"
else
	say "applied $n patches from patches/${PATCHES##*/}"
fi
[ -z "$AMZN_VERSION" ] || echo "$AMZN_VERSION" >"$TREE/.amzn-drivers"

if [ $mode = probe ]; then
	# Compile as ena/Makefile does, with the version it would give.
	ver=${TAILFIX_VERSION:-$(sed -n 's/^PACKAGE_VERSION=//p' "$HERE/../dkms.conf" 2>/dev/null |
				 head -n1 | tr -d "\"'")}
	if [ -n "$AMZN_VERSION" ]; then
		# its own Makefile: configure.sh, then Kbuild
		make -C "$TREE/ena" BUILD_KERNEL="$KVER" KERNEL_BUILD_DIR="$KDIR" \
			KCFLAGS="-DENA_TAILFIX_VERSION=\\\"${ver:-unknown}\\\"" \
			-j"$(nproc 2>/dev/null || echo 1)" >"$WORK/make.log" 2>&1 &&
			cp "$TREE/ena/ena.ko" "$TREE/ena.ko"
	else
		cp "$HERE/ena.kbuild" "$WORK/ena/Kbuild" || die 1 "cannot copy $HERE/ena.kbuild"
		make -C "$KDIR" M="$WORK/ena" ENA_TAILFIX_VERSION="${ver:-unknown}" \
			-j"$(nproc 2>/dev/null || echo 1)" modules >"$WORK/make.log" 2>&1
	fi
	rc=$?
	[ "$PROBE_LOG" = /dev/null ] || cat "$WORK/make.log" >>"$PROBE_LOG"
	if [ $rc -ne 0 ] || [ ! -f "$TREE/ena.ko" ]; then
		err=$(grep -m1 -E ': (fatal )?error: |Error [0-9]' "$WORK/make.log" |
		      sed "s|$TREE/||g")
		die 7 "the patched ENA source from $SRC_DESC does not compile for $KVER: ${err:-see the compiler output}"
	fi
	if [ -n "$PROBE_OUT" ]; then
		rm -rf "$PROBE_OUT"
		mv "$TREE" "$PROBE_OUT" || die 1 "cannot create $PROBE_OUT"
	fi
	echo "ena: builds for $KVER from $SRC_DESC (${SRC_VERSION:-unknown version}, $n patches)"
	exit 0
fi

rm -rf "$OUTDIR"
mv "$TREE" "$OUTDIR" || die 1 "cannot create $OUTDIR"
