# Shared by the heap benchmark scripts. Source it: it brings in
# cpu/lib.sh (set -euo pipefail, the build, the scratch directory $T, start,
# median, field, machine, load, need_pkgs, pkg_file) and adds what the heap
# scripts need.
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"

if [ "$(id -u)" -eq 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi

# heap_allocators WHO: installs jemalloc and gperftools' tcmalloc if
# missing and sets JE and TC to their libraries; fails if this jemalloc
# cannot profile.
heap_allocators() {
  need_pkgs "$1" libjemalloc2 libgoogle-perftools-dev
  JE=$(pkg_file libjemalloc2 '/libjemalloc\.so\.2$')
  TC=$(pkg_file libgoogle-perftools4 '/libtcmalloc\.so\.4$')
  [ -e "$JE" ] && [ -e "$TC" ] || { echo "$1: libjemalloc.so.2 or libtcmalloc.so.4 not found" >&2; exit 1; }
  # jemalloc says "<jemalloc>: Invalid conf pair" when a build lacks an option.
  if LD_PRELOAD=$JE MALLOC_CONF=prof:true,lg_prof_sample:19 /bin/true 2>&1 | grep -q 'Invalid conf'; then
    echo "$1: this jemalloc was built without profiling (MALLOC_CONF=prof:true is invalid)" >&2
    exit 1
  fi
}

# allocator_versions: one line naming the allocators and their versions.
allocator_versions() {
  echo "glibc $(dpkg-query -W -f '${Version}' libc6); jemalloc $JE ($(dpkg-query -W -f '${Version}' libjemalloc2));" \
    "tcmalloc $TC ($(dpkg-query -W -f '${Version}' libgoogle-perftools4))"
}

# heap_variant VARIANT [FILE]: sets ENVS to the environment that runs a
# workload as VARIANT (heap/overhead.sh's header says what each is; FILE is
# where a profiler that writes one puts it) and BASE to the variant it is
# compared with: its allocator without profiling. heaptrack is a command,
# not an environment: its ENVS is empty and its caller runs it.
heap_variant() {
  local c=(LD_PRELOAD="$LIB" CPROF_ADDR=0)
  BASE=glibc
  case $1 in
  glibc | heaptrack) ENVS=() ;;
  passthrough) ENVS=(LD_PRELOAD="$BIN/libpassthrough.so") ;;
  cprof) ENVS=("${c[@]}") ;;
  cprof-fp) ENVS=("${c[@]}" CPROF_UNWIND=fp) ;;
  cprof-off) ENVS=("${c[@]}" CPROF_HEAP_RATE=0) ;;
  cprof-rare) ENVS=("${c[@]}" CPROF_HEAP_RATE=1073741824) ;;
  cprof-4096) ENVS=("${c[@]}" CPROF_HEAP_RATE=4096) ;;
  cprof-fp-4096) ENVS=("${c[@]}" CPROF_HEAP_RATE=4096 CPROF_UNWIND=fp) ;;
  jemalloc) ENVS=(LD_PRELOAD="$JE") BASE=jemalloc ;;
  jemalloc-prof) ENVS=(LD_PRELOAD="$JE" MALLOC_CONF=prof:true,lg_prof_sample:19) BASE=jemalloc ;;
  cprof-jemalloc) ENVS=(LD_PRELOAD="$LIB:$JE" CPROF_ADDR=0) BASE=jemalloc ;;
  tcmalloc) ENVS=(LD_PRELOAD="$TC") BASE=tcmalloc ;;
  tcmalloc-sample) ENVS=(LD_PRELOAD="$TC" TCMALLOC_SAMPLE_PARAMETER=524288) BASE=tcmalloc ;;
  cprof-tcmalloc) ENVS=(LD_PRELOAD="$LIB:$TC" CPROF_ADDR=0) BASE=tcmalloc ;;
  tcmalloc-heapprof) ENVS=(LD_PRELOAD="$TC" HEAPPROFILE="${2:-$T/heapprof}") BASE=tcmalloc ;;
  *) echo "unknown variant $1" >&2; exit 2 ;;
  esac
}

# churn_figures FILE: churn's result line in FILE as "ns/step, thread CPU
# ns/step, process CPU ns/step, steps" (tab-separated); fails, showing
# FILE and FILE.err, if there is none.
churn_figures() {
  grep -h '^churn:' "$1" 2>/dev/null | awk '
    function kv(k,   i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } }
    { ops = kv("ops"); found = 1
      printf "%.3f\t%.3f\t%.3f\t%d\n", kv("ns_per_op"), kv("thread_cpu_ns") / ops, kv("process_cpu_ns") / ops, ops }
    END { exit !found }' && return 0
  echo "churn printed no result:" >&2
  cat "$1" "$1.err" >&2 2>/dev/null
  return 1
}

