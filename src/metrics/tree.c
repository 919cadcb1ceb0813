#include "metrics/tree.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

size_t cprof__metrics_tree_size(size_t cap) {
  return sizeof(cprof__metrics_tree_t) + cap * sizeof(cprof__metrics_tree_point_t);
}

void cprof__metrics_tree_init(cprof__metrics_tree_t *t, size_t cap, int32_t owner) {
  t->owner = owner;
  t->cap = cap;
  t->n = t->next = 0;
  t->nlast = t->processes = 0;
  t->t_ms = 0;
}

static const cprof__metrics_tree_point_t *at(const cprof__metrics_tree_t *t, size_t i) {
  return &t->v[(t->next + t->cap - t->n + i) % t->cap];
}

static void remember_name(cprof__metrics_tree_t *t, int32_t pid, const char *name, int64_t t_ms) {
  size_t oldest = 0;
  for (size_t i = 0; i < CPROF_METRICS_TREE_NAMES; i++) {
    cprof__metrics_tree_name_t *e = &t->names[i];
    if (e->pid == pid) {
      oldest = i;
      break;
    }
    if (e->seen_ms < t->names[oldest].seen_ms)
      oldest = i;
  }
  cprof__metrics_tree_name_t *e = &t->names[oldest];
  e->pid = pid;
  e->seen_ms = t_ms;
  snprintf(e->name, sizeof e->name, "%s", name);
}

static const char *name_of(const cprof__metrics_tree_t *t, int32_t pid) {
  for (size_t i = 0; i < CPROF_METRICS_TREE_NAMES; i++)
    if (t->names[i].pid == pid)
      return t->names[i].name;
  return "";
}

void cprof__metrics_tree_push(cprof__metrics_tree_t *t, int64_t t_ms,
                              const cprof__tree_figures_t *f, int n, int processes) {
  if (n > CPROF_METRICS_TREE_MAX)
    n = CPROF_METRICS_TREE_MAX;
  memcpy(t->last, f, (size_t)n * sizeof *f);
  t->nlast = n;
  t->processes = processes;
  t->t_ms = t_ms;
  for (int i = 0; i < n; i++)
    remember_name(t, (int32_t)f[i].pid, f[i].name, t_ms);
  if (!t->cap)
    return;
  cprof__metrics_tree_point_t *p = &t->v[t->next];
  p->t_ms = t_ms;
  p->n = n;
  p->processes = processes;
  for (int i = 0; i < n; i++) {
    p->p[i].pid = (int32_t)f[i].pid;
    p->p[i].threads = (int32_t)f[i].threads;
    p->p[i].cpu_us = f[i].cpu_user_us >= 0 && f[i].cpu_system_us >= 0
                         ? f[i].cpu_user_us + f[i].cpu_system_us
                         : -1;
    p->p[i].rss_bytes = f[i].rss_bytes;
  }
  t->next = (t->next + 1) % t->cap;
  if (t->n < t->cap)
    t->n++;
}

/* ---- the charts' JSON ---- */

static const cprof__metrics_proc_t *find(const cprof__metrics_tree_point_t *p, int32_t pid) {
  for (int32_t i = 0; i < p->n; i++)
    if (p->p[i].pid == pid)
      return &p->p[i];
  return NULL;
}

/* A number with at most 3 decimals, no trailing zeros, no exponent. */
static void put_number(cprof__buf_t *b, double x) {
  char s[64];
  if (!isfinite(x))
    x = 0;
  snprintf(s, sizeof s, "%.3f", x);
  char *end = s + strlen(s);
  while (end[-1] == '0')
    *--end = '\0';
  if (end[-1] == '.')
    *--end = '\0';
  cprof__buf_puts(b, strcmp(s, "-0") == 0 ? "0" : s);
}

/* A JSON string's body: quotes, backslashes and control characters
 * escaped (a process may name itself anything). */
