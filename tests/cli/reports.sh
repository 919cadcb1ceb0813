# cprof's reports against go tool pprof, the outside judge, as top.sh does
# for top: `cprof traces`, `peek RE` and `list RE` print what -traces,
# -peek RE and -list RE print, byte for byte, with the options both take,
# on cprof's own profiles (the demo server's, whose threads are labels) and
# on profiles Go wrote; `cprof diff BASE NEW` prints what -top
# -diff_base=BASE NEW prints; `cprof folded` keeps every sample's value and
# puts the root first; and names that are not plain (thread names with a
# newline, ESC and 0xff, C++ templates, a symbol with '<' '&' and ESC) are
# shown escaped wherever they are shown.
. "$(dirname "$0")/../integration/lib.sh"
. "$CPROF_SOURCE_DIR/tests/cli/make_go_profiles.sh"
CPROF=$B/cprof
export TZ=UTC
# Source files are named in the profiles by absolute paths; pprof and cprof
# both look for them from here too.
cd "$CPROF_SOURCE_DIR"

# pprof_args ARGS...: sets PARGS to pprof's spelling of cprof's options.
pprof_args() {
  local a
  PARGS=()
  for a in "$@"; do
    case $a in -n) PARGS+=(-nodecount) ;; --*) PARGS+=("${a#-}") ;; *) PARGS+=("$a") ;; esac
  done
}

# compare CMD NAME FILE [REGEX] [ARGS...]: cprof CMD ARGS [REGEX] FILE and
# go tool pprof -CMD [REGEX] ARGS FILE (-symbolize=none: the names the
# profile holds) print the same; peek and list take the REGEX. Fails when
# pprof printed nothing, so that something is always compared.
compare() {
  local cmd=$1 name=$2 file=$3 re=()
  shift 3
  if [ "$cmd" = peek ] || [ "$cmd" = list ]; then
    re=("$1")
    shift
  fi
  pprof_args "$@"
  "$CPROF" "$cmd" "$@" "${re[@]}" "$file" >"$T/c.out" 2>"$T/c.err" || true
  go tool pprof -symbolize=none "-$cmd" "${re[@]}" "${PARGS[@]}" "$file" >"$T/p.out" 2>/dev/null || true
  if [ ! -s "$T/p.out" ]; then
    fail "$name: go tool pprof -$cmd printed nothing (so nothing was compared)"
  elif cmp -s "$T/c.out" "$T/p.out"; then
    pass "$name: cprof $cmd prints what go tool pprof -$cmd prints ($(wc -l <"$T/p.out") lines)"
  else
    fail "$name: cprof $cmd and go tool pprof -$cmd differ"
    diff -u "$T/p.out" "$T/c.out" | head -30 >&2 || true
    cat "$T/c.err" >&2 || true
  fi
}

# compare_diff NAME BASE NEW [ARGS...]: cprof diff ARGS BASE NEW against
# go tool pprof -top ARGS -diff_base=BASE NEW.
compare_diff() {
  local name=$1 base=$2 new=$3
  shift 3
  pprof_args "$@"
  "$CPROF" diff "$@" "$base" "$new" >"$T/c.out" 2>"$T/c.err" || true
  go tool pprof -symbolize=none -top "${PARGS[@]}" "-diff_base=$base" "$new" >"$T/p.out" 2>/dev/null || true
  if [ ! -s "$T/p.out" ]; then
    fail "$name: go tool pprof -diff_base printed nothing (so nothing was compared)"
  elif cmp -s "$T/c.out" "$T/p.out"; then
    pass "$name: cprof diff prints what go tool pprof -top -diff_base prints ($(wc -l <"$T/p.out") lines)"
  else
    fail "$name: cprof diff and go tool pprof -top -diff_base differ"
    diff -u "$T/p.out" "$T/c.out" | head -30 >&2 || true
    cat "$T/c.err" >&2 || true
  fi
}

# no_match CMD NAME FILE REGEX: a REGEX nothing matches: pprof and cprof
# both print nothing on stdout, exit 1 and say so in one line.
no_match() {
  local cmd=$1 name=$2 file=$3 re=$4 rc=0 prc=0
  "$CPROF" "$cmd" "$re" "$file" >"$T/c.out" 2>"$T/c.err" || rc=$?
  go tool pprof -symbolize=none "-$cmd" "$re" "$file" >"$T/p.out" 2>"$T/p.err" || prc=$?
  if [ "$rc" = 1 ] && [ "$prc" = 1 ] && [ ! -s "$T/c.out" ] && [ ! -s "$T/p.out" ] &&
    [ "$(wc -l <"$T/c.err")" = 1 ] &&
    grep -qxF "cprof $cmd: no matches found for regexp: $re" "$T/c.err" &&
    grep -qF "no matches found for regexp: $re" "$T/p.err"; then
    pass "$name: no match: nothing on stdout, exit 1, one line, as pprof"
  else
    fail "$name: no match: cprof exit $rc, pprof exit $prc"
    cat "$T/c.out" "$T/c.err" >&2
  fi
}

