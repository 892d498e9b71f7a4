#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The helpers of tests/lib.sh, and the checks built on them, against fakes
# and mutants: each must fail where the property does not hold.
#   cmp_num              empty / non-numeric operands are errors (return 2)
#   require_disruptive   skips unless TAILFIX_DISRUPTIVE=1
#   require_tsq_probe    a tsq_probe the host had loaded is left alone unless
#   module_restore_on_exit  disruptive, and reloaded with its parameters
#   require_module       a module loaded before the test is used as it is,
#   module_return_on_exit   never reloaded unless disruptive; only one the
#                        test loaded is unloaded at exit
#   the gates            a test's require_disruptive comes before its module
#                        helpers; every mutant and fake (tests/mutants/)
#                        skips without TAILFIX_DISRUPTIVE=1
#   ena_in_use           (more in host/ena_guard.sh)
#   doc_keys, stats_has_keys   the README's keys, all of them
#   kprobes_added/_same  registration seen in kprobes/list, by symbol
#   counters_monotonic   empty reads fail, gauges excepted, ethtool's status
#                        (ena_hw.sh on a fake ENA host)
#   sum_ints             exact above 2^31 (mawk's "print s" is not)
#   host/dkms_conf.sh    the "says why" check against fake prepare-source.sh
#   dmesg_bad_lines      a debug kernel's boot banner passes, its reports do not
#   kmemleak_ours        the package's leaks in a kmemleak report, not the kernel's
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"

# ---- cmp_num -------------------------------------------------------------------
# cmp_rc EXPECTED A OP B: cmp_num returns EXPECTED.
cmp_rc() {
	local want=$1 rc=0

	shift
	cmp_num "$@" >/dev/null || rc=$?
	[ "$rc" -eq "$want" ] || { log "cmp_num '$1' '$2' '$3' returned $rc, want $want"; return 1; }
}
check "cmp_num: 1 < 2, 2.5 >= 2.5, 1e3 == 1000, 3 != 4" \
	bash -c "$(declare -f cmp_num log); cmp_num 1 '<' 2 && cmp_num 2.5 '>=' 2.5 && cmp_num 1e3 == 1000 && cmp_num 3 '!=' 4"
check "cmp_num: 10 < 9 is false (numeric, not string)" cmp_rc 1 10 "<" 9
check "cmp_num: empty left operand is an error" cmp_rc 2 "" "<" 5
check "cmp_num: empty right operand is an error" cmp_rc 2 5 "<=" ""
check "cmp_num: both empty with == is an error" cmp_rc 2 "" "==" ""
check "cmp_num: non-numeric operand is an error" cmp_rc 2 abc ">" 0
check "cmp_num: '12abc' is not a number" cmp_rc 2 12abc "==" 12
check "cmp_num: unknown operator is an error" cmp_rc 2 1 "=<" 2
# The old cmp_num (the mutant): an empty operand made the comparison pass.
old_cmp_num() {
	awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
		if (op == "<") r = a < b; else if (op == "<=") r = a <= b
		else if (op == ">") r = a > b; else if (op == ">=") r = a >= b
		else if (op == "==") r = a == b; else r = 0
		exit !r }'
}
check "mutant (old cmp_num) passes '' <= 3, which the new one refuses" \
	bash -c "$(declare -f old_cmp_num); old_cmp_num '' '<=' 3"

# ---- require_disruptive ----------------------------------------------------------
# in_lib 'VAR=VALUE ...' 'commands': run commands in a fresh shell with lib.sh.
in_lib() { env $1 bash -c ". '$TESTS_DIR/lib.sh'; $2"; }
disr() {
	local want=$1 val=$2 rc=0 out

	out=$(in_lib "TAILFIX_DISRUPTIVE=$val" 'require_disruptive "a reason"; echo went-on') || rc=$?
	case $want in
	skip) [ "$rc" -eq 4 ] && ! grep -q went-on <<<"$out" &&
		grep -q '^# SKIP disruptive (a reason): set TAILFIX_DISRUPTIVE=1 on a dedicated host$' <<<"$out" ;;
	run) [ "$rc" -eq 0 ] && grep -q went-on <<<"$out" ;;
	esac || { log "TAILFIX_DISRUPTIVE='$val': exit $rc: $out"; return 1; }
}
check "require_disruptive skips when TAILFIX_DISRUPTIVE is unset/empty" disr skip ""
check "require_disruptive skips with TAILFIX_DISRUPTIVE=0" disr skip 0
check "require_disruptive skips with TAILFIX_DISRUPTIVE=yes (only 1 counts)" disr skip yes
check "require_disruptive goes on with TAILFIX_DISRUPTIVE=1" disr run 1

