# Issue 13, real programs: Debian's redis-server under LD_PRELOAD of cprof,
# driven by redis-cli and loaded by its own redis-benchmark. The replies to
# a fixed script of commands and the server's exit code must be as without
# cprof; a CPU profile taken during the benchmark must name redis's own
# functions (zmalloc, processCommand, dictFind...) among its top 20; and
# the heap profile's in-use total must be within 10 % of INFO's used_memory.
#
# Debian builds redis with the system's jemalloc, and redis calls it by the
# plain names (malloc, free, malloc_usable_size), so cprof, loaded first,
# sees every allocation and passes it on to jemalloc. used_memory is the sum
# of malloc_usable_size over redis's live blocks: jemalloc's size classes,
# which cprof does not report (it reports what was asked for). Values of
# 4000 bytes sit in the 4096-byte class, so the two figures differ by
# ~2 % there, and by up to 25 % on small values; the heap check uses those.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib.sh"
need redis-server redis-cli redis-benchmark

PORT=$(free_port)
cli() { redis-cli -p "$PORT" "$@"; }

# server NAME [ENV=VAL...]: starts redis-server on $PORT (no persistence)
# and waits until it answers PING.
server() {
  local name=$1
  shift
  env "$@" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no >"$T/$name.log" 2>"$T/$name.err" &
  PID=$!
  for _ in $(seq 1 200); do
    [ "$(cli ping 2>/dev/null)" = PONG ] && return 0
    kill -0 "$PID" 2>/dev/null || { cat "$T/$name.err" >&2; return 1; }
    sleep 0.05
  done
  return 1
}

# The commands whose replies are compared: strings, counters, lists,
# hashes, sorted sets, expiry, an error, and then what the benchmark left.
script() {
  cli set greeting hello
  cli get greeting
  cli append greeting ', world'
  cli incrby counter 41
  cli incr counter
  cli rpush list a b c d e
  cli lrange list 1 3
  cli hset h f1 v1 f2 v2
  cli hgetall h
  cli zadd z 3 c 1 a 2 b
  cli zrange z 0 -1 withscores
  cli setex temp 100 x
  cli ttl temp
  cli lpush greeting x 2>&1
  cli object encoding list
}

# workload NAME [PID]: the script, the benchmark (fixed keys: no -r), what
# it left, and a shutdown; the client's output goes to $T/NAME.out and the
# server's exit code to $T/NAME.rc. With PID (the profile's curl), GETs
# (which change nothing) go on until it is done, so the profile covers load
# however fast the machine is and the server is up when it answers.
workload() {
  local name=$1 curl=${2:-} rc=0
  { script; } >"$T/$name.out" 2>&1
  redis-benchmark -p "$PORT" -q -n 60000 -c 20 -P 4 -t set,get,incr,lpush,lpop,hset,zadd \
    >"$T/$name.bench" 2>&1 || echo "benchmark failed: $?" >>"$T/$name.out"
  while [ -n "$curl" ] && kill -0 "$curl" 2>/dev/null; do
    redis-benchmark -p "$PORT" -q -n 20000 -c 20 -P 4 -t get >/dev/null 2>&1
  done
  { cli dbsize; cli get key:__rand_int__; cli get counter:__rand_int__; cli llen mylist; } >>"$T/$name.out" 2>&1
  cli shutdown nosave >/dev/null 2>&1 || true
  wait "$PID" || rc=$?
  echo $rc >"$T/$name.rc"
}

server plain
workload plain
check "runs without cprof" rc_is plain 0

server pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0
ADDR=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/pre.err")
# The profile is taken while the benchmark runs (workload starts it).
# At 250 Hz: the server spends three quarters of its CPU in write, read and
# epoll_wait, and its own functions a sample or two each, so at 100 Hz
# (about 110 samples) none of them made the top 10 in 1 run of 6; the top
# 20 of about 280 samples ranks them steadily.
curl -s -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=3&hz=250" &
CURL=$!
workload pre $CURL
wait $CURL
check "same replies as without cprof" same plain pre out
same plain pre out || diff "$T/plain.out" "$T/pre.out" >&2 || true
check "same exit code as without cprof" same plain pre rc
echo "top 20 (flat) functions of redis's own binary:" $(own_top "$T/cpu.pb.gz" 20 'redis-(server|check-rdb)$')
check "CPU profile: redis's own functions in the top 20" \
  test -n "$(own_top "$T/cpu.pb.gz" 20 'redis-(server|check-rdb)$')"

# Heap: every allocation sampled (CPROF_HEAP_RATE=1), so the figure is exact
# rather than an estimate; 20000 values of 4000 bytes.
server heap LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_HEAP_RATE=1
ADDR=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/heap.err")
redis-benchmark -p "$PORT" -q -t set -n 20000 -r 1000000000 -d 4000 -P 16 >/dev/null 2>&1
curl -s -o "$T/heap.pb.gz" "http://$ADDR/debug/pprof/heap"
used=$(cli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
inuse=$(inuse_bytes "$T/heap.pb.gz")
echo "redis used_memory $used bytes, cprof in-use $inuse bytes"
check "heap in-use within 10 % of redis's used_memory" within "$inuse" "$used" 10
cli shutdown nosave >/dev/null 2>&1 || true
wait "$PID" || true
finish
