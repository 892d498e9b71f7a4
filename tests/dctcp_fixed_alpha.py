#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Helper of dctcp_fixed_alpha.sh.  Two roles:
#   sink PORT CC READY            accept one connection, read until EOF
#                                 (creates file READY once listening)
#   send HOST PORT CC SECONDS OUT stream to the sink and sample the sending
#                                 socket's TCP_INFO and TCP_CC_INFO, writing
#                                 "t_ms ca_state cwnd ssthresh alpha" lines
# then analyse OUT WARMUP_FRAC FLOOR: print alpha statistics (mean, and its
# standard error from ten batch means, the samples being autocorrelated) and
# check the reductions, exit 0/1.

import socket
import statistics
import struct
import sys
import threading
import time

TCP_INFO = 11
TCP_CC_INFO = 26


def setcc(s, cc):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())


def sink(port, cc, ready):
    ls = socket.socket()
    setcc(ls, cc)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('0.0.0.0', int(port)))
    ls.listen(1)
    open(ready, 'w').close()
    c, _ = ls.accept()
    try:
        while c.recv(1 << 16):
            pass
    except OSError:
        pass


def stream_sampled(s, seconds, out):
    """Stream on the connected socket s for SECONDS from a thread, while
    this one samples s's TCP_INFO and TCP_CC_INFO into OUT, one line per
    0.2 ms: "t_ms ca_state cwnd ssthresh alpha enabled".  Returns the bytes
    sent."""
    stop = time.monotonic() + float(seconds)
    buf = b'x' * (1 << 16)
    sent = [0]

    def pump():
        try:
            while time.monotonic() < stop:
                sent[0] += s.send(buf)
        except OSError:
            pass

    th = threading.Thread(target=pump)
    th.start()
    t0 = time.monotonic()
    rows = []
    while th.is_alive():
        ti = s.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 104)
        ci = s.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, 20)
        ca_state = ti[1]
        ssthresh, cwnd = struct.unpack_from('II', ti, 76)
        enabled, _, alpha = struct.unpack_from('HHI', ci, 0) if len(ci) >= 8 \
            else (0, 0, 0)
        rows.append('%.3f %d %d %d %d %d' % ((time.monotonic() - t0) * 1e3,
                                             ca_state, cwnd, ssthresh, alpha,
                                             enabled))
        time.sleep(0.0002)
    th.join()
    with open(out, 'w') as f:
        f.write('\n'.join(rows) + '\n')
    return sent[0]


def send(host, port, cc, seconds, out):
    s = socket.socket()
    setcc(s, cc)
    s.connect((host, int(port)))
    stream_sampled(s, seconds, out)
    s.close()


def batch_se(xs, k=10):
    """Standard error of the mean of an autocorrelated series: the spread
    of k batch means."""
    n = len(xs) // k
    means = [statistics.mean(xs[i * n:(i + 1) * n]) for i in range(k)]
    return statistics.stdev(means) / k ** 0.5


def analyse(out, warm, floor):
    warm, floor = float(warm), int(floor)
    rows = [tuple(float(x) for x in ln.split()) for ln in open(out)
            if ln.strip()]
    if len(rows) < 100:
        print('# only %d samples' % len(rows))
        return 1
    if not all(r[5] == 1 for r in rows):
        print('# TCP_CC_INFO did not report dctcp_enabled on every sample')
        return 1
    tail = [r for r in rows if r[0] >= warm * rows[-1][0]]
    alphas = [r[4] / 1024.0 for r in tail]
    mean = statistics.mean(alphas)
    se = batch_se(alphas)
    print('# %d samples over %.1f s; alpha over the last %d%%: mean %.4f '
          '(batch-means s.e. %.4f) median %.4f min %.4f max %.4f' %
          (len(rows), rows[-1][0] / 1e3, round(100 * (1 - warm)), mean, se,
           statistics.median(alphas), min(alphas), max(alphas)))
    ok = True
    # reductions: a new ssthresh between two samples.  Under continuous
    # marking the flow goes from one CWR episode straight into the next, so
    # the cwnd the reduction started from lies between the old ssthresh (where
    # the previous episode left cwnd) and the cwnd of the sample before;
    # alpha is the one of the sample before or after (the same ACK may
    # update alpha first).  ssthresh must be cwnd * (1 - alpha / 2) for some
    # such cwnd and alpha, give or take one segment of rounding.
    ev = good = 0
    ratios = []
    for a, b in zip(rows, rows[1:]):
        if b[3] == a[3] or b[3] >= 0x7fffffff:
            continue
        hi = a[2] if a[3] >= 0x7fffffff else max(a[2], a[3])
        lo = a[2] if a[3] >= 0x7fffffff else min(a[2], a[3])
        if lo < 8:
            continue
        ev += 1
        ss = b[3]
        for al in (a[4], b[4]):
            f = 1 - al / 2048.0
            if max(floor, lo * f) - 1 <= ss <= max(floor, (hi + 1) * f) + 1:
                good += 1
                break
        ratios.append(ss / hi)
    exp_ratio = 1 - mean / 2
    print('# reductions seen: %d (cwnd >= 8), matching cwnd*(1-alpha/2): %d; '
          'mean new ssthresh/cwnd %.3f, expected about %.3f (Reno would be 0.5)'
          % (ev, good, statistics.mean(ratios) if ratios else 0, exp_ratio))
    print('RESULT alpha_mean=%.5f alpha_se=%.5f reductions=%d matching=%d' %
          (mean, se, ev, good))
    if ev < 5:
        print('# too few reductions observed to judge them')
        ok = False
    elif good < 0.8 * ev:
        print('# fewer than 80% of the reductions match cwnd*(1-alpha/2)')
        ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    role = sys.argv[1]
    if role == 'sink':
        sink(*sys.argv[2:5])
    elif role == 'send':
        send(*sys.argv[2:7])
    elif role == 'analyse':
        sys.exit(analyse(*sys.argv[2:5]))
