# CPROF_PUSH_URL from a process tree (issue 31): a prefork master under
# cprof (tests/host/programs/prefork.c) with 3 busy workers pushes every
# second to a stand-in Pyroscope (tests/cli/pyroscope_receiver.py):
#  - each process is a series of its own: APP{env=ci,pid=N} for the master
#    and for every worker, CPU and heap, every request a well-formed
#    ingest;
#  - a worker's CPU profile is its own (worker_compute, read with go tool
#    pprof), over the master's windows (the same from and until);
#  - the workers never push themselves (no thread of the push's in them:
#    the owner fetches their profiles over their sockets), and say nothing;
#  - a worker that leaves stops being pushed, the others go on;
#  - 16 idle workers: each window queues 34 profiles at once, more than
#    one process's queue of 32: none dropped (the queue grows with the
#    tree), every worker's series arrives.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "python3 is not installed"

receiver tree
start tree LD_PRELOAD="$LIB" CPROF_PUSH_URL="http://127.0.0.1:$RPORT" CPROF_PUSH_INTERVAL=1s \
  CPROF_PUSH_NAME='pf{env=ci}' -- "$B/tests/host/host_prefork" 3 busy 120
MASTER=$PID
prefork_workers tree 3
check "the master printed 3 workers" test "${#W[@]}" = 3
echo "master $MASTER, workers ${W[*]}"

# series PID KIND: how many requests the receiver took for that process
# (KIND cpu: with a sampleRate; heap: without); one pass over the files.
series() {
  python3 - "$T/tree.rx" "$1" "$2" <<'PY'
import glob, json, sys
name = "pf{env=ci,pid=%s}" % sys.argv[2]
n = 0
for f in glob.glob(sys.argv[1] + "/*.json"):
    if f.endswith(".stc.json"):
        continue
    try:
        q = json.load(open(f))["query"]
    except ValueError:
        continue
    if q.get("name") == [name] and ("sampleRate" in q) == (sys.argv[3] == "cpu"):
        n += 1
print(n)
PY
}
until_all() {
  for _ in $(seq 1 100); do
    local ok=1 p
    for p in "$MASTER" "${W[@]}"; do
      [ "$(series "$p" cpu)" -ge 2 ] && [ "$(series "$p" heap)" -ge 2 ] || { ok=0; break; }
    done
    [ $ok = 1 ] && return 0
    sleep 0.2
  done
  return 1
}
check "a CPU and a heap series for the master and each worker" until_all
for w in "${W[@]}"; do
  check "worker $w runs no thread of the push's" bash -c "! cat /proc/$w/task/*/comm | grep -q cprof-push"
done
check "the master runs cprof-push" bash -c "cat /proc/$MASTER/task/*/comm | grep -qx cprof-push"

cpu=$(grep -l "\"name\": \[\"pf{env=ci,pid=${W[1]}}\"\]" "$T/tree.rx"/*.json | xargs -r grep -l sampleRate | tail -1 || true)
pprof -top "${cpu%.json}.pprof" >"$T/w1.top" || true
check "worker ${W[1]}'s pushed CPU profile shows worker_compute" has "$T/w1.top" ' worker_compute$'
pprof -tags "${cpu%.json}.pprof" >"$T/w1.tags" || true
check "and is its alone (no pid sample label)" bash -c "! grep -q ' pid:' '$T/w1.tags'"
check "the workers' windows are the master's" python3 - "$T/tree.rx" "$MASTER" <<'PY'
import glob, json, sys
recs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/*.json") if not f.endswith(".stc.json")]
win = {}
for r in recs:
    q = r["query"]
    pid = q["name"][0].split("pid=")[1].rstrip("}")
    win.setdefault(pid, set()).add((q["from"][0], q["until"][0]))
master = win.pop(sys.argv[2])
print({p: len(w) for p, w in win.items()}, len(master))
sys.exit(0 if win and all(w <= master for w in win.values()) else 1)
PY

# A worker leaves.
kill -TERM "${W[0]}"
for _ in $(seq 1 100); do kill -0 "${W[0]}" 2>/dev/null || break; sleep 0.05; done
sleep 1.5 # the window it was in may still be pushed
before0=$(series "${W[0]}" cpu) before1=$(series "${W[1]}" cpu)
until_more() { for _ in $(seq 1 100); do [ "$(series "${W[1]}" cpu)" -ge $((before1 + 2)) ] && return 0; sleep 0.1; done; return 1; }
check "after worker ${W[0]} leaves, worker ${W[1]} is still pushed" until_more
check "worker ${W[0]} no longer is" test "$(series "${W[0]}" cpu)" = "$before0"

kill -TERM "$MASTER"
wait "$MASTER" || true
check "the program says nothing but where it serves" \
  test "$(grep -vc '^cprof: serving' "$T/tree.err")" = 0
pprof_types "$T/tree.rx"
python3 "$RECEIVER" check "$T/tree.rx" 're:pf\{env=ci,pid=[0-9]+\}' >"$T/tree.check"
check "every request a well-formed pprof ingest named pf{env=ci,pid=N}" [ "$(wc -l <"$T/tree.check")" = 1 ]
head -5 "$T/tree.check" >&2
check "nothing refused; CPU and heap" has "$T/tree.check" '^accepted [0-9]+ failed 0 kinds memory,process_cpu$'
stop "$RPID"

receiver big
start big LD_PRELOAD="$LIB" CPROF_PUSH_URL="http://127.0.0.1:$RPORT" CPROF_PUSH_INTERVAL=1s \
  CPROF_PUSH_NAME='pf{env=ci}' -- "$B/tests/host/host_prefork" 16 idle 120
BIG=$PID
prefork_workers big 16
check "the big master printed 16 workers" test "${#W[@]}" = 16
big_names() { # how many processes have 2 heap profiles pushed
  python3 - "$T/big.rx" <<'PY'
import collections, glob, json, sys
n = collections.Counter()
for f in glob.glob(sys.argv[1] + "/*.json"):
    if f.endswith(".stc.json"):
        continue
    try:
        r = json.load(open(f))
    except ValueError:
        continue
    if "sampleRate" not in r["query"]:
        n[r["query"]["name"][0]] += 1
print(sum(1 for v in n.values() if v >= 2))
PY
}
until_big() { for _ in $(seq 1 150); do [ "$(big_names)" -ge 17 ] && return 0; sleep 0.2; done; return 1; }
check "16 workers: the master and each worker have their series" until_big
kill -TERM "$BIG"
wait "$BIG" || true
check "16 workers: nothing dropped (no line at exit)" bash -c "! grep -q 'dropped' '$T/big.err'"
stop "$RPID"
finish
