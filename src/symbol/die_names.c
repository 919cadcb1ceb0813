/* Function names from DWARF, as `nm -C` and `addr2line -f -C` show them.
 *
 * A C++ function's DW_AT_name is only its last part ("fill", "make<int>",
 * "operator()"); its linkage name, demangled, is the whole of it
 * ("shop::fill(double)", "int* shop::make<int>(unsigned long)"), and only
 * that keeps overloads and template instances apart. GCC gives some C++
 * functions no linkage name at all: a lambda's operator() (so every lambda
 * would be "operator()"), a static function, a template instance whose
 * arguments name a lambda. For those, in order:
 *
 * 1. The symbol at the start of the function's code, demangled:
 *    "main::{lambda(int)#1}::operator()(int) const", as nm -C lists it. For
 *    a frame inlined from the function, the code of its out-of-line copy,
 *    if the unit has one. A clone's suffix (".constprop.0") is left out,
 *    as a linkage name has none. The symbol is taken only if it is a C++
 *    name and names this function (its demangled form has the identifier
 *    of the DWARF name followed by template arguments or parameters), so
 *    that another function's symbol at the same address (identical code
 *    folded by the linker) is not used.
 * 2. Inlined everywhere, such a function has no symbol: its name is made
 *    from its DWARF parents, "std::__invoke<main()::<lambda()> >",
 *    "main::{lambda at prog.cpp:87}::operator()". The number nm -C would
 *    give the lambda (#3) is the compiler's, and DWARF does not record it;
 *    the line where it is written keeps it apart from its neighbours
 *    instead.
 *
 * C functions, and C++ ones declared extern "C", have no linkage name and
 * keep their plain names, as nm shows them. A linkage name that is not a
 * mangled name is an assembler label (glibc calls __libc_malloc
 * "__GI___libc_malloc" that way): the source name is shown for it. */
#include "symbol/die_names.h"

#include <dwarf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/search.h"
#include "symbol/ptr_table.h"

/* The children of a scope, in DWARF's order, which is by offset. */
struct cprof__die_kids {
  const void *key; /* the scope DIE's address in libdw's data */
  Dwarf_Die *v;
  int n;
};

/* One worked-out name, and the symbol it came from (NULL: none). Both
 * are ours to free. */
struct cprof__die_name {
  const void *key; /* the DIE's address in libdw's data */
  char *name, *system;
};

/* How deep a lambda may sit in other lambdas' bodies before we stop naming
 * its parents: a guard against malformed DWARF. */
#define MAX_DEPTH 8

static const char *name_of(cprof__die_names_t *t, const cprof__die_name_ctx_t *c, Dwarf_Die *die,
                           const char **system, int depth);

static int is_mangled(const char *s) { return s && s[0] == '_' && s[1] == 'Z'; }

static const char *linkage_name(Dwarf_Die *die) {
  Dwarf_Attribute attr;
  const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (!name)
    name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
  return name;
}

/* The DIE that holds die's DW_AT_name: die itself, or the one its
 * DW_AT_abstract_origin or DW_AT_specification lead to (an inlined call,
 * an out-of-line copy, a member defined outside its class). */
static int named_die(Dwarf_Die *die, Dwarf_Die *out) {
  Dwarf_Die cur = *die;
  for (int i = 0; i < 8; i++) {
    if (dwarf_hasattr(&cur, DW_AT_name)) {
      *out = cur;
      return 1;
    }
    Dwarf_Attribute attr;
    Dwarf_Die next;
    if (!dwarf_formref_die(dwarf_attr(&cur, DW_AT_abstract_origin, &attr), &next) &&
        !dwarf_formref_die(dwarf_attr(&cur, DW_AT_specification, &attr), &next))
      return 0;
    cur = next;
  }
  return 0;
}

