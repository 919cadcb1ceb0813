/* A descriptor table of cprof's own.
 *
 * The program owns its descriptor numbers. Daemons close every number above
 * stderr at start (3..1023, close_range, closefrom) without knowing what is
 * there; programs dup2 onto numbers they chose, expect open() to return the
 * lowest free number, run close to RLIMIT_NOFILE, and fork children that
 * inherit their table. A descriptor of cprof's in that table breaks each of
 * those: the program closes it under us (the server then polled a closed
 * socket at 100 % of a core, for ever), gets its number back for a file of
 * its own (and our reads would take the program's bytes), sees other numbers
 * than without us, hits EMFILE sooner, and hands it to its children.
 *
 * Linux keeps the descriptor table per thread, shared by default. A thread
 * that unshares it gets a table of its own, and the threads it creates
 * afterwards share that one (clone(2) with CLONE_FILES shares the creator's
 * table). So the server's threads run in a table of cprof's: numbers there
 * mean nothing in the program's table and the reverse. The program cannot
 * close, reuse, count or dup2 over ours, however it goes about it (close,
 * close_range, closefrom, a raw system call, io_uring); fork copies the
 * forking thread's table and exec keeps the exec'ing thread's, so neither
 * ever sees ours; and RLIMIT_NOFILE, one limit per process, bounds numbers
 * within each table, so ours do not take the program's. Nothing is
 * interposed, and the program's close() costs what it costs without us.
 *
 * Our table starts empty but for 0, 1 and 2 on /dev/null (and placeholders
 * below our own numbers: first_own_number). Copies of the
 * program's stdio would keep its pipes open after it closed or redirected
 * them (a parent waiting for EOF on a daemon's stderr would wait for ever),
 * and leaving the numbers free would give them to sockets, where anything
 * writing to "stderr" from our threads would land. Our threads print
 * nothing. In cprof's own sanitizer builds, for its tests, 2 stays the
 * program's stderr, where the sanitizers write their reports. */
#include "core/fds.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KEEP_STDERR 1
#else
#define KEEP_STDERR 0
#endif
/* The numbers from which nothing of the program's is kept. (0 and 1 are
 * replaced by /dev/null either way.) */
#define FIRST_DROPPED (KEEP_STDERR ? 3 : 0)

/* The calling thread's table: 0 for the program's, else the number
 * cprof__fds_unshare gave it. */
static __thread unsigned own_table;
static unsigned tables_made;

int cprof__fds_in_own_table(void) { return own_table != 0; }

unsigned cprof__fds_table(void) { return own_table; }

void cprof__fds_joined(unsigned table) { own_table = table; }

/* Without /proc: every number the limit allows, up to a bound. */
static void close_by_number(void) {
  struct rlimit rl;
  rlim_t max = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
  if (max > 65536)
    max = 65536;
  for (rlim_t fd = FIRST_DROPPED; fd < max; fd++)
    close((int)fd);
}

/* Closes every descriptor of the calling thread's table, which unshare(2)
 * has just copied from the program's: for kernels before 5.9, which have no
 * close_range. The copies are found in /proc/thread-self/fd (Linux 3.17),
 * with getdents64 on a descriptor closed last. */
static void close_all_copies(void) {
  if (syscall(SYS_close_range, FIRST_DROPPED, ~0u, 0u) == 0)
    return;
  int dir = open("/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    close_by_number();
    return;
  }
  char buf[4096] __attribute__((aligned(8)));
  long n;
  while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      /* struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name. */
      unsigned short reclen;
      __builtin_memcpy(&reclen, buf + off + 16, sizeof reclen);
      const char *name = buf + off + 19;
      if (name[0] >= '0' && name[0] <= '9') {
        int fd = atoi(name);
        if (fd != dir && fd >= FIRST_DROPPED)
          close(fd);
      }
      off += reclen;
    }
  }
  close(dir);
  if (n < 0)
    close_by_number();
}

/* The lowest number our own descriptors take in a table of ours; below it,
 * 3 and up hold placeholders (fill_low_numbers).
 *
 * A library the program uses may keep a descriptor it opened in the
 * program's table as a number in a global, and use it from whatever thread
 * calls it. libunwind (which the full tcmalloc and gperftools' profilers
 * unwind with) keeps a pipe to validate addresses, opened once, at the
 * lowest free numbers of the program's table, 3 and 4 in most programs;
 * run on one of our threads (tcmalloc samples an allocation of the server's
 * there), it reads "its" 3, finds a listening socket, and "reopens" its
 * pipe: it closes our 3 and 4 and the server spun on accept4 for ever
 * (ENOTSOCK). Such numbers are the program's lowest: what it opened first.
 * So ours start well above them, at 256, or a quarter of RLIMIT_NOFILE
 * where that is less (the server must still fit under a low limit such as
 * 16, where a collision cannot be ruled out). ThreadSanitizer knows one
 * descriptor table per process: one number used in two tables looks to it
 * like one descriptor two threads use without synchronising. In cprof's
 * TSan build, for its tests, our numbers start at 100 at least. */
