# Issue 28, item 11: the heap profile of Debian's redis-server (which
# allocates through the system's jemalloc) reads true at the default
# sampling rate, over a sweep of value sizes. For each size, redis-benchmark
# SETs random keys until the server holds about 90 MB, then the heap
# profile's in-use total is compared with INFO's used_memory.
#
# The two do not measure the same thing: used_memory sums jemalloc's usable
# sizes (its size classes), cprof the sizes asked for. So each size is run
# twice: at CPROF_HEAP_RATE=1, where every block is sampled and the profile
# is exact, for the ratio r of asked-for bytes to used_memory; then at the
# default rate, where the profile is an estimate. Its expected value is
# r x used_memory (= T); its standard error, for blocks much smaller than
# the rate R (each sample stands for about R bytes, and the samples are a
# Poisson process over the live bytes), sqrt(R x T): about 8 % of T at
# 90 MB and 512 KiB (T / R, some 170, samples). The check allows 4
# standard errors (a false alarm once in 16,000 sizes). The exact ratio
# itself must lie between 0.75 and 1: nothing asked for is larger than its
# usable size, and jemalloc's classes round these sizes up by less than a
# quarter.
#
# Before the fix, a sampled block carried 32 bytes of header within the
# allocator's block and reported the larger size class's usable size: a
# 1,000-byte value's string (1,004 bytes, 1,024 in jemalloc's class) read
# 1,248 usable bytes when sampled, more than a tenth spare, and redis shrank
# it with realloc, which moved it out of its sample. 1,000- and 1,010-byte
# values read 6-12 % of the truth; 200 and 4,000 (whose class does not
# change) read right.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib.sh"
need redis-server redis-cli redis-benchmark
RATE=524288 # CPROF_HEAP_RATE's default
PORT=$(free_port)
cli() { redis-cli -p "$PORT" "$@"; }

# measure NAME SIZE [ENV=VAL...]: a server under cprof with ENV (and before
# it, when $ALLOC names one, another allocator after cprof), filled with
# values of SIZE bytes under about 90 MB of random keys; prints cprof's
# in-use bytes and redis's used_memory, and shuts the server down.
measure() {
  local name=$1 size=$2 n inuse used addr
  shift 2
  n=$((150000000 / (size + 150)))
  env LD_PRELOAD="$LIB${ALLOC:+:$ALLOC}" CPROF_ADDR=127.0.0.1:0 "$@" redis-server --port "$PORT" \
    --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$T/$name.log" 2>"$T/$name.err" &
  PID=$!
  for _ in $(seq 1 200); do
    [ "$(cli ping 2>/dev/null)" = PONG ] && break
    sleep 0.05
  done
  addr=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/$name.err")
  redis-benchmark -p "$PORT" -q -t set -n "$n" -r "$n" -d "$size" -P 16 >/dev/null 2>&1
  curl -s -o "$T/$name.pb.gz" "http://$addr/debug/pprof/heap"
  used=$(cli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
  inuse=$(inuse_bytes "$T/$name.pb.gz")
  cli shutdown nosave >/dev/null 2>&1 || true
  wait "$PID" || true
  echo "${inuse:-0} ${used:-0}"
}

# sweep LABEL SIZE: the two runs of one size, and the checks.
sweep() {
  local label=$1 size=$2 exact used1 inuse used line
  read -r exact used1 < <(measure "exact$size" "$size" CPROF_HEAP_RATE=1)
  read -r inuse used < <(measure "default$size" "$size")
  line=$(awk -v e="$exact" -v u1="$used1" -v i="$inuse" -v u="$used" -v R="$RATE" 'BEGIN {
    if (u1 <= 0 || u <= 0) { print "no figures"; exit }
    r = e / u1; t = r * u; se = sqrt(R * t)
    printf "ratio at rate 1 %.3f; default rate: used_memory %d, expected in-use %d, cprof %d (%.1f %% of expected), %.2f standard errors of %d\n",
      r, u, t, i, 100 * i / t, (i - t) / se, se }')
  echo "$label: $line"
  check "$label: at rate 1, asked-for bytes 75-100 % of used_memory" \
    awk -v e="$exact" -v u="$used1" 'BEGIN { exit !(u > 0 && e <= u && e >= 0.75 * u) }'
  check "$label: the heap profile's in-use within 4 standard errors of redis's heap" \
    awk -v e="$exact" -v u1="$used1" -v i="$inuse" -v u="$used" -v R="$RATE" 'BEGIN {
      if (u1 <= 0 || u <= 0 || e <= 0) exit 1
      t = e / u1 * u; d = i - t; if (d < 0) d = -d
      exit !(d <= 4 * sqrt(R * t)) }'
}

ALLOC=
for size in 200 1000 1010 4000; do
  sweep "values of $size bytes" "$size"
done
# The same under tcmalloc (preloaded after cprof, it serves redis's calls
# in jemalloc's stead), where 1,000-byte values read 7 % before.
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -e "$TC" ]; then
  ALLOC=$TC
  sweep "tcmalloc, values of 1000 bytes" 1000
else
  echo "tcmalloc (libtcmalloc-minimal4) is not installed: not checked"
fi
finish
