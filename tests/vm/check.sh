#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh quick|full|demo|bench|lists -- the top-level Makefile's check,
# check-full, demo and bench targets.
#   quick: host checks (lint, patches, model, ENA static checks) and the
#          kselftest suite in the amd64 guests of 6.1, 6.12 and the newest
#          7.x (a Debian 13 guest; two amd64 guests at a time, see
#          quick_guests), and in the arm64 6.1 guest (arm64-min);
#   full:  the same on every kernel of both architectures, with the
#          tests' full loops, plus 5.10 (a Debian 11 guest), the debug
#          kernel, the SMP and mutant runs and the host checks of
#          HOST_FULL_TEST_PROGS (the 5.10/7.x build matrix), and the
#          package's lifecycle from its deb in a 6.1 guest of its own
#          (tests/Makefile PKG_TEST_PROGS);
#   demo:  the TSQ lost-wake-up demo in the 6.1 guest, table at the end;
#   bench: the benchmarks in the guests, results under bench/results/;
#   lists: prints the tests each run of quick and full gets (from
#          tests/placement) and exits, booting and staging nothing.
# Ends with "N passed, N failed, N skipped" over everything that ran.
#
# The kernel matrix each mode must cover is asserted (MATRIX below): a
# kernel series missing from a staged disk, or a disk that could not be
# staged, is a failure, never a smaller matrix.  Each run stages its own
# disks (TAILFIX_STAGE_NAME, default check-HASH-PID) under a lock it holds
# from staging to the last boot, and removes them at the end; concurrent
# runs do not boot each other's disks.  INT/TERM/HUP stop the running
# stage or guest (run.sh kills its QEMU).
set -uo pipefail
mode=${1:-quick}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top" || exit 1
. "$here/vm-lib.sh"
cache=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
# deps.sh check fetched the arm64 headers: lint must build against them.
export TAILFIX_LINT_ARM64=required

