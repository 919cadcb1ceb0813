# Cross-building cprof for aarch64 Linux (glibc) on an x86-64 Debian machine:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCPROF_LIB_ONLY=ON
# (make test-arm64 does this). Needs Debian's gcc-aarch64-linux-gnu, the
# arm64 builds of the libraries (dpkg --add-architecture arm64; libdw-dev:arm64,
# libmicrohttpd-dev:arm64, zlib1g-dev:arm64) and qemu-user for the tests:
# scripts/install-deps.sh arm64 installs what is missing.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CPROF_TRIPLET aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${CPROF_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${CPROF_TRIPLET}-g++)

# Debian's multiarch layout: the arm64 libraries and headers sit beside the
# host's, under /usr/lib/aarch64-linux-gnu and /usr/include/aarch64-linux-gnu,
# so the sysroot is / and only arm64 paths are searched.
set(CMAKE_FIND_ROOT_PATH /usr/${CPROF_TRIPLET} /usr/lib/${CPROF_TRIPLET})
set(CMAKE_LIBRARY_ARCHITECTURE ${CPROF_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads the arm64 .pc files only (never the host's, whose -L
# paths would link x86-64 libraries).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${CPROF_TRIPLET}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# ctest runs the aarch64 programs under qemu-user, which finds the arm64
# dynamic linker and libc in / (Debian's libc6:arm64 puts
# /lib/ld-linux-aarch64.so.1 there): no -L sysroot needed.
find_program(CPROF_QEMU qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${CPROF_QEMU})
