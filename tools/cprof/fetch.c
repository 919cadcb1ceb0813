/* cprof fetch SOURCE -o FILE: saves a profile's bytes as they came, as
 * go tool pprof saves what it fetched ("Saved profile in FILE"), so that it
 * can be read later, elsewhere, by cprof or by pprof. The file appears
 * whole or not at all: the bytes go to a temporary file beside it, which
 * is renamed over FILE once written and synced. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "source.h"

static void usage(FILE *out) {
  fprintf(out, "usage: cprof fetch [--seconds N] SOURCE -o FILE\n"
               "\n"
               "Saves the profile at SOURCE (a URL, a file or - for standard input) in FILE,\n"
               "byte for byte; -o - writes it to standard output.\n"
               "\n"
               "  -o, --output FILE  where to save it (required)\n"
               "  --seconds N        ask the URL for a profile over N seconds (sets ?seconds=N,\n"
               "                     as pprof's -seconds)\n"
               "  -h, --help         this text\n"
               "\n"
               "A URL without a path means /debug/pprof/profile, the CPU profile; host:port\n"
               "alone is a URL. user:password@ in the URL is sent as HTTP Basic auth.\n");
}

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -errno;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes the bytes to a temporary file in path's directory, with the mode
 * a new file gets (0666 less the umask), then renames it to path. */
static int save(const char *path, const source_t *s) {
  /* POSIX dirname and basename may write into their argument. */
  char *dup = strdup(path), *dup2 = strdup(path), *tmp = NULL;
  int fd = -1, rc = -ENOMEM;
  if (!dup || !dup2 || asprintf(&tmp, "%s/.%s.XXXXXX", dirname(dup), basename(dup2)) < 0) {
    tmp = NULL;
    goto out;
  }
  if ((fd = mkstemp(tmp)) < 0) {
    rc = -errno;
    free(tmp);
    tmp = NULL;
    goto out;
  }
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0 || (rc = write_all(fd, s->data, s->len)) != 0 ||
      fsync(fd) != 0) {
    rc = rc ? rc : -errno;
    goto out;
  }
  if (close(fd) != 0) {
    fd = -1;
    rc = -errno;
    goto out;
  }
  fd = -1;
  rc = rename(tmp, path) == 0 ? 0 : -errno;
out:
  if (fd >= 0)
    close(fd);
  if (rc && tmp)
    unlink(tmp);
  free(tmp);
  free(dup);
  free(dup2);
  return rc;
}

int cmd_fetch(int argc, char **argv) {
  static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
                                        {"seconds", required_argument, NULL, 's'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  source_options_t opts = {0};
  const char *output = NULL;
  char err[512];
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", longs, NULL)) != -1) {
    switch (c) {
    case 'o':
      output = optarg;
      break;
    case 's': {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 1 || v > 86400) {
        fprintf(stderr, "cprof fetch: --seconds wants a whole number of seconds from 1 to 86400\n");
        return 2;
      }
      opts.seconds = (int)v;
      break;
    }
    case 'h':
      usage(stdout);
      return 0;
    case ':':
      fprintf(stderr, "cprof fetch: %s wants a value (cprof fetch --help)\n", argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr, "cprof fetch: unknown option %s (cprof fetch --help)\n", argv[optind - 1]);
      return 2;
    }
  }
  if (optind != argc - 1 || !output) {
    fprintf(stderr, "cprof fetch: %s (cprof fetch --help)\n",
            optind >= argc      ? "no SOURCE given"
            : optind < argc - 1 ? "one SOURCE at a time"
                                : "no -o FILE given");
    return 2;
  }

  source_t s;
  if (source_read_opts(argv[optind], &opts, &s, err, sizeof err) != 0) {
    fprintf(stderr, "cprof fetch: %s\n", err);
    return 1;
  }
  int rc = strcmp(output, "-") == 0 ? write_all(STDOUT_FILENO, s.data, s.len) : save(output, &s);
  source_free(&s);
  if (rc) {
    fprintf(stderr, "cprof fetch: %s: %s\n", output, strerror(-rc));
    return 1;
  }
  if (strcmp(output, "-") != 0)
    fprintf(stderr, "Saved profile in %s\n", output);
  return 0;
}
