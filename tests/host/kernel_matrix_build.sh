#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every module of the package builds for every kernel series the package
# supports, each against that kernel's own headers and with its release's
# own compiler:
#   5.10  Debian 11 cloud-amd64 (bullseye)		chroot, scripts/kernel-chroot.sh
#   6.1   Debian 12 cloud-amd64				this host's /lib/modules/K/build
#   6.12  Debian 12 6.12 cloud-amd64			this host's /lib/modules/K/build
#   7.x   the newest of Debian 13's trixie-backports	chroot, scripts/kernel-chroot.sh
# For each kernel:
#   - tsq_probe and tcp_dctcp_fixed build with W=1: no error, no warning;
#   - where the headers' tcp_ca_event() hands CA_EVENT_TX_START to
#     .cwnd_event_tx_start (7.x), tcp_dctcp_fixed was built to register it
#     (otherwise it builds, and its post-ECE floor silently never runs);
#     where they have AccECN (7.x), it has the line it logs at load;
#   - the package's DKMS build succeeds and its make.log has one line per
#     module: tsq_probe and tcp_dctcp_fixed built, ena built or skipped with
#     a reason.  In a chroot that is the real `dkms build`; for the host's
#     kernels `make dkms-build`, what dkms.conf's MAKE runs (the host's DKMS
#     tree is left alone), with no ENA source so that it stays quick.
# A series whose headers are not here is a skipped subtest that says how to
# get them; with none at all the test skips.  The chroots need root.
# Mutants at the end, on the kernels that are here: the tcp_dctcp_fixed of
# before the AccECN adaptation and before the .cwnd_event_tx_start one on
# 7.x, and a signed DCTCPF_ALPHA_BITS (a W=1 warning) on 5.10 must fail.
. "$(dirname "$0")/../lib.sh"
kchroot=$TAILFIX_ROOT/scripts/kernel-chroot.sh
pkg=ena-tcp-tailfix
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TAILFIX_ROOT/dkms.conf")
MODULES="tsq_probe tcp_dctcp_fixed"

work=$(mktemp -d)
on_exit rm -rf "$work"
chroots=$("$kchroot" list 2>/dev/null)

# find_kernel SERIES: "KVER WHERE ROOT" of the newest kernel of SERIES with
# headers (WHERE: host or a chroot suite; ROOT: / or the chroot).
find_kernel() {
	local s=$1 k

	k=$(ls -d /lib/modules/"$s".*/build 2>/dev/null | sed 's,^/lib/modules/,,;s,/build$,,' |
	    grep -- '-amd64$' | sort -V | tail -1)
	if [ -n "$k" ] && [ -f "/lib/modules/$k/build/Makefile" ]; then
		echo "$k host /"
		return
	fi
	awk -v s="$s." 'index($2, s) == 1 { print $2, $1, $3 }' <<<"$chroots" | sort -V | tail -1
}

# run_in WHERE CMD...: on the host or inside the chroot of suite WHERE.
run_in() {
	local where=$1

	shift
	if [ "$where" = host ]; then
		"$@"
	else
		"$kchroot" run "$where" "$@"
	fi
}

