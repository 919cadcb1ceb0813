#!/usr/bin/env bash
# What cprof adds to each worker of a process tree (issue 31's memory goal:
# ≤ 2 MB of RSS per worker, idle and after being profiled).
#
# tests/host/programs/prefork.c with WORKERS idle workers (default 16), run
# without cprof and under LD_PRELOAD of the library (CPROF_ADDR=127.0.0.1:0),
# in ROUNDS alternating rounds (default 3). In each run, every worker's
# VmRSS (/proc/PID/status) and Pss and Private_Clean + Private_Dirty
# (/proc/PID/smaps_rollup) are read at three moments:
#   idle     IDLE s (default 2) after the master has printed the pids
#   fetched  after GET /debug/pprof/goroutine?debug=2&pid=N,
#            goroutine?pid=N (debug=0), heap?pid=N and profile?seconds=1&pid=N
#            (CPU) for every worker N, from the address the master serves on
#            (its "cprof: serving http://ADDR/" line); the run without cprof
#            fetches nothing
#   later    LATER s (default 10) after that
# and the master's own figures beside them. The table gives, for each moment
# and figure, the median and the max over the workers, each the median of
# the rounds: without cprof, with it, and what it added (with minus
# without, round medians subtracted). A last table splits what a worker's
# VmRSS added by kind of page (see figures). About 2.5 minutes.
#
# The script says how many goroutine dumps came from the worker asked (a
# "thread PID" line in the dump): a library from before issue 31 ignores
# ?pid=, and its master answers every fetch itself. The master names what
# its workers answer (src/tree/symbolize.c), so its own figures after the
# fetches are the tree's symbolizer's.
#
#   bench/tree_memory.sh [LIBCPROF]       default build/libcprof.so (make build)
#   WORKERS=16 ROUNDS=3 IDLE=2 LATER=10 PREFORK=build/tests/host/host_prefork bench/tree_memory.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIB=$(realpath "${1:-$ROOT/build/libcprof.so}")
PREFORK=${PREFORK:-$ROOT/build/tests/host/host_prefork}
WORKERS=${WORKERS:-16}
ROUNDS=${ROUNDS:-3}
IDLE=${IDLE:-2}
LATER=${LATER:-10}
for f in "$LIB" "$PREFORK"; do
  [ -e "$f" ] || { echo "tree_memory: $f is missing: run make build" >&2; exit 1; }
done
command -v curl >/dev/null || { echo "tree_memory: needs curl" >&2; exit 1; }

T=$(mktemp -d /tmp/cprof-tree-memory.XXXXXX)
MASTER=
cleanup() {
  if [ -n "$MASTER" ]; then
    kill -TERM "$MASTER" 2>/dev/null || true
    wait "$MASTER" 2>/dev/null || true
  fi
  if [ -n "${KEEP:-}" ]; then echo "(scratch files kept in $T)" >&2; else rm -rf "$T"; fi
}
trap cleanup EXIT
RES=$T/results # variant round moment who pid rss_kb pss_kb private_kb anon libc libs data (kB)
: >"$RES"

