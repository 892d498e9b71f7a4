#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Packet-level peer for the dctcp_fixed tests (driven by
# dctcp_fixed_packets.sh).  Runs in the peer namespace, which has a veth but
# no IP address: the peer kernel drops what it receives, and this script plays
# the remote TCP through an AF_PACKET socket.  Frames are built with scapy
# before the timed part; received frames are parsed with struct and stamped
# by the kernel (SO_TIMESTAMPNS), so the parser's speed does not matter.
#
# The TCP under test runs in namespace --kns, started by this script:
#   recv-* cases: a server that reads, and answers each 'Q' byte with 100 bytes;
#   sender case:  a client that sends --req bytes and waits for 100 bytes.
#
# Cases (--case): delack (2a), ce-pattern (2b), trace (2c), sender (2d).
# Output: "# ..." diagnostics, "RESULT key=value ..." lines for the wrapper;
# exit 0 when every property held, 1 when one did not, 4 when unable to run.

import argparse
import os
import select
import socket
import statistics
import struct
import subprocess
import sys
import time

try:
    from scapy.all import Ether, IP, TCP, Raw  # noqa: E402
except ImportError:
    print('# SKIP python3 scapy not installed')
    sys.exit(4)

ETH_P_IP = 0x0800
SO_TIMESTAMPNS = 35
F_FIN, F_SYN, F_RST, F_PSH, F_ACK, F_URG, F_ECE, F_CWR = (1, 2, 4, 8, 16, 32,
                                                          64, 128)
ECT0, CE = 0x02, 0x03
SEG = 600
REPLY = 100


def log(*a):
    print('#', *a, flush=True)


class Pkt:
    __slots__ = ('ts', 'sport', 'seq', 'ack', 'flags', 'win', 'plen', 'tos')


