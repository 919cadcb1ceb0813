#!/usr/bin/env bash
# "A sampled path makes no system call": churn under cprof at a high
# sampling rate, counted by `strace -f -c`, at two run lengths.
#
#   bench/heap/syscalls.sh
#   RATE=4096 SMALL_OPS=2e5 BIG_OPS=2e6 UNWINDERS="dwarf fp" bench/heap/syscalls.sh
#
# For each unwinder, `churn --ops N` (one thread) runs under
#   strace -f -c env LD_PRELOAD=libcprof.so CPROF_ADDR=0 CPROF_HEAP_RATE=$RATE CPROF_UNWIND=U
# for N = SMALL_OPS and BIG_OPS: ten times the steps, so about ten times
# the samples. The number of samples comes from a twin run without strace
# and with CPROF_OUTPUT (same seed, so the same allocations; its heap.pb.gz
# says how many blocks were sampled); it is not the straced run itself
# because CPROF_OUTPUT also records a CPU profile, whose timer signals and
# collector thread make system calls of their own. If a sample made system
# calls, the count would grow with the samples: "per extra sample" is the
# difference in system calls between the two lengths over the difference
# in samples. The same two lengths without cprof (glibc alone) and with
# CPROF_HEAP_RATE=0 show what the program and the library make anyway.
# Installs strace if missing.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RATE=${RATE:-4096}
SMALL_OPS=${SMALL_OPS:-2e5}
BIG_OPS=${BIG_OPS:-2e6}
UNWINDERS=${UNWINDERS:-dwarf fp}

need_pkgs heap-syscalls strace golang-go
heap_available || exit 1

echo "# System calls of sampled allocations: churn under strace -f -c, CPROF_HEAP_RATE=$RATE, $SMALL_OPS and $BIG_OPS steps"
machine

# traced NAME OPS ENV...: system calls of one churn run, as "total<TAB>name:calls,...".
traced() {
  local name=$1 ops=$2
  shift 2
  strace -f -c -o "$T/$name.strace" env "$@" "$BIN/churn" --ops "$ops" --seed 7 >"$T/$name.out" 2>"$T/$name.err" || {
    echo "$name failed under strace:" >&2; cat "$T/$name.err" >&2; exit 1; }
  awk '$1 ~ /^[0-9.]+$/ && NF >= 5 && $NF != "total" { v[$NF] = $4; t += $4 }
    END { printf "%d\t", t; s = ""; for (k in v) s = s sprintf("%s%s:%d", (s ? "," : ""), k, v[k]); print s }' \
    "$T/$name.strace"
}

# sampled NAME OPS UNWINDER: blocks sampled in a twin run (CPROF_OUTPUT).
sampled() {
  mkdir -p "$T/$1.dir"
  env LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_HEAP_RATE="$RATE" CPROF_UNWIND="$3" CPROF_OUTPUT="$T/$1.dir" \
    "$BIN/churn" --ops "$2" --seed 7 >"$T/$1.twin.out" 2>"$T/$1.twin.err" || {
    echo "$1: churn failed under cprof:" >&2; cat "$T/$1.twin.err" >&2; exit 1; }
  heap_totals "$T/$1.dir/heap.pb.gz" | cut -d' ' -f6
}

ROWS=$T/rows # label ops samples total detail
: >"$ROWS"
for ops in $SMALL_OPS $BIG_OPS; do
  printf '%s\t%s\t-\t%s\n' glibc "$ops" "$(traced "glibc.$ops" "$ops" X=1)" >>"$ROWS"
  printf '%s\t%s\t0\t%s\n' "cprof, CPROF_HEAP_RATE=0" "$ops" \
    "$(traced "off.$ops" "$ops" LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_HEAP_RATE=0)" >>"$ROWS"
  for u in $UNWINDERS; do
    s=$(sampled "$u.$ops" "$ops" "$u")
    printf '%s\t%s\t%s\t%s\n' "cprof, CPROF_UNWIND=$u" "$ops" "$s" \
      "$(traced "$u.$ops" "$ops" LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_HEAP_RATE="$RATE" CPROF_UNWIND="$u")" >>"$ROWS"
  done
done
load

echo
echo "| run | steps | samples | system calls | per extra sample | what grew with the steps |"
echo "|---|---:|---:|---:|---:|---|"
awk -F'\t' '{ k = $1; if (!(k in c)) order[++n] = k
  j = ++c[k]; ops[k, j] = $2; smp[k, j] = $3; tot[k, j] = $4; det[k, j] = $5 }
  END { for (i = 1; i <= n; i++) { k = order[i]
    per = "-"; grew = ""
    if (c[k] == 2) {
      if (smp[k, 1] != "-" && smp[k, 2] - smp[k, 1] > 0)
        per = sprintf("%.4f", (tot[k, 2] - tot[k, 1]) / (smp[k, 2] - smp[k, 1]))
      delete a; delete b
      m = split(det[k, 1], x, ","); for (q = 1; q <= m; q++) { split(x[q], y, ":"); a[y[1]] = y[2] }
      m = split(det[k, 2], x, ","); for (q = 1; q <= m; q++) { split(x[q], y, ":"); b[y[1]] = y[2] }
      for (s in b) if (b[s] - a[s] != 0) grew = grew sprintf("%s%s %+d", (grew ? ", " : ""), s, b[s] - a[s])
      for (s in a) if (!(s in b)) grew = grew sprintf("%s%s %+d", (grew ? ", " : ""), s, -a[s])
      if (grew == "") grew = "nothing"
    }
    for (j = 1; j <= c[k]; j++)
      printf "| %s | %s | %s | %s | %s | %s |\n", k, ops[k, j], smp[k, j], tot[k, j],
        (j == 2 ? per : ""), (j == 2 ? grew : "") } }' "$ROWS"
echo
echo "System calls of the shorter runs, by name (strace -f -c; start-up and exit included):"
awk -F'\t' -v small="$SMALL_OPS" '$2 == small { n = split($5, x, ","); s = ""
  # by count, largest first
  for (i = 1; i <= n; i++) { split(x[i], y, ":"); name[i] = y[1]; cnt[i] = y[2] + 0 }
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (cnt[j] > cnt[i]) {
    t = cnt[i]; cnt[i] = cnt[j]; cnt[j] = t; t = name[i]; name[i] = name[j]; name[j] = t }
  for (i = 1; i <= n; i++) s = s sprintf("%s%s %d", (s ? ", " : ""), name[i], cnt[i])
  printf "  %s: %s\n", $1, s }' "$ROWS"
