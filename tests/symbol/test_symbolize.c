/* The libdw symbolizer on this very process: our own functions (name, file,
 * line, inline frames), libc, C++ demangling, odd addresses, reuse and
 * rebuild of the process-wide instance, no descriptor held between uses, its
 * idle end, threads and fork; and, in children
 * running changed copies of this binary, a deleted executable and one
 * without .debug_aranges. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "check.h"
#include "core/fds.h"
#include "symbol/dwfl_files.h"
#include "symbol/symbolize.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>
#include <elfutils/libdwfl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
/* noipa as well, so GCC cannot specialise or merge these functions. */
#define NOINLINE __attribute__((noinline, noipa))
#endif

/* Sets `line` to the line this is written on, then evaluates `expr`. Kept to
 * one statement so the line of the call in `expr` is the line recorded. */
#define WITH_LINE(line, expr) ((line) = __LINE__, (expr))

/* ---- counting Dwfl builds -------------------------------------------------
 * The symbolizer is linked statically into this program, so this definition
 * of dwfl_begin is the one it calls: counting here tells us when it rebuilt,
 * without any hook in the library. The real one is next in lookup order. */
static int dwfl_builds;
Dwfl *dwfl_begin(const Dwfl_Callbacks *callbacks) {
  static Dwfl *(*real)(const Dwfl_Callbacks *);
  if (!real)
    real = (Dwfl * (*)(const Dwfl_Callbacks *)) dlsym(RTLD_NEXT, "dwfl_begin");
  dwfl_builds++;
  return real ? real(callbacks) : NULL;
}

/* ---- code with known positions ------------------------------------------ */

/* The pc of the call instruction that called us: the return address minus
 * one lies inside the call, so it maps to the caller's line of the call. */
NOINLINE static uintptr_t caller_pc(void) { return (uintptr_t)__builtin_return_address(0) - 1; }

static int target_line;
NOINLINE static uintptr_t sym_target(void) {
  uintptr_t pc = WITH_LINE(target_line, caller_pc());
  return pc;
}

static inline __attribute__((always_inline)) uintptr_t sym_inlined_leaf(int *line) {
  uintptr_t pc;
  {
    /* A block with a variable of its own becomes a DW_TAG_lexical_block
     * between the pc and the inlined instance, which the scope walk must
     * step over. */
    volatile uintptr_t scoped = 1;
    pc = WITH_LINE(*line, caller_pc()) * scoped;
  }
  return pc;
}

/* A second level, so the walk must go from one inlined instance to the
 * next and not only to the real function. */
static inline __attribute__((always_inline)) uintptr_t sym_inlined_mid(int *leaf_line,
                                                                         int *mid_line) {
  uintptr_t pc = WITH_LINE(*mid_line, sym_inlined_leaf(leaf_line));
  return pc;
}

NOINLINE static uintptr_t sym_inline_caller(int *leaf_line, int *mid_line, int *call_line) {
  uintptr_t pc = WITH_LINE(*call_line, sym_inlined_mid(leaf_line, mid_line));
  return pc;
}

/* A C function with an assembler name: DWARF records the label as its
 * linkage name, but the name in the source is the one people know. */
NOINLINE uintptr_t sym_asm_named(void) __asm__("sym_asm_label");
NOINLINE uintptr_t sym_asm_named(void) { return caller_pc(); }

