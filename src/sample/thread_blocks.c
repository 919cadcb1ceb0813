/* Per-thread blocks by thread id, for labels.c and trace.c
 * (thread_blocks.h). */
#include "sample/thread_blocks.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/guard.h"

/* Puts n first on *head, with the calling thread's id. */
static void push(cprof__thread_node_t **head, cprof__thread_node_t *n) {
  n->tid = (pid_t)syscall(SYS_gettid);
  n->next = *head;
  n->prev = head;
  if (*head)
    (*head)->prev = &n->next;
  *head = n;
}

static void unlink_node(cprof__thread_node_t *n) {
  *n->prev = n->next;
  if (n->next)
    n->next->prev = n->prev;
}

void cprof__thread_blocks_lock(cprof__thread_blocks_t *tb) {
  cprof__guard_enter();
  pthread_mutex_lock(&tb->lock);
}

void cprof__thread_blocks_unlock(cprof__thread_blocks_t *tb) {
  pthread_mutex_unlock(&tb->lock);
  cprof__guard_leave();
}

void cprof__thread_blocks_make_key(cprof__thread_blocks_t *tb, void (*exit)(void *block)) {
  tb->have_key = pthread_key_create(&tb->key, exit) == 0;
}

void *cprof__thread_blocks_new(cprof__thread_blocks_t *tb) {
  pthread_once(&tb->key_once, tb->make_key);
  cprof__thread_node_t *b = tb->alloc(tb->size);
  if (!b)
    return NULL;
  memset(b, 0, tb->size);
  /* glibc allocates the second level of its key table on a key's first
   * use by a thread: cprof's too. */
  cprof__guard_enter();
  int err = !tb->have_key || pthread_setspecific(tb->key, b) != 0;
  cprof__guard_leave();
  if (err) {
    tb->free(b);
    return NULL;
  }
  cprof__thread_blocks_lock(tb);
  push(&tb->all, b);
  cprof__thread_blocks_unlock(tb);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  tb->set_mine(b);
  return b;
}

void cprof__thread_blocks_remove(cprof__thread_blocks_t *tb, void *block,
                                 void (*also)(void *block, void *arg), void *arg) {
  tb->set_mine(NULL);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  cprof__thread_blocks_lock(tb);
  unlink_node(block);
  if (also)
    also(block, arg);
  cprof__thread_blocks_unlock(tb);
  tb->free(block);
}

cprof__thread_node_t *cprof__thread_blocks_fork_child(cprof__thread_blocks_t *tb, void *mine) {
  cprof__thread_node_t *node = mine;
  if (node)
    unlink_node(node);
  cprof__thread_node_t *gone = tb->all;
  tb->all = NULL;
  if (node)
    push(&tb->all, node);
  return gone;
}

void cprof__thread_blocks_free_list(cprof__thread_blocks_t *tb, cprof__thread_node_t *gone) {
  while (gone) {
    cprof__thread_node_t *next = gone->next;
    tb->free(gone);
    gone = next;
  }
}
