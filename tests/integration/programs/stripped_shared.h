/* Shared by stripped_main.c and stripped_lib.c, as a package's files share
 * its headers: the same inline function in both, whose description dwz
 * moves into a file of their own, as Debian's -dbgsym packages have it
 * (debuginfod.sh). */
#ifndef STRIPPED_SHARED_H
#define STRIPPED_SHARED_H

static inline __attribute__((always_inline)) void shared_spin(volatile int *stop,
                                                              volatile unsigned long *n) {
  while (!*stop)
    *n += 1; /* the spinning line */
}

#endif