static int ends_with(const char *s, const char *suffix) {
  if (!s)
    return 0;
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int is_hex_id(const char *s, size_t len) {
  if (!s || strlen(s) != len)
    return 0;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
      return 0;
  return 1;
}

static void print_frames(const char *what, const cprof__frame_t *f, int n) {
  for (int i = 0; i < n; i++)
    fprintf(stderr, "  %s #%d %s at %s:%d\n", what, i, f[i].function ? f[i].function : "?",
            f[i].file ? f[i].file : "?", f[i].line);
}

/* ---- tests --------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_own_function(void) {
  uintptr_t pc = sym_target();
  /* The first acquire builds the Dwfl. Its cost is printed for the record,
   * not checked: timings belong in benchmarks, not in tests. */
  double t0 = now_ms();
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  double t1 = now_ms();
  const cprof__mapping_t *maps;
  fprintf(stderr, "first acquire (maps + Dwfl build, %d mappings): %.1f ms\n",
          cprof__symbolizer_mappings(s, &maps), t1 - t0);
  CHECK(s != NULL);
  cprof__frame_t f[8];
  uintptr_t off = 12345;
  int n = cprof__symbolize(s, pc, f, 8, &off);
  CHECK_EQ_INT(n, 1);
  if (n >= 1) {
    CHECK_EQ_STR(f[0].function, "sym_target");
    CHECK(ends_with(f[0].file, "tests/symbol/test_symbolize.c"));
    CHECK_EQ_INT(f[0].line, target_line);
  }
  CHECK_EQ_INT(off, pc - (uintptr_t)&sym_target);
  CHECK_EQ_STR(cprof__symbolize_name(s, pc), "sym_target");

  /* A function's first instruction belongs to it, too. */
  n = cprof__symbolize(s, (uintptr_t)&sym_target, f, 8, &off);
  CHECK(n >= 1 && f[n - 1].function && strcmp(f[n - 1].function, "sym_target") == 0);
  CHECK_EQ_INT(off, 0);

  CHECK_EQ_STR(cprof__symbolize_name(s, (uintptr_t)&sym_asm_named), "sym_asm_named");
  (void)sym_asm_named();

  /* max bounds what is written. */
  CHECK_EQ_INT(cprof__symbolize(s, pc, f, 0, NULL), 0);
  cprof__symbolizer_release(s);
}

static void test_inline(void) {
  int leaf_line = 0, mid_line = 0, call_line = 0;
  uintptr_t pc = sym_inline_caller(&leaf_line, &mid_line, &call_line);
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  cprof__frame_t f[8];
  uintptr_t off;
  int n = cprof__symbolize(s, pc, f, 8, &off);
  CHECK_EQ_INT(n, 3);
  if (n == 3) {
    CHECK_EQ_STR(f[0].function, "sym_inlined_leaf");
    CHECK(ends_with(f[0].file, "test_symbolize.c"));
    CHECK_EQ_INT(f[0].line, leaf_line);
    CHECK_EQ_STR(f[1].function, "sym_inlined_mid");
    CHECK(ends_with(f[1].file, "test_symbolize.c"));
    CHECK_EQ_INT(f[1].line, mid_line);
    CHECK_EQ_STR(f[2].function, "sym_inline_caller");
    CHECK(ends_with(f[2].file, "test_symbolize.c"));
    CHECK_EQ_INT(f[2].line, call_line);
  } else {
    print_frames("inline", f, n);
  }
  CHECK_EQ_INT(off, pc - (uintptr_t)&sym_inline_caller);
  /* The symbol endpoint names the real function, not the inlined ones. */
  CHECK_EQ_STR(cprof__symbolize_name(s, pc), "sym_inline_caller");
  /* With less room, the innermost frames come first. */
  n = cprof__symbolize(s, pc, f, 2, NULL);
  CHECK_EQ_INT(n, 2);
  CHECK_EQ_STR(f[0].function, "sym_inlined_leaf");
  CHECK_EQ_STR(f[1].function, "sym_inlined_mid");
  cprof__symbolizer_release(s);
}

static void test_mappings(void) {
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  CHECK(len > 0);
  exe[len > 0 ? len : 0] = '\0';

  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  const cprof__mapping_t *m;
  int n = cprof__symbolizer_mappings(s, &m);
  CHECK(n >= 3); /* us, libc, ld.so at least */
  if (n < 1) {
    cprof__symbolizer_release(s);
    return;
  }
  CHECK_EQ_STR(m[0].path, exe);
  CHECK(is_hex_id(m[0].build_id, 40));
  CHECK(m[0].has_symbols);
  CHECK(m[0].has_dwarf);
  CHECK(m[0].start < m[0].limit);

  /* After the program's own mappings, the rest go by address. */
  int i = 0;
  while (i < n && strcmp(m[i].path, exe) == 0)
    i++;
  for (int j = i + 1; j < n; j++)
    CHECK(m[j - 1].start < m[j].start);
  int vdso = 0;
  for (int j = 0; j < n; j++) {
    CHECK(m[j].path && (m[j].path[0] == '/' || strcmp(m[j].path, "[vdso]") == 0));
    CHECK(m[j].build_id != NULL);
    CHECK_EQ_INT(cprof__symbolizer_mapping_of(s, m[j].start), j);
    CHECK_EQ_INT(cprof__symbolizer_mapping_of(s, m[j].limit - 1), j);
    vdso += strcmp(m[j].path, "[vdso]") == 0;
  }
  CHECK_EQ_INT(vdso, 1);

  int k = cprof__symbolizer_mapping_of(s, (uintptr_t)&sym_target);
  CHECK(k >= 0 && k < n && strcmp(m[k].path, exe) == 0);
  CHECK_EQ_INT(cprof__symbolizer_mapping_of(s, 0), -1);
  CHECK_EQ_INT(cprof__symbolizer_mapping_of(s, UINTPTR_MAX), -1);
  cprof__symbolizer_release(s);
}

