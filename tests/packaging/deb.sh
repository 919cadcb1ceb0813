# The Debian packages, installed as a person installs them: built by
# scripts/deb.sh (as make deb builds them; lintian must find no error), put
# on this machine with dpkg -i, then used with nothing from the build tree:
# a program built with pkg-config --cflags --libs cprof, one built with
# CMake's find_package(cprof), an unmodified program under
# LD_PRELOAD=libcprof.so.0, and the installed cprof command. Then
# dpkg --purge, and nothing of the packages may be left.
#
# This installs into the machine's own root, not a clean one: only root
# can, and only where none of the three packages is installed already (a
# machine using cprof is left alone), and a trap purges them on every
# exit. A clean root was weighed: dpkg --root needs a whole Debian system
# under it (debootstrap: a download and minutes), and unpacking with
# dpkg -x tests neither dpkg's dependencies, its ldconfig trigger nor the
# paths a person's compiler and loader search, which are what this test is
# for. CPROF_DEBS=DIR uses the packages make deb left in DIR instead of
# building them.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

PKGS=(libcprof0 libcprof-dev cprof)
[ "$(id -u)" = 0 ] || skip "installing packages needs root"
for tool in dpkg-buildpackage dh lintian; do
  command -v "$tool" >/dev/null || skip "$tool is missing (scripts/install-deps.sh test installs it)"
done
git -C "$CPROF_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1 ||
  skip "scripts/deb.sh copies the tree with git, and $CPROF_SOURCE_DIR is not a checkout"
installed() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -qv '^[up]n'; }
not_installed() { ! installed "$1"; }
for p in "${PKGS[@]}"; do
  installed "$p" && skip "$p is installed here already: this test would remove it"
done

# Purged on every exit once dpkg -i has begun, before lib.sh's cleanup
# (which keeps the exit code it is handed). bash runs no EXIT trap when a
# signal ends it, so SIGTERM, SIGINT and SIGHUP become exits. (ctest's
# timeout kills with SIGKILL, which nothing can catch: the steps after
# dpkg -i are bounded, a minute at most, and the unbounded one, the
# package build, comes before it.)
INSTALLED=0
purge() { [ $INSTALLED = 0 ] || dpkg --purge "${PKGS[@]}" >"$T/purge.log" 2>&1 || true; }
trap 'rc=$?; purge; (exit $rc); cleanup' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

if [ -n "${CPROF_DEBS:-}" ]; then
  DEBS=$CPROF_DEBS
else
  DEBS=$T/deb
  start_s=$SECONDS
  check "scripts/deb.sh builds the packages, and lintian finds no error" \
    bash -c "'$CPROF_SOURCE_DIR/scripts/deb.sh' --out '$DEBS' >'$T/deb.log' 2>&1"
  echo "     (built and linted in $((SECONDS - start_s)) s)"
  [ "$FAILS" = 0 ] || { tail -40 "$T/deb.log" >&2; finish || exit 1; }
fi
arch=$(dpkg --print-architecture)
debs=()
for p in "${PKGS[@]}"; do debs+=("$(find "$DEBS" -maxdepth 1 -name "${p}_*_$arch.deb" | sort | tail -1)"); done
check "the three packages are there" test -f "${debs[0]}" -a -f "${debs[1]}" -a -f "${debs[2]}"
[ "$FAILS" = 0 ] || { finish || exit 1; }

INSTALLED=1
check "dpkg -i installs them" bash -c "dpkg -i ${debs[*]} >'$T/install.log' 2>&1"
for p in "${PKGS[@]}"; do check "$p is installed" installed "$p"; done
check "the loader's cache has libcprof.so.0 (ldconfig trigger)" \
  bash -c "ldconfig -p | grep -q 'libcprof\.so\.0 '"

# Nothing of the build tree from here on: no search path of ours, the
# installed files only.
unset PKG_CONFIG_PATH LD_LIBRARY_PATH LIBRARY_PATH CPATH CMAKE_PREFIX_PATH
CPROF=/usr/bin/cprof
check "the cprof command is /usr/bin/cprof" test -x "$CPROF"
check "cprof --version says $(dpkg-parsechangelog -l "$CPROF_SOURCE_DIR/debian/changelog" -S Version)" \
  bash -c "$CPROF --version | grep -qF '$(dpkg-parsechangelog -l "$CPROF_SOURCE_DIR/debian/changelog" -S Version)'"

# A program that burns CPU in a function of its own until it is stopped,
# linked with the library (LINKED) or knowing nothing of it.
cat >"$T/burn.c" <<'C'
#ifdef LINKED
#include <cprof.h>
#endif
#include <stdio.h>

__attribute__((noinline)) static double burn_in_packaged_test(double x) {
  for (int i = 0; i < 1000000; i++) x = x * 1.0000001 + 1e-9;
  return x;
}

int main(void) {
#ifdef LINKED
  if (cprof_start(NULL) != 0) return 1;
#endif
  volatile double x = 1;
  for (;;) x = burn_in_packaged_test(x);
}
C

