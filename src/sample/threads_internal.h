/* What the all-thread capture's files share (threads.c's comment tells
 * the protocol): the slots a request's handler writes its stack into
 * (threads_ask.c asks, threads_sigsafe.c answers), where a thread is
 * (threads_proc.c reads it, threads_outside.c decides from it), and the
 * caches captures keep (threads_cache.c). Not for other parts of cprof:
 * they use sample/threads.h. */
#ifndef CPROF_SAMPLE_THREADS_INTERNAL_H
#define CPROF_SAMPLE_THREADS_INTERNAL_H

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample/threads.h"
#include "unwind/maps.h"

/* Hidden, as every definition of cprof's: the handlers reach these
 * directly, not through the GOT. */
#pragma GCC visibility push(hidden)

enum {
  CPROF__SLOT_PENDING = 0,
  CPROF__SLOT_WRITING = 1,
  CPROF__SLOT_DONE = 2,
  CPROF__SLOT_ABANDONED = 3
};
#define CPROF__SLOT_STATE(gen, phase) (((uint64_t)(gen) << 2) | (phase))

typedef struct cprof__threads_slot {
  uint64_t state; /* CPROF__SLOT_STATE(gen, phase), accessed atomically */
  int timer;      /* the kernel's id of the timer that asks, -1: none; atomic */
  int busy;       /* a deferring cache's slot in use for an ask; the collector's */
  pid_t tid;
  int depth;
  int max;        /* frames pcs holds, fixed when the slots were made */
  uintptr_t *pcs; /* in the same block, after the slots */
} cprof__threads_slot_t;

/* Where a thread is blocked, from /proc/self/task/TID/syscall (proc(5)):
 * "NR a1 a2 a3 a4 a5 a6 sp pc" while in a system call, "-1 sp pc" while
 * stopped in the kernel outside one, "running" otherwise. */
typedef struct cprof__in_kernel {
  long nr; /* -1: not in a system call */
  uintptr_t sp, pc;
} cprof__in_kernel_t;

enum {
  CPROF__WHERE_RUNNING,
  CPROF__WHERE_IN_KERNEL,
  CPROF__WHERE_NO_USER,
  CPROF__WHERE_UNREADABLE,
  CPROF__WHERE_EXITED
};

/* How a thread's stack is got, or why it is not. */
enum {
  CPROF__HOW_ASK,
  CPROF__HOW_OUTSIDE,
  CPROF__HOW_SELF,
  CPROF__HOW_BLOCKED,
  CPROF__HOW_UNKNOWN,
  CPROF__HOW_NO_SIGNAL,
  CPROF__HOW_UNSENT,
  CPROF__HOW_KERNEL,
  CPROF__HOW_GONE,
  CPROF__HOW_LATE,
  CPROF__HOW_RELOOK,
  CPROF__HOW_DEFERRED,
  CPROF__HOW_NO_STACK
};

/* A thread as the last capture with a cache left it (threads.h). */
typedef struct cprof__threads_cached {
  pid_t tid;
  cprof__in_kernel_t place; /* where it slept with this stack; nr -1: not kept */
  int depth;
  uintptr_t *pcs;
  char name[16];
  int fd; /* its /proc/self/task/TID/syscall, kept open (-1: none) */
  /* CLOCK_MONOTONIC ns when it was last seen neither blocking nor holding
   * our signal pending (0: never); believed for a second. */
  int64_t mask_ok;
  int ask;          /* a deferring cache's ask still out: its slot in the table, or -1 */
  int64_t asked_ns; /* CLOCK_MONOTONIC when that ask was made */
  /* A deferring cache's: its CPU time at the last capture (-1: unknown),
   * and the last place it was seen asleep with an exact stack. */
  int64_t cpu_ns;
  cprof__in_kernel_t wake_place;
  int64_t wake_ns; /* CLOCK_MONOTONIC when seen asleep there */
  int wake_depth;
  uintptr_t *wake_pcs;
} cprof__threads_cached_t;

struct cprof__threads_cache {
  cprof__threads_cached_t *v; /* by tid */
  int n;
  /* The process's maps, read at most once a second: the signalled
   * threads' walks read them (stack bounds, modules), and reading them is
   * most of a tick's cost in a program of many mappings. Read again when
   * a thread is new (its stack is a new mapping) or a module came or went. */
  cprof__maps_t *maps; /* NULL: none yet */
  DIR *task;           /* /proc/self/task, kept open: read from its start each time */
  uint64_t births;     /* cprof__threads_born's count when it was last read */
  int64_t listed_ns;   /* CLOCK_MONOTONIC when it was last read */
  int64_t answers_ns;  /* how long the running threads took to answer, last time */
  int64_t maps_ns;     /* CLOCK_MONOTONIC when read */
  int depth;           /* frames each entry holds */
  uint32_t modules;    /* the module generation the stacks are of */
  uintptr_t *frames;   /* the entries' stacks, one block */
  /* Deferring (cprof__threads_cache_defer): its slot table, the asks out,
   * and whether it holds the capture signal's use (signals.c) for them. */
  int defer;
  int table; /* 0: none yet */
  int out;
  int holding;
};

