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
answered "300 half-open connections: a profile still answers" "http://$ADDR/debug/pprof/goroutine?debug=1"
RSS1=$(rss_kb "$PID")
wait $HALF || true
sed -n 's/^/  /;2,$p' "$T/half.out"
check "the half-open connections were closed by the server" has "$T/half.out" 'closed by the server 300 of 300'

RSS2=$(rss_kb "$PID")
echo "  VmRSS before ${RSS0} kB, under 300 half-open connections ${RSS1} kB, after ${RSS2} kB"
stop
finish
