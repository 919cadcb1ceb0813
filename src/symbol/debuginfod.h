/* Debug files fetched from debuginfod servers, in the background, for
 * modules that have none on this machine. Only when DEBUGINFOD_URLS is set:
 * see debuginfod.c. Build IDs are lower-case hex, as cprof__mapping_t has
 * them. Nothing here waits for the network: the symbolizer may call any of
 * these with its lock held, except cprof__debuginfod_kick. */
#ifndef CPROF_SYMBOL_DEBUGINFOD_H
#define CPROF_SYMBOL_DEBUGINFOD_H

#include <stddef.h>

/* Whether debuginfod is to be asked: DEBUGINFOD_URLS, libdebuginfod's own
 * switch, is set and not empty. Read once. */
int cprof__debuginfod_enabled(void);

/* Asks for the debug file of the module with this build ID: the first time,
 * and again once an earlier failure is 10 minutes old, a fetch is queued
 * for cprof's fetching thread, which cprof__debuginfod_kick starts. */
void cprof__debuginfod_want(const char *build_id);

/* The k-th place (k = 0, 1) where a fetched debug file for build_id may
 * be: the file a fetch in this process brought, then where libdebuginfod's
 * cache keeps it (a fetch by an earlier process, or by gdb). Returns 0 and
 * fills path, or -1 when there is no such place. The caller checks the
 * file's build ID. */
int cprof__debuginfod_candidate(const char *build_id, int k, char *path, size_t len);

/* Changes each time a fetch brings a file: a symbolizer built before it
 * must be built again for libdw to look for the file. */
unsigned cprof__debuginfod_generation(void);

/* What would give the module with this build ID its debug information, as
 * the end of a sentence for a profile's comment: its -dbgsym package or
 * DEBUGINFOD_URLS; or how the fetch stands. */
void cprof__debuginfod_advice(const char *build_id, char *buf, size_t len);

/* Starts the fetching thread when fetches wait and none runs. With no lock
 * of the symbolizer's held: it waits for the new thread to settle. */
void cprof__debuginfod_kick(void);

/* Ends the fetching thread, cancelling a fetch in flight (within about a
 * second): when cprof stops, when the program's last thread ends. Fetches
 * left waiting start again at the next kick. */
void cprof__debuginfod_stop(void);

void cprof__debuginfod_atfork_prepare(void);
void cprof__debuginfod_atfork_parent(void);
void cprof__debuginfod_atfork_child(void);

#endif
