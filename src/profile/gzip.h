/* gzip (RFC 1952) through zlib, for profile.proto bodies. */
#ifndef CPROF_PROFILE_GZIP_H
#define CPROF_PROFILE_GZIP_H

#include <stddef.h>

#include "core/buf.h"

/* Appends the gzip encoding of in[0..n) to out. 0 or a negative errno. */
int cprof__gzip(const void *in, size_t n, cprof__buf_t *out);

#endif
