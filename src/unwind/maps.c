/* /proc/self/maps, read and parsed.
 *
 * The format is proc(5)'s:
 *
 *   address           perms offset  dev   inode       pathname
 *   00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon
 *
 * The pathname is everything after the inode and its padding, so it may
 * contain spaces; it is absent for anonymous mappings; the kernel appends
 * " (deleted)" when the file has been unlinked. */
#include "core/hex.h"
#include "core/search.h"
#include "unwind/maps.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/procfs.h"

/* The suffix the kernel adds to the path of an unlinked file. Go's
 * runtime/pprof strips it too (parseProcSelfMaps), so the mapping keeps the
 * name the file had, which is what a person and pprof want to see. */
static const char deleted_suffix[] = " (deleted)";

/* Reads one or more hex digits at *p into *out and advances *p. Returns 0, or
 * -1 when there is no digit or the number does not fit in 64 bits. */
static int parse_hex(const char **p, uint64_t *out) {
  const char *s = *p;
  uint64_t v = 0;
  int d, n = 0;
  while ((d = cprof__hexval(*s)) >= 0) {
    if (v >> 60)
      return -1;
    v = v << 4 | (uint64_t)d;
    s++;
    n++;
  }
  if (n == 0)
    return -1;
  *p = s;
  *out = v;
  return 0;
}

static int parse_dec(const char **p, uint64_t *out) {
  const char *s = *p;
  uint64_t v = 0;
  while (*s >= '0' && *s <= '9')
    v = v * 10 + (uint64_t)(*s++ - '0');
  if (s == *p)
    return -1;
  *p = s;
  *out = v;
  return 0;
}

/* Parses one NUL-terminated line into *e. Returns 0, or -1 for a line that
 * is not in the format (it is then skipped). The path is left pointing into
 * the line, which this may shorten by writing a NUL. */
static int parse_line(char *line, cprof__map_entry_t *e) {
  const char *p = line;
  uint64_t start, end, offset, major, minor, inode;

  if (parse_hex(&p, &start) || *p++ != '-' || parse_hex(&p, &end) || *p++ != ' ')
    return -1;
  for (int i = 0; i < 4; i++) {
    if (p[i] == '\0' || p[i] == ' ')
      return -1;
    e->perms[i] = p[i];
  }
  e->perms[4] = '\0';
  p += 4;
  if (*p++ != ' ' || parse_hex(&p, &offset) || *p++ != ' ')
    return -1;
  /* The device is major:minor in hex, the inode in decimal. */
  if (parse_hex(&p, &major) || *p++ != ':' || parse_hex(&p, &minor) || *p++ != ' ')
    return -1;
  if (parse_dec(&p, &inode))
    return -1;
  if (*p != ' ' && *p != '\0')
    return -1;
  while (*p == ' ')
    p++;
  if (start >= end || end > UINTPTR_MAX)
    return -1;

  char *path = line + (p - line);
  size_t len = strlen(path);
  size_t sl = sizeof deleted_suffix - 1;
  e->deleted = len > sl && strcmp(path + len - sl, deleted_suffix) == 0;
  if (e->deleted)
    path[len - sl] = '\0';

  e->start = (uintptr_t)start;
  e->end = (uintptr_t)end;
  e->offset = offset;
  e->path = path;
  e->dev = major << 32 | (minor & 0xffffffffu);
  e->inode = inode;
  return 0;
}

static int by_start(const void *a, const void *b) {
  const cprof__map_entry_t *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

int cprof__maps_parse(cprof__maps_t *m, char *text) {
  memset(m, 0, sizeof *m);
  m->text = text;

  /* One entry per line at most, so count the lines first and allocate once. */
  size_t lines = 1;
  for (const char *c = text; *c; c++)
    lines += *c == '\n';
  m->v = malloc(lines * sizeof *m->v);
  if (!m->v) {
    free(text);
    m->text = NULL;
    return -ENOMEM;
  }

  int sorted = 1;
  char *line = text;
  while (*line) {
    char *nl = strchr(line, '\n');
    char *next = nl ? nl + 1 : line + strlen(line);
    if (nl)
      *nl = '\0';
    cprof__map_entry_t *e = &m->v[m->n];
    if (parse_line(line, e) == 0) {
      if (m->n > 0 && e->start < m->v[m->n - 1].start)
        sorted = 0;
      m->n++;
    }
    line = next;
  }
  /* The kernel lists mappings in address order; text from elsewhere may not,
   * and the binary search needs it. */
  if (!sorted)
    qsort(m->v, (size_t)m->n, sizeof *m->v, by_start);
  return 0;
}

int cprof__maps_read(cprof__maps_t *m) {
  memset(m, 0, sizeof *m);
  char path[64];
  snprintf(path, sizeof path, "%s/maps", cprof__procfs_self());
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;

  /* The file reports a size of 0, so read until end of file, doubling the
   * buffer as needed. */
  size_t cap = 16384, len = 0;
  char *text = malloc(cap);
  if (!text)
    goto nomem;
  for (;;) {
    if (cap - len < 4096) {
      char *t = realloc(text, cap * 2);
      if (!t)
        goto nomem;
      text = t;
      cap *= 2;
    }
    ssize_t r = read(fd, text + len, cap - len - 1);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int err = -errno;
      free(text);
      close(fd);
      return err;
    }
    if (r == 0)
      break;
    len += (size_t)r;
  }
  close(fd);
  text[len] = '\0';
  return cprof__maps_parse(m, text);

nomem:
  free(text);
  close(fd);
  return -ENOMEM;
}

void cprof__maps_free(cprof__maps_t *m) {
  free(m->v);
  free(m->text);
  memset(m, 0, sizeof *m);
}

const cprof__map_entry_t *cprof__maps_find_sigsafe(const cprof__maps_t *m, uintptr_t addr) {
  /* Plain loads and compares only: this runs in signal handlers. */
  if (!m || !m->v || m->n <= 0)
    return NULL;
  /* The answer, if any, is the last entry with start <= addr. */
  int lo = (int)CPROF__PARTITION_POINT(m->n, mid, m->v[mid].start <= addr);
  if (lo == 0)
    return NULL;
  const cprof__map_entry_t *e = &m->v[lo - 1];
  return addr < e->end ? e : NULL;
}
