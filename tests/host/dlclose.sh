# Issue 11, defect 12: no read of cprof's in a signal handler may fault. A
# program loads and closes libexpat over and over, busy in CPU inside it
# and then with an address of expat's code left at the stack pointer of
# code without unwind tables; under a 1000 Hz whole-run profile with
# either unwinder it must print what it prints without cprof. (The
# frame-pointer walker read the code before that address against a maps
# snapshot from before the dlclose, the DWARF walker against a cached
# rule: both died with SIGSEGV.)
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

# Any library cprof does not load itself would do; libexpat1 is in Debian's
# base system.
ldconfig -p | grep 'libexpat\.so\.1 ' >/dev/null || skip "libexpat.so.1 is not installed"

run plain -- "$H/host_dlclose_loop"
check "runs without cprof" rc_is plain 0
for how in fp dwarf; do
  mkdir -p "$T/out_$how"
  run "$how" LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out_$how" CPROF_CPU_HZ=1000 \
    CPROF_UNWIND=$how -- "$H/host_dlclose_loop"
  echo "$how: exit code $(cat "$T/$how.rc") (without cprof $(cat "$T/plain.rc"))"
  check "$how: same exit code" same plain "$how" rc
  check "$how: same output" same plain "$how" out
  check "$how: the profile reads" bash -c "go tool pprof -raw '$T/out_$how/cpu.pb.gz' 2>/dev/null | grep -q '^Samples:'"
done
finish
