/* The DWARF scopes containing a pc. */
#include "symbol/dwarf_scopes.h"

#include <dwarf.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/search.h"
#include "symbol/module_table.h"
#include "symbol/ptr_table.h"

/* One address range of a subprogram (a function's concrete code). */
typedef struct sub_range {
  Dwarf_Addr low, high; /* [low, high), in the module's DWARF addresses */
  Dwarf_Die die;
} sub_range_t;

/* An out-of-line copy of a function that is also inlined: the abstract
 * instance both point to, and where the copy's code starts. */
typedef struct copy {
  const void *origin; /* the abstract instance DIE's address in libdw's data */
  Dwarf_Addr entry;
} copy_t;

/* One unit's subprogram ranges, sorted by low. */
struct cprof__cu_index {
  const void *key; /* the unit DIE's address in libdw's data: unique per unit */
  sub_range_t *v;
  int n;
  copy_t *copies; /* sorted by origin; built on the first cprof__dwarf_copy_entry */
  int ncopies;
  int copies_built;
};

/* One address range of a compilation unit. */
typedef struct unit_range {
  Dwarf_Addr low, high; /* in the module's DWARF addresses */
  Dwarf_Die *cu;        /* libdwfl's, valid as long as the Dwfl */
} unit_range_t;

/* A module's units sorted by address, for modules without .debug_aranges. */
struct cprof__module_units {
  Dwfl_Module *mod;
  Dwarf_Addr bias;
  unit_range_t *v;
  int n;
};

typedef struct sub_list {
  sub_range_t *v;
  int n, cap, failed;
} sub_list_t;

static void sub_push(sub_list_t *l, Dwarf_Addr low, Dwarf_Addr high, Dwarf_Die *die) {
  if (l->failed || low >= high)
    return;
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 64;
    sub_range_t *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) {
      l->failed = 1;
      return;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = (sub_range_t){.low = low, .high = high, .die = *die};
}

static int is_class(int tag) {
  return tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type;
}

/* Collects the subprograms with code under parent. Concrete functions sit at
 * the top of a unit, inside C++ namespaces, or (GNU C nested functions)
 * inside other functions. Class bodies at namespace level hold only
 * declarations, and types and variables hold no code, so those subtrees are
 * skipped; but a class inside a function, a C++ lambda's closure above all,
 * holds its member functions' code itself (GCC puts the operator() of a
 * lambda that is never inlined there), so those are walked. */
static void index_scope(Dwarf_Die *parent, sub_list_t *l, int depth, int in_function) {
  Dwarf_Die child;
  if (depth > 64 || dwarf_child(parent, &child) != 0)
    return;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_subprogram) {
      Dwarf_Addr base, low, high;
      ptrdiff_t off = 0;
      while ((off = dwarf_ranges(&child, off, &base, &low, &high)) > 0)
        sub_push(l, low, high, &child);
      index_scope(&child, l, depth + 1, 1);
    } else if (tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_lexical_block ||
               (in_function && is_class(tag))) {
      index_scope(&child, l, depth + 1, in_function);
    } else if (tag == DW_TAG_imported_unit) {
      /* dwz moves DIEs shared between units into partial units that each
       * unit imports; their contents count as the unit's own. */
      Dwarf_Attribute attr;
      Dwarf_Die unit;
      if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit))
        index_scope(&unit, l, depth + 1, in_function);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

/* By start; at the same start (assembly gives one code range several
 * subprogram DIEs, as aliases) the first DIE goes last, where the lookup
 * looks first, so that we choose the DIE libdw would. */
static int sub_cmp(const void *pa, const void *pb) {
  const sub_range_t *a = pa, *b = pb;
  if (a->low != b->low)
    return a->low < b->low ? -1 : 1;
  Dwarf_Off oa = dwarf_dieoffset((Dwarf_Die *)&a->die);
  Dwarf_Off ob = dwarf_dieoffset((Dwarf_Die *)&b->die);
  return oa > ob ? -1 : oa < ob;
}

static struct cprof__cu_index *cu_index(cprof__dwarf_scopes_t *t, Dwarf_Die *cudie) {
  const void *key = cudie->addr;
  struct cprof__cu_index *known = cprof__ptr_table_find(t->v, t->cap, sizeof *t->v, key);
  if (known)
    return known;
  struct cprof__cu_index *slot =
      cprof__ptr_table_slot((void **)&t->v, &t->cap, t->len, sizeof *t->v, key);
  if (!slot)
    return NULL;
  sub_list_t l = {0};
  index_scope(cudie, &l, 0, 0);
  if (l.failed) {
    free(l.v);
    return NULL;
  }
  if (l.n > 1)
    qsort(l.v, (size_t)l.n, sizeof *l.v, sub_cmp);
  *slot = (struct cprof__cu_index){.key = key, .v = l.v, .n = l.n};
  t->len++;
  return slot;
}