# figures PID: "VmRSS Pss Private Anon Libc Libs Data" in kB, or nothing
# if PID is gone. The last four split the resident pages (smaps' Rss) by
# what they are: anonymous memory (heap, stacks, other anonymous mappings);
# the C library's code and read-only data (libc.so and ld.so: file pages,
# shared with every process that maps them); the other files' code and
# read-only data (the program's, libcprof's and its libraries'; relro
# included); the files' writable data.
figures() {
  local rss rest
  rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null) || return 0
  rest=$(awk '$1 == "Pss:" { p = $2 } $1 ~ /^Private_(Clean|Dirty):$/ { q += $2 }
    END { print p, q }' "/proc/$1/smaps_rollup" 2>/dev/null) || return 0
  rest="$rest $(awk '
    /^[0-9a-f]+-[0-9a-f]+ / {
      if ($6 !~ /^\//) k = 1
      else if ($2 ~ /w/) k = 4
      else if ($6 ~ /\/(libc\.so|ld-linux)[^\/]*$/) k = 2
      else k = 3
      next
    }
    $1 == "Rss:" { s[k] += $2 }
    END { print s[1] + 0, s[2] + 0, s[3] + 0, s[4] + 0 }' "/proc/$1/smaps" 2>/dev/null)" || return 0
  [ -n "$rss" ] && echo "$rss $rest"
}

# measure VARIANT ROUND MOMENT: one line per worker and one for the master.
measure() {
  local p f
  for p in $(cat "$T/pids"); do
    f=$(figures "$p")
    if [ -n "$f" ]; then echo "$1 $2 $3 worker $p $f" >>"$RES"; else echo "  $1 round $2: worker $p gone at $3" >&2; fi
  done
  f=$(figures "$MASTER")
  [ -z "$f" ] || echo "$1 $2 $3 master $MASTER $f" >>"$RES"
}

# run VARIANT ROUND: one prefork, measured at the three moments.
run() {
  local v=$1 r=$2 addr="" p u code ok=0 own=0
  local pre=()
  [ "$v" = plain ] || pre=(env LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0)
  # Bounded: the master stops its workers and exits by itself after 100 s.
  : >"$T/pids" # before the master starts: the loop below reads it at once
  ${pre[@]+"${pre[@]}"} "$PREFORK" "$WORKERS" idle 100 >"$T/pids" 2>"$T/err" &
  MASTER=$!
  for _ in $(seq 1 400); do
    if [ "$(wc -l <"$T/pids")" -ge "$WORKERS" ]; then
      [ "$v" = plain ] && break
      addr=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/err" | head -1)
      [ -n "$addr" ] && break
    fi
    kill -0 "$MASTER" 2>/dev/null || { echo "prefork exited early:" >&2; cat "$T/err" >&2; exit 1; }
    sleep 0.025
  done
  [ "$(wc -l <"$T/pids")" -ge "$WORKERS" ] || { echo "prefork did not start $WORKERS workers in 10 s" >&2; exit 1; }
  [ "$v" = plain ] || [ -n "$addr" ] || { echo "no serving line in 10 s:" >&2; cat "$T/err" >&2; exit 1; }
  sleep "$IDLE"
  measure "$v" "$r" idle
  if [ "$v" = cprof ]; then
    [ -n "$PROCESSES" ] || PROCESSES=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 \
      "http://$addr/debug/pprof/processes" || echo failed)
    for p in $(cat "$T/pids"); do
      code=$(curl -s -o "$T/goroutine" -w '%{http_code}' --max-time 60 \
        "http://$addr/debug/pprof/goroutine?debug=2&pid=$p" || true)
      [ "$code" = 200 ] && ok=$((ok + 1))
      # The dump has a "thread TID ..." line for each thread of the process
      # that answered: one whose TID is p is p's main thread. (Not
      # necessarily the first line: after the pids wrap, cprof's threads
      # may have lower TIDs than the main one.)
      grep -q "^thread $p " "$T/goroutine" && own=$((own + 1))
      for u in "goroutine?pid=$p" "heap?pid=$p" "profile?seconds=1&pid=$p"; do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 \
          "http://$addr/debug/pprof/$u" || true)
        [ "$code" = 200 ] && ok=$((ok + 1))
      done
    done
    echo "  round $r: $ok of $((4 * WORKERS)) fetches answered 200; $own of $WORKERS goroutine dumps from the worker asked"
  fi
  measure "$v" "$r" fetched
  sleep "$LATER"
  measure "$v" "$r" later
  kill -TERM "$MASTER"
  wait "$MASTER" || { echo "prefork ($v) exited $?" >&2; exit 1; }
  MASTER=
}

PROCESSES=
start=$(date +%s)
echo "# Tree memory: prefork $WORKERS idle workers, $ROUNDS alternating rounds; idle ${IDLE} s, fetched, ${LATER} s later"
echo "library: $LIB ($(git -C "$ROOT" log -1 --format='%h %cs' 2>/dev/null || echo '?'))"
echo "machine: $(nproc) CPUs, $(uname -sr); $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="plain cprof"; else order="cprof plain"; fi
  for v in $order; do run "$v" "$r"; done
