/* The malloc family, interposed (malloc.c). */
#ifndef CPROF_INTERPOSE_MALLOC_H
#define CPROF_INTERPOSE_MALLOC_H

#include <stddef.h>

/* 0 when the program's malloc calls reach libcprof's wrappers; otherwise
 * -ENOTSUP with the reason in why (another allocator comes first in the
 * lookup order, or this is a sanitizer build). */
int cprof__malloc_check(char *why, size_t len);

#endif
