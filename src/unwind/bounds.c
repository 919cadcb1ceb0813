/* A thread's stack bounds (see bounds.h). */
#include "unwind/bounds.h"

#include <pthread.h>
#include <sys/resource.h>

__thread cprof__stack_bounds_t cprof__stack_bounds __attribute__((tls_model("initial-exec")));
static __thread cprof__stack_bounds_t signal_stack __attribute__((tls_model("initial-exec")));

void cprof__stack_bounds_signal_stack(uintptr_t lo, uintptr_t hi) {
  signal_stack.hi = 0;
  __atomic_signal_fence(__ATOMIC_RELEASE);
  signal_stack.lo = lo;
  __atomic_signal_fence(__ATOMIC_RELEASE);
  signal_stack.hi = hi;
}

/* ---- the main thread's stack ----
 *
 * __libc_stack_end (ld.so, public since glibc 2.1) is the stack pointer
 * the process started with: every frame of the main thread lies below it,
 * and the page that holds it is in the [stack] mapping. The stack grows
 * down from there as far as RLIMIT_STACK lets it; the kernel keeps at least
 * 128 MiB below the top free of other mappings (mmap_base's gap), so a
 * larger limit is taken as that much. glibc's pthread_getattr_np finds the
 * same top by reading /proc/self/maps with stdio, which allocates. */
extern void *__libc_stack_end;

#define PAGE 4096
#define MAIN_STACK_MAX ((uintptr_t)128 << 20)
#define MAIN_STACK_DEFAULT ((uintptr_t)8 << 20)

static uintptr_t main_lo, main_hi; /* atomic; main_hi == 0: not known yet */

static void learn_main(void) {
  if (__atomic_load_n(&main_hi, __ATOMIC_ACQUIRE))
    return;
  uintptr_t hi = ((uintptr_t)__libc_stack_end & ~(uintptr_t)(PAGE - 1)) + PAGE;
  uintptr_t size = MAIN_STACK_DEFAULT;
  struct rlimit rl;
  if (getrlimit(RLIMIT_STACK, &rl) == 0)
    size = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > MAIN_STACK_MAX ? MAIN_STACK_MAX
                                                                         : (uintptr_t)rl.rlim_cur;
  /* Two threads may race here: both store the same values. */
  __atomic_store_n(&main_lo, hi - size, __ATOMIC_RELAXED);
  __atomic_store_n(&main_hi, hi, __ATOMIC_RELEASE);
}

static int on_main_stack(uintptr_t sp) {
  learn_main();
  return sp >= __atomic_load_n(&main_lo, __ATOMIC_RELAXED) &&
         sp < __atomic_load_n(&main_hi, __ATOMIC_ACQUIRE);
}

/* ---- this thread's ---- */

/* Publishes new bounds for this thread's signal handlers: hi to 0 (not
 * known) first, then lo, then hi, each a single store with a compiler
 * barrier between, so that a handler interrupting this sees either no
 * bounds or both of the new ones. */
static void publish(uintptr_t lo, uintptr_t hi) {
  cprof__stack_bounds_t *mine = &cprof__stack_bounds;
  __atomic_store_n(&mine->hi, 0, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_RELEASE);
  mine->lo = lo;
  __atomic_signal_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&mine->hi, hi, __ATOMIC_RELAXED);
}

static int known(const cprof__stack_bounds_t *b) { return b->hi == 1 || (b->hi && b->lo != b->hi); }

int cprof__stack_beyond_signal_stack(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  const cprof__stack_bounds_t *mine = &cprof__stack_bounds;
  if (!(sp >= signal_stack.lo && sp < signal_stack.hi) || mine->hi <= 1 || mine->lo == mine->hi)
    return 0;
  *lo = mine->lo;
  *hi = mine->hi;
  return 1;
}

void cprof__stack_bounds_learn(void) {
  if (known(&cprof__stack_bounds))
    return;
  if (on_main_stack((uintptr_t)__builtin_frame_address(0))) {
    publish(main_lo, main_hi);
    return;
  }
  pthread_attr_t a;
  void *addr;
  size_t size;
  uintptr_t lo = 0, hi = 1;
  if (pthread_getattr_np(pthread_self(), &a) == 0) {
    if (pthread_attr_getstack(&a, &addr, &size) == 0) {
      lo = (uintptr_t)addr;
      hi = lo + size;
    }
    pthread_attr_destroy(&a);
  }
  publish(lo, hi);
}

uintptr_t cprof__stack_hi(void) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  const cprof__stack_bounds_t *mine = &cprof__stack_bounds;
  if (mine->hi > 1 && sp >= mine->lo && sp < mine->hi)
    return mine->hi;
  if (sp >= signal_stack.lo && sp < signal_stack.hi)
    return signal_stack.hi;
  if (on_main_stack(sp)) {
    if (!known(mine))
      publish(main_lo, main_hi);
    return main_hi;
  }
  if (mine->hi > 1 && mine->lo != mine->hi) /* known, but sp is elsewhere */
    return sp < mine->hi ? mine->hi : 1;
  uintptr_t self = (uintptr_t)pthread_self();
  if (sp >= self)
    return 1;
  if (!mine->hi)
    publish(self, self);
  return self;
}

uintptr_t cprof__stack_top_sigsafe(uintptr_t sp, const stack_t *alt, const cprof__maps_t *maps) {
  /* sigaltstack(2): ss_flags is SS_DISABLE when there is none. SS_ONSTACK
   * says whether the interrupted code was on it; the range says whether
   * this sp is, which is what matters for frames further up. */
  if (alt && !(alt->ss_flags & SS_DISABLE) && alt->ss_size > 0) {
    uintptr_t lo = (uintptr_t)alt->ss_sp, hi = lo + alt->ss_size;
    if (sp >= lo && sp < hi)
      return hi;
  }
  const cprof__stack_bounds_t *mine = &cprof__stack_bounds;
  uintptr_t hi = __atomic_load_n(&mine->hi, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_ACQUIRE);
  if (hi > 1 && sp >= mine->lo && sp < hi)
    return hi;
  const cprof__map_entry_t *m = maps ? cprof__maps_find_sigsafe(maps, sp) : NULL;
  if (m && m->perms[0] == 'r')
    return m->end;
  return 0;
}
