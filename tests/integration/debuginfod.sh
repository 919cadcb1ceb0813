# Issue 12, item 7: names for stripped programs. A program and a library of
# its own (programs/stripped_main.c, stripped_lib.c) are stripped as Debian
# ships them: no symbol table, no DWARF, no debug link. Their debug files
# (objcopy --only-keep-debug) are found through a debug link beside them,
# through /usr/lib/debug/.build-id, or fetched from a local debuginfod
# server when DEBUGINFOD_URLS is set; the server's copies went through dwz,
# as Debian's -dbgsym files do, so that what the two share is in a third
# file, which is fetched too. The program's main thread spins in main ->
# main_loop -> stripped_lib_run -> lib_spin -> shared_spin (inlined), where
# main_loop and lib_spin are static: only debug information names them, and
# shared_spin's name is in the shared file. Each case reads the goroutine
# profile with go tool pprof -top -lines (-symbolize=none: what cprof
# served), whose header shows the profile's comments.
. "$(dirname "$0")/lib.sh"
P=$B/tests/integration
S=$CPROF_SOURCE_DIR/tests/integration/programs

command -v debuginfod >/dev/null || skip "no debuginfod server (Debian: debuginfod)"
ldconfig -p | grep 'libdebuginfod\.so\.1 ' >/dev/null || skip "no libdebuginfod.so.1 (Debian: libdebuginfod1)"

mkdir -p "$T/bin" "$T/dbg" "$T/linked" "$T/root/.build-id"
for f in stripped_main libstripped_lib.so; do
  objcopy --only-keep-debug "$P/$f" "$T/dbg/$f.debug"
  objcopy --strip-all --remove-section=.gnu_debuglink "$P/$f" "$T/bin/$f"
  # The same, with a debug link to a debug file beside it.
  cp "$T/dbg/$f.debug" "$T/linked/"
  objcopy --strip-all --remove-section=.gnu_debuglink "$P/$f" "$T/linked/$f"
  objcopy --add-gnu-debuglink="$T/linked/$f.debug" "$T/linked/$f"
  # The same debug file where a -dbgsym package puts it.
  id=$(readelf -n "$P/$f" | sed -n 's/.*Build ID: //p')
  mkdir -p "$T/root/.build-id/${id:0:2}"
  cp "$T/dbg/$f.debug" "$T/root/.build-id/${id:0:2}/${id:2}.debug"
done
MAIN_ID=$(readelf -n "$T/bin/stripped_main" | sed -n 's/.*Build ID: //p')
LIB_ID=$(readelf -n "$T/bin/libstripped_lib.so" | sed -n 's/.*Build ID: //p')
# What the server serves: the debug files through dwz, as Debian's.
mkdir -p "$T/served"
cp "$T/dbg/"*.debug "$T/served/"
ALT_ID=
if command -v dwz >/dev/null; then
  dwz -q -m "$T/served/common.debug" -M /usr/lib/debug/.dwz/x86_64-linux-gnu/cprof-test.debug \
    "$T/served/stripped_main.debug" "$T/served/libstripped_lib.so.debug" || true
  ALT_ID=$(readelf -n "$T/served/common.debug" 2>/dev/null | sed -n 's/.*Build ID: //p')
  check "dwz put what the two share in a file of its own" \
    bash -c "[ -n '$ALT_ID' ] && readelf -S '$T/served/libstripped_lib.so.debug' | grep -q gnu_debugaltlink"
else
  echo "note: no dwz; the served debug files are whole"
fi
check "the stripped copies have build IDs and no symbol table" \
  bash -c "[ -n '$MAIN_ID' ] && [ -n '$LIB_ID' ] && ! readelf -S '$T/bin/stripped_main' | grep -q symtab"

# The lines the frames must name: the calls, and the spinning loop.
MAIN_CALL=$(grep -n "the program's call" "$S/stripped_main.c" | cut -d: -f1)
LIB_CALL=$(grep -n "the library's call" "$S/stripped_lib.c" | cut -d: -f1)
INLINED_CALL=$(grep -n "the inlined call" "$S/stripped_lib.c" | cut -d: -f1)
SPIN=$(grep -n "the spinning line" "$S/stripped_shared.h" | cut -d: -f1)

