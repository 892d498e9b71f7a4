#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dctcp_fixed safety and parameters:
#   - every parameter refuses out-of-range values with EINVAL, keeps its value
#     and logs one line naming parameter, range and value (looked for in the
#     kernel log written after a mark, never the whole log); values are read
#     in base 10 ("010" is ten); a bad value at load time makes modprobe
#     fail, and says why;
#   - statistics in /sys/kernel/tcp_dctcp_fixed/stats: root only (0400),
#     every documented key, read-only; the old stat_* parameters are gone;
#   - the module's version is dkms.conf's PACKAGE_VERSION;
#   - usable per socket (TCP_CONGESTION) and as a namespace's default
#     (net.ipv4.tcp_congestion_control, after adding it to the global
#     tcp_allowed_congestion_control); ss -ti shows its dctcp fields;
#   - a peer without ECN gets the Reno fallback, counted;
#   - rmmod is refused while a socket or a namespace default uses it and
#     allowed after;
#   - loading and unloading while other (cubic) flows run is clean, and
#     those flows move bytes during every cycle: DCTCP_CYCLES (default 100)
#     cycles of load, a dctcp_fixed connection, unload;
#   - dmesg clean.
#
# Disruptive: it unloads the module, changes its parameters and the global
# net.ipv4.tcp_allowed_congestion_control.

# Disruptive: runs only with TAILFIX_DISRUPTIVE=1 (else it skips and says why);
# a tcp_dctcp_fixed loaded before is reloaded with its parameters, one that
# was not is unloaded, and tcp_allowed_congestion_control is restored.
. "$(dirname "$0")/lib.sh"

require_root
require_disruptive "changes tcp_dctcp_fixed parameters and the global allowed congestion controls, unloads the module"
require_cmd ip ss tc ethtool python3 modprobe rmmod
require_tcp_diag
# A tcp_dctcp_fixed the host had loaded comes back with its parameters; one
# it had not is unloaded.
module_return_on_exit tcp_dctcp_fixed
modprobe tcp_dctcp_fixed 2>/dev/null || skip "tcp_dctcp_fixed not installed for $(uname -r)"
MOD=tcp_dctcp_fixed
CYCLES=${DCTCP_CYCLES:-100}
PARAMS=/sys/module/$MOD/parameters
STATS=/sys/kernel/$MOD/stats
dmesg_mark

# kernel log lines written since klog_mark (not the whole log)
klog_mark() { _klog=$(dmesg | wc -l); }
klog_since() { dmesg | tail -n +"$((_klog + 1))"; }

# ---- parameters ------------------------------------------------------------------

# bad_value PARAM VALUE RANGE: refused, unchanged, one dmesg line.
bad_value() {
	local p=$1 v=$2 range=$3 before after
	before=$(cat "$PARAMS/$p")
	klog_mark
	if echo "$v" >"$PARAMS/$p" 2>/dev/null; then
		log "$p accepted '$v'"
		return 1
	fi
	after=$(cat "$PARAMS/$p")
	[ "$before" = "$after" ] || { log "$p changed to $after"; return 1; }
	[ "$(klog_since | grep -c "$MOD: parameter $p must be an integer in $range, got '$v'")" -eq 1 ] &&
		[ "$(klog_since | grep -c "$MOD: ")" -eq 1 ] ||
		{ log "not exactly one kernel log line for $p=$v"; return 1; }
}

# good_value PARAM VALUE [READBACK]: accepted and read back.
good_value() {
	echo "$2" >"$PARAMS/$1" && [ "$(cat "$PARAMS/$1")" = "${3:-$2}" ]
}

