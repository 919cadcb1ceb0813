# Issue 13, real programs: Debian's python3 under LD_PRELOAD of cprof,
# running a workload of dictionaries, strings, sorting, json and big
# integers (tests/real/programs/workload.py). Its output and exit code must
# be as without cprof; the whole run's CPU profile (CPROF_OUTPUT) must have
# the interpreter's own functions in its top 5; and the heap profile's
# in-use total must be within 10 % of what tracemalloc reports.
#
# What is comparable: by default CPython serves objects of up to 512 bytes
# from its own arenas, which it maps with mmap, not malloc, so cprof never
# sees them while tracemalloc counts each object. PYTHONMALLOC=malloc sends
# every object to malloc. tracemalloc counts the sizes asked for, as cprof
# does, but not its own tables, which it also takes from malloc; those
# are get_tracemalloc_memory(), and the program's figure is the sum. (That
# figure is short of what the tables hold, by a fifth when there are
# millions of objects; the workload holds most of its bytes in large ones.)
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x $PY ] || skip "Debian's python3 is not installed"
W=$CPROF_SOURCE_DIR/tests/real/programs/workload.py

batch "the interpreter's" python3 -- $PY "$W"

# Heap: a sample every 4 KiB on average, ~40,000 samples: within 1 %.
PORT=$(free_port)
run heap LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:$PORT CPROF_HEAP_RATE=4096 \
  PYTHONMALLOC=malloc PYTHONTRACEMALLOC=1 -- \
  $PY "$W" "curl -sS -o $T/heap.pb.gz http://127.0.0.1:$PORT/debug/pprof/heap"
set -- $(sed -n 's/^traced \([0-9]*\) tracemalloc_own \([0-9]*\)$/\1 \2/p' "$T/heap.out")
used=$(($1 + $2))
inuse=$(inuse_bytes "$T/heap.pb.gz")
echo "tracemalloc: traced $1 + its own tables $2 = $used bytes; cprof in-use $inuse bytes"
check "heap in-use within 10 % of tracemalloc's figures" within "$inuse" "$used" 10
finish
