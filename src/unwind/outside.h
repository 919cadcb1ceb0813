/* Unwinding a thread that is blocked in a system call, without signalling
 * it, with libdw's frame unwinder over the symbolizer's Dwfl. */
#ifndef CPROF_UNWIND_OUTSIDE_H
#define CPROF_UNWIND_OUTSIDE_H

#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <sys/types.h>

/* What libdw's callbacks need: set per call, under the symbolizer's lock. */
typedef struct cprof__blocked_ctx {
  int attached; /* dwfl_attach_state was done on this Dwfl */
  pid_t tid;
  uintptr_t sp, pc, fp; /* fp 0: unknown */
  pid_t pid;
  /* A few pages read with process_vm_readv: the stack's and the code's
   * that return addresses are checked against, so neither evicts the other. */
  struct {
    uintptr_t page; /* 0: empty */
    unsigned char buf[4096];
  } cache[4];
  unsigned next; /* the entry to replace next */
  int read_err;  /* the first read refused for another reason than EFAULT: an errno */
} cprof__blocked_ctx_t;

/* Walks the stack from sp and pc into pcs (cprof's convention: pcs[0]
 * exact, then return addresses). Where the thread's memory could not be
 * read at all (process_vm_readv refused, as by a seccomp filter), the
 * stack ends with CPROF_PC_UNREADABLE(errno) after what was known. Returns
 * the depth, at least 1. */
int cprof__dwfl_unwind_blocked(Dwfl *dwfl, cprof__blocked_ctx_t *ctx, pid_t tid, uintptr_t sp,
                               uintptr_t pc, uintptr_t *pcs, int max);

/* The same walk without libdw: each frame's rule from the module's
 * .eh_frame as the signal handlers' walker reads it (cfa_rule.h), for a
 * process that keeps libdw out (a tree's member: symbol/symbolize.h,
 * cprof__symbolizer_bare). Stops at a rule that walker does not follow
 * (a DWARF expression), where libdw would go on. */
int cprof__cfa_unwind_blocked(cprof__blocked_ctx_t *ctx, pid_t tid, uintptr_t sp, uintptr_t pc,
                              uintptr_t *pcs, int max);

#endif
