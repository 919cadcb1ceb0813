/* Which module an address meant when a stack was taken.
 *
 * A stack is a list of addresses, resolved to names only when a profile is
 * built, minutes or hours later. In between, the program may dlclose a
 * library and dlopen another that lands at the same address: resolved
 * against what is mapped then, the first library's samples would take the
 * second's names. So cprof numbers the module layouts: the generation
 * starts at 0 and moves by one each time a dlclose unmaps a module. A
 * stack taken in generation g > 0 ends with CPROF_PC_MODULES(g) (pc.h),
 * and every module a dlclose unmaps is kept here, retired, with the
 * generation in which it went: a stack of generation g whose address lies
 * in a retired module that went in a later generation was taken while that
 * module was mapped (the earliest such, when several held the address in
 * turn), and otherwise in what is mapped now.
 *
 * Retired modules are kept for the process's life: the heap and
 * contention profiles keep every stack they have seen, and their samples
 * in a retired module need it as long as they do. A program that loads and
 * unloads the same library at the same place over and over keeps one entry
 * for it, whose generation moves; the table holds at most
 * CPROF_RETIRED_MAX entries, and samples from modules unloaded after it
 * filled are resolved against what is mapped now, as before.
 *
 * Recorded by the dlclose wrapper (unload.c), outside any signal handler;
 * read by the symbolizer. The generation alone is read by the walkers, in
 * signal handlers. glibc's own unloads of iconv modules do not go through
 * dlclose and are not seen. */
#ifndef CPROF_UNWIND_MODULES_H
#define CPROF_UNWIND_MODULES_H

#include <stdint.h>

#include "unwind/pc.h"

#define CPROF_RETIRED_MAX 4096

typedef struct cprof__retired {
  uint32_t gone;        /* the generation its unload ended: stacks of earlier ones are its */
  uintptr_t start, end; /* one executable segment, [start, end), page-aligned */
  uint64_t offset;      /* file offset of start */
  uintptr_t low, high;  /* the whole module, as libdw's Dwfl wants it reported */
  uintptr_t bias;       /* load address minus link-time address */
  char build_id[65];    /* lower-case hex of the GNU build ID, "" if none */
  char path[];          /* the file it was loaded from */
} cprof__retired_t;

extern uint32_t cprof__modules_generation;

/* The generation now: for a stack about to be walked. */
static inline uint32_t cprof__modules_generation_sigsafe(void) {
  return __atomic_load_n(&cprof__modules_generation, __ATOMIC_ACQUIRE);
}

/* Appends CPROF_PC_MODULES(g) to a stack of depth n walked in generation g,
 * into pcs[n] (the caller left room for it), when some address of the
 * stack lies where a retired module was; returns the new depth. Other
 * stacks mean the same in generation 0: no module has left any of their
 * addresses yet, so whatever later leaves them held them when they were
 * taken. That keeps the stack tables from taking a new copy of every
 * stack at each dlclose of a program that unloads a library per request
 * (PAM modules), where only stacks through the library need one. */
int cprof__modules_mark_sigsafe(uintptr_t *pcs, int n, uint32_t g);

/* Around the real dlclose: `begin` lists the modules loaded now, `end`
 * retires those gone since and moves the generation if any went. A dlclose
 * run from a destructor inside another is left to the outer one. */
void cprof__modules_unload_begin(void);
void cprof__modules_unload_end(void);

/* The retired modules, oldest first; entries are never freed or moved,
 * only their `gone` may move on (read it with cprof__retired_gone). Returns
 * how many there are and sets *out. */
int cprof__modules_retired(cprof__retired_t *const **out);
static inline uint32_t cprof__retired_gone(const cprof__retired_t *r) {
  return __atomic_load_n(&r->gone, __ATOMIC_ACQUIRE);
}

/* In a forked child: a dlclose half done on another thread of the parent
 * will never end. */
void cprof__modules_atfork_child(void);

#endif
