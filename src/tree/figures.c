/* A process's figures read from outside it, by its pid (tree.h): what the
 * owner's metrics sampler shows of each process of its tree, so that the
 * members need no sampler of their own and are never asked. Everything
 * comes from /proc/PID, as ps and top read it (proc(5)):
 *
 * - stat: utime and stime (fields 14 and 15, clock ticks, every thread's,
 *   the ended ones' too), minflt and majflt (10, 12), num_threads (20),
 *   vsize (23) and rss (24, pages);
 * - status: voluntary_ctxt_switches and nonvoluntary_ctxt_switches, which
 *   are the main thread's alone (the kernel counts switches per task);
 *   a prefork worker's main thread is the one that serves;
 * - io: rchar and wchar, when the caller may ptrace the process (its own
 *   user's, not made undumpable; else -1);
 * - fd: its entries, under the same condition.
 *
 * Stack buffers only: the metrics sampler allocates nothing. Only from a
 * thread in cprof's own descriptor table (core/fds.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fds.h"
#include "core/procfs.h"
#include "tree/tree.h"

/* Entries of /proc/PID/fd; -1 when it cannot be read. */
static int64_t count_fds(pid_t pid) {
  char path[48];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  return cprof__count_entries(path);
}

int cprof__tree_figures(pid_t pid, cprof__tree_figures_t *f) {
  memset(f, 0, sizeof *f);
  f->pid = pid;
  char path[48], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if (cprof__procfs_read(path, buf, sizeof buf) <= 0)
    return -ENOENT;
  /* "PID (COMM) S ...": COMM may hold spaces and parentheses, so the
   * fields after it are counted from the last ')'. */
  char *open_ = strchr(buf, '('), *close_ = strrchr(buf, ')');
  if (!open_ || !close_ || close_ < open_)
    return -ENOENT;
  size_t nl = (size_t)(close_ - open_ - 1);
  if (nl >= sizeof f->name)
    nl = sizeof f->name - 1;
  memcpy(f->name, open_ + 1, nl);
  f->name[nl] = '\0';
  unsigned long long minflt, majflt, utime, stime, vsize;
  long long threads, rss, start;
  /* From field 3 (state): 10 minflt, 12 majflt, 14 utime, 15 stime,
   * 20 num_threads, 22 starttime, 23 vsize, 24 rss. */
  if (sscanf(close_ + 1,
             " %*c %*s %*s %*s %*s %*s %*s %llu %*s %llu %*s %llu %llu %*s %*s %*s %*s %lld %*s "
             "%lld %llu %lld",
             &minflt, &majflt, &utime, &stime, &threads, &start, &vsize, &rss) != 8)
    return -ENOENT;
  long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  if (hz <= 0)
    hz = 100;
  f->start_ticks = start;
  f->cpu_user_us = (int64_t)(utime * 1000000ULL / (unsigned long long)hz);
  f->cpu_system_us = (int64_t)(stime * 1000000ULL / (unsigned long long)hz);
  f->faults_minor = (int64_t)minflt;
  f->faults_major = (int64_t)majflt;
  f->threads = threads;
  f->vm_bytes = (int64_t)vsize;
  f->rss_bytes = rss * (page > 0 ? page : 4096);

  f->ctx_voluntary = f->ctx_involuntary = -1;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  if (cprof__procfs_read(path, buf, sizeof buf) > 0) {
    f->ctx_voluntary = cprof__procfs_field(buf, "voluntary_ctxt_switches:");
    f->ctx_involuntary = cprof__procfs_field(buf, "nonvoluntary_ctxt_switches:");
  }
  f->read_bytes = f->write_bytes = -1;
  snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
  if (cprof__procfs_read(path, buf, sizeof buf) > 0) {
    f->read_bytes = cprof__procfs_field(buf, "rchar:");
    f->write_bytes = cprof__procfs_field(buf, "wchar:");
  }
  f->open_fds = count_fds(pid);
  return 0;
}