class Peer:
    def __init__(self, a):
        self.a = a
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                               socket.htons(ETH_P_IP))
        self.s.bind((a.dev, ETH_P_IP))
        self.s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.s.setblocking(False)
        with open('/sys/class/net/%s/address' % a.dev) as f:
            self.mac = f.read().strip()
        self.kip = socket.inet_aton(a.kip)
        # ports: ours and the kernel's (learnt from its SYN when it connects)
        self.myport, self.kport = a.pport, a.kport
        self.snd_nxt = 0
        self.rcv_nxt = 0
        # ACK accounting (see account()): the greatest ACK from the kernel
        # and the window that came with it; what we sent, and when
        self.last_ack = None
        self.last_win = None
        self.sent = []
        self.dups = 0           # RFC 5681 duplicate ACKs: a failure
        self.stale = 0          # old ACK, window not opened: a failure too
        self.winupd = 0         # same ACK, window opened: legitimate
        self.repeats = 0        # same ACK, nothing of ours outstanding
        self.older = 0          # ACK below the greatest one: ignored
        self.retrans = 0
        self.hist = []

    # ---- frames -------------------------------------------------------------
    def frame(self, flags, payload=b'', tos=ECT0, seq=None, opts=None):
        if seq is None:
            seq = self.snd_nxt
        t = TCP(sport=self.myport, dport=self.kport, seq=seq,
                ack=self.rcv_nxt if flags & F_ACK else 0, flags=flags,
                window=65535, options=opts or [])
        p = Ether(src=self.mac, dst=self.a.kmac) / \
            IP(src=self.a.pip, dst=self.a.kip, tos=tos, flags='DF', ttl=64) / t
        if payload:
            p = p / Raw(payload)
        return bytes(p)

    def send(self, fr):
        t = time.time_ns()
        self.s.send(fr)
        ihl = (fr[14] & 0xf) * 4
        tot = struct.unpack('!H', fr[16:18])[0]
        seq, _, off, fl = struct.unpack('!IIBB', fr[14 + ihl + 4:14 + ihl + 14])
        plen = tot - ihl - (off >> 4) * 4
        self.note('>', t, seq, fl, plen)
        if fl & F_RST:
            return t
        end = (seq + plen + (1 if fl & (F_SYN | F_FIN) else 0)) & 0xffffffff
        if not self.sent or seq_lt(self.sent[-1][1], end):
            self.sent.append((t, end))
        return t

    def snd_max_at(self, ts):
        """The highest sequence number we had sent at time ts (ns)."""
        for t, end in reversed(self.sent):
            if t <= ts:
                return end
        return None

    def note(self, d, t, seq, fl, plen, ack=None, win=None):
        """Keep the last packets both ways, for the diagnostics."""
        self.hist.append((d, t, seq, fl, plen, ack, win))
        del self.hist[:-12]

    def dump(self, why):
        base = self.hist[0][1]
        log(why + '; last packets (> ours, < kernel; seq/ack relative):')
        for d, t, seq, fl, plen, ack, win in self.hist:
            flags = ''.join(c for b, c in ((F_SYN, 'S'), (F_FIN, 'F'),
                                           (F_RST, 'R'), (F_PSH, 'P'),
                                           (F_ECE, 'E'), (F_CWR, 'C'))
                            if fl & b)
            if d == '>':
                what = 'seq=%u len=%u' % (seq - self.iss, plen)
            else:
                what = 'seq=%u len=%u ack=%u win=%u' % (
                    seq - getattr(self, 'kiss', seq), plen,
                    ack - self.iss, win)
            log('  %8.3f ms %s %s %s' % ((t - base) / 1e6, d, what, flags))

    def data(self, payload, flags=F_ACK, tos=ECT0):
        fr = self.frame(flags, payload, tos)
        self.snd_nxt = (self.snd_nxt + len(payload)) & 0xffffffff
        return fr

    # ---- receive --------------------------------------------------------------
    def recv(self, deadline):
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.s], [], [], left)
            if not r:
                return None
            try:
                buf, anc, _, _ = self.s.recvmsg(2048, 64)
            except BlockingIOError:
                continue
            p = self.parse(buf)
            if p is None:
                continue
            p.ts = time.time_ns()
            for lvl, typ, d in anc:
                if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                    sec, ns = struct.unpack('qq', d[:16])
                    p.ts = sec * 1000000000 + ns
            self.account(p)
            return p

    def parse(self, b):
        if len(b) < 54 or b[23] != 6 or b[26:30] != self.kip:
            return None
        ihl = (b[14] & 0xf) * 4
        tot = struct.unpack('!H', b[16:18])[0]
        t = 14 + ihl
        sport, dport, seq, ack, off, fl, win = struct.unpack(
            '!HHIIBBH', b[t:t + 16])
        if dport != self.myport or \
                (self.kport is not None and sport != self.kport):
            return None
        p = Pkt()
        p.sport = sport
        p.tos, p.seq, p.ack, p.flags, p.win = b[15], seq, ack, fl, win
        p.plen = tot - ihl - (off >> 4) * 4
        return p

    def account(self, p):
        """Classify what the kernel sends.  A duplicate ACK (RFC 5681, 2):
        no data, no SYN/FIN, the same ACK number as the greatest so far and
        the same window, while we have data outstanding -- outstanding when
        the ACK arrived, so an ACK the kernel sent before our next segment
        reached it is not a duplicate of anything.  Counted separately:
          stale    the greatest ACK number again with a window whose right
                   edge did not move on, while we have data outstanding:
                   not a duplicate by the letter of RFC 5681 (the window
                   differs), but the same bug (an ACK for old data);
          winupd   the same ACK number, the window's right edge moved on
                   (the application read data): legitimate;
          repeats  the same ACK again with nothing of ours outstanding
                   (e.g. a delayed-ACK timer after a timing slip): no
                   sender can take it for a loss signal; diagnostic;
          older    an ACK number below the greatest one, e.g. the early ACK
                   of a CE run that left after a reply ACKing more: a
                   sender ignores it as an old ACK; diagnostic."""
        self.note('<', p.ts, p.seq, p.flags, p.plen, p.ack, p.win)
        if p.flags & (F_SYN | F_RST):
            return
        if p.plen:
            if seq_lt(p.seq, self.rcv_nxt):
                self.retrans += 1
            end = (p.seq + p.plen) & 0xffffffff
            if seq_lt(self.rcv_nxt, end):
                self.rcv_nxt = end
        elif not p.flags & F_FIN and self.last_ack is not None and \
                not seq_lt(self.last_ack, p.ack):
            snd_max = self.snd_max_at(p.ts)
            outstanding = snd_max is not None and seq_lt(p.ack, snd_max)
            opened = seq_lt((self.last_ack + self.last_win) & 0xffffffff,
                            (p.ack + p.win) & 0xffffffff)
            what = 'ack=%u win=%u (previous ACK: ack=%u win=%u)' % (
                p.ack - self.iss, p.win, self.last_ack - self.iss,
                self.last_win)
            if p.ack != self.last_ack:
                self.older += 1
                self.dump('ACK below an earlier one: ' + what)
            elif opened:
                self.winupd += 1
                self.dump('window update from the kernel: ' + what)
            elif not outstanding:
                self.repeats += 1
                self.dump('repeated ACK, nothing of ours outstanding: ' + what)
            elif p.win == self.last_win:
                self.dups += 1
                self.dump('duplicate ACK from the kernel: ' + what)
            else:
                self.stale += 1
                self.dump('ACK for old data, window not opened: ' + what)
        if self.last_ack is None or seq_lt(self.last_ack, p.ack):
            self.last_ack, self.last_win = p.ack, p.win
        elif p.ack == self.last_ack:
            self.last_win = p.win

    def bad_acks(self):
        return self.dups + self.stale

    def wait(self, cond, timeout, what):
        deadline = time.monotonic() + timeout
        got = []
        while True:
            p = self.recv(deadline)
            if p is None:
                raise Timeout(what)
            got.append(p)
            if cond(p):
                return got

    def ack_now(self):
        self.send(self.frame(F_ACK))


