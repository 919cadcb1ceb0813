/* Function names as people read them: symbol versions cut off and C++ names
 * demangled, each computed once and cached. */
#ifndef CPROF_SYMBOL_NAMES_H
#define CPROF_SYMBOL_NAMES_H

#include <stddef.h>

typedef struct cprof__names {
  /* libstdc++'s __cxa_demangle, or NULL when the process has none; looked
   * for at the first mangled name (cprof__names_demangler). */
  char *(*demangle)(const char *mangled, char *buf, size_t *len, int *status);
  int looked;
  void *libstdcxx; /* our reference to libstdc++ when found via RTLD_NOLOAD */
  struct cprof__shown_name *v; /* open addressing on the raw name's text */
  size_t cap, len;             /* cap is 0 or a power of two */
} cprof__names_t;

void cprof__names_init(cprof__names_t *n);
/* The demangler, looked up the first time it is asked for: a process that
 * has C++ names to demangle has libstdc++ loaded; cprof itself does not
 * depend on it. Not at init: the lookup (dlsym with RTLD_DEFAULT) reads
 * the symbol hash tables of every loaded library, and in a forked child
 * that maps 64 KiB of each into its RSS (the kernel's fault-around), half
 * a megabyte in a small C program that has no C++ name to demangle. */
char *(*cprof__names_demangler(cprof__names_t *n))(const char *, char *, size_t *, int *);
void cprof__names_free(cprof__names_t *n);
/* The name to show for `raw`, a symbol or linkage name (NULL gives NULL).
 * `raw` must stay valid as long as `n` (it is the cache's key); the result
 * does too. Repeated names cost a hash lookup and no allocation. */
const char *cprof__names_show(cprof__names_t *n, const char *raw);

#endif
