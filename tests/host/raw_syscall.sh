# syscall() is interposed (src/interpose/raw_syscall.c) for the credential
# and namespace calls; every other number must pass through as with
# glibc's alone: six arguments, the result, errno.
. "$(dirname "$0")/../integration/lib.sh"
P=$B/tests/host/host_raw_syscall
run plain -- "$P"
check "without cprof: every check holds" rc_is plain 0
run pre LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 -- "$P"
check "under cprof: every check holds, the same lines" eval "rc_is pre 0 && same plain pre out"
check "cprof's syscall() is the one called" bash -c "nm -D --defined-only '$LIB' | grep -qw syscall"
finish
