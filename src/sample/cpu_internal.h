/* What the CPU sampler's three files share: the buffer between the SIGPROF
 * handler and the profile's owner (cpu.c, read its comment), the handler
 * itself (cpu_sigsafe.c), and the per-thread timers and their slots
 * (cpu_timers.c). Not for other parts of cprof: they use sample/cpu.h. */
#ifndef CPROF_SAMPLE_CPU_INTERNAL_H
#define CPROF_SAMPLE_CPU_INTERNAL_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sample/cpu.h"
#include "unwind/maps.h"

/* Hidden, as every definition of cprof's: the handlers reach these
 * directly, not through the GOT. */
#pragma GCC visibility push(hidden)

enum { CPROF__CPU_FREE = 0, CPROF__CPU_WRITING = 1, CPROF__CPU_FULL = 2 };
/* Records: drained every 50 ms, room for 400 busy threads at 100 Hz. */
#define CPROF__CPU_RING 2048

/* Each record's stack is an array of `max` frames, the depth set when the
 * profile started, in the same block after the records. */
typedef struct cprof__cpu_record {
  uint32_t state;
  int max;
  uint64_t ticket; /* the handler's draw from ring_next: when, among all samples */
  cprof__cpu_sample_t s;
} cprof__cpu_record_t;

/* Shared with the handler (defined in cpu.c). */
extern cprof__cpu_record_t *cprof__cpu_ring;
extern uint64_t cprof__cpu_ring_next;
extern uint64_t cprof__cpu_lost;
extern uint64_t cprof__cpu_lost_total; /* lost, never reset: the metrics sampler's */
extern unsigned cprof__cpu_epoch;
extern int cprof__cpu_inside[2]; /* handlers in flight, by the epoch's parity they began in */
extern cprof__unwinder_t cprof__cpu_unwinder;
extern cprof__maps_t *cprof__cpu_stacks; /* the walkers' stack bounds, for threads that have none
                                            in TLS */
extern long cprof__cpu_period_ns; /* the owner's, under its lock; also read by the mask wrappers,
                                     while slots exist */

/* ---- the handler's side (cpu_sigsafe.c) ---- */

void cprof__cpu_handler_sigsafe(int sig, siginfo_t *info, void *uctx);

/* The si_value of tid's timer: the cookie the handler knows ours by. */
void *cprof__cpu_timer_value(pid_t tid);

int cprof__cpu_record_unsampled_sigsafe(pid_t tid, uintptr_t mark, int64_t ns, const void *ret,
                                        const char *name);

/* ---- the timers and their slots (cpu_timers.c) ---- */

enum { CPROF__CPU_SLOT_ARMED = 1, CPROF__CPU_SLOT_PAUSED = 2, CPROF__CPU_SLOT_FAILED = 3 };

typedef struct cprof__cpu_slot {
  pid_t tid;      /* atomic: 0 when free; published after the rest */
  uint32_t state; /* CPROF__CPU_SLOT_ARMED or _PAUSED; changed by its thread only, once published;
                     or _FAILED for good: no timer could be made */
  timer_t timer;  /* not for CPROF__CPU_SLOT_FAILED */
  long left_ns;   /* its thread's own: time left in the period when it paused */
  /* Atomic: the thread's CPU clock (ns) where its CPU time not yet counted
   * began, while no timer samples it; 0 while one does; and what the owner
   * counted for it and nobody has recorded yet (see "CPU time no timer
   * samples"). */
  int64_t unsampled_since, owed_ns;
  uint32_t why;  /* CPROF__CPU_SLOT_FAILED: CPROF_PC_UNSAMPLED_NO_TIMER's number; 0 otherwise */
  char name[16]; /* the owner's: the thread's name when it last counted for it */
  /* For "Expiries never delivered": the thread's CPU clock when its timer
   * was armed, the first expiry after that, the CPU it used before (a
   * thread born during the profile), and the periods its signals brought
   * (atomic: the handler's), all since the last arming or resume.
   * `due_off` when not counted so: a thread of cprof's, one that was
   * created blocking SIGPROF, or one that counted it already. */
  int64_t armed_at, first_ns, before_ns;
  uint64_t delivered;
  int due_off;
  pid_t end_tid; /* the stop's: the thread whose clock end_clock is */
  int64_t end_clock;
} cprof__cpu_slot_t;

#define CPROF__CPU_SLOTS_PER_CHUNK 256
#define CPROF__CPU_MAX_CHUNKS 1024 /* 262,144 threads */
extern cprof__cpu_slot_t *cprof__cpu_chunks[CPROF__CPU_MAX_CHUNKS];
extern int cprof__cpu_nchunks; /* atomic: chunks[0..nchunks) are published */

extern __thread pid_t cprof__cpu_my_tid __attribute__((tls_model("initial-exec")));
extern __thread cprof__cpu_slot_t *cprof__cpu_my_slot __attribute__((tls_model("initial-exec")));

static inline cprof__cpu_slot_t *cprof__cpu_slot_at(int i) {
  return &cprof__cpu_chunks[i / CPROF__CPU_SLOTS_PER_CHUNK][i % CPROF__CPU_SLOTS_PER_CHUNK];
}

/* The slot of tid, or NULL. Async-signal-safe: loads only. */
static inline cprof__cpu_slot_t *cprof__cpu_find_slot(pid_t tid) {
  int n = __atomic_load_n(&cprof__cpu_nchunks, __ATOMIC_ACQUIRE) * CPROF__CPU_SLOTS_PER_CHUNK;
  for (int i = 0; i < n; i++)
    if (__atomic_load_n(&cprof__cpu_slot_at(i)->tid, __ATOMIC_ACQUIRE) == tid)
      return cprof__cpu_slot_at(i);
  return NULL;
}

static inline void cprof__cpu_pause_briefly(void) {
  struct timespec ts = {0, 50 * 1000};
  nanosleep(&ts, NULL);
}

pid_t cprof__cpu_self_tid(void);

/* The owner's exclusive section, in which it arms and deletes other
 * threads' timers while no mask wrapper is inside ("threads that block
 * SIGPROF"). */
void cprof__cpu_excl_begin(void);
void cprof__cpu_excl_end(void);

int cprof__cpu_blocks_sigprof(pid_t tid);
int cprof__cpu_add_timer(pid_t tid, int blocked, int keep_failed, int own, int born);
void cprof__cpu_remove_timer(cprof__cpu_slot_t *s);
void cprof__cpu_count_unsampled(int final);

/* The calling thread's timer, at its end: stopped, with what came due and
 * never came and what it is owed recorded, under its `name`. */
void cprof__cpu_timer_end(const char *name);

/* At the stop, under lock: every timer deleted (its thread's clock noted
 * first), then, once the buffer is drained, what came due and was never
 * delivered, handed to sink without a stack. */
void cprof__cpu_timers_stop(void);
void cprof__cpu_timers_undelivered(cprof__cpu_sink_fn sink, void *arg);

void cprof__cpu_timers_atfork_child(void);

#pragma GCC visibility pop

#endif