# ---- require_tsq_probe / module_restore_on_exit on a fake host ---------------------
# A fake sysfs where tsq_probe is loaded with fault_inject=Y fault_ppm=300
# recover=N, fake modprobe/modinfo that only log.
mkdir -p "$tmp/bin" "$tmp/sys/module/tsq_probe/parameters" "$tmp/sys/module/other"
echo live >"$tmp/sys/module/tsq_probe/initstate"
echo Y >"$tmp/sys/module/tsq_probe/parameters/fault_inject"
echo 300 >"$tmp/sys/module/tsq_probe/parameters/fault_ppm"
echo N >"$tmp/sys/module/tsq_probe/parameters/recover"
# (FAKE_RM=1: "modprobe -r MOD" also removes the fake /sys/module/MOD,
# and "modprobe MOD" makes it)
mkdir -p "$tmp/proc/sys/net/ipv4"
cat >"$tmp/bin/modprobe" <<'FAKE'
#!/bin/sh
echo "modprobe $*" >>"$FAKE_LOG"
[ "$FAKE_RM$1" = 1-r ] && rm -rf "$TAILFIX_SYSFS/module/$2"
[ "$FAKE_RM" = 1 ] && [ "$1" != -r ] && mkdir -p "$TAILFIX_SYSFS/module/$1"
exit 0
FAKE
printf '#!/bin/sh\necho "modinfo $*" >>"$FAKE_LOG"\necho /lib/modules/x/updates/dkms/tsq_probe.ko\n' >"$tmp/bin/modinfo"
chmod +x "$tmp/bin/"*
# fake_host NAME 'VAR=VALUE ...' 'commands': in lib.sh on the fake host;
# output in $tmp/NAME.out, exit status in $tmp/NAME.rc, modprobe calls in $tmp/NAME.log.
fake_host() {
	local rc=0

	: >"$tmp/$1.log"
	echo "reno cubic dctcp_fixed" >"$tmp/proc/sys/net/ipv4/tcp_allowed_congestion_control"
	in_lib "PATH=$tmp/bin:$PATH FAKE_LOG=$tmp/$1.log TAILFIX_SYSFS=$tmp/sys TAILFIX_PROCFS=$tmp/proc $2" "$3" \
		>"$tmp/$1.out" 2>&1 || rc=$?
	echo "$rc" >"$tmp/$1.rc"
}
fake_host nd "TAILFIX_DISRUPTIVE=" 'require_tsq_probe; echo went-on'
loaded_left_alone() {
	[ "$(cat "$tmp/nd.rc")" = 4 ] && grep -q 'SKIP disruptive (tsq_probe is loaded' "$tmp/nd.out" &&
		! grep -q '^modprobe' "$tmp/nd.log"
}
check "tsq_probe loaded, not disruptive: require_tsq_probe skips, no modprobe" loaded_left_alone
fake_host d "TAILFIX_DISRUPTIVE=1" 'require_tsq_probe; echo "modprobe (the test) tsq_probe fault_inject=1" >>"$FAKE_LOG"'
restored() {
	local want
	want=$(printf '%s\n' "modprobe -r tsq_probe" "modprobe (the test) tsq_probe fault_inject=1" \
		"modprobe -r tsq_probe" "modprobe tsq_probe fault_inject=Y fault_ppm=300 recover=N")
	[ "$(cat "$tmp/d.rc")" = 0 ] && [ "$(grep '^modprobe' "$tmp/d.log")" = "$want" ] ||
		{ log "exit $(cat "$tmp/d.rc"), calls: $(tr '\n' ';' <"$tmp/d.log")"; return 1; }
}
check "tsq_probe loaded, disruptive: unloaded, then reloaded with its parameters on exit" restored
fake_host notloaded "TAILFIX_DISRUPTIVE=1" 'module_restore_on_exit other'
check "module_restore_on_exit: a module that was not loaded is not loaded on exit" \
	test ! -s "$tmp/notloaded.log"
fake_host ret "FAKE_RM=1" 'module_return_on_exit loadedbytest; mkdir -p "$TAILFIX_SYSFS/module/loadedbytest"'
check "module_return_on_exit: a module the test loaded is unloaded on exit" \
	eval 'grep -qx "modprobe -r loadedbytest" "$tmp/ret.log" && [ ! -e "$tmp/sys/module/loadedbytest" ]'