# profile NAME: with the program NAME serving at $ADDR, its index answers
# and its CPU profile, read by the installed cprof top, names the function
# it burns in.
profile() {
  local name=$1
  check "$name: /debug/pprof/ answers 200" [ "$(http "http://$ADDR/debug/pprof/")" = 200 ]
  check "$name: a 1 s CPU profile is fetched" \
    curl -sf -o "$T/$name.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=1"
  check "$name: the installed cprof top reads it" \
    bash -c "$CPROF top '$T/$name.pb.gz' >'$T/$name.top' 2>'$T/$name.top.err'"
  check "$name: and names burn_in_packaged_test" has "$T/$name.top" 'burn_in_packaged_test'
}

# uses_installed PROGRAM: the loader finds libcprof.so.0 in the system's
# library directory.
uses_installed() {
  ldd "$1" | grep -Eq "libcprof\.so\.0 => /(usr/)?lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libcprof\.so\.0 "
}

# 1. pkg-config, as the README says: no -I, -L or rpath of ours.
# shellcheck disable=SC2046
check "pkg-config --cflags --libs cprof: $(pkg-config --cflags --libs cprof 2>&1)" \
  gcc -O1 -g -fno-omit-frame-pointer -DLINKED -o "$T/burn_pc" "$T/burn.c" $(pkg-config --cflags --libs cprof)
check "pkg-config: the program loads the installed library" uses_installed "$T/burn_pc"
if start pc -- "$T/burn_pc"; then profile pc; stop "$PID"; else fail "pc: serves"; fi
# The command's other libraries at run time: Graphviz's layout and SVG
# renderer (plugins that libgvc loads from its own directory).
check "the installed cprof graph draws an SVG with the function in it" \
  bash -c "$CPROF graph '$T/pc.pb.gz' -o '$T/pc.svg' 2>'$T/graph.err' && grep -q burn_in_packaged_test '$T/pc.svg'"

# 2. CMake: find_package(cprof) and the imported target cprof::cprof.
mkdir -p "$T/cm"
cp "$T/burn.c" "$T/cm/burn.c"
cat >"$T/cm/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(burn C)
find_package(cprof 0.3 REQUIRED)
add_executable(burn_cmake burn.c)
target_compile_definitions(burn_cmake PRIVATE LINKED)
target_compile_options(burn_cmake PRIVATE -O1 -g -fno-omit-frame-pointer)
target_link_libraries(burn_cmake PRIVATE cprof::cprof)
CMAKE
check "cmake: find_package(cprof) configures" \
  bash -c "cmake -S '$T/cm' -B '$T/cm/b' >'$T/cm.log' 2>&1"
check "cmake: the program builds against cprof::cprof" \
  bash -c "cmake --build '$T/cm/b' >>'$T/cm.log' 2>&1"
check "cmake: the program loads the installed library" uses_installed "$T/cm/b/burn_cmake"
if start cmake -- "$T/cm/b/burn_cmake"; then profile cmake; stop "$PID"; else fail "cmake: serves"; fi

# 3. An unmodified program: LD_PRELOAD by soname, found where the package
# put it; then the same program under the installed cprof run.
gcc -O1 -g -fno-omit-frame-pointer -o "$T/burn_plain" "$T/burn.c"
check "the plain program does not link libcprof" bash -c "! ldd '$T/burn_plain' | grep -q libcprof"
if start preload LD_PRELOAD=libcprof.so.0 -- "$T/burn_plain"; then profile preload; stop "$PID"; else fail "preload: serves"; fi
if start run -- "$CPROF" run --addr 127.0.0.1:0 -- "$T/burn_plain"; then
  profile run
  stop "$PID"
else
  fail "cprof run: serves"
fi

# 4. dpkg --purge leaves nothing: no package, no file, no cache entry.
for d in "${debs[@]}"; do dpkg -c "$d"; done | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' >"$T/files"
check "the packages list files ($(wc -l <"$T/files"))" [ -s "$T/files" ]
check "dpkg --purge removes them" bash -c "dpkg --purge ${PKGS[*]} >'$T/purge.log' 2>&1"
INSTALLED=0
for p in "${PKGS[@]}"; do check "$p is gone from dpkg's database" not_installed "$p"; done
gone() {
  local f
  while read -r f; do
    if [ -e "$f" ] || [ -L "$f" ]; then echo "left: $f" >&2; return 1; fi
  done <"$T/files"
}
check "none of their files is left" gone
check "nor the docs' directories" bash -c "! ls -d /usr/share/doc/libcprof0 /usr/share/doc/libcprof-dev /usr/share/doc/cprof /usr/lib/*/cmake/cprof 2>/dev/null | grep -q ."
check "the loader's cache no longer has libcprof" bash -c "! ldconfig -p | grep -q libcprof"
check "pkg-config no longer knows cprof" bash -c "! pkg-config --exists cprof"

finish
