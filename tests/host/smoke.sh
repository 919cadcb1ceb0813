# The host-safety harness itself: a program run with and without cprof
# prints the same and exits the same, and a run that hangs is caught.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

run plain -- "$H/host_hello"
run pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- "$H/host_hello"
check "hello: same stdout" same plain pre out
check "hello: same exit code" same plain pre rc
RUN_TIMEOUT=1 run hang -- sleep 5
check "a hang is caught as exit code 124" rc_is hang 124
finish
