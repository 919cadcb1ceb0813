# Samples keep the module they were taken in (issue 12, item 1). A program
# allocates 123,456 bytes in libunloaded_a.so's a_alloc_func and keeps
# them, then alternates half a second of CPU in A and in B
# (libunloaded_b.so), loaded in turn at the same address, and ends with B
# where A was. Resolved against what is mapped when the profile is
# written, A's bytes went to B's b_other_func, which never allocates, and
# the CPU all to one of the two. Now: the heap at rate 1 has exactly A's
# bytes under a_alloc_func, the CPU is about half each, and the profile
# keeps A's mapping with its build ID.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration

# share TOP FUNCTION LOW HIGH: the function's flat% in a pprof -top is in
# [LOW, HIGH].
share() {
  awk -v fn="$2" -v lo="$3" -v hi="$4" '$6 == fn { sub("%", "", $2); v = $2 }
    END { print fn ": " v "%"; exit !(v != "" && v >= lo && v <= hi) }' "$1"
}
# inuse TOP FUNCTION BYTES: the function's flat bytes in a pprof -top -unit=B.
inuse() {
  awk -v fn="$2" -v want="$3" '$6 == fn { v = $1 }
    END { print fn ": " v " (want " want "B)"; exit !(v == want "B") }' "$1"
}

mkdir -p "$T/out"
run ab LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out" CPROF_CPU_HZ=250 CPROF_HEAP_RATE=1 \
  -- "$P/unloaded" "$P"
cat "$T/ab.out"
check "the program ran" rc_is ab 0
check "B was loaded where A had been (else this test proves nothing)" has "$T/ab.out" '^same address'

pprof -top -nodefraction=0 "$T/out/cpu.pb.gz" >"$T/cpu.top"
check "CPU: a_spin has about half" share "$T/cpu.top" a_spin 35 65
check "CPU: b_spin has about half" share "$T/cpu.top" b_spin 35 65

pprof -top -unit=B -nodefraction=0 -sample_index=inuse_space "$T/out/heap.pb.gz" >"$T/heap.top"
check "heap: a_alloc_func holds its 123456 bytes" inuse "$T/heap.top" a_alloc_func 123456
absent() { has "$1" '^Type: ' && ! grep -q " $2\$" "$1"; }
check "heap: b_other_func, which never allocates, holds nothing" absent "$T/heap.top" b_other_func

# The unloaded module stays in the profile, with its build ID, as the
# mapping of A's locations.
id_a=$(readelf -n "$P/libunloaded_a.so" | sed -n 's/.*Build ID: //p')
pprof -raw "$T/out/heap.pb.gz" >"$T/heap.raw"
check "heap: A's mapping with its build ID ($id_a)" has "$T/heap.raw" "libunloaded_a\.so $id_a"

# The same through the server, in the legacy text format: its comment
# lines are ours.
start live --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=1 -- "$P/unloaded" "$P" --wait
curl -sf "http://$ADDR/debug/pprof/heap?debug=1" >"$T/heap.txt"
check "heap?debug=1: 123456 bytes in use at a_alloc_func" \
  python3 - "$T/heap.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# A record: "N: BYTES [..] @ pcs" then its "#\t0x...\tfunc+0x..." lines.
for rec in re.split(r"\n(?=\d+: \d+ \[)", text):
    if re.search(r"#\t0x[0-9a-f]+\ta_alloc_func\+", rec):
        m = re.match(r"(\d+): (\d+) ", rec)
        print("a_alloc_func record:", rec.splitlines()[0])
        sys.exit(0 if m and m.group(2) == "123456" else 1)
print("no record names a_alloc_func")
sys.exit(1)
PY
finish
