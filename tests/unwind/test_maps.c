/* The /proc/self/maps parser (table tests on text in proc(5)'s format) and
 * the signal-safe lookup, on that text and on this process's own maps. */
#include "check.h"
#include "unwind/maps.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void);

static char *dup_text(const char *s) {
  char *t = strdup(s);
  if (!t)
    abort();
  return t;
}

/* Each case is one line of maps text and what it should parse to. */
struct line_case {
  const char *line;
  int ok; /* 1: one entry expected; 0: the line is skipped */
  uintptr_t start, end;
  uint64_t offset;
  const char *perms;
  const char *path;
};

static const struct line_case line_cases[] = {
    {"555e7e1af000-555e7e1b4000 r-xp 00002000 fe:00 247134                     /usr/bin/cat", 1,
     0x555e7e1af000, 0x555e7e1b4000, 0x2000, "r-xp", "/usr/bin/cat"},
    /* Anonymous: the kernel prints no path, sometimes a trailing space. */
    {"7f3cc9962000-7f3cc9984000 rw-p 00000000 00:00 0 ", 1, 0x7f3cc9962000, 0x7f3cc9984000, 0,
     "rw-p", ""},
    {"7f3cc9962000-7f3cc9984000 rw-p 00000000 00:00 0", 1, 0x7f3cc9962000, 0x7f3cc9984000, 0,
     "rw-p", ""},
    {"7ffd4a1c1000-7ffd4a1e2000 rw-p 00000000 00:00 0                          [stack]", 1,
     0x7ffd4a1c1000, 0x7ffd4a1e2000, 0, "rw-p", "[stack]"},
    {"7ffd4a1f3000-7ffd4a1f5000 r-xp 00000000 00:00 0                          [vdso]", 1,
     0x7ffd4a1f3000, 0x7ffd4a1f5000, 0, "r-xp", "[vdso]"},
    /* Spaces belong to the path; only the padding before it is dropped. */
    {"7f0000001000-7f0000002000 r-xp 00001000 08:01 42      /home/a user/my lib.so", 1,
     0x7f0000001000, 0x7f0000002000, 0x1000, "r-xp", "/home/a user/my lib.so"},
    {"7f0000001000-7f0000002000 r-xp 00001000 08:01 42      /opt/trailing space ", 1,
     0x7f0000001000, 0x7f0000002000, 0x1000, "r-xp", "/opt/trailing space "},
    /* An unlinked file keeps its name, without the marker (as Go does). */
    {"7f0000003000-7f0000004000 r-xp 00000000 08:01 43      /tmp/libgone.so (deleted)", 1,
     0x7f0000003000, 0x7f0000004000, 0, "r-xp", "/tmp/libgone.so"},
    {"7f0000003000-7f0000004000 r-xp 00000000 08:01 43      /tmp/a b (deleted)", 1,
     0x7f0000003000, 0x7f0000004000, 0, "r-xp", "/tmp/a b"},
    /* A file named exactly like the marker is a name, not a marker. */
    {"7f0000003000-7f0000004000 r-xp 00000000 08:01 43       (deleted)", 1, 0x7f0000003000,
     0x7f0000004000, 0, "r-xp", "(deleted)"},
    /* Upper-case hex, a large offset, a 5-digit major:minor. */
    {"FFFF0000-FFFF1000 r--s 1234ABCD00 103:0a 99 /dev/shm/x", 1, 0xffff0000, 0xffff1000,
     0x1234abcd00, "r--s", "/dev/shm/x"},
    {"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", 1,
     0xffffffffff600000, 0xffffffffff601000, 0, "--xp", "[vsyscall]"},
    /* Garbage and near misses are skipped. */
    {"", 0, 0, 0, 0, NULL, NULL},
    {"hello world", 0, 0, 0, 0, NULL, NULL},
    {"1000-2000", 0, 0, 0, 0, NULL, NULL},
    {"1000-2000 r-xp", 0, 0, 0, 0, NULL, NULL},
    {"1000-2000 r-xp 0 08:01", 0, 0, 0, 0, NULL, NULL},
    {"1000 2000 r-xp 00000000 08:01 1 /x", 0, 0, 0, 0, NULL, NULL},
    {"1000-2000 r-x 00000000 08:01 1 /x", 0, 0, 0, 0, NULL, NULL},
    {"1000-2000 r-xp 0000000g 08:01 1 /x", 0, 0, 0, 0, NULL, NULL},
    {"1000-2000 r-xp 00000000 0801 1 /x", 0, 0, 0, 0, NULL, NULL},
    {"1000-2000 r-xp 00000000 08:01 x /x", 0, 0, 0, 0, NULL, NULL},
    {"1000-2000 r-xp 00000000 08:01 12x /x", 0, 0, 0, 0, NULL, NULL},
    {"-1000-2000 r-xp 00000000 08:01 1 /x", 0, 0, 0, 0, NULL, NULL},
    {"0x1000-0x2000 r-xp 00000000 08:01 1 /x", 0, 0, 0, 0, NULL, NULL},
    {"2000-1000 r-xp 00000000 08:01 1 /x", 0, 0, 0, 0, NULL, NULL}, /* empty range */
    {"1000-1000 r-xp 00000000 08:01 1 /x", 0, 0, 0, 0, NULL, NULL},
    {"11111111111111111-2000 r-xp 00000000 08:01 1 /x", 0, 0, 0, 0, NULL, NULL}, /* > 64 bits */
};

