#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# install.sh install|uninstall VERSION PREFIX -- `make install` / `make uninstall`.
# install:   copy the DKMS source (scripts/source-files.sh) to
#            /usr/src/ena-tcp-tailfix-VERSION, dkms add,
#            dkms install for every kernel with headers, the tsq-probe-stat
#            CLI into PREFIX/sbin, and modprobe tsq_probe and tcp_dctcp_fixed
#            when the running kernel is one of them.  ena is not reloaded on
#            a live host (it would drop the network): it takes over at the
#            next boot, or by hand from a console (see ena/README.md).
# uninstall: unload, dkms remove --all, remove the source and the CLI.
set -euo pipefail
action=$1 version=$2 prefix=${3:-/usr/local}
top=$(cd "$(dirname "$0")/.." && pwd)
pkg=ena-tcp-tailfix
src=/usr/src/$pkg-$version
[ "$(id -u)" -eq 0 ] || { echo "$action needs root: sudo make $action"; exit 1; }
command -v dkms >/dev/null || { echo "dkms is not installed: apt-get install dkms (or dnf install dkms)"; exit 1; }

# A package (make deb, make rpm) owns the same directory: not ours to change.
owner=
if command -v dpkg-query >/dev/null && o=$(dpkg-query -S "$src" 2>/dev/null); then
	owner=${o%%:*}
elif command -v rpm >/dev/null && o=$(rpm -qf "$src" 2>/dev/null); then
	owner=$o
fi
[ -z "$owner" ] || { echo "$src belongs to the package $owner: remove it with apt or dnf instead"; exit 1; }

case $action in
install)
	kernels=$(ls -d /lib/modules/*/build 2>/dev/null | sed 's,/lib/modules/,,;s,/build,,')
	[ -n "$kernels" ] || { echo "no kernel headers: apt-get install linux-headers-\$(uname -r)"; exit 1; }
	dkms remove "$pkg/$version" --all >/dev/null 2>&1 || true
	rm -rf "$src"
	mkdir -p "$src"
	# The same files as the deb and the rpm (scripts/source-files.sh).
	"$top/scripts/source-files.sh" "$top" | tar -C "$top" --null -T - -cf - | tar -C "$src" -xf -
	dkms add "$pkg/$version"
	for k in $kernels; do
		echo "== dkms install $pkg/$version for $k"
		dkms install "$pkg/$version" -k "$k"
	done
	install -D -m 0755 "$top/tsq_probe/tsq-probe-stat" "$prefix/sbin/tsq-probe-stat"
	if echo "$kernels" | grep -qx "$(uname -r)"; then
		modprobe tsq_probe && echo "tsq_probe loaded: tsq-probe-stat"
		modprobe tcp_dctcp_fixed && echo "tcp_dctcp_fixed loaded: sysctl net.ipv4.tcp_available_congestion_control"
		echo "ena: the patched driver is installed and takes over at the next boot"
	fi
	dkms status "$pkg"
	;;
uninstall)
	modprobe -r tsq_probe 2>/dev/null || true
	modprobe -r tcp_dctcp_fixed 2>/dev/null || echo "tcp_dctcp_fixed still in use: close its sockets, then modprobe -r tcp_dctcp_fixed"
	dkms remove "$pkg/$version" --all 2>/dev/null || true
	rm -rf "$src" "$prefix/sbin/tsq-probe-stat"
	echo "removed $pkg $version; the in-tree ena returns at the next boot"
	;;
*)
	echo "install.sh install|uninstall VERSION [PREFIX]" >&2
	exit 2 ;;
esac
