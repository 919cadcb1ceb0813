# CPROF_TLS_CERT and CPROF_TLS_KEY: HTTPS through libmicrohttpd's GnuTLS,
# read by curl with the certificate and by go tool pprof (https+insecure,
# its scheme for a self-signed one); plain HTTP on that port gets nothing.
# A bad pair is one stderr line, the server off, and the program as it was.
. "$(dirname "$0")/lib.sh"

command -v openssl >/dev/null || skip "no openssl to make a certificate (scripts/install-deps.sh test)"
P=$B/tests/integration
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$T/key.pem" -out "$T/cert.pem" 2>"$T/openssl.err" || { cat "$T/openssl.err"; exit 1; }

# start_tls NAME ENV...: as lib.sh's start, for the "serving https://" line.
start_tls() {
  local name=$1
  shift
  : >"$T/$name.err"
  env CPROF_ADDR=127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
  PID=$!
  for _ in $(seq 1 200); do
    ADDR=$(sed -n 's|^cprof: serving https://\([^/]*\)/.*|\1|p' "$T/$name.err" | head -1)
    if [ -n "$ADDR" ] && has "$T/$name.out" '^ready$'; then return 0; fi
    kill -0 "$PID" 2>/dev/null || { cat "$T/$name.err" >&2; return 1; }
    sleep 0.05
  done
  cat "$T/$name.err" >&2
  return 1
}

start_tls target LD_PRELOAD="$LIB" CPROF_TLS_CERT="$T/cert.pem" CPROF_TLS_KEY="$T/key.pem" \
  "$P/stacks_plain"
check "the serving line says https" has "$T/target.err" "^cprof: serving https://$ADDR/debug/pprof/"
check "curl --cacert: the index over HTTPS" \
  [ "$(http "https://$ADDR/debug/pprof/" --cacert "$T/cert.pem")" = 200 ]
check "the index lists goroutine" has "$T/body" 'goroutine'
check "curl: a profile over HTTPS" \
  [ "$(http "https://$ADDR/debug/pprof/goroutine?debug=1" --cacert "$T/cert.pem")" = 200 ]
check "the profile has stacks" has "$T/body" 'spin_inner'
pprof -top "https+insecure://$ADDR/debug/pprof/heap" >"$T/top" ||
  { fail "go tool pprof over https+insecure"; cat "$T/pprof.err" >&2; }
check "go tool pprof reads the heap over HTTPS and shows its top" has "$T/top" '^Type: inuse_space'
check "its top has the table header" has "$T/top" 'flat%'
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$ADDR/debug/pprof/" || true)
check "plain HTTP to the TLS port gets no answer ($code)" [ "$code" = 000 ]
check "without the certificate curl refuses the self-signed one" \
  bash -c "! curl -s -o /dev/null 'https://$ADDR/debug/pprof/'"
check "still serving after the failed handshakes" \
  [ "$(http "https://$ADDR/debug/pprof/" --cacert "$T/cert.pem")" = 200 ]
stop

# Beyond the connection cap over TLS: no plain 503 can be written before the
# handshake, so the refused connection gets its 503 inside TLS.
start_tls capped LD_PRELOAD="$LIB" CPROF_TLS_CERT="$T/cert.pem" CPROF_TLS_KEY="$T/key.pem" \
  CPROF_MAX_CONNECTIONS=2 "$P/stacks_plain"
exec 5<>"/dev/tcp/${ADDR%:*}/${ADDR##*:}" 6<>"/dev/tcp/${ADDR%:*}/${ADDR##*:}"
sleep 0.3
code=$(curl -s -D "$T/capped.h" -o "$T/capped.body" -w '%{http_code}' --max-time 5 \
  --cacert "$T/cert.pem" "https://$ADDR/debug/pprof/" || true)
check "two idle connections held, a third over HTTPS gets 503 ($code)" [ "$code" = 503 ]
check "... with Retry-After" has "$T/capped.h" '^Retry-After: 1'
check "... naming CPROF_MAX_CONNECTIONS" has "$T/capped.body" 'CPROF_MAX_CONNECTIONS=2'
exec 5>&- 6>&-
sleep 0.3
check "once they close, HTTPS answers again" \
  [ "$(http "https://$ADDR/debug/pprof/" --cacert "$T/cert.pem")" = 200 ]
stop

# Bad pairs: exactly one stderr line naming the file, no server, and the
# program prints and exits as without cprof.
prog=(sh -c 'echo out; echo err >&2; exit 7')
run plain -- "${prog[@]}"
echo garbage >"$T/garbage.pem"
: >"$T/empty.pem"
bad_pairs=(
  "garbage-cert|$T/garbage.pem|$T/key.pem|garbage.pem"
  "missing-key|$T/cert.pem|$T/nokey.pem|nokey.pem: cannot read it: No such file"
  "swapped|$T/key.pem|$T/cert.pem|key.pem"
  "empty-key|$T/cert.pem|$T/empty.pem|empty.pem"
  "cert-only|$T/cert.pem||CPROF_TLS_CERT is set but CPROF_TLS_KEY is not"
  "key-only||$T/key.pem|CPROF_TLS_KEY is set but CPROF_TLS_CERT is not"
)
for pair in "${bad_pairs[@]}"; do
  IFS='|' read -r name cert key says <<<"$pair"
  run "$name" LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_TLS_CERT="$cert" CPROF_TLS_KEY="$key" \
    -- "${prog[@]}"
  grep '^cprof:' "$T/$name.err" >"$T/$name.cprof" || true
  check "$name: exactly one cprof line" [ "$(wc -l <"$T/$name.cprof")" = 1 ]
  check "$name: it names the file and why" has "$T/$name.cprof" "$says"
  check "$name: it says the server stays off" has "$T/$name.cprof" 'server stays off'
  check "$name: no server" bash -c "! grep -q serving '$T/$name.err'"
  check "$name: same output" same plain "$name" out
  check "$name: same exit status" same plain "$name" rc
  check "$name: the program's own stderr line" has "$T/$name.err" '^err$'
done
cat "$T/garbage-cert.cprof" "$T/missing-key.cprof"

finish