# A module loaded before the test is the operator's, with the parameters
# the operator chose: used as it is, or the test skips; it is unloaded or
# reloaded only in a disruptive run.
# calls NAME RC [CALL...]: fake_host NAME exited RC and its modprobe calls
# were exactly the CALLs (none without one).
calls() {
	local name=$1 rc=$2 got want=

	shift 2
	[ $# -eq 0 ] || want=$(printf '%s\n' "$@")
	got=$(grep '^modprobe' "$tmp/$name.log")
	[ "$(cat "$tmp/$name.rc")" = "$rc" ] && [ "$got" = "$want" ] || {
		log "$name: exit $(cat "$tmp/$name.rc"), calls: $(tr '\n' ';' <"$tmp/$name.log")"
		return 1
	}
}
# used_as_is NAME: NAME went on without a modprobe.
used_as_is() { calls "$1" 0 && grep -qx went-on "$tmp/$1.out"; }
for d in "" 1; do
	fake_host "use$d" "TAILFIX_DISRUPTIVE=$d" 'require_module tsq_probe; echo went-on'
	check "require_module (TAILFIX_DISRUPTIVE='$d'): a module loaded before is used as it is, no modprobe" \
		used_as_is "use$d"
done
check "require_module: says it uses the loaded module as it is" \
	grep -q '^# tsq_probe was loaded before the test: used as it is, left loaded$' "$tmp/use.out"
fake_host retnd "TAILFIX_DISRUPTIVE=" 'module_return_on_exit tsq_probe; echo went-on'
reason="tsq_probe is loaded here with the operator's parameters: not reloading it"
check "module_return_on_exit, loaded before, not disruptive: skips with the reason, no modprobe" \
	eval 'calls retnd 4 && ! grep -q went-on "$tmp/retnd.out" &&
		grep -qF "# SKIP disruptive ($reason)" "$tmp/retnd.out"'
fake_host own "FAKE_RM=1" 'require_module mine && [ -e "$TAILFIX_SYSFS/module/mine" ] && echo went-on'
check "require_module: a module the test loaded itself is unloaded on exit" \
	eval 'calls own 0 "modprobe mine" "modprobe -r mine" && grep -qx went-on "$tmp/own.out" &&
		[ ! -e "$tmp/sys/module/mine" ]'
fake_host own2 "FAKE_RM=1" 'require_module mine2; module_return_on_exit mine2; require_module mine2'
check "module_return_on_exit after require_module: the test's own module, no gate, unloaded once" \
	calls own2 0 "modprobe mine2" "modprobe -r mine2"
# The disruptive reload puts back the allowed congestion controls, from
# which the kernel drops those of the unloaded module.
fake_host cc "TAILFIX_DISRUPTIVE=1" 'module_return_on_exit tsq_probe
	echo "reno cubic" >"$TAILFIX_PROCFS/sys/net/ipv4/tcp_allowed_congestion_control"'
check "module_return_on_exit, disruptive: reloaded, tcp_allowed_congestion_control as it was" \
	eval 'calls cc 0 "modprobe -r tsq_probe" "modprobe tsq_probe fault_inject=Y fault_ppm=300 recover=N" &&
		[ "$(cat "$tmp/proc/sys/net/ipv4/tcp_allowed_congestion_control")" = "reno cubic dctcp_fixed" ]'
# The mutant: require_module as it was, reloading a loaded module on exit.
fake_host oldrm "TAILFIX_DISRUPTIVE=" 'require_module() {
		local p a=
		for p in "$TAILFIX_SYSFS/module/$1/parameters"/*; do a+=" ${p##*/}=$(cat "$p")"; done
		on_exit "modprobe -r $1; modprobe $1$a"
		modprobe "$1"
	}
	require_module tsq_probe; echo went-on'
check "mutant (the old require_module, a reload on exit) fails the use-as-it-is check" \
	eval '! used_as_is oldrm >/dev/null'

