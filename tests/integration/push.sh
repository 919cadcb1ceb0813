# CPROF_PUSH_URL: the library pushes its own CPU and heap profiles to
# Grafana Pyroscope's ingest API, checked against a stand-in receiver
# (tests/cli/pyroscope_receiver.py) that validates the query and the body:
#  1. a batch job shorter than the interval: its one window goes at exit,
#     the CPU profile naming batch_heavy with about the 1.5 s it used and
#     the heap profile batch_keep's 16 MiB, under CPROF_PUSH_NAME, with the
#     URL's user:password as HTTP Basic; its output, exit code and stderr
#     its own.
#  2. a server pushing every second to a receiver that refuses its first 3
#     requests: retried, a line when it fails and one when it works again,
#     and every window arrives, each starting where the last ended.
#  3. no receiver: the program's output and exit code its own; a line says
#     pushing fails, and one at exit what was dropped.
#  4. bad settings: one line each, naming the variable, never the password;
#     nothing pushed.
#  5. libcurl is loaded only in a program that pushes.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 is not installed"
P=$B/tests/integration

# ingest DIR NAME: the receiver's verdict on every request it took.
ingest() {
  pprof_types "$1"
  python3 "$RECEIVER" check "$1" "$2"
}

# 1. A batch job.
run plain -- "$P/batch"
receiver job
run job LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_PUSH_URL="http://tester:s3cret@127.0.0.1:$RPORT/" \
  CPROF_PUSH_NAME='batch{env=ci}' CPROF_PUSH_INTERVAL=1m -- "$P/batch"
check "job: output unchanged" same plain job out
check "job: exit code unchanged" same plain job rc
check "job: nothing on stderr" [ ! -s "$T/job.err" ]
ingest "$T/job.rx" 'batch{env=ci}' >"$T/job.check"
check "job: every request a well-formed pprof ingest named batch{env=ci}" \
  [ "$(wc -l <"$T/job.check")" = 1 ]
head -5 "$T/job.check" >&2
check "job: its one window pushed at exit, CPU and heap" \
  has "$T/job.check" '^accepted 2 failed 0 kinds memory,process_cpu$'