#define OWN_NUMBERS_FROM 256
#ifdef __SANITIZE_THREAD__
#define OWN_NUMBERS_AT_LEAST 100
#else
#define OWN_NUMBERS_AT_LEAST 3
#endif

static int first_own_number(void) {
  struct rlimit rl;
  rlim_t base = OWN_NUMBERS_FROM;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 4 < base)
    base = rl.rlim_cur / 4;
  if (base < OWN_NUMBERS_AT_LEAST)
    base = OWN_NUMBERS_AT_LEAST;
  return (int)base;
}

/* 0, 1 and 2 on /dev/null read-write, or on an eventfd where there is no
 * /dev/null (it refuses anything but 8-byte writes, which is what we want
 * here). 3 up to first_own_number() on /dev/null write-only: placeholders,
 * so that what the kernel gives us (the listening socket, libmicrohttpd's
 * eventfd and connections, the files we read) is numbered above them. A
 * library that uses one of its numbers on our thread then meets a
 * placeholder, never ours: a write goes nowhere, a read fails with EBADF
 * as on a closed descriptor (not "no data yet": libunwind takes EAGAIN on
 * its read as leave to trust a write that /dev/null never checks), and a
 * library that closes its number and opens anew, as libunwind does then,
 * gets the very numbers back, since every lower one is held: its global
 * then means its own descriptor in the program's table as before. Without
 * /dev/null, a non-blocking eventfd stands in. */
static void fill_low_numbers(void) {
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd < 0)
    fd = eventfd(0, EFD_CLOEXEC);
  if (fd < 0)
    return;
  for (int i = 0; i < 3; i++)
    if (i != fd && !(i == 2 && KEEP_STDERR))
      dup3(fd, i, O_CLOEXEC);
  if (fd > 2)
    close(fd);
  int base = first_own_number();
  if (base <= 3)
    return;
  int ph = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (ph < 0)
    ph = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (ph < 0)
    return;
  for (int i = 3; i < base; i++)
    if (i != ph && dup3(ph, i, O_CLOEXEC) < 0)
      break; /* RLIMIT_NOFILE: our own numbers start lower, where they can */
  if (ph >= base)
    close(ph);
}

int cprof__fds_fit_limit(void) {
  if (!own_table)
    return 0;
  int base = first_own_number(), closed = 0;
  for (int fd = base; fd < OWN_NUMBERS_FROM; fd++) {
    struct stat st;
    /* Only a placeholder: a number a library closed and one of ours took
     * since is ours. Nothing else of ours opens /dev/null write-only. */
    if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3) &&
        (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY && close(fd) == 0)
      closed++;
  }
  return closed;
}

int cprof__fds_unshare(void) {
  /* close_range(2) from FIRST_DROPPED to the top with CLOSE_RANGE_UNSHARE
   * gives this thread a new table and copies into it only the numbers
   * below FIRST_DROPPED (fs/file.c: what is to be closed is not copied).
   * Safe because the table is shared: our creator runs and waits for us.
   * Were it not, the kernel would close in the one table there is. */
  if (syscall(SYS_close_range, FIRST_DROPPED, ~0u, CLOSE_RANGE_UNSHARE) != 0) {
    if (unshare(CLONE_FILES) != 0)
      return -errno;
    /* We have a table of our own now, with copies of the program's
     * descriptors in it: keeping any would keep the program's files open. */
    close_all_copies();
  }
  own_table = __atomic_add_fetch(&tables_made, 1, __ATOMIC_RELAXED);
  fill_low_numbers();
  return 0;
}

/* The program's stderr, borrowed for one line by a thread in our table
 * (whose 2 is /dev/null): pidfd_getfd(2) (Linux 5.6) copies the program's
 * descriptor 2 as it is now, the same open file with its offset and flags,
 * out of the table of the thread group's leader. A process may always do
 * that to itself (ptrace access to its own thread group needs nothing).
 * The copy is closed at once, so the program's stderr is never held open
 * past the write. Without pidfd_getfd, or when the leader has ended, the
 * line is lost rather than written anywhere else. */
int cprof__fds_stderr(int *to_close) {
  *to_close = -1;
  if (!own_table || KEEP_STDERR)
    return STDERR_FILENO;
  int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (pidfd < 0)
    return -1;
  int fd = (int)syscall(SYS_pidfd_getfd, pidfd, STDERR_FILENO, 0);
  close(pidfd);
  *to_close = fd;
  return fd;
}

int cprof__write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)
      return -EIO;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int cprof__fd_writable(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
    return -EBADF;
  return 0;
}

int64_t cprof__count_entries(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int64_t n = 0;
  char buf[4096] __attribute__((aligned(8)));
  for (;;) {
    long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      if (got < 0)
        n = -1;
      break;
    }
    for (long off = 0; off < got;) {
      /* struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name */
      unsigned short reclen;
      memcpy(&reclen, buf + off + 16, sizeof reclen);
      const char *name = buf + off + 19;
      if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
        n++;
      off += reclen;
    }
  }
  close(fd);
  return n;
}
