#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# reboots.sh IMG KVER UPGRADE_KVER [RESULTS_DIR]
# The package's life on one amd64 disk across real boots: IMG is a disk
# staged with TAILFIX_STAGE_DEB=1 and TAILFIX_STAGE_UPGRADE (stage.sh: the
# deb and UPGRADE_KVER's headers as .debs on the disk, nothing installed).
# A scratch copy of IMG is booted once per step of tests/pkg_lifecycle.sh's
# boot mode (PKG_BOOT=N), without -snapshot, so that what a boot installed
# is there at the next one; each boot takes the kernel and the initramfs
# the disk itself holds after the boot before (read from the ext4 image
# with debugfs), as a host's boot loader would:
#   boots 1-4 KVER, boots 5-6 UPGRADE_KVER (boot 4 installs its headers).
# Each boot is judged by run.sh; the sequence stops at the first failed
# boot (the later steps start from its state).  The scratch copy goes,
# unless TAILFIX_REBOOTS_KEEP=1 (its path is printed); TAILFIX_REBOOTS_FROM=N
# with TAILFIX_REBOOTS_DISK=PATH (a kept copy) resumes the sequence there.
# Last line: "RESULT reboots amd64 PASS FAIL SKIP" summed over the boots.
set -uo pipefail

img=$1 kver=$2 up=$3 resdir=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
BOOTS=6
command -v debugfs >/dev/null && command -v e2fsck >/dev/null ||
	{ echo "reboots.sh: debugfs or e2fsck (e2fsprogs) is missing" >&2; echo "RESULT reboots amd64 0 1 0"; exit 1; }
[ -f "$img" ] || { echo "reboots.sh: no disk $img" >&2; echo "RESULT reboots amd64 0 1 0"; exit 1; }

from=${TAILFIX_REBOOTS_FROM:-1}
case $from in [1-6]) ;; *) echo "reboots.sh: TAILFIX_REBOOTS_FROM=$from: 1 to 6" >&2; echo "RESULT reboots amd64 0 1 0"; exit 1 ;; esac
scratch=${TAILFIX_REBOOTS_DISK:-$cache/amd64/reboots-$$.img}
[ "$from" = 1 ] || [ -f "$scratch" ] ||
	{ echo "reboots.sh: resuming at boot $from needs TAILFIX_REBOOTS_DISK (a kept copy)" >&2; echo "RESULT reboots amd64 0 1 0"; exit 1; }
boot=$(mktemp -d)
cleanup() {
	rm -rf "$boot" "${scratch%.img}.lock"
	if [ "${TAILFIX_REBOOTS_KEEP:-0}" = 1 ]; then
		echo "reboots.sh: the disk is kept: $scratch" >&2
	else
		rm -f "$scratch"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
[ "$from" != 1 ] || cp --sparse=always "$img" "$scratch" || { echo "RESULT reboots amd64 0 1 0"; exit 1; }

# disk_settled: the scratch disk's journal replayed (a guest powers off
# without unmounting), so that debugfs reads what the last boot wrote, not
# metadata still in the journal.  e2fsck exits 0 or 1 on a usable disk.
disk_settled() {
	e2fsck -fy "$scratch" >"$boot/e2fsck.log" 2>&1
	[ $? -le 1 ] || { echo "# reboots.sh: e2fsck of the scratch disk: $(tail -1 "$boot/e2fsck.log")" >&2; return 1; }
}
# from_disk FILE: copy /boot/FILE out of the scratch disk into $boot.
from_disk() {
	rm -f "$boot/$1"
	debugfs -R "dump -p /boot/$1 $boot/$1" "$scratch" >/dev/null 2>&1 && [ -s "$boot/$1" ] ||
		{ echo "# reboots.sh: /boot/$1 is not on the disk" >&2; return 1; }
}

p=0 f=0 s=0
for n in $(seq "$from" $BOOTS); do
	k=$kver
	[ "$n" -gt 4 ] && k=$up
	if ! disk_settled || ! from_disk "vmlinuz-$k" || ! from_disk "initrd.img-$k"; then
		f=$((f + 1))
		break
	fi
	echo "== reboots: boot $n of $BOOTS, $k, the disk's own kernel and initramfs"
	TAILFIX_VM_SNAPSHOT=off TAILFIX_VM_BOOT_DIR=$boot \
		TAILFIX_GUEST_ENV="${TAILFIX_GUEST_ENV:-} PKG_BOOT=$n" \
		"$here/run.sh" amd64 "$scratch" "$k" tests:pkg_lifecycle.sh "${resdir:+$resdir/boot$n}" |
		tee "$boot/run.out"
	set -- $(tail -1 "$boot/run.out")
	if [ "${1:-}" != RESULT ] || [ $# -ne 6 ]; then
		f=$((f + 1))
		break
	fi
	p=$((p + $4)) f=$((f + $5)) s=$((s + $6))
	[ "$5" -eq 0 ] || break
done
echo "RESULT reboots amd64 $p $f $s"
[ "$f" -eq 0 ]
