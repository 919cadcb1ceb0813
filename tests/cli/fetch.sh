# cprof fetch: profiles from a program under cprof (with Basic auth from
# the URL, pprof's bare host:port form and ?seconds=), from a file and from
# standard input, saved byte for byte and read back by go tool pprof; a
# 404, a refused connection, another scheme give exit 1 and one line, and
# leave the output file as it was. A small Python server shows what cprof
# sends (User-Agent, Authorization) and that redirects are followed, but not
# without end.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

C=$B/cprof
P=$B/tests/integration
# fetch NAME ARGS...: runs cprof fetch, keeping $T/NAME.{out,err,rc}.
fetch() {
  local name=$1
  shift
  run "$name" -- "$C" fetch "$@"
}
# one_error NAME: the run exited 1 with exactly one "cprof fetch:" line,
# which is its last.
one_error() {
  rc_is "$1" 1 && [ "$(grep -c '^cprof fetch: ' "$T/$1.err")" = 1 ] &&
    tail -1 "$T/$1.err" | grep -q '^cprof fetch: '
}

start target --ready LD_PRELOAD="$LIB" CPROF_AUTH=ops:s3cret -- "$P/stacks_plain"

fetch heap "http://ops:s3cret@$ADDR/debug/pprof/heap" -o "$T/heap.pb.gz"
check "heap: exit 0" rc_is heap 0
check "heap: says where it fetches from, as pprof" \
  has "$T/heap.err" "^Fetching profile over HTTP from http://ops:xxxxx@$ADDR/debug/pprof/heap\$"
check "heap: the password is not shown" bash -c "! grep -q s3cret '$T/heap.err'"
check "heap: says where it saved, as pprof" has "$T/heap.err" "^Saved profile in $T/heap.pb.gz\$"
check "heap: the file is gzip, as served" bash -c "gzip -t '$T/heap.pb.gz'"
pprof -top "$T/heap.pb.gz" >"$T/heap.top" || cat "$T/pprof.err" >&2
check "heap: go tool pprof reads the saved file" has "$T/heap.top" '^Type: inuse_space'

# pprof's bare form: host:port, no path (so /debug/pprof/profile) and
# --seconds as pprof's -seconds; not a terminal, so plain lines only.
fetch cpu --seconds 1 "ops:s3cret@$ADDR" -o "$T/cpu.pb.gz"
check "cpu: exit 0" rc_is cpu 0
check "cpu: host:port means http://host:port/debug/pprof/profile, with ?seconds=" \
  has "$T/cpu.err" "^Fetching profile over HTTP from http://ops:xxxxx@$ADDR/debug/pprof/profile\\?seconds=1\$"
check "cpu: one plain line for the wait, as pprof" has "$T/cpu.err" '^Please wait\.\.\. \(1s\)$'
check "cpu: no countdown when not on a terminal" bash -c "! grep -q 's left' '$T/cpu.err'"
pprof -top "$T/cpu.pb.gz" >"$T/cpu.top" || cat "$T/pprof.err" >&2
check "cpu: go tool pprof reads it" has "$T/cpu.top" '^Type: cpu'
check "cpu: the spinning thread is in it" has "$T/cpu.top" 'spin_inner'
# --seconds replaces the URL's own seconds=.
fetch cpu2 --seconds 1 "http://ops:s3cret@$ADDR/debug/pprof/profile?seconds=30&x=1" -o "$T/cpu2.pb.gz"
check "--seconds replaces ?seconds=" has "$T/cpu2.err" 'profile\?x=1&seconds=1$'

# Standard input and files, byte for byte.
"$C" fetch - -o "$T/stdin.pb.gz" <"$T/heap.pb.gz" 2>"$T/stdin.err"
check "-: saved byte for byte" cmp -s "$T/heap.pb.gz" "$T/stdin.pb.gz"
fetch file "$T/heap.pb.gz" -o "$T/copy.pb.gz"
check "a file: exit 0" rc_is file 0
check "a file: saved byte for byte" cmp -s "$T/heap.pb.gz" "$T/copy.pb.gz"
check "a file: nothing said of HTTP" bash -c "! grep -q Fetching '$T/file.err'"
"$C" fetch "$T/heap.pb.gz" -o - >"$T/stdout.pb.gz" 2>/dev/null
check "-o -: to standard output" cmp -s "$T/heap.pb.gz" "$T/stdout.pb.gz"

