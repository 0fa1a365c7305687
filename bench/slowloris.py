#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Slowloris against a real `warpscope server`: N connections each send a request line and then
one header line per second, never finishing; meanwhile /healthz is timed twice a second on fresh
connections. Prints the worst /healthz time and how many timed out (3 s).

usage: bench/slowloris.py <warpscope binary> [connections=80] [seconds=10]
"""
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 80
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 10
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    url = f"http://127.0.0.1:{port}/healthz"
    with tempfile.TemporaryDirectory() as data_dir:
        server = subprocess.Popen(
            [binary, "server", f"--listen-address=127.0.0.1:{port}", f"--data-dir={data_dir}",
             "--insights-interval=0s"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(url, timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.1)
            conns = []
            for _ in range(n):
                c = socket.create_connection(("127.0.0.1", port))
                c.sendall(b"GET /healthz HTTP/1.1\r\nHost: slow\r\n")
                conns.append(c)
            worst, probes, timeouts = 0.0, 0, 0
            end = time.time() + seconds
            while time.time() < end:
                for c in conns:
                    try:
                        c.sendall(b"X-Drip: 1\r\n")
                    except OSError:
                        pass  # cut by the server's request deadline
                for _ in range(2):
                    start = time.time()
                    probes += 1
                    try:
                        urllib.request.urlopen(url, timeout=3).read()
                        worst = max(worst, time.time() - start)
                    except OSError:
                        timeouts += 1
                    time.sleep(0.5)
            print(f"{n} slowloris connections for {seconds:.0f} s: worst /healthz "
                  f"{worst * 1000:.1f} ms, {timeouts} of {probes} timed out (3 s)")
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
