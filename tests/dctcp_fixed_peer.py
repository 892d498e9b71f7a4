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
# Cases (--case): delack (2a), ce-pattern (2b), trace (2c), sender (2d),
# ece-cwnd (the kernel sends; ECE on the ACKs of --ece-pattern must never
# raise its cwnd or ssthresh), delayed-rpc (bench/dctcp_delack.sh: the
# peer is an RPC server whose receiver delays ACKs the classic way; the
# kernel's client times each RPC).
#
# The kernel's own state is read without timing guesses: its delayed-ACK
# counter (TcpExtDelayedACKs, /proc/PID/net/netstat of the kernel-side app,
# i.e. the receiver's namespace) before and after each timed segment, and
# the sender's cwnd/ssthresh/ca_state with an inet_diag (sock_diag) query
# from a netlink socket opened in the kernel's namespace.
#
# Output: "# ..." diagnostics, "RESULT key=value ..." lines for the wrapper;
# exit 0 when every property held, 1 when one did not, 4 when unable to run.

import argparse
import ctypes
import os
import select
import socket
import statistics
import struct
import subprocess
import sys
import time

# The layers used, not scapy.all: that loads every layer scapy has, which
# took about three times as long (0.8 s against 0.3 s natively, several
# seconds under emulation), once per peer run.
try:
    from scapy.layers.inet import IP, TCP  # noqa: E402
    from scapy.layers.l2 import Ether  # noqa: E402
    from scapy.packet import Raw  # noqa: E402
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
    def frame(self, flags, payload=b'', tos=ECT0, seq=None, opts=None,
              ack=None):
        if seq is None:
            seq = self.snd_nxt
        if ack is None:
            ack = self.rcv_nxt
        t = TCP(sport=self.myport, dport=self.kport, seq=seq,
                ack=ack if flags & F_ACK else 0, flags=flags,
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



# ---- the kernel's own counters and socket state ----------------------------

def delayed_acks(pid):
    """TcpExtDelayedACKs of the namespace process pid lives in: ACKs the
    delayed-ACK timer sent (tcp_delack_timer_handler())."""
    with open('/proc/%d/net/netstat' % pid) as f:
        lines = [ln.split() for ln in f if ln.startswith('TcpExt:')]
    return int(dict(zip(lines[0][1:], lines[1][1:]))['DelayedACKs'])


CLONE_NEWNET = 0x40000000
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 1, 0x300
NLMSG_DONE, NLMSG_ERROR = 3, 2
INET_DIAG_INFO = 2
CA_STATES = ('Open', 'Disorder', 'CWR', 'Recovery', 'Loss')


class KInfo:
    """TCP_INFO of the kernel's socket towards port `port`, through a
    sock_diag netlink socket created inside the kernel's namespace (setns
    there and back; sockets keep the namespace they were created in)."""

    def __init__(self, kns, port):
        self.port = port
        libc = ctypes.CDLL(None, use_errno=True)
        here = os.open('/proc/self/ns/net', os.O_RDONLY)
        there = os.open('/var/run/netns/' + kns, os.O_RDONLY)
        try:
            if libc.setns(there, CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), 'setns')
            self.nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                                    NETLINK_SOCK_DIAG)
        finally:
            libc.setns(here, CLONE_NEWNET)
            os.close(here)
            os.close(there)
        self.seq = 0

    def read(self):
        """(ca_state, cwnd, ssthresh, total_retrans) or None."""
        self.seq += 1
        req = struct.pack('=BBBxI', socket.AF_INET, socket.IPPROTO_TCP,
                          1 << (INET_DIAG_INFO - 1), 0xffffffff) + \
            bytes(48)
        self.nl.send(struct.pack('=IHHII', 16 + len(req), SOCK_DIAG_BY_FAMILY,
                                 NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0) +
                     req)
        found = None
        while True:
            buf = self.nl.recv(65536)
            off = 0
            while off + 16 <= len(buf):
                ln, typ, _, seq, _ = struct.unpack_from('=IHHII', buf, off)
                if typ == NLMSG_DONE:
                    return found
                if typ == NLMSG_ERROR:
                    return found
                body = buf[off + 16:off + ln]
                dport = struct.unpack_from('!H', body, 6)[0]
                if dport == self.port and seq == self.seq:
                    a = 72
                    while a + 4 <= len(body):
                        alen, atyp = struct.unpack_from('=HH', body, a)
                        if alen < 4:
                            break
                        if atyp == INET_DIAG_INFO:
                            ti = body[a + 4:a + alen]
                            ssth, cwnd = struct.unpack_from('=II', ti, 76)
                            retr = struct.unpack_from('=I', ti, 100)[0]
                            found = (ti[1], cwnd, ssth, retr)
                        a += (alen + 3) & ~3
                off += (ln + 3) & ~3


