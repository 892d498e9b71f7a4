#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh ARCH IMG KVER RUN [RESULTS_DIR]
# Boot kernel KVER of the staged guest disk IMG (stage.sh) under QEMU (TCG,
# no /dev/kvm needed), with tailfix.run=RUN (see guest-init.sh), stream the
# console, and judge the run:
#   - the guest's summary line "N passed, N failed, N skipped" is reported;
#   - a panic, oops, WARN, BUG, lockdep or RCU-stall line on the console or in
#     the guest's final dmesg scan counts as one more failure;
#   - a guest that does not power off within TAILFIX_VM_TIMEOUT seconds
#     (default 1800) is killed and counts as a failure.
# One guest at a time per machine (flock /tmp/tailfix-vm.lock): timing
# tests need the cores.  The disk is booted with -snapshot: the image is never modified.  Whatever
# the guest left in /results is unpacked into RESULTS_DIR.
# Last line: "RESULT KVER ARCH pass fail skip".
set -uo pipefail

arch=$1 img=$2 kver=$3 run=$4 resdir=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
tmo=${TAILFIX_VM_TIMEOUT:-1800}
work=${img%.img}.root
kernel=$work/boot/vmlinuz-$kver
initrd=$work/boot/initrd.img-$kver
[ -f "$kernel" ] || { echo "run.sh: no kernel $kernel" >&2; echo "RESULT $kver $arch 0 1 0"; exit 1; }

logdir=$cache/$arch/logs
mkdir -p "$logdir"
console=$logdir/console-$kver-${run%%:*}.log
resimg=$(mktemp "$cache/$arch/results.XXXXXX")
truncate -s 256M "$resimg"

append="root=/dev/vda rw init=/opt/tailfix/tests/vm/guest-init.sh panic=-1 oops=panic loglevel=4 net.ifnames=0 tailfix.run=$run"
case $arch in
amd64)
	qemu=(qemu-system-x86_64 -M q35 -cpu max -m 3072)
	append="console=ttyS0 $append" ;;
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
# Single-threaded TCG avoids it but stalls the guest for 100s of ms.  SMP
# paths are exercised by the arm64 guest (arm64 patches kprobes under
# stop_machine()).  TAILFIX_VM_CPUS overrides.
cpus=2
[ "$arch" = amd64 ] && cpus=1
cpus=${TAILFIX_VM_CPUS:-$cpus}
qemu+=(-smp "$cpus" -accel tcg,thread=multi -nographic -no-reboot -nic none
       -netdev hubport,id=n0,hubid=0 -device virtio-net-pci,netdev=n0
       -netdev hubport,id=n1,hubid=0 -device virtio-net-pci,netdev=n1
       -kernel "$kernel" -initrd "$initrd" -append "$append"
       -drive "file=$img,format=raw,if=virtio,snapshot=on"
       -drive "file=$resimg,format=raw,if=virtio"
       -monitor "unix:$logdir/monitor-$kver.sock,server,nowait")

echo "# booting $kver ($arch, $cpus vCPU), run=$run; console log: $console"
t0=$SECONDS
flock "${TAILFIX_VM_LOCK:-/tmp/tailfix-vm.lock}" timeout --kill-after=10 "$tmo" "${qemu[@]}" </dev/null 2>&1 | sed -u 's/\r$//' | tee "$console" |
	grep --line-buffered -E '^(TAP version|[0-9]+\.\.[0-9]+|ok |not ok |# |TAILFIX-|[0-9]+ passed, )' |
	grep --line-buffered -v '^TAILFIX-EXIT'
qrc=${PIPESTATUS[0]}
echo "# guest $kver ran $((SECONDS - t0)) s"

if [ -n "$resdir" ]; then
	mkdir -p "$resdir"
	tar -C "$resdir" -xf "$resimg" 2>/dev/null || echo "# no results archive from the guest"
fi
rm -f "$resimg"

summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$console" | tail -1)
pass=$(echo "$summary" | awk '{print $1+0}')
fail=$(echo "$summary" | awk '{print $3+0}')
skip=$(echo "$summary" | awk '{print $5+0}')
extra=0
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	echo "not ok - guest $kver did not power off within ${tmo}s"
	extra=$((extra + 1))
fi
if ! grep -q '^TAILFIX-EXIT' "$console"; then
	echo "not ok - guest $kver ended without finishing its run"
	grep -E 'Kernel panic|BUG:|Oops|WARNING:|Call Trace' "$console" | head -20 | sed 's/^/# /'
	extra=$((extra + 1))
fi
if grep -qE '^TAILFIX-DMESG-BAD|Kernel panic|rcu: INFO|self-detected stall' "$console"; then
	echo "not ok - guest $kver kernel log has WARN/BUG/oops/lockdep/RCU lines"
	extra=$((extra + 1))
fi
if [ "$run" != check ] && [ "${run%%:*}" != tests ] && [ -z "$summary" ]; then
	# demo/bench runs have no summary line: their exit status is the verdict.
	grep -q '^TAILFIX-EXIT 0' "$console" && pass=1 || fail=1
fi
echo "RESULT $kver $arch ${pass:-0} $((${fail:-0} + extra)) ${skip:-0}"
