/* CPROF_PUSH_URL: the library pushes its own CPU and heap profiles to
 * Grafana Pyroscope, for short-lived jobs and hosts nobody can scrape
 * (push.c says how). A consumer of the registry, like CPROF_OUTPUT. */
#ifndef CPROF_PUSH_PUSH_H
#define CPROF_PUSH_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/config.h"

/* Starts pushing when cfg->push_url is set; otherwise nothing. Problems
 * are one stderr line each; the program runs on. */
void cprof__push_start(const cprof__config_t *cfg);

/* The last window's profiles pushed, with what is queued, within
 * CPROF_PUSH_FLUSH_MS; then the push ends. For cprof_stop and exit (an
 * atexit handler); does nothing when not pushing, or in a forked child. */
void cprof__push_finish(void);
#define CPROF_PUSH_FLUSH_MS 2000

/* Ends the push's thread for a while, keeping its queue (start.c: a
 * credential change, the program's last thread gone), and starts it
 * again. */
void cprof__push_park(void);
void cprof__push_unpark(void);

/* Appends what the push has done, in Prometheus' text format, to out:
 * cprof_push_profiles_total{result="pushed"|"dropped"|"refused"},
 * cprof_push_retries_total and cprof_push_queued. Nothing when not
 * pushing. For /metrics. */
void cprof__push_exposition(cprof__buf_t *out);

/* Fork handlers (start.c's): the lock is held across fork; the child does
 * not push (its thread stayed in the parent) until it calls cprof_start. */
void cprof__push_atfork_prepare(void);
void cprof__push_atfork_parent(void);
void cprof__push_atfork_child(void);

#endif