static void test_libc(void) {
  void *getpid_addr = dlsym(RTLD_DEFAULT, "getpid");
  CHECK(getpid_addr != NULL);
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  const char *name = cprof__symbolize_name(s, (uintptr_t)getpid_addr);
  CHECK(name && strstr(name, "getpid"));
  cprof__frame_t f[8];
  int n = cprof__symbolize(s, (uintptr_t)getpid_addr, f, 8, NULL);
  CHECK(n >= 1 && f[n - 1].function && strstr(f[n - 1].function, "getpid"));

  const cprof__mapping_t *m;
  cprof__symbolizer_mappings(s, &m);
  int k = cprof__symbolizer_mapping_of(s, (uintptr_t)getpid_addr);
  CHECK(k >= 0);
  if (k >= 0) {
    CHECK(strstr(m[k].path, "/libc.so") != NULL);
    CHECK(is_hex_id(m[k].build_id, 40));
    CHECK(m[k].has_symbols);
  }
  cprof__symbolizer_release(s);
}

/* has_dwarf is read from section headers, without loading the DWARF: it
 * must say what loading it would, for every module of this process, which
 * the mapping flags of every profile depend on. */
static void test_dwarf_probe(void) {
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  const cprof__mapping_t *m;
  int n = cprof__symbolizer_mappings(s, &m);
  Dwfl *dwfl = dwfl_begin(&cprof__dwfl_callbacks);
  CHECK(dwfl != NULL);
  if (dwfl) {
    dwfl_report_begin(dwfl);
    dwfl_linux_proc_report(dwfl, getpid());
    dwfl_report_end(dwfl, NULL, NULL);
    for (int i = 0; i < n; i++) {
      Dwfl_Module *mod = dwfl_addrmodule(dwfl, m[i].start);
      Dwarf_Addr bias;
      int loaded = mod && dwfl_module_getdwarf(mod, &bias) != NULL;
      if (loaded != m[i].has_dwarf)
        fprintf(stderr, "  %s: has_dwarf %d, libdw %d\n", m[i].path, m[i].has_dwarf, loaded);
      CHECK_EQ_INT(m[i].has_dwarf, loaded);
      CHECK(!m[i].heavy_dwarf || m[i].has_dwarf);
    }
    dwfl_end(dwfl);
  }
  cprof__symbolizer_release(s);
}

static int quick_seen_dwarf = -1;

static void *quick_other_thread(void *arg) {
  int k = *(int *)arg;
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  quick_seen_dwarf = cprof__symbolizer_uses_dwarf(s, k);
  cprof__symbolizer_release(s);
  return NULL;
}

/* Quick mode (profiles written at exit): our own code, whose DWARF is cheap,
 * keeps names, files, lines and inlined frames; a module whose DWARF is
 * costly (libc's, where a compressed debug file is installed, as Debian's
 * libc6-dbg is) gets names from its symbol table alone; another thread is
 * not affected. */