# ---- the gates ---------------------------------------------------------------------
# gate_order FILE: nothing before FILE's top-level require_disruptive loads,
# unloads or reloads a module, so that the skip at that gate leaves the
# host as it was; prints the lines that do.
gate_order() {
	awk '/^require_disruptive / { gate = 1; exit }
	/^[ \t]*(require_module|module_return_on_exit|module_restore_on_exit|module_load_own|mutants_setup|modprobe -r|rmmod)( |$)/ {
		bad = bad FILENAME ":" FNR ": " $0 "\n" }
	END { if (gate && bad != "") { printf "%s", bad; exit 1 } }' "$1"
}
gates_first() {
	local f rc=0

	for f in "$TESTS_DIR"/*.sh "$TESTS_DIR"/mutants/*.sh; do
		[ "${f##*/}" = lib.sh ] && continue
		gate_order "$f" | sed 's/^/# before the gate: /'
		[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
	done
	return $rc
}
check "every test's require_disruptive comes before its module helpers" gates_first
printf '%s\n' '. lib.sh' 'require_module tcp_dctcp_fixed' 'require_disruptive "x"' >"$tmp/late-gate.sh"
check "mutant (the gate after require_module, as dctcp_fixed_ece_cwnd.sh had it) is caught" \
	eval '! gate_order "$tmp/late-gate.sh" >/dev/null'

# mutant_gated FILE: the first command of FILE, after cd, lib.sh and
# require_root, is require_disruptive with its reason.
mutant_gated() {
	awk '/^[ \t]*(#|$)/ { next }
	/^cd "\$\(dirname "\$0"\)\/\.\." \|\| exit 1$/ || /^\. .*lib\.sh"?$/ || /^require_root$/ { next }
	{ ok = $0 ~ /^require_disruptive "[^"]+"$/; first = $0; exit }
	END { if (!ok) print "# " FILENAME ": first command is not require_disruptive: " first; exit !ok }' "$1"
}
# mutant_skips FILE: FILE is gated (read, not run: a mutant that lost its
# gate never runs here), and run without TAILFIX_DISRUPTIVE it skips at
# once, with the reason.
mutant_skips() {
	local out rc=0

	mutant_gated "$1" || return 1
	out=$(env -u TAILFIX_DISRUPTIVE timeout 60 "$1" 2>&1) || rc=$?
	[ "$rc" -eq 4 ] && grep -qE '^# SKIP (disruptive \(.+\): set TAILFIX_DISRUPTIVE=1|needs root)' <<<"$out" ||
		{ log "${1##*/}: exit $rc: $(tail -2 <<<"$out" | tr '\n' ' ')"; return 1; }
}
for f in "$TESTS_DIR"/mutants/*.sh; do
	check "mutants/${f##*/}: skips without TAILFIX_DISRUPTIVE=1, with the reason" mutant_skips "$f"
done
printf '%s\n' '#!/bin/bash' 'cd "$(dirname "$0")/.." || exit 1' '. ./lib.sh' 'umount /sys/kernel/debug' \
	'require_disruptive "x"' >"$tmp/late-mutant.sh"
check "mutant (a fake that acts before its gate, as load_no_debugfs.sh did) is caught" \
	eval '! mutant_gated "$tmp/late-mutant.sh" >/dev/null'

# ---- doc_keys / stats_has_keys -------------------------------------------------------
mapfile -t keys < <(doc_keys "$TAILFIX_ROOT/tsq_probe/README.md")
log "tsq_probe README keys: ${keys[*]}"
has_all() { local k; for k in "${@:2}"; do printf '%s\n' "${keys[@]}" | grep -qx "$k" || return 1; done; }
check "doc_keys: finds the keys of the README's counter table (autocork, recover)" has_all x autocork recover fault_ppm
check "doc_keys: finds the five the old list missed" \
	has_all x check_overflow txc_evicted cork_evicted cork_hold_max_ns txc_max_ns
printf '%s 0\n' "${keys[@]}" >"$tmp/stats"
check "stats_has_keys: a stats file with every key passes" stats_has_keys "$tmp/stats" "${keys[@]}"
grep -v '^txc_evicted ' "$tmp/stats" >"$tmp/stats.short"
check "stats_has_keys: a stats file missing one key fails" bash -c \
	"$(declare -f stats_has_keys log); ! stats_has_keys '$tmp/stats.short' ${keys[*]}"
printf '# x\n\n## Counters (`x`)\n\n| key | meaning |\n|---|---|\n| `autocork` | a |\n| `new_counter` | b |\n\n## CLI\n| `not_a_key` | c |\n' >"$tmp/README.md"
check "doc_keys: a key added to the README is required at once" bash -c \
	"$(declare -f doc_keys stats_has_keys log); [ \"\$(doc_keys '$tmp/README.md' | tr '\n' ' ')\" = 'autocork new_counter ' ] &&
	 ! stats_has_keys '$tmp/stats' \$(doc_keys '$tmp/README.md')"
