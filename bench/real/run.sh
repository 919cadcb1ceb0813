#!/usr/bin/env bash
# Real programs (issue 13): the throughput of four programs nobody here
# wrote, as Debian ships them, without cprof and under LD_PRELOAD of it,
# the runs alternating, RUNS times each; prints each run and, per program
# and setting, the median and its ratio to the plain median (throughput
# under cprof over throughput without: 1.00 is no cost).
#
#   RUNS=5 ONLY="redis nginx sqlite3 python3" bench/real/run.sh
#
# Programs and what is measured:
#   redis    redis-server under redis-benchmark (SET and GET, 20 clients,
#            no pipelining): requests/s, the mean of the two
#   nginx    nginx (master_process off: one process) serving a 15-byte
#            file under wrk (1 thread, 16 connections, DURATION s): requests/s
#   sqlite3  the shell's million-row query (tests/real/programs/query.sql):
#            1 / wall seconds
#   python3  the interpreter's workload (tests/real/programs/workload.py):
#            1 / wall seconds
# Settings:
#   plain    no cprof
#   cprof    LD_PRELOAD, every setting its default but the port (a free
#            one): server on, CPU profile off until asked for, heap
#            sampling on at 512 KiB, mutex/block profiles off
#   cpu      as cprof, and the whole run's CPU profile recorded (CPROF_OUTPUT,
#            100 Hz), as someone profiling the program all along
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"

RUNS=${RUNS:-5}
DURATION=${DURATION:-5}
ONLY=${ONLY:-redis nginx sqlite3 python3}
PROGS=$ROOT/tests/real/programs
RES=$T/results.tsv
: >"$RES"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# envs SETTING: the environment a run gets, one VAR=VAL a line.
envs() {
  case $1 in
  plain) ;;
  cprof) printf '%s\n' LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 ;;
  cpu)
    mkdir -p "$T/prof"
    printf '%s\n' LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_OUTPUT="$T/prof"
    ;;
  esac
}

# await_port PORT PID: waits until something accepts on PORT, or PID ends.
await_port() {
  for _ in $(seq 1 400); do
    (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.025
  done
  return 1
}

# wall COMMAND...: runs it, output discarded, and prints its wall seconds.
wall() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 </dev/null || { echo "real: $* failed" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

# measure PROGRAM SETTING: one run; prints its throughput.
measure() {
  local prog=$1 setting=$2 p pid out
  mapfile -t e < <(envs "$setting")
  case $prog in
  redis)
    p=$(port)
    env ${e[@]+"${e[@]}"} redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
      >"$T/redis.log" 2>&1 &
    pid=$!
    await_port "$p" $pid
    out=$(redis-benchmark -p "$p" -q -n 100000 -c 20 -t set,get --csv 2>/dev/null)
    redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true
    wait $pid || true
    awk -F, '/^"(SET|GET)"/ { gsub(/"/, "", $2); s += $2; n++ } END { printf "%.0f\n", s / n }' <<<"$out"
    ;;
  nginx)
    p=$(port)
    mkdir -p "$T/ngx/html" "$T/ngx/tmp"
    echo '<h1>cprof</h1>' >"$T/ngx/html/index.html"
    cat >"$T/ngx/nginx.conf" <<EOF
daemon off;
master_process off;
pid $T/ngx/nginx.pid;
error_log $T/ngx/error.log;
events { worker_connections 256; }
http {
  access_log $T/ngx/access.log;
  client_body_temp_path $T/ngx/tmp;
  proxy_temp_path $T/ngx/tmp;
  fastcgi_temp_path $T/ngx/tmp;
  uwsgi_temp_path $T/ngx/tmp;
  scgi_temp_path $T/ngx/tmp;
  server { listen 127.0.0.1:$p; root $T/ngx/html; }
}
EOF
    : >"$T/ngx/access.log"
    env ${e[@]+"${e[@]}"} nginx -p "$T/ngx" -c "$T/ngx/nginx.conf" -e "$T/ngx/error.log" \
      >/dev/null 2>&1 &
    pid=$!
    await_port "$p" $pid
    out=$(wrk -t1 -c16 -d"${DURATION}s" "http://127.0.0.1:$p/index.html")
    kill -QUIT $pid
    wait $pid || true
    grep -qE 'Socket errors|Non-2xx' <<<"$out" && echo "real: wrk saw errors: $out" >&2
    sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out"
    ;;
  sqlite3)
    awk '{ printf "%.4f\n", 1 / $1 }' <<<"$(wall env ${e[@]+"${e[@]}"} sqlite3 -bail :memory: ".read $PROGS/query.sql")"
    ;;
  python3)
    awk '{ printf "%.4f\n", 1 / $1 }' <<<"$(wall env ${e[@]+"${e[@]}"} /usr/bin/python3 "$PROGS/workload.py")"
    ;;
  esac
}

need_pkgs real redis-server redis-tools nginx wrk sqlite3 python3
echo "real: $RUNS alternating runs of each setting; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$RUNS"); do
  for prog in $ONLY; do
    for setting in $(rotated "$r" plain cprof cpu); do
      v=$(measure "$prog" "$setting")
      printf '%s\t%s\t%d\t%s\n' "$prog" "$setting" "$r" "$v" | tee -a "$RES"
    done
  done
done

echo
printf '%-8s %-6s %12s %8s   %s\n' program set median ratio runs
for prog in $ONLY; do
  base=
  for setting in plain cprof cpu; do
    vals=$(awk -v p="$prog" -v s="$setting" '$1 == p && $2 == s { print $4 }' "$RES")
    med=$(median <<<"$vals")
    [ -n "$base" ] || base=$med
    printf '%-8s %-6s %12s %8s   %s\n' "$prog" "$setting" "$med" \
      "$(awk -v a="$med" -v b="$base" 'BEGIN { printf "%.3f", a / b }')" "$(echo $vals)"
  done
done
echo "(throughput: requests/s for redis and nginx, runs/s for sqlite3 and python3; ratio = median over plain's)"
