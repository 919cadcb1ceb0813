/* collect/push.c's pure parts: Pyroscope's application name with its
 * tags, the ingest URL, the sample_type_config JSON and the sample rate;
 * and a pusher whose server is absent: its queue drops the oldest and its
 * stop counts what it could not send. */
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

static void test_url(void) {
  char *s = collect_push_url("http://p:4040//", "a.b{instance=h:1,k=v}", 100, 110, 100);
  CHECK_EQ_STR(s, "http://p:4040/ingest?name=a.b%7Binstance%3Dh%3A1%2Ck%3Dv%7D&from=100&until=110"
                  "&format=pprof&spyName=cprof&sampleRate=100");
  free(s);
  s = collect_push_url("https://h/base", "j{instance=x}", 5, 5, 0);
  CHECK_EQ_STR(s, "https://h/base/ingest?name=j%7Binstance%3Dx%7D&from=5&until=5&format=pprof"
                  "&spyName=cprof");
  free(s);
}

static void test_sample_type_config(void) {
  cprof__value_type_t cpu[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
  char *s = collect_push_sample_type_config("process_cpu", 1, cpu, 2);
  CHECK_EQ_STR(s, "{\"samples\":{\"units\":\"samples\",\"display-name\":\"cpu\",\"sampled\":true},"
                  "\"cpu\":{\"units\":\"nanoseconds\",\"display-name\":\"cpu_nanoseconds\"}}");
  free(s);

  cprof__value_type_t heap[] = {{"alloc_objects", "count"},
                                {"alloc_space", "bytes"},
                                {"inuse_objects", "count"},
                                {"inuse_space", "bytes"}};
  s = collect_push_sample_type_config("memory", 0, heap, 4);
  CHECK_EQ_STR(s, "{\"alloc_objects\":{\"units\":\"objects\",\"cumulative\":true},"
                  "\"alloc_space\":{\"units\":\"bytes\",\"cumulative\":true},"
                  "\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
                  "\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}");
  free(s);
  /* A delta heap profile's allocations are not cumulative. */
  s = collect_push_sample_type_config("memory", 1, heap, 2);
  CHECK_EQ_STR(s, "{\"alloc_objects\":{\"units\":\"objects\"},"
                  "\"alloc_space\":{\"units\":\"bytes\"}}");
  free(s);

  cprof__value_type_t lock[] = {{"contentions", "count"}, {"delay", "nanoseconds"}};
  s = collect_push_sample_type_config("mutex", 0, lock, 2);
  CHECK_EQ_STR(s, "{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"mutex_count\","
                  "\"cumulative\":true},"
                  "\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"mutex_duration\","
                  "\"cumulative\":true}}");
  free(s);
  s = collect_push_sample_type_config("block", 0, lock, 2);
  CHECK(s && strstr(s, "\"block_count\"") && strstr(s, "\"block_duration\""));
  free(s);

  cprof__value_type_t other[] = {
      {"goroutine", "count"}, {"threadcreate", "count"}, {"held\"", "bytes"}, {"wait", "seconds"}};
  s = collect_push_sample_type_config("custom", 0, other, 4);
  CHECK_EQ_STR(
      s, "{\"goroutine\":{\"units\":\"goroutines\",\"display-name\":\"goroutines\",\"aggregation\":"
         "\"average\"},"
         "\"threadcreate\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
         "\"held\\\"\":{\"units\":\"bytes\",\"aggregation\":\"average\"},"
         "\"wait\":{\"units\":\"seconds\",\"aggregation\":\"average\"}}");
  free(s);
  s = collect_push_sample_type_config("custom", 0, NULL, 0);
  CHECK_EQ_STR(s, "{}");
  free(s);
}

static void test_sample_rate(void) {
  cprof__pf_t p = {.period_type = {"cpu", "nanoseconds"}, .period = 10000000};
  CHECK_EQ_INT(collect_push_sample_rate(&p), 100);
  p.period = 1000000000 / 97;
  CHECK_EQ_INT(collect_push_sample_rate(&p), 97);
  p.period_type = (cprof__value_type_t){"space", "bytes"};
  CHECK_EQ_INT(collect_push_sample_rate(&p), 0);
  p.period_type = (cprof__value_type_t){"", ""};
  CHECK_EQ_INT(collect_push_sample_rate(&p), 0);
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
  test_url();
  test_sample_type_config();
  test_sample_rate();
  test_absent_server();
  return check_result("collect/test_push");
}
