/* cprof_label_set / cprof_label_clear: what they accept, what the signal
 * handler's copy sees, and that each thread has its own. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "cprof.h"
#include "sample/labels.h"

static const char *value_of(const cprof__labels_t *l, const char *key) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->key[i], key) == 0)
      return l->value[i];
  return NULL;
}

static void *other_thread(void *arg) {
  cprof__labels_t l;
  cprof__labels_copy_sigsafe(&l);
  /* A thread starts with a copy of its creator's labels, as a goroutine
   * does (interpose/thread_start.c); changing it changes only ours. In a
   * sanitizer build the runtime's pthread_create may come before ours. */
#ifdef CPROF_NO_INTERPOSE
  int inherited = l.n > 0;
  if (!inherited)
    fprintf(stderr, "test_labels: no pthread_create wrapper here: inheritance not checked\n");
#else
  int inherited = 1;
#endif
  if (inherited) {
    CHECK_EQ_INT(l.n, CPROF_MAX_LABELS);
    CHECK_EQ_STR(value_of(&l, "tenant"), "globex");
    CHECK_EQ_INT(cprof_label_clear("tenant"), 0);
  }
  CHECK_EQ_INT(cprof_label_set("who", "other"), 0);
  cprof__labels_copy_sigsafe(&l);
  CHECK_EQ_STR(value_of(&l, "who"), "other");
  return NULL; /* the block is freed at exit: ASan's leak check sees to it */
}

int main(void) {
  cprof__labels_t l;
  cprof__labels_copy_sigsafe(&l);
  CHECK_EQ_INT(l.n, 0);

  CHECK_EQ_INT(cprof_label_set("request", "checkout"), 0);
  CHECK_EQ_INT(cprof_label_set("tenant", "acme"), 0);
  CHECK_EQ_INT(cprof_label_set("request", "search"), 0); /* replaces */
  cprof__labels_copy_sigsafe(&l);
  CHECK_EQ_INT(l.n, 2);
  CHECK_EQ_STR(value_of(&l, "request"), "search");
  CHECK_EQ_STR(value_of(&l, "tenant"), "acme");

  CHECK_EQ_INT(cprof_label_clear("request"), 0);
  CHECK_EQ_INT(cprof_label_clear("request"), -ENOENT);
  cprof__labels_copy_sigsafe(&l);
  CHECK_EQ_INT(l.n, 1);
  CHECK(value_of(&l, "request") == NULL);
  CHECK_EQ_STR(value_of(&l, "tenant"), "acme");

  char key[64], longest[CPROF_MAX_LABEL_VALUE + 2];
  memset(longest, 'v', sizeof longest);
  longest[CPROF_MAX_LABEL_VALUE] = '\0';
  CHECK_EQ_INT(cprof_label_set("long", longest), 0); /* exactly the limit */
  longest[CPROF_MAX_LABEL_VALUE] = 'v';
  longest[CPROF_MAX_LABEL_VALUE + 1] = '\0';
  CHECK_EQ_INT(cprof_label_set("long", longest), -EINVAL); /* one over */
  CHECK_EQ_INT(cprof_label_set(NULL, "x"), -EINVAL);
  CHECK_EQ_INT(cprof_label_set("x", NULL), -EINVAL);
  CHECK_EQ_INT(cprof_label_set("", "x"), -EINVAL);
  CHECK_EQ_INT(cprof_label_set("x", ""), -EINVAL);
  CHECK_EQ_INT(cprof_label_set("0123456789012345678901234567890123", "x"), -EINVAL);
  CHECK_EQ_INT(cprof_label_clear(NULL), -ENOENT);

  /* tenant and long are set: six more fit, the ninth key does not. */
  for (int i = 0; i < CPROF_MAX_LABELS - 2; i++) {
    snprintf(key, sizeof key, "k%d", i);
    CHECK_EQ_INT(cprof_label_set(key, "v"), 0);
  }
  CHECK_EQ_INT(cprof_label_set("one-too-many", "v"), -ENOSPC);
  CHECK_EQ_INT(cprof_label_set("tenant", "globex"), 0); /* replacing still works */
  cprof__labels_copy_sigsafe(&l);
  CHECK_EQ_INT(l.n, CPROF_MAX_LABELS);
  CHECK_EQ_STR(value_of(&l, "tenant"), "globex");

  pthread_t t;
  pthread_create(&t, NULL, other_thread, NULL);
  pthread_join(t, NULL);
  cprof__labels_copy_sigsafe(&l);
  CHECK(value_of(&l, "who") == NULL);
  CHECK_EQ_STR(value_of(&l, "tenant"), "globex");
  return check_result("test_labels");
}
