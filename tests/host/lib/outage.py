"""Stand-ins for a network that is away, for tests/host/outage.sh. Nothing
here reaches past the loopback interface.

  outage.py dns READY           a name server on port 53 of a loopback address
                                of its choosing (127.x.y.z, one no other test
                                has taken), UDP and TCP, that reads every
                                query and never answers; its address goes to
                                READY
  outage.py silent READY        a TCP server on 127.0.0.1 that accepts, reads
                                and never answers; its port goes to READY
  outage.py exit_time -- CMD... runs CMD, echoes its stdout, and prints on
                                stderr the seconds from its last line of
                                output to its end: "exit_time S"
"""
import os
import random
import select
import socket
import subprocess
import sys
import threading
import time


def ready(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def dns(path):
    for _ in range(100):
        addr = "127.%d.%d.%d" % (random.randint(16, 250), random.randint(1, 250), random.randint(2, 250))
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t = socket.socket()
        try:
            u.bind((addr, 53))
            t.bind((addr, 53))
        except OSError:
            u.close()
            t.close()
            continue
        t.listen(64)
        silent_loop([u, t], path, "%s\n" % addr)
    sys.exit("no loopback address with port 53 free")


def silent(path):
    t = socket.socket()
    t.bind(("127.0.0.1", 0))
    t.listen(64)
    silent_loop([t], path, "%d\n" % t.getsockname()[1])


def silent_loop(listeners, path, text):
    ready(path, text)
    conns = []
    while True:
        r, _, _ = select.select(listeners + conns, [], [])
        for s in r:
            if s.type == socket.SOCK_DGRAM:
                s.recvfrom(65536)  # dropped
            elif s in listeners:
                c, _ = s.accept()
                conns.append(c)
            elif not s.recv(65536):
                conns.remove(s)
                s.close()


def exit_time(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    last = time.monotonic()
    for line in p.stdout:
        last = time.monotonic()
        sys.stdout.buffer.write(line)
        sys.stdout.flush()
    rc = p.wait()
    sys.stderr.write("exit_time %.2f\n" % (time.monotonic() - last))
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "dns":
        dns(sys.argv[2])
    elif what == "silent":
        silent(sys.argv[2])
    elif what == "exit_time":
        sys.exit(exit_time(sys.argv[3:]))
