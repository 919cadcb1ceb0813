# cprof_cpu_profile_start/stop, as Go's pprof.StartCPUProfile and
# StopCPUProfile: a program profiles its own hot function into a file that
# go tool pprof reads, at the rate cprof_set_cpu_rate set; while it
# records, /debug/pprof/profile is told the profiler is in use, and once
# it stopped, the endpoint has it again. Under CPROF_OUTPUT the start is
# -EBUSY.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
start api --ready -- "$P/cpu_api" "$T/api.pb.gz"
check "HTTP profile while the program records: 500" \
  [ "$(http "http://$ADDR/debug/pprof/profile?seconds=1")" = 500 ]
check "... saying cpu profiling is already in use" \
  has "$T/body" '^Could not enable CPU profiling: cpu profiling already in use$'
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

# CPROF_OUTPUT records the whole run: the program's own start is -EBUSY.
run busy CPROF_ADDR=0 CPROF_OUTPUT="$T/out" -- "$P/cpu_api" --busy "$T/busy.pb.gz"
check "under CPROF_OUTPUT: start -EBUSY, stop -ENOENT" rc_is busy 0
check "... and CPROF_OUTPUT still wrote its profile" [ -s "$T/out/cpu.pb.gz" ]
finish
