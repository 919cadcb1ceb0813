# Issue 12, item 6: names in a process that is not dumpable. A program
# started as root drops to uid 65534 and sets PR_SET_DUMPABLE to 0; then
# /proc/self/auxv and /proc/self/mem are root's and unreadable (proc(5)),
# which made libdw's dwfl_linux_proc_report give up before reporting any
# module: every frame came out as "lib+0xoff" in goroutine?debug=2 and
# "[libc.so.6]" in the CPU profile. The program spins in spin_in_qsort ->
# libc's qsort -> compare_ints on one thread and sleeps in nap_in_thread on
# another; both profiles must name them. The sleeping thread's registers are
# in /proc/self/task/TID/syscall, root's too, and nothing else shows them:
# it must be marked as such, not signalled.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

[ "$(id -u)" = 0 ] || skip "the privilege drop needs root"

start dumpable --ready LD_PRELOAD="$LIB" -- "$H/host_dumpable"
check "the program dropped to 65534 and is not dumpable" has "$T/dumpable.out" '^uid 65534, dumpable 0$'

curl -sf -o "$T/dump" "http://$ADDR/debug/pprof/goroutine?debug=2" || fail "fetch goroutine?debug=2"
curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2" || fail "fetch the CPU profile"
stop

# The names are cprof's own: -symbolize=none keeps pprof from naming
# anything itself from the binaries it finds on this machine.
pprof -symbolize=none -top -cum "$T/cpu.pb.gz" >"$T/top" || fail "go tool pprof -top"
pprof -symbolize=none -traces "$T/cpu.pb.gz" >"$T/traces" || fail "go tool pprof -traces"
echo "--- goroutine?debug=2, the spinning thread:"
awk -v RS= '/"host_dumpable" \[running\]/' "$T/dump" | head -8
echo "--- the CPU profile, pprof -top -cum:"
sed -n '1,/flat%/d;1,8p' "$T/top"

# Every stack of the spinning thread holds spin_in_qsort, wherever the
# capture found it, and start_thread's caller in libc under it.
check "dump: the spinning thread is named spin_in_qsort" has "$T/dump" '^spin_in_qsort\('
check "dump: no frame is a bare module offset" bash -c "grep -q '^thread ' '$T/dump' && ! grep -Eq '^0x[0-9a-f]+ \(' '$T/dump'"
check "dump: the sleeping thread is marked: its state cannot be read" \
  has "$T/dump" '^\[thread state unknown: /proc/self/task/TID/syscall unreadable: Permission denied\]'
# Nearly every sample is in spin_in_qsort, most in libc's qsort under it.
cum() { awk -v f="$1" '$6 == f { sub("%", "", $5); print int($5) }' "$T/top" | head -1; }
check "cpu: spin_in_qsort has over 90% cumulative ($(cum spin_in_qsort)%)" \
  bash -c "[ '$(cum spin_in_qsort)' -gt 90 ] 2>/dev/null"
qsort_fn=$(awk '$6 ~ /qsort/ { print $6; exit }' "$T/top")
check "cpu: libc's ${qsort_fn:-qsort} has over 50% cumulative ($(cum "${qsort_fn:-qsort}")%)" \
  bash -c "[ '$(cum "${qsort_fn:-qsort}")' -gt 50 ] 2>/dev/null"
check "cpu: compare_ints is named" has "$T/top" ' compare_ints$'
check "cpu: a stack runs compare_ints <- qsort <- spin_in_qsort" bash -c \
  "awk '/^-+\\+/ { if (s ~ /compare_ints.*qsort.*spin_in_qsort/) ok = 1; s = \"\"; next } { s = s \" \" \$NF } END { exit !ok }' '$T/traces'"
check "cpu: no frame is only a module's name" bash -c "grep -q 'flat%' '$T/top' && ! grep -Eq '\\[(libc\\.so\\.6|host_dumpable)\\]' '$T/top'"
finish
