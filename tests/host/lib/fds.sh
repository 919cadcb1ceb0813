# Helpers for the descriptor tests (../closed_fds.sh, ../fd_limits.sh): programs
# started in the background and finished on cue, with or without cprof.
# Source it after lib.sh.

# bg NAME [ENV=VAL...] -- COMMAND...: starts a program in the background,
# stdin from /dev/null as run does, and waits for "ready" on its stdout;
# $PID is the program's. With cprof on port 0, $ADDR is where it serves.
bg() {
  local name=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  : >"$T/$name.out"
  : >"$T/$name.err"
  env "${envs[@]}" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null &
  PID=$!
  local gone=0
  for _ in $(seq 1 200); do
    if has "$T/$name.out" '^ready$'; then
      ADDR=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/$name.err" | head -1)
      return 0
    fi
    # A program told it is done before it starts may print "ready" and end
    # between the look above and this one: look once more after it ended.
    [ $gone = 1 ] && break
    kill -0 "$PID" 2>/dev/null || gone=1
    [ $gone = 1 ] || sleep 0.05
  done
  echo "$name did not get ready:" >&2
  cat "$T/$name.out" "$T/$name.err" >&2
  return 1
}

# done_with NAME: lets the program finish (its $DONE file) and keeps its
# exit code in $T/NAME.rc.
done_with() {
  touch "$T/$1.done"
  local rc=0
  wait "$PID" || rc=$?
  echo $rc >"$T/$1.rc"
}

# code URL: the HTTP status of a GET (000 when nothing answers); the body
# goes to $T/body.
code() { curl -s -m 20 -o "$T/body" -w '%{http_code}' "$1" || true; }

# cpu_ticks PID: user + system time of a process so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

