/* Names for the reserved pcs (unwind/pc.h), as the profile shows them: a
 * frame in brackets that says what the stack or the time lacks and why,
 * as Go shows lost samples as a frame of their own rather than dropping
 * them. The reasons name the system call that failed and its errno's
 * text, as the goroutine profile's "[thread state unknown: ...]" does. */
#include "profile/marks.h"

#include <stdio.h>
#include <string.h>

#include "unwind/pc.h"

static const char *call_name(unsigned call) {
  switch (call) {
  case CPROF_CALL_TIMER_CREATE:
    return "timer_create";
  case CPROF_CALL_TIMER_SETTIME:
    return "timer_settime";
  default:
    return "?";
  }
}

const char *cprof__mark_name(uintptr_t pc, char *buf, size_t size) {
  if (pc == CPROF_PC_STACK_CUT)
    return "[stack cut]";
  if (!cprof__pc_is_mark(pc))
    return NULL;
  uint32_t n = cprof__pc_mark_number(pc);
  switch (cprof__pc_mark_kind(pc)) {
  case CPROF_PC_ELIDED_KIND:
    return CPROF_FRAME_ELIDED;
  case CPROF_PC_BLOCKED_KIND:
    return "[thread blocked SIGPROF]";
  case CPROF_PC_UNDELIVERED_KIND:
    return "[CPU since the thread's last sample]";
  case CPROF_PC_NO_TIMER_KIND:
    if (n >> 16 == CPROF_CALL_SIGNAL_STACK)
      return "[thread not sampled: no signal stack]";
    snprintf(buf, size, "[thread not sampled: %s: %s]", call_name(n >> 16),
             strerror((int)(n & 0xffff)));
    return buf;
  case CPROF_PC_UNREADABLE_KIND:
    snprintf(buf, size, "[stack unreadable: process_vm_readv: %s]", strerror((int)(n & 0xffff)));
    return buf;
  default:
    return NULL;
  }
}

const char *cprof__mark_name_near(uintptr_t pc, char *buf, size_t size) {
  /* The byte after first: one before a reserved value may read as another
   * (ELIDED(0) - 1 has UNREADABLE's kind), and the one before is what a
   * debug=1 reader asks about. */
  const char *name = cprof__mark_name(pc + 1, buf, size);
  return name ? name : cprof__mark_name(pc, buf, size);
}
