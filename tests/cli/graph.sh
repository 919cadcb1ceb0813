# cprof graph: a real CPU profile drawn as SVG (well-formed XML naming the
# hot function), DOT (Graphviz's dot reads it), PNG (its signature), with
# the same nodes `go tool pprof -dot` keeps; names with any bytes still
# give well-formed SVG; bad arguments are usage errors.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

command -v dot >/dev/null || skip "no Graphviz dot (graphviz package)"
command -v go >/dev/null || skip "no go tool pprof (golang-go)"
C=$B/cprof

start target --ready LD_PRELOAD="$LIB" -- "$B/tests/integration/cpu_target"
curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2"
stop
start heap --ready LD_PRELOAD="$LIB" CPROF_HEAP_RATE=4096 -- "$B/tests/integration/heap_target"
curl -sf -o "$T/heap.pb.gz" "http://$ADDR/debug/pprof/heap"
stop

check "svg: written" "$C" graph "$T/cpu.pb.gz" -o "$T/g.svg"
check "svg: well-formed XML" python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$T/g.svg"
check "svg: names the hot function" has "$T/g.svg" '>heavy_work<'
check "svg: has the legend" has "$T/g.svg" 'Showing nodes accounting for'
check "dot: written" "$C" graph "$T/cpu.pb.gz" -o "$T/g.dot"
check "dot: Graphviz reads it" dot -Tsvg -o "$T/dot.svg" "$T/g.dot"
check "png: written" "$C" graph "$T/cpu.pb.gz" -o "$T/g.png"
check "png: PNG signature" [ "$(head -c 8 "$T/g.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]

# The outside judge: the nodes pprof -dot keeps (each node's first label
# line; pprof's nodelets, boxes for labels, are left out), for the CPU
# profile and the heap profile's alloc_space with small fractions.
nodes() { sed -n 's/^N[0-9]* \[label="\([^"\\]*\)\\n.*/\1/p' "$1" | sort; }
same_nodes() {
  local what=$1 src=$2
  shift 2
  pprof -dot "$@" "$src" >"$T/p.dot" || return 1
  local args=() a n
  for a in "$@"; do
    a=${a#-}
    case $a in
    *=*) n=${a%%=*}; args+=("--${n//_/-}=${a#*=}") ;;
    *) args+=("--$a") ;;
    esac
  done
  "$C" graph "$src" -o "$T/c.dot" "${args[@]}" || return 1
  nodes "$T/p.dot" >"$T/p.nodes"
  nodes "$T/c.dot" >"$T/c.nodes"
  [ -s "$T/p.nodes" ] || return 1
  diff "$T/p.nodes" "$T/c.nodes" >&2
}
check "cpu: the nodes pprof -dot keeps" same_nodes cpu "$T/cpu.pb.gz"
check "cpu: the same node lines as pprof -dot" cmp -s \
  <(grep '^N[0-9]* \[label' "$T/p.dot") <(grep '^N[0-9]* \[label' "$T/c.dot")
check "cpu: the same edges as pprof -dot" cmp -s \
  <(grep '^N[0-9]* -> N[0-9]* ' "$T/p.dot") <(grep '^N[0-9]* -> N[0-9]* ' "$T/c.dot")
# (Not compared with pprof: pprof counts a node's label boxes against
# -nodecount, and cprof graph draws no label boxes yet.)
same_nodes cpu3 "$T/cpu.pb.gz" -nodecount=3 || true
check "cpu --nodecount 3: says so" has "$T/c.dot" 'Showing top 3 nodes out of'
check "heap alloc_space: the nodes pprof -dot keeps" same_nodes heap "$T/heap.pb.gz" \
  -sample_index=alloc_space
check "heap --lines: the nodes pprof -dot keeps" same_nodes heaplines "$T/heap.pb.gz" -lines

# Names holding markup, quotes, backslashes, newlines, control characters
# and bytes that are not UTF-8, in a profile made here.
python3 - "$T/evil.pb" <<'PY'
import sys
def varint(v):
    out = b''
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])
def field(n, data):  # length-delimited
    return varint(n << 3 | 2) + varint(len(data)) + data
def num(n, v):
    return varint(n << 3) + varint(v)
strings = [b'', b'cpu', b'nanoseconds', b'<main & "x">', b'back\\slash\nnew\x01line\xff\xfe',
           b'a]]>b</text><script>', b'/t/evil&.c']
p = b''
p += field(1, num(1, 1) + num(2, 2))                      # sample_type cpu/nanoseconds
for fid, name in ((1, 3), (2, 4), (3, 5)):
    p += field(5, num(1, fid) + num(2, name) + num(4, 6))  # function
    p += field(4, num(1, fid) + field(4, num(1, fid) + num(2, 7)))  # location with a line
p += field(2, field(1, varint(3) + varint(2) + varint(1)) + field(2, varint(100)))
p += field(2, field(1, varint(2) + varint(1)) + field(2, varint(50)))
for s in strings:
    p += field(6, s)
open(sys.argv[1], 'wb').write(p)
PY
check "odd names: svg written" "$C" graph "$T/evil.pb" -o "$T/evil.svg" --nodefraction 0
check "odd names: well-formed XML" python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$T/evil.svg"
check "odd names: markup shown as text" has "$T/evil.svg" '&lt;main &amp; &quot;x&quot;&gt;'
check "odd names: dot written" "$C" graph "$T/evil.pb" -o "$T/evil.dot"
check "odd names: Graphviz reads the dot" dot -Tsvg -o "$T/evil2.svg" "$T/evil.dot"

run help -- "$C" graph --help
check "--help: exit 0" rc_is help 0
check "--help: usage" has "$T/help.out" '^usage: cprof graph'
run noout -- "$C" graph "$T/cpu.pb.gz"
check "no -o: usage error" rc_is noout 2
run badfmt -- "$C" graph "$T/cpu.pb.gz" -o "$T/x.gif"
check "unknown format: usage error" rc_is badfmt 2
run missing -- "$C" graph "$T/nothere.pb.gz" -o "$T/x.svg"
check "missing file: exit 1" rc_is missing 1
check "missing file: one line naming it" [ "$(wc -l <"$T/missing.err")" = 1 ]
check "missing file: cprof graph: prefix" has "$T/missing.err" '^cprof graph: .*nothere'
printf 'garbage' >"$T/garbage"
run garbage -- "$C" graph "$T/garbage" -o "$T/x.svg"
check "not a profile: exit 1" rc_is garbage 1
run badidx -- "$C" graph "$T/cpu.pb.gz" -o "$T/x.svg" --sample-index nosuch
check "unknown sample index: exit 1" rc_is badidx 1
finish
