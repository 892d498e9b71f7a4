#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# 100 load/unload cycles under traffic, with faults injected and recovery on,
# so probes fire and checks are queued while the module goes away.  The
# runner fails the test on any WARN/BUG/lockdep/KASAN line in dmesg.
. "$(dirname "$0")/lib.sh"
require_tsq_probe
require_cmd tc
CYCLES=${TSQ_CYCLES:-100}

rr_setup
res=$(mktemp -d)
on_exit "rm -rf $res"
# Traffic for the whole test: closed-loop two-write requests on 8 connections.
ip netns exec "$NS_CLI" "$TOOLS_DIR/tailrr" client --server "$SRV_ADDR" --port "$RR_PORT" \
	--closed --duration 600 --conns 8 >"$res/traffic" 2>&1 &
traffic=$!
on_exit "kill $traffic"

done_cycles=0
moved=0
for ((i = 0; i < CYCLES; i++)); do
	modprobe tsq_probe fault_inject=1 fault_ppm=300000 recover=1 || break
	# Let the probes see traffic: wait until a completion has been timed.
	wait_for 10 grep -q '^txc_samples [1-9]' /sys/kernel/tsq_probe/stats && moved=$((moved + 1))
	modprobe -r tsq_probe || break
	done_cycles=$((done_cycles + 1))
done
log "cycles: $done_cycles/$CYCLES, probes saw traffic in $moved"
check "$CYCLES load/unload cycles under traffic" cmp_num "$done_cycles" "==" "$CYCLES"
check "probes saw traffic in every cycle" cmp_num "$moved" "==" "$CYCLES"
check "traffic still flowing after the cycles" kill -0 "$traffic"
kill "$traffic"
wait "$traffic" 2>/dev/null
check "module gone" test ! -e /sys/module/tsq_probe
ksft_finish