# Which tests each run gets comes from tests/placement: one line per test
# saying where make check (its CHECK column) and make check-full (FULL) run
# it; its header says why each place runs what it does.
# placed QUERY [SEP]: the tests QUERY selects (tests/placement.awk), in
# their order, separated by SEP (a comma).
placed() {
	awk -v sep="${2:-,}" -v q="$1" -f "$top/tests/placement.awk" "$top/tests/placement"
}
# run_of LIST...: the run (tests:A,B,...) of the comma-separated LISTs,
# empty ones left out.
run_of() {
	local IFS=,
	echo "tests:$(sed 's/,,*/,/g; s/^,//; s/,$//' <<<"$*")"
}
# setl VAR QUERY [SEP]: VAR=$(placed QUERY SEP), 1 when the file is broken.
setl() {
	local v
	v=$(placed "$2" "${3:-,}") || return 1
	printf -v "$1" '%s' "$v"
}
# lists MODE: the test lists of MODE's runs (quick: the CHECK column, full:
# FULL); 1 when tests/placement cannot be read.
lists() {
	local col=check
	[ "$1" = full ] && col=full
	# The suite (run=check: tests/Makefile TEST_PROGS), which make check's
	# 6.1 guest and every guest of check-full run whole.
	setl SUITE guest &&
	# The host checks in two lanes: those that build in or copy the
	# checkout (build), one after another, and the others beside them.
	setl HOST_LANE_A "host $col:host -build" ' ' &&
	setl HOST_LANE_B "host $col:host +build" ' ' &&
	# make check's amd64 guests: 6.1 the whole suite, 6.12 its tests of
	# it, each then its mutants (those that take seconds; in the 6.1 guest,
	# whose lane is the shorter one, see quick_guests).
	setl QUICK_61_MUTANTS "mutant check:6.1" &&
	QUICK_61_RUN=$(run_of "$SUITE" "$QUICK_61_MUTANTS") &&
	setl QUICK_612_TESTS "guest check:6.12" &&
	setl QUICK_612_MUTANTS "mutant check:6.12" &&
	QUICK_612_RUN=$(run_of "$QUICK_612_TESTS" "$QUICK_612_MUTANTS") &&
	# make check's 7.x guest (check-full runs the suite there), and the
	# mutants of the 7.x guests (after its tests in make check, a boot of
	# their own in check-full).
	setl NEWEST_TESTS "guest check:7.x" &&
	setl NEWEST_MUTANTS "mutant $col:7.x" &&
	setl DEBUG_TESTS "guest $col:debug" &&
	# The arm64 guest, and the tests that boot alone there (2 vCPUs,
	# single-threaded TCG: run.sh says why not multi-threaded).
	setl ARM64_TESTS "guest $col:arm64 -arm64-alone" &&
	setl ARM64_SINGLE_TESTS "guest $col:arm64 +arm64-alone" &&
	# check-full: the amd64 guests' boots with 2 vCPUs under single-threaded
	# TCG, so that the x86 module code sees real concurrency, and of the
	# guest-side mutants (tests/mutants/; each passes when the test it wraps
	# catches its mutant).
	setl SMP_TESTS "guest full:smp" &&
	setl MUTANT_TESTS "mutant full:6.1" &&
	# The package's lifecycle from its deb (tests/Makefile PKG_TEST_PROGS).
	setl PKG_TESTS "pkg full:6.1"
}
# print_lists MODE: what each run of MODE gets (check.sh lists).
print_lists() {
	lists "$1" || return 1
	echo "$1 host lane a: $HOST_LANE_A"
	echo "$1 host lane b: $HOST_LANE_B"
	echo "$1 suite (run=check): $SUITE"
	if [ "$1" = quick ]; then
		echo "$1 amd64 6.1: $QUICK_61_RUN"
		echo "$1 amd64 6.12: $QUICK_612_RUN"
		echo "$1 amd64-trixie 7.x: $(run_of "$NEWEST_TESTS" "$NEWEST_MUTANTS")"
		echo "$1 amd64-debug: tests:$DEBUG_TESTS"
		echo "$1 arm64: tests:$ARM64_TESTS"
	else
		echo "$1 amd64 smp: tests:$SMP_TESTS"
		echo "$1 amd64 mutants: tests:$MUTANT_TESTS"
		echo "$1 amd64-trixie 7.x mutants: tests:$NEWEST_MUTANTS"
		echo "$1 amd64 pkg: tests:$PKG_TESTS"
		echo "$1 amd64-debug: tests:$DEBUG_TESTS"
		echo "$1 arm64: tests:$ARM64_TESTS"
	fi
	echo "$1 arm64 alone: tests:$ARM64_SINGLE_TESTS"
}
if [ "$mode" = lists ]; then
	print_lists quick && print_lists full
	exit
fi
lists "$mode" || { echo "check.sh: tests/placement cannot be read" >&2; exit 1; }

# make check keeps to its time budget with shorter loops than check-full
# (and an operator's run_tests, which uses the tests' defaults): 30 instead
# of 100 tsq_probe and 5 instead of 100 tcp_dctcp_fixed load/unload
# cycles (a dctcp_fixed cycle takes about 7 s in a guest), 24 instead of 64
# short-lived veths, and the ECE
# patterns with the default min_cwnd_after_ce (2) only, 3 requests each
# (the 23 runs of 6 took about 180 s per guest, the peer's start most of it).
QUICK_ENV="TSQ_CYCLES=30 DCTCP_CYCLES=5 TSQ_HIST_CHURN=24 DCTCP_ECE_MINS=2 DCTCP_ECE_TRIALS=3"
[ "$mode" = quick ] && export TAILFIX_GUEST_ENV="$QUICK_ENV"

# ARCH:SERIES every mode must have on a staged disk (the package installed
# for it), a missing one fails; all are booted but amd64-trixie:6.12 in make
# check, there only the kernel the 7.x upgrade starts from.
# make check's arm64 guest is arm64-min (image.sh): Debian 12's 6.1 arm64
# unpacked, our modules cross-built on the host, about three minutes from
# a cold cache, where the debootstrap root of check-full's arm64 guest
# takes about 15 minutes of both cores.  It runs the tests of the CHECK
# column's arm64 place (tests/placement), none of which needs DKMS or a
# compiler in the guest.
case $mode in
quick) MATRIX="amd64:6.1 amd64:6.12 amd64-trixie:6.12 amd64-trixie:7 arm64-min:6.1" ;;
full) MATRIX="amd64-bullseye:5.10 amd64:6.1 amd64:6.12 amd64-trixie:6.12 amd64-trixie:7 amd64-debug:6.12 arm64:6.1 arm64:6.12" ;;
*) MATRIX= ;;
esac

