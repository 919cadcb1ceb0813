/* CPROF_OUTPUT: the whole run's CPU profile and the heap profile at the
 * end, written to DIR/cpu.pb.gz and DIR/heap.pb.gz when
 * the program exits (or at cprof_stop), for batch programs that end before
 * anyone could fetch a profile over HTTP. */
#ifndef CPROF_LIFE_OUTPUT_H
#define CPROF_LIFE_OUTPUT_H

#include "core/config.h"

/* Starts recording. Problems are one stderr line each; the program runs on. */
void cprof__output_start(const cprof__config_t *cfg);
/* Stops recording and writes the file; does nothing if not recording, or
 * in a forked child (the file is the parent's). */
void cprof__output_finish(void);
void cprof__output_atfork_prepare(void);
void cprof__output_atfork_parent(void);
void cprof__output_atfork_child(void);

#endif
