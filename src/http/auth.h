/* Access control for the endpoints: HTTP Basic (CPROF_AUTH) and bearer
 * tokens (CPROF_TOKEN). */
#ifndef CPROF_HTTP_AUTH_H
#define CPROF_HTTP_AUTH_H

#include "core/config.h"

/* 1 if the request may proceed: no credential is configured, or the
 * Authorization header carries one of the configured ones. */
int cprof__auth_ok(const cprof__config_t *cfg, const char *authorization);

/* Decodes standard base64 (RFC 4648) into out; -1 on bad input or overflow. */
int cprof__base64_decode(const char *in, char *out, size_t outlen);

#endif
