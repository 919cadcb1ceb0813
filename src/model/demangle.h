/* Function names as pprof's symbolizer leaves them (demangle.c). */
#ifndef CPROF_MODEL_DEMANGLE_H
#define CPROF_MODEL_DEMANGLE_H

#include "model/model.h"

/* pprof's -symbolize=demangle=MODE: "" (simplified: no parameters, no
 * template arguments), templates (no parameters), full, none. */
typedef enum cprof__pf_demangle {
  CPROF_PF_DEMANGLE_SIMPLIFIED,
  CPROF_PF_DEMANGLE_TEMPLATES,
  CPROF_PF_DEMANGLE_FULL,
  CPROF_PF_DEMANGLE_NONE,
} cprof__pf_demangle_t;

/* Renames p's functions as pprof does before any report: a name its
 * producer left mangled (or empty, with a mangled system name) is
 * demangled, and a C++ name is shortened as mode says; names a producer
 * demangled itself (name differs from system_name) stay. 0 or -1 when out
 * of memory. */
int cprof__pf_demangle(cprof__pf_t *p, cprof__pf_demangle_t mode);

#endif
