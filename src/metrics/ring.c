#include "metrics/ring.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

void cprof__metrics_ring_init(cprof__metrics_ring_t *r, cprof__metrics_point_t *v, size_t cap) {
  r->v = v;
  r->cap = cap;
  r->n = r->next = 0;
}

void cprof__metrics_ring_push(cprof__metrics_ring_t *r, const cprof__metrics_point_t *p) {
  if (!r->cap)
    return;
  r->v[r->next] = *p;
  r->next = (r->next + 1) % r->cap;
  if (r->n < r->cap)
    r->n++;
}

const cprof__metrics_point_t *cprof__metrics_ring_at(const cprof__metrics_ring_t *r, size_t i) {
  return &r->v[(r->next + r->cap - r->n + i) % r->cap];
}

/* How a series comes from a point's field. */
enum kind {
  GAUGE,   /* the value as it is */
  RATE,    /* per second, from the previous point */
  CPU_PCT, /* microseconds of CPU: percent of one core */
  MS_PER_S /* nanoseconds: milliseconds per second */
};

#define FIELD(f) offsetof(cprof__metrics_point_t, f)
static const struct series {
  const char *name;
  size_t field;
  enum kind kind;
} series[] = {
    {"cpu_user_pct", FIELD(cpu_user_us), CPU_PCT},
    {"cpu_system_pct", FIELD(cpu_system_us), CPU_PCT},
    {"rss_bytes", FIELD(rss_bytes), GAUGE},
    {"rss_peak_bytes", FIELD(rss_peak_bytes), GAUGE},
    {"vm_bytes", FIELD(vm_bytes), GAUGE},
    {"heap_inuse_bytes", FIELD(heap_inuse_bytes), GAUGE},
    {"alloc_bytes_per_s", FIELD(heap_alloc_bytes), RATE},
    {"threads", FIELD(threads), GAUGE},
    {"open_fds", FIELD(open_fds), GAUGE},
    {"ctx_voluntary_per_s", FIELD(ctx_voluntary), RATE},
    {"ctx_involuntary_per_s", FIELD(ctx_involuntary), RATE},
    {"faults_minor_per_s", FIELD(faults_minor), RATE},
    {"faults_major_per_s", FIELD(faults_major), RATE},
    {"read_bytes_per_s", FIELD(read_bytes), RATE},
    {"write_bytes_per_s", FIELD(write_bytes), RATE},
    {"cprof_samples_per_s", FIELD(cprof_samples), RATE},
    {"cprof_dropped_per_s", FIELD(cprof_dropped), RATE},
    {"cprof_memory_bytes", FIELD(cprof_memory_bytes), GAUGE},
    {"cprof_serve_ms_per_s", FIELD(cprof_serve_ns), MS_PER_S},
};
#define NSERIES (sizeof series / sizeof series[0])

static int64_t field_of(const cprof__metrics_point_t *p, size_t field) {
  int64_t v;
  memcpy(&v, (const char *)p + field, sizeof v);
  return v;
}

/* A number with at most `decimals` decimals and no trailing zeros:
 * "12.5", "0", never an exponent. */
static void put_fixed(cprof__buf_t *b, double x, int decimals) {
  char s[64];
  if (!isfinite(x))
    x = 0;
  snprintf(s, sizeof s, "%.*f", decimals, x);
  char *dot = strchr(s, '.');
  if (dot) {
    char *end = s + strlen(s);
    while (end > dot + 1 && end[-1] == '0')
      *--end = '\0';
    if (end == dot + 1)
      *dot = '\0';
  }
  if (strcmp(s, "-0") == 0)
    strcpy(s, "0");
  cprof__buf_puts(b, s);
}

static void put_number(cprof__buf_t *b, double x) { put_fixed(b, x, 3); }

/* Series s at the i-th point held: a value, or null when not known. */
static void put_value(cprof__buf_t *b, const cprof__metrics_ring_t *r, const struct series *s,
                      size_t i) {
  const cprof__metrics_point_t *p = cprof__metrics_ring_at(r, i);
  int64_t v = field_of(p, s->field);
  if (v < 0) {
    cprof__buf_puts(b, "null");
    return;
  }
  if (s->kind == GAUGE) {
    cprof__buf_printf(b, "%" PRId64, v);
    return;
  }
  if (i == 0) { /* nothing before it to take a rate from */
    cprof__buf_puts(b, "0");
    return;
  }
  const cprof__metrics_point_t *q = cprof__metrics_ring_at(r, i - 1);
  int64_t u = field_of(q, s->field), dt_ms = p->t_ms - q->t_ms;
  if (u < 0) {
    cprof__buf_puts(b, "null");
    return;
  }
  /* A counter that went back (the heap profile restarted) or a clock
   * that did: no rate rather than a negative one. */
  double d = v > u && dt_ms > 0 ? (double)(v - u) : 0, per_s = dt_ms > 0 ? 1000.0 / dt_ms : 0;
  switch (s->kind) {
  case RATE:
    put_number(b, d * per_s);
    break;
  case CPU_PCT:
    put_number(b, d / 1e6 * per_s * 100);
    break;
  case MS_PER_S:
    put_number(b, d / 1e6 * per_s);
    break;
  default:
    break;
  }
}