for spec in shift_g:0..10:4 alpha_on_init:0..1024:1024 clamp_alpha_on_loss:0..1:0 min_cwnd_after_ce:1..2:2; do
	IFS=: read -r p range def <<<"$spec"
	lo=${range%..*} hi=${range#*..}
	check "param $p default is $def" test "$(cat "$PARAMS/$p")" = "$def"
	check "param $p accepts $lo and $hi" sh -c "echo $lo > $PARAMS/$p && echo $hi > $PARAMS/$p && [ \$(cat $PARAMS/$p) = $hi ]"
	good_value "$p" "$def"
	check "param $p refuses $((hi + 1))" bad_value "$p" $((hi + 1)) "$range"
	check "param $p refuses 'abc'" bad_value "$p" abc "$range"
	[ "$lo" -gt 0 ] && check "param $p refuses $((lo - 1))" bad_value "$p" $((lo - 1)) "$range"
	check "param $p refuses -1" bad_value "$p" -1 "$range"
	good_value "$p" "$def"
done
# base 10: a leading zero is not octal, 0x is not hex
check "shift_g '010' is 10, not 8" good_value shift_g 010 10
check "shift_g '08' is 8 (octal would refuse it)" good_value shift_g 08 8
check "alpha_on_init '0x10' refused" bad_value alpha_on_init 0x10 0..1024
check "min_cwnd_after_ce 10 (the old maximum) refused" bad_value min_cwnd_after_ce 10 1..2
good_value shift_g 4
good_value alpha_on_init 1024

# statistics
STAT_KEYS="ce_change_acks prior_run_acks ecn_reductions other_cwr loss_reductions floor_applied ecn_fallbacks"
check "stats file is root-only (0400)" test "$(stat -c '%a %U' "$STATS" 2>/dev/null)" = "400 root"
check "stats file has every documented key, each a number" sh -c \
	"[ \"\$(awk '{ print \$1 }' $STATS | tr '\n' ' ')\" = '$STAT_KEYS ' ] &&
	 awk 'NF != 2 || \$2 !~ /^[0-9]+\$/ { exit 1 }' $STATS"
check "stats file is not writable" sh -c "! echo 0 > $STATS 2>/dev/null"
if command -v setpriv >/dev/null; then
	check "stats file refused to a non-root user" sh -c \
		"! setpriv --reuid=65534 --regid=65534 --clear-groups cat $STATS >/dev/null 2>&1"
else
	check_skip "stats file refused to a non-root user" "setpriv not installed"
fi
check "old stat_* parameters are gone" sh -c "! ls $PARAMS | grep -q '^stat_'"

# version: the one dkms.conf gives the package
pkgver=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}[[:space:]]*$/\1/p' "$TAILFIX_ROOT/dkms.conf" 2>/dev/null)
modver=$(cat /sys/module/$MOD/version 2>/dev/null)
log "module version '$modver', dkms.conf PACKAGE_VERSION '$pkgver'"
check "module version is dkms.conf's PACKAGE_VERSION" test -n "$pkgver" -a "$modver" = "$pkgver"

# ---- in use -------------------------------------------------------------------------

topo_pair
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_ecn=1

# A server and a client, congestion control per socket (or the namespace
# default when CC is ""); the connection stays open until $tmp/release-PORT
# exists.  Progress is reported through files, waited for with deadlines.
tmp=$(mktemp -d)
on_exit rm -rf "$tmp"
CONN='
import os, socket, sys, time
cc, role, port = sys.argv[1].encode(), sys.argv[2], int(sys.argv[3])
tmp = sys.argv[4]
def note(name, text):
    with open(os.path.join(tmp, name + ".tmp"), "w") as f:
        f.write(text + "\n")
    os.rename(os.path.join(tmp, name + ".tmp"), os.path.join(tmp, name))
if role == "server":
    l = socket.socket()
    if cc: l.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("0.0.0.0", port)); l.listen(4)
    note("ready-%d" % port, "ready")
    c, _ = l.accept()
    while c.recv(65536): pass
else:
    c = socket.socket()
    if cc: c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc)
    c.connect((sys.argv[5], port))
    c.sendall(b"x" * int(os.environ.get("CONN_BYTES", "1000000")))
    note("cc-%d" % port, c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 32).rstrip(b"\0").decode())
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(tmp, "release-%d" % port)) and time.monotonic() < deadline:
        time.sleep(0.05)
'
# conn_open SRV_CC CLI_CC PORT: start both ends, wait until connected; sets got
conn_open() {
	ip netns exec "$NS_SRV" python3 -c "$CONN" "$1" server "$3" "$tmp" &
	srv_pid=$!
	wait_for 30 test -e "$tmp/ready-$3" || fail "server on port $3 did not start"
	ip netns exec "$NS_CLI" python3 -c "$CONN" "$2" client "$3" "$tmp" "$SRV_ADDR" &
	cli_pid=$!
	wait_for 30 test -e "$tmp/cc-$3" || fail "client on port $3 did not connect"
	got=$(cat "$tmp/cc-$3")
}
conn_close() {
	touch "$tmp/release-$1"
	wait "$cli_pid" "$srv_pid"
}
unload() { wait_for 30 sh -c "rmmod $MOD 2>/dev/null"; }
in_use() { ! rmmod "$MOD" 2>/dev/null; }

