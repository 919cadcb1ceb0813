# Every endpoint, and every kind of bad input, through curl against a
# running process; then prefix and credentials.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
start target --ready -- "$P/stacks_linked"
U=http://$ADDR/debug/pprof

# Index.
check "index is 200" [ "$(http "$U/")" = 200 ]
check "index is HTML" has "$T/headers" '^Content-Type: text/html; charset=utf-8'
check "index links the goroutine profile" has "$T/body" "href='goroutine\?debug=1'"
check "index links the full dump" has "$T/body" "href='goroutine\?debug=2'"
check "every answer has nosniff" has "$T/headers" '^X-Content-Type-Options: nosniff'
check "/debug/pprof redirects to /debug/pprof/" [ "$(http "http://$ADDR/debug/pprof")" = 301 ]
check "redirect target" has "$T/headers" '^Location: /debug/pprof/'

# cmdline: argv joined by NUL, no trailing NUL.
check "cmdline is 200" [ "$(http "$U/cmdline")" = 200 ]
printf '%s' "$P/stacks_linked" >"$T/want"
check "cmdline is argv" cmp -s "$T/body" "$T/want"
check "cmdline is text" has "$T/headers" '^Content-Type: text/plain; charset=utf-8'

# symbol.
check "symbol GET is 200" [ "$(http "$U/symbol")" = 200 ]
check "symbol GET answers num_symbols: 1" has "$T/body" '^num_symbols: 1$'
http "$U/goroutine?debug=1" >/dev/null
addr=$(grep -E $'^#\t0x[0-9a-f]+\tspin_inner\\+' "$T/body" | head -1 | cut -f2)
check "debug=1 lists spin_inner with its address" [ -n "$addr" ]
check "symbol POST is 200" [ "$(http "$U/symbol" --data-binary "0x1+$addr+junk")" = 200 ]
check "symbol POST names the address" has "$T/body" "^$addr spin_inner$"
check "symbol POST skips what it cannot name" [ "$(wc -l <"$T/body")" = 2 ]
check "symbol GET with a query names it too" [ "$(http "$U/symbol?$addr")" = 200 ]
check "symbol GET query answer" has "$T/body" "^$addr spin_inner$"
head -c 100000 /dev/urandom >"$T/garbage"
check "garbage body is still 200" [ "$(http "$U/symbol" --data-binary @"$T/garbage")" = 200 ]
check "garbage body answers num_symbols" has "$T/body" '^num_symbols: 1$'
head -c 1100000 /dev/zero >"$T/big"
check "a body over 1 MiB is 413" [ "$(http "$U/symbol" --data-binary @"$T/big")" = 413 ]

# goroutine: formats and headers.
check "goroutine is 200" [ "$(http "$U/goroutine")" = 200 ]
check "profile is octet-stream" has "$T/headers" '^Content-Type: application/octet-stream'
check "profile is an attachment" has "$T/headers" '^Content-Disposition: attachment; filename="goroutine"'
check "profile is gzip" [ "$(head -c2 "$T/body" | od -An -tx1 | tr -d ' ')" = 1f8b ]
check "threads is the same profile" [ "$(http "$U/threads")" = 200 ]
check "threads is gzip too" [ "$(head -c2 "$T/body" | od -An -tx1 | tr -d ' ')" = 1f8b ]
check "debug=1 is 200" [ "$(http "$U/goroutine?debug=1")" = 200 ]
check "debug=1 header as Go's" has "$T/body" '^goroutine profile: total [0-9]+$'
check "debug=1 has counted stacks" has "$T/body" '^[0-9]+ @( 0x[0-9a-f]+)+$'
cp "$T/body" "$T/text"
check "go tool pprof parses debug=1" pprof -raw "$T/text"
check "debug=2 is 200" [ "$(http "$U/goroutine?debug=2")" = 200 ]
check "debug=2 has the spinner with its state" has "$T/body" '^thread [0-9]+ "spinner" \[(running|sleeping)\]:$'
check "debug=2 has Go-style frames" has "$T/body" $'^\t.*stacks_target\\.c:[0-9]+ \\+0x[0-9a-f]+$'
check "debug=2 names spin_inner" has "$T/body" '^spin_inner\(\)$'
check "seconds=1 gives a delta" [ "$(http "$U/goroutine?seconds=1")" = 200 ]
check "delta is named as Go's" has "$T/headers" 'filename="goroutine-delta"'
cp "$T/body" "$T/delta.pb.gz"
check "go tool pprof reads the delta" pprof -raw "$T/delta.pb.gz"

# Errors: Go's status codes, one-line text, X-Go-Pprof.
check "unknown profile is 404" [ "$(http "$U/nosuch")" = 404 ]
check "404 says Unknown profile" has "$T/body" '^Unknown profile$'
check "errors carry X-Go-Pprof" has "$T/headers" '^X-Go-Pprof: 1'
check "errors are text" has "$T/headers" '^Content-Type: text/plain; charset=utf-8'
check "other paths are 404" [ "$(http "http://$ADDR/elsewhere")" = 404 ]
for q in debug=abc debug=-1 debug=1x 'debug=%zz' seconds=0 seconds=abc seconds=-5 seconds=99999999 'seconds=1&debug=1'; do
  check "bad query $q is 400" [ "$(http "$U/goroutine?$q")" = 400 ]
  check "bad query $q gives one line" [ "$(wc -l <"$T/body")" = 1 ]
done
check "go tool pprof prints the server's message" bash -c \
  "! go tool pprof -raw '$U/goroutine?debug=zz' >/dev/null 2>'$T/msg'; grep -q 'must be a non-negative integer' '$T/msg'"
check "a malformed request line does not kill the server" bash -c \
  "printf 'GARBAGE\r\n\r\n' | timeout 5 bash -c 'cat >/dev/tcp/${ADDR%:*}/${ADDR#*:}' || true"
check "still serving after garbage" [ "$(http "$U/")" = 200 ]
# Many clients at once, every endpoint mixed: each answer is 200, nothing
# deadlocks (thread capture and symbolization take locks of their own).
clients=()
for c in 1 2 3 4; do
  (for i in $(seq 1 15); do
    for path in goroutine 'goroutine?debug=1' 'goroutine?debug=2' cmdline ''; do
      curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "$U/$path"
    done
    curl -s -o /dev/null -w '%{http_code}\n' --max-time 20 "$U/symbol" --data-binary "$addr"
  done) >"$T/concurrent.$c" &
  clients+=($!)
done
wait "${clients[@]}"
check "4 clients x 90 mixed requests: all 200" bash -c "[ \$(cat '$T'/concurrent.* | grep -c '^200$') = 360 ]"
check "the program is still running" kill -0 "$PID"
stop

# Prefix: everything moves under it, nothing is left at the root.
start prefixed --ready CPROF_PREFIX=/auth -- "$P/stacks_linked"
check "prefix: index under the prefix" [ "$(http "http://$ADDR/auth/debug/pprof/")" = 200 ]
check "prefix: the root is 404" [ "$(http "http://$ADDR/debug/pprof/")" = 404 ]
check "prefix: go tool pprof reads it" pprof -raw "http://$ADDR/auth/debug/pprof/goroutine"
stop

# Credentials: Basic (as go tool pprof sends for http://user:pw@host) and Bearer.
start locked --ready CPROF_AUTH=ops:s3cret CPROF_TOKEN=tok123 -- "$P/stacks_linked"
U=http://$ADDR/debug/pprof
check "auth: no credentials is 401" [ "$(http "$U/")" = 401 ]
check "auth: asks for Basic" has "$T/headers" '^WWW-Authenticate: Basic realm="cprof"'
check "auth: wrong password is 401" [ "$(http "$U/" -u ops:wrong)" = 401 ]
check "auth: right password is 200" [ "$(http "$U/" -u ops:s3cret)" = 200 ]
check "auth: bearer token is 200" [ "$(http "$U/" -H 'Authorization: Bearer tok123')" = 200 ]
check "auth: wrong token is 401" [ "$(http "$U/" -H 'Authorization: Bearer nope')" = 401 ]
check "auth: go tool pprof with user:pw in the URL" pprof -raw "http://ops:s3cret@$ADDR/debug/pprof/goroutine"
stop
finish
