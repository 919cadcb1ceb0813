/* The library of stripped_main.c, stripped with it by debuginfod.sh. Its
 * spinning function is static: a stripped library keeps names only for
 * what it exports (.dynsym), so only debug information names it, and only
 * debug information says the spinning is shared_spin's, inlined. */
#include "stripped_shared.h"

#define NOINLINE __attribute__((noinline))

static volatile unsigned long spins;

static NOINLINE void lib_spin(volatile int *stop) {
  shared_spin(stop, &spins); /* the inlined call */
}

NOINLINE void stripped_lib_run(volatile int *stop) {
  lib_spin(stop); /* the library's call */
  spins++;
}