static void test_quick(void) {
  int leaf_line = 0, mid_line = 0, call_line = 0;
  uintptr_t pc = sym_inline_caller(&leaf_line, &mid_line, &call_line);
  void *getpid_addr = dlsym(RTLD_DEFAULT, "getpid");
  cprof__symbolizer_quick(1);
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  cprof__frame_t f[8];
  int n = cprof__symbolize(s, pc, f, 8, NULL);
  CHECK_EQ_INT(n, 3);
  if (n == 3) {
    CHECK_EQ_STR(f[0].function, "sym_inlined_leaf");
    CHECK_EQ_INT(f[0].line, leaf_line);
    CHECK_EQ_STR(f[2].function, "sym_inline_caller");
    CHECK(ends_with(f[2].file, "test_symbolize.c"));
    CHECK_EQ_INT(f[2].line, call_line);
  }
  const cprof__mapping_t *m;
  cprof__symbolizer_mappings(s, &m);
  CHECK_EQ_INT(cprof__symbolizer_uses_dwarf(s, cprof__symbolizer_mapping_of(s, pc)), 1);

  int k = cprof__symbolizer_mapping_of(s, (uintptr_t)getpid_addr);
  CHECK(k >= 0);
  if (k < 0) {
    cprof__symbolizer_release(s);
    cprof__symbolizer_quick(0);
    return;
  }
  fprintf(stderr, "libc: has_dwarf %d, heavy_dwarf %d\n", m[k].has_dwarf, m[k].heavy_dwarf);
  CHECK_EQ_INT(cprof__symbolizer_uses_dwarf(s, k), m[k].has_dwarf && !m[k].heavy_dwarf);
  n = cprof__symbolize(s, (uintptr_t)getpid_addr, f, 8, NULL);
  CHECK(n >= 1 && f[n - 1].function && strstr(f[n - 1].function, "getpid"));
  if (m[k].heavy_dwarf && n >= 1) {
    CHECK_EQ_INT(n, 1);
    CHECK(f[0].file == NULL);
    CHECK_EQ_INT(f[0].line, 0);
  }
  cprof__symbolizer_release(s);

  pthread_t t;
  CHECK_EQ_INT(pthread_create(&t, NULL, quick_other_thread, &k), 0);
  pthread_join(t, NULL);
  CHECK_EQ_INT(quick_seen_dwarf, m[k].has_dwarf);

  cprof__symbolizer_quick(0);
  s = cprof__symbolizer_acquire();
  CHECK_EQ_INT(cprof__symbolizer_uses_dwarf(s, k), m[k].has_dwarf);
  cprof__symbolizer_release(s);
}

/* Addresses that name nothing must give nothing, without crashing. */
static void test_nowhere(void) {
  char *anon = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(anon != MAP_FAILED);
  int on_stack;
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  cprof__frame_t f[8];
  uintptr_t off = 99;
  uintptr_t nowhere[] = {0, 1, 4096, (uintptr_t)anon, (uintptr_t)anon + 30000,
                         (uintptr_t)&on_stack, UINTPTR_MAX, UINTPTR_MAX - 4096};
  for (size_t i = 0; i < sizeof nowhere / sizeof nowhere[0]; i++) {
    CHECK_EQ_INT(cprof__symbolize(s, nowhere[i], f, 8, &off), 0);
    CHECK_EQ_INT(off, 0);
    CHECK(cprof__symbolize_name(s, nowhere[i]) == NULL);
  }
  CHECK_EQ_INT(cprof__symbolizer_mapping_of(s, (uintptr_t)anon), -1);
  cprof__symbolizer_release(s);
  munmap(anon, 65536);
}

/* Every code mapping, sampled densely: stripped libraries, the vDSO, PLT
 * stubs and padding must all come back sane or empty. */
static void test_sweep(void) {
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  const cprof__mapping_t *m;
  int n = cprof__symbolizer_mappings(s, &m);
  int named_vdso = 0;
  for (int j = 0; j < n; j++) {
    uintptr_t step = (m[j].limit - m[j].start) / 512 + 1;
    for (uintptr_t a = m[j].start; a < m[j].limit; a += step) {
      cprof__frame_t f[16];
      int k = cprof__symbolize(s, a, f, 16, NULL);
      CHECK(k >= 0 && k <= 16);
      for (int i = 0; i < k; i++) {
        CHECK(f[i].line >= 0);
        CHECK(f[i].function == NULL || f[i].function[0] != '\0');
        /* Symbol versions are not part of a function's name. */
        CHECK(f[i].function == NULL || f[i].function[0] == '@' || !strchr(f[i].function, '@'));
        /* glibc's assembler labels for its internal calls are not names. */
        CHECK(f[i].function == NULL || strncmp(f[i].function, "__GI_", 5) != 0);
        CHECK(f[i].file == NULL || f[i].file[0] != '\0');
      }
      if (strcmp(m[j].path, "[vdso]") == 0 && k > 0 && f[k - 1].function)
        named_vdso++;
      (void)cprof__symbolize_name(s, a);
    }
  }
  /* The vDSO's symbols come from its image in memory. */
  CHECK(named_vdso > 0);
  cprof__symbolizer_release(s);
}

