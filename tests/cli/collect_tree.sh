# cprof collect and a process tree (issue 31): a prefork master under cprof
# (tests/host/programs/prefork.c) with 3 busy workers, scraped by three
# jobs at a 2 s interval, everything also pushed to a stand-in Pyroscope
# (pyroscope_receiver.py):
#  - "each" (process_tree: each): one series per process, the master and
#    every worker, labelled pid="N" and process="host_prefork"; a worker's
#    CPU profile is its own (worker_compute, no pid sample label); a worker
#    that exits stops getting rows while the others go on, and no scrape
#    turns Bad for it; pushed as each{instance=ADDR,pid=N,process=...};
#  - "merged" (the default), by a second collector after the first (two
#    jobs asking one process for its CPU profile at once would find it
#    taken): one series, no pid series label, and each
#    stored CPU profile keeps its samples' pid labels (go tool pprof -tags
#    names every worker), pushed as they are;
#  - "old": a target with no /debug/pprof/processes (404, as a cprof before
#    process trees or a Go program: a static server of real profiles),
#    in an each job: scraped as before, silently Good, no pid label.
. "$(dirname "$0")/../integration/lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 is not installed (scripts/install-deps.sh test)"
command -v python3 >/dev/null || skip "python3 is not installed"
C=$B/cprof

start tree LD_PRELOAD="$LIB" -- "$B/tests/host/host_prefork" 3 busy 120
A=$ADDR MASTER=$PID
prefork_workers tree 3
check "the master printed 3 workers" test "${#W[@]}" = 3
for _ in $(seq 1 100); do
  http "http://$A/debug/pprof/processes" >/dev/null
  [ "$(grep -c "\"ppid\":$MASTER," "$T/body")" = 3 ] && break
  sleep 0.1
done
echo "master $MASTER, workers ${W[*]}"

# The older target: real profiles (the master's own), served as files, so
# that /debug/pprof/processes is a 404.
mkdir -p "$T/old/debug/pprof"
for p in heap block goroutine mutex; do
  curl -s -o "$T/old/debug/pprof/$p" "http://$A/debug/pprof/$p?pid=$MASTER"
done
curl -s -o "$T/old/debug/pprof/profile" "http://$A/debug/pprof/profile?seconds=1&pid=$MASTER"
OPORT=$(free_port)
(cd "$T/old" && exec python3 -m http.server --bind 127.0.0.1 "$OPORT") >"$T/old.log" 2>&1 &
OPID=$!
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$OPORT/debug/pprof/heap" && break; sleep 0.1; done
check "the older target has no /debug/pprof/processes" \
  test "$(http "http://127.0.0.1:$OPORT/debug/pprof/processes")" = 404

receiver rw
cat >"$T/c.yaml" <<YAML
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "$T/store"
scrape_configs:
  - job_name: "each"
    scrape_interval: "2s"
    process_tree: each
    static_configs:
      - targets: [ '$A' ]
  - job_name: "old"
    scrape_interval: "2s"
    process_tree: each
    static_configs:
      - targets: [ '127.0.0.1:$OPORT' ]
remote_write:
  url: "http://127.0.0.1:$RPORT"
YAML
cat >"$T/m.yaml" <<YAML
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "$T/mstore"
scrape_configs:
  - job_name: "merged"
    scrape_interval: "2s"
    static_configs:
      - targets: [ '$A' ]
remote_write:
  url: "http://127.0.0.1:$RPORT"
YAML
run chk -- "$C" collect --check "$T/c.yaml"
check "--check takes process_tree" rc_is chk 0
sed 's/process_tree: each/process_tree: every/' "$T/c.yaml" >"$T/bad.yaml"
run bad -- "$C" collect --check "$T/bad.yaml"
check "process_tree: every is refused, with where and why" \
  eval 'rc_is bad 1 && has "$T/bad.err" "bad.yaml:[0-9]+:[0-9]+: process_tree \"every\" is not merged or each"'

"$C" collect --config "$T/c.yaml" --listen 127.0.0.1:0 >"$T/c.out" 2>"$T/c.err" &
CPID=$!
STORE=store
q() { sqlite3 "$T/$STORE/index.sqlite" "$1" 2>/dev/null || true; }
# rows JOB TYPE LABELS-LIKE: how many stored rows
rows() { local n; n=$(q "select count(*) from profiles where job='$1' and type='$2' and labels like '$3'"); echo "${n:-0}"; }
until_rows() { # every process of the tree has 2 CPU rows in each, and old has 2
  for _ in $(seq 1 300); do
    local ok=1 p
    for p in "$MASTER" "${W[@]}"; do
      [ "$(rows each process_cpu "%pid=\"$p\"%")" -ge 2 ] || ok=0
    done
    [ "$(rows old process_cpu %)" -ge 2 ] || ok=0
    [ $ok = 1 ] && return 0
    sleep 0.2
  done
  return 1
}
check "each: CPU rows for the master and every worker; old scraped" until_rows

