#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh KIND IMG KVER RUN [RESULTS_DIR]   (KIND: amd64, arm64, amd64-trixie)
# Boot kernel KVER of the staged guest disk IMG (stage.sh) under QEMU (TCG,
# no /dev/kvm needed), with tailfix.run=RUN (see guest-init.sh), stream the
# console for humans, and judge the run with judge.sh from the files the
# guest left on its results disk (KTAP, exit status, DKMS and kernel-log
# findings, taint), not from the console:
#   - a missing or garbled summary, a plan that is not the tests asked for,
#     a skip not on tests/vm/skip-allowlist, a non-zero exit, a failed DKMS
#     install, a bad kernel-log line or a new taint flag fails the guest;
#   - a guest that does not power off in time is killed and fails.  The
#     time allowed is TAILFIX_VM_TIMEOUT, by default computed from the
#     per-test timeout of tests/settings: boot allowance + tests x timeout,
#     so that a test run_tests.sh would still wait for is never cut short.
# One guest at a time per machine lock (flock -w on TAILFIX_VM_LOCK, default
# /tmp/tailfix-vm.lock): timing tests need the cores; IMG's own lock is held shared, so it is not restaged
# under a running guest.  The disk is booted with -snapshot: the image is
# never modified (unless TAILFIX_VM_SNAPSHOT=off, below).  The guest's
# /results are kept in RESULTS_DIR (default
# $cache/ARCH/logs/results-NAME-KVER-RUN).  A cancelled run (INT, TERM, HUP)
# kills its QEMU; a QEMU a killed run left behind for the same disk and
# machine lock is stopped before the next boot.
# Last line: "RESULT KVER ARCH pass fail skip"; exit 0 when fail is 0.
set -uo pipefail

kind=$1 img=$2 kver=$3 run=$4 resdir=${5:-}
arch=${kind%%-*}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/vm-lib.sh"
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
name=$(basename "$img" .img)
work=${img%.img}.root
# TAILFIX_VM_BOOT_DIR: take the kernel and initramfs from that directory
# instead of the staged root's /boot (tests/vm/reboots.sh: the ones the
# guest's own disk holds after its last boot).  TAILFIX_VM_SNAPSHOT=off
# writes to IMG (reboots.sh boots a scratch copy several times).
kernel=${TAILFIX_VM_BOOT_DIR:-$work/boot}/vmlinuz-$kver
initrd=${TAILFIX_VM_BOOT_DIR:-$work/boot}/initrd.img-$kver
snapshot=${TAILFIX_VM_SNAPSHOT:-on}
case $snapshot in on | off) ;; *) echo "run.sh: TAILFIX_VM_SNAPSHOT=$snapshot: on or off" >&2; exit 2 ;; esac
[ -f "$kernel" ] || { echo "run.sh: no kernel $kernel" >&2; echo "RESULT $kver $arch 0 1 0"; exit 1; }

# The guest's time: boot (and a DKMS build at boot for a foreign image),
# then every test up to its own timeout.
per_test=$(sed -n 's/^timeout=//p' "$here/../settings" 2>/dev/null)
per_test=${per_test:-600}
case $run in
check) ntests=$(make -s -C "$here/.." print-test-progs | wc -w) ;;
tests:*) ntests=$(echo "${run#tests:}" | tr ',' '\n' | grep -c .) ;;
*) ntests=0 ;;
esac
allow=600
[ -f "$work/.tailfix-dkms-at-boot" ] && allow=$((allow + 1800))
tmo=$((allow + ntests * per_test))
[ "$ntests" -gt 0 ] || tmo=1800
tmo=${TAILFIX_VM_TIMEOUT:-$tmo}

cpus=2
[ "$arch" = amd64 ] && cpus=1
cpus=${TAILFIX_VM_CPUS:-$cpus}
# TAILFIX_VM_ICOUNT=1 (benchmarks only: bench/tsq_cost_icount.sh): QEMU
# counts instructions, -icount shift=0,sleep=off: guest time advances one
# nanosecond per guest instruction (and jumps over idle time), so a
# throughput measured in the guest is work per instruction, whatever the
# host's load.  icount needs single-threaded TCG; one vCPU, so that guest
# time is one CPU's instructions.  The guest gets TAILFIX_VM_ICOUNT=1 too.
icount=()
case ${TAILFIX_VM_ICOUNT:-0} in
0) ;;
1) icount=(-icount shift=0,sleep=off) cpus=1 TAILFIX_VM_ACCEL=tcg,thread=single
   TAILFIX_GUEST_ENV="${TAILFIX_GUEST_ENV:-} TAILFIX_VM_ICOUNT=1" ;;
