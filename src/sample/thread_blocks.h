/* A process-wide list of per-thread blocks by thread id, shared by the two
 * samplers that keep one (labels.c and trace.c): each thread that needs a
 * block gets it on first use, put on the list with its id; a
 * thread-specific key's destructor takes it off and frees it at thread
 * exit; readers walk the list under its lock; and a forked child keeps
 * only the block of the thread that forked.
 *
 * A block begins with its node (its first member), so a node is its
 * block. Each user keeps its thread's block in a TLS pointer of its own
 * (initial-exec, for its signal handlers), which set_mine sets. The lock
 * is cprof's: taken with the guard raised, so that the lock wrappers
 * (interpose/locks.c) pass it through unprofiled. */
#ifndef CPROF_SAMPLE_THREAD_BLOCKS_H
#define CPROF_SAMPLE_THREAD_BLOCKS_H

#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct cprof__thread_node {
  pid_t tid; /* the owner's */
  struct cprof__thread_node *next, **prev;
} cprof__thread_node_t;

typedef struct cprof__thread_blocks {
  size_t size;                 /* a block's, its node first */
  void *(*alloc)(size_t size); /* cprof's own memory, not the program's */
  void (*free)(void *block);
  void (*set_mine)(void *block); /* the calling thread's TLS pointer to its block */
  void (*make_key)(void);        /* calls cprof__thread_blocks_make_key, for pthread_once */
  pthread_once_t key_once;
  pthread_key_t key;
  int have_key;
  pthread_mutex_t lock;
  cprof__thread_node_t *all; /* under lock */
} cprof__thread_blocks_t;

#define CPROF__THREAD_BLOCKS_INIT(size, alloc, free, set_mine, make_key)                           \
  {                                                                                                \
    (size), (alloc), (free), (set_mine), (make_key), PTHREAD_ONCE_INIT, 0, 0,                      \
        PTHREAD_MUTEX_INITIALIZER, NULL                                                            \
  }

/* Makes the key whose destructor `exit` (at thread exit, with the block)
 * ends with cprof__thread_blocks_remove. */
void cprof__thread_blocks_make_key(cprof__thread_blocks_t *tb, void (*exit)(void *block));

/* A block for the calling thread, zeroed, on the list with its id, and
 * given to set_mine; NULL without memory. */
void *cprof__thread_blocks_new(cprof__thread_blocks_t *tb);

/* At thread exit: the thread's block unhooked (set_mine(NULL)), taken off
 * the list, with also(block, arg) called under the lock when given, and
 * freed. */
void cprof__thread_blocks_remove(cprof__thread_blocks_t *tb, void *block,
                                 void (*also)(void *block, void *arg), void *arg);

void cprof__thread_blocks_lock(cprof__thread_blocks_t *tb);
void cprof__thread_blocks_unlock(cprof__thread_blocks_t *tb);

/* In a forked child, under the lock (still held from the prepare handler):
 * the list keeps only mine (NULL: none), with the child's thread id, so
 * that a thread of the child whose id was a parent thread's is not taken
 * for it. Returns the other blocks, linked through next, for
 * cprof__thread_blocks_free_list once the lock is released. */
cprof__thread_node_t *cprof__thread_blocks_fork_child(cprof__thread_blocks_t *tb, void *mine);
void cprof__thread_blocks_free_list(cprof__thread_blocks_t *tb, cprof__thread_node_t *gone);

#endif
