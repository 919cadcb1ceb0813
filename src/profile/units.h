/* Values in units, as pprof's internal/measurement: "1kb" is 1024 bytes,
 * "100ms" 1e8 nanoseconds. The cprof command's filters (-tagfocus ranges)
 * and reports scale with it, so that they read numbers as pprof does. */
#ifndef CPROF_PROFILE_UNITS_H
#define CPROF_PROFILE_UNITS_H

#include <stdint.h>

/* measurement.Scale: value in from_unit, converted to to_unit. Units are
 * recognised case-blind with a trailing "s" dropped (when longer than two
 * bytes), among memory ("b", "kb", "mb", ... "byte", "kilobyte"), time
 * ("ns", "us", "ms", "s", "hr", "nanosecond", ...) and Google compute units.
 * to_unit "auto" or "minimum" picks the largest unit the value is at least
 * one of. *unit is the canonical name of the unit of the result ("kB",
 * "ms"), to_unit itself when from_unit is none pprof knows, or "" when
 * to_unit is "count", "sample", "unit", "auto" or "minimum" then. The
 * strings *unit points to are to_unit or static. */
double cprof__units_scale(int64_t value, const char *from_unit, const char *to_unit,
                          const char **unit);

#endif