for p in "$MASTER" "${W[@]}"; do
  check "each: pid $p is a series of its own, labelled pid and process" \
    test "$(q "select distinct labels from profiles where job='each' and labels like '%pid=\"$p\"%'")" \
    = "{instance=\"$A\",job=\"each\",pid=\"$p\",process=\"host_prefork\"}"
done
check "each: every row is one process's (a pid label on each)" \
  test "$(q "select count(*) from profiles where job='each' and labels not like '%pid=%'")" = 0
check "each: every profile kind of every process" \
  test "$(q "select count(distinct type || labels) from profiles where job='each'")" = 20

f=$T/store/profiles/$(q "select file from profiles where job='each' and type='process_cpu' and labels like '%pid=\"${W[1]}\"%' limit 1")
pprof -top "$f" >"$T/w1.top" || true
check "each: worker ${W[1]}'s stored CPU profile shows worker_compute" has "$T/w1.top" ' worker_compute$'
pprof -tags "$f" >"$T/w1.tags" || true
check "each: and has no pid sample label (one process)" bash -c "! grep -q ' pid:' '$T/w1.tags'"

check "old: no pid label, every kind stored" \
  test "$(q "select count(distinct type) || ' ' || sum(labels like '%pid=%') from profiles where job='old'")" = "5 0"

WEB=$(sed -n 's|^cprof collect: serving http://\([^/]*\)/$|\1|p' "$T/c.err")
http "http://$WEB/api/targets" >/dev/null
cp "$T/body" "$T/targets.json"
check "/targets: every loop of each and old is Good" python3 - "$T/targets.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
bad = [(t["profile"], t["health"], t["last_error"]) for job in j["jobs"] for t in job["targets"]
       if t["health"] != "Good"]
print(bad)
sys.exit(0 if not bad and len(j["jobs"]) == 2 else 1)
PY

# The query page's data: a row's labels and pid, and pid= for one process.
now=$(($(date +%s) * 1000000000 + 1000000000))
http "http://$WEB/api/profiles?job=each&type=process_cpu&from=0&to=$now" >/dev/null
cp "$T/body" "$T/rows.json"
check "/api/profiles: each row has its labels and pid, every process among them" \
  python3 - "$T/rows.json" "$MASTER" "${W[@]}" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
pids = sorted({r.get("pid") for r in rows})
print(len(rows), pids)
sys.exit(0 if pids == sorted(int(p) for p in sys.argv[2:])
         and all('pid="%d"' % r["pid"] in r["labels"] for r in rows) else 1)
PY
# To the latest row's time: a scrape of one process's profile starts after
# the one before it ends, so no row stored meanwhile falls in the range.
http "http://$WEB/api/profiles?job=each&type=process_cpu&from=0&to=$now&pid=${W[2]}" >/dev/null
now=$(python3 -c "import json,sys; print(max(int(r['time_ns']) for r in json.load(open(sys.argv[1]))))" "$T/body")
http "http://$WEB/api/profiles?job=each&type=process_cpu&from=0&to=$now&pid=${W[2]}" >/dev/null
cp "$T/body" "$T/rows2.json"
n2=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(len(r) if all(x['pid']==int(sys.argv[2]) for x in r) else -1)" "$T/rows2.json" "${W[2]}")
check "/api/profiles?pid=${W[2]}: that process's rows alone" test "$n2" -ge 2
http "http://$WEB/api/merge?job=each&type=process_cpu&from=0&to=$now&pid=${W[2]}" >/dev/null
check "/api/merge?pid=${W[2]}: merges as many profiles" has "$T/body" "^\{\"profiles\":$n2,"
check "/api/merge?pid=${W[2]}: its title names the process" grep -qF "pid=\\\"${W[2]}\\\"" "$T/body"
check "/api/profiles?pid=x: 400" test "$(http "http://$WEB/api/profiles?job=each&type=memory&pid=x")" = 400
# In an each job pid is a series label: selector={pid="N"} is pid=N.
http "http://$WEB/api/merge?job=each&type=process_cpu&from=0&to=$now" -G --data-urlencode "selector={pid=\"${W[2]}\"}" >/dev/null
check "/api/merge?selector={pid=\"${W[2]}\"}: the process's series, as pid=" has "$T/body" "^\{\"profiles\":$n2,"

