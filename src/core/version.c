/* cprof_version: the library's own version, which a program compiled
 * against another header can ask for. */
#include "cprof.h"

const char *cprof_version(void) { return CPROF_VERSION_STRING; }
