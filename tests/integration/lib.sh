# Shared helpers for cprof's shell tests. Source it; it sets -euo pipefail,
# makes a scratch directory, and stops every program it started on exit.
set -euo pipefail

: "${CPROF_BUILD_DIR:?run through ctest, or set CPROF_BUILD_DIR}"
: "${CPROF_SOURCE_DIR:?run through ctest, or set CPROF_SOURCE_DIR}"
B=$CPROF_BUILD_DIR
# CPROF_LIB: another build of the library, e.g. an older one, to see a test fail.
LIB=${CPROF_LIB:-$B/libcprof.so}
T=$(mktemp -d)
# go tool pprof keeps fetched profiles under $PPROF_TMPDIR (default ~/pprof).
export PPROF_TMPDIR=$T/pprof HOME=$T
FAILS=0
PASSES=0

# At exit, end what this shell still runs. Only jobs still running: a PID
# we started and that has ended may already belong to another test's
# program (pid_max is 32768 here, and a test run starts thousands of
# processes), so it must never be signalled from a list.
cleanup() {
  local rc=$? p
  for p in $(jobs -p); do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$T"
  # Exit code 77 is ctest's "skipped": only a skip may end with it, never
  # a command that failed with 77 under set -e.
  if [ "$rc" = 77 ] && [ -z "${SKIPPED:-}" ]; then exit 1; fi
}
trap cleanup EXIT

# skip REASON: the test cannot run here (ctest shows it as skipped).
skip() {
  echo "SKIP: $*"
  SKIPPED=1
  exit 77
}

