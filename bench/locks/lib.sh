# Shared by the lock benchmark scripts. Source it: it brings in heap/lib.sh
# (and through it cpu/lib.sh: set -euo pipefail, the build, the scratch
# directory $T, start, median, field, machine, load, need_pkgs, NICE) and
# adds what the lock scripts need.
. "$(dirname "${BASH_SOURCE[0]}")/../heap/lib.sh"

# locks_available: whether this libcprof interposes the lock functions (it
# defines pthread_mutex_lock). Says so on stderr when it does not.
locks_available() {
  # awk, not grep -q: see heap_available in heap/lib.sh (pipefail and SIGPIPE).
  if nm -D --defined-only "$LIB" 2>/dev/null | awk '$3 == "pthread_mutex_lock" { f = 1 } END { exit !f }'; then return 0; fi
  echo "cprof's lock profiler is not in $LIB yet (it does not define pthread_mutex_lock)" >&2
  return 1
}

# lock_endpoints_available: whether a program under cprof answers 200 to
# /debug/pprof/mutex and /debug/pprof/block (debug=1, the text form).
lock_endpoints_available() {
  locks_available || return 1
  start probe CPROF_MUTEX_FRACTION=1 CPROF_BLOCK_RATE=1 -- sleep 30 || return 1
  local code ok=0 e
  for e in mutex block; do
    code=$(curl -s --max-time 20 -o "$T/probe.$e.txt" -w '%{http_code}' "http://$ADDR/debug/pprof/$e?debug=1" || true)
    if [ "$code" != 200 ]; then
      echo "cprof's /debug/pprof/$e is not available yet (HTTP $code from $LIB)" >&2
      head -c 300 "$T/probe.$e.txt" >&2 || true
      ok=1
    fi
  done
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  return $ok
}

# wait_line NAME PREFIX SECONDS: waits until $T/NAME.out has a line starting
# with PREFIX (the workload's result) while the program started last ($PID)
# still runs. Fails, saying why, if it ends first or SECONDS pass.
wait_line() {
  local name=$1 prefix=$2
  for _ in $(seq 1 $(($3 * 20))); do
    grep -q "^$prefix" "$T/$name.out" 2>/dev/null && return 0
    if ! kill -0 "$PID" 2>/dev/null; then
      grep -q "^$prefix" "$T/$name.out" 2>/dev/null && return 0
      echo "$name ended without printing its result:" >&2
      cat "$T/$name.out" "$T/$name.err" >&2
      return 1
    fi
    sleep 0.05
  done
  echo "$name printed no result within $3 s" >&2
  return 1
}

# get NAME PATH: GETs http://$ADDR/PATH into $T/NAME; fails unless HTTP 200.
get() {
  local code
  code=$(curl -s --max-time 60 -o "$T/$1" -w '%{http_code}' "http://$ADDR/$2" || true)
  if [ "$code" != 200 ]; then
    echo "GET /$2 answered HTTP $code:" >&2
    head -c 500 "$T/$1" >&2 || true
    echo >&2
    return 1
  fi
}

# stop_started: ends the program started last ($PID) and reaps it.
stop_started() {
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
}

# lock_sums FILE FUNC...: sums of a mutex or block profile's two values
# (contentions/count, delay/nanoseconds), read with `go tool pprof -raw`:
#   samples total_count total_delay  FUNC1_count FUNC1_delay  FUNC2_count ...
# where FUNCi's figures are over the samples whose stack has a frame (or an
# inlined frame) of that function. The values are as cprof wrote them
# (already scaled by CPROF_MUTEX_FRACTION). An empty profile gives zeros.
lock_sums() {
  local file=$1
  shift
  go tool pprof -symbolize=none -raw "$file" 2>>"$T/pprof.err" | awk -v funcs="$*" '
    BEGIN { nf = split(funcs, F, " "); ci = 1; di = 2 }
    /^Samples:/ { sec = "s"; next }
    /^Locations/ { sec = "l"; next }
    /^Mappings/ { sec = "m"; next }
    sec == "s" && /\// && !/:/ {   # the header: which column is which
      for (i = 1; i <= NF; i++) { if ($i ~ /^contentions\//) ci = i; if ($i ~ /^delay\//) di = i }
      next }
    sec == "s" && /^ *[0-9]+( +[0-9]+)*:/ {
      line = $0; vals = line; sub(/:.*/, "", vals); ids = line; sub(/^[^:]*:/, "", ids)
      split(vals, v, " "); n++
      cnt[n] = v[ci]; dly[n] = v[di]; stk[n] = ids; next }
    sec == "l" && /^ *[0-9]+: / {
      id = $1; sub(/:/, "", id); f = ""
      for (i = 2; i <= NF; i++) if ($i !~ /^0x/ && $i !~ /^M=/) { f = $i; break }
      fn[id] = " " f " "; next }
    sec == "l" && NF > 0 { fn[id] = fn[id] $1 " " }   # an inlined frame of the same location
    END {
      for (s = 1; s <= n; s++) {
        tc += cnt[s]; td += dly[s]
        k = split(stk[s], L, " ")
        for (j = 1; j <= nf; j++) {
          hit = 0
          for (i = 1; i <= k; i++) if (index(fn[L[i]], " " F[j] " ")) { hit = 1; break }
          if (hit) { fc[j] += cnt[s]; fd[j] += dly[s] }
        }
      }
      printf "%d %.0f %.0f", n, tc, td
      for (j = 1; j <= nf; j++) printf " %.0f %.0f", fc[j], fd[j]
      printf "\n" }'
}
