/* The caller's stack (see caller.h): the frame-pointer chain, or the
 * cached DWARF walker with libgcc's _Unwind_Backtrace behind it, which with
 * glibc 2.35's _dl_find_object finds unwind tables without locks or system
 * calls (libunwind, by contrast, calls sigprocmask twice a frame; see
 * doc/internals.md). */
#include "unwind/caller.h"

#include <unwind.h>

#include "unwind/bounds.h"
#include "unwind/cfa.h"

/* The DWARF walker's rules for this thread's last stack, per thread,
 * initial-exec: one %fs-relative access, never an allocation. Written only
 * here, outside signal context; the signal handlers' walk never reads it
 * (see cfa.c). */
static __thread cprof__cfa_memo_t memo __attribute__((tls_model("initial-exec")));

/* Walks the frame-pointer chain from here, keeping the frames from the
 * allocating call's return address `ret` on. Every frame must lie above the
 * last one and below the stack's top, so a frame pointer used as a general
 * register by code built without them ends the walk instead of faulting. */
CPROF_READS_STACK __attribute__((noinline)) static int unwind_fp(uintptr_t *pcs, int max,
                                                                 uintptr_t ret) {
  uintptr_t hi = cprof__stack_hi();
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  int n = 0, started = 0;
  while (n < max && (fp & 7) == 0 && fp + 16 <= hi) {
    const uintptr_t *frame = (const uintptr_t *)fp;
    uintptr_t next = frame[0], r = frame[1];
    if (r == 0)
      break;
    started |= r == ret;
    if (started)
      pcs[n++] = r;
    if (next <= fp)
      break;
    fp = next;
  }
  return n;
}

typedef struct walk {
  uintptr_t *pcs;
  int n, max, started;
  uintptr_t ret;
} walk_t;

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg) {
  walk_t *w = arg;
  uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
  w->started |= ip == w->ret;
  if (!w->started)
    return _URC_NO_REASON;
  if (w->n >= w->max || ip == 0)
    return _URC_END_OF_STACK;
  w->pcs[w->n++] = ip;
  return _URC_NO_REASON;
}

int cprof__unwind_caller(cprof__unwinder_t how, uintptr_t *pcs, int max, uintptr_t ret) {
  int n;
  if (how == CPROF_UNWIND_FP) {
    n = unwind_fp(pcs, max, ret);
  } else if ((n = cprof__unwind_cfa_here(pcs, max, ret, cprof__stack_hi(), &memo)) <= 0) {
    walk_t w = {pcs, 0, max, 0, ret};
    _Unwind_Backtrace(walk_frame, &w);
    n = w.n;
  }
  if (n == 0) { /* our own frames could not be walked: the caller alone */
    pcs[0] = ret;
    n = 1;
  }
  pcs[0] -= 1;
  return n;
}