/* Read by handlers: published with release stores, read with acquire loads.
 * Table 0 (slots, nslots) is the captures' own, a slot per thread listed;
 * the others belong to caches that defer (threads.h), whose asks outlive
 * a capture: a slot per ask. A request's token says which (see
 * CPROF__TOKEN_TABLE). Tables are only ever replaced by larger ones, never
 * freed. */
extern cprof__threads_slot_t *cprof__threads_slots;
extern int cprof__threads_nslots;
#define CPROF__THREADS_TABLES 16
#define CPROF__TOKEN_TABLE(low) ((low) >> 24)
#define CPROF__TOKEN_INDEX(low) ((low)&0xffffff)
extern cprof__threads_slot_t *cprof__threads_table_v[CPROF__THREADS_TABLES]; /* [0] unused: slots */
extern int cprof__threads_table_n[CPROF__THREADS_TABLES];
extern int cprof__threads_table_taken[CPROF__THREADS_TABLES]; /* under the capture lock */
extern const cprof__maps_t *cprof__threads_stacks;
/* Handlers of requests running now: whoever unpublishes maps that a
 * handler may be reading (cprof__threads_publish_stacks) waits for it. */
extern int cprof__threads_handlers_in;
/* The maps a deferring cache's asks still out are unwound with between
 * captures (NULL: none); the capture lock's. */
extern const cprof__maps_t *cprof__threads_deferred_stacks;
extern cprof__unwinder_t cprof__threads_unwinder;

extern int cprof__threads_signo;
extern pthread_mutex_t cprof__threads_capture_lock;
/* The secret our requests carry in the high half of si_value (see the top of threads.c),
 * drawn before the first capture sends anything; 0 until then. */
extern uint32_t cprof__threads_cookie;

/* ---- answering (threads_sigsafe.c) ---- */

void cprof__threads_handler_sigsafe(int sig, siginfo_t *info, void *uctx);

/* ---- asking (threads_ask.c) ---- */

void cprof__threads_publish_stacks(const cprof__maps_t *m);
uint32_t cprof__threads_draw_cookie(void);
int cprof__threads_send_request(cprof__threads_slot_t *slot, uint32_t low, pid_t tid,
                                const char **call);
void cprof__threads_drop_timer(cprof__threads_slot_t *slot);
cprof__threads_slot_t *cprof__threads_new_slots(int cap, int depth);
int cprof__threads_ensure_slots(int n, int depth);
int64_t cprof__threads_await_answers(const pid_t *tids, int *fds, int n, unsigned char *mode,
                                     int64_t deadline_ms, int64_t hint_ns);

/* ---- /proc/self/task (threads_proc.c) ---- */

int cprof__threads_list_dir(DIR *d, pid_t **out);
int cprof__thread_state(pid_t tid, char *state);
int cprof__thread_info(pid_t tid, char name[16], char *state);
int cprof__threads_where_is(pid_t tid, cprof__in_kernel_t *k, cprof__thread_stack_t *t, int *fd);
int64_t cprof__thread_cpu(pid_t tid);

/* ---- how each stack is got (threads_outside.c) ---- */

struct cprof__symbolizer; /* symbol/symbolize.h: not for the handler's file */

int cprof__threads_classify(pid_t tid, int can_signal, cprof__thread_stack_t *t, int max,
                            struct cprof__symbolizer **sym, const cprof__threads_cached_t *prev,
                            cprof__in_kernel_t *place, int *fd, int64_t *mask_ok);
void cprof__threads_unwind_self(cprof__unwinder_t how, const cprof__maps_t *maps,
                                cprof__thread_stack_t *t, int max);

/* ---- the dump (threads_dump.c) ---- */

cprof__thread_stack_t *cprof__threads_new_dump(int n, int depth, int answers);
void cprof__threads_dump_entry(int mode, const cprof__threads_slot_t *slot,
                               const cprof__thread_stack_t *got, cprof__thread_stack_t *t);
void cprof__threads_dump_labels(cprof__thread_dump_t *d);
/* The index of tid among n entries of `size` bytes from v, each beginning
 * with its tid and sorted by it (the dump's, the cache's); or -1. */
int cprof__threads_find_tid(const void *v, int n, size_t size, pid_t tid);

/* ---- caches (threads_cache.c) ---- */

cprof__threads_cached_t *cprof__threads_cache_find(const cprof__threads_cache_t *c, pid_t tid);
void cprof__threads_cache_keep(cprof__threads_cache_t *c, const cprof__thread_dump_t *d,
                               const cprof__in_kernel_t *places, int *fds, const int64_t *oks,
                               const int *asks, const int64_t *askeds);
int cprof__threads_cache_knows_all(const cprof__threads_cache_t *c, const pid_t *tids, int n);
void cprof__threads_give_up(cprof__threads_slot_t *sl);
void cprof__threads_give_up_all(cprof__threads_cache_t *c);
int cprof__threads_defer_table(cprof__threads_cache_t *c, int want, int depth);
void cprof__threads_harvest(cprof__threads_cache_t *c, cprof__threads_cached_t *prev,
                            cprof__thread_stack_t *t, int *ask, int64_t *asked, int64_t now);
int cprof__threads_defer_ask(cprof__threads_cache_t *c, pid_t tid, uint32_t gen, int *ask,
                             int64_t *asked, const char **call);

#pragma GCC visibility pop

#endif
