/* cprof's re-entrancy guard (guard.h). */
#include "core/guard.h"

__thread uint32_t cprof__guard_depth __attribute__((tls_model("initial-exec")));
