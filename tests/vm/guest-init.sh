#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the test guest (kernel argument init=/opt/tailfix/tests/vm/guest-init.sh).
# Mounts the basics, runs what the kernel argument tailfix.run= asks for,
# copies /results to the second disk (if any) and powers off.  Everything it
# prints goes to the serial console, which run.sh streams for humans; the
# verdict (run.sh, judge.sh) comes from the files left in /results:
#   ktap.txt       run_tests.sh's KTAP (run=check, tests:...)
#   exit           the run's exit status (also printed as TAILFIX-EXIT)
#   dkms-failed    the DKMS log, when the at-boot install failed
#   dmesg-bad.txt  bad kernel-log lines of the whole boot (lib.sh DMESG_BAD)
#   taint-new      taint flags the run added, besides O, E and those the
#                  programs declare (lib.sh taint_expected)
#   kmemleak.txt, kmemleak-ours.txt  a kernel with kmemleak (the debug
#                  guest): its report after the tests, and the package's
#                  leaks in it (lib.sh kmemleak_ours)
#   uname          the running kernel
#   tailfix.run=check            the kselftest suite (tests/Makefile TEST_PROGS)
#   tailfix.run=tests:a.sh,b.sh  only those tests
#   tailfix.run=demo|bench       tests/vm/guest-demo.sh / bench/run-guest.sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LC_ALL=C
# Only as the init of a test guest: run on a host, what follows would mount
# tmpfs over the host's /run and /tmp and power it off.  The kernel command
# line is read where the initramfs left /proc mounted (run.sh boots with
# one); a PID 1 that finds no /proc has just been started by a kernel.
if [ "$$" -eq 1 ] && [ ! -r /proc/cmdline ]; then
	mount -t proc proc /proc
fi
if [ "$$" -ne 1 ] || ! grep -qs 'tailfix\.run=' /proc/cmdline; then
	echo "guest-init.sh: refusing to run: not PID 1 of a tailfix test guest (PID $$; the kernel command line has no tailfix.run=)" >&2
	exit 1
fi
# A guest is a dedicated machine: the tests that change global state run.
export TAILFIX_DISRUPTIVE=1

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
# What udev or systemd makes on a host, and some initramfs do not (Debian
# 11's: bash's process substitution and diff <(...) need /dev/fd).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
[ -e /dev/stdin ] || ln -s /proc/self/fd/0 /dev/stdin
[ -e /dev/stdout ] || ln -s /proc/self/fd/1 /dev/stdout
[ -e /dev/stderr ] || ln -s /proc/self/fd/2 /dev/stderr
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev/shm
mkdir -p /run/netns /var/run
hostname tailfix-guest
ip link set lo up
# The two NICs run.sh joined on a hub (see topo_nic_pair in tests/lib.sh).
modprobe virtio_net 2>/dev/null
for i in $(seq 50); do [ -e /sys/class/net/eth1 ] && break; sleep 0.1; done
[ -e /sys/class/net/eth1 ] && export TAILFIX_NIC_PAIR="eth0 eth1"

poweroff_now() {
	sync
	python3 -c 'import ctypes; ctypes.CDLL(None).reboot(0x4321fedc)'
	echo o >/proc/sysrq-trigger
}

run=$(sed -n 's/.*tailfix\.run=\([^ ]*\).*/\1/p' /proc/cmdline)
# tailfix.env=NAME=VALUE (run.sh, TAILFIX_GUEST_ENV): test settings.
for kv in $(tr ' ' '\n' </proc/cmdline | sed -n 's/^tailfix\.env=//p'); do
	export "${kv?}"
	echo "TAILFIX-ENV $kv"
done
echo "TAILFIX-GUEST kernel=$(uname -r) arch=$(uname -m) run=$run kfence_ms=$(cat /sys/module/kfence/parameters/sample_interval 2>/dev/null || echo none)"
cd /opt/tailfix || poweroff_now
mkdir -p /results
uname -r >/results/uname
taint0=$(cat /proc/sys/kernel/tainted)

# A foreign-architecture image is installed through DKMS at first boot.
if [ -f /.tailfix-dkms-at-boot ]; then
	ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
	if dkms add "ena-tcp-tailfix/$ver" >/dev/null 2>&1 || dkms status | grep -q tailfix; then
		dkms install "ena-tcp-tailfix/$ver" -k "$(uname -r)" >/tmp/dkms.log 2>&1 ||
			{ echo "TAILFIX-DKMS-FAILED"; tail -40 /tmp/dkms.log | tee /results/dkms-failed; }
	else
		echo "TAILFIX-DKMS-FAILED"
		echo "dkms add ena-tcp-tailfix/$ver failed" | tee /results/dkms-failed
	fi
fi

# Console level 5: KERN_WARNING (4) and worse reach the console (a WARN's
# "WARNING:" line and its trace), KERN_NOTICE and chattier do not.
dmesg -n 5
progs=
case $run in
check) progs=$(make -s -C tests print-test-progs) ;;
tests:*) progs=$(echo "${run#tests:}" | tr ',' ' ') ;;
esac
case $run in
check | tests:*)
	tests/run_tests.sh $progs | tee /results/ktap.txt ;;
demo)
	tests/vm/guest-demo.sh /results </dev/null ;;
bench)
	bench/run-guest.sh /results </dev/null ;;
shell)
	bash -i </dev/console >/dev/console 2>&1 ;;
*)
	echo "unknown tailfix.run=$run"; false ;;
esac
rc=${PIPESTATUS[0]}

# kmemleak (the debug kernel): one scan after the tests; the package's
# leaks (lib.sh kmemleak_ours) fail the run, the whole report is kept.
kml=/sys/kernel/debug/kmemleak
[ -e "$kml" ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
if [ -w "$kml" ] && echo scan >"$kml" 2>/dev/null; then
	cat "$kml" >/results/kmemleak.txt
	(. tests/lib.sh && trap - EXIT && kmemleak_ours) </results/kmemleak.txt >/results/kmemleak-ours.txt
	echo "TAILFIX-KMEMLEAK $(grep -c '^unreferenced object' /results/kmemleak.txt) unreferenced," \
		"$(grep -c '^unreferenced object' /results/kmemleak-ours.txt) of the package's"
fi

# The same bad-line pattern the runner checks after every test.
DMESG_BAD=$(. tests/lib.sh && echo "$DMESG_BAD")
bad=$(dmesg | grep -E "$DMESG_BAD")
if [ -n "$bad" ]; then
	echo "$bad" >/results/dmesg-bad.txt
	echo "$bad" | sed 's/^/TAILFIX-DMESG-BAD /' | head -20
fi
dmesg >/results/dmesg.txt
# Flags a program declared it sets on purpose (taint_expected) are no
# finding here either; run_tests.sh held each to its own declaration.
# The demo and bench runs declare theirs in their top-level script.
case $run in
demo) tprogs=vm/guest-demo.sh ;;
bench) tprogs=../bench/run-guest.sh ;;
*) tprogs=$progs ;;
esac
if ! taint=$(. tests/lib.sh && trap - EXIT && cd tests &&
	TAINT_OK="$TAINT_OK$(taint_expected $tprogs)" taint_new "$taint0" "$(cat /proc/sys/kernel/tainted)"); then
	echo "$taint" >/results/taint-new
	echo "TAILFIX-TAINT new flags: $taint"
fi
echo "$rc" >/results/exit
echo "TAILFIX-EXIT $rc"
[ -b /dev/vdb ] && tar -cf /dev/vdb -C /results .
poweroff_now
