# cprof collect scraping two cprof demo programs, a Go program serving
# net/http/pprof (tests/cli/goserver, built here with Debian's golang-go,
# offline) and a target where nothing listens, at a 2 s interval: every
# default profile of the live targets, and the demos' wall profile, is
# stored, each a profile go tool pprof reads; the dead target's scrapes fail
# and nothing of it is stored; SIGTERM ends it with the scrapes in flight
# finished, and a second run on the same directory finds nothing to repair
# and adds to it.
. "$(dirname "$0")/../integration/lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (scripts/install-deps.sh test)"
C=$B/cprof

start a -- "$B/examples/demo_server" --seconds 120
A=$ADDR APID=$PID
start b -- "$B/examples/demo_server" --seconds 120
BADDR=$ADDR BPID=$PID

command -v go >/dev/null || skip "no go command (Debian package golang-go)"
mkdir -p "$T/go"
env GO111MODULE=off GOPATH="$T/go/gopath" GOCACHE="$T/go/cache" GOPROXY=off GOFLAGS= GOENV=off \
  GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$T/go/goserver" \
  "$CPROF_SOURCE_DIR/tests/cli/goserver/main.go" >"$T/go/log" 2>&1 ||
  { cat "$T/go/log" >&2; fail "building tests/cli/goserver"; finish; }
"$T/go/goserver" 127.0.0.1:0 >"$T/go/out" 2>"$T/go/err" &
GPID=$!
for _ in $(seq 1 100); do grep -q '^serving' "$T/go/out" && break; sleep 0.1; done
G=$(sed -n 's|^serving http://\([^/]*\)/.*|\1|p' "$T/go/out")
check "the Go program serves net/http/pprof" [ -n "$G" ]
cat >"$T/parca.yaml" <<YAML
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "$T/store"

scrape_configs:
  - job_name: "demo"
    scrape_interval: "2s"
    static_configs:
      - targets: [ '$A', '$BADDR' ]
        labels: { env: "test" }
    profiling_config:
      pprof_config:
        threadcreate: {}  # off by default, as in Parca
        wall: { path: "/debug/pprof/wall", delta: true }  # cprof's own: a recording, as process_cpu
  - job_name: "go"
    scrape_interval: "2s"
    static_configs:
      - targets: [ '$G' ]
  - job_name: "gone"
    scrape_interval: "2s"
    static_configs:
      - targets: [ '127.0.0.1:1' ]
YAML
q() { sqlite3 "$T/store/index.sqlite" "$1" 2>/dev/null; }

collector() { # NAME: starts cprof collect, waits for its first line
  "$C" collect --config "$T/parca.yaml" --listen 127.0.0.1:0 >"$T/$1.out" 2>"$T/$1.err" &
  CPID=$!
  for _ in $(seq 1 100); do has "$T/$1.err" '^cprof collect: scraping' && return 0; sleep 0.1; done
  fail "$1: cprof collect did not start"
  cat "$T/$1.err" >&2
}
# until_rows N: the store holds at least N rows of every (instance, type) of
# the demo job (a bound of 60 s on a hang; nothing depends on how long).
until_rows() {
  for _ in $(seq 1 600); do
    local n
    n=$(q "select count(*) from (select instance, type from profiles where job = 'demo'
           group by 1, 2 having count(*) >= $1)")
    local g
    g=$(q "select count(distinct type) from profiles where job = 'go'")
    [ "${n:-0}" = 14 ] && [ "${g:-0}" = 5 ] && return 0
    sleep 0.1
  done
  return 1
}

collector first
check "two rows of each of the 7 profiles of both demo targets, and of the Go program's 5" until_rows 2
kill -TERM "$CPID"
rc=0
wait "$CPID" || rc=$?
check "SIGTERM: exit 0" [ $rc = 0 ]
check "SIGTERM: says it finishes what is in flight, then stops" \
  bash -c "grep -q 'SIGTERM: finishing the scrapes in flight' '$T/first.err' && tail -1 '$T/first.err' | grep -qx 'cprof collect: stopped'"
check "a line per round" has "$T/first.err" '^cprof collect: [0-9]+ scraped and stored, [0-9]+ failed'
check "seven profile types for the demo programs (wall too), five for Go (no threadcreate)" \
  [ "$(q "select count(distinct type) || ' ' || count(distinct instance) from profiles where job = 'demo'") $(q "select group_concat(distinct type) from profiles where job = 'go' and type = 'threadcreate'")" = "7 2 " ]
check "nothing of the target where nothing listens" [ "$(q "select count(*) from profiles where job = 'gone'")" = 0 ]
check "labels: job, instance and the target's own" \
  [ "$(q "select count(*) from profiles where job = 'demo' and (labels not like '%env=\"test\"%' or labels not like '%job=\"demo\"%')")" = 0 ]

# The stored files are profiles go tool pprof reads, of the right type: the
# latest of each target and type (go tool pprof takes a third of a second
# a file).
bad=0 n=0
while IFS='|' read -r type path; do
  n=$((n + 1))
  want=$(case $type in memory) echo inuse_space ;; block | mutex) echo delay ;;
    goroutine) echo goroutine ;; threadcreate) echo threadcreate ;; process_cpu) echo cpu ;;
    wall) echo wall/nanoseconds ;; esac)
  if ! pprof -raw "$path" 2>/dev/null | grep -q "$want"; then
    bad=$((bad + 1))
    echo "not a $type profile: $path" >&2
  fi
done < <(q "select type, '$T/store/profiles/' || file from profiles
             where id in (select max(id) from profiles group by instance, type)")
check "the $n latest stored files are profiles of their type (go tool pprof -raw)" [ "$n" = 19 -a "$bad" = 0 ]
check "process_cpu and wall are delta profiles of about the interval" \
  [ "$(q "select count(*) from profiles where type in ('process_cpu', 'wall') and duration_ns not between 500000000 and 2000000000")" = 0 ]

# A second run adds to the same store; nothing to repair after a clean stop.
before=$(q "select count(*) from profiles")
collector second
check "second run: nothing repaired" bash -c "! grep -q repaired '$T/second.err'"
check "second run: a row more of everything" until_rows $(($(q "select min(c) from (select count(*) c from profiles where job='demo' group by instance, type)") + 1))
kill -TERM "$CPID"
wait "$CPID" || true
check "second run: more rows than before" [ "$(q "select count(*) from profiles")" -gt "$before" ]
stop "$APID"
stop "$BPID"
stop "$GPID"
finish
