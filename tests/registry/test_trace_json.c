/* The trace's JSON writer (registry/trace_json.h) on made-up events:
 * strings escaped, regions nested, an end without its begin starting at
 * the trace's start, a region open at the end running to it, a task that
 * ends on another thread (its end handed out first), logs, lock waits,
 * thread starts, and the dropped count; CPU samples named for the
 * function they ran in, with their stacks, and counters. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "registry/trace_json.h"
#include "unwind/pc.h"

#define T0 1000000000LL /* the trace's start, ns */
#define T1 1002000000LL /* its end: 2 ms later */

static cprof__trace_rec_t rec(pid_t tid, const char *thread, int kind, int64_t ts, uint64_t id,
                              uint64_t dur, const char *s1, const char *s2) {
  return (cprof__trace_rec_t){.tid = tid,
                              .thread = thread,
                              .ts = ts,
                              .kind = kind,
                              .id = id,
                              .dur = dur,
                              .s1 = s1 ? s1 : "",
                              .s2 = s2 ? s2 : ""};
}

/* A function of this program's for a CPU sample's stack to name. */
__attribute__((noinline)) int traced_hot(int x) { return x * 3 + 1; }

static int has(const char *text, const char *want) {
  if (strstr(text, want))
    return 1;
  fprintf(stderr, "missing: %s\n", want);
  return 0;
}

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
    n++;
  return n;
}

