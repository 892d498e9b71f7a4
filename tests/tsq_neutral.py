#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Writers that ask TCP to hold or pace data, for tsq_probe_neutral.sh.

  tsq_neutral.py server --bind A --port P --mode M [--ready F] [options]
  tsq_neutral.py client --server A --port P --mode M [options]

Modes (the server writes, the client reads and prints key=value lines):
  msgmore   per request: 100 bytes with MSG_MORE under TCP_NODELAY, then the
            rest --gap-ms later.  The client counts replies whose first byte
            came more than half the gap before the last one ("early").
  bulk      --bytes in 64 KiB write()s (TSO auto-deferral territory)
  paced     --bytes in write()s with SO_MAX_PACING_RATE=--rate bytes/s
  sendfile  --bytes with os.sendfile() of a file (splice, non-final chunks
            carry MSG_MORE / MSG_SENDPAGE_NOTLAST)
  blast     write 64 KiB chunks until --seconds pass; send errors
            (no route) are counted and retried, never fatal
  rr        per 1-byte request under TCP_NODELAY, a reply in two writes:
            a 1200-byte body, then a 7-byte trailer (the shape that
            autocorks); --rounds requests, one at a time
  small     --bytes in 64-byte write()s under TCP_NODELAY (iperf3 -N -l 64)
"""
import rpc_common
import os
import socket
import sys
import tempfile
import time

SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
REPLY = 1000
FIRST = 100
BODY = 1200
TRAILER = 7


def serve_conn(conn, a):
    if a.mode == "msgmore":
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(a.rounds):
            if not conn.recv(1):
                return
            conn.send(b"a" * FIRST, socket.MSG_MORE)
            time.sleep(a.gap_ms / 1000.0)   # the workload's gap, not a sync
            conn.sendall(b"b" * (REPLY - FIRST))
        return
    if a.mode == "rr":
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(a.rounds):
            if not conn.recv(1):
                return
            conn.sendall(b"b" * BODY)
            conn.sendall(b"t" * TRAILER)
        return
    if a.mode == "small":
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        chunk = b"s" * 64
        for _ in range(a.bytes // len(chunk)):
            conn.sendall(chunk)
        return
    if a.mode == "paced":
        conn.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, a.rate)
    if a.mode == "sendfile":
        with tempfile.TemporaryFile() as f:
            f.write(b"s" * a.bytes)
            f.flush()
            off = 0
            while off < a.bytes:
                off += os.sendfile(conn.fileno(), f.fileno(), off, a.bytes - off)
        return
    if a.mode == "blast":
        conn.setblocking(False)
        end = time.monotonic() + a.seconds
        chunk = b"x" * 65536
        errors = 0
        while time.monotonic() < end:
            try:
                conn.send(chunk)
            except BlockingIOError:
                time.sleep(0.001)
            except OSError:
                errors += 1
                time.sleep(0.001)
        print("send_errors=%d" % errors, flush=True)
        return
    chunk = b"x" * 65536
    left = a.bytes
    while left > 0:
        n = min(left, len(chunk))
        conn.sendall(chunk[:n])
        left -= n


def server(a):
    ls = rpc_common.listen(a, 8, a.cc)
    while True:
        conn, _ = ls.accept()
        try:
            serve_conn(conn, a)
        except OSError as e:
            print("server: %s" % e, file=sys.stderr)
        conn.close()
        if a.once:
            return 0


def recv_exact(s, n):
    got = 0
    t_first = None
    while got < n:
        b = s.recv(n - got)
        if not b:
            raise OSError("connection closed after %d of %d bytes" % (got, n))
        if t_first is None:
            t_first = time.monotonic()
        got += len(b)
    return t_first, time.monotonic()


def client(a):
    s = socket.create_connection((a.server, a.port), timeout=60)
    if a.mode == "msgmore":
        early = 0
        worst = 0.0
        for _ in range(a.rounds):
            s.sendall(b"q")
            t_first, t_last = recv_exact(s, REPLY)
            ahead = t_last - t_first
            worst = max(worst, ahead)
            if ahead > a.gap_ms / 2000.0:
                early += 1
        print("rounds=%d\nearly=%d\nmax_ahead_ms=%.1f" % (a.rounds, early, worst * 1000))
        return 0
    if a.mode == "rr":
        t0 = time.monotonic()
        for _ in range(a.rounds):
            s.sendall(b"q")
            recv_exact(s, BODY + TRAILER)
        print("rounds=%d\nseconds=%.3f" % (a.rounds, time.monotonic() - t0))
        return 0
    if a.mode == "small":
        a.bytes -= a.bytes % 64
    t0 = time.monotonic()
    got = 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        got += len(b)
    print("bytes=%d\nseconds=%.3f" % (got, time.monotonic() - t0))
    return 0 if a.mode == "blast" or got == a.bytes else 2


def main():
    p = rpc_common.role_parser()
    p.add_argument("--mode", required=True,
                   choices=["msgmore", "bulk", "paced", "sendfile", "blast",
                            "rr", "small"])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--gap-ms", type=float, default=60.0)
    p.add_argument("--bytes", type=int, default=4 << 20)
    p.add_argument("--rate", type=int, default=4 << 20)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--once", action="store_true")
    p.add_argument("--cc", help="server: TCP_CONGESTION of the listening socket")
    a = p.parse_args()
    return server(a) if a.role == "server" else client(a)


if __name__ == "__main__":
    sys.exit(main())
