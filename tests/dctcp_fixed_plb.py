#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Request/response traffic for dctcp_fixed_plb.sh's idle-rehash case.

  dctcp_fixed_plb.py server --bind A --port P --cc CC --reply N [--ready F]
  dctcp_fixed_plb.py client --server A --port P --reply N

The client makes one RPC for each line it reads on stdin: it sends a
one-byte request, reads the whole reply and prints "done N", so that the
caller can change the server's namespace between RPCs while the server has
nothing in flight; each reply after the first starts a flight from idle
(CA_EVENT_TX_START).  At the end of its input it prints rpcs=N.  The server
answers every connection in turn, with congestion control CC set on its
listening socket.
"""
import rpc_common
import socket
import sys


def server(a):
    ls = rpc_common.listen(a, 4, a.cc)
    reply = b"r" * a.reply
    while True:
        conn, _ = ls.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while conn.recv(1):
                conn.sendall(reply)


def client(a):
    s = socket.create_connection((a.server, a.port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    n = 0
    for _ in iter(sys.stdin.readline, ""):
        s.sendall(b"q")
        left = a.reply
        while left > 0:
            got = s.recv(min(left, 65536))
            if not got:
                print("reply cut short: %d bytes missing" % left, file=sys.stderr)
                return 1
            left -= len(got)
        n += 1
        print("done %d" % n, flush=True)
    s.close()
    print("rpcs=%d" % n, flush=True)
    return 0


def main():
    p = rpc_common.role_parser()
    p.add_argument("--cc", default="dctcp_fixed")
    p.add_argument("--reply", type=int, default=30000)
    a = p.parse_args()
    if a.role == "server":
        server(a)
        return 0
    return client(a)


if __name__ == "__main__":
    sys.exit(main())
