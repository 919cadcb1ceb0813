# cprof run: PROGRAM runs with libcprof preloaded and the flags in cprof's
# variables; cprof ends as PROGRAM ended (exit status, or the same signal,
# so the shell sees 143 for SIGTERM), passing on the signals sent to it;
# the endpoints answer at --addr while PROGRAM runs, and the address is
# said once; a static or setuid program is refused with one line, a missing
# program is 127 and one that cannot be executed 126, as in a shell.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

C=$B/cprof
P=$B/tests/integration
# crun NAME ARGS...: runs cprof run, keeping $T/NAME.{out,err,rc}.
crun() {
  local name=$1
  shift
  run "$name" -- "$C" run "$@"
}
# gone PID: waits at most 20 s for a background process to end.
gone() { timeout 20 tail --pid="$1" -s 0.1 -f /dev/null; }
# started PID COMM: waits until PID has a child running COMM.
started() {
  for _ in $(seq 1 200); do
    [ "$(ps -o comm= --ppid "$1" 2>/dev/null)" = "$2" ] && return 0
    sleep 0.05
  done
  return 1
}

# one_line NAME REGEX: the run's stderr is one line, matching REGEX.
one_line() { [ "$(wc -l <"$T/$1.err")" = 1 ] && has "$T/$1.err" "$2"; }

# Exit statuses, as they are.
for code in 0 3 42; do
  crun exit$code --addr 0 -- sh -c "exit $code"
  check "exit $code passes through" rc_is exit$code $code
done
# A child killed by a signal: cprof dies of the same one.
crun term --addr 0 -- sh -c 'kill -TERM $$'
check "killed by SIGTERM: the shell sees 143" rc_is term 143
crun kill --addr 0 -- sh -c 'kill -KILL $$'
check "killed by SIGKILL: the shell sees 137" rc_is kill 137
# A shell shows exit(143) and death by SIGTERM alike; waitpid does not.
check "killed by SIGTERM: cprof died of SIGTERM, not exit(143)" python3 -c '
import subprocess, sys
rc = subprocess.call([sys.argv[1], "run", "--addr", "0", "--", "sh", "-c", "kill -TERM $$"])
sys.exit(0 if rc == -15 else 1)' "$C"

# Signals sent to cprof go to the program, and cprof ends as it did.
for sig in TERM HUP; do
  "$C" run --addr 0 -- sleep 60 2>"$T/fwd$sig.err" &
  pid=$!
  check "SIG$sig: the program started" started $pid sleep
  kill -$sig $pid
  check "SIG$sig: cprof ended" gone $pid
  rc=0
  wait $pid || rc=$?
  check "SIG$sig: forwarded, and cprof died of it ($rc)" [ $rc = $((128 + $(kill -l $sig))) ]
done

