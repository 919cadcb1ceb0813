# cmake --install, then a program built against the installed copy with
# pkg-config alone, as a user outside this tree would build one.
. "$(dirname "$0")/lib.sh"

# Every step is a check: a step that fails is counted and named, and the
# script goes on to say what else holds.
check "cmake --install succeeds" bash -c "cmake --install '$B' --prefix '$T/usr' >/dev/null"
check "installs the header" [ -f "$T/usr/include/cprof.h" ]
installed_lib() { [ -e "$T/usr/lib/libcprof.so" ] || [ -e "$T/usr/lib/x86_64-linux-gnu/libcprof.so" ]; }
check "installs the shared library" installed_lib
pc_file=$(find "$T/usr" -name cprof.pc | head -1)
check "installs cprof.pc" [ -n "$pc_file" ]
cmake_config=$(find "$T/usr" -name cprofConfig.cmake | head -1)
check "installs the CMake package config (cprofConfig.cmake)" [ -n "$cmake_config" ]
check "and its version file" [ -f "${cmake_config%/*}/cprofConfigVersion.cmake" ]
export PKG_CONFIG_PATH=${pc_file%/*}
check "pkg-config knows cprof" pkg-config --exists cprof
# cprof_* and the libc functions it interposes (documented in doc/internals.md):
# the malloc family, pthread_create, the signal and lock calls, capset
# and prctl (src/interpose/creds.c: cprof's threads follow the program's
# credentials), the calls that change a process's user or groups
# (setuid... initgroups: src/interpose/creds.c, before which a forked
# process of a tree joins it, doc/trees.md), unshare and setns (src/interpose/namespaces.c: made again
# with cprof's threads stopped when the kernel refuses them for those),
# syscall (src/interpose/raw_syscall.c: the same calls made raw), C++'s
# operator new and delete (src/interpose/new_delete.c), the allocators'
# entry points that take a block (src/interpose/allocator_ext.c), the
# signal-mask calls (src/interpose/sigmask.c: no SIGPROF
# tick for a thread that blocks it) and dlclose (src/unwind/unload.c: no
# walk reads a module being unloaded).
check "nm lists the shared library's exports" \
  bash -c "nm -D --defined-only '$B/libcprof.so' | awk '{print \$3}' >'$T/exports'"
check "the exports include cprof_start and malloc (the list is real)" \
  bash -c "grep -qx cprof_start '$T/exports' && grep -qx malloc '$T/exports'"
check "the shared library exports only cprof_ names and its interposers" bash -c \
  "! grep -Ev '^(cprof_|pthread_create$|sigaction$|signal$|sigaltstack$|capset$|prctl$|set(e|re|res)?[ug]id$|setgroups$|initgroups$|syscall$|unshare$|setns$|dlclose$|pthread_sigmask$|sigprocmask$|sigwait$|sigwaitinfo$|sigtimedwait$|(malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size|malloc_size|cfree|free_sized|free_aligned_sized|[rxsd]allocx|sdallocx)$|_Z(nw|na|dl|da)[A-Za-z0-9_]*$|tc_(free|cfree|free_sized|delete[a-z_]*|realloc|malloc_size)$|(pthread_mutex_(timed|clock)?lock|pthread_mutex_unlock|pthread_rwlock_((timed|clock)?(rd|wr)lock|unlock)|pthread_cond_(timed|clock)?wait|sem_(timed|clock)?wait|pthread_(join|timedjoin_np|clockjoin_np)|pthread_barrier_wait|pthread_spin_lock)$)' '$T/exports'"

cat >"$T/app.c" <<'C'
#include <cprof.h>
#include <stdio.h>
int main(void) {
  cprof_options_t o = {.addr = "127.0.0.1:0"};
  if (cprof_start(&o) != 0 || !cprof_addr()) return 1;
  printf("%s\n", cprof_addr());
  cprof_stop();
  return cprof_addr() == NULL ? 0 : 1;
}
C
# shellcheck disable=SC2046
check "a program builds with pkg-config --cflags --libs cprof" \
  gcc -o "$T/app" "$T/app.c" $(pkg-config --cflags --libs cprof) -Wl,-rpath,"$(pkg-config --variable=libdir cprof)"
run app -- "$T/app"
check "and runs, serving and stopping (exit 0)" rc_is app 0
check "it served on the address it printed" has "$T/app.out" '^127\.0\.0\.1:[0-9]+$'

finish
