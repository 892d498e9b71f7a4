#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tsq_plot.sh DIR: percentile plot (PNG) of tsq_bench.sh's three raw runs.
# x axis: percentile as "nines" (90, 99, 99.9, 99.99), y: latency in ms.
set -e
dir=${1:?usage: tsq_plot.sh DIR}
command -v gnuplot >/dev/null || { echo "tsq_plot.sh: gnuplot not installed (apt-get install gnuplot-nox)"; exit 1; }
for r in nofault fault_r0 fault_r1; do
	sort -n "$dir/$r.raw" | awk -v out="$dir/$r.pct" '
		{ v[NR] = $1 }
		END {
			for (i = 1; i <= NR; i++) {
				p = (i - 0.5) / NR
				if (p >= 0.5) printf "%.6f %.3f\n", 1 / (1 - p), v[i] / 1000 > out
			}
		}'
done
gnuplot <<GP
set terminal pngcairo size 900,560 noenhanced
set output "$dir/tsq_percentiles.png"
set title "Two-write RPC, open loop: latency by percentile ($(head -1 "$dir/setup.txt" | cut -d' ' -f1-2))"
set logscale x 10
set xtics ("50" 2, "90" 10, "99" 100, "99.9" 1000, "99.99" 10000)
set xlabel "percentile"
set ylabel "latency (ms) from intended send time"
set key top left
set grid
plot "$dir/nofault.pct" using 1:2 with lines lw 2 title "no fault", \
     "$dir/fault_r0.pct" using 1:2 with lines lw 2 title "30% missed wake-ups, recover=0", \
     "$dir/fault_r1.pct" using 1:2 with lines lw 2 title "30% missed wake-ups, recover=1"
GP
rm -f "$dir"/*.pct
echo "$dir/tsq_percentiles.png"
