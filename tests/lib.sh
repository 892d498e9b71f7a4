# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Shared helpers for every test of ena-tcp-tailfix, sourced by the tests in
# the guest and by the host-side checks:
#
#	. "$(dirname "$0")/lib.sh"		(tests/*.sh)
#	. "$(dirname "$0")/../lib.sh"		(tests/host/*.sh)
#
# Conventions (kselftest): exit 0 = pass, 1 = fail, 4 = skip.  Diagnostics are
# lines starting with "# "; subtests are KTAP lines "ok N desc" /
# "not ok N desc".  Namespaces get random suffixes and are removed on exit.
# Waiting is always for a condition with a deadline, never a blind sleep.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TAILFIX_ROOT=$(cd "$TESTS_DIR/.." && pwd)
TOOLS_DIR=${TAILFIX_TOOLS_DIR:-$TESTS_DIR/tools}

_ksft_sub=0
_ksft_failed=0
_cleanup_cmds=()

log()  { printf '# %s\n' "$*"; }
skip() { printf '# SKIP %s\n' "$*"; exit "$KSFT_SKIP"; }
fail() { printf '# FAIL %s\n' "$*"; exit "$KSFT_FAIL"; }

# Subtest result: check "description" command... ; records a failure but
# carries on so one run reports every broken property.
check() {
	local desc=$1
	shift
	_ksft_sub=$((_ksft_sub + 1))
	if "$@"; then
		printf 'ok %d %s\n' "$_ksft_sub" "$desc"
	else
		printf 'not ok %d %s\n' "$_ksft_sub" "$desc"
		_ksft_failed=$((_ksft_failed + 1))
	fi
}

# dkms_path PATH: PATH is a module file DKMS installed.  Where, is dkms's
# own rule: DEST_MODULE_LOCATION (dkms.conf: /updates/dkms) on Debian and
# Ubuntu; the Red Hat family's dkms overrides it with /extra.
dkms_path() { [[ $1 =~ /(updates/dkms|extra)/ ]]; }
# (the same as an extended regular expression, for grep -E)
DKMS_DIR_ERE='/(updates/dkms|extra)/'

# fails command...: succeeds when the command fails -- for the mutants of a
# check: check "mutant X: the Y check fails" fails y_check ARGS
fails() { ! "$@"; }

# check_xfail "description" "known gap" command...: a subtest that fails
# today for a documented, open reason (kselftest's XFAIL): "ok N desc # XFAIL
# reason" when the command fails, a plain ok when it passes.  Only beside a
# stricter check that still fails on a regression.
check_xfail() {
	local desc=$1 why=$2
	shift 2
	_ksft_sub=$((_ksft_sub + 1))
	if "$@"; then
		printf 'ok %d %s\n' "$_ksft_sub" "$desc"
	else
		printf 'ok %d %s # XFAIL %s\n' "$_ksft_sub" "$desc" "$why"
	fi
}

# check_skip "description" "reason": a subtest that could not run here.
check_skip() {
	_ksft_sub=$((_ksft_sub + 1))
	printf 'ok %d %s # SKIP %s\n' "$_ksft_sub" "$1" "$2"
}

# Exit with the verdict of the check() calls so far.
ksft_finish() {
	[ "$_ksft_sub" -gt 0 ] || fail "no subtest ran"
	printf '1..%d\n' "$_ksft_sub"	# KTAP allows the plan at the end
	[ "$_ksft_failed" -eq 0 ] && exit "$KSFT_PASS"
	exit "$KSFT_FAIL"
}

# alpha_second_pair WHAT PAIR_CMD...: the dctcp_fixed alpha tests' pairs of
# flows (dctcp_fixed_alpha.sh, dctcp_fixed_accecn.sh).  PAIR_CMD measures
# one pair and sets rc_f, rc_i (each flow's status), fm, im (the mean
# alphas of dctcp_fixed and in-tree dctcp), diff (|fm - im|) and band.  When
# both ran and diff is outside the band, one more pair is measured: a real
# difference shows in every pair, a drift between flows does not repeat,
# so diff is set to 0 unless the second pair is outside on the same side.
# AGAIN: what happened, for the check's description ("" when nothing).
alpha_second_pair() {
	local what=$1 side side2

	shift
	AGAIN=""
	{ [ "$rc_f" -eq 0 ] && [ "$rc_i" -eq 0 ] && ! cmp_num "$diff" "<=" "$band"; } || return 0
	AGAIN="first pair: dctcp_fixed $fm, in-tree $im, |difference| $diff > band $band; "
	side=$(awk -v a="$fm" -v b="$im" 'BEGIN { print (a > b) ? "above" : "below" }')
	log "$what: outside the band; measuring a second pair"
	"$@"
	side2=$(awk -v a="${fm:-0}" -v b="${im:-0}" 'BEGIN { print (a > b) ? "above" : "below" }')
	if cmp_num "$diff" "<=" "$band" || [ "$side2" != "$side" ]; then
		AGAIN="${AGAIN}second pair agrees; "
		diff=0
	fi
}

# Compare two numbers with awk (floating point allowed): cmp_num A op B.
# An empty or non-numeric operand, or an unknown operator, is an error
# (return 2 and say so), never a string comparison.
cmp_num() {
	local x num='^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$'

	for x in "$1" "$3"; do
		[[ $x =~ $num ]] || { log "cmp_num: '$x' is not a number (in: $1 $2 $3)"; return 2; }
	done
	case $2 in
	'<' | '<=' | '>' | '>=' | '==' | '!=') ;;
	*) log "cmp_num: unknown operator '$2'"; return 2 ;;
	esac
	awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
		a += 0; b += 0
		if (op == "<") r = a < b; else if (op == "<=") r = a <= b
		else if (op == ">") r = a > b; else if (op == ">=") r = a >= b
		else if (op == "==") r = a == b; else r = a != b
		exit !r }'
}

