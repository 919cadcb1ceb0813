# Shared by the heap benchmark scripts. Source it: it brings in
# cpu/lib.sh (set -euo pipefail, the build, the scratch directory $T, start,
# median, field, machine, load) and adds what the heap scripts need.
. "$(dirname "${BASH_SOURCE[0]}")/../cpu/lib.sh"

if [ "$(id -u)" -eq 0 ]; then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi

# need_pkgs SCRIPT PKG...: installs the Debian packages that are missing
# (as root), or says what to install and fails.
need_pkgs() {
  local who=$1 missing=() p
  shift
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "$who: needs ${missing[*]}; run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "$who: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
}

# pkg_file PKG REGEX: the first file of installed package PKG matching REGEX.
pkg_file() { dpkg -L "$1" | grep -E "$2" | head -1; }

# heap_available: whether this libcprof has the heap profiler (it defines
# malloc). Says so on stderr when it does not.
heap_available() {
  if nm -D --defined-only "$LIB" 2>/dev/null | grep -qw malloc; then return 0; fi
  echo "cprof's heap profiler is not in $LIB yet (it does not define malloc)" >&2
  return 1
}

# heap_totals FILE: the sums over all samples of a heap profile's four
# values, from `go tool pprof -raw` (plain numbers, already scaled to
# estimates by the profiler), as
#   alloc_objects alloc_space inuse_objects inuse_space records sampled
#   alloc_objects_unrounded inuse_objects_unrounded
# records is the number of sample records (one per stack and size);
# sampled the number of allocations the profiler really sampled, undone
# from each record's alloc_objects and its bytes=SIZE label: a record of
# c sampled blocks of s bytes says c / (1 - exp(-s/rate)) objects,
# rounded to an integer, rate being the profile's Period. The
# "unrounded" object counts are the sums of c / (1 - exp(-s/rate)) before
# that rounding, recomputed from the recovered c.
heap_totals() {
  go tool pprof -symbolize=none -raw "$1" 2>>"$T/pprof.err" | awk '
    # count OBJECTS: the sampled blocks behind a record of OBJECTS of size
    # `size` (objects = round(count / p), so count = round(objects * p)).
    function count(o,   p) { if (rate <= 1 || size <= 0 || o == 0) return o
      p = 1 - exp(-size / rate); return int(o * p + 0.5) }
    function unscaled(c) { return (rate <= 1 || size <= 0) ? c : c / (1 - exp(-size / rate)) }
    function flush(   ca, ci) { if (!pending) return
      ca = count(objs); ci = count(iobjs); sampled += ca
      ua += unscaled(ca); ui += unscaled(ci); pending = 0 }
    /^Period:/ { rate = $2 }
    /^Samples:/ { in_s = 1; next }
    in_s && /^[A-Za-z]/ && !/\// { flush(); in_s = 0 }
    in_s && /^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ {
      flush(); sub(/:.*/, ""); a += $1; b += $2; c += $3; d += $4; n++
      objs = $1; iobjs = $3; size = 0; pending = 1 }
    in_s && /bytes:\[[0-9]+\]/ { match($0, /bytes:\[[0-9]+\]/); size = substr($0, RSTART + 7, RLENGTH - 8) + 0 }
    END { flush(); printf "%.0f %.0f %.0f %.0f %d %.0f %.0f %.0f\n", a, b, c, d, n, sampled, ua, ui }'
}

# median: as cpu/lib.sh's, with every digit (byte counts of 1e9 and more).
median() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "nan"; exit }
    if (NR % 2) printf "%.15g\n", v[(NR + 1) / 2]; else printf "%.15g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# status_kb PID NAME: NAME's value (kB) in /proc/PID/status.
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
