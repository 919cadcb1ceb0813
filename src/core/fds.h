/* A descriptor table of cprof's own, for the threads that hold descriptors
 * (the HTTP server's): see fds.c for why. And writing a profile to a
 * descriptor the program hands over. */
#ifndef CPROF_CORE_FDS_H
#define CPROF_CORE_FDS_H

#include <stddef.h>
#include <stdint.h>

/* Gives the calling thread a descriptor table of its own, holding none of
 * the program's descriptors, with 0, 1 and 2 open on /dev/null; the threads
 * it creates from then on share it. For a thread of cprof's that has opened
 * nothing yet, while the thread that created it still runs. Returns 0, or
 * unshare(2)'s negative errno when the kernel refuses (close_range is
 * tried first, from Linux 5.9): the thread then still shares the
 * program's table. */
int cprof__fds_unshare(void);

/* RLIMIT_NOFILE, lowered after the table was made, leaves room for our
 * numbers only where placeholders are (fds.c: fill_low_numbers): closes
 * those from where the limit now wants our numbers to start, in the
 * calling thread's table of cprof's own. Returns how many it closed. */
int cprof__fds_fit_limit(void);

/* Whether the calling thread is known to run in a table of cprof's own:
 * the thread that called cprof__fds_unshare, and threads it created that
 * said so with cprof__fds_joined. */
int cprof__fds_in_own_table(void);
/* Which table: 0 for the program's, else a number that tells cprof's
 * tables apart (each cprof__fds_unshare makes one). */
unsigned cprof__fds_table(void);
/* Called on a thread created from one in cprof's own table, with that
 * thread's cprof__fds_table(). */
void cprof__fds_joined(unsigned table);

/* The descriptor that is the program's stderr for the calling thread: 2,
 * or in our table a copy of the program's 2 that the caller closes
 * (*to_close), or -1 when it cannot be had. */
int cprof__fds_stderr(int *to_close);

/* Writes all of data to fd, through EINTR and short writes: 0 or a
 * negative errno (errno is write(2)'s). */
int cprof__write_all(int fd, const void *data, size_t len);
/* 0 when fd is open for writing, else -EBADF. */
int cprof__fd_writable(int fd);

/* Entries of the directory at path but . and .. (/proc/self/fd: the
 * descriptors open), -1 when it cannot be read. Allocates nothing: the
 * entries are read with getdents64 into the stack (opendir allocates). */
int64_t cprof__count_entries(const char *path);

#endif
