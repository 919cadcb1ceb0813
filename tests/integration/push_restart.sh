# The push across cprof_stop and cprof_start where libcurl cannot be loaded
# (tests/integration/programs/push_restart.c): each start says why on
# stderr and pushes nothing; the program exits 0. The libraries are hidden
# in a mount namespace of the test's own, each bound over by an empty file.
# Before the fix the second start went on without libcurl and the program
# died of SIGSEGV at its first push.
. "$(dirname "$0")/lib.sh"
P=$B/tests/integration

libs=$(ldconfig -p | awk '/libcurl(-gnutls)?\.so\.4 .*x86-64|libcurl(-gnutls)?\.so\.4 .*AArch64/ { print $NF }' | sort -u)
[ -n "$libs" ] || libs=$(ldconfig -p | awk '/libcurl(-gnutls)?\.so\.4 / { print $NF }' | sort -u)
[ -n "$libs" ] || skip "no libcurl in ldconfig's cache to hide"
: >"$T/empty"
hide='for l in $LIBS; do mount --bind "$EMPTY" "$l" || exit 77; done; exec "$@"'
if unshare -m true 2>/dev/null; then US=(unshare -m); else US=(unshare -rm); fi
"${US[@]}" env LIBS="$libs" EMPTY="$T/empty" sh -c "$hide" sh true 2>/dev/null ||
  skip "cannot bind over libcurl in a mount namespace here"

# Linked with -lcprof, not preloaded: a preloaded library starts at load,
# from the environment, and the program's first cprof_start finds it running.
run restart -- "${US[@]}" env LIBS="$libs" EMPTY="$T/empty" sh -c "$hide" sh "$P/push_restart"
sed 's/^/  stderr: /' "$T/restart.err"
check "the program ran both rounds and exited 0" \
  eval 'rc_is restart 0 && has "$T/restart.out" "^done$"'
check "each start said libcurl could not be loaded, and that nothing will be pushed" \
  [ "$(grep -c '^cprof: CPROF_PUSH_URL: cannot load libcurl.*nothing will be pushed$' "$T/restart.err")" = 2 ]
finish