*) echo "run.sh: TAILFIX_VM_ICOUNT=$TAILFIX_VM_ICOUNT: 0 or 1" >&2; exit 2 ;;
esac

logdir=$cache/$kind/logs
mkdir -p "$logdir"
tag=$name-$kver-${run%%:*}-${cpus}cpu
console=$logdir/console-$tag.log
# QEMU's pid file (which it locks), monitor socket and runner files: one
# set per disk and machine lock, so that two guests of one disk can boot
# side by side under two locks (make check's second lane of guests).
vmlock=${TAILFIX_VM_LOCK:-/tmp/tailfix-vm.lock}
slot=$name-$(basename "$vmlock" .lock)
pidf=$logdir/qemu-$slot.pid
tpidf=$logdir/timeout-$slot.pid
rcf=$(mktemp)
resimg=$(mktemp "$cache/$kind/results.XXXXXX")
unpack=$(mktemp -d)
truncate -s 256M "$resimg"

# ours PID: PID is a QEMU (or its timeout) booting this disk.
ours() { [ -n "$1" ] && tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "file=$img,"; }
cleanup() {
	local p
	for p in "$(cat "$tpidf" 2>/dev/null)" "$(cat "$pidf" 2>/dev/null)"; do
		ours "$p" && kill "$p" 2>/dev/null
	done
	rm -f "$resimg" "$rcf" "$pidf" "$tpidf"
	rm -rf "$unpack"
}
trap cleanup EXIT
trap 'echo "# run.sh: cancelled"; exit 130' INT
trap 'echo "# run.sh: terminated"; exit 143' TERM
trap 'exit 129' HUP

# loglevel=5: warnings (KERN_WARNING, 4) reach the console; log_buf_len:
# room for a whole run, so the final scan rarely misses the start of it
# (the per-test scans of run_tests.sh report a wrap, they never miss one).
append="root=/dev/vda rw init=/opt/tailfix/tests/vm/guest-init.sh panic=-1 oops=panic loglevel=5 log_buf_len=4M net.ifnames=0 tailfix.run=$run"
# kfence.sample_interval: KFENCE, the sampling memory-error detector, is
# built into Debian's 6.12 and 7.x cloud kernels but off (interval 0); every
# 10 ms one allocation is guarded, and a report ("BUG: KFENCE: ...") fails
# the test that ran (dmesg_clean).  Kernels without it ignore the parameter.
append="$append kfence.sample_interval=${TAILFIX_KFENCE_MS:-10}"
# TAILFIX_GUEST_ENV="NAME=VALUE ...": test settings for the guest (names of
# letters, digits and _, values without spaces), exported by guest-init.sh.
for kv in ${TAILFIX_GUEST_ENV:-}; do
	[[ $kv =~ ^[A-Z_][A-Z0-9_]*=[^[:space:],]+$ ]] || { echo "run.sh: bad TAILFIX_GUEST_ENV entry: $kv" >&2; exit 2; }
	append="$append tailfix.env=$kv"
done
case $arch in
amd64)
	qemu=(qemu-system-x86_64 -M q35 -cpu max -m 3072)
	# tsc=unstable: TCG's guest TSC is the host's raw TSC; when that
	# jumps (the CI host is itself a VM: seen once, 57818 s forward in
	# one step) the guest's clock jumps with it and every timeout
	# fires.  The HPET follows QEMU's virtual clock (host CLOCK_MONOTONIC)
	# and an unstable TSC leaves sched_clock filtered against it.
	# TAILFIX_VM_TSC=reliable (benchmarks only: bench/tsq_cost.sh's
	# clocksource arms) keeps the TSC as a clocksource beside the HPET.
	tsc=${TAILFIX_VM_TSC:-unstable}
	case $tsc in unstable | reliable) ;; *) echo "run.sh: TAILFIX_VM_TSC=$tsc: unstable or reliable" >&2; exit 2 ;; esac
	append="console=ttyS0 tsc=$tsc $append" ;;
