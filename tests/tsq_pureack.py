#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A corked trailer whose only company below TCP is a pure ACK, for
tsq_probe_pureack.sh.

  tsq_pureack.py server --bind A --port P --fifo F [--ready R]
  tsq_pureack.py client --server A --port P --fifo F --rounds N

Per round, under TCP_NODELAY:
  client  sends b"q"
  server  writes a two-segment body, then says so on the FIFO
  client  reads that line, then sends b"n"
  server  reads b"n" (the ACK of it leaves now, behind the body's second
          segment, which the qdisc still holds), then writes the trailer:
          it autocorks behind the body and that ACK
  client  reads body and trailer, with delayed ACKs (TCP_QUICKACK 0),
          then pauses --gap-ms before the next request
The FIFO orders the two sides.  The pause is the workload's: it lets the
server's token bucket fill again, so that the body's first segment leaves
at once and is ACKed with b"n", not by a delayed ACK that would push the
trailer out before the body's second segment completes.
"""
import rpc_common
import socket
import sys
import time

BODY = 2 * 1448
TRAILER = 7


def quickack_off(s):
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)


def server(a):
    ls = rpc_common.listen(a, 1)
    conn, _ = ls.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with open(a.fifo, "w") as fifo:
        while True:
            if conn.recv(1) != b"q":
                return 0
            conn.sendall(b"b" * BODY)
            fifo.write("body\n")
            fifo.flush()
            if conn.recv(1) != b"n":
                return 1
            conn.sendall(b"t" * TRAILER)


def client(a):
    s = socket.create_connection((a.server, a.port), timeout=60)
    with open(a.fifo) as fifo:
        for _ in range(a.rounds):
            s.sendall(b"q")
            if fifo.readline() != "body\n":
                print("server gone", file=sys.stderr)
                return 1
            s.sendall(b"n")
            got = 0
            while got < BODY + TRAILER:
                b = s.recv(BODY + TRAILER - got)
                if not b:
                    print("connection closed", file=sys.stderr)
                    return 1
                got += len(b)
                quickack_off(s)
            time.sleep(a.gap_ms / 1000.0)   # the workload's gap, not a sync
    s.close()
    print("rounds=%d" % a.rounds)
    return 0


def main():
    p = rpc_common.role_parser()
    p.add_argument("--fifo", required=True)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--gap-ms", type=float, default=200.0)
    a = p.parse_args()
    return server(a) if a.role == "server" else client(a)


if __name__ == "__main__":
    sys.exit(main())
