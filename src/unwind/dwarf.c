/* The DWARF unwinder: libunwind, loaded privately.
 *
 * Debian's libunwind.so.8 also exports the GCC unwinding ABI (_Unwind_*).
 * Linked normally, an LD_PRELOADed cprof would put those symbols ahead of
 * libgcc_s's in the program's lookup scope and take over C++ exception
 * handling. So we dlopen it with RTLD_LOCAL and call the few functions we
 * need through pointers: the program never sees it. Its static archive is
 * not position-independent, so linking it into libcprof.so is not an option.
 *
 * libunwind's local unwinding is documented as async-signal-safe. We start
 * it from the interrupted context with UNW_INIT_SIGNAL_FRAME, which tells it
 * the first ip is exact rather than a return address. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "unwind/unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#define XSTR(x) STR(x)
#define STR(x) #x

static struct {
  int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
  int (*step)(unw_cursor_t *);
  int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
  int ready; /* written once under `once`, read in handlers */
} lib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_err;

static void load(void) {
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    init_err = -ENOENT;
    return;
  }
  /* The names are libunwind's macros expanded: unw_step is _ULx86_64_step. */
  lib.init_local2 = (int (*)(unw_cursor_t *, unw_context_t *, int))dlsym(h, XSTR(unw_init_local2));
  lib.step = (int (*)(unw_cursor_t *))dlsym(h, XSTR(unw_step));
  lib.get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))dlsym(h, XSTR(unw_get_reg));
  if (!lib.init_local2 || !lib.step || !lib.get_reg) {
    init_err = -ENOSYS;
    return;
  }
  /* Warm up outside signal context: the first unwind initialises libunwind's
   * global state and caches the unwind tables of the modules it passes. */
  ucontext_t uc;
  unw_cursor_t c;
  if (getcontext(&uc) == 0 && lib.init_local2(&c, (unw_context_t *)&uc, 0) == 0) {
    for (int n = 0; n < CPROF_MAX_DEPTH && lib.step(&c) > 0; n++)
      ;
  }
  __atomic_store_n(&lib.ready, 1, __ATOMIC_RELEASE);
}

int cprof__unwind_dwarf_init(void) {
  pthread_once(&once, load);
  return init_err;
}

int cprof__unwind_dwarf_sigsafe(const ucontext_t *uc, uintptr_t *pcs, int max) {
  int n = 0;
  if (max <= 0)
    return 0;
  pcs[n++] = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  if (!__atomic_load_n(&lib.ready, __ATOMIC_ACQUIRE))
    return n;

  unw_cursor_t c;
  /* libunwind reads the registers through this pointer and never writes. */
  if (lib.init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) != 0)
    return n;
  while (n < max && lib.step(&c) > 0) {
    unw_word_t ip;
    if (lib.get_reg(&c, UNW_REG_IP, &ip) != 0 || ip == 0)
      break;
    pcs[n++] = (uintptr_t)ip;
  }
  return n;
}
