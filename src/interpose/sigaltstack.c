/* sigaltstack, interposed: the program sees and sets its own alternate
 * signal stack as if cprof's were not there (sample/altstack.c). A stack
 * of cprof's in place reads as SS_DISABLE; a stack the program sets
 * replaces it; taking the program's off puts cprof's back. */
#include <signal.h>

#include "cprof.h"
#include "sample/altstack.h"

#ifndef CPROF_NO_INTERPOSE

CPROF_EXTERN int sigaltstack(const stack_t *ss, stack_t *old) {
  return cprof__altstack_program(ss, old);
}

#endif
