#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq-probe-stat against fixtures (TSQ_PROBE_SYSFS points it at a fake
# /sys/kernel/tsq_probe): the percentiles it prints are the upper bounds of
# the log2 buckets holding each rank, capped by the maximum; exit codes 0
# (ok, --help), 1 (module not loaded), 2 (bad option); Prometheus buckets
# are cumulative and +Inf equals _count.  A mutant that reports the lower
# bound of the bucket must fail the percentile check.
. "$(dirname "$0")/../lib.sh"
CLI=$TAILFIX_ROOT/tsq_probe/tsq-probe-stat
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"

mkdir -p "$tmp/sys"
printf '%s\n' "autocork 17" "lost_wakeups 2" "recoveries 2" "txc_samples 1001" \
	"cork_samples 100" "txc_max_ns 3000000" "recover 1" "fault_ppm 0" >"$tmp/sys/stats"
# cork_hold_ns: 100 samples, 90 in [1024, 2047], 9 in [2048, 4095], 1 in
# [4096, 8191], max 5000 ns.  txc_ns eth0: 1001 samples, 1000 in [1 MiB, 2 MiB),
# 1 in [2 MiB, 4 MiB), max 3 ms: only p99.99 (rank 1000.9) reaches the last one.
cat >"$tmp/sys/histograms" <<'EOF'
hist cork_hold_ns - max_ns 5000 sum_ns 150000
1024 2047 90
2048 4095 9
4096 8191 1
hist txc_ns eth0 max_ns 3000000 sum_ns 1100000000
1048576 2097151 1000
2097152 4194303 1
hist txc_ns eth1 max_ns 0 sum_ns 0
hist txc_ns veth-a"b max_ns 9000 sum_ns 30000
4096 8191 3
8192 16383 1
EOF

# run NAME [args...]: the CLI on the fixture; output in $tmp/NAME.out and
# exit status in $tmp/NAME.rc.
run() {
	local name=$1 rc=0

	shift
	TSQ_PROBE_SYSFS=${FIXTURE:-$tmp/sys} "${STAT_CLI:-$CLI}" "$@" >"$tmp/$name.out" 2>&1 || rc=$?
	echo "$rc" >"$tmp/$name.rc"
}
rc_is() { [ "$(cat "$tmp/$1.rc")" = "$2" ] || { log "$1: exit $(cat "$tmp/$1.rc"), want $2"; return 1; }; }
# row NAME HIST DEV: the columns after histogram, device, netns and ifindex
# of that histogram's row.
row() { awk -v h="$2" -v d="$3" '$1 == h && $2 == d { $1 = $2 = $3 = $4 = ""; print substr($0, 5) }' "$tmp/$1.out"; }
# percentiles_ok NAME: the table's rows are the ones worked out above.
percentiles_ok() {
	local a b c

	a=$(row "$1" cork_hold_ns -)
	b=$(row "$1" txc_ns eth0)
	c=$(row "$1" txc_ns eth1)
	[ "$a" = "100 2.0us 4.1us 5.0us 5.0us 5.0us" ] &&
	[ "$b" = "1001 2.10ms 2.10ms 2.10ms 3.00ms 3.00ms" ] &&
	[ "$c" = "0 - - - - -" ] || { log "rows: '$a' / '$b' / '$c'"; return 1; }
}

run table
check "table: exit 0" rc_is table 0
check "table: every counter of the stats file" bash -c \
	"grep -q '^autocork  *17$' '$tmp/table.out' && grep -q '^txc_max_ns  *3000000$' '$tmp/table.out' &&
	 [ \$(grep -c '^[a-z_]*  *[0-9][0-9]*$' '$tmp/table.out') -ge 8 ]"
check "table: percentiles are bucket upper bounds capped by max" percentiles_ok table

run help --help
check "--help: exit 0 and the usage" bash -c \
	"[ \$(cat '$tmp/help.rc') = 0 ] && grep -q -- '--prometheus' '$tmp/help.out' && grep -q 'TSQ_PROBE_SYSFS' '$tmp/help.out'"
run bad --frobnicate
check "unknown option: exit 2 and a usage line" bash -c \
	"[ \$(cat '$tmp/bad.rc') = 2 ] && grep -q '^usage: tsq-probe-stat' '$tmp/bad.out'"
