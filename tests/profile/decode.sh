#!/usr/bin/env bash
# The profile builder's output, read by independent decoders: protoc (the
# wire format against profile.proto itself) and go tool pprof (the client
# every profile must satisfy), for both the protobuf and the debug=1 text.
#
# Needs CPROF_BUILD_DIR (ctest sets it) and CPROF_SOURCE_DIR (defaults to
# this checkout); protoc and go on PATH.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=${CPROF_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
build=${CPROF_BUILD_DIR:?set CPROF_BUILD_DIR to the build directory}
bin=$build/tests/profile_test_builder
proto_dir=${CPROF_PROFILE_PROTO_DIR:-/usr/share/gocode/src/github.com/google/pprof/proto}
test_src=$src/tests/profile/test_builder.c

failures=0
fail() {
  echo "decode.sh: FAIL: $*" >&2
  failures=$((failures + 1))
}
die() {
  echo "decode.sh: FAIL: $*" >&2
  exit 1
}

[[ -x $bin ]] || die "$bin is not built (target profile_test_builder)"
command -v protoc >/dev/null || die "protoc not found (Debian: protobuf-compiler)"
command -v go >/dev/null || die "go not found (Debian: golang-go)"
[[ -f $proto_dir/profile.proto ]] || die "no profile.proto in $proto_dir"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# go tool pprof writes its cache and history under these.
export PPROF_TMPDIR=$tmp/pprof HOME=$tmp/home
mkdir -p "$PPROF_TMPDIR" "$HOME"

"$bin" --write "$tmp/p.pb.gz" --write-text "$tmp/p.txt" ||
  die "$bin --write failed"

# The source lines the test program's calls are on, found in its source
# rather than trusted from the program.
line_of() {
  local n
  n=$(grep -n -F "$1" "$test_src" | head -n1 | cut -d: -f1)
  [[ -n $n ]] || die "cannot find '$1' in $test_src"
  echo "$n"
}
alpha_call=$(line_of 'ptest_leaf_alpha(pcs); line_alpha_call = __LINE__;')
theta_call=$(line_of 'ptest_leaf_theta(pcs); line_theta_call = __LINE__;')

# ---- (a) protoc ----

gunzip -c "$tmp/p.pb.gz" >"$tmp/p.pb" || die "the profile is not gzip"
protoc --decode=perftools.profiles.Profile -I"$proto_dir" profile.proto \
  <"$tmp/p.pb" >"$tmp/p.decoded" 2>"$tmp/protoc.err" ||
  die "protoc cannot decode the profile: $(cat "$tmp/protoc.err")"

# string_table[0] must be "".
first_string=$(grep -m1 '^string_table: ' "$tmp/p.decoded" || true)
[[ $first_string == 'string_table: ""' ]] ||
  fail "string_table[0] is not \"\": $first_string"

