/* A process tree's points (metrics/tree.c): processes come and go and
 * their series follow (null where a process was not there, no rate at its
 * first point), the totals are the sums, the ring wraps, since= selects,
 * names are escaped for JSON and for Prometheus, and the exposition holds
 * a family per figure with HELP and TYPE. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "metrics/tree.h"

static cprof__tree_figures_t fig(pid_t pid, const char *name, int64_t cpu_us, int64_t rss) {
  cprof__tree_figures_t f;
  memset(&f, 0, sizeof f);
  f.pid = pid;
  snprintf(f.name, sizeof f.name, "%s", name);
  f.cpu_user_us = cpu_us;
  f.cpu_system_us = 0;
  f.rss_bytes = rss;
  f.vm_bytes = 10 * rss;
  f.threads = 2;
  f.faults_minor = 5;
  f.faults_major = 0;
  f.ctx_voluntary = 7;
  f.ctx_involuntary = 1;
  f.read_bytes = f.write_bytes = -1; /* /proc/PID/io unreadable */
  f.open_fds = 4;
  return f;
}

static cprof__metrics_tree_t *make(size_t cap) {
  cprof__metrics_tree_t *t = calloc(1, cprof__metrics_tree_size(cap));
  cprof__metrics_tree_init(t, cap, 100);
  return t;
}

/* The text from `from` up to the next ']' (a series), or "(absent)". */
static const char *between(const char *json, const char *from, char *out, size_t len) {
  const char *s = strstr(json, from);
  if (!s)
    return "(absent)";
  s += strlen(from);
  const char *e = strchr(s, ']');
  snprintf(out, len, "%.*s", (int)(e - s), s);
  return out;
}

static void test_json(void) {
  cprof__metrics_tree_t *t = make(8);
  /* The owner (100) idle, worker 101 at half a core throughout, worker 102
   * from the second point, worker 101 gone at the fourth. */
  cprof__tree_figures_t f[3];
  f[0] = fig(100, "master", 0, 1000);
  f[1] = fig(101, "worker", 0, 2000);
  cprof__metrics_tree_push(t, 1000, f, 2, 2);
  f[1] = fig(101, "worker", 500000, 2000);
  f[2] = fig(102, "worker", 100000, 3000);
  cprof__metrics_tree_push(t, 2000, f, 3, 3);
  f[1] = fig(101, "worker", 1000000, 2000);
  f[2] = fig(102, "worker", 350000, 3000);
  cprof__metrics_tree_push(t, 3000, f, 3, 3);
  f[1] = fig(102, "worker", 600000, 3000);
  cprof__metrics_tree_push(t, 4000, f, 2, 2);

  cprof__buf_t b;
  char s[256];
  cprof__buf_init(&b);
  CHECK_EQ_INT(cprof__metrics_tree_json(t, 0, ",\n", &b), 1);
  cprof__buf_putc(&b, '\0');
  CHECK(strncmp(b.data, ",\n\"tree\":{\"owner\":100,", 22) == 0);
  CHECK_EQ_STR(between(b.data, "\"t\":[", s, sizeof s), "1000,2000,3000,4000");
  CHECK_EQ_STR(between(b.data, "\"processes\":[", s, sizeof s), "2,3,3,2");
  CHECK_EQ_STR(between(b.data, "\"totals\":{\"processes\":[2,3,3,2],\"cpu_cores\":[", s, sizeof s),
               "0,0.5,0.75,0.25");
  CHECK_EQ_STR(between(b.data, "],\"rss_bytes\":[", s, sizeof s), "3000,6000,6000,4000");
  CHECK_EQ_STR(between(b.data, "{\"pid\":101,\"name\":\"worker\",\"cpu_cores\":[", s, sizeof s),
               "0,0.5,0.5,null");
  CHECK_EQ_STR(between(b.data, "{\"pid\":102,\"name\":\"worker\",\"cpu_cores\":[", s, sizeof s),
               "null,null,0.25,0.25");
  /* The owner first, then as they came. */
  const char *p100 = strstr(b.data, "{\"pid\":100,"), *p101 = strstr(b.data, "{\"pid\":101,"),
             *p102 = strstr(b.data, "{\"pid\":102,");
  CHECK(p100 && p101 && p102 && p100 < p101 && p101 < p102);

  /* since=: the points after it; nothing at all past the last. */
  b.len = 0;
  CHECK_EQ_INT(cprof__metrics_tree_json(t, 2000, "", &b), 1);
  cprof__buf_putc(&b, '\0');
  CHECK_EQ_STR(between(b.data, "\"t\":[", s, sizeof s), "3000,4000");
  /* A rate at the first point shown still comes from the point before. */
  CHECK_EQ_STR(between(b.data, "{\"pid\":101,\"name\":\"worker\",\"cpu_cores\":[", s, sizeof s),
               "0.5,null");
  b.len = 0;
  CHECK_EQ_INT(cprof__metrics_tree_json(t, 4000, ",", &b), 0);
  CHECK_EQ_INT(b.len, 0);
  cprof__buf_free(&b);
  free(t);
}

