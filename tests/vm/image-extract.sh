#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# image-extract.sh ARCH DIR PKGS
#	Build a Debian 12 root of ARCH (arm64) in DIR for image.sh's
#	arm64-min kind by unpacking packages only: mmdebstrap's extract
#	variant downloads PKGS (comma-separated), the packages of priority
#	required (debootstrap's minbase: the Essential set, mount, apt, ...)
#	and everything they depend on, and unpacks them; no maintainer script
#	runs, so nothing is emulated and a cold build takes about a minute
#	instead of the quarter of an hour of image-foreign.sh's emulated
#	second stage.  What the maintainer scripts would have made and a
#	test guest needs is made here instead:
#	  - /etc/passwd and /etc/group (base-passwd's), /etc/mtab, and the
#	    alternatives the tests call by their generic name (awk, which);
#	  - modules.dep of each kernel (the host's depmod: it reads modules of
#	    any architecture);
#	  - the Python byte code, when the host has the same Python version
#	    (byte code does not depend on the architecture), so that the guest
#	    does not compile scapy under emulation in every boot;
#	  - /boot/initrd.img-KVER: busybox (busybox-static, among PKGS), the
#	    virtio modules the kernel needs to reach its disk, and an /init
#	    that mounts root= and starts init= on it (run.sh's command line).
#	There is no DKMS and no compiler in this root: stage.sh cross-builds
#	the package's modules on the host and installs them.
set -euo pipefail

log() { echo "image-extract.sh: $*" >&2; }

arch=$1 dir=$2 pkgs=$3
mirror=${TAILFIX_MIRROR:-http://deb.debian.org/debian}
command -v mmdebstrap >/dev/null || { log "no mmdebstrap: apt-get install mmdebstrap"; exit 1; }

# The host's apt sources (bookworm, -updates, -security), so the root gets
# the kernel ABI of the arm64 headers scripts/deps.sh unpacked from them.
sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources="deb $mirror bookworm main"

t=$SECONDS
log "mmdebstrap --variant=extract $arch into $dir"
mmdebstrap --mode=root --variant=extract --architectures="$arch" \
	--include='?essential' --include='?priority(required)' --include="$pkgs" bookworm "$dir" "$sources" >&2
log "packages unpacked in $((SECONDS - t)) s"

# What base-passwd's, mawk's and debianutils' maintainer scripts make.
for f in passwd group; do
	[ -e "$dir/etc/$f" ] || cp "$dir/usr/share/base-passwd/$f.master" "$dir/etc/$f"
done
ln -sfn ../proc/self/mounts "$dir/etc/mtab"
link_alt() {	# link_alt LINK TARGET: LINK -> TARGET unless LINK exists
	[ -e "$dir$1" ] || [ ! -e "$dir$2" ] || ln -s "$2" "$dir$1"
}
link_alt /usr/bin/awk /usr/bin/mawk
link_alt /usr/bin/nawk /usr/bin/mawk
link_alt /usr/bin/which /usr/bin/which.debianutils

# Byte code of the guest's Python, compiled by the host's Python of the same
# version (a different version's would just be ignored and rebuilt).
py=$(cd "$dir/usr/lib" && ls -d python3.* 2>/dev/null | sort -V | tail -1)
if [ -n "$py" ] && [ -x /usr/bin/python3 ] &&
	[ "$(/usr/bin/python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')" = "$py" ]; then
	t=$SECONDS
	for d in "/usr/lib/$py" /usr/lib/python3/dist-packages; do
		[ -d "$dir$d" ] || continue
		/usr/bin/python3 -m compileall -q -j0 -x '/(test|tests|idlelib|lib2to3)/' \
			-s "$dir" -p / "$dir$d" >/dev/null 2>&1 || true
	done
	log "Python byte code compiled on the host in $((SECONDS - t)) s"
fi

# deps_of KVER MOD: MOD's modules.dep path and those of what it depends on,
# dependencies first.
deps_of() {
	awk -v m="$2.ko" '{ f = $1; sub(/:$/, "", f); n = f; sub(/.*\//, "", n)
		if (n == m) { for (i = NF; i > 1; i--) print $i; print f; exit } }' \
		"$dir/lib/modules/$1/modules.dep"
}

kvers=$(cd "$dir/lib/modules" && ls)
[ -n "$kvers" ] || { log "no kernel in $dir/lib/modules"; exit 1; }
[ -x "$dir/bin/busybox" ] || { log "no /bin/busybox in the root (busybox-static)"; exit 1; }
for k in $kvers; do
	depmod -b "$dir" -a "$k"
	# The initramfs: busybox, the disk's modules (built in on kernels
	# that have them built in: then none is listed) and /init.
	ird=$(mktemp -d)
	mkdir -p "$ird/bin" "$ird/lib/modules"
	cp "$dir/bin/busybox" "$ird/bin/"
	for m in virtio_mmio virtio_pci virtio_blk; do
		deps_of "$k" "$m"
	done | awk '!seen[$0]++' >"$ird/modules"
	while read -r m; do
		mkdir -p "$ird/lib/modules/$(dirname "$m")"
		cp "$dir/lib/modules/$k/$m" "$ird/lib/modules/$m"
	done <"$ird/modules"
	cat >"$ird/init" <<'EOF'
#!/bin/busybox sh
# The test guest's initramfs (tests/vm/image-extract.sh): load the disk's
# modules, mount root= read-write, start init= on it.
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do
	insmod "/lib/modules/$m" || echo "initramfs: insmod $m failed"
done </modules
root=/dev/vda init=/sbin/init
for a in $(cat /proc/cmdline); do
	case $a in root=*) root=${a#root=} ;; init=*) init=${a#init=} ;; esac
done
i=0
while [ ! -b "$root" ] && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
mount -t ext4 -o rw "$root" /root || { echo "initramfs: cannot mount $root"; exit 1; }
# (guest-init.sh mounts /proc and /sys again: only /dev, with the console,
# goes across)
mount --move /dev /root/dev
umount /sys /proc
exec switch_root /root "$init"
EOF
	chmod 0755 "$ird/init"
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$dir/boot/initrd.img-$k"
	rm -rf "$ird"
	log "kernel $k: modules.dep and /boot/initrd.img-$k"
done