check "stats_has_keys: no key at all is a failure" bash -c "$(declare -f stats_has_keys log); ! stats_has_keys '$tmp/stats'"

# ---- kprobes_added / kprobes_same ------------------------------------------------------
PROBED="tcp_push __dev_queue_xmit tcp_wfree"
printf '%s\n' 'ffffffff8a1b2c30  k  tcp_v4_connect+0x0    [FTRACE]' \
	'ffffffff8a1b2d40  k  __tcp_push_pending_frames+0x0    [FTRACE]' >"$tmp/kp.before"
{ cat "$tmp/kp.before"
  printf '%s\n' 'ffffffff8a3d0000  r  tcp_push+0x0    [FTRACE]' \
	'ffffffff8a200000  k  __dev_queue_xmit+0x0    [FTRACE]' \
	'ffffffff8a3e0000  k  tcp_wfree+0x0    [FTRACE]'; } >"$tmp/kp.loaded"
grep -v 'tcp_wfree' "$tmp/kp.loaded" >"$tmp/kp.partial"
{ cat "$tmp/kp.before"; echo 'ffffffff8a3e0000  k  tcp_wfree+0x0    [FTRACE]'; } >"$tmp/kp.leak"
check "kprobes_added: our three probes seen after load" kprobes_added "$tmp/kp.before" "$tmp/kp.loaded" $PROBED
check "kprobes_added: a probe that did not register fails" \
	bash -c "$(declare -f kprobes_added kprobe_count log); ! kprobes_added '$tmp/kp.before' '$tmp/kp.partial' $PROBED"
check "kprobes_added: __tcp_push_pending_frames is not tcp_push" \
	bash -c "$(declare -f kprobes_added kprobe_count log); ! kprobes_added '$tmp/kp.before' '$tmp/kp.before' tcp_push"
check "kprobes_same: back to the snapshot after unload" kprobes_same "$tmp/kp.before" "$tmp/kp.before" $PROBED
check "kprobes_same: a probe left behind fails" \
	bash -c "$(declare -f kprobes_same kprobe_count log); ! kprobes_same '$tmp/kp.before' '$tmp/kp.leak' $PROBED"
check "mutant (old check: grep tsq_probe in the list) passes on the leak" \
	bash -c "! grep -qs tsq_probe '$tmp/kp.leak'"

# ---- counters_monotonic ------------------------------------------------------------------
printf 'queue_0_tx_cnt 10\nconntrack_allowance_available 500\nena_srd_resource_utilization 7\n' >"$tmp/r0"
printf 'queue_0_tx_cnt 12\nconntrack_allowance_available 480\nena_srd_resource_utilization 3\n' >"$tmp/r1"
printf 'queue_0_tx_cnt 9\nconntrack_allowance_available 480\nena_srd_resource_utilization 3\n' >"$tmp/r2"
: >"$tmp/empty"
neg() { bash -c "$(declare -f counters_monotonic log); ENA_GAUGES='$ENA_GAUGES'; ! counters_monotonic $*"; }
check "counters_monotonic: counters up, gauges down: passes" counters_monotonic "$tmp/r0" "$tmp/r1"
check "counters_monotonic: a counter going down fails" neg "$tmp/r1" "$tmp/r2"
check "counters_monotonic: empty reads fail" neg "$tmp/empty" "$tmp/empty"
check "counters_monotonic: a counter that disappears fails" neg "$tmp/r1" "$tmp/empty"
check "counters_monotonic: a gauge not in ENA_GAUGES going down fails" \
	bash -c "$(declare -f counters_monotonic log); ENA_GAUGES=; ! counters_monotonic '$tmp/r0' '$tmp/r1'"

