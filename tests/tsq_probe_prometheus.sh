#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A host full of pods: 64 network namespaces, each with its own eth0 (a
# veth to a bridge in a hub namespace) and a little TCP traffic out of it.
# tsq_probe keeps one TX-completion histogram per (netns, ifindex) with a
# slot for each (dev_slots_full stays 0); /proc/tsq_probe/histograms holds
# them all, each line with the namespace's inode and the ifindex;
# tsq-probe-stat --prometheus turns them into 64 eth0 series, one per
# namespace (labelled with its inode, its eth0's ifindex), no label set
# twice, whose _count sum to the file's samples and lie between the
# module's txc_samples read before and after the file.  promtool check metrics and a node_exporter textfile scrape are
# run where the image has them.  The same snapshot through a tsq-probe-stat
# that labels by device name only must fail the series check.  Once the
# pods are gone, their slots are free (no pod device left in the file).
. "$(dirname "$0")/lib.sh"
require_tsq_probe
require_disruptive "loads and unloads tsq_probe"
require_cmd python3 stat
PODS=${TSQ_PROM_PODS:-64}
PORT=6300
BYTES=262144
S=/sys/kernel/tsq_probe
P=/proc/tsq_probe/histograms
CLI=$(command -v tsq-probe-stat || echo "$TAILFIX_ROOT/tsq_probe/tsq-probe-stat")

res=$(mktemp -d)
on_exit "rm -rf $res"
new_ns HUB
ip -n "$HUB" link add br0 type bridge || fail "bridge"
ip -n "$HUB" addr add 198.19.200.1/24 dev br0
ip -n "$HUB" link set br0 up
# The server: reads each connection to its end, counts the connections.
ip netns exec "$HUB" python3 -c '
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.19.200.1", int(sys.argv[1])))
s.listen(128)
open(sys.argv[2] + "/ready", "w").close()
n = 0
while True:
    c, _ = s.accept()
    while c.recv(65536):
        pass
    c.close()
    n += 1
    with open(sys.argv[2] + "/done.new", "w") as f:
        f.write("%d\n" % n)
    os.rename(sys.argv[2] + "/done.new", sys.argv[2] + "/done")
' "$PORT" "$res" >"$res/server" 2>&1 &
on_exit "kill $!"
wait_for 20 test -e "$res/ready" || fail "server did not start: $(tail -2 "$res/server")"

# Every skb timed (txc_sample=1): a pod's little traffic must give its series.
modprobe tsq_probe txc_sample=1 || fail "modprobe tsq_probe txc_sample=1"
[ -r "$P" ] || fail "no $P: the module has no full histograms file"
check "$P is mode 0400 (traffic timing: root only)" test "$(stat -c %a "$P")" = 400

# The pods: POD_i, eth0 198.19.200.(i+2), its peer p$i on the hub's bridge.
pods=()
for ((i = 0; i < PODS; i++)); do
	new_ns POD
	pods+=("$POD")
	# (made in the pod: the root namespace may have an eth0 of its own)
	ip -n "$POD" link add eth0 type veth peer name "p$i" netns "$HUB" || fail "veth of pod $i"
	printf '%s\n' "link set p$i master br0" "link set p$i up" | ip -n "$HUB" -batch - || fail "p$i on br0"
	printf '%s\n' "addr add 198.19.200.$((i + 2))/24 dev eth0" "link set eth0 up" |
		ip -n "$POD" -batch - || fail "eth0 of pod $i"
done
echo 1 >"$S/reset"
# A little TCP traffic out of each eth0: BYTES to the hub, one connection.
# (The first connection waits for the bridge port to forward.)
send() {
	ip netns exec "$1" bash -c "exec 3<>/dev/tcp/198.19.200.1/$PORT && head -c $BYTES /dev/zero >&3 && exec 3>&-" 2>/dev/null
}
failed=0
for ((i = 0; i < PODS; i++)); do
	wait_for 20 send "${pods[i]}" || failed=$((failed + 1))
done
check "TCP traffic out of each of the $PODS pods" test "$failed" = 0
done_all() { [ "$(cat "$res/done" 2>/dev/null)" -ge "$PODS" ] 2>/dev/null; }
wait_for 30 done_all || log "server saw $(cat "$res/done" 2>/dev/null) connections of $PODS"

# The full file between two reads of the counters (the guest's own
# traffic may go on: txc_samples is judged between the two).
mkdir -p "$res/sys"
cp "$S/stats" "$res/stats.before" && cp "$P" "$res/hist" && cp "$S/stats" "$res/sys/stats" ||
	fail "cannot read $S/stats or $P"
log "changed between the reads: $(diff "$res/stats.before" "$res/sys/stats" | grep '^>' | cut -c3- | paste -sd' ')"
cp "$S/histograms" "$res/sysfs.hist"
log "txc_samples $(kv "$res/sys/stats" txc_samples) dev_slots_full $(kv "$res/sys/stats" dev_slots_full)," \
	"$(grep -c '^hist txc_ns' "$res/hist") device histograms in $P"

check "no device found every slot taken (dev_slots_full 0)" \
	cmp_num "$(kv "$res/sys/stats" dev_slots_full)" "==" 0

# Each pod's namespace inode and eth0 ifindex, as "inode ifindex" lines.
for ns in "${pods[@]}"; do
	echo "$(stat -L -c %i "/run/netns/$ns") $(ip -n "$ns" -o link show dev eth0 | cut -d: -f1)"
