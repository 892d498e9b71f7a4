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

# check_skip "description" "reason": a subtest that could not run here.
check_skip() {
	_ksft_sub=$((_ksft_sub + 1))
	printf 'ok %d %s # SKIP %s\n' "$_ksft_sub" "$1" "$2"
}

# Exit with the verdict of the check() calls so far.
ksft_finish() {
	[ "$_ksft_sub" -gt 0 ] || fail "no subtest ran"
	[ "$_ksft_failed" -eq 0 ] && exit "$KSFT_PASS"
	exit "$KSFT_FAIL"
}

# Compare two numbers with awk (floating point allowed): cmp_num A op B
cmp_num() {
	awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
		if (op == "<") r = a < b; else if (op == "<=") r = a <= b
		else if (op == ">") r = a > b; else if (op == ">=") r = a >= b
		else if (op == "==") r = a == b; else r = 0
		exit !r }'
}

on_exit() { _cleanup_cmds+=("$*"); }
_run_cleanup() {
	local i
	for ((i = ${#_cleanup_cmds[@]} - 1; i >= 0; i--)); do
		eval "${_cleanup_cmds[i]}" >/dev/null 2>&1 || true
	done
}
trap _run_cleanup EXIT

require_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
require_disruptive() { [ "${TAILFIX_DISRUPTIVE:-0}" = 1 ] || skip "disruptive ($*): set TAILFIX_DISRUPTIVE=1 on a dedicated host"; }

require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "command '$c' not installed"
	done
}

# require_module mod: load it (kernel module or one of ours) or skip.
require_module() {
	modprobe "$1" 2>/dev/null || skip "module $1 not available for $(uname -r)"
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

DMESG_BAD='WARNING:|BUG:|Oops|kernel BUG|general protection|lockdep|possible recursive locking|circular locking|INFO: rcu_|rcu_sched self-detected|KASAN|UBSAN|refcount_t:|list_add corruption|list_del corruption|soft lockup|hung_task|Call Trace:'

dmesg_mark() { _dmesg_lines=$(dmesg | wc -l); }

# dmesg_clean: succeeds when no bad line was logged since dmesg_mark.
dmesg_clean() {
	local bad
	bad=$(dmesg | tail -n +"$((${_dmesg_lines:-0} + 1))" | grep -E "$DMESG_BAD")
	[ -z "$bad" ] && return 0
	printf '# dmesg: %s\n' "$bad" | head -20
	return 1
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
	wait_for 20 ip netns exec "$NS_CLI" ping -c1 -W1 "$SRV_ADDR" >/dev/null ||
		fail "no connectivity over NICs $1/$2"
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
	qdisc_hold "$NS_SRV" "$SRV_DEV"
	log "topology: $TOPO_KIND ($SRV_DEV)"
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
# run measured the emulator: say so and measure once more.
rr_measure() {
	local out=$1 lag
	rr_run "$@" || return 1
	lag=$(kv "$out" send_lag_max_us)
	[ "${lag:-0}" -lt 30000 ] && return 0
	log "client fell ${lag} us behind its schedule (emulator stall): measuring again"
	rr_run "$@"
}

# kv FILE KEY: value of KEY in a key=value (or "key value") file.
kv() { awk -v k="$2" -F '[= ]' '$1 == k { print $2; exit }' "$1"; }

# require_tsq_probe: root, the module installed, and not loaded yet.
require_tsq_probe() {
	require_root
	modinfo tsq_probe >/dev/null 2>&1 || skip "tsq_probe is not installed for $(uname -r)"
	modprobe -r tsq_probe 2>/dev/null
}

# tsq_stat KEY: a counter of /sys/kernel/tsq_probe/stats.
tsq_stat() { kv /sys/kernel/tsq_probe/stats "$1"; }
