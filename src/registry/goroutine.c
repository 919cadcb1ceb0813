/* The goroutine profile (/debug/pprof/goroutine, and its alias /threads):
 * the stack of every thread of the process. C has no goroutines; threads are what a C
 * program's "what is everyone doing" question is about, and keeping Go's
 * name lets every habit and tool that asks for goroutine work unchanged.
 *
 *   debug=0  gzip profile.proto, sample type goroutine/count, identical
 *            stacks with identical labels merged; each sample labelled
 *            thread=NAME and with the thread's own labels (cprof_label_set,
 *            cprof_do), as Go labels goroutine records with theirs.
 *   debug=1  Go's legacy count-profile text (the labels on a "# labels:"
 *            line under each "@" line, as Go prints them).
 *   debug=2  every thread on its own: tid, name, state, its labels if it
 *            has any, full stack.
 *   seconds=N  (debug=0 only) the change over N seconds, as Go's delta. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/config.h"
#include "profile/builder.h"
#include "registry/builtin.h"
#include "sample/threads.h"

#define CAPTURE_TIMEOUT_MS 1000

/* The one frame of a thread whose stack is not known, saying why, as Go
 * shows lost samples as a frame of their own. The text goes into buf. */
static const char *pseudo_frame(const cprof__thread_stack_t *t, char *buf, size_t size) {
  switch (t->status) {
  case CPROF_THREAD_TIMEOUT:
    return "[thread did not answer within 1s]";
  case CPROF_THREAD_BLOCKED:
    return "[thread blocks cprof's signal]";
  case CPROF_THREAD_UNKNOWN:
    /* One text for every thread with the same reason, so that they merge. */
    snprintf(buf, size, "[thread state unknown: /proc/self/task/TID/%s unreadable: %s]",
             t->unreadable ? t->unreadable : "syscall", strerror(t->err));
    return buf;
  case CPROF_THREAD_NO_SIGNAL:
    return "[thread running: the program has taken cprof's signal]";
  case CPROF_THREAD_NO_STACK:
    return "[thread running: no signal stack]";
  case CPROF_THREAD_UNSENT:
    snprintf(buf, size, "[thread running: cprof's signal could not be sent: %s: %s]",
             t->unreadable ? t->unreadable : "timer_create", strerror(t->err));
    return buf;
  case CPROF_THREAD_KERNEL:
    return "[kernel worker thread: no user stack]";
  default:
    return "[no stack]";
  }
}

/* Adds every thread of d to b with the given weight (+1, or -1 for the
 * start of a delta). */
static int add_dump(cprof__builder_t *b, const cprof__thread_dump_t *d, int64_t weight) {
  for (int i = 0; i < d->n; i++) {
    const cprof__thread_stack_t *t = &d->v[i];
    cprof__label_t labels[1 + CPROF_MAX_LABELS] = {{.key = "thread", .str = t->name}};
    int n = 1;
    for (int j = 0; j < t->labels.n; j++, n++)
      labels[n] = (cprof__label_t){.key = t->labels.key[j], .str = t->labels.value[j]};
    char why[160];
    int err = t->status == CPROF_THREAD_OK
                  ? cprof__builder_add(b, t->pcs, t->depth, &weight, labels, n)
                  : cprof__builder_add_pseudo(b, pseudo_frame(t, why, sizeof why), &weight,
                                              labels, n);
    if (err)
      return err;
  }
  return 0;
}