done >"$res/pods"
# file_has_pods: the file has, for each pod, a txc_ns histogram of eth0
# with the pod's netns and ifindex and samples in it.
file_has_pods() {
	awk 'NR == FNR { want[$1 " " $2] = 1; next }
		$1 == "hist" && $2 == "txc_ns" { cur = ($3 == "eth0" && $8 == "netns" && $10 == "ifindex") ? $9 " " $11 : ""; next }
		NF == 3 && cur in want { n[cur] += $3 }
		END { for (k in want) if (!(k in n)) { print "# no samples for netns/ifindex " k; bad = 1 }
		      exit bad }' "$res/pods" "$res/hist"
}
check "$P: each pod's eth0 under its netns inode and ifindex, with samples" file_has_pods
check "$P: whole, nothing left out" bash -c "! grep -q '^truncated' '$res/hist'"

# prom CLI OUT: the snapshot through CLI --prometheus.
prom() { TSQ_PROBE_SYSFS=$res/sys TSQ_PROBE_HISTOGRAMS=$res/hist "$1" --prometheus >"$2"; }
prom "$CLI" "$res/prom" || fail "tsq-probe-stat --prometheus"
sed '/lbl = "netns=/d' "$CLI" >"$res/name-only"
chmod +x "$res/name-only"
prom "$res/name-only" "$res/name-only.prom"

# series_ok OUT: one tx_completion series per pod (its inode, eth0 and its
# ifindex), no label set twice in any family, HELP/TYPE once each, and the
# _count of all tx_completion series summing to the samples of the file,
# between txc_samples before and after it.
series_ok() {
	local file_total samples

	file_total=$(awk '$1 == "hist" { t = ($2 == "txc_ns") } NF == 3 && t { s += $3 } END { print s + 0 }' "$res/hist")
	before=$(kv "$res/stats.before" txc_samples)
	samples=$(kv "$res/sys/stats" txc_samples)
	awk -v total="$file_total" -v before="$before" -v samples="$samples" -v pods="$PODS" '
	function lv(s, k) { return match(s, "[{,]" k "=\"[^\"]*\"") ? substr(s, RSTART + length(k) + 3, RLENGTH - length(k) - 4) : "" }
	NR == FNR { want[$1] = $2; next }
	/^# (HELP|TYPE) / { k = $2 " " $3; if (k in typed) { print "# twice: " $0; bad = 1 } typed[k] = 1; next }
	/^#/ { next }
	{ if ($1 in seen) { print "# series twice: " $1; bad = 1 } seen[$1] = 1 }
	/^tsq_probe_tx_completion_seconds_count/ {
		sum += $2; ns = lv($1, "netns")
		if (ns in want && lv($1, "device") == "eth0" && lv($1, "ifindex") == want[ns]) mine[ns]++
	}
	END {
		for (ns in want) { if (mine[ns] == 1) n++ }
		if (n != pods) { print "# " n + 0 " of " pods " pods with exactly one eth0 series"; bad = 1 }
		if (sum != total || sum < before || sum > samples) {
			print "# _count sum " sum ", samples in the file " total ", txc_samples " before " before and " samples " after"; bad = 1 }
		exit bad
	}' "$res/pods" "$1"
}
check "--prometheus: $PODS eth0 series, one per pod, _count summing to the file's samples (txc_samples between)" series_ok "$res/prom"
check "a CLI labelling by device name only fails the series check" \
	bash -c "! cmp -s '$CLI' '$res/name-only' && $(declare -f series_ok kv); res='$res' PODS=$PODS; ! series_ok '$res/name-only.prom'"
check "the sysfs file (one page) still ends with a whole line" \
	bash -c "tail -c1 '$res/sysfs.hist' | od -An -c | grep -q '\\\\n'"

# A real parser and a real scrape, where the image has them.
if command -v promtool >/dev/null; then
	check "promtool check metrics accepts the output" bash -c "promtool check metrics <'$res/prom'"
else
	log "promtool not in this image: the checks above stand in for it"
fi
NE=$(command -v prometheus-node-exporter || command -v node_exporter)
if [ -n "$NE" ] && command -v curl >/dev/null; then
	mkdir -p "$res/textfile"
	cp "$res/prom" "$res/textfile/tsq_probe.prom"
	port=$((20000 + RANDOM % 40000))
	"$NE" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$res/textfile" >"$res/ne.log" 2>&1 &
	on_exit "kill $!"
	if wait_for 20 curl -sf -o "$res/scrape" "http://127.0.0.1:$port/metrics"; then
		check "node_exporter scrape: no error, $PODS eth0 series" bash -c \
			"grep -q '^node_textfile_scrape_error 0$' '$res/scrape' &&
			 [ \$(grep -c '^tsq_probe_tx_completion_seconds_count{device=\"eth0\"' '$res/scrape') -ge $PODS ]"
	else
		log "node_exporter did not answer on 127.0.0.1:$port: $(tail -2 "$res/ne.log")"
	fi
else
	log "node_exporter not in this image: the checks above stand in for it"
fi

# The pods go: their slots with them.
for ns in "${pods[@]}"; do ip netns del "$ns"; done
gone() { ! awk '$1 == "hist" && $2 == "txc_ns" && $3 == "eth0" { f = 1 } END { exit !f }' "$P"; }
check "pods deleted: no eth0 histogram left in $P (slots freed)" wait_for 20 gone
ksft_finish
