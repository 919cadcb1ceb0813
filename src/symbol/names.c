/* Function names as people read them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT, RTLD_NOLOAD */
#endif
#include "symbol/names.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* One cached name. `shown` is ours, or NULL when `raw` is the one to show. */
struct cprof__shown_name {
  const char *raw;
  char *shown;
  unsigned hash;
};

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

void cprof__names_init(cprof__names_t *n) { memset(n, 0, sizeof *n); }

demangle_fn cprof__names_demangler(cprof__names_t *n) {
  if (n->looked)
    return n->demangle;
  n->looked = 1;
  n->demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
  if (!n->demangle) {
    /* libstdc++ may be loaded only privately, as the dependency of a library
     * opened with RTLD_LOCAL; its demangler is just as good. */
    n->libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (n->libstdcxx)
      n->demangle = (demangle_fn)dlsym(n->libstdcxx, "__cxa_demangle");
  }
  return n->demangle;
}

void cprof__names_free(cprof__names_t *n) {
  for (size_t i = 0; i < n->cap; i++)
    free(n->v[i].shown);
  free(n->v);
  if (n->libstdcxx)
    dlclose(n->libstdcxx);
  memset(n, 0, sizeof *n);
}

static unsigned hash_str(const char *s) {
  unsigned h = 2166136261u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static int grow(cprof__names_t *n) {
  size_t cap = n->cap ? n->cap * 2 : 256;
  struct cprof__shown_name *t = calloc(cap, sizeof *t);
  if (!t)
    return -ENOMEM;
  for (size_t i = 0; i < n->cap; i++) {
    if (!n->v[i].raw)
      continue;
    size_t k = n->v[i].hash & (cap - 1);
    while (t[k].raw)
      k = (k + 1) & (cap - 1);
    t[k] = n->v[i];
  }
  free(n->v);
  n->v = t;
  n->cap = cap;
  return 0;
}

/* Two things change a name: a symbol version that the static linker left in
 * a .symtab name ("fopen@@GLIBC_2.2.5") is cut off, since the version is not
 * part of the function's name; and a C++ (Itanium ABI) name is demangled
 * when libstdc++ is there to do it. */
const char *cprof__names_show(cprof__names_t *n, const char *raw) {
  if (!raw)
    return NULL;
  const char *at = strchr(raw, '@');
  int mangled = raw[0] == '_' && raw[1] == 'Z' && cprof__names_demangler(n);
  if (!mangled && (!at || at == raw))
    return raw;
  unsigned h = hash_str(raw);
  if (n->cap) {
    size_t mask = n->cap - 1;
    for (size_t k = h & mask; n->v[k].raw; k = (k + 1) & mask) {
      struct cprof__shown_name *d = &n->v[k];
      if (d->hash == h && strcmp(d->raw, raw) == 0)
        return d->shown ? d->shown : d->raw;
    }
  }
  /* Keep the table at most half full so probes stay short. Without room to
   * remember a result we show the raw name rather than leak a new string. */
  if ((n->len + 1) * 2 > n->cap && grow(n) != 0)
    return raw;

  char *cut = NULL;
  const char *name = raw;
  if (at && at != raw) {
    cut = strndup(raw, (size_t)(at - raw));
    if (!cut)
      return raw;
    name = cut;
  }
  char *shown = NULL;
  if (mangled) {
    int status = -1;
    shown = n->demangle(name, NULL, NULL, &status);
    if (status != 0) {
      free(shown);
      shown = NULL;
    }
  }
  if (shown)
    free(cut);
  else
    shown = cut;

  size_t mask = n->cap - 1, k = h & mask;
  while (n->v[k].raw)
    k = (k + 1) & mask;
  n->v[k] = (struct cprof__shown_name){.raw = raw, .shown = shown, .hash = h};
  n->len++;
  return shown ? shown : raw;
}