static const char *state_name(char s) {
  switch (s) {
  case 'R':
    return "running";
  case 'S':
    return "sleeping";
  case 'D':
    return "disk sleep";
  case 'T':
    return "stopped";
  case 't':
    return "tracing stop";
  case 'Z':
    return "zombie";
  default:
    return "unknown";
  }
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A thread's labels as Go's labelMap.String() prints them, the
 * "k":"v" pairs sorted as strings: labels: {"k":"v", "k2":"v2"} */
static void write_labels(const cprof__labels_t *l, cprof__buf_t *out) {
  cprof__buf_t pairs;
  cprof__buf_init(&pairs);
  size_t off[CPROF_MAX_LABELS];
  for (int i = 0; i < l->n; i++) {
    off[i] = pairs.len;
    cprof__quote(&pairs, l->key[i]);
    cprof__buf_putc(&pairs, ':');
    cprof__quote(&pairs, l->value[i]);
    cprof__buf_putc(&pairs, '\0');
  }
  if (!pairs.failed) {
    const char *sorted[CPROF_MAX_LABELS];
    for (int i = 0; i < l->n; i++)
      sorted[i] = pairs.data + off[i];
    qsort(sorted, (size_t)l->n, sizeof *sorted, str_cmp);
    cprof__buf_puts(out, "labels: {");
    for (int i = 0; i < l->n; i++)
      cprof__buf_printf(out, "%s%s", i ? ", " : "", sorted[i]);
    cprof__buf_puts(out, "}\n");
  }
  cprof__buf_free(&pairs);
}

/* Go's debug=2 dump, one paragraph per thread:
 *   thread 4242 "worker" [sleeping]:
 *   labels: {"request":"checkout"}
 *   wait_for_work()
 *   	/src/demo.c:57 +0x2a */
static void write_dump(const cprof__thread_dump_t *d, cprof__buf_t *out) {
  for (int i = 0; i < d->n; i++) {
    const cprof__thread_stack_t *t = &d->v[i];
    cprof__buf_printf(out, "thread %d \"%s\" [%s]:\n", (int)t->tid, t->name, state_name(t->state));
    if (t->labels.n > 0)
      write_labels(&t->labels, out);
    char why[160];
    if (t->status == CPROF_THREAD_OK)
      cprof__format_stack(out, t->pcs, t->depth);
    else
      cprof__buf_printf(out, "%s\n", pseudo_frame(t, why, sizeof why));
    cprof__buf_putc(out, '\n');
  }
}

static long count(const cprof__profile_t *p) { return cprof__threads_count(); }

static int snapshot(const cprof__profile_t *p, void **out) {
  cprof__config_t cfg;
  cprof__config_get(&cfg);
  cprof__thread_dump_t *d = calloc(1, sizeof *d);
  return cprof__snapshot_done(
      p, d, d ? cprof__threads_capture(cfg.unwind, CAPTURE_TIMEOUT_MS, d) : -ENOMEM, out);
}

static void release(const cprof__profile_t *p, void *snap) {
  cprof__threads_dump_free(snap);
  free(snap);
}

static int write(const cprof__profile_t *p, void *now, void *base, int debug, int64_t duration_ns,
                 cprof__buf_t *out) {
  const cprof__thread_dump_t *d = now, *before = base;
  if (debug >= 2) {
    write_dump(d, out);
    return 0;
  }
  cprof__profile_desc_t desc = {
      .sample_types = {{"goroutine", "count"}},
      .n_sample_types = 1,
      .period_type = {"goroutine", "count"},
      .period = 1,
      .time_nanos = cprof__now_ns(CLOCK_REALTIME),
      .duration_nanos = duration_ns,
  };
  cprof__builder_t *b = cprof__builder_new(&desc);
  if (!b || add_dump(b, d, 1) != 0 || (before && add_dump(b, before, -1) != 0)) {
    cprof__builder_free(b);
    return -ENOMEM;
  }
  int err = debug == 1 ? cprof__builder_write_count_text(b, "goroutine", out)
                       : cprof__builder_write_proto(b, out);
  cprof__builder_free(b);
  return err;
}

static const cprof__profile_ops_t ops = {count, snapshot, release, write, NULL};

const cprof__profile_t cprof__goroutine_profile = {
    .name = "goroutine",
    .desc = "Stack traces of all current threads (cprof's name for threads is Go's for "
            "goroutines; /debug/pprof/threads is the same). Use debug=2 for every thread with its "
            "name and state.",
    .failure = "could not capture thread stacks",
    .ops = &ops,
};