# stage SRC ROOT: copy the package from SRC to a new directory under
# ROOT/tmp, removed on exit; STAGED is its path as seen from inside ROOT.
stage() {
	local src=$1 root=$2 d

	d=$(mktemp -d "${root%/}/tmp/tailfix-matrix.XXXXXX")
	on_exit rm -rf "$d"
	tar -C "$src" --exclude='ena/build-*' --exclude='*.ko' --exclude='*.o' --exclude='.*.cmd' \
		-c dkms.conf Makefile scripts ena tsq_probe tcp_dctcp_fixed | tar -x -C "$d"
	STAGED=/tmp/${d##*/}
}

# w1_build KVER WHERE ROOT DIR M: W=1 build of module M of the package
# staged at DIR (inside ROOT); log in $work/<kver>-M.log.  Clean: make
# succeeded, M.ko exists, no warning or error line.
w1_build() {
	local kver=$1 where=$2 root=$3 dir=$4 m=$5 log rc=0

	log=$work/$kver-$m.log
	run_in "$where" nice -n 19 make -j1 -C "/lib/modules/$kver/build" M="$dir/$m" W=1 modules \
		>"$log" 2>&1 || rc=$?
	if [ $rc -ne 0 ] || [ ! -f "${root%/}$dir/$m/$m.ko" ] || grep -qE '(warning|error):' "$log"; then
		log "$kver: $m W=1 build: exit $rc:"
		grep -E '(warning|error):' "$log" | head -5 | sed 's/^/#   /'
		return 1
	fi
}

# api_variants KVER WHERE ROOT DIR: tcp_dctcp_fixed was built to register
# .cwnd_event_tx_start exactly where the headers' tcp_ca_event() calls it,
# and carries its load-time AccECN line exactly where the headers have AccECN.
api_variants() {
	local kver=$1 where=$2 root=$3 dir=$4 hdr ko want=no got=no acc=no line=no

	hdr=$(run_in "$where" sh -c "cat /lib/modules/$kver/build/include/net/tcp.h 2>/dev/null ||
		cat /lib/modules/$kver/source/include/net/tcp.h")
	ko=${root%/}$dir/tcp_dctcp_fixed/tcp_dctcp_fixed.ko
	awk '/^static inline void tcp_ca_event\(/ { f = 1 } f && /cwnd_event_tx_start\(/ { hit = 1 }
	     f && /^}/ { f = 0 } END { exit !hit }' <<<"$hdr" && want=yes
	grep -q -- '-DDCTCPF_HAVE_TX_START_OP' "${ko%/*}/.tcp_dctcp_fixed.o.cmd" 2>/dev/null && got=yes
	grep -qw TCP_ECN_MODE_ACCECN <<<"$hdr" && acc=yes
	grep -aq 'AccECN connections get the core' "$ko" 2>/dev/null && line=yes
	log "$kver: tcp_ca_event() calls .cwnd_event_tx_start: $want, module registers it: $got;" \
	    "AccECN: $acc, load-time AccECN line: $line"
	[ "$want" = "$got" ] && [ "$acc" = "$line" ]
}

# make_log_ok KVER LOG: one line per module, the two of ours built, ena
# built or skipped with a reason.
make_log_ok() {
	local kver=$1 log=$2 m n

	for m in $MODULES ena; do
		n=$(grep -c "^$pkg: $m " "$log")
		[ "$n" -eq 1 ] || { log "$kver: $n make.log lines for $m"; return 1; }
	done
	for m in $MODULES; do
		grep -qxF "$pkg: $m built for $kver" "$log" ||
			{ log "$kver: $(grep "^$pkg: $m " "$log")"; return 1; }
	done
	grep -F "$pkg: ena " "$log" | grep -qE "^$pkg: ena (built for .+|skipped for .+: .+)$"
}

# pkg_build KVER WHERE ROOT DIR: the DKMS build; make.log in $work/<kver>-make.log.
pkg_build() {
	local kver=$1 where=$2 root=$3 dir=$4 out=$work/$1-make.log rc=0 src tree

	if [ "$where" != host ] && [ -x "$root/usr/sbin/dkms" ]; then
		# dkms add wants the package in /usr/src/NAME-VERSION; our own
		# chroot, so leftovers of a killed run are simply removed.
		src=/usr/src/$pkg-$ver tree=/var/lib/dkms/$pkg
		rm -rf "${root%/}$src" "${root%/}$tree"
		on_exit rm -rf "${root%/}$src" "${root%/}$tree"
		cp -a "${root%/}$dir" "${root%/}$src"
		run_in "$where" nice -n 19 env TAILFIX_JOBS=1 sh -c \
			"dkms add $pkg/$ver && dkms build $pkg/$ver -k $kver" >"$work/$kver-dkms.log" 2>&1 || rc=$?
		cat "${root%/}$tree/$ver/$kver"/*/log/make.log >"$out" 2>/dev/null
		log "$kver: dkms build: exit $rc"
		[ $rc -eq 0 ] || tail -5 "$work/$kver-dkms.log" | sed 's/^/#   /'
	else
		[ "$where" = host ] || log "$kver: no dkms in the chroot ($kchroot setup $where): make dkms-build"
		mkdir -p "${root%/}$dir/.empty"
		run_in "$where" nice -n 19 env TAILFIX_JOBS=1 ENA_USR_SRC="$dir/.empty" \
			ENA_MODULES_DIR="$dir/.empty" make -s -C "$dir" KVER="$kver" \
			KDIR="/lib/modules/$kver/build" TAILFIX_PROBE_DIR="$dir/.probe" dkms-build \
			>"$out" 2>&1 || rc=$?
		log "$kver: make dkms-build: exit $rc"
		[ $rc -eq 0 ] || grep -v "^$pkg: " "$out" | tail -5 | sed 's/^/#   /'
	fi
	grep "^$pkg: " "$out" | sed 's/^/#   /'
	[ $rc -eq 0 ] && make_log_ok "$kver" "$out"
}

declare -A kver_of where_of root_of
found=0
for s in 5.10 6.1 6.12 7; do
	read -r k where root <<<"$(find_kernel "$s")"
	if [ -z "$k" ]; then
		case $s in
		5.10) how="$kchroot setup bullseye" ;;
		7) how="$kchroot setup trixie" ;;
		6.1) how="apt-get install linux-headers-cloud-amd64" ;;
		*) how="apt-get install linux-headers-$s-cloud-amd64" ;;
		esac
		check_skip "$s.x: modules build" "no $s.x headers here: $how"
		continue
	fi
	if [ "$where" != host ] && [ "$(id -u)" -ne 0 ]; then
		check_skip "$k: modules build" "the $where chroot needs root"
		continue
	fi
	found=$((found + 1))
	kver_of[$s]=$k where_of[$s]=$where root_of[$s]=$root
	stage "$TAILFIX_ROOT" "$root"
	dir=$STAGED
	log "$k: headers from $([ "$where" = host ] && echo "this host" || echo "the $where chroot ($root)")"
	for m in $MODULES; do
		check "$k: $m builds with W=1, no warning" w1_build "$k" "$where" "$root" "$dir" "$m"
	done
	check "$k: tcp_dctcp_fixed built for its API: .cwnd_event_tx_start, AccECN load line" \
		api_variants "$k" "$where" "$root" "$dir"
	check "$k: DKMS build: tsq_probe, tcp_dctcp_fixed built, ena built or skipped, one make.log line each" \
		pkg_build "$k" "$where" "$root" "$dir"
done
[ "$found" -gt 0 ] || skip "no kernel headers of 5.10, 6.1, 6.12 or 7.x here"

# ---- mutants: the checks above must be able to fail ----
# mutant S NAME SED-SCRIPT FILE CHECK: build tcp_dctcp_fixed with FILE
# (relative to the package) edited by SED-SCRIPT for series S; CHECK (w1 or
# api) must fail on it.
mutant() {
	local s=$1 name=$2 script=$3 file=$4 what=$5 k=${kver_of[$1]:-} src dir

	if [ -z "$k" ]; then
		check_skip "mutant ($name) caught on $s.x" "no $s.x headers here"
		return
	fi
	src=$work/mutant-$what-$s
	mkdir -p "$src"
	tar -C "$TAILFIX_ROOT" -c dkms.conf Makefile scripts ena tsq_probe tcp_dctcp_fixed | tar -x -C "$src"
	sed -i "$script" "$src/$file"
	if cmp -s "$TAILFIX_ROOT/$file" "$src/$file"; then
		check "mutant ($name) changes $file" false
		return
	fi
	stage "$src" "${root_of[$s]}"
	dir=$STAGED
	case $what in
	w1) check "mutant ($name) fails the W=1 check on $k" \
		fails w1_build "$k" "${where_of[$s]}" "${root_of[$s]}" "$dir" tcp_dctcp_fixed ;;
	api) w1_build "$k" "${where_of[$s]}" "${root_of[$s]}" "$dir" tcp_dctcp_fixed >/dev/null
	    check "mutant ($name) fails the API variant check on $k" \
		fails api_variants "$k" "${where_of[$s]}" "${root_of[$s]}" "$dir" ;;
	esac
}
mutant 7 "pre-AccECN ECN test, TCP_ECN_OK" \
	's/^#ifdef TCP_ECN_MODE_RFC3168$/#ifdef TAILFIX_MUTANT_NEVER/' tcp_dctcp_fixed/tcp_dctcp_fixed.c w1
mutant 7 "no .cwnd_event_tx_start detection" \
	's/grep -sw cwnd_event_tx_start/grep -sw tailfix_mutant_never/' tcp_dctcp_fixed/Kbuild api
mutant 5.10 "signed DCTCPF_ALPHA_BITS in min()" \
	's/^#define DCTCPF_ALPHA_BITS\t10U$/#define DCTCPF_ALPHA_BITS\t10/' tcp_dctcp_fixed/tcp_dctcp_fixed.c w1
ksft_finish
