/* The frames the profile shows for the reserved pcs (unwind/pc.h): a table
 * of each value and its name, and addresses and the marks named elsewhere
 * left alone. */
#include <errno.h>
#include <stdint.h>

#include "check.h"
#include "profile/marks.h"
#include "unwind/pc.h"

int main(void) {
  static const struct {
    uintptr_t pc;
    const char *name; /* NULL: not a frame of marks.c's */
  } cases[] = {
      {CPROF_PC_STACK_CUT, "[stack cut]"},
      {CPROF_PC_UNSAMPLED_BLOCKED, "[thread blocked SIGPROF]"},
      {CPROF_PC_UNSAMPLED_NO_TIMER(CPROF_CALL_TIMER_CREATE, EPERM),
       "[thread not sampled: timer_create: Operation not permitted]"},
      {CPROF_PC_UNSAMPLED_NO_TIMER(CPROF_CALL_TIMER_SETTIME, EINVAL),
       "[thread not sampled: timer_settime: Invalid argument]"},
      {CPROF_PC_UNREADABLE(EPERM), "[stack unreadable: process_vm_readv: Operation not permitted]"},
      {CPROF_PC_UNREADABLE(ENOSYS),
       "[stack unreadable: process_vm_readv: Function not implemented]"},
      {0x401000, NULL},
      {(uintptr_t)0x7fffffffe000ULL, NULL},
      {CPROF_PC_MODULES(3), NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[128];
    const char *got = cprof__mark_name(cases[i].pc, buf, sizeof buf);
    if (cases[i].name)
      CHECK_EQ_STR(got, cases[i].name);
    else
      CHECK(got == NULL);
  }
  /* Each is a reserved value, never an address. */
  CHECK(cprof__pc_is_mark(CPROF_PC_UNSAMPLED_BLOCKED));
  CHECK(cprof__pc_is_mark(CPROF_PC_UNSAMPLED_NO_TIMER(CPROF_CALL_TIMER_CREATE, EPERM)));
  CHECK(cprof__pc_is_mark(CPROF_PC_UNREADABLE(EPERM)));
  return check_result("test_marks");
}
