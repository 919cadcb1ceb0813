# Issue 12, item 6: names in a process that is not dumpable. A program
# started as root drops to uid 65534 and sets PR_SET_DUMPABLE to 0; then
# /proc/self/auxv and /proc/self/mem are root's and unreadable (proc(5)),
# which made libdw's dwfl_linux_proc_report give up before reporting any
# module: every frame came out as "lib+0xoff" in goroutine?debug=2 and
# "[libc.so.6]" in the CPU profile. The program spins in spin_in_qsort ->
# libc's qsort -> compare_ints on one thread and sleeps in nap_in_thread on
# another; both profiles must name them. The sleeping thread's registers are
# in /proc/self/task/TID/syscall, root's too, and nothing else shows them:
# it must be marked as such, not signalled. The program runs from the
# build tree, and then from a directory only root may enter, as a daemon in
# /root would: its file can then be opened only through /proc/self/exe.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

[ "$(id -u)" = 0 ] || skip "the privilege drop needs root"

# names CASE PROGRAM: runs the program under cprof, fetches both profiles
# and checks their names; each check's description starts with CASE.
names() {
  local c=$1 prog=$2
  start "$c" --ready LD_PRELOAD="$LIB" -- "$prog"
  check "$c: the program dropped to 65534 and is not dumpable" has "$T/$c.out" '^uid 65534, dumpable 0$'
  curl -sf -o "$T/$c.dump" "http://$ADDR/debug/pprof/goroutine?debug=2" || fail "$c: fetch goroutine?debug=2"
  curl -sf -o "$T/$c.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2" || fail "$c: fetch the CPU profile"
  stop

  # The names are cprof's own: -symbolize=none keeps pprof from naming
  # anything itself from the binaries it finds on this machine.
  local top=$T/$c.top traces=$T/$c.traces spinning=$T/$c.spinning
  pprof -symbolize=none -top -cum "$T/$c.pb.gz" >"$top" || fail "$c: go tool pprof -top"
  pprof -symbolize=none -traces "$T/$c.pb.gz" >"$traces" || fail "$c: go tool pprof -traces"
  # The spinning thread's block of the dump: the program's only thread that runs.
  awk -v RS= '/"host_dumpable" \[running\]/' "$T/$c.dump" >"$spinning"
  echo "--- $c: goroutine?debug=2, the spinning thread:"
  grep -v '^	' "$spinning" | tail -6
  echo "--- $c: the CPU profile, pprof -top -cum:"
  sed -n '/flat%/,$p' "$top" | head -8

  # Every stack of the spinning thread holds spin_in_qsort, wherever the
  # capture found it, and libc's start_thread under it.
  check "$c: dump: the spinning thread runs in spin_in_qsort" has "$spinning" '^spin_in_qsort\('
  if [ "$libc_dbg" ]; then
    check "$c: dump: called from libc's start_thread" has "$spinning" '^start_thread\('
    # A pc in a PLT stub has no symbol to name it, with or without /proc;
    # it can only be the leaf, so the leaf may be an offset.
    check "$c: dump: none of its callers is a bare module offset" \
      bash -c "grep -q '^thread ' '$spinning' && ! sed '1d' '$spinning' | sed '1{/^0x/d}' | grep -Eq '^0x[0-9a-f]+ \('"
  fi
  check "$c: dump: the sleeping thread is marked: its state cannot be read" \
    has "$T/$c.dump" '^\[thread state unknown: /proc/self/task/TID/syscall unreadable: Permission denied\]'
  # Nearly every sample is in spin_in_qsort, most in libc's qsort under it.
  local spin qsort_fn q
  spin=$(cum "$top" spin_in_qsort)
  check "$c: cpu: spin_in_qsort has over 90% cumulative (${spin:-no}%)" [ "${spin:-0}" -gt 90 ]
  qsort_fn=$(awk '$6 ~ /qsort/ && $6 != "spin_in_qsort" { print $6; exit }' "$top")
  q=$(cum "$top" "${qsort_fn:-qsort}")
  check "$c: cpu: libc's ${qsort_fn:-qsort} has over 50% cumulative (${q:-no}%)" [ "${q:-0}" -gt 50 ]
  check "$c: cpu: compare_ints is named" has "$top" ' compare_ints$'
  check "$c: cpu: a stack runs compare_ints <- qsort <- spin_in_qsort" bash -c \
    "awk '/^-+\\+/ { if (s ~ /compare_ints.*qsort.*spin_in_qsort/) ok = 1; s = \"\"; next } { s = s \" \" \$NF } END { exit !ok }' '$traces'"
  # Frames named only by their module: the same PLT stubs, a percent or so
  # (before: all of them, 100%). The listing is a real one: spin_in_qsort
  # is in it, above.
  local bare_libc bare_exe
  bare_libc=$(cum "$top" '[libc.so.6]')
  bare_exe=$(cum "$top" '[host_dumpable]')
  check "$c: cpu: [libc.so.6] under 5% cumulative (${bare_libc:-0}%)" [ "${bare_libc:-0}" -lt 5 ]
  check "$c: cpu: [host_dumpable] under 5% cumulative (${bare_exe:-0}%)" [ "${bare_exe:-0}" -lt 5 ]
}

# libc's static functions (start_thread, msort_with_tmp) are named from
# its separate debug file, Debian's libc6-dbg (scripts/install-deps.sh test).
libc_dbg=
if dpkg -s libc6-dbg >/dev/null 2>&1; then
  libc_dbg=1
else
  echo "libc6-dbg is not installed: libc's static functions are not checked"
fi

# cum TOP FUNCTION: the function's cumulative percentage in pprof -top -cum, as an integer.
cum() { awk -v f="$2" '$6 == f { sub("%", "", $5); print int($5); exit }' "$1"; }

names build "$H/host_dumpable"
# $T is root's, mode 0700: uid 65534 cannot walk to the file.
mkdir -m 700 "$T/root_only"
cp "$H/host_dumpable" "$T/root_only/"
names root_only "$T/root_only/host_dumpable"
finish