# ---- the TCP under test --------------------------------------------------------

APP = r'''
import os, socket, sys, time
mode, cc, port, arg = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def setcc(s):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
if mode == 'server':
    l = socket.socket(); setcc(l)
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(('0.0.0.0', port)); l.listen(1)
    print('ready', os.getpid(), flush=True)
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
    print('ready', os.getpid(), flush=True)
    c.connect((host, port))
    lat = []
    for _ in range(int(rounds)):
        t0 = time.monotonic_ns()
        c.sendall(b'q' * int(req))
        got = 0
        while got < 100:
            d = c.recv(100 - got)
            if not d:
                sys.exit(0)
            got += len(d)
        lat.append((time.monotonic_ns() - t0) // 1000)
    if mode == 'rpcclient':
        print('lat', ','.join(str(x) for x in lat), flush=True)
    print('done', flush=True)
    c.recv(1)
'''


def start_app(a, mode, arg='-'):
    p = subprocess.Popen(['ip', 'netns', 'exec', a.kns, sys.executable, '-c',
                          APP, mode, a.cc, str(a.kport), arg],
                         stdout=subprocess.PIPE, text=True)
    w = p.stdout.readline().split()
    if len(w) != 2 or w[0] != 'ready':
        raise SystemExit('# kernel-side app did not start')
    p.app_pid = int(w[1])
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


def counted_segment(pe, flags=F_ACK, tos=ECT0):
    """timed_segment(), plus how many ACKs the kernel's delayed-ACK timer
    sent meanwhile (TcpExtDelayedACKs delta in the receiver's namespace).
    Right after pingpong() the kernel owes no ACK, so a delta of 1 is this
    segment's ACK waiting for the timer, 0 an ACK sent at once."""
    if pe.a.mutant == 'no-cwr':
        # proof that the counter check can fail: the "CWR" segment is a
        # plain one, which a kernel in ping-pong mode ACKs by its timer
        flags &= ~F_CWR
    d0 = delayed_acks(pe.app_pid)
    d, p = timed_segment(pe, flags=flags, tos=tos)
    return d, p, delayed_acks(pe.app_pid) - d0


def baseline_segment(pe, stats, retries=2):
    """A plain segment in ping-pong mode must wait for the delayed-ACK
    timer (delta 1): that is what shows the kernel is in the mode where a
    missing CWR quick ACK would show.  A trial where it did not (ping-pong
    mode lost on an emulator stall) is measured again, counted in
    stats['retries']; False when every retry missed too."""
    for attempt in range(retries + 1):
        stats['extra'] += pingpong(pe) - 1
        d, _, delta = counted_segment(pe)
        stats['base'].append(d)
        if delta == 1:
            return True
        log('plain segment: %d delayed-ACK timer ACK(s) (want 1), '
            '%.1f ms; measuring again' % (delta, d))
        stats['retries'] += 1
    return False


def case_delack(pe, n):
    """The same 600-byte segment without PSH, once plain, once with CWR,
    each right after a request/response round that put the kernel into
    ping-pong mode.  Judged by the kernel's counter: the plain one is ACKed
    by the delayed-ACK timer (TcpExtDelayedACKs +1), the CWR-marked one is
    not (+0, every trial).  Times are reported only."""
    st = {'base': [], 'extra': 0, 'retries': 0}
    cwr, deltas, ok = [], [], True
    for i in range(n):
        if not baseline_segment(pe, st):
            log('trial %d: the kernel never delayed a plain segment\'s ACK:'
                ' nothing to compare CWR with' % i)
            ok = False
            continue
        st['extra'] += pingpong(pe) - 1
        d, _, delta = counted_segment(pe, flags=F_ACK | F_CWR)
        cwr.append(d)
        deltas.append(delta)
    log('no CWR (delayed-ACK baseline) ms: ' +
        ' '.join('%.1f' % x for x in st['base']))
    log('with CWR ms:                      ' + ' '.join('%.1f' % x for x in cwr))
    log('with CWR, delayed-ACK timer ACKs: ' + ' '.join(str(x) for x in deltas))
    print('RESULT base_med=%.2f cwr_med=%.2f cwr_max=%.2f cwr_delayed=%d '
          'trials=%d retries=%d extra_rounds=%d' % (
              statistics.median(st['base']) if st['base'] else 0,
              statistics.median(cwr) if cwr else 0, max(cwr) if cwr else 0,
              sum(1 for x in deltas if x), len(deltas), st['retries'],
              st['extra']))
    if any(deltas):
        log('CWR-marked data waited for the delayed-ACK timer')
        ok = False
    return ok and len(deltas) == n


