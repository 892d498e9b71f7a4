#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh: print the .deb files (image and headers) of the debug
# guest kernel, building them first when they are missing (with --cached:
# exit 3 instead, having built nothing and waited for no build).
#
# The stock Debian kernels have no lockdep and no KASAN, so the locking and
# memory bugs the modules could have cannot show in their guests.  This
# kernel is Debian's own 6.12 source (linux-source-6.12) with the cloud-amd64
# configuration of the host's 6.12 headers, the debug options of
# debug-kernel.config on top, and only the modules of debug-kernel.modules
# (make localmodconfig), built with `make bindeb-pkg` so that the guest gets
# it, and DKMS builds the package for it, as for any Debian kernel.
# Its release is 6.12.N-tailfix-debug.
#
# Cached under $TAILFIX_CACHE/debug-kernel/KEY (default
# /var/cache/ena-tcp-tailfix); KEY is the source package version and the
# three input files, so a Debian update or an edit rebuilds it.  Building
# takes $cache/debug-kernel/lock; the build runs at idle priority.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
log() { echo "debug-kernel.sh: $*" >&2; }
. "$here/vm-lib.sh"

tarball=/usr/src/linux-source-6.12.tar.xz
[ -f "$tarball" ] || { log "no $tarball (apt install linux-source-6.12)"; exit 1; }
srcver=$(dpkg-query -W -f '${Version}' linux-source-6.12)
hdrs=$(ls -d /usr/src/linux-headers-6.12.*-cloud-amd64 2>/dev/null | sort -V | tail -1)
[ -f "$hdrs/.config" ] || { log "no 6.12 cloud-amd64 headers (apt install linux-headers-6.12-cloud-amd64)"; exit 1; }
key=$(cat "$here/debug-kernel.config" "$here/debug-kernel.modules" "$hdrs/.config" |
	{ echo "$srcver"; sha256sum; } | sha256sum | cut -c1-12)
out=$cache/debug-kernel/$key
mkdir -p "$cache/debug-kernel"
debs() { ls "$out"/linux-image-*.deb "$out"/linux-headers-*.deb; }
if [ "${1:-}" = --cached ] && [ ! -f "$out/.complete" ]; then
	log "no debug kernel cached for key $key (make debug-kernel builds it)"
	exit 3
fi
vm_lock "$cache/debug-kernel/lock" -x "the debug kernel build" || exit 1

if [ -f "$out/.complete" ]; then
	debs
	exit 0
fi

# Other keys' builds are dropped: one debug kernel is kept.
for d in "$cache"/debug-kernel/*/; do
	[ "${d%/}" = "$out" ] || rm -rf "${d%/}"
done
rm -rf "$out"
mkdir -p "$out/build"
t0=$SECONDS
log "building the debug kernel from $tarball ($srcver) in $out (about 30 min on 2 cores)"
tar -C "$out/build" -xf "$tarball"
src=$out/build/linux-source-6.12
cp "$hdrs/.config" "$src/.config"
grep -v '^#' "$here/debug-kernel.modules" | grep . |
	awk '{ print $1, 0, 0 }' >"$out/lsmod"
build() { nice -n 19 chrt -i 0 make -C "$src" -j"$(nproc)" "$@"; }
# Keep only the listed modules, then the debug options on top of that.
{ yes '' || true; } | build LSMOD="$out/lsmod" localmodconfig >"$out/config.log" 2>&1
"$src/scripts/kconfig/merge_config.sh" -m -O "$src" "$src/.config" \
	"$here/debug-kernel.config" >>"$out/config.log" 2>&1
build olddefconfig >>"$out/config.log" 2>&1
# Every option of the fragment must have survived olddefconfig.
bad=0
while IFS= read -r line; do
	case $line in '#'* | '') continue ;; esac
	opt=${line%%=*} val=${line#*=}
	if [ "$val" = n ]; then
		! grep -q "^$opt=" "$src/.config" || { log "$opt is set, wanted off"; bad=1; }
	else
		grep -qxF "$line" "$src/.config" || { log "$line did not stick: $(grep "^$opt=" "$src/.config" || echo unset)"; bad=1; }
	fi
done <"$here/debug-kernel.config"
[ "$bad" = 0 ] || exit 1
if ! build bindeb-pkg KDEB_PKGVERSION="$srcver-tailfix1" >"$out/build.log" 2>&1; then
	tail -40 "$out/build.log" >&2
	log "build failed (log: $out/build.log)"
	exit 1
fi
mv "$out"/build/linux-image-*.deb "$out"/build/linux-headers-*.deb "$out/"
rm -rf "$out/build"
touch "$out/.complete"
log "built in $((SECONDS - t0)) s"
debs