# Mapping, Location and Function IDs run 1..N in order, each message has
# one, and every sample has one value per sample type.
awk '
  /^(mapping|location|function) \{$/ { kind = $1; blocks[kind]++; next }
  /^sample_type \{$/ { ntypes++ }
  /^sample \{$/ { in_sample = 1; values = 0; next }
  in_sample && /^  value: / { values++ }
  /^}$/ {
    if (in_sample && values != ntypes) { print "a sample has " values " values for " ntypes " sample types"; bad = 1 }
    in_sample = 0; kind = ""
  }
  kind != "" && /^  id: / {
    ids[kind]++
    if ($2 != ids[kind]) { print kind " #" ids[kind] " has id " $2; bad = 1 }
  }
  END {
    for (k in blocks) if (ids[k] != blocks[k]) { print k ": " blocks[k] " messages, " ids[k] " ids"; bad = 1 }
    if (blocks["mapping"] < 1 || blocks["location"] < 1 || blocks["function"] < 1) { print "missing mappings, locations or functions"; bad = 1 }
    exit bad
  }' "$tmp/p.decoded" >"$tmp/ids.err" || fail "IDs or values: $(cat "$tmp/ids.err")"

# The strings, in order (index = line number - 1).
sed -n 's/^string_table: "\(.*\)"$/\1/p' "$tmp/p.decoded" >"$tmp/strings"
string_at() { sed -n "$(($1 + 1))p" "$tmp/strings"; }

# Mapping 1 is the test program itself (pprof's "File:" line).
m1_file=$(awk '/^mapping \{$/ { m = 1; next } m && /^  filename: / { print $2; exit } /^}$/ { m = 0 }' "$tmp/p.decoded")
[[ -n $m1_file ]] || fail "mapping 1 has no filename"
self=$(readlink -f "$bin")
[[ -n $m1_file && "$(string_at "$m1_file")" == "$self" ]] ||
  fail "mapping 1 is '$(string_at "${m1_file:-0}")', want '$self'"
grep -A12 -m1 '^mapping {' "$tmp/p.decoded" | grep -q '^  has_functions: true' ||
  fail "mapping 1 lacks has_functions: pprof would ask the server to symbolize"

for fn in ptest_leaf_alpha ptest_leaf_delta ptest_leaf_theta ptest_mid_beta ptest_top_gamma \
  ptest_inlined_eps ptest_outer_zeta; do
  grep -qx -F "$fn" "$tmp/strings" || fail "function name $fn not in the string table"
done

# ---- (b) go tool pprof on the protobuf ----

go tool pprof -raw "$tmp/p.pb.gz" >"$tmp/raw.txt" 2>"$tmp/raw.err" ||
  die "go tool pprof -raw failed: $(cat "$tmp/raw.err")"
go tool pprof -traces -lines "$tmp/p.pb.gz" >"$tmp/traces.txt" 2>"$tmp/traces.err" ||
  die "go tool pprof -traces failed: $(cat "$tmp/traces.err")"

for out in raw traces; do
  f=$tmp/$out.txt
  grep -q "ptest_mid_beta .*test_builder\.c:$alpha_call\b" "$f" ||
    fail "pprof -$out does not show ptest_mid_beta at test_builder.c:$alpha_call"
  grep -q "ptest_inlined_eps .*test_builder\.c:$theta_call\b" "$f" ||
    fail "pprof -$out does not show the inlined ptest_inlined_eps at test_builder.c:$theta_call"
  for fn in ptest_leaf_alpha ptest_leaf_delta ptest_leaf_theta ptest_top_gamma ptest_outer_zeta; do
    grep -q "$fn .*test_builder\.c:[0-9]" "$f" || fail "pprof -$out does not show $fn with file:line"
  done
done
grep -q "^File: profile_test_builder$" "$tmp/traces.txt" ||
  fail "pprof does not name the program: $(grep '^File:' "$tmp/traces.txt" || echo 'no File: line')"
grep -q 'ptest_inlined_eps .*(inline)' "$tmp/traces.txt" ||
  fail "pprof -traces does not mark ptest_inlined_eps as inlined"
if grep -qi 'symboliz' "$tmp/raw.err" "$tmp/traces.err"; then
  fail "pprof tried to symbolize: $(cat "$tmp/raw.err" "$tmp/traces.err")"
fi

# ---- (c) go tool pprof on the debug=1 text ----

go tool pprof -raw "$tmp/p.txt" >"$tmp/rawtext.txt" 2>"$tmp/rawtext.err" ||
  die "go tool pprof -raw cannot read the debug=1 text: $(cat "$tmp/rawtext.err")"

# The text is aligned the way Go's text/tabwriter aligns it (printCountProfile
# writes through tabwriter.NewWriter(w, 1, 8, 1, '\t', 0)): collapsing each
# run of tabs to one and running that through Go's tabwriter gives it back.
grep -qP '\t\t' "$tmp/p.txt" || fail "the text has no column padded by more than one tab to check"
mkdir -p "$tmp/tw"
cat >"$tmp/tw/main.go" <<'EOF'
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"text/tabwriter"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		panic(err)
	}
	plain := regexp.MustCompile("\t+").ReplaceAll(in, []byte("\t"))
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 1, 8, 1, '\t', 0)
	tw.Write(plain)
	tw.Flush()
	if !bytes.Equal(out.Bytes(), in) {
		fmt.Printf("%s", out.String())
		os.Exit(1)
	}
}
EOF
(cd "$tmp/tw" && GOCACHE=$tmp/gocache GO111MODULE=off go run main.go) \
  <"$tmp/p.txt" >"$tmp/tw.out" 2>&1 ||
  fail "the debug=1 text is not aligned as Go's tabwriter aligns it; Go would write:
$(cat "$tmp/tw.out")"

# Each stack as its addresses with its count, summed over samples with the
# same stack (the text format carries no labels for pprof), sorted.
stacks() {
  awk '
    /^Samples:/ { s = 1; next }
    /^Locations/ { s = 0; l = 1; next }
    /^Mappings/ { l = 0 }
    s && /^ *[0-9]+: [0-9 ]+$/ { sub(/:/, "", $1); n++; count[n] = $1; ids[n] = ""; for (i = 2; i <= NF; i++) ids[n] = ids[n] " " $i }
    l && /^ *[0-9]+: 0x[0-9a-f]+/ { sub(/:/, "", $1); addr[$1] = $2 }
    END {
      for (i = 1; i <= n; i++) {
        k = split(ids[i], a, " "); key = ""
        for (j = 1; j <= k; j++) key = key " " addr[a[j]]
        sum[key] += count[i]
      }
      for (key in sum) print sum[key] key
    }' "$1" | sort
}
stacks "$tmp/raw.txt" >"$tmp/stacks.pb"
stacks "$tmp/rawtext.txt" >"$tmp/stacks.text"
[[ -s $tmp/stacks.pb ]] || fail "no stacks read from the protobuf's -raw output"
diff -u "$tmp/stacks.pb" "$tmp/stacks.text" >"$tmp/stacks.diff" ||
  fail "the text and the protobuf profiles differ (count and addresses per stack):
$(cat "$tmp/stacks.diff")"

if ((failures > 0)); then
  echo "decode.sh: $failures failure(s); pprof -traces said:" >&2
  cat "$tmp/traces.txt" >&2
  exit 1
fi
echo "decode.sh: ok"
