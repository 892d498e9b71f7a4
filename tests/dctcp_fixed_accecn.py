#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Helper of dctcp_fixed_accecn.sh.  Three roles:
#   server --port P --ready F --cc CC --result R
#       accept one connection, read until EOF, answer with the byte count,
#       write "RESULT role=rcv ..." (the receiving socket's TCP_INFO) to R
#   client --server H --port P --cc CC --secs S --samples OUT --result R
#       stream for S seconds, sampling TCP_INFO and TCP_CC_INFO into OUT in
#       dctcp_fixed_alpha.py's format (its "analyse" judges them), then
#       half-close, wait for the byte count and write "RESULT role=snd ..."
#   pcap FILE --rcv IP --port P
#       the receiver's side of a capture (tcpdump -w on its link): the
#       handshake's ACE values (a SYN asking for AccECN has 7, an AccECN
#       SYN-ACK 2, 3, 4 or 6), how many of the segments that change the ECN
#       codepoint (edges), and of the others, an ACK acknowledges exactly,
#       and whether every ACK's ACE field counts the CE-marked packets the
#       receiver had by then; prints "RESULT role=pcap ...", exit 0.
# TCP_INFO offsets are those of struct tcp_info with the AccECN fields
# (7.x uapi): tcpi_received_ce at 248, the ECN-mode bit field at 276.

import argparse
import socket
import struct
import sys

from dctcp_fixed_alpha import TCP_INFO, setcc, stream_sampled
from rpc_common import listen, role_parser

TI_LEN = 280


def tcp_info(s):
    """The AccECN-era fields of s's TCP_INFO, as a dict (None where the
    kernel's tcp_info is too short to have them)."""
    ti = s.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TI_LEN)
    d = {'ti_len': len(ti), 'options': ti[5]}
    d['ssthresh'], d['cwnd'] = struct.unpack_from('II', ti, 76)
    d['delivered'], d['delivered_ce'] = struct.unpack_from('II', ti, 192)
    d['total_rto'] = struct.unpack_from('H', ti, 240)[0] if len(ti) >= 242 else 0
    if len(ti) >= TI_LEN:
        d['received_ce'] = struct.unpack_from('I', ti, 248)[0]
        d['ecn_mode'] = struct.unpack_from('I', ti, 276)[0] & 3
    else:
        d['received_ce'] = d['ecn_mode'] = None
    return d


def result(path, role, fields):
    line = 'RESULT role=%s %s\n' % (role, ' '.join(
        '%s=%s' % (k, 'none' if v is None else v) for k, v in fields.items()))
    with open(path, 'w') as f:
        f.write(line)


def server(a):
    ls = listen(a, 1, a.cc)
    c, _ = ls.accept()
    n = 0
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        n += len(b)
    d = tcp_info(c)
    c.sendall(struct.pack('!Q', n))
    c.close()
    result(a.result, 'rcv', dict(bytes=n, **d))


def client(a):
    s = socket.socket()
    setcc(s, a.cc)
    s.connect((a.server, a.port))
    sent = stream_sampled(s, a.secs, a.samples)
    s.shutdown(socket.SHUT_WR)
    got = b''
    while len(got) < 8:
        b = s.recv(8 - len(got))
        if not b:
            break
        got += b
    d = tcp_info(s)
    s.close()
    rcvd = struct.unpack('!Q', got)[0] if len(got) == 8 else -1
    result(a.result, 'snd', dict(sent=sent, delivered_bytes=rcvd, **d))
    return 0 if rcvd == sent else 1


def packets(path):
    """(inbound, seq, end, ecn, ace, ack) of each TCP packet of an
    Ethernet/IPv4 pcap, in capture order."""
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack_from('<I', data, 0)[0]
    e = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(e + 'I', data, off + 8)[0]
        p = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(p) < 14 + 20 + 20 or p[12:14] != b'\x08\x00' or p[23] != 6:
            continue
        ip = p[14:]
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack_from('!H', ip, 2)[0]
        tcp = ip[ihl:]
        if len(tcp) < 14:
            continue
        sport, dport, seq, ack = struct.unpack_from('!HHII', tcp, 0)
        doff = (tcp[12] >> 4) * 4
        flags = tcp[13]
        ace = (tcp[12] & 1) << 2 | (flags >> 6 & 2) | (flags >> 6 & 1)
        plen = tot - ihl - doff
        yield (ip[16:20], ip[12:16], sport, dport, seq, plen, ip[1] & 3,
               ace, ack, flags)


