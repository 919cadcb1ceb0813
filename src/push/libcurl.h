/* libcurl for the push (push.c), loaded (dlopen) the first time it is
 * needed, on the push's thread: a program that does not push never loads
 * it, nor the libraries it brings. */
#ifndef CPROF_PUSH_LIBCURL_H
#define CPROF_PUSH_LIBCURL_H

#include <stddef.h>

#include "push/ingest.h"

/* libcurl's functions, as ingest.c's request takes them: filled by
 * cprof__libcurl_load. */
extern cprof__curl_t cprof__libcurl;

/* On the push's thread, in its table. 0, or -ENOENT with a line in why
 * (the first time; a later call after a failure leaves why alone). */
int cprof__libcurl_load(char *why, size_t whylen);

#endif
