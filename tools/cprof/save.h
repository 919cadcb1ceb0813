/* Saving what a command made (a profile, a page, a graph) so that the file
 * appears whole or not at all: the bytes go to a temporary file beside it,
 * with the mode a new file gets (0666 less the umask), synced, then renamed
 * over it. */
#ifndef CPROF_TOOLS_SAVE_H
#define CPROF_TOOLS_SAVE_H

#include <stddef.h>

/* 0 or a negative errno; on failure path is as it was. */
int save_file(const char *path, const void *data, size_t len);

/* Writes all of data[0..n) to fd, through short writes and EINTR: 0 or a
 * negative errno. */
int save_write_all(int fd, const void *data, size_t n);

#endif
