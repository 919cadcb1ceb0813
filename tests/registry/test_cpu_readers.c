/* The readers of the one CPU recording (registry/cpu.h): readers started
 * and stopped in different orders, the recording running while any reader
 * is open and stopping with the last; every reader's profile holding the
 * samples of its own window and none from outside it, with its own
 * time_nanos and duration_nanos; the bound on readers.
 *
 * The windows are told apart by a label: the one thread that burns CPU
 * sets phase=N before each change of readers (cprof_label_set), and every
 * sample carries the label it had when taken. As the same thread changes
 * the readers, a sample taken before a change has the label of before, so
 * a reader's profile must hold exactly the phases its window spans.
 * Each profile is also read by `go tool pprof -raw` when Go is here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "burn.h"
#include "check.h"
#include "cprof.h"
#include "model/model.h"
#include "registry/cpu.h"
#include "sample/cpu.h"

#define HZ 250
#define PHASES 6
#define GO "/usr/lib/go/bin/go"

static void phase(int n) {
  char v[8];
  snprintf(v, sizeof v, "%d", n);
  CHECK_EQ_INT(cprof_label_set("phase", v), 0);
}

typedef struct window {
  int64_t samples[PHASES + 1]; /* by phase; [0]: no phase label */
  int64_t time_nanos, duration_nanos, period;
} window_t;

/* Decodes a reader's profile and counts its samples by phase; and, with Go
 * here, has go tool pprof read it. */
static void read_profile(const cprof__buf_t *b, const char *name, window_t *w) {
  memset(w, 0, sizeof *w);
  cprof__pf_t *p = NULL;
  char err[256] = "";
  CHECK_EQ_INT(cprof__pf_decode(b->data, b->len, &p, err, sizeof err), 0);
  if (!p) {
    fprintf(stderr, "%s: %s\n", name, err);
    return;
  }
  w->time_nanos = p->time_nanos;
  w->duration_nanos = p->duration_nanos;
  w->period = p->period;
  for (size_t i = 0; i < p->n_samples; i++) {
    const cprof__pf_sample_t *s = &p->samples[i];
    int ph = 0;
    for (size_t j = 0; j < s->n_labels; j++)
      if (strcmp(s->labels[j].key, "phase") == 0 && s->labels[j].str)
        ph = atoi(s->labels[j].str);
    if (ph >= 0 && ph <= PHASES)
      w->samples[ph] += s->values[0];
  }
  fprintf(stderr, "%s: phases 1-%d:", name, PHASES);
  for (int i = 1; i <= PHASES; i++)
    fprintf(stderr, " %lld", (long long)w->samples[i]);
  fprintf(stderr, " (unlabelled %lld), duration %.3f s\n", (long long)w->samples[0],
          w->duration_nanos / 1e9);
  cprof__pf_free(p);

  if (access(GO, X_OK) != 0)
    return;
  char path[] = "/tmp/cprof-readers-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, b->data, b->len) == (ssize_t)b->len);
  close(fd);
  char cmd[512];
  snprintf(cmd, sizeof cmd, GO " tool pprof -raw %s 2>/dev/null | grep -q '^Samples:'", path);
  CHECK_EQ_INT(system(cmd), 0);
  unlink(path);
}

static cprof__cpu_reader_t *start(void) {
  cprof__cpu_reader_t *r = NULL;
  char why[256] = "";
  int err = cprof__cpu_reader_start(HZ, 0, CPROF_UNWIND_FP, why, sizeof why, &r);
  if (err)
    fprintf(stderr, "reader start: %d %s\n", err, why);
  CHECK_EQ_INT(err, 0);
  return r;
}

static void stop(cprof__cpu_reader_t *r, cprof__buf_t *b) {
  cprof__buf_init(b);
  CHECK_EQ_INT(cprof__cpu_reader_stop(r, b), 0);
  CHECK(!b->failed && b->len > 20);
}

/* Between phases, while readers change: "b", counted with the unlabelled
 * and never checked, so that a sample taken between the label's change and
 * the readers' (on this thread, microseconds apart) counts for no phase. */
static void boundary(void) { CHECK_EQ_INT(cprof_label_set("phase", "b"), 0); }

