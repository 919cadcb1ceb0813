# cprof collect's web server against two demo programs and a target where
# nothing listens: /targets (HTML, escaped, and JSON) shows the live loops
# Good and the dead one Bad with its error, and a killed program's loops
# turn Bad; /metrics passes promtool; /api/merge's merged totals equal the
# sum of the stored rows' totals for the range with mode=sum (which the
# scraper computed from each profile on its own), for one instance, for all,
# and for a diff, and by default a snapshot's range is its average;
# bad parameters are 400s of one line.
. "$(dirname "$0")/../integration/lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (scripts/install-deps.sh test)"
command -v promtool >/dev/null || skip "promtool is not installed"
C=$B/cprof

start a -- "$B/examples/demo_server" --seconds 120
A=$ADDR APID=$PID
start b -- "$B/examples/demo_server" --seconds 120
BADDR=$ADDR BPID=$PID
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
        labels: { env: "test", note: "<b>x&y</b>" }
    profiling_config:
      pprof_config:
        threadcreate: {}  # off by default, as in Parca
  - job_name: "gone"
    scrape_interval: "2s"
    static_configs:
      - targets: [ '127.0.0.1:1' ]
    profiling_config:
      pprof_config:
        threadcreate: {}
YAML
q() { sqlite3 "$T/store/index.sqlite" "$1" 2>/dev/null; }
# json FILE PYTHON-EXPR: evaluates the expression on the parsed file as j;
# succeeds when it is true.
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

check "prints where it serves" start_collect c "$T/parca.yaml"
[ -n "$W" ] || finish

until_rows() { # N: at least N rows of each of the 12 demo series (a bound of 60 s on a hang)
  for _ in $(seq 1 600); do
    [ "$(q "select count(*) from (select 1 from profiles where job = 'demo'
           group by instance, type having count(*) >= $1)")" = 12 ] && return 0
    sleep 0.1
  done
  return 1
}
# until_targets PYTHON-EXPR: /targets?format=json satisfies it (60 s bound).
until_targets() {
  for _ in $(seq 1 600); do
    http "http://$W/targets?format=json" >/dev/null && cp "$T/body" "$T/targets.json" &&
      json "$T/targets.json" "$1" && return 0
    sleep 0.1
  done
  return 1
}
demo='[t for x in j["jobs"] if x["job"] == "demo" for t in x["targets"]]'
gone='[t for x in j["jobs"] if x["job"] == "gone" for t in x["targets"]]'
check "rows of every profile of both demo targets" until_rows 2
check "/targets JSON: the 12 demo loops Good, the 6 gone ones Bad with an error" until_targets \
  "len($demo) == 12 and all(t['health'] == 'Good' and t['last_error'] == '' for t in $demo) and
   len($gone) == 6 and all(t['health'] == 'Bad' and t['last_error'] for t in $gone)"
check "/targets JSON: labels, URL, times" json "$T/targets.json" \
  "all(t['labels'] == {'env': 'test', 'note': '<b>x&y</b>'} and t['url'].startswith('http://')
       and t['last_scrape'].endswith('Z') and int(t['last_scrape_ns']) > 0 for t in $demo)"