# grab NAME: the goroutine profile of $ADDR into $T/NAME.pb.gz, the time it
# took in ms into $T/NAME.ms, and its report (-top -lines) into $T/NAME.top.
grab() {
  local s e
  s=$(date +%s%N)
  curl -sS -m 60 -o "$T/$1.pb.gz" "http://$ADDR/debug/pprof/goroutine"
  e=$(date +%s%N)
  echo $(((e - s) / 1000000)) >"$T/$1.ms"
  pprof -symbolize=none -top -lines "$T/$1.pb.gz" >"$T/$1.top" || true
}
# named NAME: the report names every frame of the spinning stack, with its file and line.
named() {
  has "$T/$1.top" " shared_spin .*stripped_shared\.h:($((SPIN - 1))|$SPIN) \(inline\)\$" &&
    has "$T/$1.top" " lib_spin .*stripped_lib\.c:$INLINED_CALL\$" &&
    has "$T/$1.top" " stripped_lib_run .*stripped_lib\.c:$LIB_CALL\$" &&
    has "$T/$1.top" " main_loop .*stripped_main\.c:$MAIN_CALL\$"
}
# unnamed NAME: neither static function has a name.
unnamed() { ! has "$T/$1.top" " (shared_spin|lib_spin|main_loop) "; }
# says NAME MODULE TEXT: the report's header has the comment on MODULE.
says() { has "$T/$1.top" "^no debug symbols for $T/bin/$2 \(build ID [0-9a-f]+\): $3"; }
show() { echo "--- $1:"; sed -n '1,12p' "$T/$1.top"; }

# --- 1. Without DEBUGINFOD_URLS: no names, a comment per module saying
# what would give them, and libdebuginfod never loaded.
start plain LD_PRELOAD="$LIB" -- "$T/bin/stripped_main"
grab plain
show plain
check "without debug files: no names" unnamed plain
check "the profile says the program has no symbols and what would give them" \
  says plain stripped_main "install its -dbgsym package \(for /usr/lib/debug/\.build-id/${MAIN_ID:0:2}/${MAIN_ID:2}\.debug\), or set DEBUGINFOD_URLS"
check "... and the library" says plain libstripped_lib.so "install its -dbgsym package"
check "without DEBUGINFOD_URLS libdebuginfod is not loaded" \
  bash -c "! grep -q libdebuginfod /proc/$PID/maps"
stop

# --- 2. A debug link to a file beside each (cprof's own search).
start linked LD_PRELOAD="$LIB" -- "$T/linked/stripped_main"
grab linked
check "with debug links: names, files and lines in the first profile" named linked
check "... and no comment" bash -c "! grep -q '^no debug symbols for $T/linked' '$T/linked.top'"
stop

# --- 3. /usr/lib/debug/.build-id/xx/yyyy.debug, where -dbgsym packages put
# them: our tree mounted there, in a mount namespace of the program's own.
if unshare -m true 2>/dev/null; then US=(unshare -m); else US=(unshare -rm); fi
if "${US[@]}" sh -c 'mount --bind "$1" /usr/lib/debug' sh "$T/root" 2>/dev/null; then
  start buildid -- "${US[@]}" sh -c 'mount --bind "$1" /usr/lib/debug && exec env LD_PRELOAD="$2" "$3"' \
    sh "$T/root" "$LIB" "$T/bin/stripped_main"
  grab buildid
  check "with /usr/lib/debug/.build-id: names, files and lines in the first profile" named buildid
  stop
else
  echo "note: no mount namespace here; the /usr/lib/debug/.build-id case is not run"
fi

# --- 4. A debuginfod server with the debug files.
DB_PID=
for _ in 1 2 3; do
  DB_PORT=$(free_port)
  debuginfod -F "$T/served" -p "$DB_PORT" -d "$T/debuginfod.sqlite" -t 0 -g 0 -c 1 \
    >"$T/debuginfod.log" 2>&1 &
  DB_PID=$!
  for _ in $(seq 1 100); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DB_PORT/buildid/$LIB_ID/debuginfo")" = 200 ] &&
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DB_PORT/buildid/$MAIN_ID/debuginfo")" = 200 ] &&
      [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$DB_PORT/buildid/${ALT_ID:-$MAIN_ID}/debuginfo")" = 200 ]; then
      break 2
    fi
    kill -0 "$DB_PID" 2>/dev/null || break
    sleep 0.1
  done
  stop "$DB_PID"
  DB_PID=
done
[ -n "$DB_PID" ] || { cat "$T/debuginfod.log"; skip "the debuginfod server did not start"; }

start up LD_PRELOAD="$LIB" DEBUGINFOD_URLS="http://127.0.0.1:$DB_PORT" \
  DEBUGINFOD_CACHE_PATH="$T/cache" -- "$T/bin/stripped_main"
