/* Thread labels: the C counterpart of Go's goroutine labels.
 *
 * Where they live. Each thread that has a label gets a small block of its
 * own, found through one pointer in initial-exec TLS: reading such a
 * variable is a plain load from the thread pointer, safe in a signal
 * handler (the general-dynamic model may call __tls_get_addr, which can
 * allocate), and the block keeps our share of the static TLS area to eight
 * bytes. The block is cprof's memory, not the program's: it is allocated
 * and freed with the heap sampler's guard raised, so the heap profile never
 * shows it. It is freed at thread exit by a thread-specific key's
 * destructor, which first unhooks it, so that a late SIGPROF on the thread
 * sees no block rather than a freed one.
 *
 * Who reads them.
 * - The thread's own SIGPROF handler (cpu.c), which may interrupt an
 *   update. `seq` is odd while the owner changes the set; the handler finds
 *   it odd and records no labels rather than a torn copy.
 * - The threads profile's capture (threads.c), for every thread at once,
 *   including threads asleep in the kernel that are unwound from outside
 *   and run no handler of ours. So every block is also on a process-wide
 *   list with its thread's id (sample/thread_blocks.h, shared with trace.c's
 *   blocks), inserted when the thread first gets a block
 *   and removed by the destructor, under a mutex (never taken in a signal
 *   handler). The list's lock keeps a block alive while it is read, but the
 *   owner changes its labels without that lock: the reader treats `seq` as a
 *   sequence lock (read it, copy, read it again; an odd or changed value
 *   means the copy may be torn and is tried again, then given up). A label
 *   set that changes while the stacks are taken may thus be a few
 *   microseconds newer than the stack it is shown with, which Go's
 *   stop-the-world goroutine profile does not have to say.
 *
 * cprof_do, as Go's pprof.Do: the thread's set is saved on the caller's
 * stack, the pairs are applied (a key already set takes the new value), fn
 * runs, and the saved set is put back exactly, whatever fn did to the
 * labels meanwhile (Do restores the context's labels the same way). So
 * nested calls stack. Everything is checked before anything changes: a bad
 * argument or a set that would not fit runs nothing. A fn that leaves by
 * longjmp skips the restore (C has no defer); a fn that ends the thread
 * frees the block with it.
 *
 * Inheritance, as goroutines inherit their creator's labels: the
 * pthread_create wrapper (interpose/thread_start.c) copies the creator's set
 * into what it hands the new thread, and the new thread installs it before
 * its start routine runs. cprof's own threads inherit nothing.
 *
 * fork: the child's only thread is the one that forked. Its block is kept,
 * with its new thread id; the other threads' blocks are dropped from the
 * list and freed, so that a thread of the child whose id was a thread's of
 * the parent does not show the parent thread's labels. The list's lock is
 * taken around fork by handlers registered when the library is loaded, so
 * that they run after the program's own prepare handlers. */
#include "sample/labels.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/guard.h"
#include "sample/thread_blocks.h"

typedef struct block {
  cprof__thread_node_t node; /* first: on the list `blocks`, under its lock */
  unsigned seq;              /* odd while the owner changes l; atomic */
  cprof__labels_t l;
} block_t;

static __thread __attribute__((tls_model("initial-exec"))) block_t *mine;

static void set_mine(void *b) { mine = b; }

/* Blocks are allocated and freed with the guard raised: cprof's memory. */
static void *alloc_block(size_t n) {
  cprof__guard_enter();
  void *b = calloc(1, n);
  cprof__guard_leave();
  return b;
}

static void free_block(void *b) {
  cprof__guard_enter();
  free(b);
  cprof__guard_leave();
}

static void make_key(void);
static cprof__thread_blocks_t blocks =
    CPROF__THREAD_BLOCKS_INIT(sizeof(block_t), alloc_block, free_block, set_mine, make_key);

/* At thread exit. */
static void release(void *p) { cprof__thread_blocks_remove(&blocks, p, NULL, NULL); }

static void make_key(void) { cprof__thread_blocks_make_key(&blocks, release); }

static void fork_prepare(void) { cprof__thread_blocks_lock(&blocks); }
static void fork_parent(void) { cprof__thread_blocks_unlock(&blocks); }

static void fork_child(void) {
  cprof__thread_node_t *gone = cprof__thread_blocks_fork_child(&blocks, mine);
  cprof__thread_blocks_unlock(&blocks);
  cprof__thread_blocks_free_list(&blocks, gone);
}

__attribute__((constructor(103))) static void register_fork_handlers(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* The calling thread's block, made on first use; NULL without memory. */
static block_t *my_block(void) { return mine ? mine : cprof__thread_blocks_new(&blocks); }

/* A sequence lock's writer side: the odd value is visible before any
 * change to l (to the handler on this thread and to readers on others), the
 * even one after all of them. */
static void begin(block_t *b) {
  __atomic_store_n(&b->seq, b->seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void end(block_t *b) { __atomic_store_n(&b->seq, b->seq + 1, __ATOMIC_RELEASE); }

static int find(const cprof__labels_t *l, const char *key) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->key[i], key) == 0)
      return i;
  return -1;
}

/* The rules for one pair, of cprof_do and cprof_label_set alike. */
static int valid(const char *key, const char *value) {
  return key && value && *key && *value && strlen(key) <= CPROF_MAX_LABEL_KEY &&
         strlen(value) <= CPROF_MAX_LABEL_VALUE;
}

