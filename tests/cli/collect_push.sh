# cprof collect's remote write to Grafana Pyroscope, against a stand-in
# receiver (pyroscope_receiver.py) and a cprof demo program:
#  1. a receiver that takes everything: every profile type arrives, each
#     request is POST /ingest?name=demo{instance=...,env=test}&from&until
#     &format=pprof with a profile part go tool pprof reads and a
#     sample_type_config whose keys are the profile's sample types;
#  2. a receiver that answers 503 to its first 3 requests: retried, and
#     nothing lost;
#  3. no receiver at all and remote_write.queue_size 1: drops counted.
# Every run checks the exit line "remote write: pushed P, retried R,
# dropped D, rejected X" against the store: P + D + X is the number of
# profiles stored, since each is enqueued once and ends in one of those.
. "$(dirname "$0")/../integration/lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (scripts/install-deps.sh test)"
command -v python3 >/dev/null || skip "python3 is not installed"
C=$B/cprof

start demo -- "$B/examples/demo_server" --seconds 300
A=$ADDR DPID=$PID

config() { # NAME [remote_write section]: writes $T/NAME.yaml
  cat >"$T/$1.yaml" <<YAML
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "$T/$1.store"
scrape_configs:
  - job_name: "demo"
    scrape_interval: "2s"
    static_configs:
      - targets: [ '$A' ]
        labels: { env: "test" }
    profiling_config:
      pprof_config:
        threadcreate: {}  # off by default, as in Parca
${2:-}
YAML
}

collector() { # NAME ARGS...: starts cprof collect; sets CPID
  local name=$1
  shift
  "$C" collect --config "$T/$name.yaml" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
  CPID=$!
  for _ in $(seq 1 100); do has "$T/$name.err" '^cprof collect: scraping' && return 0; sleep 0.1; done
  fail "$name: cprof collect did not start"
  cat "$T/$name.err" >&2
}

stop_collector() { # NAME: SIGTERM, then the exit status in $T/NAME.rc
  kill -TERM "$CPID"
  local rc=0
  wait "$CPID" || rc=$?
  echo $rc >"$T/$1.rc"
}

rows() { sqlite3 "$T/$1.store/index.sqlite" "select count(*) from profiles" 2>/dev/null; }

# counter NAME WHAT: a figure of the exit line
counter() {
  sed -n "s/^cprof collect: remote write: pushed \([0-9]*\), retried \([0-9]*\), dropped \([0-9]*\), rejected \([0-9]*\)$/\1 \2 \3 \4/p" "$T/$1.err" |
    awk -v w="$2" '{ print w == "pushed" ? $1 : w == "retried" ? $2 : w == "dropped" ? $3 : $4 }'
}

accounted() { # NAME: pushed + dropped + rejected = the profiles stored
  local p d x
  p=$(counter "$1" pushed) d=$(counter "$1" dropped) x=$(counter "$1" rejected)
  [ -n "$p" ] && [ $((p + d + x)) = "$(rows "$1")" ]
}

summary() { python3 "$RECEIVER" check "$T/$1.rx" | tail -1; }

# until_kinds NAME: the receiver has taken all six kinds of profile
# (bounded at 60 s for a hang; nothing depends on how long).
until_kinds() {
  for _ in $(seq 1 300); do
    pprof_types "$T/$1.rx"
    summary "$1" | grep -q ' kinds block,goroutine,memory,mutex,process_cpu,threadcreate$' && return 0
    sleep 0.2
  done
  return 1
}

# 1. Everything taken.
config ok
receiver ok
OKRX=$RPID
collector ok --remote-write "http://127.0.0.1:$RPORT/"
check "ok: says where it pushes" has "$T/ok.err" "^cprof collect: remote write to http://127.0.0.1:$RPORT/"
check "ok: all six profile kinds arrive" until_kinds ok
stop_collector ok
check "ok: exit 0" [ "$(cat "$T/ok.rc")" = 0 ]
pprof_types "$T/ok.rx"
python3 "$RECEIVER" check "$T/ok.rx" >"$T/ok.check"
check "ok: every request is a well-formed pprof ingest" [ "$(wc -l <"$T/ok.check")" = 1 ]
sed '$d' "$T/ok.check" | head -5 >&2
check "ok: the exit line's pushed is what the receiver took" \
  [ "$(counter ok pushed)" = "$(sed -n 's/^accepted \([0-9]*\) .*/\1/p' "$T/ok.check")" ]
