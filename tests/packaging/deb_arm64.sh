# The arm64 Debian packages, cross-built as make deb builds them
# (scripts/deb.sh --arch arm64: dpkg-buildpackage -a arm64 -Pcross,nocheck),
# read without installing them: lintian finds no error, libcprof0 holds an
# aarch64 library with the soname libcprof.so.0, libcprof-dev the header,
# cprof.pc and the CMake package, cprof an aarch64 command that depends on
# libgvc6 (loaded at run time) and, run under qemu, reads a profile as the
# host's command does, and the library's dynamic symbols are those
# debian/libcprof0.symbols lists (dpkg-gensymbols checks that while
# building). They are run under
# qemu by tests/arm64, from the same sources, not from these packages:
# installing an arm64 package needs an arm64 machine.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

for tool in dpkg-buildpackage dh lintian aarch64-linux-gnu-gcc; do
  command -v "$tool" >/dev/null ||
    skip "$tool is missing (scripts/install-deps.sh deb-arm64 installs it)"
done
dpkg --print-foreign-architectures | grep -qx arm64 ||
  skip "dpkg has no arm64 architecture (scripts/install-deps.sh deb-arm64 adds it)"
git -C "$CPROF_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1 ||
  skip "scripts/deb.sh copies the tree with git, and $CPROF_SOURCE_DIR is not a checkout"

start_s=$SECONDS
check "scripts/deb.sh --arch arm64 cross-builds the three packages, and lintian finds no error" \
  bash -c "'$CPROF_SOURCE_DIR/scripts/deb.sh' --out '$T/deb' --arch arm64 >'$T/deb.log' 2>&1"
echo "     (built and linted in $((SECONDS - start_s)) s)"
[ "$FAILS" = 0 ] || { tail -40 "$T/deb.log" >&2; finish || exit 1; }

lib=$(find "$T/deb" -maxdepth 1 -name 'libcprof0_*_arm64.deb' | head -1)
dev=$(find "$T/deb" -maxdepth 1 -name 'libcprof-dev_*_arm64.deb' | head -1)
cli=$(find "$T/deb" -maxdepth 1 -name 'cprof_*_arm64.deb' | head -1)
check "libcprof0, libcprof-dev and cprof for arm64 are there" test -f "$lib" -a -f "$dev" -a -f "$cli"
[ "$FAILS" = 0 ] || { finish || exit 1; }
dpkg-deb -x "$lib" "$T/lib"
dpkg-deb -x "$dev" "$T/dev"
so=$(find "$T/lib/usr/lib/aarch64-linux-gnu" -name 'libcprof.so.0.*' | head -1)
check "libcprof0 installs /usr/lib/aarch64-linux-gnu/libcprof.so.0.*" test -f "$so"
check "the library is an AArch64 shared object" bash -c "readelf -h '$so' | grep -q 'Machine:.*AArch64'"
check "its soname is libcprof.so.0" bash -c "readelf -d '$so' | grep -q 'SONAME.*\[libcprof\.so\.0\]'"
check "libcprof0's control says Architecture: arm64 and Multi-Arch: same" \
  bash -c "[ \"\$(dpkg-deb -f '$lib' Architecture)\" = arm64 ] && [ \"\$(dpkg-deb -f '$lib' Multi-Arch)\" = same ]"
for f in usr/include/cprof.h usr/lib/aarch64-linux-gnu/pkgconfig/cprof.pc \
  usr/lib/aarch64-linux-gnu/cmake/cprof/cprofConfig.cmake; do
  check "libcprof-dev holds /$f" test -f "$T/dev/$f"
done
check "libcprof-dev's libcprof.so links to libcprof0's libcprof.so.0" \
  test "$(readlink "$T/dev/usr/lib/aarch64-linux-gnu/libcprof.so")" = libcprof.so.0
check "cprof.pc names /usr and the aarch64 library directory" \
  bash -c "grep -q '^prefix=/usr' '$T/dev/usr/lib/aarch64-linux-gnu/pkgconfig/cprof.pc' &&
           grep -q 'aarch64-linux-gnu' '$T/dev/usr/lib/aarch64-linux-gnu/pkgconfig/cprof.pc'"
dpkg-deb -x "$cli" "$T/cli"
check "cprof installs /usr/bin/cprof, an AArch64 program" \
  bash -c "readelf -h '$T/cli/usr/bin/cprof' | grep -q 'Machine:.*AArch64'"
check "cprof depends on libcprof0 of its version and on libgvc6" \
  bash -c "dpkg-deb -f '$cli' Depends | grep -q 'libcprof0 (= ' && dpkg-deb -f '$cli' Depends | grep -qw libgvc6"
check "cprof does not link Graphviz (it loads it when it draws)" \
  bash -c "! readelf -d '$T/cli/usr/bin/cprof' | grep -q 'NEEDED.*libgvc'"
# The arm64 command at work, under qemu: its top of an x86-64 program's CPU
# profile is the host command's, byte for byte (a profile is the same
# bytes whoever wrote it).
if command -v qemu-aarch64 >/dev/null; then
  dpkg-deb -x "$lib" "$T/cli"
  start target --ready LD_PRELOAD="$LIB" -- "$B/tests/integration/cpu_target"
  check "a CPU profile of an x86-64 program" \
    curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=1"
  stop
  "$B/cprof" top "$T/cpu.pb.gz" >"$T/top.host" 2>&1
  qemu-aarch64 -E LD_LIBRARY_PATH="$T/cli/usr/lib/aarch64-linux-gnu" \
    "$T/cli/usr/bin/cprof" top "$T/cpu.pb.gz" >"$T/top.arm64" 2>&1
  check "the arm64 cprof's top, under qemu, is the host's byte for byte" \
    bash -c "grep -q flat% '$T/top.host' && cmp -s '$T/top.host' '$T/top.arm64'"
fi
check "cprof_start is among the library's dynamic symbols" \
  bash -c "readelf --dyn-syms -W '$so' | grep -q ' cprof_start\$'"
finish
