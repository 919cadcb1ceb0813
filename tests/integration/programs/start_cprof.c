/* Linked into a test program to start cprof from the environment before
 * main, the way a program that links -lcprof would call cprof_start(NULL)
 * first thing: the same program, linked instead of preloaded. */
#include <cprof.h>

__attribute__((constructor)) static void start(void) { cprof_start(NULL); }
