# cprof_cpu_profile_start/stop, as Go's pprof.StartCPUProfile and
# StopCPUProfile: a program profiles its own hot function into a file that
# go tool pprof reads, at the rate cprof_set_cpu_rate set; while it
# records, /debug/pprof/profile shares its recording, at its rate (issue
# 32), and once it stopped, the endpoint starts its own. Under
# CPROF_OUTPUT the start shares that recording too.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
start api --ready -- "$P/cpu_api" "$T/api.pb.gz"
check "HTTP profile while the program records: 200" \
  [ "$(http "http://$ADDR/debug/pprof/profile?seconds=1")" = 200 ]
pprof -top "$T/body" >"$T/http.top" || fail "go tool pprof reads the endpoint's profile"
check "... it names the program's hot function" has "$T/http.top" ' api_hot_function$'
check "... it lasted its own second" has "$T/http.top" '^Duration: (1|1\.0[0-9]*|0\.9[5-9][0-9]*)s'
kill -USR1 "$PID"
for _ in $(seq 1 200); do has "$T/api.out" '^stopped$' && break; sleep 0.05; done
check "the program stopped its profile" has "$T/api.out" '^stopped$'
check "... every call returning what it should" bash -c "! grep -v '^cprof: serving' '$T/api.err'"
pprof -top "$T/api.pb.gz" >"$T/top" || fail "go tool pprof reads the written file"
check "it is a CPU profile" has "$T/top" '^Type: cpu$'
check "it names the hot function" has "$T/top" ' api_hot_function$'
pprof -raw "$T/api.pb.gz" >"$T/raw" || fail "go tool pprof -raw reads the written file"
check "sampled at cprof_set_cpu_rate(250): a 4 ms period" has "$T/raw" '^Period: 4000000$'

# Stopped: the endpoint has the profiler again, at the rate set.
check "HTTP profile once the program stopped: 200" \
  [ "$(http "http://$ADDR/debug/pprof/profile?seconds=1")" = 200 ]
pprof -raw "$T/body" >"$T/raw2" || fail "go tool pprof -raw reads the endpoint's profile"
check "the endpoint samples at cprof_set_cpu_rate(250) too" has "$T/raw2" '^Period: 4000000$'
kill "$PID"
await api
check "the program exited 0" rc_is api 0

# CPROF_OUTPUT records the whole run: the program's own start shares it.
run beside CPROF_ADDR=0 CPROF_OUTPUT="$T/out" -- "$P/cpu_api" --beside "$T/beside.pb.gz"
check "under CPROF_OUTPUT: start 0, a second -EBUSY, stop 0" rc_is beside 0
check "... the program's profile names its hot function" \
  eval 'pprof -top "$T/beside.pb.gz" | grep -q " api_hot_function$"'
check "... and CPROF_OUTPUT still wrote its profile" \
  eval 'pprof -top "$T/out/cpu.pb.gz" | grep -q " api_hot_function$"'
finish
