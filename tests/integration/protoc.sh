# The goroutine profile's bytes, decoded by an independent decoder (protoc,
# with the schema from Debian's pprof package), checked for what strict
# consumers such as Parca insist on.
. "$(dirname "$0")/lib.sh"

PROTO_DIR=/usr/share/gocode/src/github.com/google/pprof/proto
start target --ready -- "$B/tests/integration/stacks_linked"
curl -sf "http://$ADDR/debug/pprof/goroutine" -o "$T/p.pb.gz"
gunzip -c "$T/p.pb.gz" >"$T/p.pb"
protoc --decode=perftools.profiles.Profile -I"$PROTO_DIR" "$PROTO_DIR/profile.proto" <"$T/p.pb" >"$T/p.txt" ||
  fail "protoc decodes the profile"
D=$T/p.txt

check "string_table[0] is empty" bash -c "grep -m1 '^string_table:' '$D' | grep -qx 'string_table: \"\"'"
check "sample type is goroutine/count" python3 - "$D" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
strings = re.findall(r'^string_table: "(.*)"$', t, re.M)
st = re.search(r'^sample_type \{\s*type: (\d+)\s*unit: (\d+)', t, re.M)
sys.exit(0 if st and strings[int(st.group(1))] == "goroutine" and strings[int(st.group(2))] == "count" else 1)
PY
# IDs 1..N in order, for mappings, locations and functions; every sample
# has exactly one value; every referenced id exists.
check "ids are 1..N and references resolve" python3 - "$D" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def ids(kind):
    blocks = re.findall(r'^%s \{\n(.*?)^\}' % kind, t, re.M | re.S)
    return [int(re.search(r'^  id: (\d+)', b, re.M).group(1)) for b in blocks], blocks
ok = True
for kind in ("mapping", "location", "function"):
    v, _ = ids(kind)
    if v != list(range(1, len(v) + 1)) or not v:
        print(kind, "ids", v[:10]); ok = False
locs, _ = ids("location"); funcs, fblocks = ids("function"); maps, _ = ids("mapping")
for s in re.findall(r'^sample \{\n(.*?)^\}', t, re.M | re.S):
    if len(re.findall(r'^  value: ', s, re.M)) != 1:
        print("sample values", s); ok = False
    for l in re.findall(r'^  location_id: (\d+)', s, re.M):
        if int(l) not in locs: print("bad location", l); ok = False
for b in re.findall(r'^location \{\n(.*?)^\}', t, re.M | re.S):
    m = re.search(r'^  mapping_id: (\d+)', b, re.M)
    if m and int(m.group(1)) not in maps: print("bad mapping", m.group(1)); ok = False
    for f in re.findall(r'function_id: (\d+)', b):
        if int(f) not in funcs: print("bad function", f); ok = False
sys.exit(0 if ok else 1)
PY
check "mapping 1 is the program, with a build id and symbols" python3 - "$D" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
strings = re.findall(r'^string_table: "(.*)"$', t, re.M)
m = re.search(r'^mapping \{\n(.*?)^\}', t, re.M | re.S).group(1)
fn = strings[int(re.search(r'filename: (\d+)', m).group(1))]
bid = strings[int(re.search(r'build_id: (\d+)', m).group(1))]
ok = fn.endswith("/stacks_linked") and re.fullmatch(r'[0-9a-f]{40}', bid) and "has_functions: true" in m \
     and "has_line_numbers: true" in m
print(fn, bid); sys.exit(0 if ok else 1)
PY
check "the known functions are in the string table" bash -c \
  "grep -q '^string_table: \"spin_inner\"' '$D' && grep -q '^string_table: \"block_in_read\"' '$D'"
check "samples carry the thread label" bash -c "grep -q '^string_table: \"thread\"' '$D' && grep -q '^string_table: \"spinner\"' '$D'"
finish