/* A thread in a descriptor table of its own, as the server's keeper is,
 * made here with unshare(2) alone: it keeps copies of the test's
 * descriptors (stderr for the checks) and says it is in a table of its own,
 * which is all the symbolizer asks. */
static void *own_table_thread(void *fn) {
  CHECK_EQ_INT(unshare(CLONE_FILES), 0);
  cprof__fds_joined(7); /* one number for every such thread: each sees the test's files */
  ((void (*)(void))fn)();
  return NULL;
}

static void in_own_table(void (*fn)(void)) {
  pthread_t t;
  int rc = pthread_create(&t, NULL, own_table_thread, (void *)fn);
  if (rc == 0)
    pthread_join(t, NULL);
  CHECK_EQ_INT(rc, 0);
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  if (!d)
    return -1;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

/* Between uses the instance holds no descriptor, though it is kept: libc's
 * separate debug file (libc6-dbg), which libdw opened from a descriptor and
 * kept, has been taken back at release. */
static void test_no_descriptor_between_uses(void) {
  cprof__symbolizer_trim(0); /* a fresh instance, which opens libc's debug file again */
  int before = open_fds();
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  CHECK_EQ_STR(cprof__symbolize_name(s, (uintptr_t)&sym_target), "sym_target");
  const char *libc_name = cprof__symbolize_name(s, (uintptr_t)dlsym(RTLD_DEFAULT, "getpid"));
  CHECK(libc_name && strstr(libc_name, "getpid"));
  cprof__frame_t f[8];
  CHECK(cprof__symbolize(s, (uintptr_t)dlsym(RTLD_DEFAULT, "getpid"), f, 8, NULL) >= 1);
  cprof__symbolizer_release(s);
  CHECK_EQ_INT(open_fds(), before);
  int builds = dwfl_builds;
  s = cprof__symbolizer_acquire();
  /* Still usable after its descriptors went: names, files and lines. */
  CHECK_EQ_STR(cprof__symbolize_name(s, (uintptr_t)&sym_target), "sym_target");
  int n = cprof__symbolize(s, (uintptr_t)dlsym(RTLD_DEFAULT, "getpid"), f, 8, NULL);
  CHECK(n >= 1 && f[n - 1].function && strstr(f[n - 1].function, "getpid"));
  cprof__symbolizer_release(s);
  CHECK_EQ_INT(dwfl_builds, builds); /* kept */
  CHECK_EQ_INT(open_fds(), before);
}

/* The kept instance goes when it has been idle long enough, not before. */
static int hook_calls;
static void count_hook(void) { hook_calls++; }
static void trim_in_own_table(void) {
  cprof__symbolizer_set_used_hook(count_hook);
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  cprof__symbolizer_release(s);
  CHECK_EQ_INT(hook_calls, 1);
  int builds = dwfl_builds;
  long left = cprof__symbolizer_trim(60000);
  CHECK(left > 0 && left <= 60000);
  s = cprof__symbolizer_acquire();
  cprof__symbolizer_release(s);
  CHECK_EQ_INT(dwfl_builds, builds); /* still kept */
  CHECK_EQ_INT(cprof__symbolizer_trim(0), -1);
  CHECK_EQ_INT(cprof__symbolizer_trim(0), -1); /* nothing kept */
  s = cprof__symbolizer_acquire();
  cprof__symbolizer_release(s);
  CHECK_EQ_INT(dwfl_builds, builds + 1); /* built again */
  cprof__symbolizer_set_used_hook(NULL);
  cprof__symbolizer_trim(0);
}
static void test_trim(void) { in_own_table(trim_in_own_table); }

static void test_reuse_and_dlopen(void) {
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  cprof__symbolizer_release(s);
  int builds = dwfl_builds;
  CHECK(builds >= 1);
  cprof__symbolizer_t *s2 = cprof__symbolizer_acquire();
  cprof__symbolizer_release(s2);
  CHECK(s2 == s);
  CHECK_EQ_INT(dwfl_builds, builds); /* nothing was loaded: reused */

  /* Memory churn changes /proc/self/maps but not the code in it. */
  void *big = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  s2 = cprof__symbolizer_acquire();
  cprof__symbolizer_release(s2);
  CHECK_EQ_INT(dwfl_builds, builds);
  munmap(big, 1 << 20);

  /* A library this process has not loaded yet. */
  static const char *const candidates[][2] = {
      {"libexpat.so.1", "XML_ExpatVersion"}, {"libuuid.so.1", "uuid_generate"},
      {"libacl.so.1", "acl_init"},           {"libcap.so.2", "cap_init"},
      {"libgmp.so.10", "__gmpz_init"},
  };
  void *h = NULL;
  const char *fn = NULL;
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !h; i++) {
    void *loaded = dlopen(candidates[i][0], RTLD_NOW | RTLD_NOLOAD);
    if (loaded) {
      dlclose(loaded);
      continue;
    }
    h = dlopen(candidates[i][0], RTLD_NOW | RTLD_LOCAL);
    fn = candidates[i][1];
  }
  CHECK(h != NULL);
  if (!h)
    return;
  void *addr = dlsym(h, fn);
  CHECK(addr != NULL);
  s = cprof__symbolizer_acquire();
  CHECK_EQ_INT(dwfl_builds, builds + 1);
  CHECK_EQ_STR(cprof__symbolize_name(s, (uintptr_t)addr), fn);
  CHECK(cprof__symbolizer_mapping_of(s, (uintptr_t)addr) >= 0);
  /* Our own functions still symbolize after the rebuild. */
  CHECK_EQ_STR(cprof__symbolize_name(s, (uintptr_t)&sym_target), "sym_target");
  cprof__symbolizer_release(s);

  /* And after dlclose the library's mapping is gone again. */
  dlclose(h);
  s = cprof__symbolizer_acquire();
  CHECK_EQ_INT(dwfl_builds, builds + 2);
  CHECK_EQ_INT(cprof__symbolizer_mapping_of(s, (uintptr_t)addr), -1);
  cprof__symbolizer_release(s);
}

