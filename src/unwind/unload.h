/* Modules unloaded under the signal handlers' walkers.
 *
 * A walk from a signal reads, besides the stack, the unwind tables of the
 * modules its pcs lie in, and, to tell a return address from any other
 * word on the stack, the bytes of code just before it. Both belong to a
 * module the dynamic linker lists now (_dl_find_object, asked afresh each
 * time). But dlclose(3) may unmap that module on another thread between
 * the question and the read, and a word on a stack may well point into a
 * library the program has just closed: the read would fault.
 *
 * So dlclose is interposed (interpose/dlclose.c): it raises `unloading`, waits until
 * every walk that began before is over, unmaps, moves the rule cache to a
 * new generation (cfa.c: rules of the module just gone no longer hit), and
 * lowers `unloading`. A walk counts itself in (on one of two counters,
 * chosen by the epoch's parity, so that a dlclose waits only for walks
 * older than itself, never for a stream of new ones) and, while
 * `unloading` is raised, reads nothing but the stack.
 *
 * glibc unloads iconv's modules itself, without going through dlclose:
 * there a cached rule may outlive its module, and only the fresh
 * _dl_find_object check before each read of code stands between a stale
 * word and a fault, with no wait for walks in flight. */
#ifndef CPROF_UNWIND_UNLOAD_H
#define CPROF_UNWIND_UNLOAD_H

#include <stdint.h>

typedef struct cprof__unload {
  unsigned epoch;     /* its parity chooses a walk's counter */
  int walks[2];       /* walks in flight, by the parity they began with */
  int unloading;      /* dlclose calls between their wait and their return */
  unsigned generation; /* bumped after each unmap: the rule cache's tag */
} cprof__unload_t;
extern cprof__unload_t cprof__unload;

/* A walk from a signal begins: returns the counter to leave through. The
 * count is made under the epoch it still is afterwards: a walk preempted
 * between reading the epoch and counting itself, across a dlclose's move,
 * would otherwise be counted where the next dlclose does not look. */
static inline unsigned cprof__unload_enter_sigsafe(void) {
  for (;;) {
    unsigned e = __atomic_load_n(&cprof__unload.epoch, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&cprof__unload.walks[e & 1], 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&cprof__unload.epoch, __ATOMIC_SEQ_CST) == e)
      return e & 1;
    __atomic_sub_fetch(&cprof__unload.walks[e & 1], 1, __ATOMIC_SEQ_CST);
  }
}

/* Whether a module may be being unmapped now: then the walk that asks
 * (after entering) reads only the stack. */
static inline int cprof__unload_busy_sigsafe(void) {
  return __atomic_load_n(&cprof__unload.unloading, __ATOMIC_SEQ_CST) != 0;
}

static inline void cprof__unload_leave_sigsafe(unsigned e) {
  __atomic_sub_fetch(&cprof__unload.walks[e], 1, __ATOMIC_SEQ_CST);
}

/* The rule cache's tag for keys: the generation in the bits above any
 * user-space address (x86-64 user addresses are below 2^56 even with
 * 5-level paging). */
static inline uint64_t cprof__unload_tag(void) {
  return (uint64_t)(__atomic_load_n(&cprof__unload.generation, __ATOMIC_ACQUIRE) & 0xff) << 56;
}

/* In a forked child: walks that were in flight on the parent's other
 * threads will never leave. */
void cprof__unload_atfork_child(void);

/* Around the real dlclose (interpose/dlclose.c): begin raises
 * `unloading` and returns once every walk that began before it is over;
 * end moves the rule cache to a new generation and lowers `unloading`. */
void cprof__unload_begin(void);
void cprof__unload_end(void);

#endif
