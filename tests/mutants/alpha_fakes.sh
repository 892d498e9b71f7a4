#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Fakes for dctcp_fixed_alpha.sh.  Passes when the test:
#   - skips before its first check when netem cannot mark (tc a stand-in
#     that refuses netem): no check is ever reported and then hidden by a
#     skip;
#   - fails when a helper fails (python3 a stand-in that runs the helper and
#     then returns 1 for the analysis of the dctcp_fixed flows): a helper's
#     exit status is never ignored, whatever the alpha figures say.
. "$(dirname "$0")/../lib.sh"
require_root
require_disruptive "runs dctcp_fixed_alpha.sh with fake tc and python3"
require_module tcp_dctcp_fixed

fake=$(mktemp -d)
on_exit rm -rf "$fake"
mkdir "$fake/tc" "$fake/py"
cat >"$fake/tc/tc" <<EOS
#!/bin/bash
case "\$*" in *netem*) echo "RTNETLINK answers: No such file or directory" >&2; exit 2 ;; esac
exec $(command -v tc) "\$@"
EOS
cat >"$fake/py/python3" <<EOS
#!/bin/bash
$(command -v python3) "\$@"
rc=\$?
case "\$*" in *dctcp_fixed_alpha.py\ analyse\ */dctcp_fixed-*) exit 1 ;; esac
exit \$rc
EOS
chmod +x "$fake/tc/tc" "$fake/py/python3"

out=$(PATH=$fake/tc:$PATH "$TESTS_DIR/dctcp_fixed_alpha.sh" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/#   | /'
check "no netem marking: the test skips (exit 4, was $rc)" test "$rc" -eq 4
check "no netem marking: no check reported before the skip" \
	test "$(grep -cE '^(not )?ok [0-9]+ ' <<<"$out")" -eq 0

out=$(PATH=$fake/py:$PATH DCTCP_ALPHA_SECS=4 "$TESTS_DIR/dctcp_fixed_alpha.sh" 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/#   | /'
check "a failing helper: the test fails (exit 1, was $rc)" test "$rc" -eq 1
check "a failing helper: both dctcp_fixed flows reported as not run" \
	test "$(grep -c '^not ok [0-9]* 2e [0-9]*%: dctcp_fixed flow ran' <<<"$out")" -eq 2
check "a failing helper: the in-tree flows still pass (only the faked one fails)" \
	test "$(grep -c '^ok [0-9]* 2e [0-9]*%: in-tree dctcp flow ran' <<<"$out")" -ge 2
ksft_finish