# ---- ena_hw.sh on a fake ENA host ------------------------------------------------------------
# eth0 driven by ena in a fake sysfs; fake ethtool (-i: our version; -S:
# counters that grow, a gauge that falls; FAKE_ETHTOOL=fail: -S fails,
# =down: a counter falls), fake iperf3 and modinfo.
mkdir -p "$tmp/hw/bus/pci/drivers/ena" "$tmp/hw/class/net/eth0/device" "$tmp/hwbin"
ln -s ../../../../bus/pci/drivers/ena "$tmp/hw/class/net/eth0/device/driver"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
cat >"$tmp/hwbin/ethtool" <<EOF
#!/bin/bash
echo "ethtool \$*" >>"\$FAKE_LOG"
[ "\$1" = -i ] && { echo "driver: ena"; echo "version: 2.8.1-tailfix$ver"; exit 0; }
[ "\${FAKE_ETHTOOL:-}" = fail ] && { echo "Cannot get stats" >&2; exit 94; }
n=\$((\$(cat "\$FAKE_LOG.n" 2>/dev/null || echo 0) + 1)); echo "\$n" >"\$FAKE_LOG.n"
echo "NIC statistics:"
echo "     queue_0_tx_cnt: \$((n * 10))"
echo "     queue_0_tx_doorbells: \$n"
echo "     queue_0_tx_drop_doorbells: 0"
echo "     conntrack_allowance_available: \$((100000 - n))"
[ "\${FAKE_ETHTOOL:-}" = down ] && echo "     queue_0_rx_cnt: \$((100000 - n))"
exit 0
EOF
printf '#!/bin/sh\necho "iperf3 $*" >>"$FAKE_LOG"\nsleep 1\n' >"$tmp/hwbin/iperf3"
printf '#!/bin/sh\necho /lib/modules/x/updates/dkms/ena.ko\n' >"$tmp/hwbin/modinfo"
chmod +x "$tmp/hwbin/"*
# hw NAME 'VAR=VALUE ...': ena_hw.sh on the fake host.
hw() {
	local rc=0

	rm -f "$tmp/$1.log" "$tmp/$1.log.n"
	env PATH="$tmp/hwbin:$PATH" FAKE_LOG="$tmp/$1.log" TAILFIX_SYSFS="$tmp/hw" ENA_HW_SECONDS=3 $2 \
		"$TESTS_DIR/ena_hw.sh" >"$tmp/$1.out" 2>&1 || rc=$?
	echo "$rc" >"$tmp/$1.rc"
	sed "s/^/# ena_hw $1: /" "$tmp/$1.out" | grep -v '^# ena_hw .*: ok ' | head -6
}
hw_rc() { [ "$(cat "$tmp/$1.rc")" = "$2" ]; }
hw nopeer "TAILFIX_ENA_PEER="
check "ena_hw.sh without TAILFIX_ENA_PEER: the traffic part skips, nothing sent" bash -c \
	"grep -q 'SKIP no peer named: set TAILFIX_ENA_PEER' '$tmp/nopeer.out' && ! grep -q iperf3 '$tmp/nopeer.log' && [ \$(cat '$tmp/nopeer.rc') = 0 ]"
hw good "TAILFIX_ENA_PEER=198.51.100.7"
check "ena_hw.sh on the fake: passes (counters up, a gauge down)" hw_rc good 0
check "ena_hw.sh sends traffic to the named peer only" grep -q '^iperf3 -c 198.51.100.7 ' "$tmp/good.log"
hw fail "TAILFIX_ENA_PEER=198.51.100.7 FAKE_ETHTOOL=fail"
check "ena_hw.sh: ethtool -S failing fails the test" \
	bash -c "[ \$(cat '$tmp/fail.rc') = 1 ] && grep -q 'FAIL ethtool -S eth0 failed' '$tmp/fail.out'"
hw down "TAILFIX_ENA_PEER=198.51.100.7 FAKE_ETHTOOL=down"
check "ena_hw.sh: a counter going down fails the test" \
	bash -c "[ \$(cat '$tmp/down.rc') = 1 ] && grep -q '^not ok [0-9]* every ethtool -S counter is monotonic' '$tmp/down.out'"

# Mutants: ena_hw.sh with its old ethtool pipeline (sed's status, not
# ethtool's) goes on when ethtool -S fails; its old monotonic check passes
# on empty reads.
mkdir -p "$tmp/hwmut"
cp "$TESTS_DIR/lib.sh" "$tmp/hwmut/"
cp "$TAILFIX_ROOT/dkms.conf" "$tmp/"
awk '/^\tethtool -S "\$ENA_DEV" >"\$TMP\/raw"/ {
	print "\tethtool -S \"$ENA_DEV\" | sed -n \x27s/^ *\\([^:]*\\): \\([0-9]*\\)$/\\1 \\2/p\x27 >\"$TMP/s.$n\" || fail \"ethtool -S failed\""
	getline; next } { print }' "$TESTS_DIR/ena_hw.sh" >"$tmp/hwmut/ena_hw.sh"
