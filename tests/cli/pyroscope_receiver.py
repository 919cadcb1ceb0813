#!/usr/bin/env python3
"""A stand-in for Grafana Pyroscope's POST /ingest, for tests/cli/collect_push.sh
and tests/integration/push.sh.

  pyroscope_receiver.py serve DIR PORTFILE [FAILS]
      Listens on 127.0.0.1 (a free port, written to PORTFILE) and records
      every request as DIR/N.json (method, path, query, content type, the
      Authorization header, the answer's status, the multipart part names, errors found), with the
      "profile" part in DIR/N.pprof and "sample_type_config" in
      DIR/N.stc.json. Answers 503 to the first FAILS requests, 200 after.

  pyroscope_receiver.py check DIR [NAME]
      Checks every recorded request that was answered 200 against the API
      (its name NAME, or, when NAME is re:REGEX, a name REGEX matches whole,
      or demo{instance=...,env=test} without one: cprof collect's in
      collect_push.sh) and prints one line per fault; then a
      summary line
      "accepted A failed F kinds K1,K2,..." where the kinds are read off the
      sample types (cpu: process_cpu, inuse_space: memory, ...).
"""
import email.parser
import email.policy
import json
import os
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse_multipart(content_type, body):
    """{name: (filename, bytes)} of a multipart/form-data body."""
    head = ("Content-Type: %s\r\nMIME-Version: 1.0\r\n\r\n" % content_type).encode()
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not msg.is_multipart():
        raise ValueError("not multipart")
    parts = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts[name] = (part.get_filename(), part.get_payload(decode=True))
    return parts


class State:
    lock = threading.Lock()
    n = 0
    fails = 0
    dir = "."


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.record("POST")

    def do_GET(self):
        self.record("GET")

    def record(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        with State.lock:
            n = State.n
            State.n += 1
        status = 503 if n < State.fails else 200
        url = urllib.parse.urlsplit(self.path)
        rec = {
            "method": method,
            "path": url.path,
            "query": urllib.parse.parse_qs(url.query, keep_blank_values=True),
            "content_type": self.headers.get("Content-Type", ""),
            "authorization": self.headers.get("Authorization", ""),
            "status": status,
            "parts": [],
            "errors": [],
        }
        try:
            parts = parse_multipart(rec["content_type"], body)
            rec["parts"] = sorted(p for p in parts if p)
            for name, suffix in (("profile", ".pprof"), ("sample_type_config", ".stc.json")):
                if name in parts:
                    with open(os.path.join(State.dir, "%d%s" % (n, suffix)), "wb") as f:
                        f.write(parts[name][1])
            if "profile" in parts and parts["profile"][0] != "profile.pprof":
                rec["errors"].append("the profile part's filename is %r" % parts["profile"][0])
        except Exception as e:  # noqa: BLE001 - any fault is recorded, not raised
            rec["errors"].append("body: %s" % e)
        # The record is written before the answer, so a client that has its
        # answer finds the request recorded.
        tmp = os.path.join(State.dir, "%d.json.tmp" % n)
        with open(tmp, "w") as f:
            json.dump(rec, f)
        os.rename(tmp, os.path.join(State.dir, "%d.json" % n))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


def serve(directory, portfile, fails):
    State.dir, State.fails = directory, fails
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


# By display-name (the sample type's name when it has none).
KINDS = {"cpu": "process_cpu", "inuse_space": "memory", "goroutines": "goroutine",
         "threadcreate": "threadcreate", "mutex_count": "mutex", "block_count": "block"}


def check(directory, want_name=None):
    faults, accepted, failed, kinds = [], 0, 0, set()
    names = sorted((f for f in os.listdir(directory) if f.endswith(".json")
                    and not f.endswith(".stc.json")), key=lambda f: int(f.split(".")[0]))
    for f in names:
        n = f.split(".")[0]
        with open(os.path.join(directory, f)) as fh:
            rec = json.load(fh)
        if rec["status"] != 200:
            failed += 1
            continue
        accepted += 1
        bad = lambda why: faults.append("request %s: %s" % (n, why))  # noqa: E731
        for e in rec["errors"]:
            bad(e)
        if rec["method"] != "POST":
            bad("method %s" % rec["method"])
        if rec["path"] != "/ingest":
            bad("path %s" % rec["path"])
        q = {k: v[0] for k, v in rec["query"].items()}
        name = q.get("name", "")
        if want_name is not None and want_name.startswith("re:"):
            if not re.fullmatch(want_name[3:], name):
                bad("name %r does not match %r" % (name, want_name[3:]))
        elif want_name is not None:
            if name != want_name:
                bad("name %r is not %r" % (name, want_name))
        elif not (name.startswith("demo{instance=") and name.endswith(",env=test}")):
            bad("name %r is not demo{instance=...,env=test}" % name)
        try:
            if not int(q["from"]) <= int(q["until"]) or int(q["from"]) < 1500000000:
                bad("from %s until %s" % (q["from"], q["until"]))
        except (KeyError, ValueError):
            bad("from or until missing or not a number")
        if q.get("format") != "pprof":
            bad("format %r" % q.get("format"))
        if not rec["content_type"].startswith("multipart/form-data"):
            bad("content type %r" % rec["content_type"])
        if rec["parts"] != ["profile", "sample_type_config"]:
            bad("parts %r" % rec["parts"])
            continue
        try:
            with open(os.path.join(directory, n + ".stc.json")) as fh:
                stc = json.load(fh)
        except ValueError as e:
            bad("sample_type_config is not JSON: %s" % e)
            continue
        for t, c in stc.items():
            if not isinstance(c, dict) or not set(c) <= {"units", "display-name", "aggregation",
                                                         "cumulative", "sampled"}:
                bad("sample_type_config[%s] = %r" % (t, c))
            kinds.add(KINDS.get(c.get("display-name", t), None) if isinstance(c, dict) else None)
        # The profile's own sample types, as go tool pprof read them (the
        # shell wrote N.types).
        try:
            with open(os.path.join(directory, n + ".types")) as fh:
                types = fh.read().split()
        except OSError:
            bad("no N.types: the profile was not read")
            continue
        if sorted(types) != sorted(stc):
            bad("sample_type_config has %s, the profile %s" % (sorted(stc), sorted(types)))
    kinds.discard(None)
    for line in faults:
        print(line)
    print("accepted %d failed %d kinds %s" % (accepted, failed, ",".join(sorted(kinds))))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    else:
        check(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
