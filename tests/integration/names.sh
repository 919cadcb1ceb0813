# C++ names, read by go tool pprof: two lambdas in main, two overloads,
# two template instances, each its own function under the name nm -C gives
# its symbol (addr2line -f -C -i for one inlined everywhere), with the exact
# bytes it allocated (the heap at rate 1) and, in a CPU profile, the lambdas'
# 1:3 split. Some of them are inlined, so their frames come from
# DW_TAG_inlined_subroutine. The program: programs/cxx_names.cpp.
. "$(dirname "$0")/lib.sh"

PROG=$B/tests/integration/cxx_names
SRC=$CPROF_SOURCE_DIR/tests/integration/programs/cxx_names.cpp
command -v nm >/dev/null && command -v addr2line >/dev/null || skip "binutils' nm and addr2line are needed"

fetch() { curl -sf -o "$T/$1" "$2"; }
pprof_to() { local out=$1; shift; pprof "$@" >"$T/$out"; }

# nm_lists NAME: nm -C lists a symbol of the program by exactly that name.
nm_lists() { nm -C "$PROG" | cut -d' ' -f3- | grep -Fxq -- "$1"; }

# cum_is TOP NAME BYTES: one line of a `pprof -top -unit=B` listing names
# the function NAME exactly (pprof may add " (inline)"), with BYTES
# cumulative bytes.
cum_is() {
  python3 - "$@" <<'PY'
import sys
top, name, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
got = []
for line in open(top):
    f = line.split(None, 5)
    if len(f) == 6 and f[3].endswith("B") and f[5].rstrip("\n").removesuffix(" (inline)") == name:
        got.append(int(float(f[3].rstrip("B"))))
print("%s: %s bytes, want %d" % (name, got, want))
sys.exit(0 if got == [want] else 1)
PY
}

# frames RAW FUNCTION...: some Location of `pprof -raw` has exactly these
# frames, innermost first.
frames() {
  python3 - "$@" <<'PY'
import re, sys
want = sys.argv[2:]
locs, cur = [], None
for line in open(sys.argv[1]):
    m = re.match(r"^\s+(\d+: 0x[0-9a-f]+ M=\d+ )?(.*) \S*:\d+ s=\d+(\(.*\))?$", line)
    if line.startswith(("Mappings", "Samples")):
        cur = None
    if not m or (cur is None and not m.group(1)):
        continue
    if m.group(1):
        cur = []
        locs.append(cur)
    cur.append(m.group(2))
found = want in locs
print("frames %s: %s" % (want, "found" if found else "not in %d locations" % len(locs)))
sys.exit(0 if found else 1)
PY
}

# like_addr2line RAW FUNCTION: in every Location of the program's own
# mapping that has FUNCTION among its frames, `addr2line -f -C -i` prints
# FUNCTION for that frame too. (Only for that frame: addr2line names the
# frames of a lambda "operator()".)
like_addr2line() {
  python3 - "$PROG" "$@" <<'PY'
import re, subprocess, sys
prog, raw, name = sys.argv[1:4]
text = open(raw).read()
maps = dict(re.findall(r"^(\d+): (0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+) ", text, re.M))
locs, cur = [], None
for line in text.splitlines():
    m = re.match(r"^\s+(?:\d+: (0x[0-9a-f]+) M=(\d+) )?(.*) \S*:\d+ s=\d+(?:\(.*\))?$", line)
    if line.startswith(("Mappings", "Samples")):
        cur = None
    if not m or (cur is None and not m.group(1)):
        continue
    if m.group(1):
        cur = {"addr": int(m.group(1), 16), "map": m.group(2), "names": []}
        locs.append(cur)
    cur["names"].append(m.group(3))
checked = 0
for loc in locs:
    if name not in loc["names"] or loc["map"] != "1":
        continue
    start, limit, offset = (int(x, 16) for x in maps["1"].split("/"))
    addr = loc["addr"] - start + offset  # the program's code: vaddr == offset
    out = subprocess.run(["addr2line", "-f", "-C", "-i", "-e", prog, hex(addr)],
                         capture_output=True, text=True).stdout.splitlines()
    theirs = out[0::2]
    print("%#x ours %s addr2line %s" % (addr, loc["names"], theirs))
    i = loc["names"].index(name)
    if len(theirs) != len(loc["names"]) or theirs[i] != name:
        sys.exit(1)
    checked += 1
sys.exit(0 if checked else 1)
PY
}