on_exit() { _cleanup_cmds+=("$*"); }
_run_cleanup() {
	local i
	# A second signal must not cut the restore short: timeout(1) sends
	# SIGTERM to the test and then to its whole process group.  (Once,
	# on a loaded host, harness_selftest found a parameter empty after a
	# test killed by the timeout: truncated, never written back.)
	trap '' TERM INT HUP
	for ((i = ${#_cleanup_cmds[@]} - 1; i >= 0; i--)); do
		eval "${_cleanup_cmds[i]}" >/dev/null 2>&1 || true
	done
}
trap _run_cleanup EXIT
# Signals end the test through exit, so the EXIT trap restores what it
# changed; further signals are ignored from here on.
trap "trap '' TERM INT HUP; exit 143" TERM
trap "trap '' TERM INT HUP; exit 130" INT
trap "trap '' TERM INT HUP; exit 129" HUP

require_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }

# Tests that change global state of the host (unload a module that was
# loaded before, inject faults into every TCP socket, change parameters under
# live sockets, send traffic outside their namespaces) run only when asked.
require_disruptive() { [ "${TAILFIX_DISRUPTIVE:-0}" = 1 ] || skip "disruptive ($*): set TAILFIX_DISRUPTIVE=1 on a dedicated host"; }

# Where sysfs is; host-side tests point it at a fake tree.
TAILFIX_SYSFS=${TAILFIX_SYSFS:-/sys}

# ena_in_use: succeeds when the ena driver drives a device here (a network
# interface whose device/driver resolves to .../ena, or a PCI device bound
# to /sys/bus/pci/drivers/ena); ENA_IN_USE says which.  Unloading ena then
# takes the host off its network.
ena_in_use() {
	local d drv

	ENA_IN_USE=
	for d in "$TAILFIX_SYSFS"/class/net/*; do
		drv=$(readlink -f "$d/device/driver" 2>/dev/null) || continue
		[ "${drv##*/}" = ena ] && ENA_IN_USE="${d##*/} (driver ena)" && return 0
	done
	for d in "$TAILFIX_SYSFS"/bus/pci/drivers/ena/*:*:*.*; do
		[ -e "$d" ] && ENA_IN_USE="PCI ${d##*/} bound to ena" && return 0
	done
	return 1
}

# Modules a test meets loaded were loaded by the host's operator, with the
# parameters the operator chose; unloading one, even to reload it, changes
# the host under its users (a reload of tcp_dctcp_fixed drops dctcp_fixed
# from net.ipv4.tcp_allowed_congestion_control, and unprivileged sockets
# get EPERM).  So a test either uses such a module as it is
# (module_load_own, require_module) or, when it must unload it or load it
# with parameters of its own, skips unless the run is disruptive
# (module_return_on_exit).  Only a module the test loaded itself is
# unloaded when it ends.  _MODS_OWN lists those, space-separated.
_MODS_OWN=" "

# module_loaded MOD: MOD is in the kernel now (loaded, or built in).
module_loaded() { [ -e "$TAILFIX_SYSFS/module/$1" ]; }

# _module_own MOD: MOD is not loaded now, so whatever of it the test loads
# is the test's: unloaded on exit, retried for up to 10 s while the
# sockets of deleted namespaces still hold it.
_module_own() {
	[[ $_MODS_OWN == *" $1 "* ]] && return 0
	_MODS_OWN+="$1 "
	on_exit "wait_for 10 module_unloaded $1"
}

# module_restore_on_exit MOD: the disruptive path for a MOD the host had
# loaded and the test unloads: skips unless TAILFIX_DISRUPTIVE=1, then on
# exit reloads MOD with the parameter values it has now and puts back the
# allowed congestion controls the reload drops.  Call it before the test's
# own on_exit cleanups: they run in reverse order.
module_restore_on_exit() {
	local mod=$1 p args="" cc

	module_loaded "$mod" || return 0
	require_disruptive "$mod is loaded here with the operator's parameters: not reloading it"
	[ -e "$TAILFIX_SYSFS/module/$mod/initstate" ] || return 0	# built in
	for p in "$TAILFIX_SYSFS/module/$mod/parameters"/*; do
		[ -f "$p" ] && [ -r "$p" ] || continue
		args+=" $(printf '%q' "${p##*/}=$(cat "$p")")"
	done
	cc=$(cat "$_CC_ALLOWED" 2>/dev/null)
	log "$mod was loaded before the test: reloaded on exit with:$args"
	on_exit "modprobe -r $mod; modprobe $mod$args; _cc_allowed_put $(printf '%q' "$cc")"
}

# _cc_allowed_put LIST: the allowed congestion controls are LIST again.
_CC_ALLOWED=${TAILFIX_PROCFS:-/proc}/sys/net/ipv4/tcp_allowed_congestion_control
_cc_allowed_put() {
	[ -n "$1" ] && [ "$(cat "$_CC_ALLOWED" 2>/dev/null)" != "$1" ] || return 0
	echo "$1" >"$_CC_ALLOWED"
}

# ko_put_as INSTALLED KO: write the module KO over the installed module file
# INSTALLED (modinfo -n) in the same form: DKMS may compress (.ko.xz,
# .ko.zst).  For tests that load a test build (a mutant, another source)
# the way modprobe finds the real one; they keep and put back the original.
ko_put_as() {
	case $1 in
	*.ko) cp "$2" "$1" ;;
	*.ko.xz) xz -c --check=crc32 "$2" >"$1" ;;
	*.ko.zst) zstd -q -c "$2" >"$1" ;;
	*) log "installed module in an unknown form: $1"; return 1 ;;
	esac
}