def case_ce_pattern(pe, pattern, n):
    """Segments 1..len(pattern) back to back, CE where pattern has 1.  Every
    ACK must cover a run of equal CE state and carry ECE equal to it, and
    every CE change must start a new ACK."""
    ok = True
    nseg = len(pattern)
    inexact = missed = 0
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
                inexact += 1
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
            missed += len(missing)
            ok = False
    # what a control needs to fail for the right reason: the trials ran
    print('RESULT trials=%d inexact=%d missed_changes=%d' %
          (n, inexact, missed))
    return ok


def case_trace(pe, n):
    """The thread's sequence, and the stale-shadow sequence; the CWR
    segments are judged by the delayed-ACK counter as in case_delack()."""
    st = {'base': [], 'extra': 0, 'retries': 0}
    delays, deltas = [], []
    ok = True
    for i in range(n):
        # baseline of this run: a plain segment in ping-pong mode
        if not baseline_segment(pe, st):
            log('trial %d: the kernel never delayed a plain segment\'s ACK'
                % i)
            ok = False
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
        d, p, delta = counted_segment(pe, flags=F_ACK | F_CWR)
        delays.append(d)
        deltas.append(delta)
        if p.flags & F_ECE:
            log('trial %d: ACK of the CWR segment still echoes ECE' % i)
            ok = False
        # stale-shadow sequence: the ACK of A leaves on the reply, then a
        # CE segment B must not make the kernel ACK A again
        st['extra'] += pingpong(pe) - 1
        d2, p = timed_segment(pe, tos=CE)
        if not p.flags & F_ECE:
            log('trial %d: ACK of the CE segment has no ECE' % i)
            ok = False
        d3, p, delta = counted_segment(pe, flags=F_ACK | F_CWR)
        delays.append(d3)
        deltas.append(delta)
    log('delayed-ACK baseline ms: ' + ' '.join('%.1f' % x for x in st['base']))
    log('CWR segment ACK ms:      ' + ' '.join('%.1f' % x for x in delays))
    log('CWR segment, delayed-ACK timer ACKs: ' +
        ' '.join(str(x) for x in deltas))
    print('RESULT base_med=%.2f cwr_max=%.2f cwr_delayed=%d retries=%d '
          'dups=%d stale=%d retrans=%d winupd=%d repeats=%d older=%d' % (
              statistics.median(st['base']) if st['base'] else 0,
              max(delays), sum(1 for x in deltas if x), st['retries'],
              pe.dups, pe.stale, pe.retrans, pe.winupd, pe.repeats,
              pe.older))
    if any(deltas):
        log('CWR segments waited for the delayed-ACK timer')
        ok = False
    if pe.bad_acks() or pe.retrans:
        log('duplicate ACKs: %d, ACKs for old data: %d, retransmissions by '
            'the kernel: %d' % (pe.dups, pe.stale, pe.retrans))
        ok = False
    return ok


# ---- sender case: the kernel sends requests, the peer answers with ECE -------

def sender_handshake(pe, mss):
    """Answer the kernel's SYN with ECN; returns the handshake RTT (s)."""
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
    return (got[-1].ts - t0) / 1e9


def case_sender(pe, rounds, req, mss):
    rtt = sender_handshake(pe, mss)
    if rtt is None:
        return None
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


