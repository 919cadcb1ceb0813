/* Thread labels. Each thread that sets one gets a small block of its own,
 * found through one pointer in initial-exec TLS: reading such a variable
 * is a plain load from the thread pointer, safe in a signal handler (the
 * general-dynamic model may call __tls_get_addr, which can allocate), and
 * the block keeps our share of the static TLS area to eight bytes.
 *
 * The only reader besides the owner thread is that thread's own SIGPROF
 * handler, which may interrupt an update: `busy` is set around every
 * change, with signal fences so the compiler keeps the order, and a handler
 * that finds it set records no labels rather than a torn copy. */
#include "sample/labels.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct block {
  volatile int busy;
  cprof__labels_t l;
} block_t;

static __thread __attribute__((tls_model("initial-exec"))) block_t *mine;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* At thread exit: unhook the block before freeing it, so that a late
 * SIGPROF on this thread sees no block rather than a freed one. */
static void release(void *p) {
  mine = NULL;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  free(p);
}

static void make_key(void) { pthread_key_create(&exit_key, release); }

static int find(const block_t *b, const char *key) {
  for (int i = 0; i < b->l.n; i++)
    if (strcmp(b->l.key[i], key) == 0)
      return i;
  return -1;
}

static void begin(block_t *b) {
  b->busy = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void end(block_t *b) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  b->busy = 0;
}

int cprof_label_set(const char *key, const char *value) {
  if (!key || !value || !*key || !*value || strlen(key) > CPROF_MAX_LABEL_KEY ||
      strlen(value) > CPROF_MAX_LABEL_VALUE)
    return -EINVAL;
  if (!mine) {
    pthread_once(&key_once, make_key);
    block_t *b = calloc(1, sizeof *b);
    if (!b)
      return -ENOMEM;
    pthread_setspecific(exit_key, b);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    mine = b;
  }
  block_t *b = mine;
  int i = find(b, key);
  if (i < 0 && b->l.n == CPROF_MAX_LABELS)
    return -ENOSPC;
  begin(b);
  if (i < 0) {
    i = b->l.n++;
    strcpy(b->l.key[i], key);
  }
  strcpy(b->l.value[i], value);
  end(b);
  return 0;
}

int cprof_label_clear(const char *key) {
  block_t *b = mine;
  int i = b && key ? find(b, key) : -1;
  if (i < 0)
    return -ENOENT;
  begin(b);
  b->l.n--;
  if (i != b->l.n) {
    strcpy(b->l.key[i], b->l.key[b->l.n]);
    strcpy(b->l.value[i], b->l.value[b->l.n]);
  }
  end(b);
  return 0;
}

void cprof__labels_copy_sigsafe(cprof__labels_t *out) {
  block_t *b = mine;
  out->n = 0;
  if (!b || b->busy)
    return;
  out->n = b->l.n;
  for (int i = 0; i < b->l.n; i++) {
    memcpy(out->key[i], b->l.key[i], sizeof out->key[i]);
    memcpy(out->value[i], b->l.value[i], sizeof out->value[i]);
  }
}