cpu=$(grep -lx samples "$T/job.rx"/*.types | head -1)
heap=$(grep -lx inuse_space "$T/job.rx"/*.types | head -1)
pprof -top "${cpu%.types}.pprof" >"$T/job.cpu" || fail "job: go tool pprof reads the CPU profile"
check "job: the CPU profile names the batch work" has "$T/job.cpu" ' batch_heavy$'
check "job: about the 1.5 s of CPU the program used" python3 - "$T/job.cpu" <<'PY'
import re, sys
m = re.search(r'Total samples = ([\d.]+)(ms|s)', open(sys.argv[1]).read())
v = float(m.group(1)) / (1000 if m.group(2) == 'ms' else 1) if m else 0
print("total", v); sys.exit(0 if 1.0 <= v <= 2.2 else 1)
PY
pprof -top -sample_index=inuse_space "${heap%.types}.pprof" >"$T/job.heap" ||
  fail "job: go tool pprof reads the heap profile"
# 16 MiB at one sample per 512 KiB: about 7 % of sampling error.
check "job: the heap profile holds batch_keep's 16 MiB" has "$T/job.heap" '^ *(1[2-9]|20)(\.[0-9]+)?MB .* batch_keep$'
check "job: the URL's user:password sent as HTTP Basic, the CPU rate as sampleRate" \
  python3 - "$T/job.rx" "${cpu%.types}.json" <<'PY'
import base64, glob, json, sys
want = "Basic " + base64.b64encode(b"tester:s3cret").decode()
recs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/*.json") if not f.endswith(".stc.json")]
cpu = json.load(open(sys.argv[2]))
print([r["authorization"] for r in recs], cpu["query"].get("sampleRate"))
sys.exit(0 if recs and all(r["authorization"] == want for r in recs)
         and cpu["query"].get("sampleRate") == ["100"] else 1)
PY

# 2. A server, pushing every second, to a receiver that refuses the first 3.
receiver srv 3
start srv LD_PRELOAD="$LIB" CPROF_PUSH_URL="http://127.0.0.1:$RPORT" CPROF_PUSH_INTERVAL=1s \
  CPROF_PUSH_NAME=demo -- "$B/examples/demo_server" --seconds 6
check "srv: libcurl is loaded in a program that pushes" grep -q libcurl "/proc/$PID/maps"
code=$(http "http://$ADDR/debug/pprof/profile?seconds=2")
check "srv: /debug/pprof/profile beside the push's recording: 200 (issue 32)" [ "$code" = 200 ]
check "srv: ... a CPU profile of its own 2 s" eval 'pprof -top "$T/body" | grep -Eq "^Duration: (2|2\.0[0-9]*|1\.9[0-9]*)s"'
# /metrics counts what the push does, in a form Prometheus reads.
for _ in $(seq 1 100); do
  http "http://$ADDR/metrics" >/dev/null
  has "$T/body" '^cprof_push_profiles_total\{result="pushed"\} [1-9]' && break
  sleep 0.1
done
check "srv: /metrics counts the profiles pushed" has "$T/body" '^cprof_push_profiles_total\{result="pushed"\} [1-9]'
check "srv: and the 3 retried" has "$T/body" '^cprof_push_retries_total 3$'
if command -v promtool >/dev/null; then
  check "srv: promtool accepts /metrics" promtool check metrics <"$T/body"
fi
await srv
check "srv: exit 0" rc_is srv 0
check "srv: one line when pushing fails" \
  [ "$(grep -c "^cprof: cannot push to http://127.0.0.1:$RPORT: HTTP status 503; trying again$" "$T/srv.err")" = 1 ]
check "srv: one when it works again" has "$T/srv.err" "^cprof: pushing to http://127.0.0.1:$RPORT works again$"
check "srv: nothing dropped or refused" bash -c "! grep -q 'dropped\|refused' '$T/srv.err'"
ingest "$T/srv.rx" demo >"$T/srv.check"
check "srv: every request a well-formed pprof ingest" [ "$(wc -l <"$T/srv.check")" = 1 ]
head -5 "$T/srv.check" >&2
check "srv: the 3 refused were sent again: CPU and heap" has "$T/srv.check" '^accepted [0-9]+ failed 3 kinds memory,process_cpu$'
check "srv: a CPU and a heap profile for every window, each window starting where the last ended" \
  python3 - "$T/srv.rx" <<'PY'
import glob, json, sys
recs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/*.json") if not f.endswith(".stc.json")]
ok = [r for r in recs if r["status"] == 200]
win = lambda rs: sorted((int(r["query"]["from"][0]), int(r["query"]["until"][0])) for r in rs)
cpu = win(r for r in ok if "sampleRate" in r["query"])
heap = win(r for r in ok if "sampleRate" not in r["query"])
print("cpu", cpu, "heap", heap)
chained = all(a[1] == b[0] for a, b in zip(cpu, cpu[1:]))
sys.exit(0 if len(cpu) >= 5 and cpu == heap and chained and cpu[-1][1] - cpu[0][0] >= 5 else 1)
PY

# 3. Nobody listening.
port=$(free_port)
run gone LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_PUSH_URL="http://127.0.0.1:$port" -- "$P/batch"
check "gone: output unchanged" same plain gone out
check "gone: exit code unchanged" same plain gone rc
check "gone: one line says pushing fails" \
  [ "$(grep -c "^cprof: cannot push to http://127.0.0.1:$port: [^;]*$" "$T/gone.err")" = 1 ]
check "gone: one at exit says what was dropped" \
  has "$T/gone.err" "^cprof: CPROF_PUSH_URL: pushed 0 profiles to http://127.0.0.1:$port; 2 dropped, 0 refused$"
check "gone: nothing else" [ "$(wc -l <"$T/gone.err")" = 2 ]

# 4. Bad settings: the push stays off, the program runs as it would.
receiver bad
n=0
for setting in "CPROF_PUSH_URL=ftp://tester:s3cret@127.0.0.1:$RPORT" \
  "CPROF_PUSH_URL=http://tester:s3cret@127.0.0.1:$RPORT/x?y" \
  "CPROF_PUSH_NAME=two words" "CPROF_PUSH_NAME=app{env=}" "CPROF_PUSH_INTERVAL=0" \
  "CPROF_PUSH_INTERVAL=5 years"; do
  n=$((n + 1))
  run "bad$n" LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_PUSH_URL="http://tester:s3cret@127.0.0.1:$RPORT" \
    "$setting" -- "$P/batch"
  var=${setting%%=*}
  check "$setting: output and exit code unchanged" eval 'same plain bad$n out && same plain bad$n rc'
  check "$setting: one line, naming $var, and that nothing will be pushed" \
    eval '[ "$(wc -l <"$T/bad$n.err")" = 1 ] && has "$T/bad$n.err" "^cprof: $var.*nothing will be pushed$"'
done
check "bad: nothing was pushed" [ -z "$(ls "$T/bad.rx")" ]
check "no line ever shows the password" bash -c "! cat '$T'/*.err | grep -q s3cret"

# 5. Without CPROF_PUSH_URL, libcurl stays out of the program.
start quiet -- "$B/examples/demo_server" --seconds 30
check "quiet: no libcurl in a program that does not push" bash -c "! grep -q libcurl /proc/$PID/maps"
stop

finish