done
echo "/debug/pprof/processes answered $PROCESSES; elapsed $(($(date +%s) - start)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# The table. stat(VARIANT, MOMENT, COLUMN, median|max) over one round's
# workers, then the median of that over the rounds.
awk -v rounds="$ROUNDS" '
function med(a, n,   i, j, t) {
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; n[key]++
  for (c = 6; c <= 12; c++) { v[key, c, n[key]] = $c; if (n[key] == 1 || $c > mx[key, c]) mx[key, c] = $c } }
END {
  split("idle fetched later", moments, " ")
  name[6] = "VmRSS"; name[7] = "Pss"; name[8] = "Private"
  print ""
  print "Per worker, kB: the median and the max over the workers (each the median of " rounds " rounds)"
  print ""
  print "| moment | figure | without: median | without: max | with cprof: median | with cprof: max | added: median | added: max |"
  print "|---|---|---:|---:|---:|---:|---:|---:|"
  for (m = 1; m <= 3; m++) for (c = 6; c <= 8; c++) {
    row = "| " moments[m] " | " name[c] " |"
    split("plain cprof", vs, " ")
    for (k = 1; k <= 2; k++) {
      nm = 0
      for (r = 1; r <= rounds; r++) {
        key = vs[k] SUBSEP r SUBSEP moments[m] SUBSEP "worker"
        if (!(key in n)) continue
        nm++; delete w
        for (i = 1; i <= n[key]; i++) w[i] = v[key, c, i]
        rm[vs[k], r] = med(w, n[key]); rx[vs[k], r] = mx[key, c]
        a1[nm] = rm[vs[k], r]; a2[nm] = rx[vs[k], r]
      }
      md[k] = nm ? med(a1, nm) : "nan"; mxx[k] = nm ? med(a2, nm) : "nan"
      row = row sprintf(" %s | %s |", md[k], mxx[k])
    }
    nd = 0
    for (r = 1; r <= rounds; r++) if (((("plain", r) in rm)) && ((("cprof", r) in rm))) {
      nd++; d1[nd] = rm["cprof", r] - rm["plain", r]; d2[nd] = rx["cprof", r] - rx["plain", r] }
    row = row (nd ? sprintf(" %+d | %+d |", med(d1, nd), med(d2, nd)) : " - | - |")
    print row
  }
  print ""
  print "The master (the process that owns the address), kB, the median of " rounds " rounds"
  print ""
  print "| moment | figure | without | with cprof | added |"
  print "|---|---|---:|---:|---:|"
  for (m = 1; m <= 3; m++) for (c = 6; c <= 8; c++) {
    for (k = 1; k <= 2; k++) {
      nm = 0
      for (r = 1; r <= rounds; r++) {
        key = vs[k] SUBSEP r SUBSEP moments[m] SUBSEP "master"
        if (key in n) a1[++nm] = v[key, c, 1]
      }
      md[k] = nm ? med(a1, nm) : "nan"
    }
    printf "| %s | %s | %s | %s | %+d |\n", moments[m], name[c], md[1], md[2], md[2] - md[1]
  }
  print ""
  print "What a worker'"'"'s added VmRSS is made of, kB: the resident pages (smaps) by kind, with cprof minus"
  print "without, the median of " rounds " rounds of the median worker. Code and read-only data are file pages"
  print "in the page cache, shared with every process that maps them (Pss divides them among those)."
  print ""
  print "| moment | anonymous (heap, stacks) | libc and ld.so: code, read-only data | other files: code, read-only data | files: writable data |"
  print "|---|---:|---:|---:|---:|"
  for (m = 1; m <= 3; m++) {
    row = "| " moments[m] " |"
    for (c = 9; c <= 12; c++) {
      nd = 0
      for (r = 1; r <= rounds; r++) {
        for (k = 1; k <= 2; k++) {
          key = vs[k] SUBSEP r SUBSEP moments[m] SUBSEP "worker"
          if (!(key in n)) break
          delete w
          for (i = 1; i <= n[key]; i++) w[i] = v[key, c, i]
          got[k] = med(w, n[key])
        }
        if (k == 3) d1[++nd] = got[2] - got[1]
      }
      row = row (nd ? sprintf(" %+d |", med(d1, nd)) : " - |")
    }
    print row
  }
}' "$RES"
