# cprof top against go tool pprof -top, the outside judge: the same header
# lines and the same rows, byte for byte, on cprof's own profiles (every
# profile the demo server serves) and on profiles Go's runtime/pprof wrote,
# for every sample type of each, and with the options both take (-n, --cum,
# --unit, --lines, --focus). Also: several SOURCEs merged, standard input,
# and the errors of bad arguments.
. "$(dirname "$0")/../integration/lib.sh"
. "$CPROF_SOURCE_DIR/tests/cli/make_go_profiles.sh"
CPROF=$B/cprof
export TZ=UTC

# compare NAME FILE [ARGS...]: cprof top ARGS FILE and go tool pprof -top
# ARGS FILE (-symbolize=none: the names the profile holds) print the same;
# the difference goes to stderr when not.
compare() {
  local name=$1 file=$2
  shift 2
  local a pargs=()
  for a in "$@"; do # pprof's spelling of the same options
    case $a in -n) pargs+=(-nodecount) ;; --*) pargs+=("${a#-}") ;; *) pargs+=("$a") ;; esac
  done
  "$CPROF" top "$@" "$file" >"$T/$name.cprof" 2>"$T/$name.cprof.err" || true
  go tool pprof -symbolize=none -top "${pargs[@]}" "$file" >"$T/$name.pprof" 2>/dev/null || true
  if [ ! -s "$T/$name.pprof" ]; then
    fail "$name: go tool pprof printed nothing (so nothing was compared)"
  elif cmp -s "$T/$name.cprof" "$T/$name.pprof"; then
    pass "$name: cprof top prints what go tool pprof -top prints ($(wc -l <"$T/$name.pprof") lines)"
  else
    fail "$name: cprof top and go tool pprof -top differ"
    diff -u "$T/$name.pprof" "$T/$name.cprof" | head -30 >&2 || true
    cat "$T/$name.cprof.err" >&2
  fi
}

# every_type NAME FILE: compare for each of the profile's sample types.
every_type() {
  local types i=0
  types=$(go tool pprof -raw "$2" 2>/dev/null | awk '/^Samples:/{getline; print; exit}')
  for ty in $types; do
    compare "$1[$i]" "$2" --sample_index=$i
    i=$((i + 1))
  done
  [ "$i" -gt 0 ] || fail "$1: no sample types read"
}

# --- cprof's own profiles, from the demo server.
start demo -- "$B/examples/demo_server" --seconds 30
sleep 1
for p in heap allocs goroutine threadcreate block mutex; do
  curl -sf -o "$T/$p.pb.gz" "http://$ADDR/debug/pprof/$p"
done
curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2"
stop
for p in heap allocs goroutine threadcreate block mutex cpu; do
  every_type "cprof $p" "$T/$p.pb.gz"
done
compare "cprof cpu -n 3" "$T/cpu.pb.gz" -n 3
compare "cprof cpu --cum" "$T/cpu.pb.gz" --cum
compare "cprof cpu --lines" "$T/cpu.pb.gz" --lines
compare "cprof heap --unit kB" "$T/heap.pb.gz" --unit kB
compare "cprof cpu --focus" "$T/cpu.pb.gz" --focus 'hold_lock|fill'
compare "cprof heap --mean" "$T/heap.pb.gz" --mean
compare "cprof block --mean" "$T/block.pb.gz" --mean --sample_index=0
compare "cprof cpu --tagroot thread" "$T/cpu.pb.gz" --tagroot thread
compare "cprof goroutine --tagleaf thread,nosuch" "$T/goroutine.pb.gz" --tagleaf thread,nosuch
compare "cprof cpu --tagroot thread --tagleaf thread --focus worker" "$T/cpu.pb.gz" \
  --tagroot thread --tagleaf thread --focus worker

# --- profiles Go wrote.
go_profiles
for p in cpu heap allocs goroutine block mutex threadcreate; do
  every_type "go $p" "$GOPROF/$p.pb.gz"
