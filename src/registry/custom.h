/* Custom profiles (cprof_profile_new, cprof.h): each a registry profile
 * with a table of its own, of keys and the stacks that added them. */
#ifndef CPROF_REGISTRY_CUSTOM_H
#define CPROF_REGISTRY_CUSTOM_H

#include "cprof.h"
#include "registry/registry.h"

/* The most keys one custom profile holds: cprof_profile_add returns -ENOMEM
 * past it. 2^20 keys take 32 MiB of table, plus each distinct stack once. */
#define CPROF_CUSTOM_MAX_KEYS ((size_t)1 << 20)

/* The operations every custom profile shares; its table is its arg. */
extern const cprof__profile_ops_t cprof__custom_ops;

#endif