# raw_total FILE INDEX: the sum of sample type INDEX over every sample of
# FILE, from go tool pprof -raw (the samples after pprof's merge).
raw_total() {
  go tool pprof -symbolize=none -raw "$1" 2>/dev/null | awk -v col=$(($2 + 1)) '
    /^Samples:/ { on = 1; getline; next }
    /^Locations/ { on = 0 }
    on && /^ *-?[0-9]+( +-?[0-9]+)*: / { sub(/:.*/, ""); sum += $col; n++ }
    END { if (n) printf "%d\n", sum }'
}

# folded_sums NAME FILE: for each sample type, the values cprof folded
# prints sum to the profile's total.
folded_sums() {
  local types i=0 want got
  types=$(go tool pprof -raw "$2" 2>/dev/null | awk '/^Samples:/{getline; print; exit}')
  for _ in $types; do
    want=$(raw_total "$2" $i)
    got=$("$CPROF" folded --sample_index=$i "$2" | awk '{ sum += $NF } END { printf "%d\n", sum }')
    if [ -n "$want" ] && [ "$got" = "$want" ]; then
      pass "$1[$i]: cprof folded's values sum to the profile's total ($want)"
    else
      fail "$1[$i]: cprof folded's values sum to $got, go tool pprof -raw's to '$want'"
    fi
    i=$((i + 1))
  done
  [ "$i" -gt 0 ] || fail "$1: no sample types read"
}