/* A opens in phase 1 and closes after phase 2; B opens before phase 2 and
 * closes last, after phase 4; C opens before phase 3 and closes before
 * phase 4. So A's, B's and C's windows overlap, start in one order and end
 * in another; phase 2 is all A's and B's, phase 3 all B's and C's. */
static void windows(void) {
  cprof__buf_t a, b, c;
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 0);
  CHECK(!cprof__cpu_running());

  phase(1);
  cprof__cpu_reader_t *ra = start();
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 1);
  CHECK(cprof__cpu_running());
  burn(300); /* undrained: the next change of readers drains */

  boundary();
  cprof__cpu_reader_t *rb = start();
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 2);
  phase(2);
  burn(300);

  boundary();   /* writing A's profile takes CPU of this thread too */
  stop(ra, &a); /* the first started, stopped first: the recording goes on */
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 1);
  CHECK(cprof__cpu_running());
  cprof__cpu_reader_t *rc = start();
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 2);
  phase(3);
  burn(300); /* undrained: the next change of readers drains */

  boundary();
  stop(rc, &c); /* the last started, stopped before the older B */
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 1);
  CHECK(cprof__cpu_running());
  phase(4);
  burn(300);

  boundary();
  stop(rb, &b); /* the last reader: the recording stops */
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 0);
  CHECK(!cprof__cpu_running());
  phase(5); /* no reader: nothing anywhere */
  burn(50);
  cprof_label_clear("phase");

  window_t wa, wb, wc;
  read_profile(&a, "A", &wa);
  read_profile(&b, "B", &wb);
  read_profile(&c, "C", &wc);
  cprof__buf_free(&a);
  cprof__buf_free(&b);
  cprof__buf_free(&c);

  /* Inside each window, samples of every phase it spans (300 ms at
   * 250 Hz is about 75; 20 is far below any noise); outside, none. */
  CHECK(wa.samples[1] > 20 && wa.samples[2] > 20);
  CHECK_EQ_INT(wa.samples[3], 0);
  CHECK_EQ_INT(wa.samples[4], 0);
  CHECK_EQ_INT(wb.samples[1], 0);
  CHECK(wb.samples[2] > 20 && wb.samples[3] > 20 && wb.samples[4] > 20);
  CHECK_EQ_INT(wc.samples[1], 0);
  CHECK_EQ_INT(wc.samples[2], 0);
  CHECK(wc.samples[3] > 20);
  CHECK_EQ_INT(wc.samples[4], 0);
  CHECK_EQ_INT(wa.samples[5] + wb.samples[5] + wc.samples[5], 0);
  /* Phases two readers shared have the same samples in both: one
   * recording, handed to both, exactly. */
  CHECK_EQ_INT(wa.samples[2], wb.samples[2]);
  CHECK_EQ_INT(wb.samples[3], wc.samples[3]);

  /* Each its own time: started A, B, C in that order; B the longest (four
   * phases of 300 ms of CPU, or more), C the shortest. */
  CHECK(wa.time_nanos > 0 && wa.time_nanos < wb.time_nanos && wb.time_nanos < wc.time_nanos);
  CHECK(wb.duration_nanos > wa.duration_nanos && wa.duration_nanos > wc.duration_nanos);
  CHECK(wc.duration_nanos >= 290000000LL);
  CHECK(wb.duration_nanos >= 3 * 290000000LL);
  /* B's window ends after C's: its start plus its length is the later. */
  CHECK(wb.time_nanos + wb.duration_nanos > wc.time_nanos + wc.duration_nanos);
  CHECK_EQ_INT(wa.period, 1000000000LL / HZ);
}

/* A reader that asks for its own rate while another runs is refused with
 * the running rate; one that does not ask takes it. */
