/* A process-wide list of per-thread blocks by thread id, shared by the two
 * samplers that keep one (labels.c and trace.c): each thread that needs a
 * block puts it on the list with its id, the key destructor takes it off
 * at thread exit, readers walk the list under the owner's lock, and a
 * forked child keeps only the block of the thread that forked.
 *
 * A block begins with its node (its first member), so a node is its
 * block. Every call is under the list owner's lock (the fork child's, in
 * the child, with the lock still held from the prepare handler). */
#ifndef CPROF_SAMPLE_THREAD_LIST_H
#define CPROF_SAMPLE_THREAD_LIST_H

#include <stddef.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

typedef struct cprof__thread_node {
  pid_t tid; /* the owner's */
  struct cprof__thread_node *next, **prev;
} cprof__thread_node_t;

/* Puts n first on *head, with the calling thread's id. */
static inline void cprof__thread_list_push(cprof__thread_node_t **head, cprof__thread_node_t *n) {
  n->tid = (pid_t)syscall(SYS_gettid);
  n->next = *head;
  n->prev = head;
  if (*head)
    (*head)->prev = &n->next;
  *head = n;
}

static inline void cprof__thread_list_unlink(cprof__thread_node_t *n) {
  *n->prev = n->next;
  if (n->next)
    n->next->prev = n->prev;
}

/* In a forked child: *head keeps only mine (NULL: none), with the child's
 * thread id, so that a thread of the child whose id was a parent thread's
 * is not taken for it. Returns the other nodes, linked through next, for
 * the caller to free once it has released its lock. */
static inline cprof__thread_node_t *cprof__thread_list_fork_child(cprof__thread_node_t **head,
                                                                  cprof__thread_node_t *mine) {
  if (mine)
    cprof__thread_list_unlink(mine);
  cprof__thread_node_t *gone = *head;
  *head = NULL;
  if (mine)
    cprof__thread_list_push(head, mine);
  return gone;
}

#endif
