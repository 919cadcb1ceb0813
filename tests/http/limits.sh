# Issue 13, limits: a slow or malicious client cannot stall the server or
# grow its memory without bound. Abusive clients (tests/host/programs/
# slow_clients.c) connect from 127.0.0.2, another address of the loopback,
# as an attacker on another host would; the normal client (curl) from
# 127.0.0.1 must still get an answer within a few seconds: a 200, or a 503
# with Retry-After.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host
EVIL=127.0.0.2

# answered DESC [curl args...] URL: curl gets a 200, or a 503 with
# Retry-After, within 5 s.
answered() {
  local what=$1 code
  shift
  code=$(curl -s -m 5 -o "$T/body" -D "$T/headers" -w '%{http_code}' "$@" || true)
  echo "  $what: HTTP $code"
  if [ "$code" = 200 ] || { [ "$code" = 503 ] && has "$T/headers" '^Retry-After: [0-9]+'; }; then
    pass "$what"
  else
    fail "$what (got '$code')"
  fi
}

rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }

# Requests must arrive whole within 4 s (default 10), to keep the test short.
start srv --ready LD_PRELOAD="$LIB" CPROF_READ_TIMEOUT=4 -- "$H/host_sleeper" 300
PORT=${ADDR##*:}
IDX=http://$ADDR/debug/pprof/
answered "the index answers before any abuse" "$IDX"
RSS0=$(rss_kb "$PID")

# 1. Three hundred connections, each with half a request line, held.
"$H/host_slow_clients" half 127.0.0.1 "$PORT" $EVIL 300 8 >"$T/half.out" &
HALF=$!
for _ in $(seq 1 100); do has "$T/half.out" '^holding' && break; sleep 0.1; done
echo "  $(head -1 "$T/half.out")"
answered "300 half-open connections: the index still answers" "$IDX"
RSS1=$(rss_kb "$PID") # before the profile loads the symbolizer (16 MB, let go when idle)
answered "300 half-open connections: a profile still answers" "http://$ADDR/debug/pprof/goroutine?debug=1"
wait $HALF || true
sed -n 's/^/  /;2,$p' "$T/half.out"
check "the half-open connections were closed by the server" has "$T/half.out" 'closed by the server 300 of 300'


# 2. From five addresses at once: more than CPROF_MAX_CONNECTIONS (64)
# connections are held, and a new client is told so, 503 with Retry-After,
# rather than closed without a word or left waiting.
MANY=()
for i in 2 3 4 5 6; do
  "$H/host_slow_clients" half 127.0.0.1 "$PORT" 127.0.0.$i 30 6 >"$T/many$i.out" &
  MANY+=($!)
done
for i in 2 3 4 5 6; do
  for _ in $(seq 1 100); do has "$T/many$i.out" '^holding' && break; sleep 0.1; done
done
answered "over 64 connections held: a new client is answered" "$IDX"
check "over 64 connections held: the answer is 503 naming CPROF_MAX_CONNECTIONS" \
  has "$T/body" 'too many connections \(CPROF_MAX_CONNECTIONS=64\)'
RSS2=$(rss_kb "$PID")
wait "${MANY[@]}" || true
check "from five addresses: every connection was closed by the server" \
  bash -c "cat '$T'/many*.out | grep -c 'closed by the server \([0-9]*\) of \1' | grep -qx 5"
answered "after they have gone, the index answers" "$IDX"

# 3. Slowloris: a request sent a byte a second is cut off at its deadline
# (4 s here), and the server answers others meanwhile.
"$H/host_slow_clients" trickle 127.0.0.1 "$PORT" $EVIL 1 12 >"$T/trickle.out" &
SLOW=$!
sleep 2
answered "while a client trickles its request, the index answers" "$IDX"
wait $SLOW || true
echo "  trickle: $(tail -1 "$T/trickle.out")"
check "the trickling client is cut off within 4-8 s" has "$T/trickle.out" '^closed after [4-8] s'

# 4. Oversized requests: Go's statuses, and the server answers after them.
big=$(head -c 40000 /dev/zero | tr '\0' a)
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "X-Big: $big" "$IDX" || true)
echo "  a 40 kB header: HTTP $code"
check "a 40 kB request head is refused with 431" [ "$code" = 431 ]
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$IDX?q=$big" || true)
echo "  a 40 kB URI: HTTP $code"
check "a 40 kB URI is refused with 414" [ "$code" = 414 ]
head -c 2000000 /dev/zero | tr '\0' 1 >"$T/big_body"
code=$(curl -s -m 5 -o "$T/body" -w '%{http_code}' --data-binary @"$T/big_body" \
  "http://$ADDR/debug/pprof/symbol" || true)
echo "  a 2 MB body: HTTP $code"
check "a 2 MB body is refused with 413" [ "$code" = 413 ]
answered "after the oversized requests, the index answers" "$IDX"

RSS3=$(rss_kb "$PID")
echo "  VmRSS before ${RSS0} kB; under 300 half-open connections from one address ${RSS1} kB;" \
  "under 200 from five ${RSS2} kB; after it all ${RSS3} kB"
check "VmRSS grew by less than 48 MiB under abuse" [ $((RSS2 - RSS0)) -lt 49152 ]
check "VmRSS after the abuse is within 16 MiB of before" [ $((RSS3 - RSS0)) -lt 16384 ]
stop
finish
