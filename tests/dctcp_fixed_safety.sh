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

# A server and a client with dctcp_fixed per socket; the connection stays open
# until the client's stdin closes.
CONN='
import socket, sys
cc = sys.argv[1].encode()
if sys.argv[2] == "server":
    l = socket.socket(); l.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("0.0.0.0", int(sys.argv[3]))); l.listen(4)
    print("ready", flush=True)
    c, _ = l.accept()
    while c.recv(65536): pass
else:
    c = socket.socket()
    if cc: c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc)
    c.connect((sys.argv[3], int(sys.argv[4])))
    print(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 32).rstrip(b"\0").decode(), flush=True)
    c.sendall(b"x" * 200000)
    sys.stdin.read()
'
coproc SRV { ip netns exec "$NS_SRV" python3 -c "$CONN" dctcp_fixed server 5401; }
read -r -t 30 l <&"${SRV[0]}"
[ "$l" = ready ] || fail "server did not start"
coproc CLI { ip netns exec "$NS_CLI" python3 -c "$CONN" dctcp_fixed client "$SRV_ADDR" 5401; }
read -r -t 30 got <&"${CLI[0]}"
check "TCP_CONGESTION dctcp_fixed per socket" test "$got" = dctcp_fixed
ssout=$(ip netns exec "$NS_CLI" ss -tni dst "$SRV_ADDR")
printf '%s\n' "$ssout" | sed 's/^/#   /'
check "ss -ti shows dctcp_fixed and its dctcp fields" sh -c \
	"printf '%s' \"\$0\" | grep -q dctcp_fixed && printf '%s' \"\$0\" | grep -q 'dctcp:(ce_state'" "$ssout"
check "rmmod refused while a socket uses dctcp_fixed" sh -c "! rmmod $MOD 2>/dev/null"
eval "exec ${CLI[1]}>&-"
wait "$CLI_PID" "$SRV_PID" 2>/dev/null
check "rmmod allowed after the sockets closed" wait_for 30 rmmod "$MOD"

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
coproc SRV { ip netns exec "$NS_SRV" python3 -c "$CONN" dctcp_fixed server 5402; }
read -r -t 30 l <&"${SRV[0]}"
coproc CLI { ip netns exec "$NS_CLI" python3 -c "$CONN" "" client "$SRV_ADDR" 5402; }
read -r -t 30 got <&"${CLI[0]}"
check "a socket of that namespace gets dctcp_fixed by default" test "$got" = dctcp_fixed
eval "exec ${CLI[1]}>&-"
wait "$CLI_PID" "$SRV_PID" 2>/dev/null
check "rmmod refused while a namespace default uses it" sh -c "! rmmod $MOD 2>/dev/null"
ip netns exec "$NS_CLI" sysctl -qw net.ipv4.tcp_congestion_control=cubic
check "rmmod allowed after the default changed" wait_for 30 rmmod "$MOD"
modprobe "$MOD"

# ECN fallback: a cubic server with ECN off does not negotiate ECN
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_ecn=0
f0=$(cat "$PARAMS/stat_ecn_fallbacks")
coproc SRV { ip netns exec "$NS_SRV" python3 -c "$CONN" cubic server 5403; }
read -r -t 30 l <&"${SRV[0]}"
coproc CLI { ip netns exec "$NS_CLI" python3 -c "$CONN" dctcp_fixed client "$SRV_ADDR" 5403; }
read -r -t 30 got <&"${CLI[0]}"
ssout=$(ip netns exec "$NS_CLI" ss -tni dst "$SRV_ADDR")
printf '%s\n' "$ssout" | sed 's/^/#   /'
check "peer without ECN: Reno fallback shown by ss" sh -c "printf '%s' \"\$0\" | grep -q 'dctcp_fixed-reno'" "$ssout"
check "peer without ECN: fallback counted" test "$(cat "$PARAMS/stat_ecn_fallbacks")" -gt "$f0"
eval "exec ${CLI[1]}>&-"
wait "$CLI_PID" "$SRV_PID" 2>/dev/null
ip netns exec "$NS_SRV" sysctl -qw net.ipv4.tcp_ecn=1

# ---- unload while other flows run ---------------------------------------------------
bad_load=0
if command -v iperf3 >/dev/null; then
	ip netns exec "$NS_SRV" iperf3 -s -D -p 5410 -1 >/dev/null 2>&1
	wait_for 10 sh -c "ip netns exec $NS_SRV ss -Hltn sport = :5410 | grep -q ." ||
		fail "iperf3 server did not start"
	ip netns exec "$NS_CLI" iperf3 -c "$SRV_ADDR" -p 5410 -t 8 -P 2 -C cubic >"$(mktemp)" 2>&1 &
	ipf=$!
	wait_for 10 sh -c "ip netns exec $NS_CLI ss -Htn dst $SRV_ADDR | grep -q ESTAB"
	for i in 1 2 3 4 5; do
		rmmod "$MOD" 2>/dev/null
		modprobe "$MOD" || bad_load=1
		port=$((5420 + i))
		coproc SRV { ip netns exec "$NS_SRV" python3 -c "$CONN" dctcp_fixed server "$port"; }
		read -r -t 30 l <&"${SRV[0]}"
		coproc CLI { ip netns exec "$NS_CLI" python3 -c "$CONN" dctcp_fixed client "$SRV_ADDR" "$port"; }
		read -r -t 30 got <&"${CLI[0]}"
		[ "$got" = dctcp_fixed ] || bad_load=1
		eval "exec ${CLI[1]}>&-"
		wait "$CLI_PID" "$SRV_PID" 2>/dev/null
		wait_for 30 rmmod "$MOD" || bad_load=1
	done
	wait "$ipf"
	check "cubic flows survive 5 load/use/unload cycles" test $? -eq 0 -a "$bad_load" -eq 0
else
	check_skip "load/unload while other flows run" "iperf3 not installed"
fi
modprobe "$MOD"

# ---- load-time validation -------------------------------------------------------------
rmmod "$MOD" 2>/dev/null
wait_for 30 sh -c "! grep -q '^$MOD ' /proc/modules"
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
