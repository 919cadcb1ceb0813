/* Function symbols by address. */
#include "symbol/elf_funcs.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/search.h"
#include "symbol/module_table.h"

struct cprof__module_funcs {
  Dwfl_Module *mod;
  cprof__elf_func_t *v; /* sorted by start, one per address */
  int n;
};

/* Negative when a is the better name for an address than b; see the
 * header for the order. */
static int rank_cmp(const cprof__elf_func_t *a, int abind, const cprof__elf_func_t *b,
                    int bbind) {
  if ((a->size != 0) != (b->size != 0))
    return a->size ? -1 : 1;
  static const int bind_rank[] = {[STB_LOCAL] = 2, [STB_GLOBAL] = 0, [STB_WEAK] = 1};
  int ra = abind <= STB_WEAK ? bind_rank[abind] : 3;
  int rb = bbind <= STB_WEAK ? bind_rank[bbind] : 3;
  if (ra != rb)
    return ra - rb;
  size_t ua = strspn(a->name, "_"), ub = strspn(b->name, "_");
  if (ua != ub)
    return ua < ub ? -1 : 1;
  size_t la = strlen(a->name), lb = strlen(b->name);
  if (la != lb)
    return la < lb ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* Sorting needs the binding, which the kept entries do not carry. */
typedef struct sortable {
  cprof__elf_func_t f;
  int bind;
} sortable_t;

static int sort_cmp(const void *pa, const void *pb) {
  const sortable_t *a = pa, *b = pb;
  if (a->f.start != b->f.start)
    return a->f.start < b->f.start ? -1 : 1;
  return rank_cmp(&a->f, a->bind, &b->f, b->bind);
}

/* Collects the module's code symbols. Returns 0 or -ENOMEM; a module
 * without symbols gets an empty list. */
static int collect(Dwfl_Module *mod, void *entry) {
  struct cprof__module_funcs *mf = entry;
  mf->mod = mod;
  mf->v = NULL;
  mf->n = 0;
  int total = dwfl_module_getsymtab(mod);
  if (total <= 1)
    return 0;
  sortable_t *t = malloc((size_t)total * sizeof *t);
  if (!t)
    return -ENOMEM;
  int n = 0;
  for (int i = 1; i < total; i++) {
    GElf_Sym sym;
    GElf_Addr addr;
    GElf_Word shndx;
    const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
    if (!name)
      continue;
    int type = GELF_ST_TYPE(sym.st_info);
    /* Code only: functions, and the untyped labels hand-written assembly
     * uses for them, but not ARM's "$x"/"$d" mapping symbols, undefined
     * references, absolute values or symbols outside loaded sections. */
    if (!name[0] || name[0] == '$' || addr == 0 || shndx == SHN_UNDEF || shndx == SHN_ABS ||
        shndx == (GElf_Word)-1)
      continue;
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
      continue;
    t[n].f = (cprof__elf_func_t){.start = (uintptr_t)addr, .size = (uintptr_t)sym.st_size,
                                 .name = name};
    t[n].bind = GELF_ST_BIND(sym.st_info);
    n++;
  }
  if (n > 1)
    qsort(t, (size_t)n, sizeof *t, sort_cmp);
  /* Keep the preferred symbol at each address. */
  cprof__elf_func_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) {
    free(t);
    return -ENOMEM;
  }
  int k = 0;
  for (int i = 0; i < n; i++)
    if (k == 0 || v[k - 1].start != t[i].f.start)
      v[k++] = t[i].f;
  free(t);
  mf->v = v;
  mf->n = k;
  return 0;
}

static const struct cprof__module_funcs *module(cprof__elf_funcs_t *t, Dwfl_Module *mod) {
  return cprof__module_entry((void **)&t->v, &t->n, &t->cap, sizeof *t->v, mod, collect);
}

const cprof__elf_func_t *cprof__elf_funcs_find(cprof__elf_funcs_t *t, Dwfl_Module *mod,
                                               uintptr_t addr, uintptr_t floor) {
  const struct cprof__module_funcs *mf = module(t, mod);
  if (!mf || mf->n == 0)
    return NULL;
  /* The count of symbols at or below addr. */
  int lo = (int)CPROF__PARTITION_POINT(mf->n, mid, mf->v[mid].start <= addr);
  if (lo == 0)
    return NULL;
  /* A symbol may nest inside a larger one (assembly again); look back a
   * little for one that covers addr. */
  for (int i = lo - 1; i >= 0 && i >= lo - 8; i--) {
    const cprof__elf_func_t *f = &mf->v[i];
    if (f->size && addr - f->start < f->size)
      return f;
  }
  const cprof__elf_func_t *f = &mf->v[lo - 1];
  return f->size == 0 && f->start >= floor ? f : NULL;
}

void cprof__elf_funcs_free(cprof__elf_funcs_t *t) {
  for (int i = 0; i < t->n; i++)
    free(t->v[i].v);
  free(t->v);
  memset(t, 0, sizeof *t);
}
