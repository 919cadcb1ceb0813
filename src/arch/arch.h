/* What differs per CPU architecture, behind one small interface: one
 * header per architecture (x86_64.h, aarch64.h), each all static inline, so
 * that the signal handlers' hot paths pay nothing for it. A third
 * architecture is one more header and one more line below.
 *
 * Each header defines:
 * - CPROF_ARCH_NAME;
 * - cprof__arch_pc/_sp/_fp/_lr(uc): the interrupted registers in a
 *   ucontext (lr: the link register, 0 where return addresses are pushed);
 * - CPROF_ARCH_HERE(pc, sp, fp): the current pc, stack and frame pointers,
 *   and cprof__arch_context_here(uc): the same into a ucontext, for the
 *   walks from here (caller.c, fp.c's warm-up);
 * - CPROF_ARCH_DW_SP, _FP, _RA, and cprof__arch_dwarf_reg(mc, n): the
 *   DWARF register numbers the unwind tables use, and register n of an
 *   interrupted context;
 * - cprof__arch_ends_in_call(b): the 8 bytes before a return address end
 *   in a call instruction; CPROF_ARCH_INSN_ALIGN: how return addresses are
 *   aligned;
 * - CPROF_ARCH_SIGRETURN and its length, CPROF_ARCH_SIGRETURN_SECOND (the
 *   second instruction's offset) and CPROF_ARCH_SIGFRAME_UC (where the
 *   kernel's signal frame keeps the ucontext, from the stack pointer in the
 *   trampoline);
 * - cprof__arch_pause(): a spin-wait's pause;
 * - cprof__arch_strip_ra(ret): a return address without pointer
 *   authentication bits (the identity where there are none). */
#ifndef CPROF_ARCH_ARCH_H
#define CPROF_ARCH_ARCH_H

#if defined(__x86_64__)
#include "arch/x86_64.h"
#elif defined(__aarch64__)
#include "arch/aarch64.h"
#else
#error "cprof: no src/arch/ header for this CPU architecture (x86_64.h and aarch64.h exist)"
#endif

#endif
