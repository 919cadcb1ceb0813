# cprof collect when things go wrong: a target that goes away reads Bad
# with the error and Good again once it is back on its port; retention
# deletes what is older than --retention, files and rows; and SIGKILL in the
# middle of scraping loses nothing that was indexed and leaves no broken or
# half-written file, the next start cleaning up after it.
. "$(dirname "$0")/../integration/lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (scripts/install-deps.sh test)"
C=$B/cprof
PORT=$(free_port)
# demo: the demo program on $PORT (a fixed port, which cprof does not
# announce: wait until it answers); DPID.
demo() {
  CPROF_ADDR=127.0.0.1:$PORT "$B/examples/demo_server" --seconds 120 >/dev/null 2>&1 &
  DPID=$!
  for _ in $(seq 1 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/debug/pprof/" && return 0
    sleep 0.1
  done
  fail "the demo program did not answer on $PORT"
}
demo
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
      - targets: [ '127.0.0.1:$PORT' ]
YAML
q() { sqlite3 "$T/store/index.sqlite" "$1" 2>/dev/null; }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }
collector() { # NAME ARGS...: starts cprof collect; sets CPID and W (its address)
  local name=$1
  shift
  start_collect "$name" "$T/parca.yaml" "$@" || fail "$name: cprof collect did not start"
}
# until COMMAND...: true within 60 s (a bound on a hang, not a timing).
until_true() {
  for _ in $(seq 1 600); do "$@" && return 0; sleep 0.1; done
  return 1
}
targets() { # PYTHON-EXPR over the loops of /targets?format=json
  http "http://$W/targets?format=json" >/dev/null && cp "$T/body" "$T/targets.json" &&
    json "$T/targets.json" "all($1 for x in j['jobs'] for t in x['targets'])"
}

collector first --retention 5s
check "the target's loops are Good" until_true targets "t['health'] == 'Good'"

# The target goes away: Bad, with the error; back on its port: Good.
stop "$DPID"
check "the target gone: every loop Bad with the error" until_true targets \
  "t['health'] == 'Bad' and 'onnect' in t['last_error']"
demo
check "the target back on its port: Good again" until_true targets \
  "t['health'] == 'Good' and t['last_error'] == ''"

# Retention: nothing older than 5 s (and a scrape's margin) stays, in the
# index or on disk; it runs every 10 s.
old() { q "select count(*) from profiles where time_ns < (strftime('%s','now') - 8) * 1000000000"; }
files() { find "$T/store/profiles" -name '*.pb.gz' | wc -l; }
check "profiles older than --retention 5s are deleted" until_true bash -c \
  "[ \$(sqlite3 '$T/store/index.sqlite' \"select min(time_ns) from profiles\") -gt 0 ] &&
   grep -q 'retention: [0-9]* profiles' '$T/first.err'"
check "none older than the retention left in the index" [ "$(old)" = 0 ]
# The collector writes a profile's file before its row, and retention
# deletes rows before their files: a look between the two sees one count
# ahead of the other, so the counts must meet, not match at a glance.
same_count() { [ "$(files)" = "$(q 'select count(*) from profiles')" ]; }
check "as many files on disk as rows in the index" until_true same_count
kill -TERM "$CPID"
wait "$CPID" || true

# SIGKILL while scraping, a few times: what was indexed stays, every row's
# file is whole, and the next start removes what was left half-done.
collector second
for round in 1 2 3; do
  n=$(q "select count(*) from profiles")
  until_true bash -c "[ \$(sqlite3 '$T/store/index.sqlite' 'select count(*) from profiles') -gt $((n + 3)) ]"
  kill -KILL "$CPID"
  wait "$CPID" 2>/dev/null || true
  indexed=$(q "select count(*) from profiles")
  last=$(q "select max(id) from profiles")
  collector "again$round"
  # The repair at start runs before the first scrape: these are its rows.
  check "SIGKILL $round: all $indexed profiles indexed before it still are" \
    [ "$(q "select count(*) from profiles where id <= $last")" = "$indexed" ]
done
kill -TERM "$CPID"
wait "$CPID" || true
check "after the kills: no half-written file left" [ -z "$(find "$T/store" -name '*.tmp')" ]
check "after the kills: every row's file is there with its size" bash -c "
  sqlite3 -separator ' ' '$T/store/index.sqlite' 'select file, size from profiles' |
  while read -r f s; do [ \"\$(stat -c %s '$T/store/profiles/'\$f)\" = \"\$s\" ] || exit 1; done"
check "after the kills: as many files as rows" [ "$(files)" = "$(q 'select count(*) from profiles')" ]
check "after the kills: the index is sound" [ "$(q 'pragma integrity_check')" = ok ]
n=0
for f in $(q "select '$T/store/profiles/' || file from profiles order by id desc limit 5"); do
  pprof -raw "$f" >/dev/null 2>&1 && n=$((n + 1))
done
check "after the kills: the latest files are profiles go tool pprof reads" [ $n = 5 ]
stop "$DPID"
finish
