/* The metrics ring: it wraps, since= selects, rates come from consecutive
 * points, unknown figures are null, and the Prometheus text carries what
 * the point holds. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "metrics/ring.h"

static cprof__metrics_point_t point(int64_t t_ms, int64_t k) {
  cprof__metrics_point_t p;
  memset(&p, 0, sizeof p);
  p.t_ms = t_ms;
  p.cpu_user_us = k * 500000; /* half a core */
  p.cpu_system_us = k * 100000;
  p.rss_bytes = 1000 + k;
  p.rss_peak_bytes = 2000;
  p.vm_bytes = 3000;
  p.heap_inuse_bytes = 400;
  p.heap_alloc_bytes = k * 4096;
  p.threads = 3;
  p.open_fds = 7;
  p.ctx_voluntary = k * 10;
  p.ctx_involuntary = k;
  p.faults_minor = k * 100;
  p.faults_major = 0;
  p.read_bytes = -1; /* /proc/self/io unreadable */
  p.write_bytes = -1;
  p.cprof_samples = k * 100;
  p.cprof_dropped = 0;
  p.cprof_memory_bytes = 65536;
  p.cprof_serve_ns = k * 2000000; /* 2 ms a second */
  return p;
}

/* The text between "\"name\":[" and the next ']'. */
static const char *series(const char *json, const char *name, char *out, size_t len) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\":[", name);
  const char *s = strstr(json, key);
  if (!s)
    return "(absent)";
  s += strlen(key);
  const char *e = strchr(s, ']');
  snprintf(out, len, "%.*s", (int)(e - s), s);
  return out;
}

static void test_wrap(void) {
  cprof__metrics_point_t v[4];
  cprof__metrics_ring_t r;
  cprof__metrics_ring_init(&r, v, 4);
  CHECK_EQ_INT(r.n, 0);
  for (int k = 0; k < 6; k++) {
    cprof__metrics_point_t p = point(1000 * (k + 1), k);
    cprof__metrics_ring_push(&r, &p);
  }
  CHECK_EQ_INT(r.n, 4);
  /* Oldest first: points 2..5 remain. */
  for (size_t i = 0; i < 4; i++)
    CHECK_EQ_INT(cprof__metrics_ring_at(&r, i)->t_ms, 1000 * (i + 3));
}