FIXTURE=$tmp/absent run gone
check "module not loaded: exit 1 and says so" bash -c \
	"[ \$(cat '$tmp/gone.rc') = 1 ] && grep -q 'is tsq_probe loaded' '$tmp/gone.out'"
FIXTURE=$tmp/absent run gone-prom --prometheus
check "module not loaded, --prometheus: exit 1 and no metrics on stdout" bash -c \
	"[ \$(cat '$tmp/gone-prom.rc') = 1 ] && ! grep -q '^tsq_probe_' '$tmp/gone-prom.out'"

run prom --prometheus
check "--prometheus: exit 0" rc_is prom 0
check "--prometheus: counters as _total" grep -q '^tsq_probe_autocork_total 17$' "$tmp/prom.out"
# buckets_ok NAME: per series, bucket counts never go down and +Inf == _count.
buckets_ok() {
	awk '/_bucket\{/ {
		s = $1; sub(/,?le="[^"]*"/, "", s); sub(/,}/, "}", s); sub(/_bucket/, "", s)
		if ((s in last) && $2 < last[s]) { print "# not cumulative: " $0; bad = 1 }
		last[s] = $2
		if ($1 ~ /le="\+Inf"/) inf[s] = $2
		next }
	/_count/ { s = $1; sub(/_count/, "", s)
		if (s !~ /\{/) s = s "{}"
		cnt[s] = $2 }
	END {
		for (s in inf) { n++; if (!(s in cnt) || cnt[s] != inf[s]) { print "# +Inf " inf[s] " != count " cnt[s] " for " s; bad = 1 } }
		if (n < 3) { print "# only " n " histogram series"; bad = 1 }
		exit bad }' "$tmp/$1.out"
}
check "--prometheus: cumulative buckets, +Inf equals _count, 3 series" buckets_ok prom
check "--prometheus: eth0 +Inf bucket is 1001" \
	grep -q '^tsq_probe_tx_completion_seconds_bucket{device="eth0",le="+Inf"} 1001$' "$tmp/prom.out"

# A real parser: promtool (Debian's prometheus package; scripts/deps.sh
# check puts it in the cache) on the populated multi-device histograms,
# a device name with a quote included.
PROMTOOL=$(command -v promtool || echo "${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}/promtool/usr/bin/promtool")
if [ -x "$PROMTOOL" ]; then
	promtool_ok() { "$PROMTOOL" check metrics <"$tmp/$1.out" >"$tmp/$1.promtool" 2>&1 || { sed 's/^/# promtool: /' "$tmp/$1.promtool"; return 1; }; }
	check "--prometheus: promtool check metrics accepts the output" promtool_ok prom
	check "--prometheus: the quoted device name is escaped" \
		grep -q 'device="veth-a\\"b"' "$tmp/prom.out"
	# The mutant: a label value with its quote unescaped.
	sed 's/veth-a\\"b/veth-a"b/' "$tmp/prom.out" >"$tmp/mutant-label.out"
	check "mutant (unescaped quote in a label) fails promtool" bash -c \
		"! '$PROMTOOL' check metrics <'$tmp/mutant-label.out' >/dev/null 2>&1"
else
	check_skip "--prometheus: promtool check metrics" "promtool not found (scripts/deps.sh check fetches it)"
fi

# The mutant: percentiles from the lower bound of the bucket.
sed 's/{ nb++; hi\[nb\] = \$2; cnt\[nb\] = \$3 }/{ nb++; hi[nb] = $1; cnt[nb] = $3 }/' "$CLI" >"$tmp/mutant"
chmod +x "$tmp/mutant"
check "mutant CLI built" bash -c "! cmp -s '$CLI' '$tmp/mutant'"
STAT_CLI=$tmp/mutant run mutant
check "mutant (lower bucket bounds) fails the percentile check" bash -c \
	"$(declare -f percentiles_ok row log); tmp='$tmp'; ! percentiles_ok mutant"
# The mutant: Prometheus buckets that are not cumulative.
sed '/^\t*acc += cnt\[cur, bk\[i\]\]$/s/+=/=/' "$CLI" >"$tmp/mutant-prom"
chmod +x "$tmp/mutant-prom"
STAT_CLI=$tmp/mutant-prom run mutant-prom --prometheus
check "mutant (non-cumulative buckets) fails the bucket check" bash -c \
	"$(declare -f buckets_ok); tmp='$tmp'; ! cmp -s '$CLI' '$tmp/mutant-prom' && ! buckets_ok mutant-prom"
ksft_finish
