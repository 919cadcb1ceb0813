"""A stand-in for a profiled process's charts endpoints, for charts_browser.sh:

    charts_fixture.py PAGE.html PORT_FILE

Serves PAGE.html (what tests/ui/charts_page.c wrote) at /debug/charts/ with
the library's Content-Security-Policy, and a made-up metrics ring at
/debug/charts/data[?since=UNIX_MS] in the format the library serves: a point
a second, 400 of them already there when it starts, so the windows of 1, 5
and 10 minutes show different ranges. The figures are functions of the
point's index, so the driver can tell which point a chart shows. Listens on
127.0.0.1, a free port, which it writes to PORT_FILE once it accepts.
Python's standard library only.
"""
import http.server
import json
import os
import sys
import time
import urllib.parse

CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src data:; connect-src 'self'")
INTERVAL_MS = 1000
WINDOW_S = 600
PREFILLED = 400

page = open(sys.argv[1], "rb").read()
now_ms = int(time.time() * 1000)
first_ms = now_ms - now_ms % INTERVAL_MS - (PREFILLED - 1) * INTERVAL_MS
start_ms = first_ms - 5000

SERIES = {
    "cpu_user_pct": lambda i: 20 + (i * 7) % 30,
    "cpu_system_pct": lambda i: 2 + (i * 3) % 5,
    "rss_bytes": lambda i: 48 * 1024 * 1024 + i * 40960,
    "rss_peak_bytes": lambda i: 48 * 1024 * 1024 + i * 40960 + 4096,
    "vm_bytes": lambda i: 700 * 1024 * 1024 + (i % 10) * 1048576,
    "heap_inuse_bytes": lambda i: 20 * 1024 * 1024 + (i * 12345) % 5000000,
    "alloc_bytes_per_s": lambda i: 3000000 + (i * 77777) % 2000000,
    "threads": lambda i: 4 + i % 3,
    "open_fds": lambda i: 12 + i % 5,
    "ctx_voluntary_per_s": lambda i: 100 + (i * 13) % 50,
    "ctx_involuntary_per_s": lambda i: (i * 5) % 9,
    "faults_minor_per_s": lambda i: 300 + (i * 17) % 200,
    "faults_major_per_s": lambda i: i % 2,
    # A figure the system may not give: null now and then, a gap.
    "read_bytes_per_s": lambda i: None if i % 50 == 7 else 4096 * (i % 8),
    "write_bytes_per_s": lambda i: None if i % 50 == 7 else 8192 * (i % 4),
    "cprof_samples_per_s": lambda i: 99 + i % 3,
    "cprof_dropped_per_s": lambda i: 1 if i % 97 == 0 else 0,
    "cprof_memory_bytes": lambda i: 3 * 1024 * 1024 + (i % 20) * 1024,
    "cprof_serve_ms_per_s": lambda i: round(0.25 * (i % 4), 2),
}


def ring(since):
    newest = (int(time.time() * 1000) - first_ms) // INTERVAL_MS
    oldest = max(0, newest - WINDOW_S + 1)
    idx = [i for i in range(oldest, newest + 1)
           if since is None or first_ms + i * INTERVAL_MS > since]
    return {"interval_ms": INTERVAL_MS, "window_s": WINDOW_S, "start_ms": start_ms,
            "t": [first_ms + i * INTERVAL_MS for i in idx],
            "series": {k: [f(i) for i in idx] for k, f in SERIES.items()}}


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send(self, status, ctype, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/debug/charts/":
            self.send(200, "text/html; charset=utf-8", page, [("Content-Security-Policy", CSP)])
        elif u.path == "/debug/charts/data":
            q = urllib.parse.parse_qs(u.query)
            since = None
            if "since" in q:
                try:
                    since = int(q["since"][0])
                except ValueError:
                    self.send(400, "text/plain; charset=utf-8", b"invalid since\n")
                    return
            body = json.dumps(ring(since), separators=(",", ":")).encode()
            self.send(200, "application/json", body, [("Cache-Control", "no-store")])
        else:
            self.send(404, "text/plain; charset=utf-8", b"404 page not found\n")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()