def case_delayed_rpc(pe, rounds, req, mss, reply_pat, delack):
    """The peer as a classic RPC server behind a delayed-ACK receiver
    (RFC 1122 4.2.3.2, RFC 5681 4.2; no quick ACK for a CWR-marked
    segment, which Linux peers give since 4.18): an ACK for every second
    full-sized segment, a lone one held DELACK seconds, and the whole
    request answered at once by the reply (100 bytes, the ACK on it), ECE
    on the reply as reply_pat says, cyclically.  The kernel's client
    times each RPC.  Returns the rounds whose request waited for a held
    ACK (the delayed-ACK timer fired)."""
    if sender_handshake(pe, mss) is None:
        return None
    held = 0
    for r in range(rounds):
        start = pe.rcv_nxt
        unacked = 0         # full-sized segments not ACKed yet
        timer = None        # when the held ACK goes
        waited = False
        while ((pe.rcv_nxt - start) & 0xffffffff) < req:
            p = pe.recv(timer if timer is not None else
                        time.monotonic() + 5)
            if p is None:
                if timer is None:
                    raise Timeout('request data')
                pe.ack_now()
                unacked, timer, waited = 0, None, True
                continue
            if not p.plen:
                continue
            if ((pe.rcv_nxt - start) & 0xffffffff) >= req:
                break
            unacked += 1 if p.plen >= mss else 0
            if unacked >= 2:
                pe.ack_now()
                unacked, timer = 0, None
            elif timer is None:
                timer = time.monotonic() + delack
        held += waited
        ece = reply_pat[r % len(reply_pat)] == '1'
        pe.send(pe.data(b'R' * REPLY,
                        flags=F_ACK | F_PSH | (F_ECE if ece else 0)))
    return held


