# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# What the DCTCP benchmarks share (bench/dctcp_rpc.sh, bench/dctcp_delack.sh):
# percentiles of latency files and ratios with their confidence intervals.

pct() {	# pct FILE... : n p50 p99 p99.9 max n>=40ms (values in µs)
	cat "$@" | sort -n | awk '{ v[NR] = $1 } END {
		n = NR; if (!n) { print "0 - - - - -"; exit }
		q[1] = 0.5; q[2] = 0.99; q[3] = 0.999
		for (i = 1; i <= 3; i++) { k = int(q[i] * n + 0.999999); if (k < 1) k = 1; r[i] = v[k] }
		c = 0; for (i = 1; i <= n; i++) if (v[i] >= 40000) c++
		printf "%d %.0f %.0f %.0f %.0f %d\n", n, r[1], r[2], r[3], v[n], c }'
}

# ratio_ci A B CSV: the ratios A/B of each metric of CSV (a header, then
# "cc,round,metric..." lines), matched by round: their geometric mean and a
# 95% confidence interval (Student t on the logs of the per-round ratios);
# a metric with a zero in some round gets no ratio.
ratio_ci() {
	awk -F, -v a="$1" -v b="$2" 'NR == 1 { for (i = 3; i <= NF; i++) name[i] = $i; nf = NF; next }
		{ for (i = 3; i <= nf; i++) v[$1, $2, i] = $i; if ($2 > R) R = $2 }
		END {
			split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228", tq, " ")
			t = (R - 1 >= 1 && R - 1 <= 10) ? tq[R - 1] : 1.96
			printf "# %s / %s over %d rounds: geometric mean of the per-round ratios [95%% CI]\n", a, b, R
			for (i = 3; i <= nf; i++) {
				n = 0; s = 0; ss = 0; ok = 1
				for (r = 1; r <= R; r++) {
					x = v[a, r, i]; y = v[b, r, i]
					if (x == "" || y == "" || x + 0 <= 0 || y + 0 <= 0) { ok = 0; break }
					l = log(x / y); s += l; ss += l * l; n++
				}
				if (!ok || n < 2) { printf "%-16s -\n", name[i]; continue }
				m = s / n; sd = sqrt((ss - n * m * m) / (n - 1)); h = t * sd / sqrt(n)
				printf "%-16s %.3f [%.3f, %.3f]%s\n", name[i], exp(m), exp(m - h), exp(m + h),
					(exp(m - h) <= 1 && exp(m + h) >= 1) ? "  includes 1.0" : ""
			}
		}' "$3"
}