/* The scopes containing pc, innermost first, ending with the subprogram:
 * from the unit's index, the innermost subprogram range holding pc, then
 * down through its inlined calls and blocks that hold pc. Returns the count
 * (0: no function here, -1: the index could not be used) and a malloc'd
 * array in *out. */
static int scopes_by_index(cprof__dwarf_scopes_t *t, Dwarf_Die *cudie, Dwarf_Addr pc,
                           Dwarf_Die **out) {
  *out = NULL;
  /* A unit without any function DIE we understand is left to libdw, which
   * knows more unit layouts than we do; such units are small. */
  const struct cprof__cu_index *ci = cu_index(t, cudie);
  if (!ci || ci->n == 0)
    return -1;
  int lo = (int)CPROF__PARTITION_POINT(ci->n, mid, ci->v[mid].low <= pc);
  /* Nested functions lie inside their parent's range: the latest start
   * that still covers pc is the innermost. */
  const sub_range_t *sub = NULL;
  for (int i = lo - 1; i >= 0 && i >= lo - 16 && !sub; i--)
    if (pc < ci->v[i].high)
      sub = &ci->v[i];
  if (!sub)
    return 0;

  int n = 1, cap = 16;
  Dwarf_Die *path = malloc((size_t)cap * sizeof *path); /* outermost first */
  if (!path)
    return -1;
  path[0] = sub->die;
  for (;;) {
    Dwarf_Die child;
    int found = 0;
    if (dwarf_child(&path[n - 1], &child) == 0) {
      do {
        int tag = dwarf_tag(&child);
        if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
             tag == DW_TAG_try_block || tag == DW_TAG_catch_block) &&
            dwarf_haspc(&child, pc) > 0) {
          found = 1;
          break;
        }
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    if (!found)
      break;
    if (n == cap) {
      Dwarf_Die *p = realloc(path, (size_t)cap * 2 * sizeof *p);
      if (!p) {
        free(path);
        return -1;
      }
      path = p;
      cap *= 2;
    }
    path[n++] = child;
  }
  for (int i = 0, j = n - 1; i < j; i++, j--) { /* innermost first */
    Dwarf_Die tmp = path[i];
    path[i] = path[j];
    path[j] = tmp;
  }
  *out = path;
  return n;
}

/* The same through libdw alone, for units the index cannot serve (an error
 * while indexing, or nothing indexed). dwarf_getscopes continues past an
 * inlined instance into the abstract definition's scopes, so we take only
 * its innermost DIE and ask for that DIE's physical parents, as eu-addr2line
 * does. */
static int scopes_by_libdw(Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die **out) {
  Dwarf_Die *scopes = NULL;
  int n = 0;
  *out = NULL;
  if (dwarf_getscopes(cudie, pc, &scopes) > 0) {
    Dwarf_Die inner = scopes[0];
    n = dwarf_getscopes_die(&inner, out);
    if (n < 0)
      n = 0;
  }
  free(scopes);
  return n;
}

int cprof__dwarf_scopes_at(cprof__dwarf_scopes_t *t, Dwarf_Die *cudie, Dwarf_Addr pc,
                           Dwarf_Die **out) {
  int n = scopes_by_index(t, cudie, pc, out);
  return n >= 0 ? n : scopes_by_libdw(cudie, pc, out);
}

static int unit_cmp(const void *pa, const void *pb) {
  const unit_range_t *a = pa, *b = pb;
  return a->low < b->low ? -1 : a->low > b->low;
}

/* Collects the ranges of every unit of mod. Returns 0 or -ENOMEM. */
static int index_units(Dwfl_Module *mod, void *entry) {
  struct cprof__module_units *mu = entry;
  memset(mu, 0, sizeof *mu);
  mu->mod = mod;
  int cap = 0;
  Dwarf_Die *cu = NULL;
  Dwarf_Addr bias;
  while ((cu = dwfl_module_nextcu(mod, cu, &bias)) != NULL) {
    mu->bias = bias;
    Dwarf_Addr base, low, high;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(cu, off, &base, &low, &high)) > 0) {
      if (low >= high)
        continue;
      if (mu->n == cap) {
        cap = cap ? cap * 2 : 64;
        unit_range_t *v = realloc(mu->v, (size_t)cap * sizeof *v);
        if (!v) {
          free(mu->v);
          mu->v = NULL;
          mu->n = 0;
          return -ENOMEM;
        }
        mu->v = v;
      }
      mu->v[mu->n++] = (unit_range_t){.low = low, .high = high, .cu = cu};
    }
  }
  if (mu->n > 1)
    qsort(mu->v, (size_t)mu->n, sizeof *mu->v, unit_cmp);
  return 0;
}