# ---- the heap at rate 1: every byte, under each function's own name ------
start heap --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=1 -- "$PROG" heap
check "fetch /heap" fetch heap.pb.gz "http://$ADDR/debug/pprof/heap"
stop
check "pprof -top" pprof_to top -top -unit=B -nodecount=1000 -nodefraction=0 "$T/heap.pb.gz"
check "pprof -raw" pprof_to raw -raw "$T/heap.pb.gz"

L1='main::{lambda(int)#1}::operator()(int) const'
L2='main::{lambda(int)#2}::operator()(int) const'
L3='main::{lambda()#3}::operator()() const'
# name, bytes, and whether the program has a symbol by that name.
while IFS='|' read -r name bytes symbol; do
  check "$name holds $bytes bytes" cum_is "$T/top" "$name" "$bytes"
  if [ "$symbol" = yes ]; then
    check "$name is how nm -C lists it" nm_lists "$name"
  fi
done <<EOF
$L1|100000|yes
$L2|300000|yes
$L3|8192|yes
shop::fill(int)|11111|yes
shop::fill(double)|22222|yes
int* shop::make<int>(unsigned long)|40000|yes
double* shop::make<double>(unsigned long)|80000|yes
void* shop::grab<8192>()|8192|no
void* shop::grab<4096>()|4096|no
outer()|4096|yes
EOF

# Inlined frames: a lambda inlined into main is named as its out-of-line
# copy is, and so is the copy itself; template instances inlined into a
# function and into a lambda are named as addr2line -i names them.
check "lambda #1 inlined into main" frames "$T/raw" "$L1" main
check "lambda #1 out of line" frames "$T/raw" "$L1"
check "lambda #2 inlined into main" frames "$T/raw" "$L2" main
check "grab<8192> inlined into lambda #3" frames "$T/raw" 'void* shop::grab<8192>()' "$L3"
check "grab<4096> inlined into outer" frames "$T/raw" 'void* shop::grab<4096>()' 'outer()'
check "grab<4096>: the frames addr2line -f -C -i gives" like_addr2line "$T/raw" 'void* shop::grab<4096>()'
check "grab<8192>: the frames addr2line -f -C -i gives" like_addr2line "$T/raw" 'void* shop::grab<8192>()'
check "the overloads: the frames addr2line -f -C -i gives" like_addr2line "$T/raw" 'shop::fill(double)'

# A lambda inlined with no copy has no symbol: it is named after its
# function and the line it is written on.
line=$(grep -n 'auto four = ' "$SRC" | cut -d: -f1)
L4="main::{lambda at cxx_names.cpp:$line}::operator()"
check "$L4 holds 70000 bytes" cum_is "$T/top" "$L4" 70000
check "$L4 inlined into main" frames "$T/raw" "$L4" main
check "no function is called just operator()" bash -c "! grep -Eq ' operator\(\)( \(inline\))?$' '$T/top'"

# ---- CPU: the two lambdas' 1:3 -------------------------------------------
start cpu --ready LD_PRELOAD="$LIB" -- "$PROG" cpu
check "fetch a 2 s CPU profile" fetch cpu.pb.gz "http://$ADDR/debug/pprof/profile?seconds=2"
stop
check "pprof -top (CPU)" pprof_to ctop -top -nodecount=1000 "$T/cpu.pb.gz"
# Lambda #2 does 3 units of work for #1's 1: 75 %. At 100 Hz over 2 s
# (~200 samples, fewer on a loaded machine) 60-90 % is five standard errors.
check "lambda #2 takes 60-90% of the lambdas' samples" python3 - "$T/ctop" "$L1" "$L2" <<'PY'
import sys
top, one, two = sys.argv[1:4]
cum = {}
for line in open(top):
    f = line.split(None, 5)
    if len(f) == 6 and f[4].endswith("%"):
        cum[f[5].rstrip("\n").removesuffix(" (inline)")] = float(f[4].rstrip("%"))
a, b = cum.get(one, 0.0), cum.get(two, 0.0)
print("lambda #1 %.1f%%, lambda #2 %.1f%%" % (a, b))
sys.exit(0 if a > 0 and 60 <= b / (a + b) * 100 <= 90 else 1)
PY

finish
