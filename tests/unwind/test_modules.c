/* The module generation and the retired modules (src/unwind/modules.h):
 * a dlclose that unmaps a library moves the generation and keeps the
 * library's executable segment, path and build ID; one that unmaps
 * nothing moves nothing; reloading the same file at the same place keeps
 * one entry; and the symbolizer resolves an address of a stack from before
 * the dlclose in the library that was there, by name. libexpat is any
 * library this process does not otherwise load. */
#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "symbol/symbolize.h"
#include "unwind/modules.h"

/* dlclose with the recording around it: the wrapper's own, when the
 * static library interposes dlclose, is then nested and left alone. */
static void close_recorded(void *h) {
  cprof__modules_unload_begin();
  dlclose(h);
  cprof__modules_unload_end();
}

static const cprof__retired_t *retired_at(uintptr_t addr, int *count) {
  cprof__retired_t *const *v;
  int n = cprof__modules_retired(&v);
  *count = n;
  for (int i = n - 1; i >= 0; i--)
    if (addr >= v[i]->start && addr < v[i]->end)
      return v[i];
  return NULL;
}

static int ends_with(const char *s, const char *tail) {
  size_t a = strlen(s), b = strlen(tail);
  return a >= b && strcmp(s + a - b, tail) == 0;
}

int main(void) {
  if (dlopen("libexpat.so.1", RTLD_NOW | RTLD_NOLOAD))
    return check_skip("test_modules", "libexpat is loaded already");
  void *h = dlopen("libexpat.so.1", RTLD_NOW);
  if (!h)
    return check_skip("test_modules", "no libexpat.so.1");
  uintptr_t fn = (uintptr_t)dlsym(h, "XML_ParserCreate");
  CHECK(fn != 0);

  /* A second reference: its dlclose unmaps nothing. */
  void *again = dlopen("libexpat.so.1", RTLD_NOW);
  uint32_t g0 = cprof__modules_generation;
  close_recorded(again);
  CHECK_EQ_INT(cprof__modules_generation, g0);

  close_recorded(h);
  uint32_t g1 = cprof__modules_generation;
  CHECK_EQ_INT(g1, g0 + 1);
  int n1;
  const cprof__retired_t *r = retired_at(fn, &n1);
  CHECK(r != NULL);
  if (r) {
    CHECK(ends_with(r->path, "libexpat.so.1") && r->path[0] == '/');
    CHECK_EQ_INT(strlen(r->build_id), 40);
    CHECK_EQ_INT(cprof__retired_gone(r), g1);
  }

  /* Only a stack through where a module left says its generation. */
  uintptr_t mine[2] = {(uintptr_t)main};
  CHECK_EQ_INT(cprof__modules_mark_sigsafe(mine, 1, g1), 1);
  uintptr_t through[3] = {(uintptr_t)main, fn + 1};
  CHECK_EQ_INT(cprof__modules_mark_sigsafe(through, 2, g1), 3);
  CHECK(through[2] == CPROF_PC_MODULES(g1));

  /* Symbolized as a stack of generation g0 would be: in the retired
   * module, by name. Now, the address is in nothing of expat's. */
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  const cprof__mapping_t *maps;
  int nmaps = cprof__symbolizer_mappings(s, &maps);
  int then = cprof__symbolizer_mapping_then(s, fn, g0);
  CHECK(then >= 0 && then < nmaps && maps[then].retired);
  if (then >= 0 && then < nmaps) {
    CHECK(ends_with(maps[then].path, "libexpat.so.1"));
    CHECK(r && strcmp(maps[then].build_id, r->build_id) == 0);
    cprof__frame_t frames[8];
    uintptr_t off;
    int nf = cprof__symbolize_in(s, then, fn, frames, 8, &off);
    CHECK(nf >= 1);
    if (nf >= 1)
      CHECK_EQ_STR(frames[nf - 1].function, "XML_ParserCreate");
  }
  int now = cprof__symbolizer_mapping_then(s, fn, g1);
  CHECK(now < 0 || !maps[now].retired);
  cprof__symbolizer_release(s);

  /* Loaded again where it was and closed again: the same entry, gone
   * later. */
  h = dlopen("libexpat.so.1", RTLD_NOW);
  if (h && (uintptr_t)dlsym(h, "XML_ParserCreate") == fn) {
    close_recorded(h);
    int n2;
    const cprof__retired_t *r2 = retired_at(fn, &n2);
    CHECK_EQ_INT(n2, n1);
    CHECK(r2 == r);
    CHECK_EQ_INT(cprof__modules_generation, g1 + 1);
    if (r2)
      CHECK_EQ_INT(cprof__retired_gone(r2), g1 + 1);
  } else if (h) {
    dlclose(h);
  }
  return check_result("test_modules");
}