class Timeout(Exception):
    pass


def seq_lt(a, b):
    return ((a - b) & 0xffffffff) > 0x7fffffff


# ---- the TCP under test --------------------------------------------------------

APP = r'''
import socket, sys
mode, cc, port, arg = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def setcc(s):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
if mode == 'server':
    l = socket.socket(); setcc(l)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(('0.0.0.0', port)); l.listen(1)
    print('ready', flush=True)
    c, _ = l.accept()
    print('cc', c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 32)
          .rstrip(b'\0').decode(), flush=True)
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            for _ in range(d.count(b'Q')):
                c.sendall(b'R' * 100)
    except OSError:
        pass
else:
    host, req, rounds = arg.split(':')
    c = socket.socket(); setcc(c)
    print('ready', flush=True)
    c.connect((host, port))
    for _ in range(int(rounds)):
        c.sendall(b'q' * int(req))
        got = 0
        while got < 100:
            d = c.recv(100 - got)
            if not d:
                sys.exit(0)
            got += len(d)
    print('done', flush=True)
    c.recv(1)
'''


def start_app(a, mode, arg='-'):
    p = subprocess.Popen(['ip', 'netns', 'exec', a.kns, sys.executable, '-c',
                          APP, mode, a.cc, str(a.kport), arg],
                         stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != 'ready':
        raise SystemExit('# kernel-side app did not start')
    return p


# ---- receiver cases: the kernel receives, the peer sends ---------------------

def connect(pe):
    a = pe.a
    pe.iss = pe.snd_nxt = 1000000
    syn = pe.frame(F_SYN | F_ECE | F_CWR, tos=0, opts=[('MSS', 1460)])
    pe.snd_nxt += 1
    pe.send(syn)
    got = pe.wait(lambda p: p.flags & F_SYN and p.flags & F_ACK, 5,
                  'SYN-ACK')
    sa = got[-1]
    if not sa.flags & F_ECE:
        log('kernel did not negotiate ECN on its SYN-ACK')
        return False
    pe.rcv_nxt = (sa.seq + 1) & 0xffffffff
    pe.kiss = sa.seq
    pe.ack_now()
    return True


def reply_round(pe, segs=(b'Q',), tos=ECT0):
    """A request that ends with 'Q': the kernel answers with data, which puts
    it into ping-pong (delayed-ACK) mode.  Waits until the request is ACKed
    and the reply is in, then ACKs the reply.  Returns True when the ACK of
    the request left on the reply, as it does in ping-pong mode."""
    for body in segs:
        pe.send(pe.data(body.rjust(SEG, b'd'), tos=tos))
    end = pe.snd_nxt
    want = (pe.rcv_nxt + REPLY) & 0xffffffff
    got = pe.wait(lambda p: not seq_lt(p.ack, end) and
                  not seq_lt(pe.rcv_nxt, want), 5, 'reply')
    pe.ack_now()
    return not any(not p.plen and not seq_lt(p.ack, end) for p in got)


def pingpong(pe, tries=4):
    """Request/response rounds until one has its ACK piggybacked on the
    reply.  A round whose request was ACKed alone (a delayed-ACK timer
    that fired while the application was slow under emulation, which also
    ends ping-pong mode) does not count.  Returns the rounds it took."""
    for i in range(1, tries + 1):
        if reply_round(pe):
            return i
    log('no request ACKed on its reply in %d rounds' % tries)
    return tries


def timed_segment(pe, flags=F_ACK, tos=ECT0, timeout=3.0):
    """Send one 600-byte segment without 'Q'; return (delay_ms, ack pkt)."""
    fr = pe.data(b'd' * SEG, flags=flags, tos=tos)
    t0 = pe.send(fr)
    got = pe.wait(lambda p: not seq_lt(p.ack, pe.snd_nxt), timeout,
                  'ACK of the timed segment')
    return (got[-1].ts - t0) / 1e6, got[-1]


def waited_like_delack(delays, base_median):
    """How many ACK delays look like a delayed ACK of this run."""
    return sum(1 for d in delays if d >= 0.5 * base_median)


def stall_allowance(delays):
    """Under emulation one trial in four or more may be stalled by the
    emulator itself (DESIGN.md: up to 32 ms with no fault at all); a kernel
    that does not ACK CWR-marked data at once delays every trial."""
    return 1 if len(delays) >= 4 else 0


def case_delack(pe, n):
    """The same 600-byte segment without PSH, once plain, once with CWR,
    each right after a request/response round that put the kernel into
    ping-pong mode: the plain one waits for the delayed-ACK timer, the
    CWR-marked one is ACKed at once."""
    base, cwr, extra = [], [], 0
    for i in range(n):
        extra += pingpong(pe) - 1
        d, _ = timed_segment(pe)
        base.append(d)
        extra += pingpong(pe) - 1
        d, _ = timed_segment(pe, flags=F_ACK | F_CWR)
        cwr.append(d)
    mb, mc = statistics.median(base), statistics.median(cwr)
    log('no CWR (delayed-ACK baseline) ms: ' + ' '.join('%.1f' % x for x in base))
    log('with CWR ms:                      ' + ' '.join('%.1f' % x for x in cwr))
    print('RESULT base_med=%.2f cwr_med=%.2f cwr_max=%.2f base_min=%.2f '
          'extra_rounds=%d' % (mb, mc, max(cwr), min(base), extra))
    # Medians: one baseline trial ACKed early (ping-pong mode lost on a
    # timing slip) must not decide the run; the CWR trials must be well below
    # the typical delayed ACK, all but one emulator stall at most.
    ok = waited_like_delack(cwr, mb) <= stall_allowance(cwr) and mc < 0.25 * mb
    if not ok:
        log('CWR-marked data was not ACKed clearly faster than the '
            'delayed-ACK baseline of this run')
    return ok


def case_ce_pattern(pe, pattern, n):
    """Segments 1..len(pattern) back to back, CE where pattern has 1.  Every
    ACK must cover a run of equal CE state and carry ECE equal to it, and
    every CE change must start a new ACK."""
    ok = True
    nseg = len(pattern)
    for trial in range(n):
        reply_round(pe)
        start = pe.snd_nxt
        frames = [pe.data(b'd' * SEG, tos=CE if c else ECT0) for c in pattern]
        end = pe.snd_nxt
        for fr in frames:
            pe.send(fr)
        acks = pe.wait(lambda p: not seq_lt(p.ack, end), 5,
                       'ACK of the last segment')
        covered = 0
        bounds = set()
        trace = []
        for p in acks:
            if p.plen or p.flags & F_SYN:
                continue
            k = ((p.ack - start) & 0xffffffff) // SEG
            if (p.ack - start) % SEG or k > nseg:
                log('ACK %u not on a segment boundary' % (p.ack - start))
                ok = False
                continue
            ece = 1 if p.flags & F_ECE else 0
            trace.append('%d%s' % (k, 'E' if ece else ''))
            if k <= covered:
                continue
            run = pattern[covered:k]
            if any(c != ece for c in run):
                log('trial %d: ACK of segments %d..%d has ECE=%d, CE was %s' %
                    (trial, covered + 1, k, ece, run))
                ok = False
            bounds.add(k)
            covered = k
        changes = {i for i in range(1, nseg) if pattern[i] != pattern[i - 1]}
        missing = sorted(changes - bounds)
        log('trial %d: ACKs (segments covered, E = ECE): %s' %
            (trial, ' '.join(trace)))
        if missing:
            log('trial %d: no ACK ended exactly at CE change(s) after '
                'segment(s) %s' % (trial, missing))
            ok = False
    return ok


def case_trace(pe, n):
    """The thread's sequence, and the stale-shadow sequence."""
    delays, base = [], []
    ok = True
    for i in range(n):
        # baseline of this run: a plain segment in ping-pong mode
        pingpong(pe)
        d, _ = timed_segment(pe)
        base.append(d)
        # request whose last segment is CE, the reply carries ECE, then
        # the next request's first segment with CWR
        pe.send(pe.data(b'd' * SEG, tos=ECT0))
        pe.send(pe.data(b'Q'.rjust(SEG, b'd'), tos=CE))
        want = (pe.rcv_nxt + REPLY) & 0xffffffff
        got = pe.wait(lambda p: not seq_lt(pe.rcv_nxt, want) and
                      not seq_lt(p.ack, pe.snd_nxt), 5, 'reply with ECE')
        if not any(p.plen and p.flags & F_ECE for p in got):
            log('trial %d: the reply after a CE-marked request carried no '
                'ECE' % i)
            ok = False
        pe.ack_now()
        d, p = timed_segment(pe, flags=F_ACK | F_CWR)
        delays.append(d)
        if p.flags & F_ECE:
            log('trial %d: ACK of the CWR segment still echoes ECE' % i)
            ok = False
        # stale-shadow sequence: the ACK of A leaves on the reply, then a
        # CE segment B must not make the kernel ACK A again
        pingpong(pe)
        d2, p = timed_segment(pe, tos=CE)
        if not p.flags & F_ECE:
            log('trial %d: ACK of the CE segment has no ECE' % i)
            ok = False
        d3, p = timed_segment(pe, flags=F_ACK | F_CWR)
        delays.append(d3)
    mb = statistics.median(base)
    log('delayed-ACK baseline ms: ' + ' '.join('%.1f' % x for x in base))
    log('CWR segment ACK ms:      ' + ' '.join('%.1f' % x for x in delays))
    print('RESULT base_med=%.2f cwr_max=%.2f dups=%d stale=%d retrans=%d '
          'winupd=%d repeats=%d older=%d' % (
              mb, max(delays), pe.dups, pe.stale, pe.retrans, pe.winupd,
              pe.repeats, pe.older))
    if waited_like_delack(delays, mb) > stall_allowance(delays) or \
            statistics.median(delays) >= 0.25 * mb:
        log('CWR segments waited like delayed ACKs')
        ok = False
    if pe.bad_acks() or pe.retrans:
        log('duplicate ACKs: %d, ACKs for old data: %d, retransmissions by '
            'the kernel: %d' % (pe.dups, pe.stale, pe.retrans))
        ok = False
    return ok


# ---- sender case: the kernel sends requests, the peer answers with ECE -------

def case_sender(pe, rounds, req, mss):
    got = pe.wait(lambda p: p.flags & F_SYN, 5, 'SYN from the kernel')
    syn = got[-1]
    pe.kport = syn.sport
    if not (syn.flags & F_ECE and syn.flags & F_CWR):
        log('kernel SYN did not ask for ECN')
        return None
    pe.rcv_nxt = (syn.seq + 1) & 0xffffffff
    pe.kiss = syn.seq
    pe.iss = pe.snd_nxt = 5000000
    t0 = pe.send(pe.frame(F_SYN | F_ACK | F_ECE, tos=0,
                          opts=[('MSS', mss)]))
    pe.snd_nxt += 1
    got = pe.wait(lambda p: p.flags & F_ACK and not p.flags & F_SYN, 5,
                  'handshake ACK')
    rtt = (got[-1].ts - t0) / 1e9
    # well below the 200 ms minimum RTO, well above the time a flight takes
    quiet = min(0.15, max(0.05, 20 * rtt))
    flights = []

    def take_request(count_first):
        """Receive one request of req bytes.  With count_first, count the
        segments that arrive before we send anything (the first flight).
        Every segment but the last is ACKed by a pure ACK: the last one is
        ACKed by the reply, as an RPC server does."""
        start = pe.rcv_nxt
        done = lambda: ((pe.rcv_nxt - start) & 0xffffffff) >= req
        segs = []
        counted = None
        if count_first:
            while not done():
                p = pe.recv(time.monotonic() + quiet)
                if p is None:
                    break
                if p.plen and not seq_lt(p.seq, start):
                    segs.append(p)
            counted = len(segs)
            if not done():
                pe.ack_now()
        while not done():
            p = pe.recv(time.monotonic() + 5)
            if p is None:
                raise Timeout('request data')
            if p.plen:
                segs.append(p)
                if not done():
                    pe.ack_now()
        return segs, counted

    take_request(False)
    for r in range(rounds):
        # the reply ACKs the last request segment and echoes ECE
        pe.send(pe.data(b'R' * REPLY, flags=F_ACK | F_PSH | F_ECE))
        segs, counted = take_request(True)
        cwr = bool(segs and segs[0].flags & F_CWR)
        flights.append(counted)
        log('round %d: %d segment(s) before any ACK, first has CWR: %s' %
            (r, counted, cwr))
    pe.send(pe.data(b'R' * REPLY, flags=F_ACK | F_PSH))
    # reset the connection: a kernel socket left sending FINs to a peer that
    # is gone would hold the module for minutes
    pe.send(pe.frame(F_RST | F_ACK))
    return flights


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--case', required=True)
    ap.add_argument('--dev', default='veth0')
    ap.add_argument('--kns', required=True)
    ap.add_argument('--kip', required=True)
    ap.add_argument('--kmac', required=True)
    ap.add_argument('--pip', required=True)
    ap.add_argument('--kport', type=int, default=5001)
    ap.add_argument('--pport', type=int, default=40001)
    ap.add_argument('--cc', default='dctcp_fixed')
    ap.add_argument('--trials', type=int, default=5)
    ap.add_argument('--pattern', default='0011001000')
    ap.add_argument('--req', type=int, default=8000)
    ap.add_argument('--mss', type=int, default=1000)
    a = ap.parse_args()

    pe = Peer(a)
    if a.case == 'sender':
        # the kernel connects to us: our port is --kport, its port ephemeral
        pe.myport, pe.kport = a.kport, None
        app = start_app(a, 'client', '%s:%d:%d' % (a.pip, a.req,
                                                   a.trials + 1))
        try:
            flights = case_sender(pe, a.trials, a.req, a.mss)
        except Timeout as e:
            log('timed out waiting for: %s' % e)
            flights = None
        finally:
            if pe.kport is not None:
                pe.send(pe.frame(F_RST | F_ACK))
            app.kill()
        if flights is None:
            return 1
        print('RESULT cc=%s flights=%s min=%d' %
              (a.cc, ','.join(str(x) for x in flights), min(flights)))
        return 0

    app = start_app(a, 'server')
    try:
        if not connect(pe):
            return 1
        line = app.stdout.readline().split()
        log('kernel socket congestion control: %s' % ' '.join(line[1:]))
        if a.case == 'delack':
            ok = case_delack(pe, a.trials)
        elif a.case == 'ce-pattern':
            ok = case_ce_pattern(pe, [int(c) for c in a.pattern], a.trials)
        elif a.case == 'trace':
            ok = case_trace(pe, a.trials)
        else:
            raise SystemExit('unknown case')
        if pe.bad_acks() and a.case != 'trace':
            log('%d duplicate ACK(s), %d ACK(s) for old data seen' %
                (pe.dups, pe.stale))
            ok = False
        if pe.winupd or pe.repeats or pe.older:
            log('not counted: %d window update(s), %d repeated ACK(s) with '
                'nothing outstanding, %d ACK(s) below an earlier one' %
                (pe.winupd, pe.repeats, pe.older))
    except Timeout as e:
        log('timed out waiting for: %s' % e)
        ok = False
    finally:
        # RST, so the kernel socket does not linger sending FINs to nobody
        pe.send(pe.frame(F_RST | F_ACK))
        app.kill()
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
