/* Reserved pc values in cprof's stacks.
 *
 * A stack is an array of pcs: pcs[0] the exact pc, pcs[1..] return
 * addresses. A few values that no code can be at carry what the walk knew
 * besides addresses:
 *
 * - CPROF_PC_STACK_CUT: an unwinder that cannot go on but knows the stack
 *   does (a frame whose rules it cannot follow, a stack whose top it does
 *   not know) ends the stack with it, and the profile shows a frame that
 *   says so there, rather than a short stack that looks whole.
 * - CPROF_PC_ELIDED(n): the stack was deeper than the depth kept
 *   (CPROF_MAX_DEPTH): n frames between the innermost and the outermost
 *   ones kept were left out here (unwind/frames.h); n = 0: how many is not
 *   known, the walk stopped first.
 * - CPROF_PC_MODULES(g): last in a stack taken after some module was
 *   unloaded: the stack's addresses mean what they meant in module
 *   generation g (unwind/modules.h), not what is mapped there now.
 * - CPROF_PC_UNSAMPLED_BLOCKED: first in a CPU sample that stands for CPU
 *   time no timer could sample because the thread blocked SIGPROF
 *   (sample/cpu.c); the stack after it, if any, is where it unblocked.
 * - CPROF_PC_UNSAMPLED_NO_TIMER(call, err): first in a CPU sample that
 *   stands for a thread's CPU time when no timer could be made for it:
 *   `call` (CPROF_CALL_*) failed with errno `err`.
 * - CPROF_PC_UNREADABLE(err): a stack whose memory could not be read
 *   (process_vm_readv failed with errno `err`, as under a seccomp filter
 *   that denies it) ends with it, after the frames that were known.
 * profile/marks.h names each of them as the frame a profile shows.
 *
 * Every such value has bits 63..40 equal to 0xc07c07: not a canonical
 * x86-64 address with either 4- or 5-level paging (bits 63..56 are neither
 * all zeros nor all ones: Intel SDM vol. 1, 3.3.7.1), so no code can ever
 * be at it, or one byte before it. Bits 39..36 say which it is; the low 32
 * bits carry its number. */
#ifndef CPROF_UNWIND_PC_H
#define CPROF_UNWIND_PC_H

#include <stdint.h>

#define CPROF_PC_MARK_TAG UINT64_C(0xc07c07)
#define CPROF_PC_STACK_CUT ((uintptr_t)0xc07c07c07c07c07cULL)
#define CPROF_PC_ELIDED_KIND 0xe
#define CPROF_PC_MODULES_KIND 0xa
#define CPROF_PC_MARK(kind, n)                                                                     \
  ((uintptr_t)((CPROF_PC_MARK_TAG << 40) | ((uint64_t)(kind) << 36) | (uint32_t)(n)))
#define CPROF_PC_ELIDED(n) CPROF_PC_MARK(CPROF_PC_ELIDED_KIND, n)
#define CPROF_PC_MODULES(g) CPROF_PC_MARK(CPROF_PC_MODULES_KIND, g)
#define CPROF_PC_BLOCKED_KIND 0xb
#define CPROF_PC_NO_TIMER_KIND 0x7
#define CPROF_PC_UNREADABLE_KIND 0xd
#define CPROF_PC_UNDELIVERED_KIND 0x9
/* First in a CPU sample that stands for the timer's expiries that came due
 * on a thread's CPU clock but were never delivered (pending at the
 * profile's stop or at the thread's exit: sample/cpu.c). */
#define CPROF_PC_UNDELIVERED CPROF_PC_MARK(CPROF_PC_UNDELIVERED_KIND, 0)
#define CPROF_PC_UNSAMPLED_BLOCKED CPROF_PC_MARK(CPROF_PC_BLOCKED_KIND, 0)
/* CPROF_CALL_SIGNAL_STACK: no call failed; the thread has no alternate
 * signal stack for cprof's signals (sample/altstack.h). */
enum { CPROF_CALL_TIMER_CREATE = 1, CPROF_CALL_TIMER_SETTIME = 2, CPROF_CALL_SIGNAL_STACK = 3 };
#define CPROF_PC_UNSAMPLED_NO_TIMER(call, err)                                                     \
  CPROF_PC_MARK(CPROF_PC_NO_TIMER_KIND, ((uint32_t)(call) << 16) | (uint16_t)(err))
#define CPROF_PC_UNREADABLE(err) CPROF_PC_MARK(CPROF_PC_UNREADABLE_KIND, (uint16_t)(err))

/* Whether pc is one of the reserved values rather than an address. */
static inline int cprof__pc_is_mark(uintptr_t pc) { return ((uint64_t)pc >> 40) == CPROF_PC_MARK_TAG; }
/* Which reserved value (0xc for the cut, or a _KIND), and its number. */
static inline int cprof__pc_mark_kind(uintptr_t pc) { return (int)(((uint64_t)pc >> 36) & 0xf); }
static inline uint32_t cprof__pc_mark_number(uintptr_t pc) { return (uint32_t)pc; }
static inline int cprof__pc_is_elided(uintptr_t pc) {
  return cprof__pc_is_mark(pc) && cprof__pc_mark_kind(pc) == CPROF_PC_ELIDED_KIND;
}
static inline int cprof__pc_is_modules(uintptr_t pc) {
  return cprof__pc_is_mark(pc) && cprof__pc_mark_kind(pc) == CPROF_PC_MODULES_KIND;
}

#endif