def case_ece_cwnd(pe, rounds, req, mss, reply_pat, mid_pat):
    """The kernel sends requests of req bytes; the peer ACKs every segment
    on its own (ECE on those ACKs as mid_pat says, cyclically) except the
    last, which the reply ACKs (ECE as reply_pat says, per round).  Around
    every ACK with ECE the kernel socket's cwnd and ssthresh are read
    (sock_diag) before it is sent and after the kernel reacted (after the
    next request's first flight for a reply).  A congestion signal must
    never raise cwnd, nor set ssthresh, above the window before it: the
    cwnd, or within a CWR episode the ssthresh that episode set (the
    episode's own reduced window, which the core may restore).  ACKs in
    Recovery/Loss or with a retransmission in between are not judged
    (loss rules, undo), but counted."""
    rtt = sender_handshake(pe, mss)
    if rtt is None:
        return False
    ki = KInfo(pe.a.kns, pe.myport)
    quiet = min(0.15, max(0.05, 20 * rtt))
    res = {'judged': 0, 'unjudged': 0, 'raised': 0, 'low': 0, 'w1': 0,
           'midi': 0}
    flights, trace = [], []

    def judge(before, after, what):
        if before is None or after is None:
            res['unjudged'] += 1
            log('%s: socket not found by sock_diag' % what)
            return
        (st_b, cw_b, ss_b, rt_b), (st_a, cw_a, ss_a, rt_a) = before, after
        desc = '%s: %s cwnd %d ssthresh %s -> %s cwnd %d ssthresh %s' % (
            what, CA_STATES[st_b], cw_b,
            'inf' if ss_b >= 0x7fffffff else ss_b, CA_STATES[st_a], cw_a,
            'inf' if ss_a >= 0x7fffffff else ss_a)
        if st_b >= 3 or st_a >= 3 or rt_a != rt_b:
            res['unjudged'] += 1
            log('not judged (loss state or retransmission): ' + desc)
            return
        res['judged'] += 1
        if cw_b == 1:
            res['w1'] += 1
        # The window before the signal: cwnd, or inside a CWR episode the
        # ssthresh that episode set, which the core may legitimately bring
        # cwnd back up to (PRR below ssthresh, the end of the episode
        # restoring cwnd = ssthresh) before reducing again.  ssthresh has
        # a floor of 2 segments (RFC 5681's 2*SMSS, every Linux congestion
        # control's): on a window of 1, ssthresh 2 and PRR bringing cwnd
        # to it are that floor, not a raise.
        ref = max(cw_b if st_b < 2 else max(cw_b, ss_b), 2)
        if cw_a > ref or (ss_a != ss_b and ss_a > ref):
            res['raised'] += 1
            log('ECE RAISED the window: ' + desc)
        elif ss_a < 2:
            res['low'] += 1
            log('ECE set ssthresh BELOW 2: ' + desc)
        elif len(trace) < 12:
            trace.append(desc)

    def take_request(start):
        """ACK every segment of a request but the last; returns the number
        of segments in the flight that arrived before our first ACK and
        the socket's state read then (the reaction to the reply, before
        any ACK of this request can grow the window again)."""
        ends = set()

        def collect(got):
            for p in got:
                if p.plen and not seq_lt(p.seq, start):
                    ends.add((p.seq + p.plen - start) & 0xffffffff)

        first = pe.wait(lambda p: p.plen > 0, 5, 'request data')
        more = []
        while True:
            p = pe.recv(time.monotonic() + quiet)
            if p is None:
                break
            more.append(p)
        collect(first + more)
        flight = len(ends)
        at_flight = ki.read()
        acked = 0
        while acked < req:
            nxt = min((e for e in ends if e > acked), default=None)
            if nxt is None:
                collect(pe.wait(lambda p: p.plen > 0, 5, 'request data'))
                continue
            if nxt >= req:
                break
            ece = mid_pat[res['midi'] % len(mid_pat)] == '1'
            res['midi'] += 1
            before = ki.read() if ece else None
            pe.send(pe.frame(F_ACK | (F_ECE if ece else 0),
                             ack=(start + nxt) & 0xffffffff))
            got = []
            while True:
                p = pe.recv(time.monotonic() + quiet)
                if p is None:
                    break
                got.append(p)
            collect(got)
            if ece:
                judge(before, ki.read(), 'ACK of %d bytes with ECE' % nxt)
            acked = nxt
        while (pe.rcv_nxt - start) & 0xffffffff < req:
            collect(pe.wait(lambda p: p.plen > 0, 5, 'request data'))
        return flight, at_flight

    start = pe.rcv_nxt
    take_request(start)
    for r in range(rounds):
        ece = reply_pat[r % len(reply_pat)] == '1'
        before = ki.read()
        pe.send(pe.data(b'R' * REPLY,
                        flags=F_ACK | F_PSH | (F_ECE if ece else 0)))
        start = pe.rcv_nxt
        flight, after = take_request(start)
        flights.append(flight)
        if ece:
            # read after the first flight, before any ACK of ours: the
            # ACKs of the rest of the request may grow cwnd legitimately
            judge(before, after, 'round %d reply with ECE (first flight %d)'
                  % (r, flight))
    pe.send(pe.data(b'R' * REPLY, flags=F_ACK | F_PSH))
    pe.send(pe.frame(F_RST | F_ACK))
    for t in trace:
        log('  ' + t)
    print('RESULT cc=%s judged=%d unjudged=%d raised=%d low=%d w1=%d '
          'flights=%s' % (pe.a.cc, res['judged'], res['unjudged'],
                          res['raised'], res['low'], res['w1'],
                          ','.join(str(x) for x in flights)))
    if not res['judged']:
        log('no ECE ACK could be judged')
        return False
    return res['raised'] == 0 and res['low'] == 0


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
    ap.add_argument('--reply-ece', default='1')
    ap.add_argument('--mid-ece', default='0')
    ap.add_argument('--delack-ms', type=float, default=40,
                    help='delayed-rpc: how long a lone segment waits')
    ap.add_argument('--mutant', default='', help='no-cwr: the self-test of '
                    'the counter check, must fail delack and trace')
    a = ap.parse_args()

    pe = Peer(a)
    if a.case == 'ece-cwnd':
        pe.myport, pe.kport = a.kport, None
        app = start_app(a, 'client', '%s:%d:%d' % (a.pip, a.req,
                                                   a.trials + 1))
        try:
            ok = case_ece_cwnd(pe, a.trials, a.req, a.mss, a.reply_ece,
                               a.mid_ece)
        except Timeout as e:
            log('timed out waiting for: %s' % e)
            ok = False
        finally:
            if pe.kport is not None:
                pe.send(pe.frame(F_RST | F_ACK))
            app.kill()
        return 0 if ok else 1
    if a.case == 'delayed-rpc':
        pe.myport, pe.kport = a.kport, None
        app = start_app(a, 'rpcclient', '%s:%d:%d' % (a.pip, a.req,
                                                      a.trials))
        try:
            held = case_delayed_rpc(pe, a.trials, a.req, a.mss,
                                    a.reply_ece, a.delack_ms / 1000)
            # (the client's times come once it has read the last reply)
            lat = app.stdout.readline().split()
        except Timeout as e:
            log('timed out waiting for: %s' % e)
            held, lat = None, []
        finally:
            if pe.kport is not None:
                pe.send(pe.frame(F_RST | F_ACK))
            app.kill()
        if held is None or len(lat) != 2 or lat[0] != 'lat':
            return 1
        print('RESULT cc=%s rpcs=%d held=%d lat_us=%s' %
              (a.cc, a.trials, held, lat[1]))
        return 0
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
    pe.app_pid = app.app_pid
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