done
compare "go cpu --lines" "$GOPROF/cpu.pb.gz" --lines
compare "go cpu --addresses" "$GOPROF/cpu.pb.gz" --addresses
compare "go heap --cum -n 5" "$GOPROF/heap.pb.gz" --cum -n 5
compare "go heap --tagroot bytes (numeric labels)" "$GOPROF/heap.pb.gz" --tagroot bytes
compare "go heap --tagroot bytes --unit kB" "$GOPROF/heap.pb.gz" --tagroot bytes --unit kB

# --- generated profiles (bench/cli/gen_profile) whose C++ names are the
# producer's (name = system_name): pprof shortens them by default, and so
# must cprof; with and without that.
"$B/tests/integration/gen_profile" --shape deep --size 2 -o "$T/deep.pb.gz" >/dev/null
"$B/tests/integration/gen_profile" --shape cpu --size 2 --seed 7 -o "$T/gcpu.pb.gz" >/dev/null
for shape in deep gcpu; do
  for args in "" "--lines" "--cum" "--sample_index=0" "--symbolize=demangle=templates" "--symbolize=none"; do
    # shellcheck disable=SC2086 # args are words
    "$CPROF" top $args "$T/$shape.pb.gz" >"$T/g.cprof" 2>&1 || true
    # shellcheck disable=SC2086
    go tool pprof -top ${args/#--/-} "$T/$shape.pb.gz" >"$T/g.pprof" 2>/dev/null || true
    if [ -s "$T/g.pprof" ] && cmp -s "$T/g.cprof" "$T/g.pprof"; then
      pass "generated $shape $args: the same as go tool pprof -top (names shortened as pprof's)"
    else
      fail "generated $shape $args: cprof top and go tool pprof -top differ"
      diff -u "$T/g.pprof" "$T/g.cprof" | head -20 >&2
    fi
  done
done

# --- several sources, standard input.
"$CPROF" top "$T/heap.pb.gz" "$T/heap.pb.gz" >"$T/twice.out" 2>&1
go tool pprof -symbolize=none -top "$T/heap.pb.gz" "$T/heap.pb.gz" >"$T/twice.pprof" 2>/dev/null
check "two sources are merged as go tool pprof merges them" cmp -s "$T/twice.out" "$T/twice.pprof"
"$CPROF" top - <"$T/heap.pb.gz" >"$T/stdin.out" 2>&1
"$CPROF" top "$T/heap.pb.gz" >"$T/file.out" 2>&1
check "- reads standard input" cmp -s "$T/stdin.out" "$T/file.out"

# --- bad arguments: one line, exit 1 or 2.
run badidx -- "$CPROF" top --sample-index nosuch "$T/heap.pb.gz"
check "an unknown sample type: exit 1" rc_is badidx 1
check "... and one line naming the types" \
  bash -c "[ \$(wc -l <'$T/badidx.err') = 1 ] && grep -q 'must be one of: \[alloc_objects alloc_space inuse_objects inuse_space\]' '$T/badidx.err'"
head -c 100 "$T/heap.pb.gz" >"$T/cut.pb.gz"
run cut -- "$CPROF" top "$T/cut.pb.gz"
check "a truncated profile: exit 1 and one line" \
  bash -c "rc=\$(cat '$T/cut.rc'); [ \$rc = 1 ] && [ \$(wc -l <'$T/cut.err') = 1 ]"
run nosrc -- "$CPROF" top
check "no SOURCE: a usage error (2)" rc_is nosrc 2
run badopt -- "$CPROF" top --frobnicate "$T/heap.pb.gz"
check "an unknown option: a usage error (2)" rc_is badopt 2
run help -- "$CPROF" top --help
check "--help: usage on stdout, exit 0" bash -c "[ \$(cat '$T/help.rc') = 0 ] && grep -q '^usage: cprof top' '$T/help.out'"
finish