int main(void) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  cprof__trace_json_t j;
  cprof__trace_json_init(&j, &out, 42, "prog\"x", T0, T1);
  cprof__trace_rec_t r[] = {
      /* Thread 7: an end whose begin came before the trace, then outer
       * (inner nested), then a region left open. */
      rec(7, "work\ter", CPROF__TRACE_REGION_END, T0 + 100000, 0, 0, "early", NULL),
      rec(7, "work\ter", CPROF__TRACE_REGION_BEGIN, T0 + 200000, 0, 0, "outer", NULL),
      rec(7, "work\ter", CPROF__TRACE_REGION_BEGIN, T0 + 300000, 0, 0, "in\"ner\\", NULL),
      rec(7, "work\ter", CPROF__TRACE_REGION_END, T0 + 400500, 0, 0, "in\"ner\\", NULL),
      rec(7, "work\ter", CPROF__TRACE_REGION_END, T0 + 700000, 0, 0, "outer", NULL),
      rec(7, "work\ter", CPROF__TRACE_TASK_END, T0 + 800000, 5, 0, NULL, NULL),
      rec(7, "work\ter", CPROF__TRACE_REGION_BEGIN, T0 + 900000, 0, 0, "left open", NULL),
      /* Thread 8: the task's begin, a log, a lock wait, its start. */
      rec(8, "other", CPROF__TRACE_THREAD_START, T0 + 10000, 0, 0, "other", NULL),
      rec(8, "other", CPROF__TRACE_TASK_BEGIN, T0 + 50000, 5, 0, "job", NULL),
      rec(8, "other", CPROF__TRACE_LOG, T0 + 60000, 0, 0, "cat", "line\nbreak \x01 \xff"),
      rec(8, "other", CPROF__TRACE_LOCK_WAIT, T0 + 70000, 0x1234abcd, 25000, "mutex", NULL),
  };
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
    cprof__trace_json_add(&r[i], &j);
  CHECK_EQ_INT(cprof__trace_json_finish(&j, 17, NULL), 0);
  cprof__buf_putc(&out, '\0');
  const char *s = out.data;

  CHECK(has(s, "{\"traceEvents\":["));
  CHECK(!strstr(s, "displayTimeUnit")); /* Perfetto takes it for the unit of ts */
  CHECK(has(s, "\"otherData\":{\"dropped\":17,"));
  /* Names and metadata, escaped. */
  CHECK(has(s, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":42,\"tid\":42,\"ts\":0.000,"
               "\"args\":{\"name\":\"prog\\\"x\"}}"));
  CHECK(has(s, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":42,\"tid\":7,\"ts\":0.000,"
               "\"args\":{\"name\":\"work\\ter\""));
  CHECK(has(s, "\"name\":\"other\",\"dropped\":0}"));
  /* Regions: the early one from the start, nested ones, the open one to
   * the end (2000 µs - 900 µs). */
  CHECK(has(s, "{\"ph\":\"X\",\"name\":\"early\",\"pid\":42,\"tid\":7,\"ts\":0.000,"
               "\"dur\":100.000,\"cat\":\"region\""));
  CHECK(has(s, "{\"ph\":\"X\",\"name\":\"outer\",\"pid\":42,\"tid\":7,\"ts\":200.000,"
               "\"dur\":500.000,\"cat\":\"region\"}"));
  CHECK(has(s, "{\"ph\":\"X\",\"name\":\"in\\\"ner\\\\\",\"pid\":42,\"tid\":7,\"ts\":300.000,"
               "\"dur\":100.500,\"cat\":\"region\"}"));
  CHECK(has(s, "{\"ph\":\"X\",\"name\":\"left open\",\"pid\":42,\"tid\":7,\"ts\":900.000,"
               "\"dur\":1100.000,\"cat\":\"region\",\"args\":{\"open_at_end\":true}}"));
  /* The task: begun on 8, ended on 7 (handed out first), one id. */
  CHECK(has(s, "{\"ph\":\"b\",\"name\":\"job\",\"pid\":42,\"tid\":8,\"ts\":50.000,"
               "\"cat\":\"task\",\"id\":\"0x5\"}"));
  CHECK(has(s, "{\"ph\":\"e\",\"name\":\"job\",\"pid\":42,\"tid\":7,\"ts\":800.000,"
               "\"cat\":\"task\",\"id\":\"0x5\"}"));
  /* The log, its control bytes and its byte that is not UTF-8. */
  CHECK(has(s, "\"s\":\"t\",\"cat\":\"log\",\"args\":{\"category\":\"cat\","
               "\"message\":\"line\\nbreak \\u0001 \\ufffd\"}}"));
  CHECK(has(s, "{\"ph\":\"X\",\"name\":\"mutex wait\",\"pid\":42,\"tid\":8,\"ts\":70.000,"
               "\"dur\":25.000,\"cat\":\"lock\",\"args\":{\"lock\":\"0x1234abcd\"}}"));
  CHECK(has(s, "{\"ph\":\"i\",\"name\":\"thread start\",\"pid\":42,\"tid\":8,\"ts\":10.000,"
               "\"s\":\"t\",\"cat\":\"thread\",\"args\":{\"name\":\"other\"}}"));
  /* Every event has ph, name, pid, tid and ts; no raw control byte. */
  int events = count(s, "{\"ph\":");
  CHECK_EQ_INT(events, 1 + 2 + 4 + 2 + 1 + 1 + 1);
  CHECK_EQ_INT(count(s, "\"pid\":42,\"tid\":"), events);
  CHECK_EQ_INT(count(s, ",\"ts\":"), events);
  for (const char *p = s; *p; p++)
    if ((unsigned char)*p < 0x20 && *p != '\n')
      CHECK(!"a raw control byte");
  cprof__buf_free(&out);

  /* CPU samples: named for the innermost frame, the stack (innermost
   * first; return addresses looked up one byte before) in args, a mark
   * named as the profiles name it; one outside the trace's span left out.
   * A counter. */
  cprof__buf_init(&out);
  cprof__trace_json_init(&j, &out, 42, NULL, T0, T1);
  uintptr_t pcs[] = {(uintptr_t)traced_hot + 1, (uintptr_t)traced_hot + 2, CPROF_PC_STACK_CUT};
  cprof__trace_rec_t c = rec(9, "burner", CPROF__TRACE_CPU_SAMPLE, T0 + 5000, 0, 0, NULL, NULL);
  c.pcs = pcs;
  c.depth = 3;
  cprof__trace_json_add(&c, &j);
  c.ts = T1 + 1;
  cprof__trace_json_add(&c, &j);
  c.ts = T0 + 6000; /* the same stack again: from the writer's cache */
  cprof__trace_json_add(&c, &j);
  cprof__trace_json_counter(&j, "RSS", "bytes", T0, 4096);
  CHECK_EQ_INT(cprof__trace_json_finish(&j, 0, "recorded by the trace"), 0);
  cprof__buf_putc(&out, '\0');
  CHECK(has(out.data, "{\"ph\":\"i\",\"name\":\"traced_hot\",\"pid\":42,\"tid\":9,\"ts\":5.000,"
                      "\"s\":\"t\",\"cat\":\"cpu\",\"args\":{\"stack\":[\"traced_hot\","
                      "\"traced_hot\",\"[stack cut]\"]}}"));
  CHECK_EQ_INT(count(out.data, "\"cat\":\"cpu\""), 2);
  CHECK_EQ_INT(count(out.data, "\"stack\":[\"traced_hot\",\"traced_hot\",\"[stack cut]\"]"), 2);
  /* A counter at the start itself goes 1 ns after it (trace_json.h). */
  CHECK(has(out.data, "{\"ph\":\"C\",\"name\":\"RSS\",\"pid\":42,\"tid\":0,\"ts\":0.001,"
                      "\"args\":{\"bytes\":4096}}"));
  CHECK(has(out.data, "\"cpu_samples\":\"recorded by the trace\"}"));
  cprof__buf_free(&out);

  /* Nothing recorded: still a document. */
  cprof__buf_init(&out);
  cprof__trace_json_init(&j, &out, 1, NULL, T0, T1);
  CHECK_EQ_INT(cprof__trace_json_finish(&j, 0, "recorded by the trace"), 0);
  cprof__buf_putc(&out, '\0');
  CHECK(has(out.data, "{\"traceEvents\":[\n],\"otherData\":"
                      "{\"dropped\":0,\"duration_us\":2000.000,"));
  cprof__buf_free(&out);
  return check_result("test_trace_json");
}
