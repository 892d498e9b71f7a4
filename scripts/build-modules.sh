#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build-modules.sh KVER OUTDIR [make args...]
# Build every module of the package for kernel KVER in OUTDIR (a copy of the
# module directories, so several kernels can be built side by side).  Extra
# arguments go to kbuild (W=1, C=2, ARCH=..., CROSS_COMPILE=...).  ena is
# built when its source can be found; otherwise the reason is printed and the
# other modules are still built.
#
# build-modules.sh --probe KVER STATEDIR
#	For DKMS (dkms.conf): build each module on its own for KVER against
#	KDIR (default /lib/modules/KVER/build) in STATEDIR/KVER/, and print
#	the names of those that built, in dkms.conf's order.  The result is
#	kept there with a key made of everything the build depends on (the
#	package's sources, the kernel's build tree, the ENA source found,
#	the environment that chooses it), so dkms.conf, which DKMS sources
#	several times per build, pays for the builds once per kernel.
# build-modules.sh --dkms KVER STATEDIR DIR
#	For DKMS (`make dkms-build`): the same probe (a cache hit when
#	dkms.conf ran it), then the modules that built are put where
#	dkms.conf's BUILT_MODULE_LOCATION says, under DIR, and each module
#	gets one line: built, or skipped and why (ena, built, is put in
#	place only where the operator opted in: dkms.conf).  Fails only when
#	no module builds at all (dkms.conf then keeps DKMS from calling it).
# TAILFIX_JOBS=N: make -jN for the probe's builds (default: the CPUs).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
MODULES="tsq_probe tcp_dctcp_fixed ena"

# Where dkms.conf expects each module, relative to the package directory.
location() {
	case $1 in
	ena) echo "ena/build-$2" ;;
	*) echo "$1" ;;
	esac
}

# Everything a probe result depends on, hashed.
probe_key() {
	local kver=$1 kdir=$2 f

	{
		printf '%s\n' "$kver" "$kdir" "${ARCH:-}" "${CROSS_COMPILE:-}" \
			"${ENA_SRC:-}" "${ENA_SERIES:-}" "${ENA_MODULES_DIR:-}" \
			"${ENA_USR_SRC:-}" "${TAILFIX_VERSION:-}"
		stat -L -c '%s %Y' "$kdir/Makefile" "$kdir/.config" "$kdir/Module.symvers" 2>&1
		"$top/ena/prepare-source.sh" --id "$kver" 2>&1 || true
		cd "$top" || return
		for f in dkms.conf scripts/build-modules.sh \
			 tsq_probe/Kbuild tsq_probe/*.[ch] \
			 tcp_dctcp_fixed/Kbuild tcp_dctcp_fixed/*.[ch] \
			 ena/prepare-source.sh ena/ena.kbuild ena/patches/*/*; do
			[ -f "$f" ] || continue
			echo "$f"
			cat "$f"
		done
	} | sha256sum | cut -d' ' -f1
}

