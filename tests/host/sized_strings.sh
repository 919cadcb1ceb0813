# A program that sizes its strings by malloc_usable_size, as redis does
# (host_sized_strings: 200,000 strings of 1,006 bytes, shrunk with realloc
# when they show more than a tenth spare, one in four then grown with
# realloc), has its heap read right at the default sampling rate, under
# glibc, jemalloc and tcmalloc (preloaded after cprof, as doc/running.md
# prescribes; tcmalloc when libtcmalloc-minimal4 is installed).
#
# Before, a sampled block showed the usable size of a larger size class
# (its header's bytes pushed it there), so under jemalloc and tcmalloc the
# sampled strings, and only they, were shrunk, and the realloc moved each
# out of its sample: the profile held next to nothing.
#
# The profile estimates the truth T (the program counts the bytes it asked
# for) with a standard error of sqrt(R x T) at the rate R, each sample
# standing for about R bytes: 5.6 % of 252 MB at 512 KiB. The check allows
# 4 of them. The program shrinks no string when cprof is not there (its
# allocator's usable sizes leave less than a tenth spare at this length),
# and must shrink as many under cprof.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../real/lib.sh"
P=$B/tests/host/host_sized_strings
N=200000
LEN=1006
RATE=524288 # CPROF_HEAP_RATE's default

# strings NAME ALLOCATOR: the program without cprof, then under it.
strings() {
  local name=$1 alloc=$2 truth got
  start "$name" --ready LD_PRELOAD="$LIB${alloc:+:$alloc}" -- "$P" $N $LEN
  check "$name: fetch /heap" curl -sf -o "$T/$name.pb.gz" "http://$ADDR/debug/pprof/heap"
  stop
  truth=$(sed -n 's/^truth \([0-9]*\) .*/\1/p' "$T/$name.out")
  got=$(inuse_bytes "$T/$name.pb.gz")
  echo "$name: $(head -1 "$T/$name.out"); cprof in-use $got bytes"
  check "$name: no string shrunk (as without cprof: usable sizes alike)" has "$T/$name.out" ' shrunk 0 '
  check "$name: in-use within 4 standard errors of the truth" within_se "$truth" "$got" $RATE
}

run plain -- "$P" $N $LEN --exit
check "without cprof, under glibc: no string shrunk" has "$T/plain.out" ' shrunk 0 '
strings glibc ""
JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
check "jemalloc is installed" [ -e "$JE" ]
run je LD_PRELOAD="$JE" -- "$P" $N $LEN --exit
check "without cprof, under jemalloc: no string shrunk" has "$T/je.out" ' shrunk 0 '
strings jemalloc "$JE"
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -e "$TC" ]; then
  run tc LD_PRELOAD="$TC" -- "$P" $N $LEN --exit
  check "without cprof, under tcmalloc: no string shrunk" has "$T/tc.out" ' shrunk 0 '
  strings tcmalloc "$TC"
else
  echo "tcmalloc (libtcmalloc-minimal4) is not installed: not checked"
fi
finish