static void put_json_string(cprof__buf_t *b, const char *s) {
  cprof__buf_putc(b, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      cprof__buf_printf(b, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      cprof__buf_printf(b, "\\u%04x", c);
    else
      cprof__buf_putc(b, (char)c);
  }
  cprof__buf_putc(b, '"');
}

enum what { CPU_CORES, RSS, THREADS };

/* Process pid's cores at the i-th point (from the one before), or -1
 * when it was not in both. i is an index of the ring. */
static double cores(const cprof__metrics_tree_t *t, size_t i, int32_t pid) {
  if (i == 0)
    return find(at(t, 0), pid) ? 0 : -1;
  const cprof__metrics_tree_point_t *p = at(t, i), *q = at(t, i - 1);
  const cprof__metrics_proc_t *a = find(p, pid), *b = find(q, pid);
  if (!a || !b || a->cpu_us < 0 || b->cpu_us < 0)
    return -1;
  int64_t dt_ms = p->t_ms - q->t_ms;
  if (dt_ms <= 0 || a->cpu_us < b->cpu_us)
    return 0;
  return (double)(a->cpu_us - b->cpu_us) / 1000.0 / (double)dt_ms;
}

static double value(const cprof__metrics_tree_t *t, size_t i, int32_t pid, enum what w) {
  if (w == CPU_CORES)
    return cores(t, i, pid);
  const cprof__metrics_proc_t *a = find(at(t, i), pid);
  if (!a)
    return -1;
  return w == RSS ? (double)a->rss_bytes : (double)a->threads;
}

static void put_series(cprof__buf_t *b, const cprof__metrics_tree_t *t, size_t first, int32_t pid,
                       enum what w) {
  cprof__buf_putc(b, '[');
  for (size_t i = first; i < t->n; i++) {
    if (i > first)
      cprof__buf_putc(b, ',');
    double v = value(t, i, pid, w);
    if (v < 0)
      cprof__buf_puts(b, "null");
    else
      put_number(b, v);
  }
  cprof__buf_putc(b, ']');
}

static void put_total(cprof__buf_t *b, const cprof__metrics_tree_t *t, size_t first, enum what w) {
  cprof__buf_putc(b, '[');
  for (size_t i = first; i < t->n; i++) {
    if (i > first)
      cprof__buf_putc(b, ',');
    const cprof__metrics_tree_point_t *p = at(t, i);
    double sum = 0;
    for (int32_t k = 0; k < p->n; k++) {
      double v = value(t, i, p->p[k].pid, w);
      if (v > 0)
        sum += v;
    }
    put_number(b, sum);
  }
  cprof__buf_putc(b, ']');
}

int cprof__metrics_tree_json(const cprof__metrics_tree_t *t, int64_t since_ms, const char *lead,
                             cprof__buf_t *out) {
  size_t first = 0;
  while (first < t->n && at(t, first)->t_ms <= since_ms)
    first++;
  if (first >= t->n)
    return 0;
  cprof__buf_puts(out, lead);
  cprof__buf_printf(out, "\"tree\":{\"owner\":%d,\"t\":[", (int)t->owner);
  for (size_t i = first; i < t->n; i++)
    cprof__buf_printf(out, "%s%" PRId64, i > first ? "," : "", at(t, i)->t_ms);
  cprof__buf_puts(out, "],\n\"totals\":{\"processes\":[");
  for (size_t i = first; i < t->n; i++)
    cprof__buf_printf(out, "%s%d", i > first ? "," : "", (int)at(t, i)->processes);
  cprof__buf_puts(out, "],\"cpu_cores\":");
  put_total(out, t, first, CPU_CORES);
  cprof__buf_puts(out, ",\"rss_bytes\":");
  put_total(out, t, first, RSS);
  cprof__buf_puts(out, ",\"threads\":");
  put_total(out, t, first, THREADS);
  cprof__buf_puts(out, "},\n\"processes\":[");
  /* Every pid of the points shown, in the order they came: the owner
   * first, then as each appeared (by pid within a point). */
  int32_t seen[CPROF_METRICS_TREE_NAMES];
  size_t nseen = 0;
  for (size_t i = first; i < t->n && nseen < CPROF_METRICS_TREE_NAMES; i++) {
    const cprof__metrics_tree_point_t *p = at(t, i);
    for (int32_t k = 0; k < p->n && nseen < CPROF_METRICS_TREE_NAMES; k++) {
      size_t j = 0;
      while (j < nseen && seen[j] != p->p[k].pid)
        j++;
      if (j == nseen)
        seen[nseen++] = p->p[k].pid;
    }
  }
  for (size_t j = 0; j < nseen; j++) {
    cprof__buf_printf(out, "%s\n{\"pid\":%d,\"name\":", j ? "," : "", (int)seen[j]);
    put_json_string(out, name_of(t, seen[j]));
    cprof__buf_puts(out, ",\"cpu_cores\":");
    put_series(out, t, first, seen[j], CPU_CORES);
    cprof__buf_puts(out, ",\"rss_bytes\":");
    put_series(out, t, first, seen[j], RSS);
    cprof__buf_puts(out, ",\"threads\":");
    put_series(out, t, first, seen[j], THREADS);
    cprof__buf_putc(out, '}');
  }
  cprof__buf_puts(out, "]}");
  return 1;
}

/* ---- Prometheus ---- */

static void header(cprof__buf_t *b, const char *name, const char *type, const char *help) {
  cprof__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value's body: backslash, quote and newline escaped (the text
 * format's rules). */
static void put_label(cprof__buf_t *b, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      cprof__buf_printf(b, "\\%c", *s);
    else if (*s == '\n')
      cprof__buf_puts(b, "\\n");
    else
      cprof__buf_putc(b, *s);
  }
}

static void labels(cprof__buf_t *b, const cprof__tree_figures_t *f, const char *kind) {
  cprof__buf_printf(b, "{pid=\"%d\",name=\"", (int)f->pid);
  put_label(b, f->name);
  cprof__buf_putc(b, '"');
  if (kind)
    cprof__buf_printf(b, ",kind=\"%s\"", kind);
  cprof__buf_putc(b, '}');
}

static void put_seconds(cprof__buf_t *b, int64_t us) {
  char s[64];
  snprintf(s, sizeof s, "%.6f", (double)us / 1e6);
  char *end = s + strlen(s);
  while (end[-1] == '0')
    *--end = '\0';
  if (end[-1] == '.')
    *--end = '\0';
  cprof__buf_puts(b, s);
}

/* A figure of every process that has it, at offset field of its figures;
 * nothing when none has. */
#define FIELD(f) offsetof(cprof__tree_figures_t, f)
static int64_t field_of(const cprof__tree_figures_t *f, size_t field) {
  int64_t v;
  memcpy(&v, (const char *)f + field, sizeof v);
  return v;
}

static void per_process(cprof__buf_t *b, const cprof__metrics_tree_t *t, const char *name,
                        const char *type, const char *help, size_t field) {
  int any = 0;
  for (int i = 0; i < t->nlast; i++) {
    int64_t v = field_of(&t->last[i], field);
    if (v < 0)
      continue;
    if (!any++)
      header(b, name, type, help);
    cprof__buf_puts(b, name);
    labels(b, &t->last[i], NULL);
    cprof__buf_printf(b, " %" PRId64 "\n", v);
  }
}

/* One counter in two kinds (kind="..."), as cprof's own switches and
 * faults. */
static void per_process_kinds(cprof__buf_t *b, const cprof__metrics_tree_t *t, const char *name,
                              const char *help, const char *k1, size_t f1, const char *k2,
                              size_t f2) {
  int any = 0;
  for (int i = 0; i < t->nlast; i++) {
    int64_t v1 = field_of(&t->last[i], f1), v2 = field_of(&t->last[i], f2);
    if (v1 < 0 || v2 < 0)
      continue;
    if (!any++)
      header(b, name, "counter", help);
    cprof__buf_puts(b, name);
    labels(b, &t->last[i], k1);
    cprof__buf_printf(b, " %" PRId64 "\n", v1);
    cprof__buf_puts(b, name);
    labels(b, &t->last[i], k2);
    cprof__buf_printf(b, " %" PRId64 "\n", v2);
  }
}

void cprof__metrics_tree_prometheus(const cprof__metrics_tree_t *t, cprof__buf_t *b) {
  if (!t->nlast)
    return;
  int64_t rss = 0, threads = 0;
  for (int i = 0; i < t->nlast; i++) {
    rss += t->last[i].rss_bytes > 0 ? t->last[i].rss_bytes : 0;
    threads += t->last[i].threads > 0 ? t->last[i].threads : 0;
  }
  header(b, "cprof_tree_processes", "gauge",
         "Processes in the process tree this process owns, itself included.");
  cprof__buf_printf(b, "cprof_tree_processes %d\n", (int)t->processes);
  header(b, "cprof_tree_resident_memory_bytes", "gauge",
         "Resident memory size in bytes, summed over the tree's processes.");
  cprof__buf_printf(b, "cprof_tree_resident_memory_bytes %" PRId64 "\n", rss);
  header(b, "cprof_tree_threads", "gauge", "OS threads, summed over the tree's processes.");
  cprof__buf_printf(b, "cprof_tree_threads %" PRId64 "\n", threads);

  int any = 0;
  for (int i = 0; i < t->nlast; i++) {
    const cprof__tree_figures_t *f = &t->last[i];
    if (f->cpu_user_us < 0 || f->cpu_system_us < 0)
      continue;
    if (!any++)
      header(b, "cprof_tree_process_cpu_seconds_total", "counter",
             "CPU time of a process of the tree in seconds, user and system (/proc/PID/stat).");
    static const char *const kinds[] = {"user", "system"};
    for (int k = 0; k < 2; k++) {
      cprof__buf_puts(b, "cprof_tree_process_cpu_seconds_total");
      labels(b, f, kinds[k]);
      cprof__buf_putc(b, ' ');
      put_seconds(b, k ? f->cpu_system_us : f->cpu_user_us);
      cprof__buf_putc(b, '\n');
    }
  }
  per_process(b, t, "cprof_tree_process_resident_memory_bytes", "gauge",
              "Resident memory size in bytes of a process of the tree.", FIELD(rss_bytes));
  per_process(b, t, "cprof_tree_process_virtual_memory_bytes", "gauge",
              "Virtual memory size in bytes of a process of the tree.", FIELD(vm_bytes));
  per_process(b, t, "cprof_tree_process_threads", "gauge",
              "Number of OS threads in a process of the tree.", FIELD(threads));
  per_process(b, t, "cprof_tree_process_open_fds", "gauge",
              "Open file descriptors of a process of the tree (when it may be read).",
              FIELD(open_fds));
  per_process_kinds(b, t, "cprof_tree_process_page_faults_total",
                    "Page faults of every thread of a process of the tree.", "minor",
                    FIELD(faults_minor), "major", FIELD(faults_major));
  per_process_kinds(b, t, "cprof_tree_process_context_switches_total",
                    "Context switches of the main thread of a process of the tree "
                    "(/proc/PID/status).",
                    "voluntary", FIELD(ctx_voluntary), "involuntary", FIELD(ctx_involuntary));
  per_process(b, t, "cprof_tree_process_io_read_bytes_total", "counter",
              "Bytes a process of the tree read through system calls (/proc/PID/io rchar, "
              "when it may be read).",
              FIELD(read_bytes));
  per_process(b, t, "cprof_tree_process_io_written_bytes_total", "counter",
              "Bytes a process of the tree wrote through system calls (/proc/PID/io wchar, "
              "when it may be read).",
              FIELD(write_bytes));
}
