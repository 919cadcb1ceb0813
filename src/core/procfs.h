/* Small /proc files, read whole into the caller's buffer, and the
 * "key value" lines of /proc/PID/status, /proc/PID/io and /proc/stat.
 * Stack buffers only: nothing here allocates (the metrics sampler's rule). */
#ifndef CPROF_CORE_PROCFS_H
#define CPROF_CORE_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The whole of the file at path (as much as fits) into buf,
 * NUL-terminated: its length, or -1 when it cannot be opened. */
ssize_t cprof__procfs_read(const char *path, char *buf, size_t len);

/* The calling thread's /proc directory: "/proc/thread-self" (Linux 3.17),
 * which still reads after the main thread has ended (/proc/self is then a
 * zombie's, its maps empty); or "/proc/self" under an emulator that gives
 * the program its own /proc/self but leaves /proc/thread-self the
 * emulator's (qemu-user before 8.1: the aarch64 tests of make test-arm64),
 * told by the two exe links naming different files. Decided once. */
const char *cprof__procfs_self(void);

/* The number after key at the start of a line of text (key includes its
 * ':' or space, "VmRSS:", "btime "), or -1. */
int64_t cprof__procfs_field(const char *text, const char *key);

#endif