static const struct cprof__module_units *module_units(cprof__dwarf_scopes_t *t,
                                                      Dwfl_Module *mod) {
  return cprof__module_entry((void **)&t->mods, &t->nmods, &t->capmods, sizeof *t->mods, mod,
                             index_units);
}

Dwarf_Die *cprof__dwarf_unit_at(cprof__dwarf_scopes_t *t, Dwfl_Module *mod, Dwarf_Addr addr,
                                Dwarf_Addr *bias) {
  Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, bias);
  if (cu)
    return cu;
  const struct cprof__module_units *mu = module_units(t, mod);
  if (!mu || mu->n == 0 || addr < mu->bias)
    return NULL;
  Dwarf_Addr pc = addr - mu->bias;
  int lo = (int)CPROF__PARTITION_POINT(mu->n, mid, mu->v[mid].low <= pc);
  if (lo == 0 || pc >= mu->v[lo - 1].high)
    return NULL;
  *bias = mu->bias;
  return mu->v[lo - 1].cu;
}

static int copy_cmp(const void *pa, const void *pb) {
  const copy_t *a = pa, *b = pb;
  if (a->origin != b->origin)
    return (uintptr_t)a->origin < (uintptr_t)b->origin ? -1 : 1;
  return a->entry < b->entry ? -1 : a->entry > b->entry;
}

/* Where a function's code starts: DW_AT_entry_pc or DW_AT_low_pc, else
 * (a function split into hot and cold parts has only DW_AT_ranges) the
 * start of its first range, the hot part, which is where its symbol is. */
static int entry_of(Dwarf_Die *die, Dwarf_Addr *entry) {
  if (dwarf_entrypc(die, entry) == 0)
    return 0;
  Dwarf_Addr base, low, high;
  if (dwarf_ranges(die, 0, &base, &low, &high) > 0) {
    *entry = low;
    return 0;
  }
  return -1;
}

/* The unit's concrete functions that have an abstract instance, once. */
static void build_copies(struct cprof__cu_index *ci) {
  ci->copies_built = 1;
  copy_t *v = malloc((size_t)(ci->n ? ci->n : 1) * sizeof *v);
  if (!v)
    return;
  int n = 0;
  for (int i = 0; i < ci->n; i++) {
    /* A function in several ranges is here once per range: the copies
     * repeat, harmlessly. */
    Dwarf_Die *die = &ci->v[i].die;
    Dwarf_Attribute attr;
    Dwarf_Die origin;
    Dwarf_Addr entry;
    if (dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &attr), &origin) &&
        entry_of(die, &entry) == 0)
      v[n++] = (copy_t){.origin = origin.addr, .entry = entry};
  }
  if (n > 1)
    qsort(v, (size_t)n, sizeof *v, copy_cmp);
  ci->copies = v;
  ci->ncopies = n;
}

int cprof__dwarf_copy_entry(cprof__dwarf_scopes_t *t, Dwarf_Die *cudie, Dwarf_Die *origin,
                            Dwarf_Addr *entry) {
  struct cprof__cu_index *ci = cu_index(t, cudie);
  if (!ci)
    return -1;
  if (!ci->copies_built)
    build_copies(ci);
  /* The first copy at or after origin. */
  int lo = (int)CPROF__PARTITION_POINT(ci->ncopies, mid,
                                       (uintptr_t)ci->copies[mid].origin < (uintptr_t)origin->addr);
  if (lo == ci->ncopies || ci->copies[lo].origin != origin->addr)
    return -1;
  *entry = ci->copies[lo].entry;
  return 0;
}

int cprof__dwarf_entry(Dwarf_Die *die, Dwarf_Addr *entry) { return entry_of(die, entry); }

void cprof__dwarf_scopes_free(cprof__dwarf_scopes_t *t) {
  for (size_t i = 0; i < t->cap; i++) {
    free(t->v[i].v);
    free(t->v[i].copies);
  }
  free(t->v);
  for (int i = 0; i < t->nmods; i++)
    free(t->mods[i].v);
  free(t->mods);
  memset(t, 0, sizeof *t);
}
