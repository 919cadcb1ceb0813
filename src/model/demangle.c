/* Function names as pprof shows them: its symbolizer demangles every name
 * still mangled, and shortens C++ names to what a person reads in a
 * table, "ns::Class::method" without parameters or template arguments
 * (pprof's internal/symbolizer, demangleFunction, default mode). A
 * producer that demangled already (cprof does: name demangled, system_name
 * mangled) keeps its names.
 *
 * Mangled names are demangled by the C++ runtime's own __cxa_demangle
 * (the Itanium ABI's, in libstdc++), loaded when first needed: the cprof
 * command is C and does not link the C++ library for this. */
#include "model/demangle.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static cxa_demangle_fn demangler(void) {
  static int tried;
  static cxa_demangle_fn fn;
  if (!tried) {
    tried = 1;
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (h)
      *(void **)&fn = dlsym(h, "__cxa_demangle");
  }
  return fn;
}

/* pprof's looksLikeDemangledCPlusPlus: not Java's "class.<init>", not
 * Go's "pkg.(*T[...]).Method". */
static int looks_like_cxx(const char *s) {
  if (strstr(s, ".<") || strstr(s, "]).") || strncmp(s, "_Z", 2) == 0)
    return 0;
  return strpbrk(s, "<>[]") != NULL || strstr(s, "::") != NULL;
}

/* pprof's removeMatching: drops each outermost open..close, in place.
 * At a close with no open it stops, keeping the rest as it is; an open
 * never closed is kept with what follows it. */
static void remove_matching(char *name, char open, char close) {
  size_t n = strlen(name), w = 0, first_i = 0, first_w = 0;
  int nesting = 0;
  for (size_t i = 0; i < n; i++) {
    if (name[i] == open) {
      if (nesting++ == 0)
        first_i = i, first_w = w;
    } else if (name[i] == close && nesting > 0) {
      nesting--;
    } else if (name[i] == close) {
      memmove(name + w, name + i, n - i + 1); /* a mismatch: the rest stays */
      return;
    } else if (nesting == 0) {
      name[w++] = name[i];
    }
  }
  if (nesting > 0) { /* never closed: kept */
    memmove(name + first_w, name + first_i, n - first_i + 1);
    return;
  }
  name[w] = '\0';
}

/* The name pprof's "simplified" mode shows for a C++ name. */
static char *simplify(cprof__arena_t *a, const char *demangled, int templates) {
  char *s = cprof__arena_strdup(a, demangled);
  if (s) {
    remove_matching(s, '(', ')');
    if (!templates)
      remove_matching(s, '<', '>');
  }
  return s;
}

int cprof__pf_demangle(cprof__pf_t *p, cprof__pf_demangle_t mode) {
  if (mode == CPROF_PF_DEMANGLE_NONE)
    return 0;
  for (size_t i = 0; i < p->n_functions; i++) {
    cprof__pf_function_t *f = &p->functions[i];
    if (f->name[0] && strcmp(f->name, f->system_name) != 0)
      continue; /* demangled by its producer */
    const char *sys = f->system_name[0] ? f->system_name : f->name;
    cxa_demangle_fn fn = strncmp(sys, "_Z", 2) == 0 ? demangler() : NULL;
    int status = -1;
    char *d = fn ? fn(sys, NULL, NULL, &status) : NULL;
    const char *name = NULL;
    if (d && status == 0)
      name = mode == CPROF_PF_DEMANGLE_FULL
                 ? cprof__arena_strdup(p->arena, d)
                 : simplify(p->arena, d, mode == CPROF_PF_DEMANGLE_TEMPLATES);
    else if (mode != CPROF_PF_DEMANGLE_FULL && looks_like_cxx(sys))
      name = simplify(p->arena, sys, mode == CPROF_PF_DEMANGLE_TEMPLATES);
    free(d);
    if (name)
      f->name = name;
    else if (d && status == 0)
      return -1;
  }
  return 0;
}