# root_first NAME FILE: the first stack go tool pprof -traces prints, read
# backwards and joined with ';', is a line of cprof folded.
root_first() {
  local stack
  stack=$(go tool pprof -symbolize=none -traces "$2" 2>/dev/null | awk '
    /^-----------\+/ { if (n) exit; on = 1; next }
    on && /^             [^ ]/ { sub(/^ +/, ""); f[n++] = $0; next }
    on && /^ *[-0-9.]+[a-zA-Z]*   [^ ]/ { sub(/^ *[^ ]+   /, ""); f[n++] = $0; next }
    END { for (i = n - 1; i >= 0; i--) { sub(/ \(inline\)$/, "", f[i]); printf "%s%s", f[i], i ? ";" : "\n" } }')
  # (Through a file: grep -q leaving early would cut the pipe under cprof,
  # and pipefail would count that as a failure.)
  "$CPROF" folded "$2" >"$T/folded.out" 2>&1 || true
  if [ -n "$stack" ] && [[ $stack == *";"* ]] && grep -qF -- "$stack " "$T/folded.out"; then
    pass "$1: cprof folded has pprof's first trace root first (${stack%%;*};...)"
  else
    fail "$1: cprof folded lacks '$stack' (pprof's first trace, root first)"
  fi
}

# --- cprof's own profiles, from the demo server: two heaps some time
# apart for diff.
start demo -- "$B/examples/demo_server" --seconds 30
sleep 1
for p in heap allocs goroutine block mutex; do
  curl -sf -o "$T/$p.pb.gz" "http://$ADDR/debug/pprof/$p"
done
curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2"
curl -sf -o "$T/heap2.pb.gz" "http://$ADDR/debug/pprof/heap"
stop

for p in heap allocs goroutine block mutex cpu; do
  compare traces "cprof $p" "$T/$p.pb.gz"
done
compare traces "cprof cpu --lines" "$T/cpu.pb.gz" --lines
compare traces "cprof cpu --addresses" "$T/cpu.pb.gz" --addresses
compare traces "cprof cpu --focus --hide" "$T/cpu.pb.gz" --focus 'worker' --hide 'sleep'
compare traces "cprof cpu --tagfocus" "$T/cpu.pb.gz" --tagfocus thread=lock-worker
compare traces "cprof goroutine --tagignore" "$T/goroutine.pb.gz" --tagignore thread=lock
compare traces "cprof heap --sample_index 0 --unit kB" "$T/heap.pb.gz" --sample_index 0 --unit kB

compare peek "cprof cpu" "$T/cpu.pb.gz" 'worker_main'
compare peek "cprof cpu --cum" "$T/cpu.pb.gz" 'lock|fill|malloc' --cum
compare peek "cprof cpu --lines" "$T/cpu.pb.gz" 'hold_lock' --lines
compare peek "cprof cpu --addresses" "$T/cpu.pb.gz" 'hold_lock' --addresses
compare peek "cprof cpu --focus" "$T/cpu.pb.gz" 'worker' --focus 'burn'
compare peek "cprof cpu --hide" "$T/cpu.pb.gz" 'worker' --hide 'contend'
compare peek "cprof cpu --tagfocus" "$T/cpu.pb.gz" '.' --tagfocus thread=burner
compare peek "cprof heap" "$T/heap.pb.gz" 'main|remember'
compare peek "cprof goroutine" "$T/goroutine.pb.gz" 'worker'
no_match peek "cprof cpu" "$T/cpu.pb.gz" 'no_such_function'

compare list "cprof cpu" "$T/cpu.pb.gz" 'hold_lock|worker_main'
compare list "cprof cpu --focus" "$T/cpu.pb.gz" 'worker_main' --focus 'burn'
compare list "cprof cpu --hide" "$T/cpu.pb.gz" 'worker_main' --hide 'contend'
compare list "cprof cpu --tagfocus" "$T/cpu.pb.gz" 'worker_main' --tagfocus thread=lock-worker-1
compare list "cprof heap" "$T/heap.pb.gz" 'allocate_buffers|cache_insert|remember_session'
no_match list "cprof cpu" "$T/cpu.pb.gz" 'no_such_function'

compare_diff "cprof heap, then heap 2 s later" "$T/heap.pb.gz" "$T/heap2.pb.gz"
compare_diff "cprof heap 2 s later, then heap" "$T/heap2.pb.gz" "$T/heap.pb.gz"
compare_diff "cprof heap --sample_index 0" "$T/heap.pb.gz" "$T/heap2.pb.gz" --sample_index 0
compare_diff "cprof heap minus itself" "$T/heap.pb.gz" "$T/heap.pb.gz"
# A profile less itself: the header, the column titles, no row.
"$CPROF" diff "$T/cpu.pb.gz" "$T/cpu.pb.gz" >"$T/self.out" 2>&1 || true
check "diff X X: a table with no rows" \
  bash -c "[ \"\$(tail -1 '$T/self.out')\" = '      flat  flat%   sum%        cum   cum%' ] &&
    grep -Eq '^Showing nodes accounting for 0, 0% of [0-9.]+m?s total' '$T/self.out'"

for p in heap allocs goroutine cpu; do
  folded_sums "cprof $p folded" "$T/$p.pb.gz"
done
root_first "cprof cpu" "$T/cpu.pb.gz"

# --- profiles Go wrote, and a second run's for diff.
go_profiles
for p in cpu heap allocs goroutine block mutex threadcreate; do
  compare traces "go $p" "$GOPROF/$p.pb.gz"
done
compare traces "go cpu --lines" "$GOPROF/cpu.pb.gz" --lines
compare traces "go cpu --addresses" "$GOPROF/cpu.pb.gz" --addresses
compare traces "go heap --tagfocus" "$GOPROF/heap.pb.gz" --tagfocus bytes=1kb:
compare traces "go allocs --focus --hide" "$GOPROF/allocs.pb.gz" --focus 'main\.' --hide 'runtime'
compare peek "go cpu" "$GOPROF/cpu.pb.gz" 'main\.'
compare peek "go cpu --cum --lines" "$GOPROF/cpu.pb.gz" 'main\.cpu' --cum --lines
compare peek "go heap --tagfocus" "$GOPROF/heap.pb.gz" 'main\.' --tagfocus bytes=:1kb
compare peek "go mutex" "$GOPROF/mutex.pb.gz" 'main\.'
no_match peek "go cpu" "$GOPROF/cpu.pb.gz" 'no_such_function'
compare list "go cpu" "$GOPROF/cpu.pb.gz" 'main\.cpu'
compare list "go cpu --focus" "$GOPROF/cpu.pb.gz" 'main\.' --focus 'cpuLight'
compare list "go allocs" "$GOPROF/allocs.pb.gz" 'main\.alloc' --tagfocus bytes=1kb:
compare list "go block" "$GOPROF/block.pb.gz" 'main\.blockOnChannel'

make_go_profiles "$T/go2" || fail "a second run of goprog"
compare_diff "go heap, two runs" "$GOPROF/heap.pb.gz" "$T/go2/heap.pb.gz"
compare_diff "go allocs, two runs, --sample_index 0" "$GOPROF/allocs.pb.gz" "$T/go2/allocs.pb.gz" --sample_index 0
compare_diff "go cpu, two runs" "$GOPROF/cpu.pb.gz" "$T/go2/cpu.pb.gz"
compare_diff "go cpu, two runs, --cum -n 5" "$GOPROF/cpu.pb.gz" "$T/go2/cpu.pb.gz" --cum -n 5
compare_diff "go heap against allocs" "$GOPROF/heap.pb.gz" "$GOPROF/allocs.pb.gz"
compare_diff "go cpu minus itself" "$GOPROF/cpu.pb.gz" "$GOPROF/cpu.pb.gz"

for p in cpu heap allocs goroutine block mutex; do
  folded_sums "go $p folded" "$GOPROF/$p.pb.gz"
done
root_first "go cpu" "$GOPROF/cpu.pb.gz"
root_first "go heap" "$GOPROF/heap.pb.gz"

# --- names that are not plain: tests/cli/names.cpp names its thread
# "<tag>&\"\n" 0xff ESC "'xyz" and burns CPU in a C++ template and in
# names_weird.c's function, whose symbol is "w<tag>&'" 0xff ESC "x".
mkdir "$T/names"
cp tests/cli/names.cpp tests/cli/names_weird.c "$T/names/"
(
  cd "$T/names"
  cc -O1 -fno-omit-frame-pointer -c names_weird.c -o names_weird.o
  c++ -g -O1 -fno-omit-frame-pointer -pthread -o names names.cpp names_weird.o
) || fail "building tests/cli/names.cpp"
start names --ready LD_PRELOAD="$LIB" -- "$T/names/names"
curl -sf -o "$T/ngo.pb.gz" "http://$ADDR/debug/pprof/goroutine"
curl -sf -o "$T/ncpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=1"
stop

# --symbolize=none: the names as the profile holds them (by default, as
# pprof, "w<tag>&'..." looks like a C++ name and loses its "<tag>").
"$CPROF" traces "$T/ngo.pb.gz" >"$T/ngo.traces" 2>&1 || true
"$CPROF" traces --symbolize=none "$T/ncpu.pb.gz" >"$T/ncpu.traces" 2>&1 || true
"$CPROF" top --symbolize=none "$T/ncpu.pb.gz" >"$T/ncpu.top" 2>&1 || true
"$CPROF" top "$T/ncpu.pb.gz" >"$T/ncpu.short" 2>&1 || true
"$CPROF" folded --symbolize=none "$T/ncpu.pb.gz" >"$T/ncpu.folded" 2>&1 || true
thread='    thread:  <tag>&"\n\xff\x1b'"'"'xyz'
weird='w<tag>&'"'"'\xff\x1bx'
check "goroutine traces: the thread's name escaped, on one line" grep -qxF -- "$thread" "$T/ngo.traces"
check "cpu traces: the thread's name escaped, on one line" grep -qxF -- "$thread" "$T/ncpu.traces"
# a frame line: the value or blanks, three spaces, the name, the end.
frame_line() { grep -F -- "   $weird" "$T/ncpu.traces" | grep -q 'x$'; }
check "cpu traces: the symbol escaped" frame_line
check "cpu top: the symbol escaped" grep -qF -- "  $weird" "$T/ncpu.top"
check "cpu top, names shortened as pprof: the symbol escaped" grep -qF -- "  w&'\\xff\\x1bx" "$T/ncpu.short"
check "cpu top: the C++ template as it is" grep -qF -- \
  '  void names::spin<names::Box<std::pair<int, char> > >(names::Box<std::pair<int, char> >&)' "$T/ncpu.top"
check "cpu folded: the symbol escaped, a leaf" grep -qF -- ";$weird " "$T/ncpu.folded"
check "cpu folded: the C++ template as it is" grep -qF -- \
  ';void names::spin<names::Box<std::pair<int, char> > >(names::Box<std::pair<int, char> >&) ' "$T/ncpu.folded"
for f in ngo.traces ncpu.traces ncpu.top ncpu.short ncpu.folded; do
  check "$f: no raw ESC or 0xff, no line that a raw newline began" \
    bash -c "! LC_ALL=C grep -q \$'[\\x1b\\xff]' '$T/$f' && ! grep -q \"^'xyz\" '$T/$f'"
done
"$CPROF" flame --symbolize=none -o "$T/n.html" "$T/ncpu.pb.gz" 2>/dev/null || true
check "flame page: the symbol only escaped (no raw <tag>, ESC or 0xff)" \
  bash -c "! grep -qF '<tag>' '$T/n.html' && ! LC_ALL=C grep -q \$'[\\x1b\\xff]' '$T/n.html'"
check "flame page: ... and it is there, escaped" grep -qF 'w\u003ctag\u003e\u0026' "$T/n.html"
check "flame page: the C++ template, escaped" grep -qF 'names::spin\u003cnames::Box\u003cstd::pair\u003cint, char\u003e \u003e \u003e' "$T/n.html"

# list: with the source, and without it (pprof's " Error:" line).
compare list "names cpu" "$T/ncpu.pb.gz" 'names::spin'
rm "$T/names/names.cpp"
compare list "names cpu, source gone" "$T/ncpu.pb.gz" 'names::spin'
check "... which says so in an Error line" grep -q '^ Error: ' "$T/c.out"
finish