static int is_cxx(Dwarf_Die *die) {
  Dwarf_Die cu;
  if (!dwarf_diecu(die, &cu, NULL, NULL))
    return 0;
  int lang = dwarf_srclang(&cu);
  return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
         lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

static int is_class(int tag) {
  return tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type;
}

/* ---- the cache ------------------------------------------------------------ */

/* Both caches are tables of symbol/ptr_table.h, on pointers into libdw's data. */

static const struct cprof__die_name *find(const cprof__die_names_t *t, const void *key) {
  return cprof__ptr_table_find(t->v, t->cap, sizeof *t->v, key);
}

/* Keeps name and system (malloc'd, or NULL) for key. Returns the entry,
 * or NULL without room for it, having freed both. */
static const struct cprof__die_name *remember(cprof__die_names_t *t, const void *key, char *name,
                                              char *system) {
  struct cprof__die_name *e =
      cprof__ptr_table_slot((void **)&t->v, &t->cap, t->len, sizeof *t->v, key);
  if (!e) {
    free(name);
    free(system);
    return NULL;
  }
  *e = (struct cprof__die_name){.key = key, .name = name, .system = system};
  t->len++;
  return e;
}

void cprof__die_names_free(cprof__die_names_t *t) {
  for (size_t i = 0; i < t->cap; i++) {
    free(t->v[i].name);
    free(t->v[i].system);
  }
  for (size_t i = 0; i < t->kcap; i++)
    free(t->kids[i].v);
  free(t->kids);
  free(t->v);
  memset(t, 0, sizeof *t);
}

/* ---- 1: the symbol of the function's code -------------------------------- */

/* Whether a demangled name names the function DWARF calls plain: it has
 * plain's identifier followed by template arguments or parameters. Only
 * the identifier, because GCC spells template arguments its own way in
 * DW_AT_name ("f<main()::<lambda()> >" for f<main::{lambda()#1}>). */
static int names_it(const char *demangled, const char *plain) {
  size_t len = strcspn(plain, "<(");
  if (len == 0)
    return 0;
  for (const char *p = demangled; *p; p++)
    if (strncmp(p, plain, len) == 0 && (p[len] == '(' || p[len] == '<'))
      return 1;
  return 0;
}

/* The DWARF address where the code of die's function starts: its own, or,
 * for an inlined call or an abstract instance (a function named as the
 * scope of a lambda), that of an out-of-line copy of it. */
static int code_entry(const cprof__die_name_ctx_t *c, Dwarf_Die *die, Dwarf_Addr *entry) {
  Dwarf_Attribute attr;
  Dwarf_Die origin = *die;
  if (dwarf_tag(die) == DW_TAG_inlined_subroutine) {
    if (!dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &attr), &origin))
      return -1;
  } else if (cprof__dwarf_entry(die, entry) == 0) {
    return 0;
  }
  return cprof__dwarf_copy_entry(c->scopes, c->cudie, &origin, entry);
}

/* The demangled symbol that starts where die's function's code does, or
 * NULL; and in *system that symbol. Both malloc'd. */
static char *symbol_name(const cprof__die_name_ctx_t *c, Dwarf_Die *die, const char *plain,
                         char **system) {
  Dwarf_Addr entry;
  if (!cprof__names_demangler(c->names) || code_entry(c, die, &entry) != 0)
    return NULL;
  uintptr_t at = (uintptr_t)(entry + c->bias);
  /* The floor at the entry: a symbol without a size counts only if it
   * starts right there. */
  const cprof__elf_func_t *f = cprof__elf_funcs_find(c->funcs, c->mod, at, at);
  if (!f || f->start != at || !is_mangled(f->name))
    return NULL;
  /* Mangled names hold no '.', and '@' starts a symbol version. */
  char *cut = strndup(f->name, strcspn(f->name, ".@"));
  if (!cut)
    return NULL;
  int status = -1;
  char *shown = c->names->demangle(cut, NULL, NULL, &status);
  if (status != 0 || !shown || !names_it(shown, plain)) {
    free(shown);
    free(cut);
    return NULL;
  }
  *system = cut;
  return shown;
}