grab up
show up
check "with debuginfod: the first profile comes without the names" unnamed up
check "... and says they are being fetched" says up stripped_main "asking debuginfod"
first=$(date +%s%N)
for i in $(seq 1 60); do
  grab up_later
  named up_later && break
  sleep 0.25
done
latency=$((($(date +%s%N) - first) / 1000000))
show up_later
echo "names appeared ${latency} ms after the first profile (profiles took $(cat "$T/up.ms") ms, then $(cat "$T/up_later.ms") ms)"
check "with debuginfod: a later profile has names, files and lines" named up_later
check "... and no comment on the program or its library" \
  bash -c "! grep -q '^no debug symbols for $T/bin/.*stripped' '$T/up_later.top'"
check "the files are in DEBUGINFOD_CACHE_PATH" \
  test -s "$T/cache/$MAIN_ID/debuginfo" -a -s "$T/cache/$LIB_ID/debuginfo"
[ -z "$ALT_ID" ] || check "... the shared one too" test -s "$T/cache/$ALT_ID/debuginfo"
check "nothing on stderr but the serving line" bash -c "[ \$(grep -vc '^cprof: serving' '$T/up.err') = 0 ]"
stop

# --- 5. The server gone: a new process finds the files in the cache, in
# its first profile.
stop "$DB_PID"
start cached LD_PRELOAD="$LIB" DEBUGINFOD_URLS="http://127.0.0.1:$DB_PORT" \
  DEBUGINFOD_CACHE_PATH="$T/cache" -- "$T/bin/stripped_main"
grab cached
check "the server gone, the cache gives names in the first profile" named cached
stop

# --- 6. A server that accepts and never answers: profiles come at once
# (the fetch's limit is 30 s), say which modules have no symbols, and the
# program exits as it would while a fetch hangs. The program ends when told
# on its standard input (a FIFO), after both profiles, however long a
# loaded machine makes them take.
SILENT_PORT=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); time.sleep(300)' "$SILENT_PORT" &
SILENT_PID=$!
sleep 0.3
mkfifo "$T/silent.in"
exec 3<>"$T/silent.in" # held open, so that the program's read waits
# (The shell that redirects is not preloaded: its own server would be the
# one start finds.)
start silent DEBUGINFOD_URLS="http://127.0.0.1:$SILENT_PORT" DEBUGINFOD_CACHE_PATH="$T/cache_silent" \
  -- bash -c 'LD_PRELOAD=$2 exec "$0" - <"$1"' "$T/bin/stripped_main" "$T/silent.in" "$LIB"
grab silent
sleep 0.5
grab silent2
show silent2
echo "with a server that never answers, profiles took $(cat "$T/silent.ms") ms and $(cat "$T/silent2.ms") ms"
check "a silent server: the profile comes at once (under 10 s)" test "$(cat "$T/silent.ms")" -lt 10000
check "... and the next, while the fetch hangs" test "$(cat "$T/silent2.ms")" -lt 10000
check "... and says which modules have no symbols" says silent2 stripped_main "asking debuginfod"
check "... the library too" says silent2 libstripped_lib.so "asking debuginfod"
end_sent=$(date +%s%N)
echo >&3
await silent
exec 3>&-
ran=$((($(date +%s%N) - end_sent) / 1000000))
echo "told to end, the program exited after $ran ms, a fetch hanging"
check "... the program exits 0" rc_is silent 0
check "... within 5 s of its end, though the fetch hangs (its limit: 30 s)" test "$ran" -lt 5000
check "... and prints what it prints without cprof" has "$T/silent.out" '^ready$'

# --- 7. The time limit (DEBUGINFOD_MAXTIME): the fetch ends, and the
# profile says so.
start limit LD_PRELOAD="$LIB" DEBUGINFOD_URLS="http://127.0.0.1:$SILENT_PORT" DEBUGINFOD_MAXTIME=2 \
  DEBUGINFOD_CACHE_PATH="$T/cache_limit" -- "$T/bin/stripped_main"
for i in $(seq 1 60); do
  grab limit
  says limit stripped_main "debuginfod did not deliver" &&
    says limit libstripped_lib.so "debuginfod did not deliver" && break
  sleep 0.5
done
show limit
check "DEBUGINFOD_MAXTIME=2: the fetches end, and the profile says why" \
  says limit stripped_main "debuginfod did not deliver its debug file within 2 s \(DEBUGINFOD_MAXTIME\)"
check "... and no record of a miss is left in the cache" \
  bash -c "! ls '$T/cache_limit/$MAIN_ID/debuginfo' 2>/dev/null"
stop
stop "$SILENT_PID"
finish
