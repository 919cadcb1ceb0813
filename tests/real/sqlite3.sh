# Issue 13, real programs: Debian's sqlite3 shell under LD_PRELOAD of cprof,
# building a table of a million rows in memory and running GROUP BY and
# ORDER BY queries over it. The result rows and the exit code must be as
# without cprof; the whole run's CPU profile (CPROF_OUTPUT) must have
# functions of libsqlite3, the engine the shell drives, in its top 5; and
# the heap profile's in-use total must be within 10 % of the shell's own
# "Memory Used" (.stats).
#
# Debian's libsqlite3 calls malloc, realloc and free, not malloc_usable_size:
# it keeps each block's size in an 8-byte prefix, and "Memory Used" is the
# sum of those sizes, rounded up to 8. cprof sees the prefix too, a few
# thousand blocks of 8 bytes next to tens of megabytes of pages.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib.sh"
need sqlite3

Q=$CPROF_SOURCE_DIR/tests/real/programs/query.sql

batch "libsqlite3's" libsqlite3 -- sqlite3 -bail :memory: ".read $Q"
head -3 "$T/plain.out"

# Heap: after the queries the shell prints its statistics and then, by
# .system, fetches the heap profile while it waits for that command to end:
# the two figures describe the same moment. A sample every 4 KiB on
# average, ~6,000 samples of the ~25 MB of pages: within 2 %.
PORT=$(free_port)
run heap LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:$PORT CPROF_HEAP_RATE=4096 -- \
  sqlite3 -bail :memory: ".read $Q" ".stats" \
  ".system curl -s -o $T/heap.pb.gz http://127.0.0.1:$PORT/debug/pprof/heap"
used=$(sed -n 's/^Memory Used: *\([0-9]*\) .*/\1/p' "$T/heap.out")
inuse=$(inuse_bytes "$T/heap.pb.gz")
echo "sqlite3 Memory Used $used bytes, cprof in-use $inuse bytes"
check "heap in-use within 10 % of sqlite3's Memory Used" within "$inuse" "$used" 10
finish