/* ---- 2: the name made from DWARF parents --------------------------------- */

/* An unnamed class: a lambda's closure (the class of an operator() with no
 * name), or another unnamed type, told apart by where it is written. */
static void put_unnamed(cprof__buf_t *b, Dwarf_Die *cls, int closure) {
  const char *file = dwarf_decl_file(cls);
  int line = 0;
  cprof__buf_puts(b, closure ? "{lambda" : "{unnamed type");
  if (file && dwarf_decl_line(cls, &line) == 0) {
    const char *base = strrchr(file, '/');
    char num[24];
    snprintf(num, sizeof num, ":%d", line);
    cprof__buf_puts(b, " at ");
    cprof__buf_puts(b, base ? base + 1 : file);
    cprof__buf_puts(b, num);
  }
  cprof__buf_puts(b, "}");
}

/* One scope of a member function's name: a namespace, a class, or the
 * function it is written in, whose own name is already whole. */
static void put_scope(cprof__die_names_t *t, const cprof__die_name_ctx_t *c, cprof__buf_t *b,
                      Dwarf_Die *scope, int closure, int depth) {
  int tag = dwarf_tag(scope);
  const char *name = dwarf_diename(scope);
  if (tag == DW_TAG_namespace) {
    cprof__buf_puts(b, name ? name : "(anonymous namespace)");
  } else if (is_class(tag)) {
    if (name)
      cprof__buf_puts(b, name);
    else
      put_unnamed(b, scope, closure);
  } else {
    const char *system;
    const char *fn = depth < MAX_DEPTH ? name_of(t, c, scope, &system, depth + 1) : NULL;
    cprof__buf_puts(b, fn ? fn : "?");
  }
}

/* How many scopes deep a function may be declared for us to name it. */
#define MAX_SCOPES 32

/* The children of scope, listed on first use. A unit or a namespace may
 * have thousands, and every function named from its parents looks through
 * them (parents_of): a list to search halves the work once and makes the
 * rest a binary search. NULL on failure or for a scope without children. */