# stop [PID]: ends a program started with start (default: the last one)
# and waits for it.
stop() {
  local p=${1:-$PID}
  kill "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}

pass() { PASSES=$((PASSES + 1)); echo "ok   $*"; }
fail() { FAILS=$((FAILS + 1)); echo "FAIL $*" >&2; }

# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() {
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

# has FILE REGEX: the file has a line matching the extended regex.
has() { grep -Eq -- "$2" "$1"; }

# start NAME [--ready] [ENV=VAL...] -- COMMAND...: starts a program with
# cprof on a free port, waits for its "serving" line on stderr (and, with
# --ready, for "ready" on its stdout), and sets $ADDR. The program's stdout
# and stderr go to $T/NAME.out and $T/NAME.err; its pid is in $PID.
start() {
  local name=$1 ready=0
  shift
  if [ "$1" = --ready ]; then ready=1; shift; fi
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  # Emptied here, not only by the redirect: that happens in the child, and
  # until it does we could read a previous program's address.
  : >"$T/$name.out"
  : >"$T/$name.err"
  env CPROF_ADDR=127.0.0.1:0 "${envs[@]}" "$@" >"$T/$name.out" 2>"$T/$name.err" &
  PID=$!
  for _ in $(seq 1 200); do
    # Whether it still runs, asked before its stderr is read: one that has
    # ended (a daemon's parent does, at once) wrote all it will write.
    local running=1
    kill -0 "$PID" 2>/dev/null || running=0
    ADDR=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/$name.err" | head -1)
    if [ -n "$ADDR" ] && { [ $ready = 0 ] || has "$T/$name.out" '^ready$'; }; then
      return 0
    fi
    if [ $running = 0 ]; then
      echo "$name exited before serving:" >&2
      cat "$T/$name.err" >&2
      return 1
    fi
    sleep 0.05
  done
  echo "$name did not start serving within 10 s:" >&2
  cat "$T/$name.err" >&2
  return 1
}

# pprof ARGS...: go tool pprof, quiet, with our scratch directories.
pprof() { go tool pprof "$@" 2>"$T/pprof.err"; }

# receiver NAME [FAILS]: starts a stand-in for Pyroscope's ingest API
# (tests/cli/pyroscope_receiver.py) recording into $T/NAME.rx, answering
# 503 to its first FAILS requests; sets RPORT, RPID.
RECEIVER=$CPROF_SOURCE_DIR/tests/cli/pyroscope_receiver.py
receiver() {
  mkdir -p "$T/$1.rx"
  python3 "$RECEIVER" serve "$T/$1.rx" "$T/$1.port" "${2:-0}" 2>"$T/$1.rx.err" &
  RPID=$!
  for _ in $(seq 1 100); do [ -s "$T/$1.port" ] && break; sleep 0.1; done
  RPORT=$(cat "$T/$1.port")
}

# pprof_types DIR: beside every DIR/N.pprof, N.types: its sample types as
# go tool pprof -raw reads them (nothing when it cannot). For
# tests/cli/pyroscope_receiver.py's check.
pprof_types() {
  for f in "$1"/*.pprof; do
    [ -e "$f" ] && [ ! -e "${f%.pprof}.types" ] || continue
    pprof -raw "$f" 2>/dev/null | sed -n '/^Samples:/{n;p;q}' | tr ' ' '\n' | sed 's|/.*||' |
      grep . >"${f%.pprof}.types" || rm -f "${f%.pprof}.types"
  done
}

# prefork_workers NAME N: waits (at most 5 s) until the prefork master
# started as NAME (tests/host/programs/prefork.c, which prints its workers'
# pids one a line) has printed N, and reads them into the array W.
prefork_workers() {
  for _ in $(seq 1 100); do [ "$(wc -l <"$T/$1.out")" -ge "$2" ] && break; sleep 0.05; done
  mapfile -t W <"$T/$1.out"
}

# free_port: a TCP port nothing listens on now, for programs that take a
# fixed port on their command line (a race with another test is possible,
# but then the program says so and the test fails loudly).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# http URL [curl args...]: prints the status code; the body goes to $T/body
# and the headers to $T/headers.
http() {
  local url=$1
  shift
  curl -s -o "$T/body" -D "$T/headers" -w '%{http_code}' "$@" "$url"
}

# run NAME [ENV=VAL...] -- COMMAND...: runs to completion (killed after
# $RUN_TIMEOUT seconds, default 60: a hang is then exit code 124 or 137),
# keeping stdout, stderr and the exit code in $T/NAME.{out,err,rc}.
run() {
  local name=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local rc=0
  timeout -k 5 "${RUN_TIMEOUT:-60}" env "${envs[@]}" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null || rc=$?
  echo $rc >"$T/$name.rc"
}
# same A B out|err|rc: two runs printed or exited the same.
same() { cmp -s "$T/$1.$3" "$T/$2.$3"; }
# rc_is NAME CODE: the run exited with CODE.
rc_is() { [ "$(cat "$T/$1.rc")" = "$2" ]; }

# await NAME: waits for the program start began ($PID) to end, at most 30 s
# (then it is killed with SIGKILL: exit code 137), keeping its exit code in
# $T/NAME.rc.
await() {
  local rc=0
  timeout 30 tail --pid="$PID" -s 0.1 -f /dev/null || kill -9 "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || rc=$?
  echo $rc >"$T/$1.rc"
}

# compare NAME: runs NAME.plain and NAME.pre (without and with cprof)
# printed and exited alike; when not, the difference goes to stderr.
compare() {
  check "$1: same output as without cprof" same "$1.plain" "$1.pre" out
  check "$1: same exit code as without cprof" same "$1.plain" "$1.pre" rc
  if ! same "$1.plain" "$1.pre" out; then
    diff "$T/$1.plain.out" "$T/$1.pre.out" >&2 || true
  fi
}

# start_collect NAME CONFIG [ARGS...]: starts `cprof collect --config CONFIG
# --listen 127.0.0.1:0 ARGS` in the background, its output in $T/NAME.out
# and $T/NAME.err; sets CPID, and W to where it serves. Fails (with its
# stderr shown) when it has not said where in 10 s.
start_collect() {
  local name=$1 config=$2
  shift 2
  : >"$T/$name.err" # read below before the child may have opened it (set -e)
  "$B/cprof" collect --config "$config" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
  CPID=$!
  W=
  for _ in $(seq 1 100); do
    W=$(sed -n 's|^cprof collect: serving http://\([^/]*\)/$|\1|p' "$T/$name.err")
    [ -n "$W" ] && return 0
    sleep 0.1
  done
  cat "$T/$name.err" >&2
  return 1
}

finish() {
  echo "$(basename "$0" .sh): $PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}

# pprof_bytes TOP FUNCTION WANT_BYTES TOLERANCE [flat|cum]: the function's
# bytes in a `pprof -top -unit=B` listing are WANT within TOLERANCE (a
# fraction): heap.sh's and arm64/heap.sh's measure.
pprof_bytes() {
  python3 - "$@" <<'PY'
import re, sys
top, fn, want, tol = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
col = sys.argv[5] if len(sys.argv) > 5 else "flat"
got = 0
for line in open(top):
    f = line.split()
    if len(f) >= 6 and f[5] == fn and f[3].endswith("B"):
        got = float(f[0 if col == "flat" else 3].rstrip("B"))
print("%s %s: %.0f bytes, want %.0f +- %d%%" % (fn, col, got, want, tol * 100))
sys.exit(0 if abs(got - want) <= want * tol else 1)
PY
}