def after(a, b):
    """Sequence number a is after b (mod 2^32)."""
    return 0 < (a - b) & 0xffffffff < 0x80000000


def pcap(argv):
    p = argparse.ArgumentParser()
    p.add_argument('file')
    p.add_argument('--rcv', required=True)
    p.add_argument('--port', type=int, required=True)
    a = p.parse_args(argv)
    rcv = socket.inet_aton(a.rcv)
    n = dict(data=0, ce=0, edges=0, edges_now=0, plain=0, plain_now=0,
             acks=0, ace_changes=0, ace_checked=0, ace_bad=0,
             syn_ace=-1, synack_ace=-1)
    prev_ecn = prev_ace = None
    segs = []               # (end, is_edge) of each data segment in
    acked = set()           # every ACK number the receiver sent
    ce_in = 0               # CE-marked packets in so far
    ce_open = []            # ends of those the receiver has not ACKed yet
    for dst, src, sport, dport, seq, plen, ecn, ace, ack, flags in \
            packets(a.file):
        if flags & 0x02:    # SYN, SYN-ACK: the handshake's own ACE rules
            if dst == rcv and dport == a.port and not flags & 0x10:
                n['syn_ace'] = ace
            elif src == rcv and sport == a.port and flags & 0x10:
                n['synack_ace'] = ace
            continue
        if dst == rcv and dport == a.port:
            end = (seq + max(plen, 0)) & 0xffffffff
            if ecn == 3:    # the ACE counter counts every packet
                ce_in += 1
                ce_open.append(end)
            if plen <= 0:
                continue
            edge = prev_ecn is not None and ecn != prev_ecn
            prev_ecn = ecn
            n['data'] += 1
            n['ce'] += ecn == 3
            n['edges'] += edge
            segs.append((end, edge))
        elif src == rcv and sport == a.port:
            n['acks'] += 1
            acked.add(ack)
            # The receiver counted at least the CE packets this ACK
            # covers and at most all it has been given: ACE is
            # 5 + that count, mod 8 (checked while the range is < 8).
            ce_open = [e for e in ce_open if after(e, ack)]
            lo, hi = ce_in - len(ce_open), ce_in
            if prev_ace is not None:
                n['ace_changes'] += ace != prev_ace
            prev_ace = ace
            if hi - lo < 7:
                n['ace_checked'] += 1
                bad = not any((5 + c) % 8 == ace for c in range(lo, hi + 1))
                n['ace_bad'] += bad
                if bad and 'bad_ack' not in n:
                    # the first wrong one, to look at: its ACK number, ACE
                    # and the CE counts the capture allows
                    n.update(bad_ack=ack, bad_ace=ace, bad_lo=lo, bad_hi=hi,
                             bad_pos=n['acks'])
    # A segment is ACKed at once when an ACK acknowledges exactly its end
    # (a delayed ACK covers two or more): by sequence, not by capture
    # order, which the receiver's socket backlog reorders.
    for end, edge in segs:
        kind = 'edges' if edge else 'plain'
        n['plain'] += not edge
        n[kind + '_now'] += end in acked
    print('RESULT role=pcap ' + ' '.join('%s=%d' % kv for kv in n.items()))
    return 0


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == 'pcap':
        sys.exit(pcap(sys.argv[2:]))
    rp = role_parser('dctcp_fixed_accecn.sh helper')
    rp.add_argument('--cc', required=True)
    rp.add_argument('--secs', type=float, default=6)
    rp.add_argument('--samples')
    rp.add_argument('--result', required=True)
    args = rp.parse_args()
    sys.exit(server(args) if args.role == 'server' else client(args))