void cprof__metrics_json_open(const cprof__metrics_ring_t *r, const cprof__metrics_meta_t *m,
                              int64_t since_ms, cprof__buf_t *out) {
  size_t first = 0;
  while (first < r->n && cprof__metrics_ring_at(r, first)->t_ms <= since_ms)
    first++;
  cprof__buf_printf(out, "{\"interval_ms\":%ld,\"window_s\":%ld,\"start_ms\":%" PRId64 ",\n\"t\":[",
                    m->interval_ms, m->window_s, m->start_ms);
  for (size_t i = first; i < r->n; i++)
    cprof__buf_printf(out, "%s%" PRId64, i > first ? "," : "", cprof__metrics_ring_at(r, i)->t_ms);
  cprof__buf_puts(out, "],\n\"series\":{");
  for (size_t k = 0; k < NSERIES; k++) {
    cprof__buf_printf(out, "%s\n\"%s\":[", k ? "," : "", series[k].name);
    for (size_t i = first; i < r->n; i++) {
      if (i > first)
        cprof__buf_putc(out, ',');
      put_value(out, r, &series[k], i);
    }
    cprof__buf_putc(out, ']');
  }
  cprof__buf_putc(out, '}');
}

void cprof__metrics_json(const cprof__metrics_ring_t *r, const cprof__metrics_meta_t *m,
                         int64_t since_ms, cprof__buf_t *out) {
  cprof__metrics_json_open(r, m, since_ms, out);
  cprof__buf_puts(out, "}\n");
}

static void header(cprof__buf_t *b, const char *name, const char *type, const char *help) {
  cprof__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One metric without labels; nothing when the figure is not known. */
static void metric(cprof__buf_t *b, const char *name, const char *type, const char *help,
                   int64_t v) {
  if (v < 0)
    return;
  header(b, name, type, help);
  cprof__buf_printf(b, "%s %" PRId64 "\n", name, v);
}

static void metric_seconds(cprof__buf_t *b, const char *name, const char *type, const char *help,
                           double v) {
  header(b, name, type, help);
  cprof__buf_printf(b, "%s ", name);
  put_fixed(b, v, 6);
  cprof__buf_putc(b, '\n');
}

/* One counter in two kinds, as the label kind="...": nothing when either
 * figure is not known. */
static void metric_kinds(cprof__buf_t *b, const char *name, const char *help, const char *k1,
                         int64_t v1, const char *k2, int64_t v2) {
  if (v1 < 0 || v2 < 0)
    return;
  header(b, name, "counter", help);
  cprof__buf_printf(b, "%s{kind=\"%s\"} %" PRId64 "\n", name, k1, v1);
  cprof__buf_printf(b, "%s{kind=\"%s\"} %" PRId64 "\n", name, k2, v2);
}

void cprof__metrics_prometheus(const cprof__metrics_point_t *p, const cprof__metrics_meta_t *m,
                               int64_t max_fds, int64_t max_vm, cprof__buf_t *b) {
  /* The process collector's names and help texts (client_golang's). */
  if (p->cpu_user_us >= 0 && p->cpu_system_us >= 0)
    metric_seconds(b, "process_cpu_seconds_total", "counter",
                   "Total user and system CPU time spent in seconds.",
                   (double)(p->cpu_user_us + p->cpu_system_us) / 1e6);
  metric(b, "process_open_fds", "gauge", "Number of open file descriptors.", p->open_fds);
  metric(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.", max_fds);
  metric(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", p->vm_bytes);
  header(b, "process_virtual_memory_max_bytes", "gauge",
         "Maximum amount of virtual memory available in bytes.");
  cprof__buf_printf(b, "process_virtual_memory_max_bytes %" PRId64 "\n", max_vm < 0 ? -1 : max_vm);
  metric(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         p->rss_bytes);
  if (m->start_ms > 0)
    metric_seconds(b, "process_start_time_seconds", "gauge",
                   "Start time of the process since unix epoch in seconds.",
                   (double)m->start_ms / 1000);
  metric(b, "process_threads", "gauge", "Number of OS threads in the process.", p->threads);

  /* The rest, cprof's. */
  metric(b, "cprof_resident_memory_peak_bytes", "gauge",
         "Peak resident memory size in bytes (VmHWM).", p->rss_peak_bytes);
  metric(b, "cprof_heap_inuse_bytes", "gauge",
         "Heap bytes in use: the heap profile's estimate when it is on, else mallinfo2.",
         p->heap_inuse_bytes);
  metric(b, "cprof_heap_allocated_bytes_total", "counter",
         "Heap bytes allocated, the heap profile's estimate (absent when it is off).",
         p->heap_alloc_bytes);
  metric_kinds(b, "cprof_context_switches_total", "Context switches of every thread.", "voluntary",
               p->ctx_voluntary, "involuntary", p->ctx_involuntary);
  metric_kinds(b, "cprof_page_faults_total", "Page faults of every thread.", "minor",
               p->faults_minor, "major", p->faults_major);
  metric(b, "cprof_io_read_bytes_total", "counter",
         "Bytes read through system calls: files, sockets, pipes (/proc/self/io rchar).",
         p->read_bytes);
  metric(b, "cprof_io_written_bytes_total", "counter",
         "Bytes written through system calls: files, sockets, pipes (/proc/self/io wchar).",
         p->write_bytes);
  metric(b, "cprof_samples_total", "counter", "CPU profile samples taken.", p->cprof_samples);
  metric(b, "cprof_samples_dropped_total", "counter",
         "CPU profile samples dropped (their time is still counted as lost samples).",
         p->cprof_dropped);
  metric(b, "cprof_memory_bytes", "gauge",
         "Memory of cprof's own: the samplers' stack tables and the metrics ring.",
         p->cprof_memory_bytes);
  if (p->cprof_serve_ns >= 0)
    metric_seconds(b, "cprof_serve_seconds_total", "counter",
                   "CPU time spent serving requests, in seconds.", (double)p->cprof_serve_ns / 1e9);
  metric_seconds(b, "cprof_metrics_interval_seconds", "gauge",
                 "How often the metrics sampler records a point.", (double)m->interval_ms / 1000);
}
