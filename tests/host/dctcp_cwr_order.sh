#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dctcp_fixed tells a CWR entered on an ECE ACK from one entered for another
# reason by comparing the tcp_mstamp its in_ack_event() stamped with the
# socket's tcp_mstamp when the core asks for ssthresh (dctcpf_on_ece_ack()).
# That holds only while the core, for each kernel, does things in this
# order, checked here in tcp_input.c of every kernel source at hand (5.10,
# 6.1, 6.12, 7.3):
#   1. tcp_enter_cwr() is called from tcp_try_to_open() only (reached from
#      tcp_fastretrans_alert(): the ECE reaction);
#   2. in tcp_ack(), each tcp_fastretrans_alert() of a new ACK (the main
#      path and no_queue; old_ack carries no ECE flag) comes after a
#      tcp_in_ack_event() of the same path;
#   3. tcp_ack() never refreshes tcp_mstamp;
#   4. tcp_rcv_established() refreshes tcp_mstamp before it calls tcp_ack().
# A kernel that reorders any of them fails here.  Shown failing on copies
# of a tcp_input.c with in_ack_event moved after the alert, with a refresh
# added to tcp_ack(), and with a second caller of tcp_enter_cwr().
. "$(dirname "$0")/../lib.sh"
require_cmd tar awk
CACHE=${TAILFIX_CACHE:-/var/cache/ena-tcp-tailfix}/linux-source
TMP=$(mktemp -d)
on_exit rm -rf "$TMP"

# body FILE FUNC-REGEX: the function's lines, from its definition to the
# closing brace in column 0.
body() { awk -v re="$2" '$0 ~ re { on = 1 } on { print } on && /^}/ { exit }' "$1"; }

cwr_callers_ok() {
	local bad

	bad=$(awk '/^[a-z].*\(/ && !/;$/ { fn = $0 } /[^a-z_]tcp_enter_cwr\(sk\);/ && fn !~ /tcp_try_to_open\(/ { print NR": "fn }' "$1")
	[ -z "$bad" ] || { log "tcp_enter_cwr() called outside tcp_try_to_open(): $bad"; return 1; }
	grep -q 'tcp_enter_cwr(sk);' "$1" || { log "no call of tcp_enter_cwr()"; return 1; }
}
event_before_alert() {
	local out

	# A labelled section without an event of its own is fine when every
	# goto to it comes after the path's first event.
	out=$(body "$1" '^static int tcp_ack\(struct sock \*sk' | awk '
		/^[a-z_]+:$/ { label = substr($1, 1, length($1) - 1); seen = 0; next }
		/tcp_in_ack_event\(/ { seen = 1; if (!first_event) first_event = NR }
		/goto [a-z_]+;/ { g = $0; sub(/.*goto /, "", g); sub(/;.*/, "", g)
			if (!first_event && !(g in early)) early[g] = NR }
		/tcp_fastretrans_alert\(/ { alerts++
			if (label != "old_ack" && !seen && (label == "" || (label in early)))
				print "line " NR " (" (label ? label : "main path") ")" }
		END { if (!alerts) print "no tcp_fastretrans_alert() in tcp_ack()" }')
	[ -z "$out" ] || { log "tcp_fastretrans_alert() before tcp_in_ack_event(): $out"; return 1; }
}
no_refresh_in_ack() {
	! body "$1" '^static int tcp_ack\(struct sock \*sk' | grep -qE 'tcp_mstamp_refresh(_inline)?\(' ||
		{ log "tcp_ack() refreshes tcp_mstamp"; return 1; }
}
refresh_before_ack() {
	body "$1" '^void tcp_rcv_established\(' | awk '
		/tcp_mstamp_refresh(_inline)?\(/ && !ack { ok = 1 } /[^a-z_]tcp_ack\(/ { ack = 1 }
		END { exit !(ok && ack) }' || { log "tcp_rcv_established() does not refresh tcp_mstamp before tcp_ack()"; return 1; }
}
judge() {	# judge LABEL FILE
	check "$1: tcp_enter_cwr() only from tcp_try_to_open()" cwr_callers_ok "$2"
	check "$1: tcp_ack() runs tcp_in_ack_event() before tcp_fastretrans_alert()" event_before_alert "$2"
	check "$1: tcp_ack() does not refresh tcp_mstamp" no_refresh_in_ack "$2"
	check "$1: tcp_rcv_established() refreshes tcp_mstamp before tcp_ack()" refresh_before_ack "$2"
}

# The sources, unpacked side by side (each decompresses a whole tarball).
n=0
for s in 5.10 6.1 6.12 7.3; do
	t=/usr/src/linux-source-$s.tar.xz
	[ -r "$t" ] || t=$CACHE/linux-source-$s.tar.xz
	[ -r "$t" ] || { log "linux-source-$s: no tarball (/usr/src or $CACHE): not checked"; continue; }
	mkdir -p "$TMP/$s"
	tar -xJf "$t" -C "$TMP/$s" --wildcards '*/net/ipv4/tcp_input.c' &
	n=$((n + 1))
done
wait
[ "$n" -gt 0 ] || skip "no linux-source tarball here (scripts/deps.sh check installs 6.1 and 6.12)"
first=
for s in 5.10 6.1 6.12 7.3; do
	f=$(ls "$TMP/$s"/*/net/ipv4/tcp_input.c 2>/dev/null)
	[ -n "$f" ] || continue
	judge "linux-source-$s" "$f"
	# (the mutants edit 6.1's, or the first one found)
	[ "$s" = 6.1 ] && first=$f
	first=${first:-$f}
done

m=$TMP/mutant.c
# in_ack_event after the main path's alert block
awk '/^static int tcp_ack\(struct sock \*sk/ { in_ack = 1 }
	in_ack && !moved && /^\t+tcp_in_ack_event\(sk, (flag|ack_ev_flags)\);$/ { held = $0; next }
	{ print }
	held != "" && !moved && /^\t}$/ && saw_alert { print held; moved = 1 }
	in_ack && /tcp_fastretrans_alert\(/ { saw_alert = 1 }' "$first" >"$m"
check "mutant with tcp_in_ack_event() after the alert: the order check fails" fails event_before_alert "$m"
sed '/^static int tcp_ack(struct sock \*sk/,/^}/ s/^\(\t\+\)\(tcp_in_ack_event(sk, [a-z_]*);\)$/\1tcp_mstamp_refresh(tp);\n\1\2/' "$first" >"$m"
check "mutant refreshing tcp_mstamp in tcp_ack(): the refresh check fails" fails no_refresh_in_ack "$m"
sed '/^static int tcp_ack(struct sock \*sk/,/^}/ s/^\(\t\+\)\(tcp_in_ack_event(sk, [a-z_]*);\)$/\1\2\n\1if (flag \& FLAG_ECE)\n\1\ttcp_enter_cwr(sk);/' "$first" >"$m"
check "mutant entering CWR in tcp_ack(): the caller check fails" fails cwr_callers_ok "$m"
ksft_finish