# Our own disks: a name per run, removed on exit (a name given by the
# caller is kept).  Disks of earlier runs that were killed (their lock is
# free) are removed first.
if [ -n "${TAILFIX_STAGE_NAME:-}" ]; then
	own_stage=0
else
	export TAILFIX_STAGE_NAME=check-$(echo "$top" | sha256sum | cut -c1-8)-$$
	own_stage=1
fi
drop_stage() {	# drop_stage DIR NAME
	safe_rmroot "$1/$2.root" && rm -f "$1/$2.img" "$1/$2.img.kernels"
}
for l in "$cache"/*/check-*-[0-9]*.lock; do
	[ -e "$l" ] && vm_lock_free "$l" || continue
	echo "== removing the disk of a killed run: ${l%.lock}"
	drop_stage "$(dirname "$l")" "$(basename "$l" .lock)" && rm -f "$l"
done
child= prebuild= hostlane= beside=
on_exit() {
	[ -z "$child" ] || kill_tree "$child"
	[ -z "$prebuild" ] || kill_tree "$prebuild"
	[ -z "$hostlane" ] || kill_tree "$hostlane"
	[ -z "$beside" ] || kill_tree "$beside"
	wait 2>/dev/null
	[ -z "${beside_dir:-}" ] || rm -rf "$beside_dir"
	if [ "$own_stage" -eq 1 ]; then
		for d in "$cache"/*/; do
			[ -e "$d/$TAILFIX_STAGE_NAME.lock" ] || continue
			drop_stage "$d" "$TAILFIX_STAGE_NAME"
			rm -f "$d/$TAILFIX_STAGE_NAME.lock"
		done
	fi
}
trap on_exit EXIT
trap 'echo "check.sh: cancelled"; exit 130' INT
trap 'echo "check.sh: terminated"; exit 143' TERM
trap 'exit 129' HUP

deps=check
case $mode in full | demo | bench) deps=$mode ;; esac
scripts/deps.sh "$deps" || exit 1
echo "check.sh: scripts/deps.sh $deps took $SECONDS s"

total_p=0 total_f=0 total_s=0
summary=()
add() {	# add LABEL PASS FAIL SKIP
	summary+=("$(printf '%-40s %4d passed, %d failed, %d skipped' "$1" "$2" "$3" "$4")")
	total_p=$((total_p + $2)) total_f=$((total_f + $3)) total_s=$((total_s + $4))
}

# last_line cmd...: run cmd with its output shown, then print its last line
# in LAST (a file, not `tee /dev/stderr`, which would truncate a log that
# stderr is redirected to); its whole output stays in OUT until the next
# call, its exit status in LAST_RC.  In the background, so that a signal
# reaches the traps at once.
# (The tee reads a FIFO and is waited for by its PID: a bare `wait` would
# also wait for the guests' second lane, see beside_start.)
LAST= LAST_RC= OUT=$(mktemp)
last_line() {
	local fifo tp
	fifo=$(mktemp -u)
	mkfifo "$fifo" || { LAST_RC=1 LAST=; return; }
	tee "$OUT" <"$fifo" &
	tp=$!
	"$@" >"$fifo" 2>&1 &
	child=$!
	wait "$child"
	LAST_RC=$?
	child=
	wait "$tp" 2>/dev/null
	rm -f "$fifo"
	LAST=$(tail -1 "$OUT")
}

