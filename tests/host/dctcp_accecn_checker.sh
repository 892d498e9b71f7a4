#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The ACE checker of dctcp_fixed_accecn.sh (dctcp_fixed_accecn.py pcap) on
# captures written here, so that its verdict can be seen to fail: an ACK
# whose ACE counts the CE packets the receiver had passes, also while a
# CE packet is still in flight to it; an ACK whose ACE misses a CE packet
# it acknowledges, or counts one the capture never carried, is counted
# wrong, and the first of them is named.
. "$(dirname "$0")/../lib.sh"
require_cmd python3
tmp=$(mktemp -d)
on_exit "rm -rf $tmp"

# capture NAME SPEC: a pcap in $tmp/NAME.pcap of the flow SPEC (one packet a
# word: dN the next 100-byte data segment with ECN codepoint N, 3 for CE;
# aN an ACK of everything sent so far, ACE N; lN an ACK of all but the last
# segment, ACE N), after the AccECN handshake.
capture() {
	python3 - "$tmp/$1.pcap" "$2" <<'EOF'
import struct
import sys

SND, RCV, SPORT, DPORT = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), 40000, 5001


def pkt(src, dst, sport, dport, seq, ack, flags, ace, ecn, plen):
    # the ACE field: AE is the low bit of the data-offset byte, CWR and
    # ECE the top bits of the flags
    tcp = struct.pack('!HHIIBBHHH', sport, dport, seq, ack,
                      5 << 4 | ace >> 2, (ace & 3) << 6 | flags, 65535, 0, 0)
    tot = 20 + len(tcp) + plen
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, ecn, tot, 0, 0, 64, 6, 0, src, dst)
    frame = b'\0' * 12 + b'\x08\x00' + ip + tcp + b'\0' * plen
    return struct.pack('<IIII', 0, 0, len(frame), len(frame)) + frame


out = [struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1)]
out.append(pkt(SND, RCV, SPORT, DPORT, 0, 0, 0x02, 7, 0, 0))
out.append(pkt(RCV, SND, DPORT, SPORT, 0, 1, 0x12, 4, 0, 0))
seq = 1
for word in sys.argv[2].split():
    kind, n = word[0], int(word[1:])
    if kind == 'd':
        out.append(pkt(SND, RCV, SPORT, DPORT, seq, 1, 0x10, 5, n, 100))
        seq += 100
    else:
        ack = seq if kind == 'a' else seq - 100
        out.append(pkt(RCV, SND, DPORT, SPORT, 1, ack, 0x10, n, 0, 0))
with open(sys.argv[1], 'wb') as f:
    f.write(b''.join(out))
EOF
}
# judge NAME: the checker's RESULT line for $tmp/NAME.pcap
judge() {
	(cd "$TAILFIX_ROOT/tests" && python3 dctcp_fixed_accecn.py pcap "$tmp/$1.pcap" \
		--rcv 10.0.0.2 --port 5001) >"$tmp/$1.out" 2>&1
	log "$1: $(cat "$tmp/$1.out")"
}
# has NAME KEY VALUE: the RESULT line of NAME has KEY=VALUE
has() { grep -q "^RESULT .* $2=$3\( \|$\)" "$tmp/$1.out"; }

# ACE starts at 5 and counts every CE packet in; 8 wraps to 0.
capture exact "d3 a6 d2 a6 d3 d3 a0 d2 a0"
capture inflight "d3 l5 a6 d3 d3 l7 a0"
capture missed "d3 a6 d3 a6 d2 a7"
capture extra "d2 a6 d3 a7"
for c in exact inflight missed extra; do
	judge $c
done
check "an exact ACE on every ACK, across the wrap: nothing wrong" \
	eval 'has exact ace_checked 4 && has exact ace_bad 0'
check "an ACK that does not yet cover a CE packet in flight may leave it out" \
	eval 'has inflight ace_checked 4 && has inflight ace_bad 0'
check "checker: an ACE that misses an acknowledged CE packet is wrong, and the first is named (ACK 2, ACE 6, CE 2 to 2)" \
	eval 'has missed ace_bad 1 && has missed bad_pos 2 && has missed bad_ace 6 && has missed bad_lo 2 && has missed bad_hi 2'
check "checker: an ACE counting a CE packet the capture never carried is wrong" \
	eval 'has extra ace_bad 2 && has extra bad_pos 1'
check "the CE segments and the ACE changes counted" \
	eval 'has exact ce 3 && has exact ace_changes 1'
ksft_finish