check "/api/targets is the same JSON" [ "$(http "http://$W/api/targets")" = 200 ]

check "/targets: 200 HTML" [ "$(http "http://$W/targets")" = 200 ]
check "/targets: text/html" grep -qi '^content-type: text/html' "$T/headers"
check "/targets: a table per job" bash -c "grep -c '<h2 class=\"job\">' '$T/body' | grep -qx 2"
check "/targets: Good and Bad rows" bash -c "grep -q 'health Good' '$T/body' && grep -q 'health Bad' '$T/body'"
check "/targets: labels escaped for HTML" bash -c \
  "grep -qF 'note=&lt;b&gt;x&amp;y&lt;/b&gt;' '$T/body' && ! grep -qF '<b>x' '$T/body'"
check "/targets: loads nothing from the network" bash -c "! grep -Eq '(src|href)=\"https?:' '$T/body'"

# /metrics
stored=$(q "select count(*) from profiles")
check "/metrics: 200" [ "$(http "http://$W/metrics")" = 200 ]
cp "$T/body" "$T/metrics"
check "/metrics: text format 0.0.4" grep -qi '^content-type: text/plain; version=0.0.4' "$T/headers"
check "/metrics: promtool check metrics" bash -c "promtool check metrics <'$T/metrics'"
metric() { sed -n "s/^$1 //p" "$T/metrics"; }
check "/metrics: scrapes and failures counted" \
  [ "$(metric cprof_collect_scrapes_total)" -gt "$(metric cprof_collect_scrape_failures_total)" -a "$(metric cprof_collect_scrape_failures_total)" -ge 6 ]
check "/metrics: stored profiles as in the store, or more since" \
  [ "$(metric cprof_collect_stored_profiles)" -ge "$stored" -a "$stored" -ge 24 ]
# A loaded machine may time a demo scrape out now and then: the dead
# target's 6 loops are bad at least, and the three healths count all 18.
good=$(metric 'cprof_collect_targets{health="good"}') bad=$(metric 'cprof_collect_targets{health="bad"}')
check "/metrics: 18 loops by health, 6 bad at least ($good good, $bad bad)" \
  [ "$((good + bad + $(metric 'cprof_collect_targets{health="unknown"}')))" = 18 -a "$bad" -ge 6 -a "$good" -ge 1 ]
check "/metrics: process_* basics" has "$T/metrics" '^process_resident_memory_bytes [0-9]+'

# /api/series
check "/api/series: 200" [ "$(http "http://$W/api/series")" = 200 ]
check "/api/series: 12 demo series, none of gone" json "$T/body" \
  "len([s for s in j if s['job'] == 'demo']) == 12 and not [s for s in j if s['job'] == 'gone']"

# /api/merge: a range that ends at each instance's last row so far, so that
# rows scraped later cannot fall in it (a loop's next scrape starts later).
merge_checks() { # TYPE MODE: MODE the default mode= the answer names
  local t=$1 from to want n
  from=$(q "select min(time_ns) from profiles where job='demo' and type='$t'")
  to=$(q "select min(m) from (select max(time_ns) m from profiles where job='demo' and type='$t' group by instance)")
  want=$(q "select sum(total) || ' ' || count(*) from profiles where job='demo' and type='$t' and instance='$A' and time_ns between $from and $to")
  check "/api/merge $t mode=sum, one instance: 200" [ "$(http "http://$W/api/merge?job=demo&instance=$A&type=$t&from=$from&to=$to&mode=sum")" = 200 ]
  check "/api/merge $t mode=sum, one instance: total and count are the rows' ($want)" json "$T/body" \
    "'%d %d' % (j['total'], j['profiles']) == '$want' and j['nodes'] and j['types'] and j['mode'] == 'sum'"
  want=$(q "select sum(total) || ' ' || count(*) from profiles where job='demo' and type='$t' and time_ns between $from and $to")
  http "http://$W/api/merge?job=demo&type=$t&from=$from&to=$to&mode=sum" >/dev/null
  check "/api/merge $t mode=sum, both instances: total and count are the rows' ($want)" json "$T/body" \
    "'%d %d' % (j['total'], j['profiles']) == '$want'"
  # By default, by kind: a snapshot's range is each instance's average of
  # its rows, added up (rounding each sample's mean: within 0.1 %).
  if [ "$2" = sum ]; then
    want=$(q "select sum(total) from profiles where job='demo' and type='$t' and time_ns between $from and $to")
  else
    want=$(q "select sum(a) from (select avg(total) a from profiles where job='demo' and type='$t' and time_ns between $from and $to group by instance)")
  fi
  http "http://$W/api/merge?job=demo&type=$t&from=$from&to=$to" >/dev/null
  check "/api/merge $t by default: mode $2, total $want" json "$T/body" \
    "j['mode'] == '$2' and abs(j['total'] - $want) <= max(1, $want * 0.001)"
  check "/api/merge $t: X-Cprof-Mode says $2" grep -qi "^x-cprof-mode: $2" "$T/headers"
}
merge_checks memory delta+avg
merge_checks goroutine avg
merge_checks process_cpu sum

# One moment (from = to = a row's time), and a diff of the first row
# against the last.
read -r first last < <(q "select min(time_ns), max(time_ns) from profiles where job='demo' and type='memory' and instance='$A'" | tr '|' ' ')
want=$(q "select total from profiles where job='demo' and type='memory' and instance='$A' and time_ns = $last")
http "http://$W/api/merge?job=demo&instance=$A&type=memory&from=$last&to=$last" >/dev/null
check "/api/merge of one moment: that row's total" json "$T/body" "j['profiles'] == 1 and j['total'] == $want"
base=$(q "select total from profiles where job='demo' and type='memory' and instance='$A' and time_ns = $first")
http "http://$W/api/merge?job=demo&instance=$A&type=memory&from=$last&to=$last&base_from=$first&base_to=$first" >/dev/null
check "/api/merge diff: both ranges' totals" json "$T/body" \
  "j['diff'] and j['total'] == $want and j['base_total'] == $base and j['base_profiles'] == 1"
check "/view: the viewer page with the merge in it" bash -c \
  "[ \"\$(curl -s -o '$T/view' -w '%{http_code}' 'http://$W/view?job=demo&type=memory&from=$first&to=$last')\" = 200 ] && grep -q 'id=\"profile-data\"' '$T/view'"
check "/api/profiles: the rows of the range" bash -c \
  "[ \"\$(curl -s 'http://$W/api/profiles?job=demo&instance=$A&type=memory&from=$first&to=$last' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')\" = \"\$(sqlite3 '$T/store/index.sqlite' \"select count(*) from profiles where job='demo' and instance='$A' and type='memory' and time_ns between $first and $last\")\" ]"
check "/: the query page, with Chart.js served beside it" bash -c \
  "[ \"\$(curl -s -o /dev/null -w '%{http_code}' 'http://$W/')\" = 200 ] && curl -s 'http://$W/chart.js' | grep -q 'Chart'"

# Bad parameters: 400 and one line.
bad() { # DESCRIPTION QUERY
  local code
  code=$(http "http://$W/api/merge?$2")
  check "400 for $1" [ "$code" = 400 -a "$(wc -l <"$T/body")" = 1 ]
}
bad "no job" "type=memory&from=0&to=1"
bad "no type" "job=demo&from=0&to=1"
bad "no range" "job=demo&type=memory"
bad "a range not a number" "job=demo&type=memory&from=abc&to=1"
bad "from after to" "job=demo&type=memory&from=5&to=1"
bad "a base range half given" "job=demo&type=memory&from=0&to=1&base_from=0"
check "404 for a range with no profiles" [ "$(http "http://$W/api/merge?job=demo&type=memory&from=0&to=1")" = 404 ]
check "404 for an unknown page" [ "$(http "http://$W/nothing")" = 404 ]

if command -v chromedriver >/dev/null && [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  mkdir -p "$B/artifacts"
  check "Chromium shows /targets and / as it should" \
    python3 "$CPROF_SOURCE_DIR/tests/ui/collect_browser.py" "$T" "http://$W/" "$B/artifacts"
else
  echo "(no chromium and chromium-driver: the pages are not looked at in a browser)"
fi

# Killing a program turns its loops Bad, with the error kept.
stop "$BPID"
check "a killed target's loops turn Bad with an error, the other's stay Good" until_targets \
  "all(t['health'] == 'Bad' and t['last_error'] for t in $demo if t['target'] == '$BADDR') and
   all(t['health'] == 'Good' for t in $demo if t['target'] == '$A')"

kill -TERM "$CPID"
rc=0
wait "$CPID" || rc=$?
check "SIGTERM: exit 0" [ $rc = 0 ]
check "SIGTERM: stopped" bash -c "tail -1 '$T/c.err' | grep -qx 'cprof collect: stopped'"

# After it: a port in use (the demo program's), and a --listen without a
# port, each one line and exit 1.
for spec in "$A" nonsense; do
  rc=0
  "$C" collect --config "$T/parca.yaml" --listen "$spec" >/dev/null 2>"$T/second.err" || rc=$?
  check "--listen $spec: exit 1 and one line" [ $rc = 1 -a "$(grep -c 'listen' "$T/second.err")" = 1 ]
done
stop "$APID"
finish