arm64)
	# pauth-impdef: QEMU's own pointer-auth hash; the architected QARMA
	# is the costliest part of -cpu max under TCG.
	qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -m 3072)
	append="console=ttyAMA0 $append" ;;
esac
# Two NICs on one QEMU hub: tests move them into namespaces as a real link
# whose TX completions come from outside the guest kernel (topo_nic_pair).
# x86 guests get one vCPU.  x86 kprobes and ftrace patch live kernel text
# with text_poke_bp(), whose cross-modifying-code protocol (int3, IPI sync,
# then the new bytes) multi-threaded TCG does not honour: another vCPU can
# run a stale translation of the half-patched site.  Seen with 2 vCPUs while
# tsq_probe was loaded and unloaded under traffic: "Oops: int3" at
# __dev_queue_xmit+0x5 (6.12) and a return to NULL through the kretprobe
# trampoline (6.1) -- emulator limitations, not kernel or module bugs.
# Single-threaded TCG (TAILFIX_VM_ACCEL=tcg,thread=single: one host thread
# runs the vCPUs in turn, so cross-modifying code behaves) avoids it but
# stalls the guest for 100s of ms: check-full runs the tests that do not
# measure time that way with 2 vCPUs (check.sh SMP_TESTS).  SMP paths are
# also exercised by the arm64 guest (arm64 patches kprobes under
# stop_machine()).  TAILFIX_VM_CPUS overrides.
accel=${TAILFIX_VM_ACCEL:-tcg,thread=multi}
qemu+=(-smp "$cpus" -accel "$accel" "${icount[@]}" -nographic -no-reboot -nic none
       -netdev hubport,id=n0,hubid=0 -device virtio-net-pci,netdev=n0
       -netdev hubport,id=n1,hubid=0 -device virtio-net-pci,netdev=n1
       -kernel "$kernel" -initrd "$initrd" -append "$append"
       -drive "file=$img,format=raw,if=virtio,snapshot=$snapshot"
       -drive "file=$resimg,format=raw,if=virtio"
       -pidfile "$pidf"
       -monitor "unix:$logdir/monitor-$slot.sock,server,nowait")

vm_lock "${img%.img}.lock" -s "the disk $img (being staged?)" || { echo "RESULT $kver $arch 0 1 0"; exit 1; }
# A QEMU of this disk whose run.sh is gone was left behind by a run killed
# outright (SIGKILL: no trap ran); it holds the machine lock: stop it.
runf=$logdir/runner-$slot.pid
if old=$(cat "$pidf" 2>/dev/null) && ours "$old" &&
	! tr '\0' ' ' 2>/dev/null <"/proc/$(cat "$runf" 2>/dev/null)/cmdline" | grep -q 'run\.sh'; then
	echo "# stopping QEMU $old left behind by a killed run of $img"
	kill "$old"
fi
vm_lock "$vmlock" -x "the machine (another guest is running)" ||
	{ echo "RESULT $kver $arch 0 1 0"; exit 1; }
echo $$ >"$runf"
rm -f "$pidf"

echo "# booting $kver ($arch, $cpus vCPU, $accel${icount:+ ${icount[*]}}), run=$run, timeout ${tmo}s; console log: $console"
t0=$SECONDS
# In the background, so that a signal reaches the traps above at once.
{
	timeout --kill-after=10 "$tmo" "${qemu[@]}" </dev/null 2>&1 &
	echo $! >"$tpidf"
	wait $!
	echo $? >"$rcf"
} | sed -u 's/\r$//' | tee "$console" |
	grep --line-buffered -E '^(TAP version|[0-9]+\.\.[0-9]+|ok |not ok |# |TAILFIX-|[0-9]+ passed, )|WARNING:|BUG:|Oops|Kernel panic|Call [Tt]race:' &
wait $!
qrc=$(cat "$rcf" 2>/dev/null)
echo "# guest $kver ran $((SECONDS - t0)) s"

tar -C "$unpack" -xf "$resimg" 2>/dev/null || echo "# no results archive from the guest"
[ -n "$resdir" ] || resdir=$logdir/results-$tag
[ "$resdir" = "$logdir/results-$tag" ] && rm -rf "$resdir"
mkdir -p "$resdir"
cp -a "$unpack/." "$resdir/"
echo "# guest results: $resdir"

"$here/judge.sh" --console "$console" --qemu-rc "${qrc:-1}" --timeout "$tmo" "$run" "$kver" "$arch" "$unpack"
