# Helpers for tests/real: programs nobody here wrote, installed from Debian
# (scripts/install-deps.sh test), run with and without cprof. Source it after
# tests/integration/lib.sh.

# need COMMAND...: skips the test when a program it drives is not installed.
need() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null || skip "$c is not installed (scripts/install-deps.sh test)"
  done
}

# free_port: a TCP port nothing listens on now (the programs take a fixed
# port on their command line, so we pick one; a race with another test is
# possible but then the program says so and the test fails loudly).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# own_top PROFILE N MAPPING [PPROF ARGS...]: prints the functions among the
# N first lines of `go tool pprof -top` (flat) that belong to a mapping whose
# path matches the regex MAPPING (the program's binary, or the library that
# is its engine), one a line. The mapping of each function comes from
# `pprof -raw`, which lists locations with their mapping numbers.
own_top() {
  local prof=$1 n=$2 map=$3
  shift 3
  pprof -raw "$@" "$prof" >"$T/raw.txt"
  # name -> 1 when some location of it is in a matching mapping.
  awk -v re="$map" '
    /^Mappings/ { m = 1; next }
    m && $1 ~ /^[0-9]+:$/ { id = substr($1, 1, length($1) - 1); if ($3 ~ re) own[id] = 1; next }
    /^Locations/ { l = 1; next }
    l && !m && $1 ~ /^[0-9]+:$/ && $3 ~ /^M=/ { loc[NR] = substr($3, 3) " " $4 }
    END { for (k in loc) { split(loc[k], f, " "); if (own[f[1]] && f[2] != "") print f[2] } }
  ' "$T/raw.txt" | sort -u >"$T/own_names.txt"
  pprof -top -nodecount="$n" "$@" "$prof" | awk '/ flat%/ { t = 1; next } t { print $6 }' |
    grep -Fxf "$T/own_names.txt" || true
}

# inuse_bytes PROFILE [PPROF ARGS...]: the heap profile's in-use total in
# bytes, of the samples that pass the filters in ARGS (-focus, -ignore):
# the sum of every node's flat figure, none dropped.
inuse_bytes() {
  local prof=$1
  shift
  pprof -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 -unit=B \
    -sample_index=inuse_space "$@" "$prof" |
    awk '/ flat%/ { t = 1; next } t { sub(/B$/, "", $1); s += $1 } END { printf "%d\n", s }'
}

# within A B PCT: A is within PCT % of B.
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d * 100 <= p * b) }'; }
