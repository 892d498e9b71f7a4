#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh DIR: run the semantic patches of this directory on the ENA driver
# source in DIR (ena_netdev.h and the *.c files of
# drivers/net/ethernet/amazon/ena).
#
#   tx_drop_doorbell.cocci  every drop path of ena_start_xmit() makes the
#                           success path's doorbell decision and calls a
#                           function that really writes the doorbell
#   napi_stats_order.cocci  no statistics update after napi_complete_done()
#                           in a poll function
#   napi_syncp.cocci        one writer per ring u64_stats_sync: napi_syncp
#                           only from functions run only by NAPI, the
#                           transmit path's syncp never from a poll function
#                           or a shared function it calls, neither from
#                           anything the timer service reaches
#
# ena_netdev.h (inline helpers such as 6.12's ena_ring_tx_doorbell()) and
# the driver's *.c files are checked as one unit, so that calls across
# files are seen; findings are reported as FILE:LINE of the original
# files.  Each check also lists the functions it examined ("checked:
# fn()"); the check fails as unusable when an expected function was not
# examined (CHECK_EXPECT, default ena_start_xmit for the transmit check,
# ena_io_poll ena_xdp_io_poll for the other two and ena_timer_service for
# napi_syncp), so a parse failure cannot pass for a clean source.
#
# CHECK_RULES="RULE..." runs only those of the three (default: all);
# tests/host/ena_static_check.sh runs a mutant through the rule that must
# catch it.
#
# CHECK_ACCEPT=FILE names findings argued safe for one source (see below;
# ena/checks/amzn-2.17.accept for amzn-drivers); sources that need
# conditionals resolved first go through resolve.sh.
#
# Exit: 0 clean, 1 findings, 2 the checker could not do its job.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:?usage: check.sh ENA_SOURCE_DIR}
EXPECT=${CHECK_EXPECT:-ena_start_xmit ena_io_poll ena_xdp_io_poll ena_timer_service}

command -v spatch >/dev/null || { echo "check: spatch (coccinelle) not installed" >&2; exit 2; }
[ -f "$DIR/ena_netdev.c" ] || { echo "check: no ena_netdev.c in $DIR" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# One unit, and a map of where each file starts in it.
line=1
for f in "$DIR"/ena_netdev.h "$DIR"/*.c; do
	printf '%s %d\n' "$(basename "$f")" "$line" >>"$TMP/map"
	cat "$f" >>"$TMP/ena_all.c"
	line=$(($(wc -l <"$TMP/ena_all.c") + 1))
done

CHECKS=${CHECK_RULES:-tx_drop_doorbell napi_stats_order napi_syncp}
for c in $CHECKS; do
	[ -f "$HERE/$c.cocci" ] || { echo "check: no rule $c ($HERE/$c.cocci)" >&2; exit 2; }
done
# The three are independent: run at once (spatch uses one CPU each).
declare -A pid
for c in $CHECKS; do
	(cd "$TMP" && spatch --very-quiet --no-includes \
		--sp-file "$HERE/$c.cocci" ena_all.c) >"$TMP/$c.out" 2>"$TMP/$c.err" &
	pid[$c]=$!
done
rc=0
for c in $CHECKS; do
	if ! wait "${pid[$c]}"; then
		echo "check: spatch failed on $c.cocci:" >&2
		sed 's/^/  /' "$TMP/$c.err" >&2
		rc=2
	fi
done
[ "$rc" -eq 0 ] || exit 2
for c in $CHECKS; do
	for fn in $EXPECT; do
		grep -qx "checked: $fn()" "$TMP/$c.out" && continue
		# A function only one of the checks is about is not expected
		# by the other one.
		case $c:$fn in
		tx_drop_doorbell:*_poll | napi_*:*xmit*) continue ;;
		tx_drop_doorbell:*timer* | napi_stats_order:*timer*) continue ;;
		esac
		echo "check: $c.cocci did not examine $fn() in $DIR" >&2
		exit 2
	done
	sed -n 's/^checked: /# '"$c"' checked: /p' "$TMP/$c.out" | sort -u
	# ena_all.c:LINE: ... -> FILE:LINE: ...
	awk -v c="$c" 'NR == FNR { name[NR] = $1; start[NR] = $2; n = NR; next }
		/^ena_all\.c:[0-9]+:/ {
			split($0, a, ":"); l = a[2] + 0
			for (i = n; i > 1 && start[i] > l; i--)
				;
			sub(/^ena_all\.c:[0-9]+:/, "")
			gsub(/ at line [0-9]+/, "")
			printf "%s:%d:%s [%s]\n", name[i], l - start[i] + 1, $0, c
		}' "$TMP/map" "$TMP/$c.out" | sort -u | sort -t: -k1,1 -k2,2n >"$TMP/$c.found"
done
# CHECK_ACCEPT: findings argued safe for this source are shown as
# accepted, not counted; an entry that matched nothing is an error.
if [ -n "${CHECK_ACCEPT:-}" ]; then
	"$HERE/accept.sh" "$CHECK_ACCEPT" "$TMP" $CHECKS || exit 2
fi
for c in $CHECKS; do
	if [ -s "$TMP/$c.found" ]; then
		cat "$TMP/$c.found"
		rc=1
	fi
done
exit $rc