chmod +x "$tmp/hwmut/ena_hw.sh"
check "mutant ena_hw.sh built (old pipeline)" grep -q 'ethtool -S "$ENA_DEV" | sed' "$tmp/hwmut/ena_hw.sh"
TESTS_DIR=$tmp/hwmut hw mutfail "TAILFIX_ENA_PEER=198.51.100.7 FAKE_ETHTOOL=fail"
check "mutant (old pipeline) does not stop at the failing ethtool -S" \
	bash -c "! grep -q 'FAIL ethtool -S' '$tmp/mutfail.out'"
old_nonmono() {
	awk 'NR == FNR { prev[$1] = $2; next } ($1 in prev) && $2 < prev[$1] { bad = 1 } END { exit bad }' "$1" "$2"
}
check "mutant (old monotonic check) passes on empty reads" old_nonmono "$tmp/empty" "$tmp/empty"

# ---- host/dkms_conf.sh against fake prepare-source.sh ----------------------------------------
# dkms NAME SCRIPT: dkms_conf.sh with TAILFIX_PREPARE_SOURCE=SCRIPT; succeeds
# when its "says why" check failed.
says_why_fails() {
	env TAILFIX_PREPARE_SOURCE="$2" "$TESTS_DIR/host/dkms_conf.sh" >"$tmp/dk.$1" 2>&1
	grep -q '^not ok [0-9]* no ENA source: the probe says why' "$tmp/dk.$1"
}
fake="ena: no ENA source for 5.99.0-1-nosource-amd64: install linux-source-5.99 (apt-get install linux-source-5.99) or set ENA_SRC=<...>"
printf '#!/bin/sh\necho "%s" >&2\nexit 0\n' "$fake" >"$tmp/prep-exit0"
printf '#!/bin/sh\necho "%s" >&2\nexit 1\n' "$fake" >"$tmp/prep-good"
printf '#!/bin/sh\necho "ena: something else" >&2\nexit 1\n' >"$tmp/prep-other"
chmod +x "$tmp"/prep-*
check "dkms_conf.sh: a missing prepare-source.sh ('No such file') fails it" \
	says_why_fails missing "$tmp/no/prepare-source.sh"
check "dkms_conf.sh: the right message with exit 0 fails it" says_why_fails exit0 "$tmp/prep-exit0"
check "dkms_conf.sh: another message fails it" says_why_fails other "$tmp/prep-other"
says_why_passes() { ! says_why_fails "$@" && grep -q '^ok [0-9]* no ENA source: the probe says why' "$tmp/dk.$1"; }
check "dkms_conf.sh: the fake that says why (exit 1) passes it" says_why_passes good "$tmp/prep-good"
check "mutant (old says_why pattern) passes on the missing script" bash -c \
	"ENA_SRC=/nonexistent '$tmp/no/prepare-source.sh' --probe x 2>&1 | grep -qi 'ENA_SRC\\|source'"

# ---- check_xfail ----------------------------------------------------------------
xf() { bash -c ". '$TESTS_DIR/lib.sh'; check_xfail 'gap' 'known' $1; ksft_finish" 2>&1; }
check "check_xfail: a failing command is reported ok # XFAIL and does not fail the test" \
	eval '[ "$(xf false | head -1)" = "ok 1 gap # XFAIL known" ] && xf false >/dev/null'
check "check_xfail: a passing command is a plain ok" eval '[ "$(xf true | head -1)" = "ok 1 gap" ]'

# ---- sum_ints ----------------------------------------------------------------------
# Two flows' bytes_acked past 2^32 each: dctcp_fixed_safety.sh compares the
# sum with [ -gt ], which refuses "1.18e+10".
check "sum_ints: 6000000000 + 5800000000 = 11800000000" \
	test "$(printf '6000000000\n5800000000\n' | sum_ints)" = 11800000000
check "sum_ints: no input is 0" test "$(sum_ints </dev/null)" = 0
check "mutant (awk print s + 0) gives what [ -gt ] refuses" bash -c \
	"! [ \"\$(printf '6000000000\n5800000000\n' | mawk '{ s += \$1 } END { print s + 0 }')\" -gt 0 2>/dev/null"
