# Shared helpers for the aarch64 tests (make test-arm64): the build is the
# cross build (cmake/aarch64-linux-gnu.cmake), its programs and library are
# aarch64, and each program runs under qemu-aarch64, driven by the host's
# curl and go tool pprof. Source it after nothing else: it sources
# tests/integration/lib.sh.
#
# What qemu-user cannot show: real timing and overhead (it translates every
# instruction; a guest second of CPU costs several of the host's), and the
# real kernel's vDSO (qemu 7.2 gives the guest none: its signal trampoline
# is in a page of its own). The tests check what a profile says, never how
# fast anything ran.
. "$(dirname "$0")/../integration/lib.sh"

command -v qemu-aarch64 >/dev/null || skip "no qemu-aarch64 (Debian's qemu-user; scripts/install-deps.sh arm64)"
command -v go >/dev/null || skip "no go tool pprof (Debian's golang-go)"
# e_machine, bytes 18-19 of the ELF header: 183 (0xb7) is EM_AARCH64.
[ "$(od -An -tu2 -j18 -N2 "$LIB" | tr -d ' ')" = 183 ] || skip "$LIB is not an aarch64 build"

# shellcheck disable=SC2034 # P and A64 are for the scripts that source this
P=$B/tests/integration
# A64 PROGRAM ARGS...: the command that runs an aarch64 program under qemu
# with the library preloaded in the guest (qemu's -E; LD_PRELOAD in qemu's
# own environment would be the host loader's, which refuses an aarch64
# library). The CPROF_* variables of the environment reach the guest as they are.
# shellcheck disable=SC2034
A64=(qemu-aarch64 -E "LD_PRELOAD=$LIB")

# build_id FILE: the GNU build ID of an ELF file, in hex, as pprof prints it.
build_id() {
  python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum = struct.unpack_from("<HH", d, 0x3a)
for i in range(shnum):
    name, typ, flags, addr, off, size = struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
    if typ != 7:  # SHT_NOTE
        continue
    p = off
    while p < off + size:
        nsz, dsz, nt = struct.unpack_from("<III", d, p)
        n = d[p + 12:p + 12 + nsz]
        desc = p + 12 + (nsz + 3) // 4 * 4
        if nt == 3 and n.rstrip(b"\0") == b"GNU":
            print(d[desc:desc + dsz].hex())
            sys.exit(0)
        p = desc + (dsz + 3) // 4 * 4
sys.exit(1)
PY
}

# finish: the verdict, after at least one check.
finish() {
  echo "$PASSES passed, $FAILS failed"
  [ "$PASSES" -gt 0 ] && [ "$FAILS" = 0 ]
}
