# CPROF_OUTPUT: a batch program that ends before anyone could fetch a
# profile still leaves its whole run's CPU profile behind, readable by
# go tool pprof; its output and exit code stay its own.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
"$P/batch" >"$T/plain.out" 2>&1
rc=0
LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out" "$P/batch" >"$T/batch.out" 2>"$T/batch.err" || rc=$?
check "the program's output is unchanged" cmp -s "$T/plain.out" "$T/batch.out"
check "its exit code is unchanged" [ $rc = 0 ]
check "nothing on stderr" [ ! -s "$T/batch.err" ]
check "CPROF_OUTPUT created the directory and wrote cpu.pb.gz" [ -s "$T/out/cpu.pb.gz" ]
check "no temporary file is left" bash -c "! ls '$T/out' | grep -q tmp"
pprof -top "$T/out/cpu.pb.gz" >"$T/top" || fail "go tool pprof reads cpu.pb.gz"
check "it is the whole run's CPU profile" has "$T/top" '^Type: cpu$'
check "it names the batch work" has "$T/top" ' batch_heavy$'
check "about 1.5 s of CPU, as the program used" python3 - "$T/top" <<'PY'
import re, sys
m = re.search(r'Total samples = ([\d.]+)(ms|s)', open(sys.argv[1]).read())
v = float(m.group(1)) / (1000 if m.group(2) == 'ms' else 1) if m else 0
print("total", v); sys.exit(0 if 1.0 <= v <= 2.2 else 1)
PY

# Written at exit, where the program waits for it, yet symbolized as fully
# as the endpoints' profiles for the program's own code: function names,
# files and lines, and the inlined batch_mix as a frame of its own (pprof
# marks it "(inline)"). The lines are checked against the source.
SRC=$CPROF_SOURCE_DIR/tests/integration/programs/batch.c
pprof -top -lines "$T/out/cpu.pb.gz" >"$T/lines" || fail "go tool pprof -lines reads cpu.pb.gz"
check "cpu.pb.gz: batch_step with its file and line" \
  has "$T/lines" " batch_step .*programs/batch\.c:$(grep -n 'sink = batch_mix' "$SRC" | cut -d: -f1)\$"
check "cpu.pb.gz: the inlined batch_mix, with its file" has "$T/lines" ' batch_mix .*programs/batch\.c:[0-9]+ \(inline\)$'
check "cpu.pb.gz: main, with its file and line" has "$T/lines" ' main .*programs/batch\.c:[0-9]+$'
pprof -raw "$T/out/cpu.pb.gz" >"$T/raw" || fail "go tool pprof -raw reads cpu.pb.gz"
check "cpu.pb.gz: the program's mapping says it has functions, files, lines and inlines" \
  has "$T/raw" '^1: .*/batch [0-9a-f]+ \[FN\]\[FL\]\[LN\]\[IN\]$'

# The heap profile at exit: the 16 MiB batch_keep still holds, named with
# its file and line.
check "CPROF_OUTPUT wrote heap.pb.gz" [ -s "$T/out/heap.pb.gz" ]
pprof -top -lines "$T/out/heap.pb.gz" >"$T/heap" || fail "go tool pprof reads heap.pb.gz"
check "heap.pb.gz: in use at exit" has "$T/heap" '^Type: inuse_space$'
check "heap.pb.gz: batch_keep with its file and line" \
  has "$T/heap" " batch_keep .*programs/batch\.c:$(grep -n 'return malloc(n)' "$SRC" | cut -d: -f1)\$"

# A bad directory is one stderr line, and the program runs on.
: >"$T/file"
rc=0
LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/file" "$P/batch" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
check "CPROF_OUTPUT naming a file: output unchanged" cmp -s "$T/plain.out" "$T/bad.out"
check "CPROF_OUTPUT naming a file: exit code unchanged" [ $rc = 0 ]
check "CPROF_OUTPUT naming a file: one line naming the variable" \
  bash -c "[ \$(wc -l <'$T/bad.err') = 1 ] && grep -q '^cprof: CPROF_OUTPUT=.*not a directory' '$T/bad.err'"

# While a run is recorded, an HTTP profile request shares the recording
# (issue 32): its own second, and the whole run's file is still written.
start rec LD_PRELOAD="$LIB" CPROF_OUTPUT="$T/rec" -- "$B/examples/demo_server" --seconds 4
check "HTTP profile while CPROF_OUTPUT records: 200" \
  [ "$(http "http://$ADDR/debug/pprof/profile?seconds=1")" = 200 ]
pprof -top "$T/body" >"$T/rec.top" || fail "go tool pprof reads the endpoint's profile"
check "... a CPU profile of its own second" has "$T/rec.top" '^Duration: (1|1\.0[0-9]*|0\.9[5-9][0-9]*)s'
await rec
check "CPROF_OUTPUT still wrote the whole run" eval 'pprof -top "$T/rec/cpu.pb.gz" >"$T/rec.whole"'
check "... longer than the request's second" python3 -c '
import re, sys
m = re.search(r"^Duration: ([\d.]+)s", open(sys.argv[1]).read(), re.M)
print(m.group(0) if m else "no duration")
sys.exit(0 if m and float(m.group(1)) > 3 else 1)' "$T/rec.whole"
finish
