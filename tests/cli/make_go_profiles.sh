# Profiles written by Go itself (tests/cli/goprog/main.go, runtime/pprof),
# for comparing the cprof command with `go tool pprof` on profiles we did not
# write. Builds goprog with Debian's golang-go offline (GOPATH mode, no
# modules, nothing downloaded) and runs it once per test run.
#
# In a test, after sourcing tests/integration/lib.sh:
#
#   . "$CPROF_SOURCE_DIR/tests/cli/make_go_profiles.sh"
#   go_profiles            # sets $GOPROF; skips the test (exit 77) if go is missing
#   cprof top "$GOPROF/heap.pb.gz" ...
#
# $GOPROF then holds cpu.pb.gz, heap.pb.gz, allocs.pb.gz, goroutine.pb.gz,
# block.pb.gz, mutex.pb.gz and threadcreate.pb.gz (goprog's header lists the
# function names in each). They are made once under $T and reused by later
# calls in the same test; CPROF_GO_PROFILES=DIR uses DIR instead, filled if
# it is empty (a directory kept across runs saves the 2-3 s of building).
#
# As a command:
#
#   tests/cli/make_go_profiles.sh DIR [GOPROG ARGS...]    e.g. -cpu 3s
#
# writes the profiles into DIR; exit 0, or 1 with a message on stderr.

# make_go_profiles DIR [GOPROG ARGS...]: builds goprog into DIR/.build and
# writes the profiles into DIR, unless DIR/.done says an earlier call did.
make_go_profiles() {
  local dir=$1 src
  shift
  src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/goprog/main.go
  [ -e "$dir/.done" ] && return 0
  if ! command -v go >/dev/null 2>&1; then
    echo "make_go_profiles: no go command (Debian package golang-go)" >&2
    return 1
  fi
  mkdir -p "$dir/.build"
  # GOPATH mode on one file needs no go.mod and no network; the caches stay
  # in DIR so that nothing is written to $HOME or shared between tests.
  # GOTOOLCHAIN=local stops a newer go from fetching another toolchain.
  if ! env GO111MODULE=off GOPATH="$dir/.build/gopath" GOCACHE="$dir/.build/cache" \
    GOPROXY=off GOFLAGS= GOENV=off GOTOOLCHAIN=local CGO_ENABLED=0 \
    go build -o "$dir/.build/goprog" "$src" >"$dir/.build/log" 2>&1; then
    echo "make_go_profiles: go build failed:" >&2
    cat "$dir/.build/log" >&2
    return 1
  fi
  if ! "$dir/.build/goprog" "$@" "$dir" 2>"$dir/.build/log"; then
    echo "make_go_profiles: goprog failed:" >&2
    cat "$dir/.build/log" >&2
    return 1
  fi
  touch "$dir/.done"
}

# go_profiles: for tests; sets GOPROF (see the top of this file).
go_profiles() {
  command -v go >/dev/null 2>&1 || skip "no go command (Debian package golang-go)"
  GOPROF=${CPROF_GO_PROFILES:-$T/go-profiles}
  make_go_profiles "$GOPROF"
}

# Run as a command rather than sourced.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  if [ $# -lt 1 ] || [ "$1" = --help ] || [ "$1" = -h ]; then
    echo "usage: $0 DIR [GOPROG ARGS...]" >&2
    exit 2
  fi
  make_go_profiles "$@"
fi
