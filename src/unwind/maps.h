/* /proc/self/maps, parsed: the process's address-space layout.
 *
 * Used at serve time by the symbolizer (which mappings hold code) and, as a
 * read-only snapshot prepared before signals are sent, by the frame-pointer
 * unwinder to learn the bounds of the stack it walks. */
#ifndef CPROF_UNWIND_MAPS_H
#define CPROF_UNWIND_MAPS_H

#include <stdint.h>

typedef struct cprof__map_entry {
  uintptr_t start, end; /* [start, end) */
  uint64_t offset;      /* file offset of start */
  char perms[5];        /* "r-xp" */
  const char *path;     /* "" for anonymous; "[stack]", "[vdso]", a file path */
  uint64_t dev, inode;  /* the file's device (major << 32 | minor) and inode; 0 when anonymous */
  int deleted;          /* the kernel marked the file " (deleted)", which path leaves out */
} cprof__map_entry_t;

typedef struct cprof__maps {
  cprof__map_entry_t *v; /* sorted by start, as the kernel lists them */
  int n;
  char *text; /* the file's text; paths point into it */
} cprof__maps_t;

/* Reads and parses /proc/self/maps. Returns 0 or a negative errno. */
int cprof__maps_read(cprof__maps_t *m);
/* Parses maps text in the format of proc(5); takes ownership of `text`
 * (malloc'd). Lines it cannot parse are skipped. Returns 0 or -ENOMEM. */
int cprof__maps_parse(cprof__maps_t *m, char *text);
void cprof__maps_free(cprof__maps_t *m);
/* The entry containing addr, or NULL. A binary search over read-only data:
 * safe in a signal handler while nobody frees `m`. */
const cprof__map_entry_t *cprof__maps_find_sigsafe(const cprof__maps_t *m, uintptr_t addr);

#endif