# boot ARCH IMG KVER RUN RESULTS LABEL: one guest run, added to the summary.
boot() {
	local label=$6 t0=$SECONDS
	echo "== $label: $4"
	last_line "$here/run.sh" "$1" "$2" "$3" "$4" "$5"
	add_result "$label" "$t0"
}
# add_result LABEL T0: the RESULT line in LAST (run.sh, reboots.sh) added.
add_result() {
	set -- "$1" "$2" $LAST
	if [ "${3:-}" = RESULT ] && [ $# -eq 8 ]; then
		add "$1, $((SECONDS - $2)) s" "$6" "$7" "$8"
	else
		add "$1: no RESULT line" 0 1 0
	fi
}

# stage_disk KIND [KERNEL-FILTER]: stage KIND's disk (stage.sh) under its
# stage lock, taken once by this shell and held to the end (a concurrent
# run removes only disks whose lock is free); STAGED the disk's image.  A
# failure is added to the summary and returned.
# KIND: amd64, arm64 (Debian 12 with 6.1 and 6.12), amd64-trixie (Debian
# 13 with trixie-backports' newest 7.x), amd64-bullseye (Debian 11 with
# 5.10), see image.sh, or amd64-debug (the amd64 root with the debug
# kernel, see stage.sh).
declare -A STAGE_LOCKED
STAGED=
# stage_lock KIND: take KIND's stage lock in this shell, once.
stage_lock() {
	[ -n "${STAGE_LOCKED[$1]:-}" ] && return 0
	mkdir -p "$cache/$1"
	vm_lock "$cache/$1/$TAILFIX_STAGE_NAME.lock" -x "stage $TAILFIX_STAGE_NAME" ||
		{ add "$1: stage lock" 0 1 0; return 1; }
	STAGE_LOCKED[$1]=1
}
stage_disk() {
	local kind=$1 filter=${2:-.} lock s t0=$SECONDS
	lock=$cache/$kind/$TAILFIX_STAGE_NAME.lock
	STAGED=
	echo "== staging the $kind guest"
	stage_lock "$kind" || return 1
	# A foreign guest's DKMS install is emulated: stage only the kernels
	# that boot.  The amd64 disks always carry every kernel: the first
	# gets `dkms install`, the next ones the kernel-upgrade path (stage.sh).
	# A disk for PKG_TEST_PROGS (TAILFIX_STAGE_DEB=1, stage.sh) has the
	# headers of the kernels that boot only: its DKMS builds in the guest.
	local only=.
	case $kind in amd64 | amd64-trixie | amd64-bullseye) ;; *) only=$filter ;; esac
	# The demo boots one kernel and loads only tsq_probe: stage that one.
	[ "$mode" = demo ] && only=$filter
	[ "${TAILFIX_STAGE_DEB:-0}" = 1 ] && only=$filter
	last_line env TAILFIX_STAGE_LOCK_HELD="$lock" TAILFIX_STAGE_KERNELS="$only" "$here/stage.sh" "$kind"
	echo "check.sh: staging the $kind guest took $((SECONDS - t0)) s"
	STAGED=$(grep -x '/.*\.img' "$OUT" | tail -1)
	if [ "$LAST_RC" -ne 0 ] || [ -z "$STAGED" ] || [ ! -f "$STAGED.kernels" ]; then
		add "$kind: stage (dkms install)" 0 1 0
		STAGED=
		return 1
	fi
	# The matrix: every series this mode wants of KIND must be on the disk.
	for s in $MATRIX; do
		[ "${s%%:*}" = "$kind" ] && [ "${TAILFIX_STAGE_DEB:-0}" != 1 ] || continue
		s=${s#*:}
		grep -q "^${s//./\\.}\." "$STAGED.kernels" ||
			add "$kind $s: kernel missing from the staged disk ($(echo $(cat "$STAGED.kernels")))" 0 1 0
	done
	return 0
}

