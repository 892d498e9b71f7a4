#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq-probe-stat --prometheus keeps devices of the same name in different
# network namespaces apart, through a real scrape: a histograms file with
# two eth0 (10 samples each, in different buckets, different namespaces,
# the same ifindex) is turned into metrics that promtool check metrics
# accepts, and Debian's node_exporter (its textfile collector, on a free
# localhost port) serves them with node_textfile_scrape_error 0 and two
# tx_completion series, each with its own buckets, _sum and _count.
# Fakes that must fail it: a tsq-probe-stat that labels devices by name
# only, the old one's output kept (mutants/tsq_probe_prometheus-old-cli.prom:
# scraped without error, one eth0 mixed from both), and a module that writes
# no netns and ifindex (one eth0 of 20 samples).  A metrics file with an unescaped quote must make the
# scrape report an error (the scrape check itself can fail).
. "$(dirname "$0")/../lib.sh"
CLI=$TAILFIX_ROOT/tsq_probe/tsq-probe-stat
CACHE=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}
PROMTOOL=$(command -v promtool || echo "$CACHE/promtool/usr/bin/promtool")
NODE_EXPORTER=$(command -v prometheus-node-exporter || echo "$CACHE/node-exporter/usr/bin/prometheus-node-exporter")
NS_A=4026532001
NS_B=4026532002
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"

mkdir -p "$tmp/sys" "$tmp/old" "$tmp/textfile"
printf '%s\n' "autocork 3" "txc_samples 20" "dev_slots_full 0" "txc_max_ns 2000000" >"$tmp/sys/stats"
cp "$tmp/sys/stats" "$tmp/old/stats"
# eth0 in NS_A: 3 in [1024, 2048) ns, 7 in [2048, 4096), sum 25 us;
# eth0 in NS_B: 10 in [1 MiB, 2 MiB) ns, sum 15 ms.
cat >"$tmp/sys/histograms" <<EOF
hist cork_hold_ns - max_ns 5000 sum_ns 9000
2048 4096 2
hist txc_ns eth0 max_ns 4000 sum_ns 25000 netns $NS_A ifindex 2
1024 2048 3
2048 4096 7
hist txc_ns eth0 max_ns 2000000 sum_ns 15000000 netns $NS_B ifindex 2
1048576 2097152 10
EOF
# The fake module: the same, without netns and ifindex.
sed 's/ netns [0-9]* ifindex [0-9]*$//' "$tmp/sys/histograms" >"$tmp/old/histograms"
# The fake CLI: labels by device name only.
sed '/lbl = "netns=/d' "$CLI" >"$tmp/name-only"
chmod +x "$tmp/name-only"

# prom CLI SYSDIR OUT: OUT is the CLI's --prometheus output for SYSDIR.
prom() { TSQ_PROBE_SYSFS=$2 TSQ_PROBE_HISTOGRAMS='' "$1" --prometheus >"$3"; }
check "the fake CLI differs from the real one" bash -c "! cmp -s '$CLI' '$tmp/name-only'"
check "--prometheus on two eth0 in two namespaces: exit 0" prom "$CLI" "$tmp/sys" "$tmp/real.prom"
prom "$tmp/name-only" "$tmp/sys" "$tmp/name-only.prom"
prom "$CLI" "$tmp/old" "$tmp/old.prom"

