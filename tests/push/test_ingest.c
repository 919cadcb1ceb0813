/* push/ingest.c's pure parts, shared by the library's push and cprof
 * collect's remote write: Pyroscope's application name with its tags, the
 * ingest URL, the sample_type_config JSON and the sample rate. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "push/ingest.h"

static void test_name(void) {
  cprof__ingest_tag_t tags[] = {{"hostname", "web-1"}, {"zone", "a,b}c=d e"}};
  char *s = cprof__ingest_name("backend", tags, 2);
  CHECK_EQ_STR(s, "backend{hostname=web-1,zone=a_b_c_d_e}");
  free(s);
  s = cprof__ingest_name("my job{x}", NULL, 0);
  CHECK_EQ_STR(s, "my_job_x_{}");
  free(s);
}

static void test_escape(void) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__url_escape(&b, "a-Z_0.~ /?&=%\xc3\xa9");
  cprof__buf_putc(&b, '\0');
  CHECK_EQ_STR(b.data, "a-Z_0.~%20%2F%3F%26%3D%25%C3%A9");
  cprof__buf_free(&b);
}

static void test_url(void) {
  char *s = cprof__ingest_url("http://p:4040//", "a.b{instance=h:1,k=v}", 100, 110, 100);
  CHECK_EQ_STR(s, "http://p:4040/ingest?name=a.b%7Binstance%3Dh%3A1%2Ck%3Dv%7D&from=100&until=110"
                  "&format=pprof&spyName=cprof&sampleRate=100");
  free(s);
  s = cprof__ingest_url("https://h/base", "j{instance=x}", 5, 5, 0);
  CHECK_EQ_STR(s, "https://h/base/ingest?name=j%7Binstance%3Dx%7D&from=5&until=5&format=pprof"
                  "&spyName=cprof");
  free(s);
}

static void test_sample_type_config(void) {
  cprof__value_type_t cpu[] = {{"samples", "count"}, {"cpu", "nanoseconds"}};
  char *s = cprof__ingest_sample_type_config("process_cpu", 1, cpu, 2);
  CHECK_EQ_STR(s, "{\"samples\":{\"units\":\"samples\",\"display-name\":\"cpu\",\"sampled\":true},"
                  "\"cpu\":{\"units\":\"nanoseconds\",\"display-name\":\"cpu_nanoseconds\"}}");
  free(s);

  cprof__value_type_t heap[] = {{"alloc_objects", "count"},
                                {"alloc_space", "bytes"},
                                {"inuse_objects", "count"},
                                {"inuse_space", "bytes"}};
  s = cprof__ingest_sample_type_config("memory", 0, heap, 4);
  CHECK_EQ_STR(s, "{\"alloc_objects\":{\"units\":\"objects\",\"cumulative\":true},"
                  "\"alloc_space\":{\"units\":\"bytes\",\"cumulative\":true},"
                  "\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
                  "\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}");
  free(s);
  /* A delta heap profile's allocations are not cumulative. */
  s = cprof__ingest_sample_type_config("memory", 1, heap, 2);
  CHECK_EQ_STR(s, "{\"alloc_objects\":{\"units\":\"objects\"},"
                  "\"alloc_space\":{\"units\":\"bytes\"}}");
  free(s);

  cprof__value_type_t lock[] = {{"contentions", "count"}, {"delay", "nanoseconds"}};
  s = cprof__ingest_sample_type_config("mutex", 0, lock, 2);
  CHECK_EQ_STR(s, "{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"mutex_count\","
                  "\"cumulative\":true},"
                  "\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"mutex_duration\","
                  "\"cumulative\":true}}");
  free(s);
  s = cprof__ingest_sample_type_config("block", 0, lock, 2);
  CHECK(s && strstr(s, "\"block_count\"") && strstr(s, "\"block_duration\""));
  free(s);

  cprof__value_type_t other[] = {
      {"goroutine", "count"}, {"threadcreate", "count"}, {"held\"", "bytes"}, {"wait", "seconds"}};
  s = cprof__ingest_sample_type_config("custom", 0, other, 4);
  CHECK_EQ_STR(
      s, "{\"goroutine\":{\"units\":\"goroutines\",\"display-name\":\"goroutines\",\"aggregation\":"
         "\"average\"},"
         "\"threadcreate\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
         "\"held\\\"\":{\"units\":\"bytes\",\"aggregation\":\"average\"},"
         "\"wait\":{\"units\":\"seconds\",\"aggregation\":\"average\"}}");
  free(s);
  s = cprof__ingest_sample_type_config("custom", 0, NULL, 0);
  CHECK_EQ_STR(s, "{}");
  free(s);
}

static void test_sample_rate(void) {
  cprof__pf_t p = {.period_type = {"cpu", "nanoseconds"}, .period = 10000000};
  CHECK_EQ_INT(cprof__ingest_sample_rate(&p.period_type, p.period), 100);
  p.period = 1000000000 / 97;
  CHECK_EQ_INT(cprof__ingest_sample_rate(&p.period_type, p.period), 97);
  p.period_type = (cprof__value_type_t){"space", "bytes"};
  CHECK_EQ_INT(cprof__ingest_sample_rate(&p.period_type, p.period), 0);
  p.period_type = (cprof__value_type_t){"", ""};
  CHECK_EQ_INT(cprof__ingest_sample_rate(&p.period_type, p.period), 0);
}

int main(void) {
  test_name();
  test_escape();
  test_url();
  test_sample_type_config();
  test_sample_rate();
  return check_result("push/test_ingest");
}