# ---- dmesg_bad_lines -------------------------------------------------------------------
# A debug kernel's boot banner is not a report; its reports are.
cat >"$tmp/dmesg-debug-boot" <<'DMESG'
[    1.001157] kasan: KernelAddressSanitizer initialized
[    2.987516] rcu: 	RCU lockdep checking is enabled.
[    3.155566] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    3.157349] ... MAX_LOCKDEP_SUBCLASSES:  8
[    3.159177]  memory used by lock dependency info: 6429 kB
[    9.100000] kfence: initialized - using 2097152 bytes for 255 objects
DMESG
check "dmesg_bad_lines: a debug kernel's boot banner is clean" \
	test -z "$(dmesg_bad_lines <"$tmp/dmesg-debug-boot")"
for line in 'WARNING: possible circular locking dependency detected' \
	'INFO: lockdep is turned off.' 'ODEBUG: free active (active state 0) object: 0000 object type: timer_list' \
	'BUG: KASAN: slab-use-after-free in tcp_wfree+0x1c/0x80' \
	'BUG: sleeping function called from invalid context at net/core/sock.c:3540'; do
	check "dmesg_bad_lines flags: ${line%%:*}: ${line#*: }" \
		test -n "$(echo "[   12.000000] $line" | dmesg_bad_lines)"
done
# ---- kmemleak_ours -----------------------------------------------------------------
cat >"$tmp/kmemleak" <<'KML'
unreferenced object 0xffff888003e2c400 (size 1024):
  comm "swapper/0", pid 1, jiffies 4294892296
  hex dump (first 32 bytes):
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................
  backtrace (crc 5a1e7c2b):
    [<ffffffff8157d1a1>] __kmalloc_noprof+0x2c1/0x3b0
    [<ffffffff83e0a5b2>] acpi_os_allocate_zeroed+0x22/0x30
unreferenced object 0xffff888004a1c000 (size 64):
  comm "modprobe", pid 412, jiffies 4294901000
  backtrace (crc 1b2c3d4e):
    [<ffffffff8157d1a1>] __kmalloc_cache_noprof+0x2c1/0x3b0
    [<ffffffffc0a01234>] 0xffffffffc0a01234
unreferenced object 0xffff888004a1d000 (size 128):
  comm "kworker/0:1", pid 40, jiffies 4294902000
  backtrace (crc 2b2c3d4e):
    [<ffffffff8157d1a1>] __kmalloc_cache_noprof+0x2c1/0x3b0
    [<ffffffffc0b05678>] dctcp_fixed_init+0x28/0x90 [tcp_dctcp_fixed]
KML
ours=$(kmemleak_ours <"$tmp/kmemleak")
check "kmemleak_ours: the boot-time in-tree leak is not ours" test -z "$(grep 0xffff888003e2c400 <<<"$ours")"
check "kmemleak_ours: an unloaded module's leak and a named module's leak are" \
	test "$(grep -c '^unreferenced object' <<<"$ours")" = 2
check "kmemleak_ours: the whole record is kept (its backtrace)" \
	grep -q 'dctcp_fixed_init+0x28/0x90 \[tcp_dctcp_fixed\]' <<<"$ours"
# ---- taint_expected -----------------------------------------------------------------
# No program (the guest's demo and bench runs): nothing, and stdin -- the
# console in a guest, where the old sed waited for ever -- is not read.
tp=$(mktemp)
on_exit "rm -f $tp"
printf '#!/bin/bash\n# taint-expected: N (fault injection)\n' >"$tp"
check "taint_expected: a program's declared letters" \
	test "$(TAILFIX_TSQ_TAINT="N 18" taint_expected "$tp")" = N
check "taint_expected: N stands for TAINT_USER where the kernel has no TAINT_TEST" \
	test "$(TAILFIX_TSQ_TAINT="U 6" taint_expected "$tp")" = U
check "taint_expected: no program reads nothing from stdin" \
	test -z "$(printf '# taint-expected: W from stdin\n' | taint_expected)"
check "dkms_path: updates/dkms (Debian) and extra (Red Hat family) are DKMS's" \
	eval 'dkms_path /lib/modules/6.1.0-57-cloud-amd64/updates/dkms/ena.ko && dkms_path /lib/modules/5.14.0-427.el9.x86_64/extra/ena.ko.xz'
check "dkms_path: the in-tree kernel/ directory is not" \
	fails dkms_path /lib/modules/6.1.0-57-cloud-amd64/kernel/drivers/net/ethernet/amazon/ena/ena.ko
ksft_finish
