# The runtime/pprof API of cprof.h, as a linked program uses it
# (programs/library_api.c): profiles written to files with
# cprof_profile_write and cprof_cpu_profile_start/stop, read by go tool
# pprof; cprof_do's labels, nested and inherited, in the CPU and goroutine
# profiles; a custom profile's counts in a file and over HTTP. The program
# checks every wrong argument itself.
. "$(dirname "$0")/lib.sh"

D=$T/profiles
mkdir -p "$D"
start api --ready -- "$B/tests/integration/library_api" "$D"
check "every wrong argument got its error code" has "$T/api.out" '^bad arguments ok$'
check "nothing failed in the program" has "$T/api.err" '^library_api: [0-9]+ checks, 0 failed$'

# Each profile written to a file is what go tool pprof expects of it.
types() { pprof -raw "$D/$1.pb.gz" | sed -n '/^Samples:/{n;p;q}'; }
for p in goroutine:goroutine/count threadcreate:threadcreate/count \
  "heap:alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]" \
  "allocs:alloc_objects/count alloc_space/bytes[dflt] inuse_objects/count inuse_space/bytes" \
  "block:contentions/count delay/nanoseconds" "mutex:contentions/count delay/nanoseconds" \
  connections:connections/count "wall:samples/count wall/nanoseconds"; do
  name=${p%%:*} want=${p#*:}
  got=$(types "$name" | tr -s ' ' | sed 's/^ //;s/ $//')
  check "$name.pb.gz: sample types $want (got: $got)" [ "$got" = "$want" ]
done
pprof -tags "$D/wall.pb.gz" >"$T/wall.tags" || fail "go tool pprof -tags reads wall.pb.gz"
check "wall.pb.gz: threads asleep, labelled with their state and call" \
  eval 'has "$T/wall.tags" " sleeping$" && has "$T/wall.tags" "^ *syscall: "'
check "heap.txt: Go's legacy heap text" has "$D/heap.txt" '^heap profile: '
check "goroutine.txt: Go's count text" has "$D/goroutine.txt" '^goroutine profile: total [0-9]+$'
check "threads.txt (debug=2): every thread's stack" has "$D/threads.txt" '^thread [0-9]+ ".*" \[.*\]:$'
check "connections.txt: the custom profile's total" has "$D/connections.txt" '^connections profile: total 25$'

# The CPU profile taken with cprof_cpu_profile_start/stop.
pprof -top "$D/cpu.pb.gz" >"$T/cpu.top" || fail "go tool pprof reads cpu.pb.gz"
check "cpu.pb.gz: a CPU profile" has "$T/cpu.top" '^Type: cpu$'
check "cpu.pb.gz: names hot_loop" has "$T/cpu.top" ' hot_loop$'
check "cpu.pb.gz: names the labelled pay_work" has "$T/cpu.top" ' pay_work$'
pprof -tags "$D/cpu.pb.gz" >"$T/cpu.tags" || fail "go tool pprof -tags reads cpu.pb.gz"
check "cpu.pb.gz: cprof_do's label request=checkout" has "$T/cpu.tags" 'checkout'
check "cpu.pb.gz: the nested label step=pay" has "$T/cpu.tags" '^ *step: .*pay|pay *$'
pprof -top -tagfocus=step=pay "$D/cpu.pb.gz" >"$T/pay.top" || fail "-tagfocus=step=pay"
check "cpu.pb.gz: step=pay is pay_work's" has "$T/pay.top" ' pay_work$'
check "cpu.pb.gz: and not hot_loop's" bash -c "! grep -q ' hot_loop\$' '$T/pay.top'"

# The thread created inside cprof_do inherited both labels, in the file and
# over HTTP.
for src in "$D/goroutine.pb.gz" "http://$ADDR/debug/pprof/goroutine"; do
  pprof -top -tagfocus=request=checkout "$src" >"$T/g.top" || fail "goroutine -tagfocus ($src)"
  check "goroutine ($src): the inherited thread carries request=checkout" has "$T/g.top" ' inherited_worker$'
  pprof -top -tagfocus=step=pay "$src" >"$T/g2.top" || fail "goroutine -tagfocus step ($src)"
  check "goroutine ($src): and step=pay" has "$T/g2.top" ' inherited_worker$'
done

# The custom profile over HTTP: in the index with its count, and by stack.
http "http://$ADDR/debug/pprof/" >/dev/null
check "index: connections with its count 25" has "$T/body" "<tr><td>25</td><td><a href='connections\?debug=1'>connections</a>"
check "index: its description" has "$T/body" 'Open connections, by the stack that opened them'
pprof -top "http://$ADDR/debug/pprof/connections" >"$T/conn.top" || fail "go tool pprof reads /connections"
check "connections: 20 opened by open_from_a" has "$T/conn.top" '^ +20 .* open_from_a$'
check "connections: 5 opened by open_from_b" has "$T/conn.top" '^ +5 .* open_from_b$'
pprof -top "$D/connections.pb.gz" >"$T/conn.file" || fail "go tool pprof reads connections.pb.gz"
check "connections.pb.gz: the same 20 and 5" \
  bash -c "grep -Eq '^ +20 .* open_from_a\$' '$T/conn.file' && grep -Eq '^ +5 .* open_from_b\$' '$T/conn.file'"

kill -TERM "$PID"
await api
check "the program ends cleanly on SIGTERM" rc_is api 0
finish
