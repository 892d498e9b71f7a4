#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Wrong DCTCPs the dctcp_fixed tests must catch (issue 11, 3.1).  In a guest:
# builds tcp_dctcp_fixed from the installed DKMS source with
# KCFLAGS=-DDCTCPF_TEST_MUTANT=N (see the list in tcp_dctcp_fixed.c), puts it
# where modprobe finds the real one, runs the test that must catch it, and
# puts the real module back.  Passes for a mutant when its test FAILS (exit
# 1, not a skip), and for the real module (N=0, rebuilt the same way) when
# the same tests pass, so that a failure is the mutant's and not the
# harness's.  Needs the kernel headers in the guest (the image has them).
#   tests:mutants/dctcp_mutants.sh   (DCTCP_MUTANTS="1 3" to run a subset)
. "$(dirname "$0")/../lib.sh"
require_root
require_disruptive "replaces the installed tcp_dctcp_fixed module"
require_module tcp_dctcp_fixed
src=$(ls -d /usr/src/ena-tcp-tailfix-*/ 2>/dev/null | tail -1)
[ -n "$src" ] || skip "no DKMS source under /usr/src"
kdir=/lib/modules/$(uname -r)/build
[ -d "$kdir" ] || skip "no kernel headers for $(uname -r)"
installed=$(modinfo -n tcp_dctcp_fixed) || fail "modinfo -n tcp_dctcp_fixed"
# DKMS may install it compressed: a mutant goes in the same form (ko_put_as).

tmp=$(mktemp -d)
cp "$installed" "$tmp/real.ko"
on_exit "cp '$tmp/real.ko' '$installed'; rmmod tcp_dctcp_fixed 2>/dev/null; rm -rf '$tmp'"

# The test that must catch each mutant.
declare -A CATCH=(
	[1]=dctcp_fixed_packets.sh	# stale-shadow ECE: 2b's exact echo
	[2]=dctcp_fixed_packets.sh	# no early ACK of the prior run: 2b
	[3]=dctcp_fixed_alpha.sh	# cut cwnd * alpha: reductions are cwnd * (1 - alpha/2)
	[4]=dctcp_fixed_ece_cwnd.sh	# floor above the cwnd before: cwnd never rises on ECE
)

# build N: the module with DCTCPF_TEST_MUTANT=N in $tmp/mN.ko.
build() {
	rm -rf "$tmp/b" && mkdir -p "$tmp/b" &&
		cp -r "$src/tcp_dctcp_fixed" "$src/dkms.conf" "$tmp/b/" &&
		make -s -C "$kdir" M="$tmp/b/tcp_dctcp_fixed" KCFLAGS="-DDCTCPF_TEST_MUTANT=$1" modules \
			>"$tmp/build.$1" 2>&1 &&
		cp "$tmp/b/tcp_dctcp_fixed/tcp_dctcp_fixed.ko" "$tmp/m$1.ko"
}

# run_with N TEST: TEST's exit status with module N installed.
run_with() {
	local rc
	rmmod tcp_dctcp_fixed 2>/dev/null
	ko_put_as "$installed" "$tmp/m$1.ko" || return 2
	"$TESTS_DIR/$2" >"$tmp/out.$1.$2" 2>&1
	rc=$?
	grep -E '^not ok|^# FAIL' "$tmp/out.$1.$2" | head -5 | sed "s/^/#   mutant $1: /"
	rmmod tcp_dctcp_fixed 2>/dev/null
	cp "$tmp/real.ko" "$installed"
	return "$rc"
}

# Mutant 4 shows only on a window of 1 (the floor can exceed the cwnd before
# the reduction only there): dctcp_fixed_ece_cwnd.sh's initcwnd-1 cases.
MUTANTS=${DCTCP_MUTANTS:-1 2 3 4}
check "the real module rebuilt from the DKMS source" build 0
for t in $(for m in $MUTANTS; do echo "${CATCH[$m]}"; done | sort -u); do
	check "control: $t passes with the real module (rebuilt)" run_with 0 "$t"
done
for m in $MUTANTS; do
	if ! build "$m"; then
		check "mutant $m builds" false
		continue
	fi
	caught() { run_with "$1" "$2"; [ $? -eq 1 ]; }
	check "mutant $m fails ${CATCH[$m]}" caught "$m" "${CATCH[$m]}"
done
ksft_finish