static const struct cprof__die_kids *kids_of(cprof__die_names_t *t, Dwarf_Die *scope) {
  struct cprof__die_kids *known =
      cprof__ptr_table_find(t->kids, t->kcap, sizeof *t->kids, scope->addr);
  if (known)
    return known->v ? known : NULL;
  struct cprof__die_kids *slot =
      cprof__ptr_table_slot((void **)&t->kids, &t->kcap, t->klen, sizeof *t->kids, scope->addr);
  if (!slot)
    return NULL;
  struct cprof__die_kids l = {.key = scope->addr};
  Dwarf_Die child;
  int cap = 0;
  if (dwarf_child(scope, &child) == 0) {
    do {
      if (l.n == cap) {
        cap = cap ? cap * 2 : 16;
        Dwarf_Die *v = realloc(l.v, (size_t)cap * sizeof *v);
        if (!v) {
          free(l.v);
          return NULL;
        }
        l.v = v;
      }
      l.v[l.n++] = child;
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  *slot = l; /* kept even when empty, not to list it again */
  t->klen++;
  return l.v ? slot : NULL;
}

/* The scopes enclosing die, innermost first, short of its unit; or -1.
 * DWARF lays a DIE's children out after it and before its next sibling, so
 * from the unit down, the scope holding die is the last child at or before
 * its offset. dwarf_getscopes_die walks the whole unit instead: with 2000
 * lambdas in one unit, naming them all took 13 s that way. */
static int parents_of(cprof__die_names_t *t, Dwarf_Die *die, Dwarf_Die *out, int max) {
  Dwarf_Die scope;
  if (!dwarf_diecu(die, &scope, NULL, NULL))
    return -1;
  Dwarf_Off want = dwarf_dieoffset(die);
  for (int n = 0;; n++) {
    const struct cprof__die_kids *kids = kids_of(t, &scope);
    if (!kids)
      return -1;
    /* How many children start at or before want. */
    int lo = (int)CPROF__PARTITION_POINT(kids->n, mid, dwarf_dieoffset(&kids->v[mid]) <= want);
    if (lo == 0)
      return -1;
    if (dwarf_dieoffset(&kids->v[lo - 1]) == want) {
      for (int i = 0, j = n - 1; i < j; i++, j--) {
        Dwarf_Die tmp = out[i];
        out[i] = out[j];
        out[j] = tmp;
      }
      return n;
    }
    if (n == max)
      return -1;
    out[n] = scope = kids->v[lo - 1];
  }
}

/* "outer::scopes::plain" for named, from its DWARF parents; NULL when it
 * is declared at the top of its unit, where a C++ function without a
 * linkage name is extern "C" (or main), and plain is its name. malloc'd. */
static char *qualified(cprof__die_names_t *t, const cprof__die_name_ctx_t *c, Dwarf_Die *named,
                       const char *plain, int depth) {
  Dwarf_Die scopes[MAX_SCOPES];
  int n = parents_of(t, named, scopes, MAX_SCOPES);
  int first = 0;
  while (first < n && dwarf_tag(&scopes[first]) == DW_TAG_lexical_block)
    first++;
  if (first >= n ||
      (!is_class(dwarf_tag(&scopes[first])) && dwarf_tag(&scopes[first]) != DW_TAG_namespace))
    return NULL;
  /* The outermost scope that is part of the name: the enclosing function,
   * whose own name is whole, or else the outermost namespace. */
  int last = first;
  for (int i = first; i < n; i++) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_namespace || is_class(tag) || tag == DW_TAG_subprogram)
      last = i;
    if (tag == DW_TAG_subprogram)
      break;
  }
  int closure = strncmp(plain, "operator()", 10) == 0;
  cprof__buf_t b;
  cprof__buf_init(&b);
  for (int i = last; i >= first; i--) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_namespace && !is_class(tag) && tag != DW_TAG_subprogram)
      continue;
    put_scope(t, c, &b, &scopes[i], closure && i == first, depth);
    cprof__buf_puts(&b, "::");
  }
  cprof__buf_puts(&b, plain);
  if (b.failed) {
    cprof__buf_free(&b);
    return NULL;
  }
  return cprof__buf_take(&b, NULL);
}

/* ---- the name -------------------------------------------------------------- */

static const char *name_of(cprof__die_names_t *t, const cprof__die_name_ctx_t *c, Dwarf_Die *die,
                           const char **system, int depth) {
  const char *linkage = linkage_name(die);
  *system = NULL;
  if (is_mangled(linkage)) {
    const char *shown = cprof__names_show(c->names, linkage);
    if (shown != linkage)
      *system = linkage;
    return shown;
  }
  Dwarf_Attribute attr;
  const char *plain = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  if (linkage || !plain || !is_cxx(die))
    return plain ? plain : cprof__names_show(c->names, linkage);

  /* A C++ function without a linkage name. Its answer is kept under the
   * DIE all its copies and inlined calls share: the abstract instance. */
  Dwarf_Die origin, named;
  if (!dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &attr), &origin))
    origin = *die;
  const struct cprof__die_name *known = find(t, origin.addr);
  if (!known) {
    char *sym = NULL;
    char *name = symbol_name(c, die, plain, &sym);
    /* A made name has no symbol; its system name is the one debuggers
     * and addr2line -i show, DWARF's own. */
    if (!name && named_die(die, &named) && (name = qualified(t, c, &named, plain, depth)) &&
        !(sym = strdup(plain))) {
      free(name);
      name = NULL;
    }
    /* Remembered even when it is plain (name NULL), not to look again. */
    known = remember(t, origin.addr, name, sym);
  }
  if (!known || !known->name)
    return plain;
  *system = known->system;
  return known->name;
}

const char *cprof__die_name(cprof__die_names_t *t, const cprof__die_name_ctx_t *c, Dwarf_Die *die,
                            const char **system) {
  return name_of(t, c, die, system, 0);
}
