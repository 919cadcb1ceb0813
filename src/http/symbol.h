/* The word parser of /debug/pprof/symbol, apart so tests/fuzz can reach it. */
#ifndef CPROF_HTTP_SYMBOL_H
#define CPROF_HTTP_SYMBOL_H

#include <stddef.h>
#include <stdint.h>

/* Parses s[0..n) like Go's strconv.ParseUint(s, 0, 64): 0x hex, 0o/0
 * octal, 0b binary, or decimal. Returns 0 or -1. */
int cprof__symbol_parse_addr(const char *s, size_t n, uint64_t *out);

#endif
