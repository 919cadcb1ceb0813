/* The symbolizer's module report (cprof__dwfl_report_maps), from maps text:
 * which mappings become one module, over what range, under what name. It
 * replaced libdw's dwfl_linux_proc_report, which groups a file's mappings
 * the same way. Reporting opens no file (find_elf runs on first use), so
 * the paths need not exist. And, on this process's own maps, it reports a
 * module at every code mapping libdw's report knows, over the same range. */
#include "check.h"
#include "symbol/dwfl_files.h"
#include "unwind/maps.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct module {
  char name[128];
  uint64_t low, high;
} module_t;

typedef struct modules {
  module_t v[64];
  int n;
} modules_t;

static int collect(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr low, void *arg) {
  modules_t *ms = arg;
  Dwarf_Addr start, end;
  if (ms->n < 64 && dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL)) {
    module_t *m = &ms->v[ms->n++];
    snprintf(m->name, sizeof m->name, "%s", name);
    m->low = start;
    m->high = end;
  }
  return DWARF_CB_OK;
}

/* The modules of a Dwfl, in address order. */
static int by_low(const void *a, const void *b) {
  const module_t *x = a, *y = b;
  return x->low < y->low ? -1 : x->low > y->low;
}

static void modules_of(Dwfl *dwfl, modules_t *ms) {
  ms->n = 0;
  dwfl_getmodules(dwfl, collect, ms, 0);
  qsort(ms->v, (size_t)ms->n, sizeof ms->v[0], by_low);
}

static Dwfl *report(const cprof__maps_t *m) {
  Dwfl *dwfl = dwfl_begin(&cprof__dwfl_callbacks);
  if (!dwfl)
    return NULL;
  dwfl_report_begin(dwfl);
  CHECK_EQ_INT(cprof__dwfl_report_maps(dwfl, m), 0);
  CHECK_EQ_INT(dwfl_report_end(dwfl, NULL, NULL), 0);
  return dwfl;
}

static const char text[] =
    /* A program: headers, code, read-only data, data, and its .bss. */
    "555500000000-555500001000 r--p 00000000 08:01 11 /usr/bin/prog\n"
    "555500001000-555500005000 r-xp 00001000 08:01 11 /usr/bin/prog\n"
    "555500005000-555500006000 r--p 00005000 08:01 11 /usr/bin/prog\n"
    "555500006000-555500007000 rw-p 00006000 08:01 11 /usr/bin/prog\n"
    "555500007000-555500008000 rw-p 00000000 00:00 0 \n"
    "555500100000-555500200000 rw-p 00000000 00:00 0 [heap]\n"
    /* A data file the program maps: no code, no module. */
    "7f0000000000-7f0000100000 r--s 00000000 08:01 12 /var/lib/db/data\n"
    /* A library, its .bss in between its mappings. */
    "7f0000200000-7f0000201000 r--p 00000000 08:01 13 /lib/libx.so\n"
    "7f0000201000-7f0000203000 r-xp 00001000 08:01 13 /lib/libx.so\n"
    "7f0000203000-7f0000204000 rw-p 00000000 00:00 0 \n"
    "7f0000204000-7f0000205000 rw-p 00003000 08:01 13 /lib/libx.so\n"
    /* Two files with one path (replaced and loaded again): two modules. */
    "7f0000300000-7f0000301000 r-xp 00000000 08:01 14 /lib/liby.so\n"
    "7f0000301000-7f0000302000 r-xp 00000000 08:01 15 /lib/liby.so\n"
    /* Deleted: the name keeps the kernel's marker for find_elf. */
    "7f0000400000-7f0000401000 r--p 00000000 08:01 16 /lib/libgone.so (deleted)\n"
    "7f0000401000-7f0000402000 r-xp 00001000 08:01 16 /lib/libgone.so (deleted)\n"
    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
    "7ffd00100000-7ffd00104000 r--p 00000000 00:00 0 [vvar]\n"
    "7ffd00104000-7ffd00106000 r-xp 00000000 00:00 0 [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";

static const module_t want[] = {
    {"/usr/bin/prog", 0x555500000000, 0x555500007000},
    {"/lib/libx.so", 0x7f0000200000, 0x7f0000205000},
    {"/lib/liby.so", 0x7f0000300000, 0x7f0000301000},
    {"/lib/liby.so", 0x7f0000301000, 0x7f0000302000},
    {"/lib/libgone.so (deleted)", 0x7f0000400000, 0x7f0000402000},
    {CPROF_DWFL_VDSO, 0x7ffd00104000, 0x7ffd00106000},
};

static void test_table(void) {
  cprof__maps_t m;
  char *t = strdup(text);
  CHECK(t != NULL);
  if (!t || cprof__maps_parse(&m, t) != 0)
    return;
  Dwfl *dwfl = report(&m);
  CHECK(dwfl != NULL);
  if (dwfl) {
    modules_t got;
    modules_of(dwfl, &got);
    int n = (int)(sizeof want / sizeof want[0]);
    CHECK_EQ_INT(got.n, n);
    for (int i = 0; i < n && i < got.n; i++) {
      CHECK_EQ_STR(got.v[i].name, want[i].name);
      CHECK_EQ_INT(got.v[i].low, want[i].low);
      CHECK_EQ_INT(got.v[i].high, want[i].high);
    }
    dwfl_end(dwfl);
  }
  cprof__maps_free(&m);
}

/* This process: every module libdw's own report gives a code mapping
 * (it reports data files too), ours gives, over the same range. */
static void test_live(void) {
  cprof__maps_t m;
  CHECK_EQ_INT(cprof__maps_read(&m), 0);
  Dwfl *ours = report(&m);
  Dwfl *libdw = dwfl_begin(&cprof__dwfl_callbacks);
  CHECK(ours && libdw);
  if (ours && libdw) {
    dwfl_report_begin(libdw);
    CHECK_EQ_INT(dwfl_linux_proc_report(libdw, getpid()), 0);
    dwfl_report_end(libdw, NULL, NULL);
    int code = 0;
    for (int i = 0; i < m.n; i++) {
      const cprof__map_entry_t *e = &m.v[i];
      if (e->perms[2] != 'x' || (e->path[0] != '/' && strcmp(e->path, "[vdso]") != 0))
        continue;
      code++;
      Dwfl_Module *a = dwfl_addrmodule(ours, e->start), *b = dwfl_addrmodule(libdw, e->start);
      Dwarf_Addr alow = 0, ahigh = 0, blow = 1, bhigh = 1;
      CHECK(a && dwfl_module_info(a, NULL, &alow, &ahigh, NULL, NULL, NULL, NULL));
      CHECK(b && dwfl_module_info(b, NULL, &blow, &bhigh, NULL, NULL, NULL, NULL));
      CHECK_EQ_INT(alow, blow);
      CHECK_EQ_INT(ahigh, bhigh);
    }
    CHECK(code >= 3); /* us, libc, ld.so */
  }
  if (ours)
    dwfl_end(ours);
  if (libdw)
    dwfl_end(libdw);
  cprof__maps_free(&m);
}

int main(void) {
  test_table();
  test_live();
  return check_result("symbol/test_dwfl_report");
}
