#!/usr/bin/env python3
"""Many pprof targets in one process, for bench/collect/run.sh.

    targets.py DIR COUNT PORTFILE

Listens on COUNT free ports of 127.0.0.1 and answers /debug/pprof/heap,
block, goroutine, mutex and profile with the recorded profiles DIR/heap.pb.gz,
DIR/block.pb.gz, DIR/goroutine.pb.gz, DIR/mutex.pb.gz and DIR/profile.pb.gz.
A CPU profile (profile?seconds=N) is answered after N seconds, as a real
server would: the collector must hold the request open that long. Writes the
ports, one a line, to PORTFILE once all listen. On SIGTERM prints the count
of answers per path on stderr.

One asyncio loop serves them all, so 400 targets cost one thread and the
sleeping CPU profiles cost nothing; HTTP/1.1 with keep-alive, as libcurl
reuses connections.
"""

import asyncio
import collections
import os
import signal
import sys
import urllib.parse

NAMES = ("heap", "block", "goroutine", "mutex", "profile")
counts = collections.Counter()


def answer(status, body, ctype="application/octet-stream"):
    reason = {200: "OK", 404: "Not Found", 400: "Bad Request"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def serve(profiles, reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(parts) != 3:
                writer.write(answer(400, b"bad request line\n", "text/plain"))
                break
            url = urllib.parse.urlsplit(parts[1])
            name = url.path.rsplit("/", 1)[-1]
            if not url.path.startswith("/debug/pprof/") or name not in profiles:
                counts["404"] += 1
                writer.write(answer(404, b"not found\n", "text/plain"))
                await writer.drain()
                continue
            if name == "profile":
                query = urllib.parse.parse_qs(url.query)
                await asyncio.sleep(int(query.get("seconds", ["30"])[0]))
            counts[name] += 1
            writer.write(answer(200, profiles[name]))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def main(directory, count, portfile):
    profiles = {}
    for name in NAMES:
        with open(os.path.join(directory, name + ".pb.gz"), "rb") as f:
            profiles[name] = f.read()
    handler = lambda r, w: serve(profiles, r, w)
    servers = [
        await asyncio.start_server(handler, "127.0.0.1", 0, backlog=64) for _ in range(count)
    ]
    with open(portfile + ".tmp", "w") as f:
        for s in servers:
            f.write(f"{s.sockets[0].getsockname()[1]}\n")
    os.rename(portfile + ".tmp", portfile)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    await stop.wait()
    print("targets: answered " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
          file=sys.stderr, flush=True)
    # Answers in flight (CPU profiles asleep) would each print a traceback
    # as the loop is torn down; there is nothing left to tidy.
    os._exit(0)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: targets.py DIR COUNT PORTFILE")
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
