#!/usr/bin/env bash
# Builds cprof's Debian packages (debian/) out of the tree, then lints them.
#   scripts/deb.sh --out DIR [--arch arm64]
# A clean copy of the tree (the files git tracks, and new ones it does not
# ignore, as they are in the work tree now: no build directory comes
# along) goes to DIR/cprof-VERSION, dpkg-buildpackage builds the binary
# packages there, without their tests (DEB_BUILD_OPTIONS=nocheck: the
# tests run from the tree, debian/rules says why), and leaves
# libcprof0_*.deb, libcprof-dev_*.deb and cprof_*.deb with the .changes
# in DIR, and the source package (cprof_VERSION.dsc) for lintian. With
# --arch arm64 it is a cross build (-a arm64 -Pcross,nocheck: the same
# three packages), whose
# Build-Depends `scripts/install-deps.sh deb-arm64` installs. Then lintian
# reads the packages; the script exits 1 if dpkg-buildpackage failed or
# lintian found an error (its warnings are printed, not fatal).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=
arch=
while [ $# -gt 0 ]; do
  case $1 in
  --out) out=$2; shift 2 ;;
  --arch) arch=$2; shift 2 ;;
  *) echo "deb.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "deb.sh: --out DIR is required" >&2; exit 2; }
command -v dpkg-buildpackage >/dev/null || { echo "deb.sh: dpkg-buildpackage is missing (scripts/install-deps.sh deb)" >&2; exit 1; }

version=$(dpkg-parsechangelog -l "$here/debian/changelog" -S Version)
# One version: the packages' (debian/changelog) is the project's (CMake's
# project(), which the library's and cprof.pc's versions come from).
cmake_version=$(sed -n 's/^project(cprof VERSION \([0-9.]*\).*/\1/p' "$here/CMakeLists.txt")
if [ "$version" != "$cmake_version" ]; then
  echo "deb.sh: debian/changelog says $version, CMakeLists.txt's project() $cmake_version:" \
    "add a changelog entry (dch -v $cmake_version)" >&2
  exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/cprof-$version
host=${arch:-$(dpkg-architecture -qDEB_HOST_ARCH)}
# Only this architecture's earlier packages go: the other's may be wanted.
rm -rf "$src"
rm -f "$out"/*_"$version"_"$host".deb "$out"/cprof_"$version"_"$host".changes \
  "$out"/cprof_"$version"_"$host".buildinfo
mkdir -p "$src"

# The work tree's files, less those deleted but not yet committed.
cd "$here"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -xf - -C "$src"

# The source package too, from the copy while it is clean, so that lintian
# reads debian/ as a source (control, rules, copyright), not only the
# binaries. It takes a few seconds; the native tarball is about 2 MB.
lint=()
if [ -z "$arch" ]; then
  rm -f "$out/cprof_$version.dsc" "$out/cprof_$version.tar.xz"
  (cd "$out" && dpkg-source -b "$(basename "$src")" >/dev/null)
  lint+=("$out/cprof_$version.dsc")
fi

cd "$src"
opts=(-b -us -uc)
if [ -n "$arch" ]; then
  opts+=(-a "$arch" "-Pcross,nocheck")
else
  opts+=("-Pnocheck")
fi
start=$SECONDS
echo "deb.sh: dpkg-buildpackage ${opts[*]} in $src (log: $out/build-$host.log)"
if ! DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" nice dpkg-buildpackage "${opts[@]}" \
  >"$out/build-$host.log" 2>&1; then
  tail -30 "$out/build-$host.log" >&2
  echo "deb.sh: dpkg-buildpackage failed (log: $out/build-$host.log)" >&2
  exit 1
fi
echo "deb.sh: built in $((SECONDS - start)) s:"
ls -1 "$out"/*_"$version"_"$host".deb

lint+=("$out/cprof_${version}_$host.changes")
# lintian's exit status is 1 on an error (its --fail-on default), 0 with
# warnings or less; its tags are printed either way.
echo "deb.sh: lintian ${lint[*]}"
if ! lintian --display-info --pedantic --tag-display-limit 0 "${lint[@]}"; then
  echo "deb.sh: lintian found errors" >&2
  exit 1
fi
echo "deb.sh: packages in $out"