# families_once FILE: each HELP and TYPE line once, and each family's
# samples in one block (the text format's rule).
families_once() {
	awk '/^# (HELP|TYPE) / { k = $2 " " $3; if (k in seen) { print "# twice: " $0; bad = 1 } seen[k] = 1; next }
		/^#/ { next }
		{ m = $1; sub(/\{.*/, "", m); sub(/_(bucket|sum|count)$/, "", m)
		  if (m != last && (m in done)) { print "# " m " split in two blocks"; bad = 1 }
		  done[m] = 1; last = m }
		END { exit bad }' "$1"
}
check "HELP and TYPE once per family, each family in one block" families_once "$tmp/real.prom"
check "both eth0 carry netns, ifindex and device labels" bash -c \
	"grep -qF 'tsq_probe_tx_completion_seconds_count{netns=\"$NS_A\",ifindex=\"2\",device=\"eth0\"} 10' '$tmp/real.prom' &&
	 grep -qF 'tsq_probe_tx_completion_seconds_count{netns=\"$NS_B\",ifindex=\"2\",device=\"eth0\"} 10' '$tmp/real.prom'"

if [ -x "$PROMTOOL" ]; then
	promtool_ok() { "$PROMTOOL" check metrics <"$1" >"$1.promtool" 2>&1 || { sed 's/^/# promtool: /' "$1.promtool"; return 1; }; }
	check "promtool check metrics accepts the output" promtool_ok "$tmp/real.prom"
else
	check_skip "promtool check metrics accepts the output" "promtool not found (scripts/deps.sh check fetches it)"
fi

# ---- a real scrape: node_exporter's textfile collector -----------------------
# scrape FILE OUT: FILE served by the textfile collector, the scrape in OUT.
scrape() {
	cp "$1" "$tmp/textfile/tsq_probe.prom.new" && mv "$tmp/textfile/tsq_probe.prom.new" "$tmp/textfile/tsq_probe.prom" &&
		curl -sSf -o "$2" "http://127.0.0.1:$port/metrics"
}
# series_ok OUT: node_textfile_scrape_error 0, and exactly two
# tx_completion series, the eth0 of NS_A and of NS_B, each with its own
# _count, _sum and buckets as written.
series_ok() {
	awk -v a="$NS_A" -v b="$NS_B" '
	function lv(s, k) { return match(s, "[{,]" k "=\"[^\"]*\"") ? substr(s, RSTART + length(k) + 3, RLENGTH - length(k) - 4) : "" }
	$1 == "node_textfile_scrape_error" { err = $2 }
	/^tsq_probe_tx_completion_seconds_count/ { n++; c[lv($1, "netns") "/" lv($1, "device")] = $2 }
	/^tsq_probe_tx_completion_seconds_sum/ { s[lv($1, "netns")] = $2 }
	/^tsq_probe_tx_completion_seconds_bucket/ { bk[lv($1, "netns"), lv($1, "le") + 0] = $2 }
	END {
		if (err != "0") { print "# node_textfile_scrape_error " err; bad = 1 }
		if (n != 2) { print "# " n + 0 " tx_completion series, want 2"; bad = 1 }
		if (c[a "/eth0"] != 10 || c[b "/eth0"] != 10) {
			print "# _count: " a "/eth0 " c[a "/eth0"] ", " b "/eth0 " c[b "/eth0"] ", want 10 and 10"; bad = 1 }
		if (s[a] - 2.5e-05 > 1e-12 || 2.5e-05 - s[a] > 1e-12 || s[b] - 0.015 > 1e-12 || 0.015 - s[b] > 1e-12) {
			print "# _sum: " s[a] ", " s[b] ", want 2.5e-05 and 0.015"; bad = 1 }
		if (bk[a, 2.048e-06] != 3 || bk[a, 4.096e-06] != 10 || bk[b, 0.002097152] != 10 || ((b, 2.048e-06) in bk)) {
			print "# buckets: " a " le 2.048e-06 " bk[a, 2.048e-06] " le 4.096e-06 " bk[a, 4.096e-06] ", " b " le 0.002097152 " bk[b, 0.002097152]; bad = 1 }
		exit bad
	}' "$1"
}
# scrape_error OUT: the collector reported a file it could not parse.
scrape_error() { grep -q '^node_textfile_scrape_error 1$' "$1"; }

if [ -x "$NODE_EXPORTER" ] && command -v curl >/dev/null; then
	# A free port: a random one, again if node_exporter cannot take it.
	port="" tries=0
	up() { curl -sf -o /dev/null "http://127.0.0.1:$1/metrics" || ! kill -0 "$2" 2>/dev/null; }
	while [ -z "$port" ] && [ $tries -lt 5 ]; do
		p=$((20000 + RANDOM % 40000)) tries=$((tries + 1))
		"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$p" --collector.disable-defaults \
			--collector.textfile --collector.textfile.directory="$tmp/textfile" >"$tmp/ne.log" 2>&1 &
		pid=$!
		if wait_for 20 up "$p" "$pid" && kill -0 "$pid" 2>/dev/null; then
			port=$p
			on_exit "kill $pid"
		else
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	[ -n "$port" ] || fail "node_exporter did not start on a localhost port in $tries tries: $(tail -3 "$tmp/ne.log")"
	log "node_exporter $("$NODE_EXPORTER" --version 2>&1 | head -1) on 127.0.0.1:$port"
	check "node_exporter scrape: two eth0 series, each with its own buckets, _sum and _count" \
		bash -c "$(declare -f scrape series_ok); tmp='$tmp' port=$port NS_A=$NS_A NS_B=$NS_B; scrape '$tmp/real.prom' '$tmp/real.scrape' && series_ok '$tmp/real.scrape'"
	check "fake CLI (labels by name only) fails the scrape check" bash -c \
		"$(declare -f scrape series_ok); tmp='$tmp' port=$port NS_A=$NS_A NS_B=$NS_B; scrape '$tmp/name-only.prom' '$tmp/name-only.scrape' && ! series_ok '$tmp/name-only.scrape'"
	check "fake module (no netns, no ifindex) fails the scrape check" bash -c \
		"$(declare -f scrape series_ok); tmp='$tmp' port=$port NS_A=$NS_A NS_B=$NS_B; scrape '$tmp/old.prom' '$tmp/old.scrape' && ! series_ok '$tmp/old.scrape'"
	# The old CLI's own output, kept: the scrape accepts it, and only the
	# series check sees one eth0 where there were two.
	old_cli_accepted() { scrape "$TAILFIX_ROOT/tests/mutants/tsq_probe_prometheus-old-cli.prom" "$tmp/old-cli.scrape" &&
		grep -q '^node_textfile_scrape_error 0$' "$tmp/old-cli.scrape" && ! series_ok "$tmp/old-cli.scrape"; }
	check "the old CLI's kept output: scraped without error, fails the scrape check" old_cli_accepted
	sed 's/device="eth0"/device="et"h0"/' "$tmp/real.prom" >"$tmp/bad.prom"
	check "an unparsable file makes node_textfile_scrape_error 1" bash -c \
		"$(declare -f scrape scrape_error); tmp='$tmp' port=$port; scrape '$tmp/bad.prom' '$tmp/bad.scrape' && scrape_error '$tmp/bad.scrape'"
else
	check_skip "node_exporter scrape" "node_exporter or curl not found (scripts/deps.sh check fetches them)"
fi
ksft_finish