/* The kernel's marker for a deleted file is left out of the path and
 * kept as a flag; a large inode and a wide device are read whole. */
static void test_deleted_dev_inode(void) {
  cprof__maps_t m;
  CHECK_EQ_INT(cprof__maps_parse(&m, dup_text("1000-2000 r-xp 00000000 103:0a 18446744073709551 "
                                              "/tmp/libgone.so (deleted)\n"
                                              "2000-3000 r-xp 00000000 fe:01 7 /tmp/here.so\n")),
               0);
  CHECK_EQ_INT(m.n, 2);
  if (m.n == 2) {
    CHECK_EQ_STR(m.v[0].path, "/tmp/libgone.so");
    CHECK_EQ_INT(m.v[0].deleted, 1);
    CHECK_EQ_INT(m.v[0].dev, (uint64_t)0x103 << 32 | 0xa);
    CHECK_EQ_INT(m.v[0].inode, 18446744073709551ull);
    CHECK_EQ_INT(m.v[1].deleted, 0);
    CHECK_EQ_INT(m.v[1].dev, (uint64_t)0xfe << 32 | 1);
  }
  cprof__maps_free(&m);
}

static void test_lines(void) {
  for (size_t i = 0; i < sizeof line_cases / sizeof line_cases[0]; i++) {
    const struct line_case *c = &line_cases[i];
    cprof__maps_t m;
    CHECK_EQ_INT(cprof__maps_parse(&m, dup_text(c->line)), 0);
    if (m.n != c->ok)
      fprintf(stderr, "case %zu: \"%s\"\n", i, c->line);
    CHECK_EQ_INT(m.n, c->ok);
    if (c->ok && m.n == 1) {
      CHECK_EQ_INT(m.v[0].start, c->start);
      CHECK_EQ_INT(m.v[0].end, c->end);
      CHECK_EQ_INT(m.v[0].offset, c->offset);
      CHECK_EQ_STR(m.v[0].perms, c->perms);
      CHECK_EQ_STR(m.v[0].path, c->path);
    }
    cprof__maps_free(&m);
  }
}

/* A whole file: entries in order, garbage lines between them skipped, no
 * newline at the end. */
