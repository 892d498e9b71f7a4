#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `ena-tcp-tailfix check --json` on the running kernel says what this host
# is, read independently here: the kernel release and architecture, one
# finding per network interface with a driver (its driver named), the
# sysctls of the namespace it runs in, Secure Boot as /sys/firmware says,
# this package's DKMS state for the running kernel, the opt-in setting, and
# an exit status equal to the JSON's "exit" and to the worst finding.
# Shown able to fail: run again inside a fresh network namespace with
# tcp_autocorking and the congestion control set otherwise there (per
# namespace: nothing global changes), the findings must follow those
# values; a CLI that reported the initial namespace's or fixed values fails.
# Run a third time as nobody: the check needs no root (exit 0 or 1, the
# same findings).  Read-only apart from that namespace.
. "$(dirname "$0")/lib.sh"
require_cmd python3 ip
CLI=/usr/sbin/ena-tcp-tailfix
[ -x "$CLI" ] || CLI=$TAILFIX_ROOT/cli/ena-tcp-tailfix
[ -x "$CLI" ] || fail "no ena-tcp-tailfix (neither installed nor in $TAILFIX_ROOT/cli)"
TMP=$(mktemp -d)
chmod 755 "$TMP"
on_exit "rm -rf '$TMP'"
log "CLI: $CLI"

# run_cli OUT [prefix...]: the CLI's JSON in OUT, its exit status in OUT.rc.
run_cli() {
	local out=$1
	shift
	"$@" "$CLI" check --json >"$out" 2>"$out.err"
	echo $? >"$out.rc"
	log "$* $CLI check --json: exit $(cat "$out.rc"), $(grep -c '"id"' "$out") findings"
}
# field OUT ID KEY: KEY (status or evidence) of finding ID; "exit"/"kernel"/"arch" of the report when ID is -.
field() {
	python3 - "$@" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
if sys.argv[2] == '-':
    print(d[sys.argv[3]])
else:
    for f in d['findings']:
        if f['id'] == sys.argv[2]:
            print(f[sys.argv[3]])
EOF
}
valid_json() { python3 -m json.tool "$1" >/dev/null; }
# worst OUT: the exit status the findings call for (2 unknown, 1 action, 0).
worst() {
	python3 - "$1" <<'EOF'
import json, sys
st = [f['status'] for f in json.load(open(sys.argv[1]))['findings']]
print(2 if 'unknown' in st else 1 if 'action' in st else 0)
EOF
}
has() { grep -qF -- "$2" <<<"$1"; }
same() { [ "$1" = "$2" ] && [ "$2" = "${3-$2}" ]; }
ids() { python3 -c 'import json,sys; print(" ".join(sorted(f["id"] for f in json.load(open(sys.argv[1]))["findings"])))' "$1" 2>/dev/null; }

run_cli "$TMP/root"
check "the report is valid JSON" valid_json "$TMP/root"
rc=$(cat "$TMP/root.rc")
check "exit status $rc is the JSON's \"exit\" ($(field "$TMP/root" - exit)) and the worst finding's ($(worst "$TMP/root"))" \
	same "$rc" "$(field "$TMP/root" - exit)" "$(worst "$TMP/root")"
check "kernel: $(uname -r)" [ "$(field "$TMP/root" - kernel)" = "$(uname -r)" ]
check "arch: $(uname -m)" [ "$(field "$TMP/root" - arch)" = "$(uname -m)" ]
n=0
for d in /sys/class/net/*/device/driver; do
	[ -e "$d" ] || continue
	i=${d#/sys/class/net/}
	i=${i%%/*}
	drv=$(basename "$(readlink -f "$d")")
	n=$((n + 1))
	check "nic:$i names its driver $drv" has "$(field "$TMP/root" "nic:$i" evidence)" "driver $drv"
done
[ "$n" -gt 0 ] || check_skip "nic findings" "no network interface with a driver here"
ac=$(cat /proc/sys/net/ipv4/tcp_autocorking)
cc=$(cat /proc/sys/net/ipv4/tcp_congestion_control)
check "tcp_autocorking: net.ipv4.tcp_autocorking=$ac" \
	has "$(field "$TMP/root" tcp_autocorking evidence)" "net.ipv4.tcp_autocorking=$ac"
check "congestion_control: net.ipv4.tcp_congestion_control=$cc" \
	has "$(field "$TMP/root" congestion_control evidence)" "net.ipv4.tcp_congestion_control=$cc"
if [ -d /sys/firmware/efi ]; then
	check_skip "secure_boot" "an EFI boot: the guests boot without firmware variables"
else
	check "secure_boot: status ok" same "$(field "$TMP/root" secure_boot status)" ok
	check "secure_boot: says there is no /sys/firmware/efi" \
		has "$(field "$TMP/root" secure_boot evidence)" "no /sys/firmware/efi"
fi
if ls -d /var/lib/dkms/ena-tcp-tailfix/*/"$(uname -r)" >/dev/null 2>&1; then
	check "dkms: a finding for the running kernel among: $(ids "$TMP/root")" \
		has " $(ids "$TMP/root") " " dkms:$(uname -r) "
	check "dkms:$(uname -r): built and installed, status ok" \
		same "$(field "$TMP/root" "dkms:$(uname -r)" status)" ok
else
	check_skip "dkms" "the package is not in DKMS for $(uname -r) here"
fi
want=in-tree
grep -qx 'ENA_DRIVER=tailfix' /etc/ena-tcp-tailfix.conf 2>/dev/null && want=tailfix
check "ena_optin: ENA_DRIVER=$want, as /etc/ena-tcp-tailfix.conf says" \
	has "$(field "$TMP/root" ena_optin evidence)" "ENA_DRIVER=$want"

# The control: another namespace, other values.
NS=cli-live-$$
ip netns add "$NS" || fail "ip netns add $NS"
on_exit "ip netns del $NS"
ac2=$((1 - ac))
cc2=reno
[ "$cc" = reno ] && cc2=cubic
ip netns exec "$NS" sysctl -qw "net.ipv4.tcp_autocorking=$ac2" "net.ipv4.tcp_congestion_control=$cc2" ||
	fail "setting tcp_autocorking and tcp_congestion_control in $NS"
run_cli "$TMP/ns" ip netns exec "$NS"
check "in $NS: tcp_autocorking=$ac2 there, not the initial namespace's $ac" \
	has "$(field "$TMP/ns" tcp_autocorking evidence)" "net.ipv4.tcp_autocorking=$ac2"
check "in $NS: tcp_congestion_control=$cc2 there, not $cc" \
	has "$(field "$TMP/ns" congestion_control evidence)" "net.ipv4.tcp_congestion_control=$cc2"
check "(the control) the initial namespace's report fails the $NS predicates" \
	fails has "$(field "$TMP/root" tcp_autocorking evidence)" "net.ipv4.tcp_autocorking=$ac2"

if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	run_cli "$TMP/nobody" setpriv --reuid=65534 --regid=65534 --clear-groups
	check "as nobody: exit 0 or 1 (not 2: nothing it needs is root-only)" [ "$(cat "$TMP/nobody.rc")" -le 1 ]
	check "as nobody: the same findings as root" same "$(ids "$TMP/root")" "$(ids "$TMP/nobody")"
else
	check_skip "as nobody" "not root, or no setpriv"
fi
ksft_finish
