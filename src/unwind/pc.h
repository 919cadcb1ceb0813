/* Reserved pc values in cprof's stacks.
 *
 * A stack is an array of pcs: pcs[0] the exact pc, pcs[1..] return
 * addresses. An unwinder that cannot go on but knows the stack does (a
 * frame whose rules it cannot follow, a stack whose top it does not know)
 * ends the stack with CPROF_PC_STACK_CUT, and the profile shows a frame
 * named "[stack cut]" there, rather than a short stack that looks whole.
 *
 * The value is not a canonical x86-64 address with either 4- or 5-level
 * paging (bits 63..56 are neither all zeros nor all ones: Intel SDM vol. 1,
 * 3.3.7.1), so no code can ever be at it, or one byte before it. */
#ifndef CPROF_UNWIND_PC_H
#define CPROF_UNWIND_PC_H

#include <stdint.h>

#define CPROF_PC_STACK_CUT ((uintptr_t)0xc07c07c07c07c07cULL)

#endif