# A worker leaves: its series stops, the others go on, nothing turns Bad.
kill -TERM "${W[0]}"
for _ in $(seq 1 100); do kill -0 "${W[0]}" 2>/dev/null || break; sleep 0.05; done
sleep 1 # a scrape started before it left may still be stored
gone=$(($(date +%s) * 1000000000))
late() { q "select count(*) from profiles where job='each' and time_ns > $gone and labels like '%pid=\"$1\"%'"; }
until_on() { for _ in $(seq 1 200); do [ "$(late "${W[1]}")" -ge 5 ] && return 0; sleep 0.1; done; return 1; }
check "after worker ${W[0]} leaves, worker ${W[1]} is still scraped" until_on
check "worker ${W[0]} is no longer scraped" test "$(late "${W[0]}")" = 0
http "http://$WEB/api/targets" >/dev/null
check "no loop turned Bad for it" bash -c "! grep -q '\"Bad\"' '$T/body'"

kill -TERM "$CPID"
wait "$CPID" || true
check "the collector ends cleanly" has "$T/c.err" '^cprof collect: stopped$'

# The merged job, alone on the tree.
"$C" collect --config "$T/m.yaml" --listen 127.0.0.1:0 >"$T/m.out" 2>"$T/m.err" &
CPID=$!
STORE=mstore
until_merged() { for _ in $(seq 1 300); do [ "$(rows merged process_cpu %)" -ge 2 ] && return 0; sleep 0.2; done; return 1; }
check "merged: CPU rows stored" until_merged
# In a merged tree pid is a sample label: selector={pid="N"} keeps that
# worker's samples of the one series.
MWEB=$(sed -n 's|^cprof collect: serving http://\([^/]*\)/$|\1|p' "$T/m.err")
curl -s -o "$T/msel.pb.gz" -G --data-urlencode "selector={pid=\"${W[1]}\"}" \
  "http://$MWEB/api/merge?job=merged&type=process_cpu&from=0&to=$(date +%s%N)&format=pprof"
pprof -tags "$T/msel.pb.gz" >"$T/msel.tags" || true
check "merged: selector={pid=\"${W[1]}\"} keeps worker ${W[1]}'s samples alone" bash -c \
  "grep -Eq ': ${W[1]}\$' '$T/msel.tags' && ! grep -Eq ': (${W[2]}|$MASTER)\$' '$T/msel.tags'"
kill -TERM "$CPID"
wait "$CPID" || true
f=$T/mstore/profiles/$(q "select file from profiles where job='merged' and type='process_cpu' order by time_ns desc limit 1")
pprof -tags "$f" >"$T/merged.tags" || true
sed -n '/ pid:/,/^$/p' "$T/merged.tags"
for w in "${W[@]:1}"; do # W[0] has left
  check "merged: the stored CPU profile keeps worker $w's pid sample label" \
    has "$T/merged.tags" "^ +[0-9.]+[mun]?s .*: $w$"
done
check "merged: one series, no pid series label" \
  test "$(q "select count(distinct labels) || ' ' || count(*) from profiles where job='merged' and labels like '%pid=%'")" = "0 0"

# What Pyroscope was sent: one series per process of the each job, the
# merged job's as one, with its pid sample labels.
pprof_types "$T/rw.rx"
python3 "$RECEIVER" check "$T/rw.rx" \
  "re:(each\\{instance=$A,pid=[0-9]+,process=host_prefork\\}|old\\{instance=127.0.0.1:$OPORT\\}|merged\\{instance=$A\\})" \
  >"$T/rw.check"
check "remote write: every request a well-formed ingest of one of the three" [ "$(wc -l <"$T/rw.check")" = 1 ]
head -5 "$T/rw.check" >&2
for p in "$MASTER" "${W[@]}"; do
  check "remote write: a CPU series of pid $p" bash -c \
    "grep -l '\"name\": \[\"each{instance=$A,pid=$p,process=host_prefork}\"\]' '$T/rw.rx'/*.json | xargs grep -l sampleRate | grep -q ."
done
cpu=$(grep -l "\"name\": \[\"each{instance=$A,pid=${W[2]},process=host_prefork}\"\]" "$T/rw.rx"/*.json |
  xargs -r grep -l sampleRate | head -1 || true)
pprof -top "${cpu%.json}.pprof" >"$T/rw.w2" || true
check "remote write: worker ${W[2]}'s pushed CPU profile shows worker_compute" has "$T/rw.w2" ' worker_compute$'
cpu=$(grep -l "\"name\": \[\"merged{instance=$A}\"\]" "$T/rw.rx"/*.json | xargs -r grep -l sampleRate | tail -1 || true)
pprof -tags "${cpu%.json}.pprof" >"$T/rw.merged" || true
check "remote write: the merged CPU profile keeps its pid sample labels" \
  has "$T/rw.merged" "^ +[0-9.]+[mun]?s .*: ${W[2]}$"

stop "$OPID"
stop "$RPID"
stop "$MASTER"
finish
