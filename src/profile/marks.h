/* The frames a profile shows for the reserved pcs of unwind/pc.h: where a
 * stack was cut and why, and the CPU time no timer sampled and why. */
#ifndef CPROF_PROFILE_MARKS_H
#define CPROF_PROFILE_MARKS_H

#include <stddef.h>
#include <stdint.h>

/* The frame's name for a reserved pc, such as "[stack cut]" or
 * "[stack unreadable: process_vm_readv: Operation not permitted]": a
 * constant, or the text written into buf. NULL when pc is an address, or a
 * reserved value named elsewhere. One text for every stack with the same
 * reason, so that they merge. */
const char *cprof__mark_name(uintptr_t pc, char *buf, size_t size);

#endif
