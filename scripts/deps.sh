#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deps.sh [build|check|full|demo|bench|pkg|arm64-headers]: install with apt
# what that job needs, and nothing more: `make demo` boots one amd64 guest
# and needs neither the arm64 tool chain nor the kernel sources (the guest
# builds what it runs through DKMS; without a kernel source ena is left out
# of it, which it does not use); `make bench` boots the amd64 guests and the
# arm64-min guest, whose modules are cross-built: the arm64 tool chain and
# headers too.  Already-installed packages are not
# fetched again; apt's own progress lines are shown.
#   pkg: what `make deb` and `make rpm` need (debhelper, dh-dkms, which
#   provides dh-sequence-dkms, lintian, rpm's rpmbuild); check and full
#   include it, for tests/host/packaging.sh.
#   arm64-headers: also the arm64 cloud kernel headers of the matrix (6.1 and
#   6.12, ABI from Debian's meta packages), unpacked under
#   $TAILFIX_CACHE/arm64/headers with their kbuild helpers pointed at the
#   host's own linux-kbuild, for `make ARCH=arm64` (see the Makefile).
#   check and full fetch them too: `make lint` (a host check of make check)
#   builds every module for the arm64 kernels as well.
set -e
pkg="debhelper dh-dkms dpkg-dev fakeroot lintian rpm"
build="build-essential make gcc dkms kmod patch xz-utils linux-headers-cloud-amd64
linux-headers-6.12-cloud-amd64 linux-source-6.1 linux-source-6.12 coccinelle sparse"
# (bison and flex: packetdrill for the guests, tests/tools/build-packetdrill.sh)
# (curl: tests/host/tsq_probe_prometheus.sh scrapes node_exporter with it)
# (procps: pgrep and pkill, which the harness stops a guest's processes
# with; a minimal Debian 12 has none)
check="$build qemu-system-x86 debootstrap e2fsprogs spin rsync iproute2 gnuplot-nox
ca-certificates bison flex curl procps $pkg"
# The arm64 guest (6.1 in quick mode) is part of `make check`: a qemu-user
# chroot builds its image and runs its DKMS install, qemu-system boots it.
# (mmdebstrap and cpio: the unpacked arm64-min root, tests/vm/image-extract.sh)
arm64="qemu-system-arm qemu-user-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross mmdebstrap cpio"
# The debug guest kernel (tests/vm/debug-kernel.sh; check-full, make
# debug-kernel) is built here.
kbuild="bc bison flex libelf-dev libssl-dev cpio dpkg-dev"
guest="build-essential make gcc kmod xz-utils qemu-system-x86 debootstrap e2fsprogs rsync
iproute2 gnuplot-nox ca-certificates procps"
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
case ${1:-check} in
build) want=$build ;;
pkg) want=$pkg ;;
check) want="$check $arm64" ;;
full) want="$check $arm64 $kbuild" ;;
debug-kernel) want="$build $kbuild" ;;
demo) want=$guest ;;
# (bench counts tsq_probe's instructions in the arm64-min guest too)
bench) want="$guest $arm64" ;;
arm64-headers) want="$build $arm64" ;;
*) echo "deps.sh: build|check|full|debug-kernel|demo|bench|pkg|arm64-headers" >&2; exit 2 ;;
esac

# apt_install PKG...: install what is missing.
apt_install() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "deps.sh: installing ${#missing[@]} packages with apt (a few minutes on a fresh machine): ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || { echo "deps.sh: run as root (or: sudo apt-get install ${missing[*]})" >&2; exit 1; }
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" |
		grep --line-buffered -E '^(Get:|Setting up )' | sed -u 's/^/deps.sh: apt: /'
	[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "deps.sh: apt-get install failed" >&2; exit 1; }
}

# dep_of PKG [REGEX]: the first package PKG depends on (matching REGEX), as
# a plain name ("<name:arm64>" is how apt shows an arch:all dependency).
dep_of() {
	apt-cache depends --no-recommends --no-suggests "$1" 2>/dev/null |
		awk -v re="${2:-.}" '$1 == "Depends:" { gsub(/[<>]/, "", $2); sub(/:.*$/, "", $2)
			if ($2 ~ re) { print $2; exit } }'
}

