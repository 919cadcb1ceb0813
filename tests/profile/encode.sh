#!/usr/bin/env bash
# The model's encoder (src/model/encode.c) judged by pprof itself: a
# profile decoded by cprof and encoded again must read, in
# `go tool pprof -raw`, exactly as the file it came from.
#
# The profiles are pprof's own test data (profile/testdata and
# internal/driver/testdata): the one profile.proto there as it is, and every
# other file pprof can read (legacy text and Go's binary CPU format)
# converted by `go tool pprof -proto`, so that they are pprof's encoder's
# output. profile_test_encode --round-trip also checks the converted ones
# field by field (decode, encode, decode).
#
# Needs CPROF_BUILD_DIR (ctest sets it); go on PATH or in /usr/lib/go/bin.
set -euo pipefail

build=${CPROF_BUILD_DIR:?set CPROF_BUILD_DIR to the build directory}
bin=$build/tests/profile_test_encode
pprof_src=${CPROF_PPROF_SRC:-/usr/share/gocode/src/github.com/google/pprof}
PATH=$PATH:/usr/lib/go/bin

failures=0
checked=0
fail() {
  echo "encode.sh: FAIL: $*" >&2
  failures=$((failures + 1))
}
die() {
  echo "encode.sh: FAIL: $*" >&2
  exit 1
}

[[ -x $bin ]] || die "$bin is not built (target profile_test_encode)"
command -v go >/dev/null || die "go not found (Debian: golang-go)"
[[ -d $pprof_src/profile/testdata ]] || die "no pprof test data in $pprof_src"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# go tool pprof writes its cache and history under these; no binary is
# looked for (the profiles' binaries are not here), nothing symbolized.
export PPROF_TMPDIR=$tmp/pprof HOME=$tmp/home PPROF_BINARY_PATH=$tmp/nobin
mkdir -p "$PPROF_TMPDIR" "$HOME" "$tmp/conv" "$tmp/nobin"

pprof() { go tool pprof -symbolize=none "$@"; }

# pprof's test data: a file pprof reads is kept, as it is when it is
# profile.proto already (gzip or not), else converted.
n_files=0
for f in "$pprof_src"/profile/testdata/* "$pprof_src"/internal/driver/testdata/*; do
  [[ -f $f ]] || continue
  n_files=$((n_files + 1))
  name=$(basename "$(dirname "$(dirname "$f")")").$(basename "$f")
  if pprof -proto "$f" >"$tmp/conv/$name.pb.gz" 2>/dev/null && [[ -s $tmp/conv/$name.pb.gz ]]; then
    if [[ $(head -c2 "$f" | od -An -tx1 | tr -d ' ') == 1f8b ]]; then
      cp "$f" "$tmp/conv/$name.orig.pb.gz" # already profile.proto: as it is, too
    fi
  else
    rm -f "$tmp/conv/$name.pb.gz"
  fi
done
n_conv=$(find "$tmp/conv" -type f | wc -l)
echo "encode.sh: $n_conv profiles from $n_files files of pprof's test data"
# A dozen of pprof's test files are profiles; fewer means the walk missed them.
((n_conv >= 10)) || die "only $n_conv profiles from $pprof_src's test data (want 10 or more)"

# Field by field, through the C test's own comparison.
"$bin" --round-trip "$n_conv" "$tmp/conv" 2>"$tmp/rt.err" ||
  fail "round trip through the model: $(cat "$tmp/rt.err")"

for f in "$tmp"/conv/*; do
  name=$(basename "$f")
  if ! "$bin" --reencode "$f" "$tmp/re.pb.gz" 2>"$tmp/re.err"; then
    fail "$name: cprof cannot re-encode it: $(cat "$tmp/re.err")"
    continue
  fi
  pprof -raw "$f" >"$tmp/a.raw" 2>"$tmp/a.err" || {
    fail "$name: pprof -raw on the original: $(cat "$tmp/a.err")"
    continue
  }
  pprof -raw "$tmp/re.pb.gz" >"$tmp/b.raw" 2>"$tmp/b.err" || {
    fail "$name: pprof -raw on the re-encoded: $(cat "$tmp/b.err")"
    continue
  }
  [[ -s $tmp/a.raw ]] && grep -q '^Samples:' "$tmp/a.raw" ||
    fail "$name: pprof -raw printed no samples for the original"
  if ! diff -u "$tmp/a.raw" "$tmp/b.raw" >"$tmp/diff"; then
    fail "$name: pprof -raw differs for the re-encoded profile:
$(head -n 40 "$tmp/diff")"
  fi
  checked=$((checked + 1))
done

((checked == n_conv)) || fail "only $checked of $n_conv profiles compared"
if ((failures > 0)); then
  echo "encode.sh: $failures failure(s)" >&2
  exit 1
fi
echo "encode.sh: ok, $checked profiles read the same in go tool pprof -raw after re-encoding"