# Test builds of our modules: the shipped sources have no test code.  A
# mutant (tests/mutants/*_mutants.sh: a wrong module that a test must catch)
# or a test-only hook (tsq_probe's test_fail_init) is a patch under
# tests/mutants/DIR/ that these helpers apply to a copy of the installed
# DKMS source, built against the running kernel's headers and put where
# modprobe finds the real module.  mutants_setup MOD DIR PATCHES: MOD is
# built from the source's DIR, its patches are in tests/mutants/PATCHES/;
# keep the installed MOD aside and put it back on exit; MUT_* describe the
# build.  Needs the kernel headers and patch(1) (the guest images have them).
mutants_setup() {
	local why

	MUT_MOD=$1 MUT_DIR=$2 MUT_PATCHES=$TESTS_DIR/mutants/$3
	! why=$(mutants_unavailable) || skip "$why"
	MUT_SRC=$(ls -d /usr/src/ena-tcp-tailfix-*/ | tail -1)
	MUT_KDIR=/lib/modules/$(uname -r)/build
	MUT_PREBUILT=$TESTS_DIR/mutants/prebuilt/$(uname -r)
	MUT_INSTALLED=$(modinfo -n "$MUT_MOD") || fail "modinfo -n $MUT_MOD"
	# mutant_run unloads MOD: one the host had loaded is reloaded after
	module_return_on_exit "$MUT_MOD"
	MUT_TMP=$(mktemp -d)
	cp "$MUT_INSTALLED" "$MUT_TMP/real.ko"
	on_exit "cp '$MUT_TMP/real.ko' '$MUT_INSTALLED'; rmmod $MUT_MOD 2>/dev/null; rm -rf '$MUT_TMP'"
}

# mutants_unavailable: prints why no test build can be made here and
# succeeds; fails (prints nothing) when one can.
mutants_unavailable() {
	if ! command -v patch >/dev/null 2>&1; then
		echo "command 'patch' not installed"
	elif ! compgen -G '/usr/src/ena-tcp-tailfix-*/' >/dev/null; then
		echo "no DKMS source under /usr/src"
	elif [ ! -d "/lib/modules/$(uname -r)/build" ]; then
		echo "no kernel headers for $(uname -r)"
	else
		return 1
	fi
}

# mutant_build N [PATCH...]: MUT_DIR copied from the DKMS source, each PATCH
# applied to the copy (default: $MUT_PATCHES/mutantN.patch; none for N=0,
# the real module), built: the module in $MUT_TMP/mN.ko.  A patch that no
# longer applies fails the build and says so.  On a staged guest disk the
# same build may have been made at staging (tests/vm/mutant-prebuild.sh, the
# same source and patches by their hash): then that module is taken.
mutant_build() {
	local n=$1 log=$MUT_TMP/build.$1 p k

	shift
	[ $# -gt 0 ] || [ "$n" = 0 ] || set -- "$MUT_PATCHES/mutant$n.patch"
	if [ -d "$MUT_PREBUILT" ] &&
		k=$("$TESTS_DIR/vm/mutant-prebuild.sh" key "$MUT_SRC" "$MUT_DIR" "$@") &&
		[ -f "$MUT_PREBUILT/$k.ko" ]; then
		log "$MUT_MOD $n: built at staging from the same source and patches ($MUT_PREBUILT/$k.ko)"
		cp "$MUT_PREBUILT/$k.ko" "$MUT_TMP/m$n.ko"
		return
	fi
	rm -rf "$MUT_TMP/b" && mkdir -p "$MUT_TMP/b" &&
		cp -r "$MUT_SRC/$MUT_DIR" "$MUT_SRC/dkms.conf" "$MUT_TMP/b/" || return 1
	: >"$log"
	for p in "$@"; do
		if ! patch -s -p1 -d "$MUT_TMP/b" <"$p" >>"$log" 2>&1; then
			log "$MUT_MOD $n: $p does not apply: $(tail -1 "$log")"
			return 1
		fi
	done
	if ! make -s -C "$MUT_KDIR" M="$MUT_TMP/b/$MUT_DIR" modules >>"$log" 2>&1; then
		log "$MUT_MOD $n does not build: $(grep -m1 -E 'error|Error' "$log")"
		return 1
	fi
	cp "$MUT_TMP/b/$MUT_DIR/$MUT_MOD.ko" "$MUT_TMP/m$n.ko"
}

# mutant_install N: $MUT_TMP/mN.ko where modprobe finds MOD (DKMS may have
# compressed the real one: ko_put_as); mutant_uninstall, or mutants_setup's
# exit, puts the real one back.
mutant_install() {
	rmmod "$MUT_MOD" 2>/dev/null
	ko_put_as "$MUT_INSTALLED" "$MUT_TMP/m$1.ko"
}

mutant_uninstall() {
	rmmod "$MUT_MOD" 2>/dev/null
	cp "$MUT_TMP/real.ko" "$MUT_INSTALLED"
}

# mutant_run N TEST: TEST's exit status with mutant N installed (where
# modprobe finds the real one; DKMS may have compressed it: ko_put_as).
mutant_run() {
	local rc

	mutant_install "$1" || return 2
	"$TESTS_DIR/$2" >"$MUT_TMP/out.$1.$2" 2>&1
	rc=$?
	grep -E '^not ok|^# FAIL' "$MUT_TMP/out.$1.$2" | head -5 | sed "s/^/#   mutant $1: /"
	mutant_uninstall
	return "$rc"
}

# mutants_judge CATCH_ARRAY_NAME "N...": the real module rebuilt (N=0) passes
# every catching test; each mutant N fails (exit 1, not a skip) its test.
mutants_judge() {
	local -n catch=$1
	local m t why
	check "the real $MUT_MOD rebuilt from the DKMS source" mutant_build 0
	for t in $(for m in $2; do printf '%s\n' ${catch[$m]}; done | sort -u); do
		check "control: $t passes with the real module (rebuilt)" mutant_run 0 "$t"
	done
	caught() { mutant_run "$1" "$2"; [ $? -eq 1 ]; }
	for m in $2; do
		# mutant_applies N (optional, the caller's): prints why mutant N
		# cannot be told apart on this kernel and fails; it is skipped.
		if declare -F mutant_applies >/dev/null && ! why=$(mutant_applies "$m"); then
			check_skip "mutant $m" "$why"
			continue
		fi
		if ! mutant_build "$m"; then
			check "mutant $m builds" false
			continue
		fi
		for t in ${catch[$m]}; do
			check "mutant $m fails $t" caught "$m" "$t"
		done
	done
}

# module_unloaded MOD: MOD is not loaded (unloading it if it is).
module_unloaded() {
	[ -e "$TAILFIX_SYSFS/module/$1" ] && modprobe -r "$1" 2>/dev/null
	[ ! -e "$TAILFIX_SYSFS/module/$1" ]
}

# module_return_on_exit MOD: for a test that unloads MOD or loads it with
# parameters of its own: whatever it does, on exit MOD is as it is now.
# Not loaded now: unloaded on exit.  Loaded by the test itself
# (module_load_own): nothing more to do.  Loaded before the test: the test
# skips unless it is disruptive, and MOD is then reloaded on exit with its
# present parameters (module_restore_on_exit).
module_return_on_exit() {
	[[ $_MODS_OWN == *" $1 "* ]] && return 0
	if module_loaded "$1"; then
		module_restore_on_exit "$1"
	else
		_module_own "$1"
	fi
}

# module_load_own MOD: MOD loaded for the test, its status modprobe's.  A
# MOD loaded before the test is used as it is (the operator's parameters)
# and stays loaded; one the test loads here is unloaded on exit.
module_load_own() {
	if module_loaded "$1"; then
		[[ $_MODS_OWN == *" $1 "* ]] ||
			log "$1 was loaded before the test: used as it is, left loaded"
		return 0
	fi
	_module_own "$1"
	modprobe "$1" 2>/dev/null
}

require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "command '$c' not installed"
	done
}

