/* What /proc/self/task says of the program's threads (proc(5)): their
 * list, names, states, signal masks, and where one is blocked in the
 * kernel; and their CPU clocks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sample/threads_internal.h"

/* The ids in d, read from its start. */
int cprof__threads_list_dir(DIR *d, pid_t **out) {
  rewinddir(d);
  int n = 0, cap = 64;
  pid_t *v = malloc(cap * sizeof *v);
  struct dirent *e;
  while (v && (e = readdir(d)) != NULL) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    if (n == cap) {
      pid_t *nv = realloc(v, (cap *= 2) * sizeof *v);
      if (!nv) {
        free(v);
        v = NULL;
        break;
      }
      v = nv;
    }
    v[n++] = (pid_t)atoi(e->d_name);
  }
  if (!v)
    return -ENOMEM;
  *out = v;
  return n;
}

int cprof__threads_list(pid_t **out) {
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -errno;
  int n = cprof__threads_list_dir(d, out);
  closedir(d);
  return n;
}

int cprof__threads_count(void) {
  pid_t *v;
  int n = cprof__threads_list(&v);
  if (n >= 0)
    free(v);
  return n < 0 ? 0 : n;
}

/* Reads a small /proc file; returns its length, or a negative errno. */
static int read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = read(fd, buf, size - 1);
  int err = errno;
  close(fd);
  if (n < 0)
    return -err;
  buf[n] = '\0';
  return (int)n;
}

int cprof__thread_name(pid_t tid, char name[16]) {
  char path[64], buf[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  int got = read_small(path, buf, sizeof buf);
  if (got < 0)
    return -1;
  /* The kernel writes the name as it is, then one newline: a name may
   * hold newlines of its own (any byte but NUL), so only the last one
   * goes. */
  size_t n = (size_t)got;
  if (n > 0 && buf[n - 1] == '\n')
    n--;
  if (n > 15) /* comm is at most 15 bytes (prctl(2), PR_SET_NAME) */
    n = 15;
  memcpy(name, buf, n);
  name[n] = '\0';
  return 0;
}

/* A thread's state letter from /proc/self/task/TID/stat, readable by
 * everyone (proc(5)); returns 0, or a negative errno. */
int cprof__thread_state(pid_t tid, char *state) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  int n = read_small(path, buf, sizeof buf);
  if (n < 0)
    return n;
  /* The state follows the last ')': the name in parentheses may hold any byte. */
  const char *p = strrchr(buf, ')');
  *state = p && p[1] == ' ' ? p[2] : '?';
  return 0;
}

/* Name and state of a thread; returns 0, or -1 when it has exited. */
int cprof__thread_info(pid_t tid, char name[16], char *state) {
  return cprof__thread_name(tid, name) == 0 && cprof__thread_state(tid, state) == 0 ? 0 : -1;
}

int cprof__thread_signal_masks(pid_t tid, uint64_t *blocked, uint64_t *pending) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  int n = read_small(path, buf, sizeof buf);
  if (n < 0)
    return n;
  const char *fields[] = {"\nSigBlk:\t", "\nSigPnd:\t"};
  uint64_t *out[] = {blocked, pending};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    const char *p = strstr(buf, fields[i]);
    if (!p)
      return -EPROTO;
    *out[i] = strtoull(p + strlen(fields[i]), NULL, 16);
  }
  return 0;
}

/* The numbers of a syscall file, "NR a0 .. a5 SP PC" or "-1 SP PC": how
 * many were read (at most max). By hand: sscanf was a tenth of a tick. */
static int parse_numbers(const char *s, long long *v, int max) {
  int n = 0;
  while (n < max) {
    while (*s == ' ')
      s++;
    char *end;
    errno = 0;
    v[n] = n == 0 ? strtoll(s, &end, 10) : (long long)strtoull(s, &end, 16);
    if (end == s || errno)
      break;
    n++;
    s = end;
  }
  return n;
}

/* Where a thread is now (one of CPROF__WHERE_*, threads_internal.h); for IN_KERNEL, *k says where,
 * for UNREADABLE, t says why. */
int cprof__threads_where_is(pid_t tid, cprof__in_kernel_t *k, cprof__thread_stack_t *t, int *fd) {
  char path[64], buf[256];
  path[0] = '\0';
  int n = -EBADF;
  if (fd && *fd < 0) {
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
  }
  if (fd && *fd >= 0) { /* read again from the start, the file made anew */
    ssize_t got = pread(*fd, buf, sizeof buf - 1, 0);
    n = got < 0 ? -errno : (int)got;
    if (n >= 0)
      buf[n] = '\0';
  }
  if (n == -EBADF) { /* none kept, or it went (the program closed it) */
    if (!path[0])
      snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    n = read_small(path, buf, sizeof buf);
  }
  if (n >= 0 && strncmp(buf, "running", 7) == 0)
    return CPROF__WHERE_RUNNING;
  if (n >= 0) {
    long long v[9];
    int got = parse_numbers(buf, v, 9);
    k->nr = got > 0 ? (long)v[0] : 0;
    if (got == 3 && k->nr == -1) { /* "-1 sp pc" */
      k->sp = (uintptr_t)v[1];
      k->pc = (uintptr_t)v[2];
    } else if (got == 9) {
      k->sp = (uintptr_t)v[7];
      k->pc = (uintptr_t)v[8];
    } else {
      n = -EPROTO;
    }
    if (n >= 0)
      return k->sp == 0 && k->pc == 0 ? CPROF__WHERE_NO_USER : CPROF__WHERE_IN_KERNEL;
  }
  if (n == -ENOENT || n == -ESRCH)
    return CPROF__WHERE_EXITED;
  /* The file is there but cannot be read (EACCES after setuid): the state
   * in stat, which everyone may read, still tells a running thread. */
  char state;
  int err = cprof__thread_state(tid, &state);
  if (err == -ENOENT || err == -ESRCH)
    return CPROF__WHERE_EXITED;
  if (err == 0 && state == 'R')
    return CPROF__WHERE_RUNNING;
  t->unreadable = "syscall";
  t->err = -n;
  return CPROF__WHERE_UNREADABLE;
}

/* The CPU time of thread tid (its CPU clock), or -1. */
int64_t cprof__thread_cpu(pid_t tid) {
  struct timespec ts;
  if (clock_gettime(cprof__thread_cpu_clock(tid), &ts) != 0)
    return -1;
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
