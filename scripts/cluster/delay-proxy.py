#!/usr/bin/env python3
"""A TCP proxy on loopback that makes an API server slow, for fault tests (fault.bats):

    delay-proxy.py UPSTREAM_PORT DELAY_FILE

listens on 127.0.0.1 (a free port, printed on stdout) and relays each connection to
127.0.0.1:UPSTREAM_PORT. The bytes are TLS, so it cannot see HTTP responses: it holds back the
first bytes the upstream sends after each burst the client sent (a request, roughly) for the
number of seconds written in DELAY_FILE, read again for every such response, so a test changes
the delay without restarting anything. Bytes that follow without a new request (the rest of a
response, the events of a watch) pass at once."""
import socket
import sys
import threading
import time

upstream_port = int(sys.argv[1])
delay_file = sys.argv[2]


def delay():
    try:
        with open(delay_file) as f:
            return float(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0.0


def close(*socks):
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def pipe(conn, upstream):
    asked = threading.Event()

    def client_to_upstream():
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                asked.set()
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            close(conn, upstream)

    def upstream_to_client():
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                if asked.is_set():
                    asked.clear()
                    time.sleep(delay())
                conn.sendall(data)
        except OSError:
            pass
        finally:
            close(conn, upstream)

    threading.Thread(target=client_to_upstream, daemon=True).start()
    threading.Thread(target=upstream_to_client, daemon=True).start()


def main():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(128)
    print(srv.getsockname()[1], flush=True)
    while True:
        conn, _ = srv.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", upstream_port))
        except OSError:
            conn.close()
            continue
        pipe(conn, upstream)


if __name__ == "__main__":
    main()