static void rates(void) {
  cprof__cpu_reader_t *first = start(), *r = NULL;
  char why[256] = "";
  CHECK_EQ_INT(cprof__cpu_reader_start(100, CPROF_CPU_READER_EXPLICIT_HZ, CPROF_UNWIND_FP, why,
                                       sizeof why, &r),
               -ERANGE);
  CHECK(strstr(why, "250 Hz") != NULL);
  CHECK_EQ_INT(
      cprof__cpu_reader_start(HZ, CPROF_CPU_READER_EXPLICIT_HZ, CPROF_UNWIND_FP, NULL, 0, &r), 0);
  cprof__cpu_reader_t *other = NULL;
  CHECK_EQ_INT(cprof__cpu_reader_start(100, 0, CPROF_UNWIND_FP, NULL, 0, &other), 0);
  CHECK_EQ_INT(cprof__cpu_reader_hz(other), HZ);
  CHECK_EQ_INT(cprof__cpu_reader_stop(first, NULL), 0);
  CHECK_EQ_INT(cprof__cpu_reader_stop(r, NULL), 0);
  CHECK_EQ_INT(cprof__cpu_reader_stop(other, NULL), 0);
  CHECK(!cprof__cpu_running());
  /* With none running, the next reader's rate is the recording's. */
  CHECK_EQ_INT(
      cprof__cpu_reader_start(100, CPROF_CPU_READER_EXPLICIT_HZ, CPROF_UNWIND_FP, NULL, 0, &r), 0);
  int hz = 0;
  CHECK_EQ_INT(cprof__cpu_readers(&hz), 1);
  CHECK_EQ_INT(hz, 100);
  CHECK_EQ_INT(cprof__cpu_reader_stop(r, NULL), 0);
}

/* At most CPROF_CPU_MAX_READERS at once; a reader past that is told so,
 * and a place freed is taken again. */
static void bound(void) {
  cprof__cpu_reader_t *rs[CPROF_CPU_MAX_READERS], *r = NULL;
  for (int i = 0; i < CPROF_CPU_MAX_READERS; i++)
    CHECK_EQ_INT(cprof__cpu_reader_start(HZ, 0, CPROF_UNWIND_FP, NULL, 0, &rs[i]), 0);
  char why[256] = "";
  CHECK_EQ_INT(cprof__cpu_reader_start(HZ, 0, CPROF_UNWIND_FP, why, sizeof why, &r), -EUSERS);
  CHECK(r == NULL && strstr(why, "the most at once") != NULL);
  burn(50);
  CHECK_EQ_INT(cprof__cpu_reader_stop(rs[3], NULL), 0);
  CHECK_EQ_INT(cprof__cpu_reader_start(HZ, 0, CPROF_UNWIND_FP, NULL, 0, &rs[3]), 0);
  /* Stopped in reverse order, with their profiles written. */
  for (int i = CPROF_CPU_MAX_READERS - 1; i >= 0; i--) {
    cprof__buf_t b;
    stop(rs[i], &b);
    cprof__buf_free(&b);
    CHECK_EQ_INT(cprof__cpu_running(), i > 0);
  }
  CHECK_EQ_INT(cprof__cpu_readers(NULL), 0);
}

/* A cut gives the window so far and opens the next, the recording and
 * the other readers untouched. */
static void cut(void) {
  phase(1);
  cprof__cpu_reader_t *pusher = start();
  burn(200);
  /* Phase 6 around the cut: samples of it may fall on either side. */
  phase(6);
  cprof__buf_t first;
  cprof__buf_init(&first);
  CHECK_EQ_INT(cprof__cpu_reader_cut(pusher, &first), 0);
  phase(2);
  cprof__cpu_reader_t *other = start();
  burn(200);
  cprof__buf_t second, whole;
  stop(pusher, &second);
  stop(other, &whole);
  window_t w1, w2, wo;
  read_profile(&first, "cut 1", &w1);
  read_profile(&second, "cut 2", &w2);
  read_profile(&whole, "other", &wo);
  CHECK(w1.samples[1] > 10);
  CHECK_EQ_INT(w1.samples[2], 0);
  CHECK_EQ_INT(w2.samples[1], 0);
  CHECK(w2.samples[2] > 10);
  CHECK(w1.time_nanos < w2.time_nanos);
  cprof__buf_free(&first);
  cprof__buf_free(&second);
  cprof__buf_free(&whole);
  CHECK(!cprof__cpu_running());
  cprof_label_clear("phase");
}

int main(void) {
  windows();
  rates();
  bound();
  cut();
  return check_result("test_cpu_readers");
}