static void test_json(void) {
  cprof__metrics_point_t v[4];
  cprof__metrics_ring_t r;
  cprof__metrics_ring_init(&r, v, 4);
  for (int k = 0; k < 6; k++) {
    cprof__metrics_point_t p = point(1000 * (k + 1), k);
    cprof__metrics_ring_push(&r, &p);
  }
  cprof__metrics_meta_t m = {1000, 4, 123};
  cprof__buf_t b;
  char s[256];
  cprof__buf_init(&b);
  cprof__metrics_json(&r, &m, 0, &b);
  cprof__buf_putc(&b, '\0');
  CHECK(strncmp(b.data, "{\"interval_ms\":1000,\"window_s\":4,\"start_ms\":123,", 47) == 0);
  CHECK_EQ_STR(series(b.data, "t", s, sizeof s), "3000,4000,5000,6000");
  CHECK_EQ_STR(series(b.data, "rss_bytes", s, sizeof s), "1002,1003,1004,1005");
  /* The oldest point held has no rate: 0; then per second. */
  CHECK_EQ_STR(series(b.data, "cpu_user_pct", s, sizeof s), "0,50,50,50");
  CHECK_EQ_STR(series(b.data, "cpu_system_pct", s, sizeof s), "0,10,10,10");
  CHECK_EQ_STR(series(b.data, "alloc_bytes_per_s", s, sizeof s), "0,4096,4096,4096");
  CHECK_EQ_STR(series(b.data, "ctx_voluntary_per_s", s, sizeof s), "0,10,10,10");
  CHECK_EQ_STR(series(b.data, "faults_major_per_s", s, sizeof s), "0,0,0,0");
  CHECK_EQ_STR(series(b.data, "cprof_serve_ms_per_s", s, sizeof s), "0,2,2,2");
  CHECK_EQ_STR(series(b.data, "read_bytes_per_s", s, sizeof s), "null,null,null,null");
  CHECK_EQ_STR(series(b.data, "cprof_memory_bytes", s, sizeof s), "65536,65536,65536,65536");
  const char *names[] = {"cpu_user_pct",
                         "cpu_system_pct",
                         "rss_bytes",
                         "rss_peak_bytes",
                         "vm_bytes",
                         "heap_inuse_bytes",
                         "alloc_bytes_per_s",
                         "threads",
                         "open_fds",
                         "ctx_voluntary_per_s",
                         "ctx_involuntary_per_s",
                         "faults_minor_per_s",
                         "faults_major_per_s",
                         "read_bytes_per_s",
                         "write_bytes_per_s",
                         "cprof_samples_per_s",
                         "cprof_dropped_per_s",
                         "cprof_memory_bytes",
                         "cprof_serve_ms_per_s"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    CHECK(strcmp(series(b.data, names[i], s, sizeof s), "(absent)") != 0);
  cprof__buf_free(&b);

  /* since: only newer points, their rates still from the point before. */
  cprof__buf_init(&b);
  cprof__metrics_json(&r, &m, 4000, &b);
  cprof__buf_putc(&b, '\0');
  CHECK_EQ_STR(series(b.data, "t", s, sizeof s), "5000,6000");
  CHECK_EQ_STR(series(b.data, "cpu_user_pct", s, sizeof s), "50,50");
  cprof__buf_free(&b);

  /* Nothing newer: empty arrays. */
  cprof__buf_init(&b);
  cprof__metrics_json(&r, &m, 6000, &b);
  cprof__buf_putc(&b, '\0');
  CHECK_EQ_STR(series(b.data, "t", s, sizeof s), "");
  CHECK_EQ_STR(series(b.data, "threads", s, sizeof s), "");
  cprof__buf_free(&b);
}

static void test_rate_edges(void) {
  cprof__metrics_point_t v[3];
  cprof__metrics_ring_t r;
  cprof__metrics_ring_init(&r, v, 3);
  cprof__metrics_point_t a = point(1000, 10), b2 = point(1500, 12), c = point(2500, 11);
  cprof__metrics_ring_push(&r, &a);
  cprof__metrics_ring_push(&r, &b2); /* half a second: rates double */
  cprof__metrics_ring_push(&r, &c);  /* a counter going back: 0, never negative */
  cprof__metrics_meta_t m = {1000, 3, 0};
  cprof__buf_t b;
  char s[256];
  cprof__buf_init(&b);
  cprof__metrics_json(&r, &m, 0, &b);
  cprof__buf_putc(&b, '\0');
  CHECK_EQ_STR(series(b.data, "ctx_voluntary_per_s", s, sizeof s), "0,40,0");
  CHECK_EQ_STR(series(b.data, "cpu_user_pct", s, sizeof s), "0,200,0");
  cprof__buf_free(&b);
}

static void test_prometheus(void) {
  cprof__metrics_point_t p = point(5000, 4);
  cprof__metrics_meta_t m = {1000, 600, 1700000000123};
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__metrics_prometheus(&p, &m, 1024, -1, &b);
  cprof__buf_putc(&b, '\0');
  CHECK(
      strstr(b.data, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 2.4\n"));
  CHECK(strstr(b.data, "\nprocess_resident_memory_bytes 1004\n"));
  CHECK(strstr(b.data, "\nprocess_max_fds 1024\n"));
  CHECK(strstr(b.data, "\nprocess_virtual_memory_max_bytes -1\n"));
  CHECK(strstr(b.data, "\nprocess_start_time_seconds 1700000000.12\n") ||
        strstr(b.data, "\nprocess_start_time_seconds 1700000000.123\n"));
  CHECK(strstr(b.data, "\ncprof_context_switches_total{kind=\"voluntary\"} 40\n"));
  CHECK(strstr(b.data, "\ncprof_page_faults_total{kind=\"minor\"} 400\n"));
  /* /proc/self/io unreadable: absent, not 0. */
  CHECK(!strstr(b.data, "cprof_io_read_bytes_total"));
  CHECK(strstr(b.data, "# HELP process_threads "));
  cprof__buf_free(&b);
}

int main(void) {
  test_wrap();
  test_json();
  test_rate_edges();
  test_prometheus();
  return check_result("test_ring");
}