# Failures: one line, exit 1, and FILE as it was, with no temporary left.
echo old >"$T/keep"
fetch nope "http://ops:s3cret@$ADDR/debug/pprof/nope" -o "$T/keep"
check "404: exit 1 and one line" one_error nope
check "404: the status and the server's reason" has "$T/nope.err" '404 Not Found - .+'
check "404: the old file is left alone" [ "$(cat "$T/keep")" = old ]
check "404: no temporary file left" [ "$(find "$T" -maxdepth 1 -name '.keep.*' | wc -l)" = 0 ]
fetch noauth "http://$ADDR/debug/pprof/heap" -o "$T/noauth"
check "no credentials: exit 1 and one line" one_error noauth
check "no credentials: 401" has "$T/noauth.err" '401'
check "no credentials: no file" [ ! -e "$T/noauth" ]
fetch badpw "http://ops:wrong@$ADDR/debug/pprof/heap" -o "$T/badpw"
check "a wrong password: 401" has "$T/badpw.err" '^cprof fetch: .*401'
port=$(free_port)
fetch refused "127.0.0.1:$port/debug/pprof/heap" -o "$T/refused"
check "refused: exit 1 and one line" one_error refused
check "refused: curl's reason" has "$T/refused.err" "[Cc]onnect"
fetch ftp "ftp://$ADDR/heap" -o "$T/ftp"
check "another scheme: exit 1 and one line" one_error ftp
fetch missing "$T/no-such-file" -o "$T/missing"
check "a missing file: exit 1 and one line" one_error missing
check "a missing file: says so" has "$T/missing.err" 'No such file'
fetch usage "$T/heap.pb.gz"
check "no -o: a usage error" rc_is usage 2
fetch help --help
check "--help: exit 0" rc_is help 0
check "--help: usage on stdout" has "$T/help.out" '^usage: cprof fetch'
stop

# What goes over the wire, seen by a server of our own: the User-Agent,
# Basic auth from the URL, redirects followed (a few, not forever).
cat >"$T/server.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith("/hop"):
            n = int(self.path[4:] or "0")
            self.send_response(302)
            self.send_header("Location", "/hop%d" % (n + 1) if n < 100 else "/echo")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/to-echo":
            self.send_response(301)
            self.send_header("Location", "/echo")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = ("ua=%s\nauth=%s\n" % (self.headers.get("User-Agent"),
                                       self.headers.get("Authorization"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
python3 "$T/server.py" >"$T/server.port" &
SERVER=$!
for _ in $(seq 1 100); do [ -s "$T/server.port" ] && break; sleep 0.05; done
sport=$(cat "$T/server.port")
version=$(sed -n 's/^project(cprof VERSION \([0-9.]*\).*/\1/p' "$CPROF_SOURCE_DIR/CMakeLists.txt")
fetch echo "http://al%40ice:pa%3Ass@127.0.0.1:$sport/to-echo" -o "$T/echo"
check "a redirect is followed" rc_is echo 0
check "User-Agent: cprof/VERSION" has "$T/echo" "^ua=cprof/$version\$"
# al@ice:pa:ss, percent-encoded in the URL, in base64.
check "Basic auth from the URL, percent-decoded" \
  has "$T/echo" "^auth=Basic $(printf 'al@ice:pa:ss' | base64)\$"
fetch hops "http://127.0.0.1:$sport/hop" -o "$T/hops"
check "endless redirects: exit 1 and one line" one_error hops
check "endless redirects: curl says so" has "$T/hops.err" '[Rr]edirect'
kill "$SERVER"
wait "$SERVER" 2>/dev/null || true

finish