# boot_disk KIND IMG RUN [RESULTS] [KERNEL-FILTER]: boot each kernel of the
# staged disk IMG that FILTER selects, with the runs of this mode.
boot_disk() {
	local kind=$1 img=$2 run=$3 res=${4:-} filter=${5:-.} k s arch t0
	arch=${kind%%-*}
	# (run.sh takes the disk's lock shared: this shell holds it)
	export TAILFIX_STAGE_LOCK_HELD=$cache/$kind/$TAILFIX_STAGE_NAME.lock
	# The package's life across real boots and a kernel upgrade: one
	# scratch copy of the disk booted six times (reboots.sh).
	if [ -n "${TAILFIX_STAGE_UPGRADE:-}" ]; then
		k=$(grep -E "$filter" "$img.kernels" | head -1)
		s=$(ls "${img%.img}.root/lib/modules" | grep -E "$TAILFIX_STAGE_UPGRADE" | head -1)
		t0=$SECONDS
		last_line "$here/reboots.sh" "$img" "$k" "$s" "$res"
		add_result "$k to $s, six boots ($arch)" "$t0"
		unset TAILFIX_STAGE_LOCK_HELD
		return
	fi
	for k in $(grep -E "$filter" "$img.kernels"); do
		local krun=$run
		if [ "$mode" = quick ] && [ "$kind" = amd64 ] && [ "$run" = check ]; then
			case $k in
			6.1.*) krun=$QUICK_61_RUN ;;
			6.12.*) krun=$QUICK_612_RUN ;;
			esac
		fi
		boot "$kind" "$img" "$k" "$krun" "${res:+$res/$k}" "$k ($arch)"
		# check-full: the SMP run of the tests that do not measure time.
		[ "$mode" = full ] && [ "$kind" = amd64 ] && [ "$run" = check ] &&
			TAILFIX_VM_CPUS=2 TAILFIX_VM_ACCEL=tcg,thread=single \
			boot "$kind" "$img" "$k" "tests:$SMP_TESTS" "" "$k ($arch, 2 vCPU single-threaded TCG)"
		[ "$mode" = full ] && [ "$kind" = amd64 ] && [ "$run" = check ] &&
			boot "$kind" "$img" "$k" "tests:$MUTANT_TESTS" "" "$k ($arch, mutants)"
		[ "$mode" = full ] && [ "$kind" = amd64-trixie ] && [[ $k == 7.* ]] && [ -n "$NEWEST_MUTANTS" ] &&
			boot "$kind" "$img" "$k" "tests:$NEWEST_MUTANTS" "" "$k ($arch, mutants)"
		[ "$kind" = arm64 ] && [ "$run" != bench ] && [ -n "$ARM64_SINGLE_TESTS" ] &&
			TAILFIX_VM_CPUS=2 TAILFIX_VM_ACCEL=tcg,thread=single \
			boot "$kind" "$img" "$k" "tests:$ARM64_SINGLE_TESTS" "" "$k ($arch, 2 vCPU single-threaded TCG)"
	done 2>&1
	unset TAILFIX_STAGE_LOCK_HELD
}

# guest KIND RUN [RESULTS] [KERNEL-FILTER]: stage the disk, boot each kernel.
guest() {
	stage_disk "$1" "${4:-.}" || return
	boot_disk "$1" "$STAGED" "$2" "${3:-}" "${4:-.}"
}

