/* Access control for the endpoints: HTTP Basic (CPROF_AUTH) and bearer
 * tokens (CPROF_TOKEN). */
#ifndef CPROF_HTTP_AUTH_H
#define CPROF_HTTP_AUTH_H

#include "core/config.h"

enum {
  CPROF_AUTH_OK,    /* no credential is configured, or a right one came */
  CPROF_AUTH_NONE,  /* one is needed and the request carries none */
  CPROF_AUTH_WRONG, /* the request carries a credential that is not right */
};

/* Checks the Authorization header against the configured credentials, in
 * a time that tells nothing about them but the length of the one compared. */
int cprof__auth_check(const cprof__config_t *cfg, const char *authorization);

/* Says on stderr that a request for path came with wrong credentials: one
 * line a second at most, counting the ones not said. Never the credential. */
void cprof__auth_refused(const char *path);

/* Decodes standard base64 (RFC 4648) into out; -1 on bad input or overflow. */
int cprof__base64_decode(const char *in, char *out, size_t outlen);

#endif
