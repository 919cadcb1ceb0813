/* The collector's check of a scraped profile (tools/cprof/collect/
 * validate.c): a good profile passes, and each thing Parca rejects is
 * refused with its own line: a zero time, IDs out of order, a sample with
 * no locations, a label with no key; and what the decoder rejects (a value
 * count that does not match the sample types, an empty answer). */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "collect/validate.h"
#include "core/buf.h"
#include "profile/protobuf.h"

enum { S_SAMPLES = 1, S_COUNT, S_MAIN, S_WORK, S_THREAD, S_W1 };
static const char *strings[] = {"", "samples", "count", "main", "work", "thread", "w1"};

typedef struct {
  int64_t time_nanos;
  int swap_locations; /* location 2 written before location 1 */
  int empty_stack;    /* the second sample has no locations */
  int empty_key;      /* the label's key is string 0 */
  int values;         /* values per sample (the profile has one type) */
} knobs_t;

static void write_profile(cprof__buf_t *b, knobs_t k) {
  size_t s = cprof__pb_start(b);
  cprof__pb_int64(b, 1, S_SAMPLES);
  cprof__pb_int64(b, 2, S_COUNT);
  cprof__pb_end(b, 1, s);
  for (int i = 0; i < 2; i++) {
    s = cprof__pb_start(b);
    if (!(i == 1 && k.empty_stack)) {
      cprof__pb_uint64(b, 1, 2);
      cprof__pb_uint64(b, 1, 1);
    }
    for (int v = 0; v < k.values; v++)
      cprof__pb_int64(b, 2, 5 + i);
    size_t l = cprof__pb_start(b);
    cprof__pb_int64(b, 1, k.empty_key ? 0 : S_THREAD);
    cprof__pb_int64(b, 2, S_W1);
    cprof__pb_end(b, 3, l);
    cprof__pb_end(b, 2, s);
  }
  for (int n = 0; n < 2; n++) {
    int id = k.swap_locations ? 2 - n : n + 1;
    s = cprof__pb_start(b);
    cprof__pb_uint64(b, 1, (uint64_t)id);
    cprof__pb_uint64(b, 3, 0x1000 + (uint64_t)id);
    size_t l = cprof__pb_start(b);
    cprof__pb_uint64(b, 1, (uint64_t)id);
    cprof__pb_end(b, 4, l);
    cprof__pb_end(b, 4, s);
  }
  for (int id = 1; id <= 2; id++) {
    s = cprof__pb_start(b);
    cprof__pb_uint64(b, 1, (uint64_t)id);
    cprof__pb_int64(b, 2, id == 1 ? S_MAIN : S_WORK);
    cprof__pb_end(b, 5, s);
  }
  for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
    cprof__pb_string(b, 6, strings[i]);
  if (k.time_nanos)
    cprof__pb_int64(b, 9, k.time_nanos);
}

/* The return code of collect_decode_valid on the profile, err filled. */
static int run(knobs_t k, char *err, size_t errlen) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  write_profile(&b, k);
  CHECK(!b.failed);
  cprof__pf_t *p = NULL;
  err[0] = '\0';
  int rc = collect_decode_valid(b.data, b.len, &p, err, errlen);
  CHECK((rc == 0) == (p != NULL));
  cprof__pf_free(p);
  cprof__buf_free(&b);
  return rc;
}

static void refused(knobs_t k, const char *want) {
  char err[256];
  CHECK_EQ_INT(run(k, err, sizeof err), -EINVAL);
  if (!strstr(err, want))
    fprintf(stderr, "error \"%s\" does not say \"%s\"\n", err, want);
  CHECK(strstr(err, want) != NULL);
  CHECK(strchr(err, '\n') == NULL);
}

int main(void) {
  const knobs_t good = {.time_nanos = 1700000000000000000, .values = 1};
  char err[256];
  CHECK_EQ_INT(run(good, err, sizeof err), 0);

  knobs_t k = good;
  k.time_nanos = 0;
  refused(k, "time_nanos is zero");
  k = good;
  k.swap_locations = 1; /* pprof reads it; Parca does not */
  refused(k, "not 1, 2, 3... in order");
  k = good;
  k.empty_stack = 1;
  refused(k, "sample 1 has no locations");
  k = good;
  k.empty_key = 1;
  refused(k, "sample 0 label 0 has no key");
  k = good;
  k.values = 2;
  refused(k, "values");

  CHECK_EQ_INT(collect_decode_valid("", 0, &(cprof__pf_t *){NULL}, err, sizeof err), -EINVAL);
  CHECK(strstr(err, "empty") != NULL);
  CHECK_EQ_INT(collect_decode_valid("garbage!", 8, &(cprof__pf_t *){NULL}, err, sizeof err),
               -EINVAL);
  return check_result("test_validate");
}
