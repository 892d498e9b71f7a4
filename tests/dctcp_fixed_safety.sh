#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dctcp_fixed safety and parameters (issue 3, item 4):
#   - every parameter refuses out-of-range values with EINVAL, keeps its value
#     and logs one line naming parameter, range and value; statistics are
#     read-only; a bad value at load time makes modprobe fail, and says why;
#   - usable per socket (TCP_CONGESTION) and as a namespace's default
#     (net.ipv4.tcp_congestion_control, after adding it to the global
#     tcp_allowed_congestion_control); ss -ti shows its dctcp fields;
#   - a peer without ECN gets the Reno fallback, counted;
#   - rmmod is refused while a socket or a namespace default uses it and
#     allowed after;
#   - loading and unloading while other (cubic) flows run is clean;
#   - dmesg clean.

. "$(dirname "$0")/lib.sh"

require_root
require_disruptive "changes tcp_dctcp_fixed parameters and the global allowed congestion controls, unloads the module"
require_cmd ip ss python3 modprobe rmmod
modprobe tcp_dctcp_fixed 2>/dev/null || skip "tcp_dctcp_fixed not installed for $(uname -r)"
MOD=tcp_dctcp_fixed
PARAMS=/sys/module/$MOD/parameters
dmesg_mark

# ---- parameters ------------------------------------------------------------------

# bad_value PARAM VALUE RANGE: refused, unchanged, one dmesg line.
bad_value() {
	local p=$1 v=$2 range=$3 before after n
	before=$(cat "$PARAMS/$p")
	n=$(dmesg | grep -c "$MOD: parameter $p ")
	if echo "$v" >"$PARAMS/$p" 2>/dev/null; then
		log "$p accepted '$v'"
		return 1
	fi
	after=$(cat "$PARAMS/$p")
	[ "$before" = "$after" ] || { log "$p changed to $after"; return 1; }
	[ "$(dmesg | grep -c "$MOD: parameter $p must be an integer in $range, got '$v'")" -ge 1 ] &&
		[ "$(dmesg | grep -c "$MOD: parameter $p ")" -eq $((n + 1)) ] ||
		{ log "no single dmesg line for $p=$v"; return 1; }
}

# good_value PARAM VALUE: accepted and read back.
good_value() {
	echo "$2" >"$PARAMS/$1" && [ "$(cat "$PARAMS/$1")" = "$2" ]
}

for spec in shift_g:0..10:4 alpha_on_init:0..1024:1024 clamp_alpha_on_loss:0..1:0 min_cwnd_after_ce:1..10:2; do
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
for s in ce_change_acks prior_run_acks ecn_reductions loss_reductions floor_applied ecn_fallbacks; do
	check "stat_$s readable and read-only" sh -c "cat $PARAMS/stat_$s | grep -qE '^[0-9]+\$' && ! echo 0 > $PARAMS/stat_$s 2>/dev/null"
done
check "module version is the package version" sh -c \
	"v=\$(cat /sys/module/$MOD/version); [ -n \"\$v\" ] && [ \"\$v\" != unknown ]"
log "module version $(cat /sys/module/$MOD/version 2>/dev/null)"

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
    c.sendall(b"x" * 200000)
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
on_exit sysctl -qw "net.ipv4.tcp_allowed_congestion_control=$allowed"
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
f0=$(cat "$PARAMS/stat_ecn_fallbacks")
conn_open cubic dctcp_fixed 5403
ssout=$(ip netns exec "$NS_CLI" ss -tni dst "$SRV_ADDR")
printf '%s\n' "$ssout" | sed 's/^/#   /'
check "peer without ECN: Reno fallback shown by ss" sh -c "printf '%s' \"\$0\" | grep -q 'dctcpf-reno'" "$ssout"
check "peer without ECN: fallback counted" test "$(cat "$PARAMS/stat_ecn_fallbacks")" -gt "$f0"
conn_close 5403
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_ecn=1

# ---- unload while other flows run ---------------------------------------------------
bad_load=0
if command -v iperf3 >/dev/null; then
	ip netns exec "$NS_SRV" iperf3 -s -D -p 5410 -1 >/dev/null 2>&1
	wait_for 10 sh -c "ip netns exec $NS_SRV ss -Hltn sport = :5410 | grep -q ." ||
		fail "iperf3 server did not start"
	ip netns exec "$NS_CLI" iperf3 -c "$SRV_ADDR" -p 5410 -t 8 -P 2 -C cubic >"$tmp/iperf3.txt" 2>&1 &
	ipf=$!
	wait_for 10 sh -c "ip netns exec $NS_CLI ss -Htn dst $SRV_ADDR | grep -q ESTAB"
	for i in 1 2 3 4 5; do
		rmmod "$MOD" 2>/dev/null
		modprobe "$MOD" || bad_load=1
		conn_open dctcp_fixed dctcp_fixed $((5420 + i))
		[ "$got" = dctcp_fixed ] || bad_load=1
		conn_close $((5420 + i))
		unload || bad_load=1
	done
	wait "$ipf"
	rc=$?
	tail -4 "$tmp/iperf3.txt" | sed 's/^/#   /'
	check "cubic flows survive 5 load/use/unload cycles" test "$rc" -eq 0 -a "$bad_load" -eq 0
else
	check_skip "load/unload while other flows run" "iperf3 not installed"
fi
modprobe "$MOD"

# ---- load-time validation -------------------------------------------------------------
unload
check "modprobe with shift_g=11 fails" sh -c "! modprobe $MOD shift_g=11 2>/dev/null"
check "and dmesg says why in one line" sh -c \
	"dmesg | grep -q \"$MOD: parameter shift_g must be an integer in 0..10, got '11'\""
check "modprobe with min_cwnd_after_ce=0 fails" sh -c "! modprobe $MOD min_cwnd_after_ce=0 2>/dev/null"
check "modprobe with valid values loads" modprobe "$MOD" shift_g=5 min_cwnd_after_ce=3
check "load-time values applied" sh -c "[ \$(cat $PARAMS/shift_g) = 5 ] && [ \$(cat $PARAMS/min_cwnd_after_ce) = 3 ]"
rmmod "$MOD"
modprobe "$MOD"

check "dmesg clean" dmesg_clean
ksft_finish
