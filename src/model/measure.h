/* Values with units, as pprof prints them (its internal/measurement
 * package): "1.50MB", "30ms", "12.50%". The cprof command's reports and the
 * viewer's numbers read the same as `go tool pprof`'s this way. */
#ifndef CPROF_MODEL_MEASURE_H
#define CPROF_MODEL_MEASURE_H

#include <stddef.h>
#include <stdint.h>

/* value in from_unit ("bytes", "nanoseconds", "count"...) expressed in
 * to_unit: a unit name, "auto" (the largest unit the value is at least
 * one of), or "minimum" (the same, for choosing a report's unit). *unit
 * is the unit's printed name ("MB", "ms"; "" for counts). */
double cprof__measure_scale(int64_t value, const char *from_unit, const char *to_unit,
                            const char **unit);

/* pprof's ScaledLabel: the scaled value with two decimals, ".00" dropped,
 * and its unit: "1.50MB", "30ms", "7". */
void cprof__measure_label(int64_t value, const char *from_unit, const char *to_unit, char *buf,
                          size_t len);

/* pprof's Percentage: "  100%", "12.50%", " 0.5%" (two significant digits
 * below one percent). */
void cprof__measure_percentage(int64_t value, int64_t total, char *buf, size_t len);

#endif