static void test_wrap_and_names(void) {
  cprof__metrics_tree_t *t = make(3);
  cprof__tree_figures_t f[2];
  f[0] = fig(100, "a\"b\\c", 0, 1);
  for (int k = 0; k < 5; k++) {
    f[1] = fig(200 + k, "w", 0, 1);
    cprof__metrics_tree_push(t, 1000 * (k + 1), f, 2, 2);
  }
  CHECK_EQ_INT(t->n, 3);
  cprof__buf_t b;
  char s[256];
  cprof__buf_init(&b);
  cprof__metrics_tree_json(t, 0, "", &b);
  cprof__buf_putc(&b, '\0');
  CHECK_EQ_STR(between(b.data, "\"t\":[", s, sizeof s), "3000,4000,5000");
  CHECK(strstr(b.data, "{\"pid\":100,\"name\":\"a\\\"b\\\\c\","));
  CHECK(!strstr(b.data, "\"pid\":201,"));
  CHECK(strstr(b.data, "\"pid\":204,"));
  cprof__buf_free(&b);
  free(t);
}

static void test_prometheus(void) {
  cprof__metrics_tree_t *t = make(4);
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__metrics_tree_prometheus(t, &b);
  CHECK_EQ_INT(b.len, 0); /* no point: nothing */
  cprof__tree_figures_t f[2] = {fig(100, "nginx", 250000, 4096),
                                fig(101, "ngi\"nx\n", 1500000, 8192)};
  f[1].cpu_system_us = 20000;
  cprof__metrics_tree_push(t, 1000, f, 2, 5); /* 5 in the tree, 2 read */
  cprof__metrics_tree_prometheus(t, &b);
  cprof__buf_putc(&b, '\0');
  CHECK(strstr(b.data, "# TYPE cprof_tree_processes gauge\ncprof_tree_processes 5\n"));
  CHECK(strstr(b.data, "\ncprof_tree_resident_memory_bytes 12288\n"));
  CHECK(strstr(b.data, "\ncprof_tree_threads 4\n"));
  CHECK(strstr(b.data, "# TYPE cprof_tree_process_cpu_seconds_total counter\n"));
  CHECK(strstr(
      b.data,
      "\ncprof_tree_process_cpu_seconds_total{pid=\"100\",name=\"nginx\",kind=\"user\"} 0.25\n"));
  CHECK(strstr(b.data, "\ncprof_tree_process_cpu_seconds_total{pid=\"101\",name=\"ngi\\\"nx\\n\","
                       "kind=\"system\"} 0.02\n"));
  CHECK(strstr(b.data,
               "\ncprof_tree_process_resident_memory_bytes{pid=\"101\",name=\"ngi\\\"nx\\n\"} "
               "8192\n"));
  CHECK(strstr(b.data, "\ncprof_tree_process_page_faults_total{pid=\"100\",name=\"nginx\","
                       "kind=\"minor\"} 5\n"));
  /* /proc/PID/io unreadable: absent, not 0. */
  CHECK(!strstr(b.data, "cprof_tree_process_io_read_bytes_total"));
  /* Every family's samples together, under one HELP and TYPE. */
  CHECK(strstr(b.data, "# HELP cprof_tree_process_threads ") &&
        !strstr(strstr(b.data, "# HELP cprof_tree_process_threads ") + 1,
                "# HELP cprof_tree_process_threads "));
  cprof__buf_free(&b);
  free(t);
}

int main(void) {
  test_json();
  test_wrap_and_names();
  test_prometheus();
  return check_result("test_tree");
}
