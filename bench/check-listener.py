#!/usr/bin/env python3
"""A TCP port for the health checks of bench/run's steered names: it listens on PORT at each
ADDRESS given (loopback ones), accepts every connection and closes it at once, which is what
a tcp connect check (dnz's "tcp" check, gdnsd's tcp_connect, PowerDNS's ifportup) looks for.
It prints "listening" once every socket is bound, and exits by itself after LIFETIME seconds
(default 6 hours) in case the script that started it was killed without cleaning up.

    bench/check-listener.py PORT ADDRESS... [--lifetime SECONDS]
"""

import select
import signal
import socket
import sys


def main():
    args = sys.argv[1:]
    lifetime = 6 * 3600
    if "--lifetime" in args:
        i = args.index("--lifetime")
        lifetime = int(args[i + 1])
        del args[i : i + 2]
    if len(args) < 2:
        sys.exit("usage: bench/check-listener.py PORT ADDRESS... [--lifetime SECONDS]")
    port = int(args[0])
    signal.alarm(lifetime)
    sockets = []
    for address in args[1:]:
        if not address.startswith("127."):
            sys.exit(f"{address}: loopback addresses only")
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((address, port))
        s.listen(128)
        sockets.append(s)
    print("listening", flush=True)
    while True:
        ready, _, _ = select.select(sockets, [], [])
        for s in ready:
            try:
                conn, _ = s.accept()
                conn.close()
            except OSError:
                pass


if __name__ == "__main__":
    main()
