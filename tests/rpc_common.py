# SPDX-License-Identifier: GPL-2.0
"""What the tests' TCP client/server scripts share: the command line every
one of them takes, and a listener that says when it is ready (the test
waits for the --ready file to exist)."""

import argparse
import socket


def role_parser(description=None):
    """server|client, --bind, --server, --port, --ready; add your own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("role", choices=["server", "client"])
    p.add_argument("--bind", default="0.0.0.0")
    p.add_argument("--server")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ready")
    return p


def listen(a, backlog, cc=None):
    """A listener on a.bind:a.port; accepted sockets inherit congestion
    control cc when it is given.  Creates a.ready once it listens."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if cc:
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    ls.bind((a.bind, a.port))
    ls.listen(backlog)
    if a.ready:
        open(a.ready, "w").close()
    return ls
