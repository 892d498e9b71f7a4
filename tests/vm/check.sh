#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh quick|full|demo|bench -- the top-level Makefile's check,
# check-full, demo and bench targets.
#   quick: host checks (lint, patches, model, ENA static checks) and the
#          kselftest suite in the amd64 guests of both kernels (+ arm64 6.1
#          when the arm64 image support is present);
#   full:  the same on every kernel of both architectures;
#   demo:  the TSQ lost-wake-up demo in the 6.1 guest, table at the end;
#   bench: the benchmarks in the guests, results under bench/results/.
# Ends with "N passed, N failed, N skipped" over everything that ran.
set -uo pipefail
mode=${1:-quick}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top" || exit 1

deps=check
[ "$mode" = full ] && deps=full
scripts/deps.sh "$deps" || exit 1

total_p=0 total_f=0 total_s=0
summary=()
add() {	# add LABEL PASS FAIL SKIP
	summary+=("$(printf '%-40s %4d passed, %d failed, %d skipped' "$1" "$2" "$3" "$4")")
	total_p=$((total_p + $2)) total_f=$((total_f + $3)) total_s=$((total_s + $4))
}

# last_line cmd...: run cmd with its output shown, then print its last line
# in LAST (a file, not `tee /dev/stderr`, which would truncate a log that
# stderr is redirected to).
LAST=
last_line() {
	local f
	f=$(mktemp)
	"$@" 2>&1 | tee "$f"
	LAST=$(tail -1 "$f")
	rm -f "$f"
}

# guest ARCH RUN [RESULTS] [KERNEL-FILTER]: stage the disk, boot each kernel.
guest() {
	local arch=$1 run=$2 res=${3:-} filter=${4:-.} img k out
	echo "== staging the $arch guest"
	# A foreign guest's DKMS install is emulated: stage only the kernels
	# that boot (the amd64 disk always carries every kernel).
	local only=.
	[ "$arch" = amd64 ] || only=$filter
	if ! img=$(TAILFIX_STAGE_KERNELS=$only "$here/stage.sh" "$arch"); then
		add "$arch: stage (dkms install)" 0 1 0
		return
	fi
	for k in $(grep -E "$filter" "$img.kernels"); do
		echo "== $k ($arch): $run"
		local t0=$SECONDS
		last_line "$here/run.sh" "$arch" "$img" "$k" "$run" "${res:+$res/$k}"
		set -- $LAST
		add "$k ($arch), $((SECONDS - t0)) s" "$4" "$5" "$6"
	done 2>&1
}

case $mode in
quick|full)
	echo "== host checks"
	t0=$SECONDS
	last_line tests/run_tests.sh $(make -s -C tests print-host-test-progs)
	set -- $LAST
	add "host checks, $((SECONDS - t0)) s" "$1" "$3" "$5"
	guest amd64 check
	if [ "$mode" = full ]; then
		[ -x "$here/image-foreign.sh" ] && guest arm64 check
	elif [ -x "$here/image-foreign.sh" ]; then
		guest arm64 check "" '^6\.1\.'
	fi
	;;
demo)
	rm -rf "$top/out/demo"
	guest amd64 demo "$top/out/demo" '^6\.1\.'
	for d in "$top"/out/demo/*/demo; do
		[ -f "$d/summary.txt" ] || continue
		bench/tsq_plot.sh "$d" >/dev/null 2>&1 || true
		echo "== demo: $d"
		cat "$d/summary.txt"
	done
	;;
bench)
	guest amd64 bench "$top/bench/results" '^6\.1\.'
	for d in "$top"/bench/results/*/tsq; do
		[ -f "$d/summary.txt" ] && bench/tsq_plot.sh "$d" && cat "$d/summary.txt"
	done
	for d in "$top"/bench/results/*/dctcp; do
		[ -d "$d" ] && bench/dctcp_plot.sh "$d"
	done
	;;
*)
	echo "check.sh: quick|full|demo|bench" >&2
	exit 2 ;;
esac

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
