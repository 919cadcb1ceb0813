/* Where malloc comes from: whether the program's calls reach libcprof's
 * wrappers (and, when they do not, why, and what would make them), and the
 * definition of a name the program would reach without us, for the
 * interposers of an allocator's other entry points (malloc_block.h). */
#include "interpose/malloc.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>

#include "core/guard.h"
#include "interpose/malloc_internal.h"

#ifndef CPROF_NO_INTERPOSE

/* The sanitizer in the process whose runtime owns malloc, if any: each
 * exports its runtime's entry point, from a shared runtime (gcc's default,
 * libasan.so) or linked into the executable (clang's default, and gcc's
 * -static-libasan). */
static const char *sanitizer(const char **flag) {
  static const struct {
    const char *symbol, *name, *flag;
  } known[] = {
      {"__asan_init", "AddressSanitizer", "address"},
      {"__hwasan_init", "HWAddressSanitizer", "hwaddress"},
      {"__tsan_init", "ThreadSanitizer", "thread"},
      {"__msan_init", "MemorySanitizer", "memory"},
      {"__lsan_do_leak_check", "LeakSanitizer", "leak"}, /* after ASan, which has it too */
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    if (dlsym(RTLD_DEFAULT, known[i].symbol)) {
      *flag = known[i].flag;
      return known[i].name;
    }
  }
  return NULL;
}

/* Whether addr lies in the program's executable: the loader's first link
 * map, the only one with an empty name (dlinfo(3), <link.h>). */
static int in_executable(void *addr) {
  Dl_info info;
  struct link_map *map = NULL;
  return dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) && map && map->l_name &&
         map->l_name[0] == '\0';
}

/* Whether addr is a PLT stub that stands for malloc in a non-PIE executable
 * which takes malloc's address (Debian's /usr/bin/python3.11): the loader
 * gives such a symbol its stub as the one address every object sees, so
 * dlsym returns the stub, but the symbol is undefined there (SHN_UNDEF) and
 * the program's calls go on to the first library that defines malloc. */
static int is_plt_stub(void *addr) {
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  return dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_shndx == SHN_UNDEF;
}

/* The first library after the executable, in the loader's order (that of
 * the global lookup for the libraries loaded at start, then those loaded
 * later, whatever their scope), that defines `name` itself, libcprof
 * included or not: dlsym on its handle also searches its dependencies, so
 * the answer counts only when it lies in the library. */
static void *first_library_defining(const char *name, int but_us) {
  struct link_map *map = NULL, *ours = NULL;
  Dl_info info;
  if (!dladdr1((void *)cprof__own_malloc, &info, (void **)&ours, RTLD_DL_LINKMAP) || !ours)
    return NULL;
  for (map = ours; map->l_prev;)
    map = map->l_prev;
  for (map = map->l_next; map; map = map->l_next) {
    if (but_us && map == ours)
      continue;
    void *h = dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
      continue;
    void *f = dlsym(h, name);
    struct link_map *owner = NULL;
    int here = f && dladdr1(f, &info, (void **)&owner, RTLD_DL_LINKMAP) && owner == map;
    dlclose(h);
    if (here)
      return f;
  }
  return NULL;
}

/* What the loader allocates meanwhile (dlsym's error message for a name
 * not found) is cprof's work, not the program's. */
void *cprof__block_next(const char *name) {
  cprof__guard_enter();
  void *f = dlsym(RTLD_NEXT, name);
  if (!f)
    f = first_library_defining(name, 1);
  cprof__guard_leave();
  return f;
}

/* Where malloc comes from when it is not libcprof's, and what can be done:
 * the advice "put libcprof first" holds only for another library. */
int cprof__malloc_check(char *why, size_t len) {
  void *first = dlsym(RTLD_DEFAULT, "malloc");
  if (first && in_executable(first) && is_plt_stub(first))
    first = first_library_defining("malloc", 0);
  if (first == (void *)cprof__own_malloc)
    return 0;
  Dl_info info;
  const char *who = first && dladdr(first, &info) && info.dli_fname && info.dli_fname[0]
                        ? info.dli_fname
                        : "another library";
  const char *flag, *san = sanitizer(&flag);
  if (san)
    snprintf(why, len,
             "malloc belongs to %s (%s), which must keep the allocator it checks; profile the "
             "heap in a build without -fsanitize=%s",
             san, who, flag);
  else if (first && in_executable(first))
    snprintf(why, len,
             "malloc is defined in the program itself (%s), which comes before every library in "
             "the lookup order, so no library can interpose it; to profile that allocator, build "
             "it as a shared library and load libcprof before it "
             "(LD_PRELOAD=libcprof.so:liballocator.so)",
             who);
  else
    snprintf(why, len,
             "malloc comes from %s, ahead of libcprof in the lookup order; put libcprof first "
             "(LD_PRELOAD=libcprof.so:%s) to profile that allocator",
             who, who);
  return -ENOTSUP;
}

#else /* CPROF_NO_INTERPOSE */

int cprof__malloc_check(char *why, size_t len) {
  snprintf(why, len, "this libcprof was built with sanitizers, which keep their own allocator");
  return -ENOTSUP;
}

#endif
