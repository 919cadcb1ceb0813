# Slow clients are told 503, never reset (issue 28, defect 9). Three
# hundred connections from 127.0.0.2, each holding half a request line,
# used to fill libmicrohttpd's per-address cap, past which it accepts a
# connection and closes it at once: a client that had sent its request was
# reset (curl's exit code 56) or got nothing (52). Now, while they are held:
# - a client on another address (127.0.0.3) is served the index, 200;
# - a client on the same address (127.0.0.2) is told 503 with Retry-After,
#   or served, and curl exits 0 every time.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

# Requests must arrive whole within 4 s (default 10): the slow clients
# served are cut off well within the 10 s they hold.
start srv --ready LD_PRELOAD="$LIB" CPROF_READ_TIMEOUT=4 -- "$H/host_sleeper" 60
PORT=${ADDR##*:}
IDX=http://127.0.0.1:$PORT/debug/pprof/

# fetch FROM: one request for the index from the loopback address FROM;
# prints "CODE EXIT" (curl's status code and exit code) and keeps the
# headers in $T/headers.FROM.
fetch() {
  local code rc=0
  code=$(curl -s -m 5 --interface "$1" -o /dev/null -D "$T/headers.$1" -w '%{http_code}' "$IDX") || rc=$?
  echo "$code $rc"
}

"$H/host_slow_clients" half 127.0.0.1 "$PORT" 127.0.0.2 300 10 >"$T/half.out" &
HALF=$!
# The half-sent requests go out while this loop asks: the asking starts
# when the first are held, and lasts while they are.
sleep 0.5
other_ok=0 other_bad=0 same_told=0 same_served=0 same_bad=0 resets=0
for i in $(seq 1 16); do
  read -r code rc <<<"$(fetch 127.0.0.3)"
  if [ "$code" = 200 ] && [ "$rc" = 0 ]; then other_ok=$((other_ok + 1)); else
    other_bad=$((other_bad + 1)); echo "  127.0.0.3, request $i: HTTP $code, curl exit $rc"; fi
  read -r code rc <<<"$(fetch 127.0.0.2)"
  if [ "$rc" = 56 ] || [ "$rc" = 52 ]; then resets=$((resets + 1)); fi
  if [ "$rc" = 0 ] && [ "$code" = 503 ] && has "$T/headers.127.0.0.2" '^Retry-After: [0-9]+'; then
    same_told=$((same_told + 1))
  elif [ "$rc" = 0 ] && [ "$code" = 200 ]; then
    same_served=$((same_served + 1))
  else
    same_bad=$((same_bad + 1)); echo "  127.0.0.2, request $i: HTTP $code, curl exit $rc"
  fi
  sleep 0.3
done
wait $HALF || true
sed 's/^/  /' "$T/half.out"
echo "  127.0.0.3: $other_ok served, $other_bad not"
echo "  127.0.0.2: $same_told told 503 with Retry-After, $same_served served," \
  "$same_bad neither ($resets reset or closed without an answer)"
check "the slow clients held their connections" has "$T/half.out" '^holding 300$'
check "another address is served the index every time" [ "$other_bad" = 0 ]
check "the slow clients' address is told 503 with Retry-After or served, every time" [ "$same_bad" = 0 ]
check "the slow clients' address was told 503 at least once (its cap was reached)" [ "$same_told" -gt 0 ]
check "no request was reset or closed without an answer" [ "$resets" = 0 ]
check "the slow clients were each told 503 or cut off at their deadline" \
  has "$T/half.out" '^closed by the server 300 of 300$'
stop
finish
