# A sampled block is told the usable size the same request gets without
# cprof, under every allocator: malloc_usable_size of blocks from each
# allocating call over the sizes 0 to 70,000, and where the allocator has
# them (jemalloc, tcmalloc) sallocx, malloc_size and nallocx, compared line
# for line with the run without cprof (host_usable_sizes). The run with
# cprof is at CPROF_HEAP_RATE=1, so that every block is sampled.
#
# The sampled block is the allocator's block with cprof's header before it,
# so its own usable size less the header is not the program's request's:
# jemalloc's malloc(1006) is 1024 bytes, with the header in front a block
# of the 1280-byte class, 1248 bytes past the header. Programs size their
# buffers by it, and redis's strings shrank, and were moved out of their
# samples, where the program saw spare room no unsampled string had.
#
# jemalloc and tcmalloc go after libcprof in LD_PRELOAD, as doc/running.md
# prescribes; tcmalloc (libtcmalloc-minimal4) is checked when installed.
# Their answers depend on the request alone, so the lines must be the same.
# glibc's depend on where the block fell as well: a chunk split from a
# larger free one keeps a rest too small to be a chunk (up to 16 bytes), and
# an aligned or grown block keeps what its neighbours leave. So there a
# plain block is told its request's chunk (request2size less the size word,
# m) or one 16-byte step more, with cprof and without, and every other
# block at least its request.
. "$(dirname "$0")/../integration/lib.sh"
P=$B/tests/host/host_usable_sizes
RUN_TIMEOUT=120

# sweep NAME ALLOCATOR: the program without cprof and at rate 1, alike.
sweep() {
  local name=$1 alloc=$2 pre
  pre=$LIB${alloc:+:$alloc}
  run "$name" ${alloc:+LD_PRELOAD="$alloc"} -- "$P"
  check "$name: the sweep ran to its end without cprof" has "$T/$name.out" '^70000 '
  run "$name.pre" LD_PRELOAD="$pre" CPROF_ADDR=0 CPROF_HEAP_RATE=1 -- "$P"
  check "$name: exit code as without cprof" same "$name" "$name.pre" rc
  check "$name: every usable size as without cprof, every block sampled" same "$name" "$name.pre" out
  if ! same "$name" "$name.pre" out; then
    echo "$name: $(diff "$T/$name.out" "$T/$name.pre.out" | grep -c '^>' || true) sizes differ; the first:" >&2
    diff "$T/$name.out" "$T/$name.pre.out" | head -6 >&2 || true
  fi
  check "$name: nothing on stderr" [ ! -s "$T/$name.pre.err" ]
}

# glibc_ok FILE: every line of FILE is as glibc answers (above).
glibc_ok() {
  awk '{
    s = $1; c = s + 23 - (s + 23) % 16; if (c < 32) c = 32; m = c - 8
    for (i = 2; i <= NF; i++) {
      split($i, kv, "="); v = kv[2] + 0
      if (kv[1] == "malloc" || kv[1] == "calloc") {
        if (v != m && v != m + 16) { print "size " s ": " $i ", glibc gives " m " or " m + 16; bad++ }
      } else if (kv[1] != "realloc" || s > 0) {
        if (v < s) { print "size " s ": " $i " < " s; bad++ }
      }
    }
  } END { exit bad > 0 }' "$1" >"$1.bad" || { head -5 "$1.bad" >&2; return 1; }
}

run glibc -- "$P"
check "glibc: the sweep ran to its end without cprof" has "$T/glibc.out" '^70000 '
check "glibc: every usable size as glibc gives it, without cprof" glibc_ok "$T/glibc.out"
run glibc.pre LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_HEAP_RATE=1 -- "$P"
check "glibc: exit code as without cprof" same glibc glibc.pre rc
check "glibc: every usable size as glibc gives it, every block sampled" glibc_ok "$T/glibc.pre.out"
check "glibc: nothing on stderr" [ ! -s "$T/glibc.pre.err" ]

JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
check "jemalloc is installed" [ -e "$JE" ]
sweep jemalloc "$JE"
check "jemalloc: sallocx and nallocx are in the lines (else this part tests less)" \
  has "$T/jemalloc.out" '^1006 nallocx=1024 sallocx=1024 '
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -e "$TC" ]; then
  sweep tcmalloc "$TC"
else
  echo "tcmalloc (libtcmalloc-minimal4) is not installed: not checked"
fi
finish