# The arm64 headers of every kernel of the matrix, unpacked (not installed:
# the host stays amd64) and made usable for a cross build.
arm64_headers() {
	local dir=$cache/arm64/headers debs=$cache/arm64/debs meta hdr common kbuild k
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		[ "$(id -u)" -eq 0 ] || { echo "deps.sh: run as root: dpkg --add-architecture arm64" >&2; exit 1; }
		dpkg --add-architecture arm64
		apt-get update -q >/dev/null
	fi
	apt-cache show linux-headers-cloud-arm64:arm64 >/dev/null 2>&1 || apt-get update -q >/dev/null
	mkdir -p "$dir" "$debs"
	for meta in linux-headers-cloud-arm64 linux-headers-6.12-cloud-arm64; do
		hdr=$(dep_of "$meta:arm64")
		[ -n "$hdr" ] || { echo "deps.sh: apt knows no $meta:arm64" >&2; exit 1; }
		k=${hdr#linux-headers-}
		[ -f "$dir/usr/src/$hdr/.tailfix-ready" ] && continue
		common=$(dep_of "$hdr:arm64" '-common')
		kbuild=$(dep_of "$hdr:arm64" '^linux-kbuild')
		echo "deps.sh: arm64 headers $k ($common, host $kbuild)"
		# The helpers (fixdep, modpost, ...) must run here: the host's
		# own build of the same linux-kbuild version.
		apt_install "$kbuild"
		(cd "$debs" && rm -f "$hdr"_*.deb "$common"_*.deb &&
			apt-get download -q -o APT::Sandbox::User=root "$hdr:arm64" "$common" >/dev/null)
		dpkg -x "$debs/$hdr"_*_arm64.deb "$dir"
		dpkg -x "$debs/$common"_*_all.deb "$dir"
		# Absolute paths of the installed package, moved into the cache.
		sed -i "s,^include /usr/src/,include $dir/usr/src/," "$dir/usr/src/$hdr/Makefile"
		for k in "$hdr" "$common"; do
			ln -sfn "/usr/lib/$kbuild/scripts" "$dir/usr/src/$k/scripts"
			ln -sfn "/usr/lib/$kbuild/tools" "$dir/usr/src/$k/tools"
		done
		rm -f "$debs/$hdr"_*.deb "$debs/$common"_*.deb
		touch "$dir/usr/src/$hdr/.tailfix-ready"
	done
}

# promtool, the Prometheus metrics checker, taken out of Debian's prometheus
# package into $TAILFIX_CACHE/promtool: installing the package would also
# install and start a Prometheus server, which a build host does not want.
promtool_fetch() {
	local dir=$cache/promtool
	[ -x "$dir/usr/bin/promtool" ] && return 0
	command -v promtool >/dev/null && return 0
	echo "deps.sh: promtool (from the prometheus package, not installed)"
	mkdir -p "$dir"
	(cd "$dir" && rm -f prometheus_*.deb &&
		apt-get download -q -o APT::Sandbox::User=root prometheus >/dev/null &&
		dpkg-deb --fsys-tarfile prometheus_*.deb | tar -x ./usr/bin/promtool &&
		rm -f prometheus_*.deb) || { echo "deps.sh: could not fetch promtool" >&2; exit 1; }
}

# node_exporter (Debian's prometheus-node-exporter) the same way, into
# $TAILFIX_CACHE/node-exporter: tests/host/tsq_probe_prometheus.sh scrapes
# tsq-probe-stat's output through its textfile collector on a localhost port;
# the package would also start it as a service.
node_exporter_fetch() {
	local dir=$cache/node-exporter
	[ -x "$dir/usr/bin/prometheus-node-exporter" ] && return 0
	command -v prometheus-node-exporter >/dev/null && return 0
	echo "deps.sh: node_exporter (from the prometheus-node-exporter package, not installed)"
	mkdir -p "$dir"
	(cd "$dir" && rm -f prometheus-node-exporter_*.deb &&
		apt-get download -q -o APT::Sandbox::User=root prometheus-node-exporter >/dev/null &&
		dpkg-deb --fsys-tarfile prometheus-node-exporter_*.deb |
		tar -x ./usr/bin/prometheus-node-exporter &&
		rm -f prometheus-node-exporter_*.deb) ||
		{ echo "deps.sh: could not fetch node_exporter" >&2; exit 1; }
}

# The ENA source of a kernel series that ena/patches has a series for
# (tests/host/ena_static_check.sh checks it) and this Debian 12 host cannot
# install: linux-source-X.Y of bullseye (5.x) or trixie-backports (7.x,
# and anything newer than bookworm).  Its .deb is
# fetched through a private sources list and apt state (the host's apt
# configuration is not touched) and only the tarball is kept, as
# $TAILFIX_CACHE/linux-source/linux-source-X.Y.tar.xz.
other_source() {
	local series=$1 dir=$cache/linux-source tmp opts suite=trixie-backports
	[ -f "$dir/linux-source-$series.tar.xz" ] && return 0
	case $series in 5.*) suite=bullseye ;; esac
	echo "deps.sh: linux-source-$series from $suite (its tarball only, into $dir)"
	tmp=$(mktemp -d)
	mkdir -p "$tmp/lists/partial" "$tmp/archives/partial" "$dir"
	echo "deb ${TAILFIX_MIRROR:-http://deb.debian.org/debian} $suite main" >"$tmp/sources.list"
	opts=(-q -o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/nonexistent
		-o Dir::State::Lists="$tmp/lists" -o Dir::Cache::Archives="$tmp/archives"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root)
	if apt-get "${opts[@]}" update >/dev/null &&
		(cd "$tmp" && apt-get "${opts[@]}" download "linux-source-$series" >/dev/null) &&
		dpkg-deb --fsys-tarfile "$tmp"/linux-source-"$series"_*.deb |
		tar -xO "./usr/src/linux-source-$series.tar.xz" >"$tmp/src.tar.xz" &&
		[ -s "$tmp/src.tar.xz" ]; then
		mv "$tmp/src.tar.xz" "$dir/linux-source-$series.tar.xz"
		rm -rf "$tmp"
	else
		rm -rf "$tmp"
		echo "deps.sh: could not fetch linux-source-$series from $suite" >&2
		exit 1
	fi
}

apt_install $want
# spatch (coccinelle) loads the shared Python library when it starts and
# fails every run without it, but its package does not depend on it: the
# library of the python3 it depends on (Debian 12: libpython3.11).
if echo $want | grep -qw coccinelle; then
	py=$(dep_of python3 '^python3\.[0-9]+$')
	[ -z "$py" ] || apt_install "lib$py"
fi
case ${1:-check} in check|full|bench|arm64-headers) arm64_headers ;; esac
# (every kernel series ena/patches has a series for, whose source apt did
# not put in /usr/src: 5.10 and 7.3 today)
other_sources() {
	local d s
	for d in "$(dirname "$0")"/../ena/patches/[0-9]*/; do
		s=$(basename "$d")
		[ -e "/usr/src/linux-source-$s.tar.xz" ] || other_source "$s"
	done
}
case ${1:-check} in check|full) promtool_fetch; node_exporter_fetch; other_sources ;; esac
exit 0