# require_tcp_diag: ss -i reads tcp_info (bytes_received, the congestion
# control's fields) through tcp_diag; without it ss falls back to
# /proc/net/tcp, which has none of them, and a test would read zeros.
require_tcp_diag() {
	require_cmd ss
	modprobe -q tcp_diag 2>/dev/null || [ -d /sys/module/tcp_diag ] ||
		skip "no tcp_diag in this kernel: ss -i cannot read tcp_info"
}

# require_module MOD: MOD loaded (kernel module or one of ours) or skip; a
# MOD loaded before the test is used as it is (module_load_own).
require_module() {
	module_load_own "$1" || skip "module $1 not available for $(uname -r)"
}

# require_tool name: one of our helper programs under tests/tools.
require_tool() {
	[ -x "$TOOLS_DIR/$1" ] || skip "helper $TOOLS_DIR/$1 not built (make -C tests tools)"
}

# The kernel series, "6.1" or "6.12", of the running kernel.
kver_series() { uname -r | sed -E 's/^([0-9]+\.[0-9]+).*/\1/'; }

# wait_for SECONDS cmd...: poll cmd until it succeeds or the deadline passes.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# ---- dmesg ------------------------------------------------------------------

# Lines that make any test fail.  "Call trace:" is arm64's spelling; NETDEV
# WATCHDOG is a NIC whose TX queue stopped moving (the tests need it).
# Lockdep's and debugobjects' reports by their own words, not the word
# "lockdep" (a debug kernel's boot says "RCU lockdep checking is enabled").
DMESG_BAD='WARNING:|BUG:|Oops|kernel BUG|general protection|lockdep is turned off|locking correctness validator|DEBUG_LOCKS_WARN_ON|inconsistent lock state|possible recursive locking|circular locking|possible deadlock|ODEBUG:|INFO: rcu_|rcu_sched self-detected|KASAN|KFENCE|UBSAN|refcount_t:|list_add corruption|list_del corruption|soft lockup|hung_task|Call Trace:|Call trace:|NETDEV WATCHDOG'

# The kernel log is read through /dev/kmsg, whose records carry a sequence
# number: "PRIO,SEQ,USEC,FLAGS;text".  A mark is the last SEQ; reading
# after it sees every later record, or a jump in SEQ when the ring buffer
# wrapped in between -- reported as a gap, never silently skipped.  Nothing
# is cleared: on a real host the log is not ours.  TAILFIX_KMSG and
# TAILFIX_TAINT_FILE replace /dev/kmsg and /proc/sys/kernel/tainted for the
# harness's own test (tests/host/harness_selftest.sh).

# _kmsg_dump: every record the buffer holds, in /dev/kmsg format.  Reading
# stops at the end (EAGAIN); a record overwritten while we read (EPIPE)
# stops dd too, so that is read again from the start.
_kmsg_dump() {
	local err i
	err=$(mktemp)
	for i in 1 2 3; do
		dd if="${TAILFIX_KMSG:-/dev/kmsg}" iflag=nonblock bs=64k status=none 2>"$err" >"$err.out"
		grep -qi 'pipe' "$err" || break
	done
	cat "$err.out"
	rm -f "$err" "$err.out"
}

# kmsg_scan MARK: /dev/kmsg records on stdin; print the text of each
# record after sequence number MARK, and "GAP ..." where records are missing.
kmsg_scan() {
	awk -v mark="$1" '
	/^[0-9]+,[0-9]+,/ {
		split(substr($0, 1, index($0, ";") - 1), h, ",")
		seq = h[2] + 0
		if (seq <= mark)
			next
		prev = seen ? last : mark
		if (seq != prev + 1)
			printf "GAP: kernel log records %d..%d lost (ring buffer wrapped)\n", prev + 1, seq - 1
		seen = 1
		last = seq
		print substr($0, index($0, ";") + 1)
	}'
}

