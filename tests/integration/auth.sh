# CPROF_AUTH and CPROF_TOKEN, through the real server and real clients:
# every path answers 401 without them, with one WWW-Authenticate challenge
# per configured scheme; the right ones open the index and the profiles to
# curl and go tool pprof; wrong ones are logged, one line a second at most,
# never with the credential. And ":PORT" without credentials warns, once.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
start target --ready LD_PRELOAD="$LIB" CPROF_AUTH=ops:s3cret CPROF_TOKEN=t0ken -- "$P/stacks_plain"
base=http://$ADDR/debug/pprof

for path in / /heap /goroutine /debug/pprof-nothing-here; do
  url=$base$path
  [ "$path" = /debug/pprof-nothing-here ] && url=http://$ADDR/nothing
  check "$path: 401 without credentials" [ "$(http "$url")" = 401 ]
  check "$path: a Basic challenge" has "$T/headers" '^WWW-Authenticate: Basic realm="cprof"'
  check "$path: a Bearer challenge" has "$T/headers" '^WWW-Authenticate: Bearer realm="cprof"'
done
check "the redirect is behind the credentials too" [ "$(http "http://$ADDR/debug/pprof")" = 401 ]

check "Basic: the index" [ "$(http "$base/" -u ops:s3cret)" = 200 ]
check "Basic: the index lists heap" has "$T/body" 'heap'
check "Basic: a profile" [ "$(http "$base/goroutine?debug=1" -u ops:s3cret)" = 200 ]
check "Basic: the profile has stacks" has "$T/body" 'spin_inner'
check "Bearer: the index" [ "$(http "$base/" -H 'Authorization: Bearer t0ken')" = 200 ]
check "Bearer: a profile" [ "$(http "$base/heap?debug=1" -H 'Authorization: Bearer t0ken')" = 200 ]
check "a wrong password: 401" [ "$(http "$base/" -u ops:s3creT)" = 401 ]
check "a token one character short: 401" [ "$(http "$base/" -H 'Authorization: Bearer t0ke')" = 401 ]
check "a token one character long: 401" [ "$(http "$base/" -H 'Authorization: Bearer t0kenn')" = 401 ]

pprof -top "http://ops:s3cret@$ADDR/debug/pprof/heap" >"$T/top" ||
  { fail "go tool pprof with user:password in the URL"; cat "$T/pprof.err" >&2; }
check "go tool pprof reads the heap with user:pw@" has "$T/top" '^Type: inuse_space'
pprof -top "http://$ADDR/debug/pprof/heap" >"$T/top" && fail "go tool pprof without credentials got a profile"
check "go tool pprof without credentials is told 401" has "$T/pprof.err" '401|unauthorized'

# A flood of wrong credentials: a line a second at most, and the lines'
# counts add up to every refusal once a last one comes after a quiet second.
# (A first wrong one, a quiet second after the ones above, says what
# they left uncounted; after another quiet second nothing is pending.)
sleep 1.1
curl -s -o /dev/null -u ops:guess "$base/"
sleep 1.1
: >"$T/target.err"
t0=$(date +%s.%N)
for _ in $(seq 1 50); do curl -s -o /dev/null -u ops:guess-XYZZY "$base/heap"; done
t1=$(date +%s.%N)
lines=$(grep -c 'wrong credentials' "$T/target.err" || true)
# A line a second: one at the first refusal, then one in each second begun
# since (50 requests took 0.4 s here, over 3 s on a loaded machine).
most=$(awk -v a="$t0" -v b="$t1" 'BEGIN { s = b - a; n = int(s); if (n < s) n++; print n + 1 }')
echo "50 wrong credentials gave $lines lines in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
check "50 wrong credentials: at least one line" [ "$lines" -ge 1 ]
check "50 wrong credentials: at most a line a second ($most)" [ "$lines" -le "$most" ]
sleep 1.1
curl -s -o /dev/null -H 'Authorization: Bearer XYZZY-token' "$base/"
total=$(awk '/wrong credentials/ { n++; if (match($0, /; [0-9]+ more/)) n += substr($0, RSTART + 2, RLENGTH - 7) } END { print n }' "$T/target.err")
check "every refusal is counted (51): $total" [ "$total" = 51 ]
check "the lines name the path" has "$T/target.err" '401 for /debug/pprof/heap: wrong credentials'
check "no credential in the log" bash -c "! grep -Eq 'XYZZY|s3cret|guess' '$T/target.err'"
check "a request without credentials is not logged" bash -c \
  "curl -s -o /dev/null '$base/' && sleep 1.1 && curl -s -o /dev/null '$base/x' && ! grep -q 'for /debug/pprof/x' '$T/target.err'"
stop

# Listening beyond loopback without credentials: one warning at start.
start open LD_PRELOAD="$LIB" CPROF_ADDR=:0 -- "$P/stacks_plain"
check ":PORT without credentials: one warning" [ "$(grep -c 'open to the network' "$T/open.err")" = 1 ]
port=${ADDR##*:}
check ":PORT still serves (on loopback too)" [ "$(http "http://127.0.0.1:$port/debug/pprof/")" = 200 ]
check ":PORT: still one warning after requests" [ "$(grep -c 'open to the network' "$T/open.err")" = 1 ]
stop
start closed LD_PRELOAD="$LIB" CPROF_ADDR=:0 CPROF_TOKEN=t0ken -- "$P/stacks_plain"
check ":PORT with a token: no warning" bash -c "! grep -q 'open to the network' '$T/closed.err'"
stop
start loop LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- "$P/stacks_plain"
check "loopback: no warning" bash -c "! grep -q 'open to the network' '$T/loop.err'"
stop

finish
