/* HTTPS for the embedded server (CPROF_TLS_CERT, CPROF_TLS_KEY):
 * libmicrohttpd's, over GnuTLS. The keeper (server.c) reads the PEM files,
 * in its own descriptor table, and hands their bytes to MHD_start_daemon,
 * which parses them into GnuTLS credentials there and then; our copy of the
 * key is wiped. */
#ifndef CPROF_HTTP_TLS_H
#define CPROF_HTTP_TLS_H

#include <microhttpd.h>
#include <stddef.h>

typedef struct cprof__tls {
  char *cert, *key;
  size_t certlen, keylen;
  struct MHD_OptionItem opts[3]; /* for MHD_OPTION_ARRAY */
  unsigned flags;
} cprof__tls_t;

/* Fills t from CPROF_TLS_CERT and CPROF_TLS_KEY, or leaves it empty for
 * plain HTTP. Returns 0, or -ENOTSUP with the reason in why. */
int cprof__tls_load(cprof__tls_t *t, char *why, size_t whylen);
/* After MHD_start_daemon: GnuTLS holds the parsed key; our bytes go. */
void cprof__tls_wipe(cprof__tls_t *t);
/* MHD_start_daemon refused the files: why, libmicrohttpd's reason caught
 * from its error log (or ""), becomes the one stderr line, naming them. */
void cprof__tls_refused(char *why, size_t whylen);

#endif