static const char sample[] =
    "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
    "00651000-00652000 r--p 00051000 08:02 173521      /usr/bin/dbus-daemon\n"
    "this line is not a mapping\n"
    "\n"
    "00e03000-00e24000 rw-p 00000000 00:00 0           [heap]\n"
    "35b1800000-35b1820000 r-xp 00000000 08:02 135522  /usr/lib64/ld-2.15.so\n"
    "7fffb2c0d000-7fffb2c2e000 rw-p 00000000 00:00 0   [stack]\n"
    "7fffb2d48000-7fffb2d49000 r-xp 00000000 00:00 0   [vdso]";

static void test_file(void) {
  cprof__maps_t m;
  CHECK_EQ_INT(cprof__maps_parse(&m, dup_text(sample)), 0);
  CHECK_EQ_INT(m.n, 6);
  if (m.n != 6) {
    cprof__maps_free(&m);
    return;
  }
  CHECK_EQ_STR(m.v[0].path, "/usr/bin/dbus-daemon");
  CHECK_EQ_INT(m.v[1].offset, 0x51000);
  CHECK_EQ_STR(m.v[2].path, "[heap]");
  CHECK_EQ_STR(m.v[3].path, "/usr/lib64/ld-2.15.so");
  CHECK_EQ_STR(m.v[4].path, "[stack]");
  CHECK_EQ_STR(m.v[5].path, "[vdso]");
  CHECK_EQ_STR(m.v[5].perms, "r-xp");
  /* Device and inode, which tell one file's mappings from another's. */
  CHECK_EQ_INT(m.v[0].dev, (uint64_t)8 << 32 | 2);
  CHECK_EQ_INT(m.v[0].inode, 173521);
  CHECK_EQ_INT(m.v[3].inode, 135522);
  CHECK_EQ_INT(m.v[2].dev, 0);
  CHECK_EQ_INT(m.v[2].inode, 0);
  CHECK_EQ_INT(m.v[0].deleted, 0);

  /* Lookup boundaries: start inclusive, end exclusive. */
  CHECK(cprof__maps_find_sigsafe(&m, 0) == NULL);
  CHECK(cprof__maps_find_sigsafe(&m, 0x3fffff) == NULL);             /* before the first */
  CHECK(cprof__maps_find_sigsafe(&m, 0x400000) == &m.v[0]);          /* first byte */
  CHECK(cprof__maps_find_sigsafe(&m, 0x451fff) == &m.v[0]);          /* last byte */
  CHECK(cprof__maps_find_sigsafe(&m, 0x452000) == NULL);             /* end, in a gap */
  CHECK(cprof__maps_find_sigsafe(&m, 0x600000) == NULL);             /* between entries */
  CHECK(cprof__maps_find_sigsafe(&m, 0x651000) == &m.v[1]);
  CHECK(cprof__maps_find_sigsafe(&m, 0xe03000) == &m.v[2]);
  CHECK(cprof__maps_find_sigsafe(&m, 0x35b1810000) == &m.v[3]);
  CHECK(cprof__maps_find_sigsafe(&m, 0x7fffb2c2dfff) == &m.v[4]);
  CHECK(cprof__maps_find_sigsafe(&m, 0x7fffb2c2e000) == NULL);
  CHECK(cprof__maps_find_sigsafe(&m, 0x7fffb2d48000) == &m.v[5]);    /* the last */
  CHECK(cprof__maps_find_sigsafe(&m, 0x7fffb2d48fff) == &m.v[5]);
  CHECK(cprof__maps_find_sigsafe(&m, 0x7fffb2d49000) == NULL);       /* after the last */
  CHECK(cprof__maps_find_sigsafe(&m, UINTPTR_MAX) == NULL);
  cprof__maps_free(&m);
}

/* Adjacent entries (end of one == start of the next) and text that is out of
 * order, which the lookup must still handle. */
