# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers shared by the VM harness scripts (image.sh, stage.sh, run.sh,
# check.sh): locks and the safe removal of guest roots.
#
# Locks (flock(1) on files in the cache, always with a deadline):
#   $cache/$arch/image.lock           building or dropping a base root
#   $cache/$arch/rootfs-KEY.lock      shared while a stage copies that root
#   $cache/$arch/NAME.lock            exclusive while NAME is staged, shared
#                                     while it boots; check.sh holds it
#                                     exclusively over stage and boots and
#                                     says so in TAILFIX_STAGE_LOCK_HELD
#   /tmp/tailfix-vm.lock              one guest at a time on the machine
# TAILFIX_LOCK_WAIT (seconds, default 7200) bounds every wait.

# vm_lock FILE -s|-x WHAT: take the lock on FILE for the rest of the shell
# (the descriptor is inherited by children: a QEMU left running keeps it).
vm_lock() {
	local file=$1 mode=$2 what=$3 fd
	[ "${TAILFIX_STAGE_LOCK_HELD:-}" = "$file" ] && return 0
	exec {fd}>>"$file" || return 1
	flock "$mode" -n "$fd" && return 0
	echo "# waiting for $what ($file)" >&2
	flock "$mode" -w "${TAILFIX_LOCK_WAIT:-7200}" "$fd" && return 0
	echo "# gave up waiting for $what after ${TAILFIX_LOCK_WAIT:-7200} s ($file)" >&2
	return 1
}

# vm_lock_free FILE: succeeds when nobody holds the lock on FILE now.
vm_lock_free() { [ ! -e "$1" ] || flock -x -n "$1" true; }

# _mounts_under DIR: mount points at or below DIR, deepest first.
_mounts_under() {
	findmnt -rn -o TARGET | awk -v d="$1" '$0 == d || index($0, d "/") == 1' | sort -r
}

# vm_in_use DIR: some process has its root, cwd or an open file under DIR.
vm_in_use() {
	local d=$1 p
	for p in /proc/[0-9]*; do
		case $(readlink "$p/root" 2>/dev/null) in "$d"|"$d"/*) return 0 ;; esac
		case $(readlink "$p/cwd" 2>/dev/null) in "$d"|"$d"/*) return 0 ;; esac
		ls -l "$p/fd" 2>/dev/null | grep -qF -- "-> $d/" && return 0
	done
	return 1
}

# safe_rmroot DIR: remove a guest root tree.  A run killed in its chroot
# step may have left the host's /proc, /sys or /dev bind-mounted inside:
# those are unmounted first, and if anything is still mounted the tree is
# left alone; rm never crosses into another file system either.
safe_rmroot() {
	local d m
	[ -e "$1" ] || return 0
	d=$(realpath -- "$1")
	case $d in /|/dev|/proc|/sys|/usr|/var|/home|/root) echo "safe_rmroot: refusing $d" >&2; return 1 ;; esac
	for m in $(_mounts_under "$d"); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	if [ -n "$(_mounts_under "$d")" ]; then
		echo "safe_rmroot: $d still has mounts, not removing it:" >&2
		_mounts_under "$d" >&2
		return 1
	fi
	rm -rf --one-file-system -- "$d"
}

# kill_tree PID: TERM PID and every process below it (a stage's dkms in its
# chroot, a guest's QEMU), the parent first so that it starts no more.
kill_tree() {
	local p kids
	kids=$(pgrep -P "$1" 2>/dev/null)
	kill "$1" 2>/dev/null
	for p in $kids; do
		kill_tree "$p"
	done
}

# ktap_merge KTAP...: run_tests.sh outputs as one KTAP, in the order given:
# one plan, the result lines numbered on, one summary of them all.  An
# input that is not whole (no summary line, or a plan its result lines do
# not meet) leaves the summary out, which the judge fails.
ktap_merge() {
	awk '
	FNR == 1 { if (NR > 1 && (!sum || got != plan)) broken = 1; sum = 0; got = 0; plan = -1 }
	/^TAP version / { next }
	/^1\.\.[0-9]+$/ { plan = substr($0, 4) + 0; next }
	/^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $1; f += $3; s += $5; sum = 1; next }
	/^(not )?ok [0-9]+ / { n++; got++; sub(/ok [0-9]+ /, "ok " n " ") }
	{ body[++m] = $0 }
	END {
		if (!sum || got != plan)
			broken = 1
		print "TAP version 13"
		print "1.." n
		for (i = 1; i <= m; i++)
			print body[i]
		if (broken)
			print "# ktap_merge: an input was not whole KTAP (no summary, or short of its plan)"
		else
			print p " passed, " f " failed, " s " skipped"
	}' "$@"
}
