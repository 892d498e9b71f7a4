# SPDX-License-Identifier: GPL-2.0
# Plot of bench/dctcp_rpc.sh: p99 and p99.9 RPC latency per algorithm and RPC
# size (log scale), from summary.csv in the current directory.
set datafile separator ","
set terminal pngcairo size 1000,500 font ",10" noenhanced
set output "dctcp_rpc.png"
set multiplot layout 1,2 title "RPC latency, 2 senders -> 1 receiver, step-marking bottleneck"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel "latency (us)"
set grid ytics
set key top left
do for [sz in "10k 1m"] {
	set title sz." RPCs"
	plot "< awk -F, -v s=".sz." '$2 == s' summary.csv" using 5:xtic(1) title "p99", \
	     "" using 6 title "p99.9"
}
unset multiplot
