/* The binary search, written once: over the arrays of the symbolizer, the
 * walkers (in signal handlers too) and the samplers, sorted by an address,
 * an offset or a thread id. */
#ifndef CPROF_CORE_SEARCH_H
#define CPROF_CORE_SEARCH_H

#include <stddef.h>

/* How many of the indexes 0 .. n-1, from the first, satisfy `holds`, an
 * expression of the index named i that is true for every index before
 * some point and false from there on (C++'s std::partition_point): the
 * count of entries at or before a key, or the first entry past it. n is
 * evaluated once; a negative n counts as 0. Plain loads and compares
 * only, so async-signal-safe when `holds` is. */
#define CPROF__PARTITION_POINT(n, i, holds)                                                        \
  ({                                                                                               \
    __typeof__(n) n_ = (n);                                                                        \
    size_t lo_ = 0, hi_ = n_ > 0 ? (size_t)n_ : 0;                                                 \
    while (lo_ < hi_) {                                                                            \
      size_t i = lo_ + (hi_ - lo_) / 2;                                                            \
      if (holds)                                                                                   \
        lo_ = i + 1;                                                                               \
      else                                                                                         \
        hi_ = i;                                                                                   \
    }                                                                                              \
    lo_;                                                                                           \
  })

#endif