# probe_one NAME KVER KDIR WORK: build one module in WORK, leave WORK/NAME.ko
# and print "ok NAME" or "skip NAME reason" (one line).
probe_one() {
	local m=$1 kver=$2 kdir=$3 work=$4 line err

	if [ ! -f "$kdir/Makefile" ]; then
		echo "skip $m no kernel build tree at $kdir: install linux-headers-$kver"
		return
	fi
	if [ "$m" = ena ]; then
		if line=$(ENA_PROBE_LOG=$work/ena.log TMPDIR=$work KDIR=$kdir \
			  "$top/ena/prepare-source.sh" --probe "$kver" "$work/ena" 2>&1); then
			cp "$work/ena/ena.ko" "$work/ena.ko"
			rm -rf "$work/ena"
			echo "ok ena $line"
		else
			echo "skip ena ${line##*$'\n'}"
		fi
		return
	fi
	mkdir -p "$work/src/$m"
	cp "$top/$m"/*.[ch] "$top/$m/Kbuild" "$work/src/$m/" 2>/dev/null || true
	if make -C "$kdir" M="$work/src/$m" -j"${TAILFIX_JOBS:-$(nproc 2>/dev/null || echo 1)}" modules \
		>"$work/$m.log" 2>&1 && [ -f "$work/src/$m/$m.ko" ]; then
		cp "$work/src/$m/$m.ko" "$work/$m.ko"
		echo "ok $m"
	else
		err=$(grep -m1 -E ': (fatal )?error: |Error [0-9]' "$work/$m.log" |
		      sed "s|$work/src/||g")
		echo "skip $m $m does not compile for $kver: ${err:-see $work/$m.log}"
	fi
}

# probe KVER STATEDIR: make STATEDIR/KVER/result current; print its path.
probe() {
	local kver=$1 state=$2 kdir=${KDIR:-/lib/modules/$1/build}
	local dir=$state/$1 key tmp m

	key=$(probe_key "$kver" "$kdir")
	if [ "$(cat "$dir/key" 2>/dev/null)" = "$key" ] && [ -f "$dir/result" ]; then
		echo "$dir"
		return
	fi
	mkdir -p "$state"
	exec 9>"$state/.lock-$kver"
	command -v flock >/dev/null && flock 9
	if [ "$(cat "$dir/key" 2>/dev/null)" != "$key" ] || [ ! -f "$dir/result" ]; then
		echo "ena-tcp-tailfix: building each module for $kver to see which build (ena takes about a minute)" >&2
		tmp=$(mktemp -d "$state/.$kver.XXXXXX")
		# Side by side: ena's extraction and compile take longest.  The
		# modules' Kbuild reads the version from ../dkms.conf.
		mkdir -p "$tmp/src"
		cp "$top/dkms.conf" "$tmp/src/"
		for m in $MODULES; do
			probe_one "$m" "$kver" "$kdir" "$tmp" >"$tmp/$m.result" &
		done
		wait
		for m in $MODULES; do
			cat "$tmp/$m.result" >>"$tmp/result"
		done
		rm -rf "$tmp/src" "$tmp"/*.result
		echo "$key" >"$tmp/key"
		rm -rf "$dir"
		mv "$tmp" "$dir"
	fi
	exec 9>&-
	echo "$dir"
}

case ${1:-} in
--probe)
	[ $# -eq 3 ] || { echo "usage: $0 --probe KVER STATEDIR" >&2; exit 1; }
	dir=$(probe "$2" "$3")
	sed -n 's/^ok \([^ ]*\).*/\1/p' "$dir/result" | paste -sd' ' -
	exit 0
	;;
--dkms)
	[ $# -eq 4 ] || { echo "usage: $0 --dkms KVER STATEDIR DIR" >&2; exit 1; }
	kver=$2 dir=$(probe "$2" "$3") out=$4 built=0
	while read -r verdict m reason; do
		if [ "$verdict" = ok ] && [ "$m" = ena ] &&
			! grep -qsx 'ENA_DRIVER=tailfix' "${TAILFIX_CONF:-/etc/ena-tcp-tailfix.conf}"; then
			echo "ena-tcp-tailfix: ena built for $kver${reason:+ ($reason)}, not installed:" \
			     "the kernel's own ena stays in use (opt in: ena-tcp-tailfix ena enable)"
		elif [ "$verdict" = ok ]; then
			mkdir -p "$out/$(location "$m" "$kver")"
			cp "$dir/$m.ko" "$out/$(location "$m" "$kver")/"
			echo "ena-tcp-tailfix: $m built for $kver${reason:+ ($reason)}"
			built=$((built + 1))
		else
			log=
			[ ! -f "$dir/$m.log" ] || log=" (log: $dir/$m.log)"
			echo "ena-tcp-tailfix: $m skipped for $kver: $reason$log"
		fi
	done <"$dir/result"
	[ $built -gt 0 ] || { echo "ena-tcp-tailfix: no module builds for $kver"; exit 1; }
	exit 0
	;;
esac

kver=$1 out=$2
shift 2
kdir=${KDIR:-/lib/modules/$kver/build}
[ -d "$kdir" ] || { echo "no headers for $kver ($kdir): install linux-headers-$kver" >&2; exit 1; }
mkdir -p "$out"
cp "$top/dkms.conf" "$out/"
for d in tsq_probe tcp_dctcp_fixed; do
	[ -f "$top/$d/Kbuild" ] || continue
	mkdir -p "$out/$d"
	cp "$top/$d"/*.[ch] "$top/$d/Kbuild" "$out/$d/" 2>/dev/null || true
	make -s -C "$kdir" M="$out/$d" "$@" modules
	echo "  $kver: $out/$d/$d.ko"
done
if [ -x "$top/ena/prepare-source.sh" ]; then
	if reason=$("$top/ena/prepare-source.sh" --locate "$kver" 2>&1); then
		make -s -C "$top/ena" KVER="$kver" KDIR="$kdir" "$@"
		mkdir -p "$out/ena" && cp "$top/ena/build-$kver/ena.ko" "$out/ena/"
		echo "  $kver: $out/ena/ena.ko"
	else
		echo "  $kver: ena skipped: $reason"
	fi
fi
