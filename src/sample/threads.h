/* Stacks of every thread of the process, for /debug/pprof/goroutine.
 *
 * Each thread is sent a real-time signal and unwinds itself into a slot
 * prepared for it; the caller waits a bounded time and reports the threads
 * that did not answer instead of waiting for them. */
#ifndef CPROF_SAMPLE_THREADS_H
#define CPROF_SAMPLE_THREADS_H

#include <stdint.h>
#include <sys/types.h>

#include "unwind/unwind.h"

typedef enum cprof__thread_status {
  CPROF_THREAD_OK = 0,    /* the stack is in pcs */
  CPROF_THREAD_TIMEOUT,   /* signalled, did not answer in time */
  CPROF_THREAD_BLOCKED,   /* blocks cprof's signal, so was not asked */
} cprof__thread_status_t;

typedef struct cprof__thread_stack {
  pid_t tid;
  char name[16];  /* /proc/self/task/TID/comm */
  char state;     /* R, S, D, ... from /proc/self/task/TID/stat */
  cprof__thread_status_t status;
  int depth;
  uintptr_t pcs[CPROF_MAX_DEPTH];
} cprof__thread_stack_t;

typedef struct cprof__thread_dump {
  cprof__thread_stack_t *v;
  int n;
} cprof__thread_dump_t;

/* Installs the signal handler on a free real-time signal. Idempotent.
 * Returns 0 or a negative errno (no free signal: -EBUSY). */
int cprof__threads_init(void);

/* Captures every thread's stack, waiting at most timeout_ms for answers.
 * Serialised internally. Returns 0 or a negative errno; free with
 * cprof__threads_dump_free(). */
int cprof__threads_capture(cprof__unwinder_t how, int timeout_ms, cprof__thread_dump_t *out);
void cprof__threads_dump_free(cprof__thread_dump_t *d);

/* The ids of the process's threads now, from /proc/self/task: returns the
 * count and a malloc'd array in *out, or a negative errno (and no array:
 * a partial list would look like threads that exited). */
int cprof__threads_list(pid_t **out);
/* A thread's name (/proc/self/task/TID/comm, at most 15 bytes). Returns 0,
 * or -1 when the thread has exited. */
int cprof__thread_name(pid_t tid, char name[16]);

/* The number of threads in the process now (for the index page). */
int cprof__threads_count(void);

/* The signal number in use, or 0 before init. */
int cprof__threads_signal(void);

void cprof__threads_atfork_child(void);

#endif
