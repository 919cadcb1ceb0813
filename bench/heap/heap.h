/* What the heap benchmark workloads share (besides ../common.h): memory
 * outside the malloc heap, and the program's own memory figures.
 *
 * The workloads' bookkeeping (arrays of pointers, per-thread state) lives
 * in mmap()ed memory, never in malloc()ed memory, so that every byte a
 * heap profiler sees was allocated by the workload's measured code and the
 * truth the workloads print is exact. */
#ifndef CPROF_BENCH_HEAP_H
#define CPROF_BENCH_HEAP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../common.h"


/* Zeroed memory from mmap, outside the malloc heap; exits on failure. */
static inline void *bench_map(size_t bytes) {
  void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return p;
}

/* The value in kB of a "Name:   N kB" line of /proc/self/status, or -1.
 * read() into a stack buffer: stdio would malloc one. */
static inline long status_kb(const char *name) {
  char buf[8192];
  int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0)
    return -1;
  ssize_t len = 0, r;
  while (len < (ssize_t)sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
    len += r;
  close(fd);
  buf[len] = 0;
  size_t nl = strlen(name);
  for (char *p = buf; *p;) {
    if (strncmp(p, name, nl) == 0 && p[nl] == ':')
      return strtol(p + nl + 1, NULL, 10);
    char *next = strchr(p, '\n');
    if (!next)
      break;
    p = next + 1;
  }
  return -1;
}

#endif