/* dst = src, copying only the pairs in use. */
static void copy_set(cprof__labels_t *dst, const cprof__labels_t *src) {
  dst->n = src->n;
  for (int i = 0; i < src->n; i++) {
    strcpy(dst->key[i], src->key[i]);
    strcpy(dst->value[i], src->value[i]);
  }
}

/* Sets key to value in l; -ENOSPC when it is a new key and l is full. */
static int put(cprof__labels_t *l, const char *key, const char *value) {
  int i = find(l, key);
  if (i < 0) {
    if (l->n == CPROF_MAX_LABELS)
      return -ENOSPC;
    i = l->n++;
    strcpy(l->key[i], key);
  }
  strcpy(l->value[i], value);
  return 0;
}

/* *next = base with the pairs of kv put in: 0; -EINVAL for a bad pair (an
 * odd count ends in a NULL value); -ENOSPC when they would not fit. */
static int with_pairs(const cprof__labels_t *base, const char *const *kv, cprof__labels_t *next) {
  for (size_t i = 0; kv[i]; i += 2) {
    if (!valid(kv[i], kv[i + 1]))
      return -EINVAL;
  }
  copy_set(next, base);
  for (size_t i = 0; kv[i]; i += 2) {
    if (put(next, kv[i], kv[i + 1]) != 0)
      return -ENOSPC;
  }
  return 0;
}

/* The calling thread's set now, into *out. */
static void current(cprof__labels_t *out) {
  out->n = 0;
  if (mine)
    copy_set(out, &mine->l);
}

int cprof__labels_install(const cprof__labels_t *l) {
  if (l->n == 0 && !mine)
    return 0;
  block_t *b = my_block();
  if (!b)
    return -ENOMEM;
  begin(b);
  copy_set(&b->l, l);
  end(b);
  return 0;
}

/* cprof_do is the label model; the two calls of 0.1.0 below are its
 * steps without the scope: the pairs put in (with_pairs) and the result
 * installed, as cprof_do does before fn runs, and not restored. */
int cprof_do(const char *const *kv, void (*fn)(void *), void *arg) {
  if (!kv || !fn)
    return -EINVAL;
  cprof__labels_t saved, next;
  current(&saved);
  int err = with_pairs(&saved, kv, &next);
  if (err == 0)
    err = cprof__labels_install(&next);
  if (err != 0)
    return err;
  fn(arg);
  /* fn may have ended up giving this thread its first block (a label set
   * inside it), so the saved set goes back into whatever block the thread
   * has now. */
  cprof__labels_install(&saved);
  return 0;
}

int cprof_label_set(const char *key, const char *value) {
  if (!valid(key, value)) /* a NULL key would end kv before its pair */
    return -EINVAL;
  const char *const kv[] = {key, value, NULL};
  cprof__labels_t now, next;
  current(&now);
  int err = with_pairs(&now, kv, &next);
  return err ? err : cprof__labels_install(&next);
}

int cprof_label_clear(const char *key) {
  cprof__labels_t next;
  current(&next);
  int i = key ? find(&next, key) : -1;
  if (i < 0)
    return -ENOENT;
  next.n--;
  if (i != next.n) { /* the last pair takes the cleared one's place */
    strcpy(next.key[i], next.key[next.n]);
    strcpy(next.value[i], next.value[next.n]);
  }
  return cprof__labels_install(&next);
}

void cprof__labels_copy_sigsafe(cprof__labels_t *out) {
  block_t *b = mine;
  out->n = 0;
  if (!b || (__atomic_load_n(&b->seq, __ATOMIC_RELAXED) & 1))
    return;
  out->n = b->l.n;
  for (int i = 0; i < b->l.n; i++) {
    memcpy(out->key[i], b->l.key[i], sizeof out->key[i]);
    memcpy(out->value[i], b->l.value[i], sizeof out->value[i]);
  }
}

/* A sequence lock's reader side, for another thread's block: 0 and a
 * consistent copy, or -1 when the owner kept changing it. */
static int copy_other(const block_t *b, cprof__labels_t *out) {
  for (int tries = 0; tries < 4; tries++) {
    unsigned s1 = __atomic_load_n(&b->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1)
      continue;
    int n = b->l.n;
    if (n < 0 || n > CPROF_MAX_LABELS)
      continue;
    memcpy(out->key, b->l.key, (size_t)n * sizeof out->key[0]);
    memcpy(out->value, b->l.value, (size_t)n * sizeof out->value[0]);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&b->seq, __ATOMIC_RELAXED) != s1)
      continue;
    out->n = n;
    for (int i = 0; i < n; i++) {
      out->key[i][CPROF_MAX_LABEL_KEY] = '\0';
      out->value[i][CPROF_MAX_LABEL_VALUE] = '\0';
    }
    return 0;
  }
  return -1;
}

void cprof__labels_each(void (*fn)(pid_t tid, const cprof__labels_t *l, void *ctx), void *ctx) {
  cprof__labels_t copy;
  cprof__thread_blocks_lock(&blocks);
  for (const cprof__thread_node_t *n = blocks.all; n; n = n->next)
    if (copy_other((const block_t *)n, &copy) == 0 && copy.n > 0)
      fn(n->tid, &copy, ctx);
  cprof__thread_blocks_unlock(&blocks);
}
