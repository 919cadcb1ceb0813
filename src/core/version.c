/* cprof_version: the library's own version, which a program compiled
 * against another header can ask for. */
#include "cprof.h"

/* The header's version is the library's (CMakeLists.txt's project version
 * too): a program compiled against it may meet a later library. */

const char *cprof_version(void) { return CPROF_VERSION_STRING; }