# sum_ints: the exact sum of the integers on stdin, one per line (0 for none).
# mawk prints a sum above 2^31 as "1.18e+10" with "print s", which [ -gt ]
# then refuses; "%.0f" stays exact up to 2^53.
sum_ints() { awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# kmsg_last_seq: sequence number of the newest record (-1: empty log).
kmsg_last_seq() {
	awk -F'[,;]' '/^[0-9]+,[0-9]+,/ { s = $2 } END { print (s == "" ? -1 : s) }'
}

# dmesg_bad_lines: text on stdin; print the lines DMESG_BAD flags, and gaps.
dmesg_bad_lines() { grep -E "^GAP: |$DMESG_BAD"; }

# kmemleak_ours: a kmemleak report (/sys/kernel/debug/kmemleak) on stdin;
# print the leaked objects that are the package's: their allocation trace
# names one of its modules, or has a frame no symbol resolves (the module
# that allocated it has been unloaded, as the tests do).  Boot-time and
# in-tree findings of the debug kernel are someone else's.
kmemleak_ours() {
	awk '
	function flush() { if (obj != "" && ours) printf "%s", obj; obj = ""; ours = 0 }
	/^unreferenced object/ { flush() }
	{ if ($0 ~ /^unreferenced object/ || obj != "") obj = obj $0 "\n" }
	/\[(tsq_probe|tcp_dctcp_fixed|ena)\]$/ { ours = 1 }
	/^ +\[<[0-9a-f]+>\] 0x[0-9a-f]+$/ { ours = 1 }
	END { flush() }'
}

# dmesg_mark: remember where the kernel log ends now.  (_dmesg_lines, the
# line count of dmesg, is kept for tests that tail dmesg themselves.)
dmesg_mark() {
	_dmesg_lines=$(dmesg | wc -l)
	_kmsg_mark=$(_kmsg_dump | kmsg_last_seq)
}

# dmesg_since: the text of every record logged since dmesg_mark (and gaps).
dmesg_since() { _kmsg_dump | kmsg_scan "${_kmsg_mark:--1}"; }

# dmesg_clean: succeeds when no bad line was logged since dmesg_mark and
# none can have been lost.
dmesg_clean() {
	local bad
	bad=$(dmesg_since | dmesg_bad_lines)
	[ -z "$bad" ] && return 0
	printf '%s\n' "$bad" | head -20 | sed 's/^/# dmesg: /'
	return 1
}

# Kernel taint (/proc/sys/kernel/tainted), one letter per bit as in
# Documentation/admin-guide/tainted-kernels.rst.  Our modules are
# out-of-tree (O) and unsigned (E): expected; so is what a program declares
# with taint_expected.  Any other new flag -- W (a
# WARN), D (an oops), L (soft lockup), K (live patch), ... -- is not.
TAINT_LETTERS=PFSRMBUDAWCIOELKXTN
TAINT_OK=${TAILFIX_TAINT_OK:-OE}

# tsq_fault_taint: the taint tsq_probe's fault injection sets on the running
# kernel, found as the module's build finds it: TAINT_TEST (N, bit 18) where
# the kernel's headers have it (6.0 and later), TAINT_USER (U, bit 6)
# otherwise.  Prints "LETTER BIT" (TAILFIX_TSQ_TAINT="LETTER BIT" instead,
# for the harness self-tests).
tsq_fault_taint() {
	local d=/lib/modules/$(uname -r)
	if [ -n "${TAILFIX_TSQ_TAINT:-}" ]; then
		echo "$TAILFIX_TSQ_TAINT"
	elif grep -qsw TAINT_TEST "$d"/build/include/linux/panic.h "$d"/build/include/linux/kernel.h \
		"$d"/source/include/linux/panic.h "$d"/source/include/linux/kernel.h; then
		echo "N 18"
	else
		echo "U 6"
	fi
}

# taint_expected PROG...: the letters the programs declare they set on
# purpose, each in a header line "# taint-expected: LETTERS reason" (the
# fault injection of tsq_probe taints TAINT_TEST, N, by design; where the
# kernel has no TAINT_TEST, the N stands for what tsq_probe sets there).
taint_expected() {
	local l
	# (no program, no letter: sed without a file would read stdin, which
	# in a guest is the console, and wait for ever -- the demo and bench
	# runs have no program list)
	[ $# -gt 0 ] || return 0
	l=$(sed -n 's/^# taint-expected: \([A-Z]*\).*/\1/p' "$@" 2>/dev/null | tr -d '\n')
	[[ $l == *N* ]] && l=${l//N/$(tsq_fault_taint | cut -d' ' -f1)}
	echo -n "$l"
}

taint_read() { cat "${TAILFIX_TAINT_FILE:-/proc/sys/kernel/tainted}" 2>/dev/null || echo 0; }

# taint_new BEFORE AFTER: print the letters of flags set in AFTER, not in
# BEFORE and not in TAINT_OK; fail when there is any.
taint_new() {
	local new=$(($2 & ~$1)) bit l out=
	for ((bit = 0; bit < 63; bit++)); do
		((new >> bit & 1)) || continue
		l=${TAINT_LETTERS:bit:1}
		l=${l:-"bit$bit"}
		[[ ${#l} -eq 1 && $TAINT_OK == *"$l"* ]] && continue
		out="$out$l "
	done
	[ -z "$out" ] && return 0
	echo "${out% }"
	return 1
}

# ---- what a test must leave as it found it ------------------------------------

# host_state: our modules (loaded or not, and each readable parameter) and
# the TCP sysctls a test may touch, one line each.  run_tests.sh compares it
# before and after every program: a program that leaves a module loaded
# with other parameters (a fault-injecting tsq_probe after a timeout), or
# unloaded, or a sysctl changed, fails.  TAILFIX_SYSFS and TAILFIX_PROCFS
# replace /sys and /proc (the harness self-test fakes them).
STATE_MODULES="tsq_probe tcp_dctcp_fixed ena"
STATE_SYSCTLS="tcp_congestion_control tcp_allowed_congestion_control tcp_autocorking tcp_ecn"
host_state() {
	local m p s
	for m in $STATE_MODULES; do
		if [ ! -d "$TAILFIX_SYSFS/module/$m" ]; then
			echo "module $m: not loaded"
			continue
		fi
		echo "module $m: loaded"
		for p in "$TAILFIX_SYSFS/module/$m/parameters"/*; do
			[ -f "$p" ] || continue
			echo "module $m: ${p##*/}=$(cat "$p" 2>/dev/null)"
		done
	done
	for s in $STATE_SYSCTLS; do
		echo "sysctl net.ipv4.$s=$(cat "${TAILFIX_PROCFS:-/proc}/sys/net/ipv4/$s" 2>/dev/null)"
	done
}

# state_diff BEFORE AFTER: the lines that differ, "- was" / "+ now".
state_diff() {
	diff <(printf '%s\n' "$1") <(printf '%s\n' "$2") |
		sed -n 's/^< /- /p; s/^> /+ /p'
}

# ---- namespaces and topologies ------------------------------------------------

_rand() { printf '%04x%04x' $RANDOM $RANDOM; }

# new_ns VAR: create a namespace with a random suffix, store its name in VAR.
new_ns() {
	local name="tf-$1-$(_rand)"
	ip netns add "$name" || fail "ip netns add $name"
	on_exit ip netns del "$name"
	ip -n "$name" link set lo up
	printf -v "$1" '%s' "$name"
}

# topo_pair: client and server namespaces joined by one veth pair.
#   NS_CLI (198.18.0.1, dev veth0) <-> NS_SRV (198.18.0.2, dev veth0)
# Addresses are from the benchmarking range (RFC 2544), inside our namespaces.
CLI_ADDR=198.18.0.1
SRV_ADDR=198.18.0.2
topo_pair() {
	new_ns NS_CLI
	new_ns NS_SRV
	ip -n "$NS_CLI" link add veth0 type veth peer name veth0 netns "$NS_SRV" ||
		fail "veth pair"
	ip -n "$NS_CLI" addr add "$CLI_ADDR/24" dev veth0
	ip -n "$NS_SRV" addr add "$SRV_ADDR/24" dev veth0
	ip -n "$NS_CLI" link set veth0 up
	ip -n "$NS_SRV" link set veth0 up
	wait_for 10 ip netns exec "$NS_CLI" ping -c1 -W1 "$SRV_ADDR" >/dev/null ||
		fail "no connectivity in topo_pair"
}

# topo_router: two senders and one receiver around a router namespace.
#   NS_S1 (198.18.1.1) --- NS_RTR --- NS_RCV (198.18.3.1)
#   NS_S2 (198.18.2.1) ---/
# The router's egress towards the receiver is veth "rcv" in NS_RTR: that is
# where a bottleneck qdisc goes (see qdisc_bottleneck).
S1_ADDR=198.18.1.1
S2_ADDR=198.18.2.1
RCV_ADDR=198.18.3.1
topo_router() {
	local ns i
	new_ns NS_RTR
	new_ns NS_S1
	new_ns NS_S2
	new_ns NS_RCV
	ip netns exec "$NS_RTR" sysctl -qw net.ipv4.ip_forward=1
	i=1
	for ns in "$NS_S1" "$NS_S2" "$NS_RCV"; do
		local port=p$i
		[ "$ns" = "$NS_RCV" ] && port=rcv
		ip -n "$ns" link add eth0 type veth peer name "$port" netns "$NS_RTR" ||
			fail "veth to router"
		ip -n "$ns" addr add "198.18.$i.1/24" dev eth0
		ip -n "$NS_RTR" addr add "198.18.$i.254/24" dev "$port"
		ip -n "$ns" link set eth0 up
		ip -n "$NS_RTR" link set "$port" up
		ip -n "$ns" route add default via "198.18.$i.254"
		i=$((i + 1))
	done
	for ns in "$NS_S1" "$NS_S2"; do
		wait_for 10 ip netns exec "$ns" ping -c1 -W1 "$RCV_ADDR" >/dev/null ||
			fail "no route to receiver in topo_router"
	done
}

# topo_nic_pair: like topo_pair, but over two real NICs joined outside the
# kernel under test when the guest has them (run.sh gives the guest two
# virtio-net NICs on one QEMU hub, listed in TAILFIX_NIC_PAIR).  A real NIC
# keeps each skb until its TX completion, the way ENA does, which is what
# makes tcp_push() autocork; veth frees it at once.  Falls back to veth.
# Sets TOPO_KIND to "nic" or "veth" and SRV_DEV/CLI_DEV.
topo_nic_pair() {
	set -- ${TAILFIX_NIC_PAIR:-}
	if [ $# -ne 2 ] || [ ! -e "/sys/class/net/$1" ] || [ ! -e "/sys/class/net/$2" ]; then
		topo_pair
		TOPO_KIND=veth SRV_DEV=veth0 CLI_DEV=veth0
		return
	fi
	new_ns NS_CLI
	new_ns NS_SRV
	ip link set "$1" netns "$NS_SRV" && ip link set "$2" netns "$NS_CLI" || fail "moving NICs"
	# Hand the NICs back before the namespaces go: a namespace is torn down
	# asynchronously, and the next test must find them home and settled.
	on_exit ip -n "$NS_SRV" link set "$1" netns 1
	on_exit ip -n "$NS_CLI" link set "$2" netns 1
	ip -n "$NS_SRV" addr add "$SRV_ADDR/24" dev "$1"
	ip -n "$NS_CLI" addr add "$CLI_ADDR/24" dev "$2"
	ip -n "$NS_SRV" link set "$1" up
	ip -n "$NS_CLI" link set "$2" up
	TOPO_KIND=nic SRV_DEV=$1 CLI_DEV=$2
	wait_for 20 ip netns exec "$NS_CLI" ping -c1 -W1 "$SRV_ADDR" >/dev/null || {
		nic_pair_state "$1" "$2"
		fail "no connectivity over NICs $1/$2"
	}
}

# nic_pair_state SRV-NIC CLI-NIC: what a dead NIC pair looks like (link,
# queue and driver counters of both), for the log of the test that found it.
nic_pair_state() {
	local ns dev
	for ns in "$NS_SRV:$1" "$NS_CLI:$2"; do
		dev=${ns#*:} ns=${ns%%:*}
		ip -n "$ns" -s -d link show "$dev" 2>&1 | sed "s/^/#   $dev: /"
		ip netns exec "$ns" ethtool -S "$dev" 2>&1 | grep -vE ': 0$' | sed "s/^/#   $dev: /"
		ip -n "$ns" neigh show dev "$dev" 2>&1 | sed "s/^/#   $dev neigh: /"
	done
}

# ip6_pair: IPv6 addresses (no DAD) on the pair topo_nic_pair made, and
# SRV_ADDR/CLI_ADDR switched to them: what runs after that speaks IPv6
# (RR_FAMILY=6 makes rr_setup call it).
SRV_ADDR6=fd00:7a11::2
CLI_ADDR6=fd00:7a11::1
ip6_pair() {
	local ns
	for ns in "$NS_SRV" "$NS_CLI"; do
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 \
			net.ipv6.conf.default.disable_ipv6=0 2>/dev/null ||
			skip "IPv6 is not available in this kernel"
	done
	ip netns exec "$NS_SRV" sysctl -qw "net.ipv6.conf.$SRV_DEV.disable_ipv6=0" &&
		ip netns exec "$NS_CLI" sysctl -qw "net.ipv6.conf.$CLI_DEV.disable_ipv6=0" ||
		fail "cannot enable IPv6 on $SRV_DEV/$CLI_DEV"
	ip -n "$NS_SRV" addr add "$SRV_ADDR6/64" dev "$SRV_DEV" nodad &&
		ip -n "$NS_CLI" addr add "$CLI_ADDR6/64" dev "$CLI_DEV" nodad ||
		fail "IPv6 addresses"
	wait_for 20 ip netns exec "$NS_CLI" ping -6 -c1 -W1 "$SRV_ADDR6" >/dev/null ||
		fail "no IPv6 connectivity over $CLI_DEV -> $SRV_DEV"
	SRV_ADDR=$SRV_ADDR6 CLI_ADDR=$CLI_ADDR6
}

# topo_raw_peer: the kernel under test in NS_K (KIP, dev veth0, ECN on) and a
# raw-socket peer (dctcp_fixed_peer.py) in NS_P (PIP, no address: the peer
# answers from user space), one veth pair, offloads off so that one skb is
# one packet, IPv6 off, a permanent neighbour entry for the peer (KMAC, PMAC).
KIP=198.18.0.1
PIP=198.18.0.2
topo_raw_peer() {
	local ns
	new_ns NS_K
	new_ns NS_P
	ip link add veth0 netns "$NS_K" type veth peer name veth0 netns "$NS_P" || fail "veth pair"
	for ns in "$NS_K" "$NS_P"; do
		ip netns exec "$ns" ethtool -K veth0 tso off gso off gro off >/dev/null 2>&1
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
		ip -n "$ns" link set veth0 up
	done
	ip -n "$NS_K" addr add "$KIP/24" dev veth0
	ip netns exec "$NS_K" sysctl -qw net.ipv4.tcp_ecn=1
	KMAC=$(ip netns exec "$NS_K" cat /sys/class/net/veth0/address)
	PMAC=$(ip netns exec "$NS_P" cat /sys/class/net/veth0/address)
	ip -n "$NS_K" neigh replace "$PIP" lladdr "$PMAC" dev veth0 nud permanent
	wait_for 10 sh -c "ip -n $NS_K link show veth0 | grep -q LOWER_UP" || fail "veth not up"
}

# qdisc_hold NS DEV: a token bucket that holds packets the way a NIC ring does
# before TX completion, so TSQ and autocork see bytes "below TCP".
qdisc_hold() {
	ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate 20mbit burst 4000 latency 100ms ||
		fail "tbf on $1/$2"
}

# qdisc_bottleneck NS DEV RATE MARK_KB: rate-limited bottleneck with step ECN
# marking above MARK_KB kilobytes of queue (RED with min == max is a step).
qdisc_bottleneck() {
	local ns=$1 dev=$2 rate=$3 k=$(($4 * 1000))
	ip netns exec "$ns" tc qdisc replace dev "$dev" root handle 1: tbf rate "$rate" burst 10000 limit 4000000 ||
		fail "tbf bottleneck"
	ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: red limit 4000000 \
		min "$k" max "$((k + 1))" avpkt 1000 burst "$((k / 1000 + 1))" probability 1.0 ecn ||
		fail "red step marking"
}

# nstat_get NS COUNTER: absolute value of a kernel SNMP counter in NS.
nstat_get() {
	ip netns exec "$1" nstat -asz "$2" 2>/dev/null | awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }'
}

# ---- the two-write request/response workload (tests/tools/tailrr) -------------

# rr_setup [server args...]: topo_pair, a holding qdisc on the server's side,
# and a tailrr server answering each request with a body then a trailer.
RR_PORT=5201
rr_setup() {
	require_tool tailrr
	topo_nic_pair
	[ "${RR_FAMILY:-4}" = 6 ] && ip6_pair
	qdisc_hold "$NS_SRV" "$SRV_DEV"
	log "topology: $TOPO_KIND ($SRV_DEV), IPv${RR_FAMILY:-4} $CLI_ADDR -> $SRV_ADDR"
	local ready
	ready=$(mktemp -u /tmp/tailrr-ready.XXXXXX)
	ip netns exec "$NS_SRV" "$TOOLS_DIR/tailrr" server --bind "$SRV_ADDR" --port "$RR_PORT" \
		--ready-file "$ready" "$@" >/dev/null 2>&1 &
	on_exit "kill $! ; rm -f $ready"
	wait_for 20 test -e "$ready" || fail "tailrr server did not start"
}

# rr_run OUT [client args...]: one client run; key=value results in OUT.
rr_run() {
	local out=$1
	shift
	ip netns exec "$NS_CLI" "$TOOLS_DIR/tailrr" client --server "$SRV_ADDR" --port "$RR_PORT" \
		"$@" >"$out" || { log "tailrr client failed: $(tail -3 "$out")"; return 1; }
}

# rr_measure OUT [client args...]: an open-loop run whose numbers can be
# trusted.  When the client itself fell >= 30 ms behind its schedule
# (send_lag_max_us: the emulator stalled the client, not the network), the
# run measured the emulator: say so and measure again, at most twice.  Every
# retry is counted in OUT (retries=N) and logged; when the last one lags
# too, there is no trustworthy measurement and rr_measure returns 2 (1: the
# client failed).  RR_LAG_MAX_US (default 30000) moves that limit, to
# exercise what the tests do on a slow emulator.
rr_measure() {
	local out=$1 lag try=0 max=${RR_LAG_MAX_US:-30000}
	while :; do
		rr_run "$@" || return 1
		[ "$try" -eq 0 ] || echo "retries=$try" >>"$out"
		lag=$(kv "$out" send_lag_max_us)
		[ "${lag:-0}" -lt "$max" ] && return 0
		if [ "$try" -eq 2 ]; then
			log "retry $try fell ${lag} us behind too: no trustworthy measurement"
			return 2
		fi
		try=$((try + 1))
		log "client fell ${lag} us behind its schedule (emulator stall): retry $try of 2"
	done
}

# rr_background OUT: the traffic of a whole test in the background:
# closed-loop two-write requests on 8 connections, output in OUT; its pid
# in TRAFFIC, killed on exit.  It lasts as long as the test may (the
# per-test timeout of tests/settings): 30 load/unload cycles took 696 s on
# the debug kernel, and traffic that ended at 600 s failed them.
rr_background() {
	local secs

	secs=$(sed -n 's/^timeout=\([0-9]*\)$/\1/p' "$TESTS_DIR/settings")
	ip netns exec "$NS_CLI" "$TOOLS_DIR/tailrr" client --server "$SRV_ADDR" --port "$RR_PORT" \
		--closed --duration "${secs:-900}" --conns 8 >"$1" 2>&1 &
	TRAFFIC=$!
	on_exit "kill $TRAFFIC"
}

# kv FILE KEY: value of KEY in a key=value (or "key value") file.
kv() { awk -v k="$2" -F '[= ]' '$1 == k { print $2; exit }' "$1"; }

# require_tsq_probe: root, the module installed, and not loaded yet.  A
# tsq_probe the host had loaded is only unloaded for a disruptive run, and is
# reloaded with its parameters on exit (module_return_on_exit).
require_tsq_probe() {
	require_root
	modinfo tsq_probe >/dev/null 2>&1 || skip "tsq_probe is not installed for $(uname -r)"
	# whatever the test loads (a fault-injecting tsq_probe) is gone when it
	# ends, also when it fails or the runner's timeout kills it
	module_return_on_exit tsq_probe
	[ -e "$TAILFIX_SYSFS/module/tsq_probe" ] || return 0
	modprobe -r tsq_probe || fail "modprobe -r tsq_probe: it is loaded and cannot be unloaded"
}

# tsq_stat KEY: a counter of /sys/kernel/tsq_probe/stats.
tsq_stat() { kv /sys/kernel/tsq_probe/stats "$1"; }

# doc_keys README: the keys documented in the first column of the
# "## Counters" table of a module's README (every `name` in that cell).
doc_keys() {
	awk '/^## / { on = ($0 ~ /^## Counters/); next }
	on && /^\| *`/ {
		split($0, c, "|"); s = c[2]
		while (match(s, /`[^`]+`/)) {
			print substr(s, RSTART + 1, RLENGTH - 2)
			s = substr(s, RSTART + RLENGTH)
		}
	}' "$1"
}

# stats_has_keys STATS KEY...: every KEY has a "KEY NUMBER" line in STATS.
stats_has_keys() {
	local f=$1 k rc=0

	shift
	[ $# -gt 0 ] || { log "no key to look for"; return 1; }
	for k in "$@"; do
		grep -q "^$k [0-9][0-9]*$" "$f" || { log "missing key $k"; rc=1; }
	done
	return $rc
}

# kprobe_count LIST SYM: probes on SYM in a copy of debugfs kprobes/list
# ("ADDR  k|r  SYM+OFF  [flags]").
kprobe_count() { awk -v s="$2" 'index($3, s "+") == 1 { n++ } END { print n + 0 }' "$1"; }

# kprobes_added BEFORE AFTER SYM...: AFTER has more probes on each SYM.
kprobes_added() {
	local s rc=0

	for s in "${@:3}"; do
		[ "$(kprobe_count "$2" "$s")" -gt "$(kprobe_count "$1" "$s")" ] ||
			{ log "no new kprobe on $s"; rc=1; }
	done
	return $rc
}

# kprobes_same BEFORE AFTER SYM...: as many probes on each SYM as before.
kprobes_same() {
	local s rc=0 a b

	for s in "${@:3}"; do
		a=$(kprobe_count "$1" "$s")
		b=$(kprobe_count "$2" "$s")
		[ "$a" -eq "$b" ] || { log "kprobes on $s: $a before, $b after"; rc=1; }
	done
	return $rc
}

# refused_load "dmesg pattern" args...: modprobe tsq_probe with args fails,
# says why in dmesg, and leaves no module behind.  A load that was not
# refused is undone, so that the checks after it start unloaded.
refused_load() {
	local pat=$1
	shift
	dmesg_mark
	if modprobe tsq_probe "$@" 2>/dev/null; then
		log "modprobe tsq_probe $* was not refused"
		modprobe -r tsq_probe
		return 1
	fi
	[ ! -e /sys/module/tsq_probe ] &&
	dmesg | tail -n +"$((_dmesg_lines + 1))" | grep -q "tsq_probe: .*$pat"
}

# tracefs_file NAME: the path of tracefs' NAME (enabled_functions, ...),
# under /sys/kernel/tracing or debugfs' tracing/; fails if neither has it.
tracefs_file() {
	local d

	for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		[ -r "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}

# ftrace_count LIST SYM: ftrace_ops on SYM in a copy of tracefs
# enabled_functions ("SYM (N) flags ..."; a kprobe on ftrace is one too).
ftrace_count() {
	awk -v s="$2" '$1 == s { n = $2; gsub(/[()]/, "", n); print n + 0; f = 1 } END { if (!f) print 0 }' "$1"
}

# ---- ENA ----------------------------------------------------------------------

# ethtool -S values of ena that are gauges, not counters (6.12, amzn-drivers).
ENA_GAUGES="conntrack_allowance_available ena_srd_mode ena_srd_resource_utilization"

# counters_monotonic PREV CUR: two "name value" reads; every counter of PREV
# is in CUR and did not go down (gauges excepted).  An empty read fails.
counters_monotonic() {
	[ -s "$1" ] && [ -s "$2" ] || { log "empty counter read ($1 or $2)"; return 1; }
	awk -v gauges="$ENA_GAUGES" '
	BEGIN { n = split(gauges, g, " "); for (i = 1; i <= n; i++) gauge[g[i]] = 1 }
	NR == FNR { prev[$1] = $2; next }
	{ seen[$1] = 1 }
	!($1 in gauge) && ($1 in prev) && $2 + 0 < prev[$1] + 0 {
		printf "# %s went from %s to %s\n", $1, prev[$1], $2; bad = 1 }
	END {
		for (k in prev) if (!(k in seen)) { printf "# %s disappeared\n", k; bad = 1 }
		exit bad }' "$1" "$2"
}
