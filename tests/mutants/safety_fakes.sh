#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Fakes for dctcp_fixed_safety.sh, in one run of it.  Passes when each of
# these checks fails, and says which did not:
#   - the module's version against dkms.conf: the test runs from a root
#     whose dkms.conf gives another PACKAGE_VERSION (tests/ linked in);
#   - the load-time refusals' kernel-log lines, read after a mark: modprobe
#     is a stand-in that refuses shift_g=11 and min_cwnd_after_ce=3 without
#     loading anything, so the kernel says nothing, while the run-time
#     refusals earlier in the same test have put the same words in the log;
#   - traffic during the load/unload cycles: the stand-in stops the cubic
#     client (SIGSTOP: alive for kill -0, no bytes) at the 3rd cycle's load
#     and lets it go on at the 6th.
. "$(dirname "$0")/../lib.sh"
require_root
require_disruptive "runs dctcp_fixed_safety.sh, which is disruptive"
require_module tcp_dctcp_fixed

fake=$(mktemp -d)
on_exit "for p in \$(cat $fake/stopped 2>/dev/null); do kill -CONT \$p; done; rm -rf $fake"
ln -s "$TESTS_DIR" "$fake/tests"
sed 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="0.0-not-this-module"/' "$TAILFIX_ROOT/dkms.conf" >"$fake/dkms.conf"
mkdir "$fake/bin"
real=$(command -v modprobe)
cat >"$fake/bin/modprobe" <<EOS
#!/bin/bash
case "\$*" in
*shift_g=11* | *min_cwnd_after_ce=3*)
	exit 1 ;;
tcp_dctcp_fixed)
	# a load while the cubic client of the cycles runs
	c=\$(pgrep -f 'iperf3 -c .* -p 5410')
	if [ -n "\$c" ]; then
		n=\$((\$(cat $fake/n 2>/dev/null || echo 0) + 1))
		echo \$n >$fake/n
		[ \$n -ne 3 ] || { kill -STOP \$c; echo \$c >>$fake/stopped; }
		[ \$n -ne 6 ] || kill -CONT \$(cat $fake/stopped)
	fi ;;
esac
exec $real "\$@"
EOS
chmod +x "$fake/bin/modprobe"

out=$(PATH=$fake/bin:$PATH DCTCP_CYCLES=8 "$fake/tests/dctcp_fixed_safety.sh" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/#   | /'
log "dctcp_fixed_safety.sh exited $rc; cubic client stopped: $(cat "$fake/stopped" 2>/dev/null)"
check "the test fails" test "$rc" -eq 1
check "version: another dkms.conf PACKAGE_VERSION fails the version check" \
	grep -q "^not ok [0-9]* module version is dkms.conf's PACKAGE_VERSION" <<<"$out"
check "refusals: a silent kernel log after the mark fails both checks" \
	test "$(grep -c '^not ok [0-9]* and the kernel log says why, once, after the mark' <<<"$out")" -eq 2
check "the modprobe refusals themselves still pass (only the log is missing)" \
	test "$(grep -cE '^ok [0-9]+ modprobe with (shift_g=11|min_cwnd_after_ce=3) fails' <<<"$out")" -eq 2
check "cycles: a cubic client stopped for three cycles fails the traffic check" \
	grep -q '^not ok [0-9]* cubic flows ran through every cycle' <<<"$out"
ksft_finish
