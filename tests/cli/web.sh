# cprof web: serves the viewer page for a profile over HTTP, as go tool
# pprof -http does, until interrupted; and cprof flame writes the same page
# to a file. The page must hold the profile (its hot function in the JSON)
# and load nothing from anywhere (no URL in a src or href).
. "$(dirname "$0")/../integration/lib.sh"
CPROF=$B/cprof

start demo -- "$B/examples/demo_server" --seconds 30
curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2"
stop

PORT=$(free_port)
"$CPROF" web "$T/cpu.pb.gz" --http "127.0.0.1:$PORT" >"$T/web.out" 2>"$T/web.err" &
WEB=$!
for _ in $(seq 1 100); do
  grep -q "^Serving web UI on http://127.0.0.1:$PORT/" "$T/web.err" && break
  sleep 0.1
done
check "it says where it serves" has "$T/web.err" "^Serving web UI on http://127.0.0.1:$PORT/\$"
check "GET / is the page" test "$(http "http://127.0.0.1:$PORT/")" = 200
cp "$T/body" "$T/page.html"
check "... an HTML page with the profile's data" \
  bash -c "grep -q '<script type=\"application/json\" id=\"profile-data\">' '$T/page.html' && grep -q 'hold_lock' '$T/page.html'"
check "... that loads nothing from the network" bash -c "! grep -Eq '(src|href)=\"?(https?:)?//' '$T/page.html'"
check "... with a policy that forbids loading" has "$T/headers" "^Content-Security-Policy: default-src 'none'"
check "other paths are 404" test "$(http "http://127.0.0.1:$PORT/nothing")" = 404
kill -INT "$WEB"
rc=0
wait "$WEB" || rc=$?
check "Ctrl-C ends it with status 0" test "$rc" = 0

# flame writes the same page.
run flame -- "$CPROF" flame "$T/cpu.pb.gz" -o "$T/flame.html"
check "flame: exit 0 and says where" bash -c "[ \$(cat '$T/flame.rc') = 0 ] && grep -q '^Saved flame graph in $T/flame.html\$' '$T/flame.err'"
check "... the page web served" cmp -s "$T/flame.html" "$T/page.html"

# A port in use: one line, exit 1.
# (SO_REUSEADDR: the port may still hold the server's closed connections.)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); print("bound", flush=True); time.sleep(30)' \
  "$PORT" >"$T/holder.out" &
for _ in $(seq 1 50); do has "$T/holder.out" bound && break; sleep 0.1; done
RUN_TIMEOUT=10 run busy -- "$CPROF" web "$T/cpu.pb.gz" --http "127.0.0.1:$PORT"
check "a port in use: exit 1 and one line" \
  bash -c "[ \$(cat '$T/busy.rc') = 1 ] && [ \$(wc -l <'$T/busy.err') = 1 ]"
run badaddr -- "$CPROF" web "$T/cpu.pb.gz" --http "nonsense"
check "a bad --http: a usage error (2)" rc_is badaddr 2
finish
