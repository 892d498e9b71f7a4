#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dctcp_plot.sh RESULTS_DIR: render RESULTS_DIR/dctcp_rpc.png from the
# summary.csv written by bench/dctcp_rpc.sh (for guests without gnuplot).
set -e
res=${1:?usage: dctcp_plot.sh RESULTS_DIR}
command -v gnuplot >/dev/null || { echo "dctcp_plot.sh: gnuplot not installed" >&2; exit 4; }
cp "$(dirname "$0")/dctcp_rpc.gp" "$res/dctcp_rpc.gp"
cd "$res" && gnuplot dctcp_rpc.gp && echo "$res/dctcp_rpc.png"