static void test_adjacent_unsorted(void) {
  cprof__maps_t m;
  CHECK_EQ_INT(cprof__maps_parse(&m, dup_text("3000-4000 r-xp 00000000 00:00 0 /c\n"
                                              "1000-2000 r-xp 00000000 00:00 0 /a\n"
                                              "2000-3000 r-xp 00000000 00:00 0 /b\n")),
               0);
  CHECK_EQ_INT(m.n, 3);
  const cprof__map_entry_t *e;
  e = cprof__maps_find_sigsafe(&m, 0x1fff);
  CHECK(e && strcmp(e->path, "/a") == 0);
  e = cprof__maps_find_sigsafe(&m, 0x2000);
  CHECK(e && strcmp(e->path, "/b") == 0);
  e = cprof__maps_find_sigsafe(&m, 0x3000);
  CHECK(e && strcmp(e->path, "/c") == 0);
  CHECK(cprof__maps_find_sigsafe(&m, 0x4000) == NULL);
  CHECK(cprof__maps_find_sigsafe(&m, 0xfff) == NULL);
  cprof__maps_free(&m);

  /* Nothing parsed: the lookup finds nothing and does not crash. */
  CHECK_EQ_INT(cprof__maps_parse(&m, dup_text("")), 0);
  CHECK_EQ_INT(m.n, 0);
  CHECK(cprof__maps_find_sigsafe(&m, 0x1000) == NULL);
  cprof__maps_free(&m);
  CHECK(cprof__maps_find_sigsafe(NULL, 0x1000) == NULL);
}

static void test_live(void) {
  cprof__maps_t m;
  CHECK_EQ_INT(cprof__maps_read(&m), 0);
  CHECK(m.n > 5);
  for (int i = 1; i < m.n; i++)
    CHECK(m.v[i - 1].end <= m.v[i].start);

  volatile int local = 1;
  const cprof__map_entry_t *e = cprof__maps_find_sigsafe(&m, (uintptr_t)&local);
  CHECK(e != NULL);
  if (e) {
    CHECK(e->perms[0] == 'r' && e->perms[1] == 'w');
    CHECK((uintptr_t)&local >= e->start && (uintptr_t)&local < e->end);
  }

  e = cprof__maps_find_sigsafe(&m, (uintptr_t)&main);
  CHECK(e != NULL);
  if (e) {
    CHECK(e->perms[0] == 'r' && e->perms[2] == 'x');
    CHECK(e->path[0] == '/');
  }

  /* Every entry finds itself at both ends. */
  for (int i = 0; i < m.n; i++) {
    CHECK(cprof__maps_find_sigsafe(&m, m.v[i].start) == &m.v[i]);
    CHECK(cprof__maps_find_sigsafe(&m, m.v[i].end - 1) == &m.v[i]);
  }
  cprof__maps_free(&m);
}

/* A maps file larger than any first guess at its size: many mappings, so the
 * read loop has to grow its buffer. */
static void test_live_large(void) {
  enum { N = 2000 };
  long page = sysconf(_SC_PAGESIZE);
  /* Alternate protections so the kernel cannot merge neighbours. */
  char *base = mmap(NULL, (size_t)page * N, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(base != MAP_FAILED);
  if (base == MAP_FAILED)
    return;
  for (int i = 0; i < N; i += 2)
    mprotect(base + (size_t)i * page, (size_t)page, PROT_READ | PROT_WRITE);
  cprof__maps_t m;
  CHECK_EQ_INT(cprof__maps_read(&m), 0);
  CHECK(m.n >= N);
  uintptr_t last = (uintptr_t)base + (size_t)(N - 1) * page;
  const cprof__map_entry_t *e = cprof__maps_find_sigsafe(&m, last);
  CHECK(e && strcmp(e->perms, "r--p") == 0);
  e = cprof__maps_find_sigsafe(&m, last - (uintptr_t)page);
  CHECK(e && strcmp(e->perms, "rw-p") == 0);
  cprof__maps_free(&m);
  munmap(base, (size_t)page * N);
}

int main(void) {
  test_lines();
  test_deleted_dev_inode();
  test_file();
  test_adjacent_unsorted();
  test_live();
  test_live_large();
  return check_result("symbol/test_maps");
}
