/* The registry: names, registration, lookup, the sorted list, and the
 * delta controller's contract, with a profile of the test's own whose
 * snapshots are numbers. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "registry/registry.h"

static long counter; /* the fake profile's state */
static int snapshots, releases, waits;

static long count(const cprof__profile_t *p) { return counter; }
static int snapshot(const cprof__profile_t *p, void **out) {
  snapshots++;
  *out = (void *)(counter + 1); /* never NULL */
  return 0;
}
static void release(const cprof__profile_t *p, void *snap) { releases++; }
static int write(const cprof__profile_t *p, void *now, void *base, int debug, int64_t duration_ns,
                 cprof__buf_t *out) {
  long v = (long)now - 1 - (base ? (long)base - 1 : 0);
  cprof__buf_printf(out, "%s debug=%d value=%ld delta=%d\n", p->name, debug, v,
                    base != NULL && duration_ns > 0);
  return 0;
}
static const cprof__profile_ops_t ops = {count, snapshot, release, write, NULL};
static const cprof__profile_t fake = {"zz_fake", "a test's", "could not write zz_fake", &ops, NULL};

/* The wait between a delta's snapshots: the state moves on by 5. */
static int step(void *ctx, long ms) {
  waits++;
  counter += 5;
  return 0;
}
static int cancel(void *ctx, long ms) { return 1; }

int main(void) {
  CHECK(cprof__registry_name_ok("connections"));
  CHECK(cprof__registry_name_ok("a.b_c-9"));
  CHECK(!cprof__registry_name_ok(""));
  CHECK(!cprof__registry_name_ok(NULL));
  CHECK(!cprof__registry_name_ok(".."));
  CHECK(!cprof__registry_name_ok("a/b"));
  CHECK(!cprof__registry_name_ok("a b"));
  char long_name[66];
  memset(long_name, 'x', 65);
  long_name[65] = '\0';
  CHECK(!cprof__registry_name_ok(long_name));

  /* The built-ins are there from the first lookup, "threads" is goroutine. */
  const cprof__profile_t *g = cprof__registry_lookup("goroutine");
  CHECK(g != NULL);
  CHECK(cprof__registry_lookup("threads") == g);
  CHECK(cprof__registry_lookup("profile") == NULL);
  CHECK(cprof__registry_lookup(NULL) == NULL);

  CHECK_EQ_INT(cprof__registry_add(&fake), 0);
  CHECK_EQ_INT(cprof__registry_add(&fake), -EEXIST);
  static const cprof__profile_t heap2 = {"heap", "", "", &ops, NULL};
  CHECK_EQ_INT(cprof__registry_add(&heap2), -EEXIST);
  static const cprof__profile_t symbol = {"symbol", "", "", &ops, NULL};
  CHECK_EQ_INT(cprof__registry_add(&symbol), -EEXIST);
  static const cprof__profile_t wall = {"wall", "", "", &ops, NULL}; /* the built-in's */
  CHECK_EQ_INT(cprof__registry_add(&wall), -EEXIST);
  static const cprof__profile_t bad = {"no/slash", "", "", &ops, NULL};
  CHECK_EQ_INT(cprof__registry_add(&bad), -EINVAL);
  CHECK(cprof__registry_lookup("zz_fake") == &fake);

  /* Sorted by name, built-ins and added alike. */
  const cprof__profile_t *list[CPROF_MAX_PROFILES_REGISTERED];
  int n = cprof__registry_list(list, CPROF_MAX_PROFILES_REGISTERED);
  CHECK_EQ_INT(n, 8);
  const char *want[] = {"allocs", "block",        "goroutine", "heap",
                        "mutex",  "threadcreate", "wall",      "zz_fake"};
  for (int i = 0; i < n && i < 8; i++)
    CHECK_EQ_STR(list[i]->name, want[i]);
  CHECK_EQ_INT(cprof__registry_list(list, 2), 2);

  /* Now: one snapshot, written; every snapshot released. */
  cprof__buf_t out;
  cprof__buf_init(&out);
  counter = 7;
  cprof__collect_t now = {.debug = 1};
  CHECK_EQ_INT(cprof__profile_collect(&fake, &now, &out), 0);
  cprof__buf_putc(&out, '\0');
  CHECK_EQ_STR(out.data, "zz_fake debug=1 value=7 delta=0\n");
  CHECK_EQ_INT(snapshots, releases);

  /* A delta: the change over the wait, with its duration. */
  cprof__buf_free(&out);
  cprof__buf_init(&out);
  cprof__collect_t delta = {.seconds = 2, .wait = step};
  CHECK_EQ_INT(cprof__profile_collect(&fake, &delta, &out), 0);
  cprof__buf_putc(&out, '\0');
  CHECK_EQ_STR(out.data, "zz_fake debug=0 value=5 delta=1\n");
  CHECK_EQ_INT(waits, 1);
  CHECK_EQ_INT(snapshots, releases);

  /* Cancelled: nothing written, the first snapshot released. */
  cprof__buf_free(&out);
  cprof__buf_init(&out);
  cprof__collect_t cut = {.seconds = 1, .wait = cancel};
  CHECK_EQ_INT(cprof__profile_collect(&fake, &cut, &out), -ECANCELED);
  CHECK_EQ_INT(out.len, 0);
  CHECK_EQ_INT(snapshots, releases);

  /* A delta is debug 0 only, as Go's; no negative arguments. */
  cprof__collect_t both = {.seconds = 1, .debug = 1};
  CHECK_EQ_INT(cprof__profile_collect(&fake, &both, &out), -EINVAL);
  cprof__collect_t neg = {.seconds = -1};
  CHECK_EQ_INT(cprof__profile_collect(&fake, &neg, &out), -EINVAL);
  CHECK_EQ_INT(cprof__profile_collect(NULL, &now, &out), -EINVAL);
  cprof__buf_free(&out);
  return check_result("test_registry");
}