check "ok: nothing retried, dropped or rejected" \
  [ "$(counter ok retried) $(counter ok dropped) $(counter ok rejected)" = "0 0 0" ]
check "ok: every stored profile was pushed" accounted ok
check "ok: sampleRate on the CPU profile's requests" \
  bash -c "grep -l '\"sampleRate\": \[\"[0-9]*\"\]' '$T/ok.rx'/*.json | grep -q ."
stop "$OKRX"

# 2. 503 for the first three requests, then 200: retried, nothing lost.
config flaky
receiver flaky 3
FLRX=$RPID
collector flaky --remote-write "http://127.0.0.1:$RPORT"
until_accepted() {
  for _ in $(seq 1 300); do
    summary flaky | grep -Eq '^accepted [1-9][0-9]* failed 3 ' && [ "$(rows flaky)" -ge 6 ] && return 0
    sleep 0.2
  done
  return 1
}
check "flaky: three refusals, then profiles arrive" until_accepted
stop_collector flaky
check "flaky: exit 0" [ "$(cat "$T/flaky.rc")" = 0 ]
check "flaky: retried, at least the three 503s" [ "$(counter flaky retried)" -ge 3 ]
check "flaky: nothing dropped or rejected" [ "$(counter flaky dropped) $(counter flaky rejected)" = "0 0" ]
check "flaky: every stored profile arrived" [ "$(counter flaky pushed)" = "$(rows flaky)" ]
check "flaky: the receiver took as many as were pushed" \
  [ "$(summary flaky | sed -n 's/^accepted \([0-9]*\) .*/\1/p')" = "$(counter flaky pushed)" ]
check "flaky: says it fails, then that it works again" \
  bash -c "grep -q 'remote write to .* failed: HTTP status 503; retrying' '$T/flaky.err' && grep -q 'works again' '$T/flaky.err'"
stop "$FLRX"

# 3. Nobody listens; a queue of one: the oldest are dropped.
PORT=$(free_port)
config down "remote_write:
  url: http://127.0.0.1:$PORT
  queue_size: 1"
collector down
until_stored() { for _ in $(seq 1 300); do [ "$(rows down)" -ge 8 ] && return 0; sleep 0.2; done; return 1; }
check "down: profiles are stored all the same" until_stored
W=$(sed -n 's|^cprof collect: serving http://\([^/]*\)/$|\1|p' "$T/down.err")
curl -s "http://$W/metrics" >"$T/down.metrics"
check "down: /metrics counts the retries and what waits, and promtool reads it" bash -c "
  grep -Eq '^cprof_collect_remote_write_retried_total [1-9]' '$T/down.metrics' &&
  grep -Eq '^cprof_collect_remote_write_queued [0-9]' '$T/down.metrics' &&
  { ! command -v promtool >/dev/null || promtool check metrics <'$T/down.metrics'; }"
stop_collector down
check "down: exit 0" [ "$(cat "$T/down.rc")" = 0 ]
check "down: nothing pushed" [ "$(counter down pushed)" = 0 ]
check "down: retried" [ "$(counter down retried)" -gt 0 ]
check "down: drops counted, every stored profile among them" \
  [ "$(counter down dropped)" = "$(rows down)" ]
check "down: the config's url is used" has "$T/down.err" "remote write to http://127.0.0.1:$PORT "

# A bad --remote-write is a usage error, before anything runs.
run badurl -- "$C" collect --config "$T/ok.yaml" --remote-write "127.0.0.1:4040"
check "a --remote-write that is not a URL: exit 2" rc_is badurl 2
check "a --remote-write that is not a URL: says why" has "$T/badurl.err" 'is not an http:// or https:// URL'
run check -- "$C" collect --check "$T/down.yaml"
check "--check: the summary names the remote write" has "$T/check.out" "; remote write http://127.0.0.1:$PORT\$"
stop "$DPID"
finish