# Beside: a second lane of guests.  The amd64 guests have one vCPU (run.sh
# says why), so one of the machine's two cores is idle while one runs;
# make check runs two of them at a time, one in the background (a lane of
# its own), each under its own machine lock (TAILFIX_VM_LOCK's, and the
# same name with -beside).  Its output is shown when it
# is done, its results added to the summary then.
# beside_start NAME CMD...: run CMD (a function of this file) in the lane.
# beside_join: wait for it, show its output, add its results (its files
# stay in beside_dir until the next beside_start).
beside= beside_name= beside_dir=$cache/check-$TAILFIX_STAGE_NAME
beside_start() {
	beside_name=$1
	shift
	rm -rf "$beside_dir"
	mkdir -p "$beside_dir"
	(
		summary=() total_p=0 total_f=0 total_s=0 child=
		OUT=$(mktemp)
		vmlock=${TAILFIX_VM_LOCK:-/tmp/tailfix-vm.lock}
		export TAILFIX_VM_LOCK=${vmlock%.lock}-beside.lock
		trap '[ -z "$child" ] || kill_tree "$child"; exit 143' TERM
		"$@"
		[ ${#summary[@]} -eq 0 ] || printf '%s\n' "${summary[@]}" >"$beside_dir/summary"
		echo "$total_p $total_f $total_s" >"$beside_dir/totals"
		rm -f "$OUT"
	) >"$beside_dir/log" 2>&1 &
	beside=$!
	echo "check.sh: $beside_name, beside (shown when done)"
}
beside_join() {
	local p f s
	[ -n "$beside" ] || return 0
	wait "$beside" 2>/dev/null
	beside=
	echo "== $beside_name (beside)"
	cat "$beside_dir/log"
	if read -r p f s 2>/dev/null <"$beside_dir/totals"; then
		[ ! -f "$beside_dir/summary" ] || mapfile -t -O "${#summary[@]}" summary <"$beside_dir/summary"
		total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
	else
		add "$beside_name: no results" 0 1 0
	fi
}

# The 7.x guest's disk: Debian 13 (image.sh amd64-trixie), the package
# installed on trixie's 6.12 and gone to the 7.x through the kernel-upgrade
# path; the test builds its tests and mutants take are made at staging.
TRIXIE_MUTANTS="tsq_probe/initfail dctcp/real dctcp/mutant9 dctcp/mutant10"
# make check's 7.x run: NEWEST_TESTS, then the 7.x mutants.
newest_run() { run_of "$NEWEST_TESTS" "$NEWEST_MUTANTS"; }

# quick_guests: make check's guests, two at a time (beside_start): both
# amd64 disks staged at once (a DKMS build in a chroot each), the arm64-min
# disk after the amd64 one, in the time the Debian 13 disk still takes;
# then the 6.1 guest and the arm64 guest here and the 6.12 and 7.x guests
# beside them (each amd64 guest then runs its quick mutants, placed so
# that the two lanes take about as long).  Staging runs apart from the
# guests: a busy host fails timing-sensitive guest tests (see why the host
# checks run first).
# The arm64 guest has 2 vCPUs (run.sh) beside the one-vCPU 7.x guest: the
# lanes' timing-sensitive tests compare against a baseline measured in the
# same boot, under the same neighbours.
stage_newest() {
	# (no amzn-drivers builds: ena_amzn_load.sh is not among its tests)
	TAILFIX_STAGE_MUTANTS=$TRIXIE_MUTANTS TAILFIX_STAGE_AMZN='^$' \
		stage_disk amd64-trixie '^7\.' && echo "$STAGED" >"$beside_dir/staged"
}
boot_beside() {
	[ -z "$1" ] || boot_disk amd64 "$1" check "" '^6\.12\.'
	[ -z "$2" ] || boot_disk amd64-trixie "$2" "$(newest_run)" "" '^7\.'
}
quick_guests() {
	local amd64_img= trixie_img= arm64_img= lane=
	stage_lock amd64 && stage_lock amd64-trixie || return
	beside_start "staging the amd64-trixie guest" stage_newest
	stage_disk amd64 && amd64_img=$STAGED
	# make check's arm64 guest (arm64-min, above): the tests of the CHECK
	# column's arm64 place (tests/placement).
	stage_disk arm64-min '^6\.1\.' && arm64_img=$STAGED
	beside_join
	trixie_img=$(cat "$beside_dir/staged" 2>/dev/null)
	rm -rf "$beside_dir"
	if [ -n "$amd64_img$trixie_img" ]; then
		beside_start "the 6.12 and 7.x guests" boot_beside "$amd64_img" "$trixie_img"
		lane=1
	fi
	[ -z "$amd64_img" ] || boot_disk amd64 "$amd64_img" check "" '^6\.1\.'
	[ -z "$arm64_img" ] || boot_disk arm64-min "$arm64_img" "tests:$ARM64_TESTS" "" '^6\.1\.'
	if [ -n "$lane" ]; then
		beside_join
		rm -rf "$beside_dir"
	fi
}

# full_guests: check-full's amd64 guests, one at a time.
full_guests() {
	# 5.10 (Debian 11, the kernel line of Amazon Linux 2)
	guest amd64-bullseye check
	# (the mutant runs take their test builds from the staging)
	TAILFIX_STAGE_MUTANTS=all guest amd64 check
	# The package's lifecycle (install from the deb, opt in, opt out,
	# purge) on a 6.1 disk it is not installed on, in one boot, then the
	# same across six real boots and the upgrade to 6.12
	# (tests/pkg_lifecycle.sh's boot mode, tests/vm/reboots.sh).  Its DKMS
	# builds run in the guest (and the initramfs is rebuilt each time):
	# the test's timeout and the guest's are raised to match.
	TAILFIX_STAGE_DEB=1 TAILFIX_STAGE_AMZN='^$' TAILFIX_VM_TIMEOUT=6000 \
		TAILFIX_GUEST_ENV="${TAILFIX_GUEST_ENV:-} TAILFIX_TEST_TIMEOUT=5400" \
		guest amd64 "tests:$PKG_TESTS" "" '^6\.1\.'
	TAILFIX_STAGE_DEB=1 TAILFIX_STAGE_UPGRADE='^6\.12\.' TAILFIX_STAGE_AMZN='^$' TAILFIX_VM_TIMEOUT=6000 \
		TAILFIX_GUEST_ENV="${TAILFIX_GUEST_ENV:-} TAILFIX_TEST_TIMEOUT=5400" \
		guest amd64 reboots "" '^6\.1\.'
	# Both kernels of the Debian 13 disk with the whole suite.
	TAILFIX_STAGE_MUTANTS=$TRIXIE_MUTANTS guest amd64-trixie check
}

case $mode in
quick|full)
	# The guest roots (image.sh) are built beside the host checks: on a
	# fresh machine that is about 15 minutes of debootstrap, much of it
	# waiting on I/O or on one core, and the host checks measure no time
	# (the guests do, and run only after).  The guests' stage.sh then
	# finds each root built, or waits for its image.lock.  A failed build
	# here is built again (and its failure shown) by the guest run.
	kinds="amd64 amd64-trixie arm64-min"
	[ "$mode" = full ] && kinds="amd64-bullseye amd64 amd64-trixie arm64"
	mkdir -p "$cache"
	(
		for k in $kinds; do
			t=$SECONDS
			if nice -n 10 "$here/image.sh" "$k" >/dev/null 2>"$cache/prebuild-$k.log"; then
				echo "check.sh: the $k guest root is ready ($((SECONDS - t)) s beside the host checks)"
			else
				echo "check.sh: building the $k guest root beside the host checks failed (the guest run tries again): $(tail -1 "$cache/prebuild-$k.log")"
			fi
		done
	) &
	prebuild=$!
	echo "== host checks"
	t0=$SECONDS
	if [ "$mode" = full ]; then
		# The kernel matrix build needs the 5.10 and 7.x chroots.
		nice -n 19 scripts/kernel-chroot.sh setup ||
			echo "check.sh: scripts/kernel-chroot.sh setup failed: kernel_matrix_build.sh will skip (a failure)"
	fi
	# The host checks run before the guests: run beside the amd64 guests
	# (tried, to save their 11 minutes) they loaded the host enough to fail
	# a timing-sensitive guest test (tsq_probe_bh in the 6.1 guest).  They
	# measure no time themselves, so they run in two lanes: lint and the
	# checks that copy the checkout it builds in (the build flag of
	# tests/placement) in one, the others (spatch, git am, spin,
	# dkms: mostly one core each) beside them, shown live.
	lane_a=$HOST_LANE_A lane_b=$HOST_LANE_B
	mkdir -p "$cache/host"
	tests/run_tests.sh $lane_b >"$cache/host/lane-b.txt" 2>&1 &
	hostlane=$!
	echo "check.sh: host checks that build, in a lane of their own (shown when done): $lane_b"
	last_line tests/run_tests.sh $lane_a
	cp "$OUT" "$cache/host/lane-a.txt"
	# (last_line's wait for its tee may have reaped the lane already)
	wait "$hostlane" 2>/dev/null
	hostlane=
	echo "== host checks that build (the second lane)"
	cat "$cache/host/lane-b.txt"
	ktap_merge "$cache/host/lane-a.txt" "$cache/host/lane-b.txt" >"$cache/host/ktap.txt"
	tail -1 "$cache/host/ktap.txt"
	grep -q ' 0 failed,' <(tail -1 "$cache/host/ktap.txt")
	echo "$?" >"$cache/host/exit"
	# The same judge as the guests': whole KTAP, and no skip that is not
	# on tests/vm/skip-allowlist-host.
	last_line "$here/judge.sh" --expect "$lane_a $lane_b" --allow "$here/skip-allowlist-host" \
		tests:host host "$(uname -m)" "$cache/host"
	set -- $LAST
	add "host checks, $((SECONDS - t0)) s" "${4:-0}" "${5:-1}" "${6:-0}"
	if [ "$mode" = quick ]; then
		quick_guests
	else
		full_guests
	fi
	# The debug guest: check-full builds its kernel when it is not cached
	# (about 30 min on 2 cores, more than make check's hour on a fresh
	# machine leaves); make check runs it when it is cached (make
	# debug-kernel), and otherwise says it did not, as a skip.
	# (make check's shorter loops in both modes: 30 tsq_probe cycles took
	# 696 s there, 100 would pass the per-test timeout)
	if [ "$mode" = full ] || "$here/debug-kernel.sh" --cached >/dev/null; then
		TAILFIX_GUEST_ENV="$QUICK_ENV" \
			guest amd64-debug "tests:$DEBUG_TESTS" "" 'tailfix-debug'
	else
		add "amd64-debug: no cached debug kernel, not run (make debug-kernel)" 0 0 1
	fi
	# (make check's arm64 guest ran in quick_guests; ARM64_SINGLE_TESTS
	# apart, see above)
	[ "$mode" != full ] || guest arm64 "tests:$ARM64_TESTS"
	;;
demo)
	rm -rf "$top/out/demo"
	TAILFIX_STAGE_AMZN='^$' TAILFIX_STAGE_MUTANTS='' guest amd64 demo "$top/out/demo" '^6\.1\.'
	for d in "$top"/out/demo/*/demo; do
		[ -f "$d/summary.txt" ] || continue
		bench/tsq_plot.sh "$d" >/dev/null 2>&1 || true
		echo "== demo: $d"
		cat "$d/summary.txt"
	done
	;;
bench)
	export TAILFIX_STAGE_MUTANTS=	# (no test builds: no test runs)
	guest amd64 bench "$top/bench/results" '^6\.1\.'
	# tsq_probe's cost counted in guest instructions (QEMU -icount, one
	# vCPU: bench/tsq_cost_icount.sh), 6.1 and 6.12 amd64, and 6.1 arm64
	# in the arm64-min guest (about 7 minutes; wall time there spread
	# threefold between rounds of the same arm, instructions do not).
	TAILFIX_VM_ICOUNT=1 TAILFIX_GUEST_ENV=BENCH_ONLY=tsq_cost_icount \
		guest amd64 bench "$top/bench/results" '^6\.(1|12)\.'
	TAILFIX_VM_ICOUNT=1 TAILFIX_GUEST_ENV=BENCH_ONLY=tsq_cost_icount \
		guest arm64-min bench "$top/bench/results" '^6\.1\.'
	# Where those instructions go: tsq_probe with one part emptied or left
	# out per arm (bench/cost-parts, built at staging), 6.1.
	TAILFIX_STAGE_MUTANTS="$(cd "$top/bench" && ls cost-parts/*.patch | sed 's/\.patch$//')" \
		TAILFIX_VM_ICOUNT=1 TAILFIX_GUEST_ENV=BENCH_ONLY=tsq_cost_parts \
		guest amd64 bench "$top/bench/results" '^6\.1\.'
	for d in "$top"/bench/results/*/tsq-cost-parts; do
		[ -f "$d/summary.txt" ] && cat "$d/summary.txt"
	done
	# DCTCP against a peer that delays its ACKs the classic way
	# (bench/dctcp_delack.sh) on 5.10 too, where the core leaves a window
	# of 1 after an ECE reduction, the case dctcp_fixed's floor is for.
	TAILFIX_GUEST_ENV=BENCH_ONLY=dctcp_delack guest amd64-bullseye bench "$top/bench/results"
	for d in "$top"/bench/results/*/tsq-cost "$top"/bench/results/*/tsq-cost-icount; do
		[ -f "$d/summary.txt" ] && cat "$d/summary.txt"
	done
	for d in "$top"/bench/results/*/tsq; do
		[ -f "$d/summary.txt" ] && bench/tsq_plot.sh "$d" && cat "$d/summary.txt"
	done
	for d in "$top"/bench/results/*/dctcp; do
		[ -d "$d" ] && bench/dctcp_plot.sh "$d"
	done
	for d in "$top"/bench/results/*/dctcp-delack; do
		[ -f "$d/verdict.txt" ] && cat "$d/summary.txt" "$d/verdict.txt"
	done
	;;
*)
	echo "check.sh: quick|full|demo|bench|lists" >&2
	exit 2 ;;
esac

rm -f "$OUT"
echo
echo "== summary"
printf '%s\n' "${summary[@]}"
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