static void test_cxx(void) {
  void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
  CHECK(h != NULL);
  if (!h)
    return;
  void *dtor = dlsym(h, "_ZNSt9exceptionD1Ev");
  void *what = dlsym(h, "_ZNKSt9exception4whatEv");
  CHECK(dtor && what);
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  for (int round = 0; round < 2; round++) { /* the second time from the cache */
    CHECK_EQ_STR(cprof__symbolize_name(s, (uintptr_t)dtor), "std::exception::~exception()");
    CHECK_EQ_STR(cprof__symbolize_name(s, (uintptr_t)what), "std::exception::what() const");
  }
  const char *a = cprof__symbolize_name(s, (uintptr_t)what);
  const char *b = cprof__symbolize_name(s, (uintptr_t)what);
  CHECK(a == b); /* cached, not demangled again */
  cprof__frame_t f[8];
  int n = cprof__symbolize(s, (uintptr_t)dtor, f, 8, NULL);
  CHECK(n >= 1);
  if (n >= 1)
    CHECK_EQ_STR(f[n - 1].function, "std::exception::~exception()");
  cprof__symbolizer_release(s);
  /* libstdc++ stays loaded: its code may still be referenced by name. */
}

/* A fork while another thread holds the symbolizer must leave the child a
 * usable one. Here the holder is this thread itself, which is the same for
 * the child: the lock is taken and its owner will never release it there. */
