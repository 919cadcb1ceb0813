# Programs that a program under cprof runs inherit LD_PRELOAD and CPROF_*.
# They must not start cprof of their own (no server, no line on stderr, no
# CPROF_OUTPUT file over the parent's) unless CPROF_CHILDREN=1 asks.
. "$(dirname "$0")/../integration/lib.sh"

# bash, which ends with exit(3) (dash ends with _exit: no atexit, no file).
# Before it ends, it lists CPROF_OUTPUT's directory: empty until the
# parent's own exit, unless a child wrote there.
mkdir -p "$T/out"
script='for i in $(seq 1 25); do /bin/true; ls / >/dev/null; done; ls "$0"; echo done'
run plain -- bash -c "$script" "$T/out"
run pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_OUTPUT="$T/out" CPROF_HEAP_RATE=1 -- bash -c "$script" "$T/out"
check "50 commands: same output (no child wrote to CPROF_OUTPUT)" same plain pre out
check "50 commands: same exit code" same plain pre rc
check "50 commands: one line on stderr, the shell's own 'serving'" \
  bash -c "[ \$(wc -l <'$T/pre.err') = 1 ] && grep -q '^cprof: serving ' '$T/pre.err'"
# The profiles in the directory are the shell's: the heap profile, of every
# allocation (rate 1), has the shell's own mapping first, and ls's nowhere.
sh_path=$(readlink -f "$(command -v bash)")
go tool pprof -raw "$T/out/heap.pb.gz" 2>/dev/null | sed -n '/^Mappings/,$p' >"$T/maps" || true
check "CPROF_OUTPUT's heap.pb.gz is the parent's (first mapping $sh_path)" \
  bash -c "sed -n 2p '$T/maps' | grep -qF '$sh_path'"
check "CPROF_OUTPUT's heap.pb.gz has nothing of ls" bash -c "! grep -q '/ls' '$T/maps'"
check "CPROF_OUTPUT's cpu.pb.gz is there and read by pprof" bash -c "go tool pprof -raw '$T/out/cpu.pb.gz' >/dev/null 2>&1"
check "no temporary file left by a racing child" bash -c "! ls '$T/out' | grep -q tmp"

# A fixed port: children that started servers would each say it is in use.
start holder -- "$B/tests/integration/stacks_linked"
run busy LD_PRELOAD="$LIB" CPROF_ADDR="$ADDR" -- bash -c "$script" "$T/out"
check "port in use: one 'cannot listen' line, the shell's; none from its children" \
  bash -c "[ \$(grep -c 'cannot listen' '$T/busy.err') = 1 ]"
stop

# A wrapper that execs the real program: the program is the one to profile.
run wrapped LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- sh -c 'exec sh -c "echo hi"'
check "exec without fork: the program starts cprof as its parent would" \
  bash -c "[ \$(grep -c '^cprof: serving ' '$T/wrapped.err') = 2 ]"

# CPROF_CHILDREN=1: the programs the shell runs join its process tree
# (issue 31): no address and no line of their own; those that live on are
# listed by the shell's address and answer there with ?pid=.
start kids LD_PRELOAD="$LIB" CPROF_CHILDREN=1 -- \
  sh -c "ls / >/dev/null; '$B/tests/host/host_prefork' 1 idle 30; true"
for _ in $(seq 1 100); do
  [ "$(wc -l <"$T/kids.out")" -ge 1 ] && [ "$(http "http://$ADDR/debug/pprof/processes")" = 200 ] &&
    [ "$(grep -c '"name":"host_prefork"' "$T/body")" = 2 ] && break
  sleep 0.1
done
cp "$T/body" "$T/kids.json"
WORKER=$(head -1 "$T/kids.out")
check "CPROF_CHILDREN=1: the program the shell ran and its forked worker are in the shell's tree" \
  bash -c "[ \$(grep -c '\"name\":\"host_prefork\"' '$T/kids.json') = 2 ]"
check "CPROF_CHILDREN=1: ls, which ended at once, is not" bash -c "! grep -q '\"name\":\"ls\"' '$T/kids.json'"
check "CPROF_CHILDREN=1: ?pid= of the worker answers" \
  test "$(http "http://$ADDR/debug/pprof/heap?pid=$WORKER")" = 200
kill -TERM "$(sed -n 's/.*"pid":\([0-9]*\),"ppid":[0-9]*,"name":"host_prefork".*/\1/p' "$T/kids.json" | head -1)"
await kids
check "CPROF_CHILDREN=1: one line on stderr, the shell's 'serving'" \
  bash -c "[ \$(wc -l <'$T/kids.err') = 1 ] && grep -q '^cprof: serving ' '$T/kids.err'"
run badkids LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_CHILDREN=yes -- sh -c 'echo hi'
check "CPROF_CHILDREN=yes: one line naming it" bash -c "[ \$(grep -c '^cprof: CPROF_CHILDREN=yes' '$T/badkids.err') = 1 ]"
finish
