/* The frames a profile shows for the reserved pcs of unwind/pc.h: where a
 * stack was cut and why, and the CPU time no timer sampled and why. */
#ifndef CPROF_PROFILE_MARKS_H
#define CPROF_PROFILE_MARKS_H

#include <stddef.h>
#include <stdint.h>

/* The one frame every profile shows for CPROF_PC_ELIDED(n), whatever n
 * (unwind/frames.h), so that a flame graph does not split on it; debug=2
 * prints Go's "...N frames elided..." instead. */
#define CPROF_FRAME_ELIDED "[...frames elided: stack deeper than CPROF_MAX_DEPTH]"

/* The frame's name for a reserved pc, such as "[stack cut]" or
 * "[stack unreadable: process_vm_readv: Operation not permitted]": a
 * constant, or the text written into buf. NULL when pc is an address, or a
 * reserved value named elsewhere. One text for every stack with the same
 * reason, so that they merge. */
const char *cprof__mark_name(uintptr_t pc, char *buf, size_t size);

/* The same for the pc one byte after pc, or else pc: a reader of debug=1's "@"
 * lines, which takes every address for a return address, asks
 * /debug/pprof/symbol about the one before. */
const char *cprof__mark_name_near(uintptr_t pc, char *buf, size_t size);

#endif