static void test_fork(void) {
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  pid_t pid = fork();
  if (pid == 0) {
    alarm(30); /* a deadlock fails the test instead of hanging it */
    cprof__symbolizer_atfork_child();
    cprof__symbolizer_t *c = cprof__symbolizer_acquire();
    const char *name = cprof__symbolize_name(c, (uintptr_t)&sym_target);
    int ok = name && strcmp(name, "sym_target") == 0;
    cprof__symbolizer_release(c);
    _exit(ok ? 0 : 1);
  }
  cprof__symbolizer_release(s);
  CHECK(pid > 0);
  int status = 0;
  if (pid > 0)
    CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Many threads at once: each use is serialised by the lock. */
static void *hammer(void *arg) {
  uintptr_t pc = *(uintptr_t *)arg;
  int bad = 0;
  for (int i = 0; i < 200; i++) {
    cprof__symbolizer_t *s = cprof__symbolizer_acquire();
    cprof__frame_t f[4];
    int n = cprof__symbolize(s, pc, f, 4, NULL);
    bad += n != 1 || !f[0].function || strcmp(f[0].function, "sym_target") != 0;
    cprof__symbolizer_release(s);
  }
  return (void *)(intptr_t)bad;
}

static void test_threads(void) {
  uintptr_t pc = sym_target();
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    CHECK(pthread_create(&t[i], NULL, hammer, &pc) == 0);
  for (int i = 0; i < 4; i++) {
    void *bad;
    pthread_join(t[i], &bad);
    CHECK_EQ_INT((intptr_t)bad, 0);
  }
}

/* ---- this program, changed, in a child ----------------------------------
 * The parent writes a changed copy of this binary and runs it; the copy
 * checks that its own functions still symbolize, and exits with the result. */

/* What every copy checks: a plain function and the inline nest. */
static void check_own_frames(cprof__symbolizer_t *s) {
  uintptr_t pc = sym_target();
  cprof__frame_t f[8];
  int n = cprof__symbolize(s, pc, f, 8, NULL);
  CHECK_EQ_INT(n, 1);
  if (n == 1) {
    CHECK_EQ_STR(f[0].function, "sym_target");
    CHECK(ends_with(f[0].file, "test_symbolize.c"));
    CHECK_EQ_INT(f[0].line, target_line);
  }
  int leaf_line = 0, mid_line = 0, call_line = 0;
  pc = sym_inline_caller(&leaf_line, &mid_line, &call_line);
  n = cprof__symbolize(s, pc, f, 8, NULL);
  CHECK_EQ_INT(n, 3);
  if (n == 3) {
    CHECK_EQ_INT(f[0].line, leaf_line);
    CHECK_EQ_STR(f[1].function, "sym_inlined_mid");
    CHECK_EQ_INT(f[2].line, call_line);
  }
}

/* A running program whose file was deleted (a deploy replaced it): the
 * symbolizer must still read its symbols and DWARF. The copy deletes itself
 * before symbolizing. */
static int deleted_child(const char *self) {
  CHECK_EQ_INT(unlink(self), 0);
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[len > 0 ? len : 0] = '\0';
  CHECK(strstr(exe, " (deleted)") != NULL);

  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  const cprof__mapping_t *m;
  int n = cprof__symbolizer_mappings(s, &m);
  CHECK(n > 0);
  if (n > 0) {
    CHECK_EQ_STR(m[0].path, self); /* the name it had, without the marker */
    CHECK(is_hex_id(m[0].build_id, 40));
    CHECK(m[0].has_symbols);
    CHECK(m[0].has_dwarf);
  }
  check_own_frames(s);
  cprof__symbolizer_release(s);
  return check_result("symbol/test_symbolize (deleted executable)");
}

/* A program without .debug_aranges, as clang builds them by default: the
 * symbolizer must find its compilation units from their own ranges. */
static int no_aranges_child(const char *self) {
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  check_own_frames(s);
  cprof__symbolizer_release(s);
  unlink(self);
  return check_result("symbol/test_symbolize (no .debug_aranges)");
}

/* Runs argv to completion; returns its exit status, or -1. */
static int run(char *const argv[]) {
  pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_changed_copies(void) {
  char self[4096], copy[4200];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(len > 0);
  if (len <= 0)
    return;
  self[len] = '\0';

  snprintf(copy, sizeof copy, "%s.deleted-copy", self);
  char *const cp[] = {"cp", self, copy, NULL};
  CHECK_EQ_INT(run(cp), 0);
  char *const deleted[] = {copy, "--deleted-child", NULL};
  CHECK_EQ_INT(run(deleted), 0);
  unlink(copy); /* in case the child never ran */

  /* objcopy comes with binutils, which every compiler here needs. */
  snprintf(copy, sizeof copy, "%s.no-aranges-copy", self);
  char *const strip[] = {"objcopy", "--remove-section=.debug_aranges", self, copy, NULL};
  CHECK_EQ_INT(run(strip), 0);
  char *const no_aranges[] = {copy, "--no-aranges-child", NULL};
  CHECK_EQ_INT(run(no_aranges), 0);
  unlink(copy);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--deleted-child") == 0)
    return deleted_child(argv[0]);
  if (argc == 2 && strcmp(argv[1], "--no-aranges-child") == 0)
    return no_aranges_child(argv[0]);
  test_own_function();
  test_inline();
  test_mappings();
  test_libc();
  test_dwarf_probe();
  test_quick();
  test_nowhere();
  test_sweep();
  test_reuse_and_dlopen();
  test_no_descriptor_between_uses();
  test_trim();
  test_cxx();
  test_fork();
  test_threads();
  test_changed_copies();
  return check_result("symbol/test_symbolize");
}