# The endpoints while the program runs, at the address given, said once.
port=$(free_port)
"$C" run --addr "127.0.0.1:$port" -- "$P/stacks_plain" >"$T/serve.out" 2>"$T/serve.err" &
pid=$!
up=1
for _ in $(seq 1 200); do
  [ "$(http "http://127.0.0.1:$port/debug/pprof/")" = 200 ] && { up=0; break; }
  sleep 0.05
done
check "--addr: the index answers there" [ $up = 0 ]
check "--addr: the index lists heap" has "$T/body" heap
check "--addr: a profile from the program" [ "$(http "http://127.0.0.1:$port/debug/pprof/goroutine?debug=1")" = 200 ]
check "--addr: its threads are in it" has "$T/body" spin_inner
check "--addr: cprof says where, once" \
  [ "$(grep -c "http://127.0.0.1:$port/debug/pprof/" "$T/serve.err")" = 1 ]
kill -TERM $pid
gone $pid || true
wait $pid 2>/dev/null || true
# Port 0: the library says which port it got; cprof adds nothing.
crun any --addr 127.0.0.1:0 -- true
check "port 0: the library's line" has "$T/any.err" '^cprof: serving http://127\.0\.0\.1:[0-9]+/debug/pprof/$'
check "port 0: only that line names the endpoints" [ "$(grep -c /debug/pprof/ "$T/any.err")" = 1 ]
crun off --addr 0 -- true
check "--addr 0: nothing said of endpoints" bash -c "! grep -q /debug/pprof/ '$T/off.err'"

# The flags reach the program as cprof's variables; LD_PRELOAD is added to.
mkdir "$T/cwd"
(cd "$T/cwd" && "$C" run --addr 0 --heap-rate 1234 --cpu-rate 50 --block-rate 7 \
  --mutex-fraction 3 --output out --env CPROF_PREFIX=/x --env PLAIN=a=b -- \
  sh -c 'cd / && env' >"$T/env.out" 2>"$T/env.err")
for v in CPROF_ADDR=0 CPROF_HEAP_RATE=1234 CPROF_CPU_HZ=50 CPROF_BLOCK_RATE=7 \
  CPROF_MUTEX_FRACTION=3 "CPROF_OUTPUT=$T/cwd/out" CPROF_PREFIX=/x PLAIN=a=b; do
  check "the program sees $v" has "$T/env.out" "^$v\$"
done
check "LD_PRELOAD names the library" has "$T/env.out" "^LD_PRELOAD=.*/libcprof\.so"
# (Not a shell: dash leaves with _exit, which writes no profiles.)
(cd "$T/cwd" && "$C" run --addr 0 --output out2 -- python3 -c 'import os; os.chdir("/")' 2>"$T/out2.err")
check "--output DIR, relative: the profiles are written there at exit, though the program moved" \
  [ -s "$T/cwd/out2/heap.pb.gz" ]
libm=$(realpath "$(gcc -print-file-name=libm.so.6)")
LD_PRELOAD=$libm "$C" run --addr 0 -- sh -c 'echo "$LD_PRELOAD"' >"$T/pre.out" 2>/dev/null
check "an existing LD_PRELOAD is kept, the library after it" has "$T/pre.out" "^$libm /.*libcprof\\.so"
LD_PRELOAD=$(realpath "$LIB") CPROF_LIB=$LIB "$C" run --addr 0 -- sh -c 'echo "$LD_PRELOAD"' >"$T/pre2.out" 2>/dev/null
check "the library is not preloaded twice" [ "$(wc -w <"$T/pre2.out")" = 1 ]

# Programs preloading cannot reach, and programs that are not there.
printf 'int main(void) { return 0; }\n' >"$T/static.c"
if gcc -static -o "$T/static" "$T/static.c" 2>/dev/null; then
  crun static -- "$T/static"
  check "a static program: exit 1" rc_is static 1
  check "a static program: one line saying why" \
    one_line static '^cprof run: .*statically linked: .*dynamic loader'
else
  fail "gcc -static failed: libc6-dev's libc.a is needed"
fi
if [ "$(id -u)" = 0 ]; then
  cp "$(type -P true)" "$T/suid"
  chown nobody "$T/suid"
  chmod 4755 "$T/suid"
  crun suid -- "$T/suid"
  check "a setuid program: exit 1" rc_is suid 1
  check "a setuid program: one line saying why" one_line suid '^cprof run: .*setuid: .*LD_PRELOAD'
else
  echo "not root: the setuid case is not tried"
fi
crun missing -- no-such-program-here
check "a missing program: 127" rc_is missing 127
check "a missing program: command not found" has "$T/missing.err" '^cprof run: no-such-program-here: command not found$'
crun missingpath -- "$T/nothing"
check "a missing path: 127" rc_is missingpath 127
printf '#!/bin/sh\n' >"$T/noexec"
crun noexec -- "$T/noexec"
check "not executable: 126" rc_is noexec 126
crun dir -- "$T"
check "a directory: 126" rc_is dir 126
crun noprog --addr 0
check "no program: a usage error" rc_is noprog 2
CPROF_LIB=$T/nothing.so "$C" run -- true 2>"$T/nolib.err" && fail "CPROF_LIB naming nothing ran"
check "CPROF_LIB naming nothing: one line" has "$T/nolib.err" '^cprof run: cannot find libcprof'
crun help --help
check "--help: exit 0" rc_is help 0
check "--help: names the variables" has "$T/help.out" CPROF_HEAP_RATE

finish