conn_open dctcp_fixed dctcp_fixed 5401
check "TCP_CONGESTION dctcp_fixed per socket" test "$got" = dctcp_fixed
ssout=$(ip netns exec "$NS_CLI" ss -tni dst "$SRV_ADDR")
printf '%s\n' "$ssout" | sed 's/^/#   /'
check "ss -ti shows dctcp_fixed and its dctcp fields" sh -c \
	"printf '%s' \"\$0\" | grep -q dctcp_fixed && printf '%s' \"\$0\" | grep -q 'dctcp:(ce_state'" "$ssout"
check "rmmod refused while a socket uses dctcp_fixed" in_use
conn_close 5401
check "rmmod allowed after the sockets closed" unload

# namespace default
modprobe "$MOD"
allowed=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
on_exit "sysctl -qw $(printf %q "net.ipv4.tcp_allowed_congestion_control=$allowed")"
case " $allowed " in
*" dctcp_fixed "*) ;;
*) sysctl -qw "net.ipv4.tcp_allowed_congestion_control=$allowed dctcp_fixed" ;;
esac
check "namespace default via net.ipv4.tcp_congestion_control" \
	ip netns exec "$NS_CLI" sysctl -qw net.ipv4.tcp_congestion_control=dctcp_fixed
conn_open dctcp_fixed "" 5402
check "a socket of that namespace gets dctcp_fixed by default" test "$got" = dctcp_fixed
conn_close 5402
check "rmmod refused while a namespace default uses it" in_use
ip netns exec "$NS_CLI" sysctl -qw net.ipv4.tcp_congestion_control=cubic
check "rmmod allowed after the default changed" unload
modprobe "$MOD"

# ECN fallback: a cubic server with ECN off does not negotiate ECN
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_ecn=0
f0=$(kv "$STATS" ecn_fallbacks)
conn_open cubic dctcp_fixed 5403
ssout=$(ip netns exec "$NS_CLI" ss -tni dst "$SRV_ADDR")
printf '%s\n' "$ssout" | sed 's/^/#   /'
check "peer without ECN: Reno fallback shown by ss" sh -c "printf '%s' \"\$0\" | grep -q 'dctcpf-reno'" "$ssout"
check "peer without ECN: fallback counted" test "$(kv "$STATS" ecn_fallbacks)" -gt "$f0"
conn_close 5403
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_ecn=1

