# Profiles that are not profiles, through the report commands: each of
# cprof top, traces, folded and flame exits 1 with exactly one line on
# stderr ("cprof CMD: what went wrong"), prints nothing on stdout, and does
# not crash (no signal, no sanitizer report, which would be more lines).
. "$(dirname "$0")/../integration/lib.sh"
CPROF=$B/cprof
C=$T/corpus
mkdir "$C"

# A real profile to cut up: the demo server's heap.
start demo -- "$B/examples/demo_server" --seconds 30
sleep 0.5
curl -sf -o "$T/heap.pb.gz" "http://$ADDR/debug/pprof/heap"
stop
gzip -dc "$T/heap.pb.gz" >"$T/heap.pb"
size=$(stat -c %s "$T/heap.pb")
[ "$size" -gt 100 ] || fail "the demo server's heap profile is too small to cut ($size bytes)"

# The corpus.
: >"$C/empty"
head -c 100 "$T/heap.pb.gz" >"$C/truncated-gzip"
head -c 12 "$T/heap.pb.gz" >"$C/gzip-header-only"
head -c $((size / 2)) "$T/heap.pb" >"$C/truncated-proto"
head -c $((size - 1)) "$T/heap.pb" >"$C/proto-less-one-byte"
gzip -c <"$C/truncated-proto" >"$C/truncated-proto.gz"
printf 'hello, this is a text file\nwith two lines\n' >"$C/text"
printf '<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1></body></html>\n' >"$C/html"
gzip -c <"$C/html" >"$C/html.gz"
mkdir "$C/a-directory"
python3 - "$C" <<'EOF'
import random, struct, sys
d = sys.argv[1]
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload
def write(name, data):
    with open(d + "/" + name, "wb") as f:
        f.write(data)
rng = random.Random(15)  # the same bytes every run
write("random", bytes(rng.getrandbits(8) for _ in range(4096)))
write("random-gzip-magic", b"\x1f\x8b\x08\x00" + bytes(rng.getrandbits(8) for _ in range(4096)))
# A length of 2^64-1 for the first sample type, and one of 2^63.
write("huge-length", b"\x0a" + b"\xff" * 9 + b"\x01" + b"xy")
write("huge-length-2", b"\x12" + varint(1 << 63) + b"\x08\x01")
# A varint that never ends.
write("endless-varint", b"\x08" + b"\xff" * 64)
# A million nested groups (wire type 3), then as many length-delimited
# fields each inside the last.
write("deep-groups", b"\x0b" * 1000000)
inner = b""
for _ in range(2000):
    inner = field(100, 2, inner)
write("deep-nesting", inner)
# Well-formed protobuf, wrong profile: a sample naming a location that is
# not there; a sample with more values than sample types; a string index
# past the string table.
st = field(1, 2, field(1, 0, varint(1)) + field(2, 0, varint(2)))
strings = field(6, 2, b"") + field(6, 2, b"samples") + field(6, 2, b"count")
write("missing-location", st + field(2, 2, field(1, 0, varint(99)) + field(2, 0, varint(1))) + strings)
write("too-many-values", st + field(2, 2, field(2, 0, varint(1)) + field(2, 0, varint(2))) + strings)
write("bad-string-index", field(1, 2, field(1, 0, varint(1000)) + field(2, 0, varint(2))) + strings)
# Wire type 6 and 7 do not exist.
write("bad-wire-type", b"\x0e\x00\x0f")
EOF

n=0
for f in "$C"/* "$C/does-not-exist"; do
  for cmd in top traces folded flame; do
    name=$(basename "$f")-$cmd
    if [ "$cmd" = flame ]; then
      run "$name" -- "$CPROF" flame -o "$T/out.html" "$f"
    else
      run "$name" -- "$CPROF" "$cmd" "$f"
    fi
    rc=$(cat "$T/$name.rc")
    lines=$(wc -l <"$T/$name.err")
    if [ "$rc" = 1 ] && [ "$lines" = 1 ] && [ ! -s "$T/$name.out" ] &&
      grep -q "^cprof $cmd: " "$T/$name.err"; then
      pass "$name: exit 1, one line: $(cut -c1-110 "$T/$name.err")"
    else
      fail "$name: exit $rc, $lines lines on stderr, $(wc -c <"$T/$name.out") bytes on stdout"
      head -5 "$T/$name.err" >&2
    fi
    n=$((n + 1))
  done
done
if [ -e "$T/out.html" ]; then fail "a page was written for a bad profile"; fi
if [ "$n" -le 60 ]; then fail "only $n runs"; fi
finish
