# Every system call cprof makes is listed in doc/internals.md ("System
# calls"), so that an operator can write a seccomp allow-list. This runs a
# program that makes almost none, with and without cprof in several
# configurations, under strace, and checks that each call cprof adds is
# listed for that configuration, and that a feature switched off adds
# nothing of its own (no signal handler, no socket, no thread without a
# server).
. "$(dirname "$0")/../integration/lib.sh"
P=$B/tests/host/host_hello
DOC=$CPROF_SOURCE_DIR/doc/internals.md

# calls FILE: the names of the system calls in an strace -f log.
calls() { sed -E 's/^[0-9]+ +//; /^<\.\.\./d; /^\+\+\+/d; /^---/d; s/\(.*//' "$1" | sort -u; }
# listed PHASE...: the calls doc/internals.md lists for those phases (the
# backquoted names in its table row "| PHASE | ... |").
listed() {
  local p
  for p in "$@"; do
    grep -E "^\| $p \|" "$DOC" | grep -oE '`[a-z0-9_]+`' | tr -d '`'
  done | sort -u
}
# traced NAME ENV...: the calls of one run under strace, less those the
# program makes without cprof.
traced() {
  local name=$1
  shift
  env "$@" strace -f -qq -o "$T/$name.strace" -E LD_PRELOAD="$LIB" "$P" >/dev/null 2>&1 || true
  calls "$T/$name.strace" | comm -23 - "$T/plain.calls" >"$T/$name.calls"
}
strace -f -qq -o "$T/plain.strace" "$P" >/dev/null
calls "$T/plain.strace" >"$T/plain.calls"
check "strace saw the program's own calls" grep -qx write "$T/plain.calls"
check "doc/internals.md lists the calls made at load" [ -n "$(listed load)" ]

# only NAME PHASE...: every call cprof added is listed for those phases.
only() {
  local name=$1
  shift
  comm -23 "$T/$name.calls" <(listed "$@") >"$T/$name.unlisted"
  if [ -s "$T/$name.unlisted" ]; then echo "not listed for $*: $(tr '\n' ' ' <"$T/$name.unlisted")" >&2; return 1; fi
}

traced off CPROF_ADDR=0 CPROF_HEAP_RATE=0
check "all off: only the calls listed for load" only off load
check "all off: no signal handler installed" bash -c "! grep -qx rt_sigaction '$T/off.calls'"
check "all off: no thread, no socket" bash -c "! grep -qxE 'clone3?|socket|mincore' '$T/off.calls'"
traced heap CPROF_ADDR=0 CPROF_HEAP_RATE=1
check "heap sampling: only the calls listed for load and heap" only heap load heap
traced server CPROF_ADDR=127.0.0.1:0 CPROF_HEAP_RATE=0
check "server: only the calls listed for load and server" only server load server
traced output CPROF_ADDR=0 CPROF_OUTPUT="$T/o" CPROF_HEAP_RATE=0
check "CPROF_OUTPUT: only the calls listed for load and CPU profile and output" only output load cpu output
finish
