/* The process readers (sample/proc.h), out of the metrics sampler, which
 * reads them as registry/trace.c does. */
#include "sample/proc.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/fds.h"
#include "core/procfs.h"
#include "sample/heap.h"

/* Bytes cprof read from /proc for the figures: /proc/self/io's rchar
 * counts them, and they are ours, not the program's. Atomic. */
static int64_t own_read;

/* cprof__procfs_read, counting what it read in own_read. */
static ssize_t read_small(const char *path, char *buf, size_t len) {
  ssize_t n = cprof__procfs_read(path, buf, len);
  if (n > 0)
    __atomic_add_fetch(&own_read, (int64_t)n, __ATOMIC_RELAXED);
  return n;
}

static int64_t kb(int64_t v) { return v < 0 ? -1 : v * 1024; }

void cprof__proc_usage(cprof__proc_usage_t *u) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    u->cpu_user_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
    u->cpu_system_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
    u->ctx_voluntary = ru.ru_nvcsw;
    u->ctx_involuntary = ru.ru_nivcsw;
    u->faults_minor = ru.ru_minflt;
    u->faults_major = ru.ru_majflt;
    u->rss_peak_bytes = (int64_t)ru.ru_maxrss * 1024;
  } else {
    u->cpu_user_us = u->cpu_system_us = u->ctx_voluntary = u->ctx_involuntary = -1;
    u->faults_minor = u->faults_major = u->rss_peak_bytes = -1;
  }
}

void cprof__proc_status(cprof__proc_status_t *s) {
  char buf[4096];
  if (read_small("/proc/self/status", buf, sizeof buf) > 0) {
    s->rss_bytes = kb(cprof__procfs_field(buf, "VmRSS:"));
    s->rss_peak_bytes = kb(cprof__procfs_field(buf, "VmHWM:"));
    s->vm_bytes = kb(cprof__procfs_field(buf, "VmSize:"));
    s->threads = cprof__procfs_field(buf, "Threads:");
  } else {
    s->rss_bytes = s->rss_peak_bytes = s->vm_bytes = s->threads = -1;
  }
  /* Before the read, so that every read of ours rchar counts is in it. */
  int64_t ours = __atomic_load_n(&own_read, __ATOMIC_RELAXED);
  if (read_small("/proc/self/io", buf, sizeof buf) > 0) {
    s->read_bytes = cprof__procfs_field(buf, "rchar:");
    if (s->read_bytes >= ours)
      s->read_bytes -= ours;
    s->write_bytes = cprof__procfs_field(buf, "wchar:");
  } else {
    s->read_bytes = s->write_bytes = -1;
  }
}

int64_t cprof__proc_count_fds(void) { return cprof__count_entries("/proc/self/fd"); }

/* Its start in clock ticks after boot (/proc/self/stat field 22) and the
 * boot time (/proc/stat btime). */
int64_t cprof__proc_start_ms(void) {
  char buf[4096];
  if (read_small("/proc/self/stat", buf, sizeof buf) <= 0)
    return 0;
  const char *s = strrchr(buf, ')'); /* the name may hold spaces and ')' */
  if (!s)
    return 0;
  /* After ") ": field 3 (state) on; starttime is field 22. */
  s += 2;
  for (int f = 3; f < 22 && s; f++) {
    s = strchr(s, ' ');
    if (s)
      s++;
  }
  if (!s)
    return 0;
  long long ticks = strtoll(s, NULL, 10);
  if (read_small("/proc/stat", buf, sizeof buf) <= 0)
    return 0;
  int64_t btime = cprof__procfs_field(buf, "btime ");
  long hz = sysconf(_SC_CLK_TCK);
  if (btime < 0 || hz <= 0)
    return 0;
  return btime * 1000 + ticks * 1000 / hz;
}

void cprof__proc_heap(int64_t *inuse_bytes, int64_t *alloc_bytes) {
  if (cprof__heap_rate() > 0) {
    uint64_t a, f;
    cprof__heap_totals(&a, &f);
    *alloc_bytes = (int64_t)a;
    *inuse_bytes = a > f ? (int64_t)(a - f) : 0;
  } else {
    struct mallinfo2 mi = mallinfo2();
    *inuse_bytes = (int64_t)(mi.uordblks + mi.hblkhd);
    *alloc_bytes = -1;
  }
}

void cprof__proc_memory(int64_t *rss_bytes, int64_t *heap_inuse_bytes, int walk) {
  int64_t alloc;
  *heap_inuse_bytes = -1;
  if (walk || cprof__heap_rate() > 0)
    cprof__proc_heap(heap_inuse_bytes, &alloc);
  char buf[256];
  long page = sysconf(_SC_PAGESIZE);
  *rss_bytes = -1;
  /* statm: size, then resident, in pages. */
  if (cprof__fds_in_own_table() && read_small("/proc/self/statm", buf, sizeof buf) > 0) {
    const char *s = strchr(buf, ' ');
    if (s)
      *rss_bytes = strtoll(s + 1, NULL, 10) * page;
  }
}

void cprof__proc_atfork_child(void) { __atomic_store_n(&own_read, 0, __ATOMIC_RELAXED); }
