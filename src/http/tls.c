/* Reading the PEM files of CPROF_TLS_CERT and CPROF_TLS_KEY for
 * libmicrohttpd (tls.h). The files must be regular files, looked at before
 * and after a non-blocking open: the program waits for the keeper before
 * main, so a FIFO or a device must not hold it. Why a start failed (a file
 * GnuTLS rejects) comes from libmicrohttpd's error log, caught while
 * starting (server.c), for the one stderr line. */
#include "http/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
/* The most a PEM file may hold: a certificate chain is a few KiB. */
#define MAX_PEM (1 << 20)

/* What a path names when it is not a regular file, for the stderr line;
 * NULL for a regular file. */
static const char *not_regular(mode_t mode) {
  return S_ISREG(mode)    ? NULL
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISDIR(mode)  ? "a directory"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a regular file";
}

/* Reads a whole PEM file, NUL-terminated, into *out (malloc'd; its length
 * in *len). Returns 0 or a negative errno; -EFBIG beyond MAX_PEM; -NOT_A_FILE
 * (with *kind saying what it is) when the path is not a regular file.
 *
 * The program waits in its constructor until the keeper has read these, so
 * nothing here may wait on what the path names: a FIFO's open blocks until
 * a writer comes, a FIFO's or a device's read until it has data, or reads
 * for ever (/dev/zero). The path is looked at first (stat), so that no
 * device is ever opened (opening some has effects: a tape rewinds, a
 * watchdog starts), then opened without blocking, and what was opened is
 * looked at again (fstat), as the path may have been replaced in between. */
#define NOT_A_FILE 4096 /* beyond every errno */
static int read_pem(const char *path, char **out, size_t *len, const char **kind) {
  struct stat st;
  if (stat(path, &st) != 0)
    return -errno;
  if ((*kind = not_regular(st.st_mode)))
    return -NOT_A_FILE;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return -errno;
  if (fstat(fd, &st) == 0 && (*kind = not_regular(st.st_mode))) {
    close(fd);
    return -NOT_A_FILE;
  }
  int err = 0;
  char *b = NULL;
  size_t n = 0;
  if (fstat(fd, &st) != 0) {
    err = -errno;
  } else if (st.st_size > MAX_PEM) {
    err = -EFBIG;
  } else if (!(b = malloc((size_t)st.st_size + 1))) {
    err = -ENOMEM;
  } else {
    while (n < (size_t)st.st_size) {
      ssize_t k = read(fd, b + n, (size_t)st.st_size - n);
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0) {
        err = k < 0 ? -errno : 0;
        break;
      }
      n += (size_t)k;
    }
    b[n] = '\0';
  }
  close(fd);
  if (err) {
    if (b)
      explicit_bzero(b, n);
    free(b);
    return err;
  }
  *out = b;
  *len = n;
  return 0;
}

int cprof__tls_load(cprof__tls_t *t, char *why, size_t whylen) {
  memset(t, 0, sizeof *t);
  t->opts[0].option = MHD_OPTION_END;
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  if (!cfg.tls_cert[0])
    return 0;
  if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    snprintf(why, whylen,
             "CPROF_TLS_CERT: this libmicrohttpd was built without TLS; the profiling server "
             "stays off");
    return -ENOTSUP;
  }
  const char *kind = NULL;
  int err = read_pem(cfg.tls_cert, &t->cert, &t->certlen, &kind);
  const char *which = "CPROF_TLS_CERT", *path = cfg.tls_cert;
  if (!err) {
    err = read_pem(cfg.tls_key, &t->key, &t->keylen, &kind);
    which = "CPROF_TLS_KEY", path = cfg.tls_key;
  }
  if (err == -NOT_A_FILE) {
    free(t->cert);
    t->cert = NULL;
    snprintf(why, whylen,
             "%s=%s: not a regular file (%s): a PEM file is expected; the profiling server "
             "stays off",
             which, path, kind);
    return -ENOTSUP;
  }
  if (err) {
    free(t->cert);
    t->cert = NULL;
    snprintf(why, whylen,
             "%s=%s: cannot read it: %s; the profiling server "
             "stays off",
             which, path, err == -EFBIG ? "larger than 1 MiB" : strerror(-err));
    return -ENOTSUP;
  }
  t->flags = MHD_USE_TLS;
  t->opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, t->cert};
  t->opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, t->key};
  t->opts[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  return 0;
}

void cprof__tls_wipe(cprof__tls_t *t) {
  if (t->key)
    explicit_bzero(t->key, t->keylen);
  free(t->key);
  free(t->cert);
  t->key = t->cert = NULL;
}

void cprof__tls_refused(char *why, size_t whylen) {
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  char reason[400];
  snprintf(reason, sizeof reason, "%.399s", why[0] ? why : "refused");
  snprintf(why, whylen,
           "CPROF_TLS_CERT=%s, CPROF_TLS_KEY=%s: libmicrohttpd (GnuTLS) refused them: %s; "
           "the profiling server stays off",
           cfg.tls_cert, cfg.tls_key, reason);
}
