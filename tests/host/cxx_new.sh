# C++'s new and delete, and jemalloc's own API, have their heap read right
# under glibc, jemalloc and tcmalloc (preloaded after cprof, as doc/running.md
# prescribes; tcmalloc when libtcmalloc-minimal4 is installed).
#
# host_cxx_new holds COUNT blocks from each of its keep_* functions (new[],
# new of a type, with its sized delete, new of an alignas(64) type, with
# its sized aligned delete, nothrow new[], jemalloc's rallocx of malloc'd
# blocks, among mallocx, sdallocx and dallocx, and malloc freed with
# sdallocx: those two where jemalloc is the allocator), churning three
# times as much around them, and prints the bytes each holds. The heap
# profile's in-use bytes of each function are compared with them:
#   at CPROF_HEAP_RATE=1, where every allocation is a sample, exactly;
#   at 4096, within 4 standard errors (sqrt(rate x truth), 1.6 % of the
#   16 MB each function holds).
# The program must also behave as without cprof: no crash, every block
# aligned as asked, and a std::bad_alloc and the new handler passing
# through cprof's operators.
#
# Before, jemalloc's and tcmalloc's operators bound ahead of libstdc++'s
# and cprof saw none of it (0 bytes in use), and jemalloc's aligned new
# (which calls aligned_alloc, so could get a sampled block) crashed with
# the sized aligned delete, as malloc did with sdallocx.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../real/lib.sh"
P=$B/tests/host/host_cxx_new

FUNCTIONS="keep_array keep_object keep_aligned keep_nothrow keep_rallocx keep_malloc_sdallocx"

# heap NAME ALLOCATOR RATE COUNT: the program under cprof, its profile
# against its truth, function by function.
heap() {
  local name=$1 alloc=$2 rate=$3 count=$4 f truth got
  start "$name" --ready LD_PRELOAD="$LIB${alloc:+:$alloc}" CPROF_HEAP_RATE="$rate" -- "$P" "$count"
  check "$name: fetch /heap" curl -sf -o "$T/$name.pb.gz" "http://$ADDR/debug/pprof/heap"
  stop
  check "$name: bad_alloc and the new handler pass through" \
    has "$T/$name.out" '^bad_alloc caught, new handler called 1$'
  for f in $FUNCTIONS; do
    truth=$(sed -n "s/^truth $f \([0-9]*\)$/\1/p" "$T/$name.out")
    if [ -z "$truth" ]; then # jemalloc's API, under another allocator
      check "$name: $f did not run where jemalloc's API is missing" \
        [ "${alloc##*/}" != libjemalloc.so.2 ]
      continue
    fi
    got=$(inuse_bytes "$T/$name.pb.gz" -focus="\\b$f\\b")
    if [ "$rate" = 1 ]; then
      check "$name: $f holds $truth bytes, the profile says $got" [ "$got" = "$truth" ]
    else
      check "$name: $f within 4 standard errors of $truth bytes: $got" \
        within_se "$truth" "$got" "$rate"
    fi
  done
}

# allocator NAME PATH: without cprof, then under it at both rates.
allocator() {
  local name=$1 alloc=$2
  run "$name-alone" LD_PRELOAD="$alloc" -- "$P" 2000 --exit
  check "$name, without cprof: runs to the end" rc_is "$name-alone" 0
  run "$name-cprof" LD_PRELOAD="$LIB${alloc:+:$alloc}" CPROF_HEAP_RATE=1 -- "$P" 2000 --exit
  check "$name, under cprof at rate 1: exit code as without" same "$name-alone" "$name-cprof" rc
  check "$name, under cprof at rate 1: output as without" same "$name-alone" "$name-cprof" out
  heap "$name-rate1" "$alloc" 1 2000
  heap "$name-rate4096" "$alloc" 4096 16000
}

# A C program that dlopen()s C++ code with RTLD_LOCAL, as python3 loads
# an extension: libstdc++ then lies in that plugin's scope alone, where
# dlsym(RTLD_NEXT) from libcprof does not look, and the plugin's calls of
# operator new still reach libcprof's first.
cat >"$T/plugin.cpp" <<'CPP'
#include <string>
#include <vector>
extern "C" long work(int n) {
  std::vector<std::string *> v;
  long total = 0;
  for (int i = 0; i < n; i++) {
    v.push_back(new std::string(1000, 'x'));
    total += (long)v.back()->size();
  }
  for (std::string *s : v)
    delete s;
  return total;
}
CPP
cat >"$T/loader.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_LOCAL | RTLD_NOW);
  long (*work)(int) = h ? (long (*)(int))dlsym(h, "work") : NULL;
  if (!work)
    return 1;
  printf("work %ld\n", work(20000));
  return 0;
}
C
check "the plugin builds" g++ -O1 -shared -fPIC -o "$T/libplugin.so" "$T/plugin.cpp"
check "its loader builds" gcc -O1 -o "$T/loader" "$T/loader.c" -ldl
for alloc in "" /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
  [ -z "$alloc" ] || [ -e "$alloc" ] || continue
  run plugin LD_PRELOAD="$LIB${alloc:+:$alloc}" CPROF_ADDR=0 CPROF_HEAP_RATE=1 -- "$T/loader" "$T/libplugin.so"
  check "C++ in a plugin's own scope, ${alloc:-glibc}: runs as without cprof" \
    bash -c "[ \"\$(cat '$T/plugin.out')\" = 'work 20000000' ]"
done

allocator glibc ""
JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
check "jemalloc is installed" [ -e "$JE" ]
allocator jemalloc "$JE"
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -e "$TC" ]; then
  allocator tcmalloc "$TC"
else
  echo "tcmalloc (libtcmalloc-minimal4) is not installed: not checked"
fi
finish
