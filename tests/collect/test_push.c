/* collect/push.c: Pyroscope's application name of a target, and a pusher
 * whose server is absent: its queue drops the oldest and its stop counts
 * what it could not send. (The request itself: tests/push/test_ingest.c.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "check.h"
#include "collect/push.h"

static void test_name(void) {
  collect_label_t labels[] = {{"env", "prod"}, {"zone", "a,b}c=d e"}};
  char *s = collect_push_name("backend", "127.0.0.1:6060", labels, 2);
  CHECK_EQ_STR(s, "backend{instance=127.0.0.1:6060,env=prod,zone=a_b_c_d_e}");
  free(s);
  s = collect_push_name("my job{x}", "[::1]:80", NULL, 0);
  CHECK_EQ_STR(s, "my_job_x_{instance=[::1]:80}");
  free(s);
}

/* A pusher to a port where nothing listens (1, refused at once): with a
 * queue of 2, enqueueing 5 drops at least the 2 oldest beyond what the
 * sender holds; a stop without time to flush drops the rest. Nothing is
 * pushed or rejected; every profile is accounted for once. */
static void test_absent_server(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  collect_remote_write_t rw = {.url = "http://127.0.0.1:1", .queue_size = 2};
  collect_pusher_t *p;
  char err[256];
  CHECK_EQ_INT(collect_pusher_new(&rw, &p, err, sizeof err), 0);
  cprof__value_type_t st[] = {{"goroutine", "count"}};
  cprof__pf_t prof = {.sample_types = st, .n_sample_types = 1};
  collect_push_profile_t pp = {.job = "j",
                               .instance = "h:1",
                               .kind = "goroutine",
                               .start_ns = 1000000000,
                               .profile = &prof,
                               .data = "x",
                               .len = 1};
  for (int i = 0; i < 5; i++)
    CHECK_EQ_INT(collect_pusher_enqueue(p, &pp), 0);
  collect_push_totals_t t;
  collect_pusher_totals(p, &t);
  CHECK(t.dropped >= 2 && t.queued <= 3 && t.dropped + t.queued == 5);
  collect_pusher_stop(p, 0);
  collect_pusher_totals(p, &t);
  CHECK_EQ_INT(t.pushed, 0);
  CHECK_EQ_INT(t.rejected, 0);
  CHECK_EQ_INT(t.queued, 0);
  CHECK_EQ_INT(t.dropped, 5);
  /* After the stop, an enqueued profile is dropped at once. */
  CHECK_EQ_INT(collect_pusher_enqueue(p, &pp), 0);
  collect_pusher_totals(p, &t);
  CHECK_EQ_INT(t.dropped, 6);
  collect_pusher_free(p);

  collect_remote_write_t bad = {.url = "ftp://x", .queue_size = 1};
  CHECK_EQ_INT(collect_pusher_new(&bad, &p, err, sizeof err), -EINVAL);
  CHECK(strstr(err, "ftp://x") != NULL);
  curl_global_cleanup();
}

int main(void) {
  test_name();
  test_absent_server();
  return check_result("collect/test_push");
}