# heap_available: whether this libcprof has the heap profiler (it defines
# malloc). Says so on stderr when it does not.
heap_available() {
  # awk reads all of nm's output: grep -q would stop at the first match, and
  # nm's SIGPIPE fail the pipeline under pipefail (sometimes, as its
  # output outgrew the pipe's buffer).
  if nm -D --defined-only "$LIB" 2>/dev/null | awk '$3 == "malloc" { f = 1 } END { exit !f }'; then return 0; fi
  echo "cprof's heap profiler is not in $LIB yet (it does not define malloc)" >&2
  return 1
}

# heap_totals FILE [FUNC]: the sums over all samples of a heap profile's four
# values, from `go tool pprof -raw` (plain numbers, already scaled to
# estimates by the profiler), as
#   alloc_objects alloc_space inuse_objects inuse_space records sampled
#   alloc_objects_unrounded inuse_objects_unrounded
# records is the number of sample records (one per stack and size, and
# one per stack for its sizes past its first few, without the label);
# sampled the number of allocations the profiler really sampled, undone
# from each record's alloc_objects and its bytes=SIZE label: a record of
# c sampled blocks of s bytes says c / (1 - exp(-s/rate)) objects,
# rounded to an integer, rate being the profile's Period; -1 when a
# record without the label (many sizes) makes it unknowable. The
# "unrounded" object counts are the sums of c / (1 - exp(-s/rate)) before
# that rounding, recomputed from the recovered c (a record without the
# label counts as it is: its one rounding is of a sum of many weights).
# With FUNC, only the samples with a frame whose function name contains
# FUNC count (the workload's own allocations, not the loader's or stdio's).
heap_totals() {
  go tool pprof -symbolize=none -raw "$1" 2>>"$T/pprof.err" | awk -v func_="${2:-}" '
    # count OBJECTS: the sampled blocks behind a record of OBJECTS of size
    # `size` (objects = round(count / p), so count = round(objects * p)).
    function count(o, size,   p) { if (rate <= 1 || size <= 0 || o == 0) return o
      p = 1 - exp(-size / rate); return int(o * p + 0.5) }
    function unscaled(c, size) { return (rate <= 1 || size <= 0) ? c : c / (1 - exp(-size / rate)) }
    function keep(i,   k, pc) { if (func_ == "") return 1
      k = split(pcs[i], pc, " "); for (; k > 0; k--) if (pc[k] in hit) return 1; return 0 }
    /^Period:/ { rate = $2 }
    /^Samples:/ { in_s = 1; next }
    /^Locations/ { in_s = 0; in_l = 1; next }
    /^Mappings/ { in_l = 0 }
    in_l && func_ != "" && index($0, func_) { id = $1; sub(/:$/, "", id); hit[id] = 1 }
    in_s && /^[A-Za-z]/ && !/\// { in_s = 0 }
    in_s && /^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ {
      n++; p = index($0, ":"); pcs[n] = substr($0, p + 1)
      split(substr($0, 1, p - 1), v, " "); ao[n] = v[1]; as[n] = v[2]; io[n] = v[3]; is[n] = v[4]; sz[n] = -1 }
    in_s && /bytes:\[[0-9]+\]/ { match($0, /bytes:\[[0-9]+\]/); sz[n] = substr($0, RSTART + 7, RLENGTH - 8) + 0 }
    END {
      for (i = 1; i <= n; i++) {
        if (!keep(i)) continue
        a += ao[i]; b += as[i]; c += io[i]; d += is[i]; r++
        if (sz[i] < 0 && rate > 1) { ua += ao[i]; ui += io[i]; if (ao[i]) mixed++; continue }
        ca = count(ao[i], sz[i]); ci = count(io[i], sz[i]); sampled += ca
        ua += unscaled(ca, sz[i]); ui += unscaled(ci, sz[i])
      }
      printf "%.0f %.0f %.0f %.0f %d %.0f %.0f %.0f\n", a, b, c, d, r, mixed ? -1 : sampled, ua, ui }'
}

# median: as cpu/lib.sh's, with every digit (byte counts of 1e9 and more).
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) printf "%.15g\n", v[(NR + 1) / 2]; else printf "%.15g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# status_kb PID NAME: NAME's value (kB) in /proc/PID/status.
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