# Local congestion: the sender's own egress qdisc refuses a segment, its
# enqueue returns a positive NET_XMIT code, and __tcp_transmit_skb() calls
# tcp_enter_cwr().  A tbf with a bucket and a queue of 3000 bytes (about
# two full-size frames of tokens, one frame of queue), TSO/GSO off (a GSO
# skb that tbf splits counts as sent if one part fits): of the initial
# window of 10 segments, sent back to back, the third or so finds the queue
# full, however slow the sender (a frame takes 12 ms at 1 Mbit/s).  A RED
# that drops by its average queue (used before) left other_cwr at 0 in two
# of three runs of the debug kernel.
# Nothing is CE-marked on this path, so no reduction may be counted as an
# ECE one.
offloads=$(ip netns exec "$NS_CLI" ethtool -k veth0 |
	awk '/^tcp-segmentation-offload:/ { t = $2 } /^generic-segmentation-offload:/ { g = $2 }
	     END { print "tso", t, "gso", g }')
ip netns exec "$NS_CLI" ethtool -K veth0 tso off gso off >/dev/null 2>&1 ||
	fail "ethtool -K veth0 tso off gso off"
ip netns exec "$NS_CLI" tc qdisc replace dev veth0 root tbf rate 1mbit burst 3000 limit 3000 ||
	fail "tbf on the sender"
# packets the sender's root qdisc dropped so far
sender_qdisc_drops() {
	ip netns exec "$NS_CLI" tc -s qdisc show dev veth0 |
		sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -1
}
e0=$(kv "$STATS" ecn_reductions) o0=$(kv "$STATS" other_cwr)
drops0=$(sender_qdisc_drops)
CONN_BYTES=100000 conn_open dctcp_fixed dctcp_fixed 5404
conn_close 5404
e1=$(kv "$STATS" ecn_reductions) o1=$(kv "$STATS" other_cwr)
drops1=$(sender_qdisc_drops)
ip netns exec "$NS_CLI" tc qdisc del dev veth0 root
# shellcheck disable=SC2086 # "tso on gso on", as it was
ip netns exec "$NS_CLI" ethtool -K veth0 $offloads >/dev/null 2>&1
log "local congestion: qdisc drops ${drops0:-?} -> ${drops1:-?}"
check "the sender's qdisc refused segments" test "${drops1:-0}" -gt "${drops0:-0}"
log "local congestion: other_cwr $o0 -> $o1, ecn_reductions $e0 -> $e1"
check "local congestion (egress qdisc drop) CWR counted as other_cwr" test "$o1" -gt "$o0"
check "local congestion is not counted as an ECE reduction" test "$e1" -eq "$e0"

# ---- unload while other flows run ---------------------------------------------------
# bytes the cubic flows to port 5410 have had ACKed so far
acked_5410() {
	ip netns exec "$NS_CLI" ss -Htin dst "$SRV_ADDR" dport = :5410 |
		sed -n 's/.*bytes_acked:\([0-9]*\).*/\1/p' | sum_ints
}
progressed() { [ "$(acked_5410)" -gt "$1" ]; }
if command -v iperf3 >/dev/null; then
	ip netns exec "$NS_SRV" iperf3 -s -D -p 5410 -1 >/dev/null 2>&1
	on_exit "ip netns pids $NS_SRV | xargs -r kill"
	wait_for 10 sh -c "ip netns exec $NS_SRV ss -Hltn sport = :5410 | grep -q ." ||
		fail "iperf3 server did not start"
	# long enough to outlast the cycles; stopped once they are done
	ip netns exec "$NS_CLI" iperf3 -c "$SRV_ADDR" -p 5410 -t 600 -P 2 -C cubic >"$tmp/iperf3.txt" 2>&1 &
	ipf=$!
	on_exit "kill $ipf"
	wait_for 10 sh -c "ip netns exec $NS_CLI ss -Htn dst $SRV_ADDR dport = :5410 | grep -q ESTAB"
	bad_load=0 stalled=0
	for ((i = 1; i <= CYCLES; i++)); do
		b0=$(acked_5410)
		rmmod "$MOD" 2>/dev/null
		modprobe "$MOD" || { bad_load=$((bad_load + 1)); log "cycle $i: modprobe failed"; }
		conn_open dctcp_fixed dctcp_fixed $((5420 + i % 50))
		[ "$got" = dctcp_fixed ] || { bad_load=$((bad_load + 1)); log "cycle $i: socket got '$got'"; }
		conn_close $((5420 + i % 50))
		unload || { bad_load=$((bad_load + 1)); log "cycle $i: unload failed"; }
		# the cubic flows moved bytes while this cycle ran
		if ! wait_for 10 progressed "$b0"; then
			stalled=$((stalled + 1))
			log "cycle $i: cubic flows stalled at bytes_acked $b0"
		fi
		[ $((i % 10)) -ne 0 ] || log "cycle $i: cubic flows bytes_acked $(acked_5410)"
	done
	alive=0
	kill -0 "$ipf" 2>/dev/null && alive=1
	kill "$ipf" 2>/dev/null
	wait "$ipf" 2>/dev/null
	tail -4 "$tmp/iperf3.txt" | sed 's/^/#   /'
	check "$CYCLES load/use/unload cycles clean ($bad_load bad)" test "$bad_load" -eq 0
	check "cubic flows ran through every cycle (bytes progress, client alive)" \
		test "$stalled" -eq 0 -a "$alive" -eq 1
else
	check_skip "load/unload while other flows run" "iperf3 not installed"
fi
modprobe "$MOD"

# ---- load-time validation -------------------------------------------------------------
unload
klog_mark
check "modprobe with shift_g=11 fails" sh -c "! modprobe $MOD shift_g=11 2>/dev/null"
check "and the kernel log says why, once, after the mark" test \
	"$(klog_since | grep -c "$MOD: parameter shift_g must be an integer in 0..10, got '11'")" -eq 1
klog_mark
check "modprobe with min_cwnd_after_ce=3 fails" sh -c "! modprobe $MOD min_cwnd_after_ce=3 2>/dev/null"
check "and the kernel log says why, once, after the mark" test \
	"$(klog_since | grep -c "$MOD: parameter min_cwnd_after_ce must be an integer in 1..2, got '3'")" -eq 1
check "modprobe with valid values loads" modprobe "$MOD" shift_g=05 min_cwnd_after_ce=1
check "load-time values applied (base 10)" sh -c "[ \$(cat $PARAMS/shift_g) = 5 ] && [ \$(cat $PARAMS/min_cwnd_after_ce) = 1 ]"
rmmod "$MOD"
modprobe "$MOD"

check "dmesg clean" dmesg_clean
ksft_finish
