/* The trace as Chrome Trace Event JSON: see trace_json.h.
 *
 * Events come thread by thread, so a thread's regions are matched with a
 * stack that lives only while its thread is read; a thread's regions still
 * open when the next thread comes run to the trace's end. Tasks cross
 * threads: a task's end may come before its begin, so begins are kept by
 * id and ends without a begin yet wait until the end, for their name. */
#include "registry/trace_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/marks.h"
#include "unwind/pc.h"

/* Grows *arr (of *cap elements of size) to hold n+1. 0 or -1. */
static int grow(void **arr, int *cap, int n, size_t size) {
  if (n < *cap)
    return 0;
  int c = *cap ? *cap * 2 : 16;
  void *p = realloc(*arr, (size_t)c * size);
  if (!p)
    return -1;
  *arr = p;
  *cap = c;
  return 0;
}

/* s as a JSON string, quotes included: control bytes, quotes and
 * backslashes escaped, and bytes that are not UTF-8 replaced by U+FFFD
 * (the API cuts strings at UTF-8 boundaries, but a program may hand in
 * anything, and a thread's name is whatever it set). */
static void put_string(cprof__buf_t *b, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  cprof__buf_putc(b, '"');
  while (*p) {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      cprof__buf_putc(b, '\\');
      cprof__buf_putc(b, (char)c);
      p++;
    } else if (c < 0x20) {
      char esc = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : 0;
      if (esc)
        cprof__buf_printf(b, "\\%c", esc);
      else
        cprof__buf_printf(b, "\\u%04x", c);
      p++;
    } else if (c < 0x80) {
      cprof__buf_putc(b, (char)c);
      p++;
    } else {
      /* A UTF-8 sequence: its length from the lead byte, its tail bytes
       * 10xxxxxx; overlong and surrogate forms are not told apart. */
      int n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
      int ok = n > 0;
      for (int i = 1; ok && i < n; i++)
        ok = (p[i] & 0xc0) == 0x80;
      if (ok) {
        cprof__buf_append(b, p, (size_t)n);
        p += n;
      } else {
        cprof__buf_puts(b, "\\ufffd");
        p++;
      }
    }
  }
  cprof__buf_putc(b, '"');
}

/* Microseconds since the trace's start, with ns precision. */
static void put_ts(cprof__trace_json_t *j, const char *key, int64_t ns) {
  cprof__buf_printf(j->out, ",\"%s\":%.3f", key, (double)(ns - j->start_ns) / 1000.0);
}

/* The start of one event: {"ph":..,"name":..,"pid":..,"tid":..,"ts":..;
 * the caller adds its fields and the closing brace. */
static void event_start(cprof__trace_json_t *j, const char *ph, const char *name, pid_t tid,
                        int64_t ts) {
  cprof__buf_puts(j->out, j->nevents++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
  cprof__buf_puts(j->out, ph);
  cprof__buf_puts(j->out, "\",\"name\":");
  put_string(j->out, name);
  cprof__buf_printf(j->out, ",\"pid\":%d,\"tid\":%d", j->pid, (int)tid);
  put_ts(j, "ts", ts);
}

/* A complete event from begin to end (clipped to the trace). */
static void complete(cprof__trace_json_t *j, const char *name, const char *cat, pid_t tid,
                     int64_t begin, int64_t end) {
  if (begin < j->start_ns)
    begin = j->start_ns;
  if (end < begin)
    end = begin;
  event_start(j, "X", name, tid, begin);
  cprof__buf_printf(j->out, ",\"dur\":%.3f,\"cat\":\"%s\"", (double)(end - begin) / 1000.0, cat);
}

void cprof__trace_json_init(cprof__trace_json_t *j, cprof__buf_t *out, int pid,
                            const char *process_name, int64_t start_ns, int64_t end_ns) {
  memset(j, 0, sizeof *j);
  cprof__buf_init(&j->stack);
  j->out = out;
  j->pid = pid;
  j->start_ns = start_ns;
  j->end_ns = end_ns < start_ns ? start_ns : end_ns;
  cprof__buf_puts(out, "{\"traceEvents\":[");
  if (process_name) {
    event_start(j, "M", "process_name", pid, start_ns);
    cprof__buf_puts(out, ",\"args\":{\"name\":");
    put_string(out, process_name);
    cprof__buf_puts(out, "}}");
  }
}

/* The regions the thread being read still has open run to the end. */
static void close_open(cprof__trace_json_t *j) {
  while (j->nopen > 0) {
    j->nopen--;
    complete(j, j->open[j->nopen].name, "region", j->tid, j->open[j->nopen].ts, j->end_ns);
    cprof__buf_puts(j->out, ",\"args\":{\"open_at_end\":true}}");
  }
}

static const char *task_name(cprof__trace_json_t *j, uint64_t id) {
  for (int i = j->ntasks - 1; i >= 0; i--)
    if (j->tasks[i].id == id)
      return j->tasks[i].name;
  return NULL;
}

static void task_event(cprof__trace_json_t *j, const char *ph, const char *name, uint64_t id,
                       pid_t tid, int64_t ts) {
  event_start(j, ph, name, tid, ts < j->start_ns ? j->start_ns : ts);
  cprof__buf_printf(j->out, ",\"cat\":\"task\",\"id\":\"0x%llx\"}", (unsigned long long)id);
}

static void copy_name(char dst[CPROF_MAX_TRACE_NAME + 1], const char *s, const char *absent) {
  snprintf(dst, CPROF_MAX_TRACE_NAME + 1, "%s", s && s[0] ? s : absent);
}

/* What one pc of a stack names, kept for the next sample with it: the
 * frames' names as JSON strings joined by commas (inlined ones first; ""
 * for a reserved value that names no frame), and the innermost name. A
 * long trace of busy threads repeats the same pcs thousands of times, and
 * symbolizing is most of writing a sample. Direct-mapped. */
#define FRAMES_CACHE 4096

typedef struct cprof__trace_json_frames {
  uintptr_t pc;
  uint64_t key; /* exact, modules and gen, with 1 above them: 0 is an empty entry */
  char *json, *leaf;
} frames_t;

static void frames_free(frames_t *e) {
  free(e->json);
  free(e->leaf);
  memset(e, 0, sizeof *e);
}

/* The entry for pc, symbolized if it is not cached; NULL without memory. */
static const frames_t *frames_of(cprof__trace_json_t *j, uintptr_t pc, int exact, int modules,
                                 uint32_t gen) {
  if (!j->frames && !(j->frames = calloc(FRAMES_CACHE, sizeof *j->frames)))
    return NULL;
  uint64_t key = (uint64_t)1 << 40 | (uint64_t)exact << 34 | (uint64_t)modules << 33 | gen;
  frames_t *e = &j->frames[((pc ^ key) * UINT64_C(0x9e3779b97f4a7c15)) >> 52];
  if (e->key == key && e->pc == pc)
    return e;
  frames_free(e);
  char text[160];
  const char *mark = cprof__mark_name(pc, text, sizeof text);
  cprof__frame_t frames[8];
  int n = 0;
  if (!mark && !cprof__pc_is_mark(pc)) {
    uintptr_t addr = exact ? pc : pc - 1, off;
    int m = modules ? cprof__symbolizer_mapping_then(j->sym, addr, gen)
                    : cprof__symbolizer_mapping_of(j->sym, addr);
    n = m >= 0 ? cprof__symbolize_in(j->sym, m, addr, frames, 8, &off) : 0;
  }
  cprof__buf_t b;
  cprof__buf_init(&b);
  const char *leaf = "";
  for (int i = 0; (mark || !cprof__pc_is_mark(pc)) && i < (n ? n : 1); i++) {
    const char *name = n ? frames[i].function : mark;
    if (!name) {
      snprintf(text, sizeof text, "0x%llx", (unsigned long long)pc);
      name = text;
    }
    if (i)
      cprof__buf_putc(&b, ',');
    put_string(&b, name);
    if (i == 0)
      leaf = name;
  }
  cprof__buf_putc(&b, '\0');
  e->json = b.failed ? NULL : b.data;
  e->leaf = strdup(leaf);
  if (!e->json || !e->leaf) {
    cprof__buf_free(&b);
    e->json = NULL;
    frames_free(e);
    return NULL;
  }
  e->pc = pc;
  e->key = key;
  return e;
}

/* A CPU sample: an instant event named for where it ran, with its stack
 * (innermost first). */
static void cpu_sample(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  if (r->ts < j->start_ns || r->ts > j->end_ns || r->depth <= 0)
    return;
  if (!j->sym && !(j->sym = cprof__symbolizer_acquire())) {
    j->failed = 1;
    return;
  }
  int depth = r->depth, modules = cprof__pc_is_modules(r->pcs[depth - 1]);
  uint32_t gen = modules ? cprof__pc_mark_number(r->pcs[--depth]) : 0;
  const char *leaf = "";
  j->stack.len = 0;
  cprof__buf_putc(&j->stack, '[');
  for (int i = 0; i < depth; i++) {
    const frames_t *e = frames_of(j, r->pcs[i], i == 0, modules, gen);
    if (!e) {
      j->failed = 1;
      return;
    }
    if (!e->json[0])
      continue;
    if (j->stack.len > 1)
      cprof__buf_putc(&j->stack, ',');
    cprof__buf_puts(&j->stack, e->json);
    if (!leaf[0])
      leaf = e->leaf;
  }
  cprof__buf_putc(&j->stack, ']');
  if (j->stack.failed) {
    j->failed = 1;
    return;
  }
  event_start(j, "i", leaf[0] ? leaf : "?", r->tid, r->ts);
  cprof__buf_puts(j->out, ",\"s\":\"t\",\"cat\":\"cpu\",\"args\":{\"stack\":");
  cprof__buf_append(j->out, j->stack.data, j->stack.len);
  cprof__buf_puts(j->out, "}}");
}

/* A new thread's events begin with its name, and how many of its events
 * were dropped. */
static void thread_name(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  close_open(j);
  j->tid = r->tid;
  event_start(j, "M", "thread_name", r->tid, j->start_ns);
  cprof__buf_puts(j->out, ",\"args\":{\"name\":");
  put_string(j->out, r->thread && r->thread[0] ? r->thread : "?");
  cprof__buf_printf(j->out, ",\"dropped\":%llu}}", (unsigned long long)r->thread_dropped);
}

static void region_begin(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  if (grow((void **)&j->open, &j->capopen, j->nopen, sizeof *j->open) != 0) {
    j->failed = 1;
    return;
  }
  j->open[j->nopen].ts = r->ts;
  copy_name(j->open[j->nopen].name, r->s1, "region");
  j->nopen++;
}

static void region_end(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  if (j->nopen > 0) {
    j->nopen--;
    complete(j, j->open[j->nopen].name, "region", r->tid, j->open[j->nopen].ts, r->ts);
    cprof__buf_puts(j->out, "}");
  } else {
    /* Begun before the trace: from the trace's start. */
    complete(j, r->s1 && r->s1[0] ? r->s1 : "region", "region", r->tid, j->start_ns, r->ts);
    cprof__buf_puts(j->out, ",\"args\":{\"begun_before\":true}}");
  }
}

static void task_begin(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  if (grow((void **)&j->tasks, &j->captasks, j->ntasks, sizeof *j->tasks) != 0) {
    j->failed = 1;
    return;
  }
  j->tasks[j->ntasks].id = r->id;
  copy_name(j->tasks[j->ntasks].name, r->s1, "task");
  task_event(j, "b", j->tasks[j->ntasks].name, r->id, r->tid, r->ts);
  j->ntasks++;
}

static void task_end(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  const char *name = task_name(j, r->id);
  if (name) {
    task_event(j, "e", name, r->id, r->tid, r->ts);
  } else if (grow((void **)&j->ends, &j->capends, j->nends, sizeof *j->ends) == 0) {
    j->ends[j->nends++] = (cprof__trace_json_end_t){r->id, r->ts, r->tid};
  } else {
    j->failed = 1;
  }
}

static void log_event(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  event_start(j, "i", r->s2 && r->s2[0] ? r->s2 : r->s1 && r->s1[0] ? r->s1 : "log", r->tid, r->ts);
  cprof__buf_puts(j->out, ",\"s\":\"t\",\"cat\":\"log\",\"args\":{\"category\":");
  put_string(j->out, r->s1 ? r->s1 : "");
  cprof__buf_puts(j->out, ",\"message\":");
  put_string(j->out, r->s2 ? r->s2 : "");
  cprof__buf_puts(j->out, "}}");
}

static void lock_wait(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  char name[CPROF_MAX_TRACE_NAME + 16];
  snprintf(name, sizeof name, "%s wait", r->s1 && r->s1[0] ? r->s1 : "lock");
  complete(j, name, "lock", r->tid, r->ts, r->ts + (int64_t)r->dur);
  cprof__buf_printf(j->out, ",\"args\":{\"lock\":\"0x%llx\"}}", (unsigned long long)r->id);
}

static void thread_event(cprof__trace_json_t *j, const cprof__trace_rec_t *r) {
  event_start(j, "i", r->kind == CPROF__TRACE_THREAD_START ? "thread start" : "thread exit", r->tid,
              r->ts < j->start_ns ? j->start_ns : r->ts);
  cprof__buf_puts(j->out, ",\"s\":\"t\",\"cat\":\"thread\",\"args\":{\"name\":");
  put_string(j->out, r->s1 && r->s1[0] ? r->s1 : r->thread ? r->thread : "");
  cprof__buf_puts(j->out, "}}");
}

void cprof__trace_json_add(const cprof__trace_rec_t *r, void *ctx) {
  cprof__trace_json_t *j = ctx;
  if (r->tid != j->tid)
    thread_name(j, r);
  switch (r->kind) {
  case CPROF__TRACE_REGION_BEGIN:
    region_begin(j, r);
    break;
  case CPROF__TRACE_REGION_END:
    region_end(j, r);
    break;
  case CPROF__TRACE_TASK_BEGIN:
    task_begin(j, r);
    break;
  case CPROF__TRACE_TASK_END:
    task_end(j, r);
    break;
  case CPROF__TRACE_LOG:
    log_event(j, r);
    break;
  case CPROF__TRACE_LOCK_WAIT:
    lock_wait(j, r);
    break;
  case CPROF__TRACE_THREAD_START:
  case CPROF__TRACE_THREAD_EXIT:
    thread_event(j, r);
    break;
  case CPROF__TRACE_CPU_SAMPLE:
    cpu_sample(j, r);
    break;
  default:
    break;
  }
}

void cprof__trace_json_counter(cprof__trace_json_t *j, const char *name, const char *series,
                               int64_t ts, double value) {
  /* Not at the trace's start itself but 1 ns after it: Perfetto v20's
   * trace processor (VALUE_AT_MAX_TS, which its counter tracks draw with)
   * never takes a value at time 0, and its UI stops drawing at the first
   * sample's track. */
  event_start(j, "C", name, 0, ts <= j->start_ns ? j->start_ns + 1 : ts);
  cprof__buf_puts(j->out, ",\"args\":{");
  put_string(j->out, series);
  cprof__buf_printf(j->out, ":%.0f}}", value);
}

int cprof__trace_json_finish(cprof__trace_json_t *j, uint64_t dropped, const char *cpu_samples) {
  close_open(j);
  for (int i = 0; i < j->nends; i++) {
    const char *name = task_name(j, j->ends[i].id);
    task_event(j, "e", name ? name : "task", j->ends[i].id, j->ends[i].tid, j->ends[i].ts);
  }
  cprof__buf_printf(j->out,
                    "\n],\"otherData\":{\"dropped\":%llu,"
                    "\"duration_us\":%.3f,\"clock\":\"CLOCK_MONOTONIC\",\"start_ns\":%lld",
                    (unsigned long long)dropped, (double)(j->end_ns - j->start_ns) / 1000.0,
                    (long long)j->start_ns);
  if (cpu_samples) {
    cprof__buf_puts(j->out, ",\"cpu_samples\":");
    put_string(j->out, cpu_samples);
  }
  cprof__buf_puts(j->out, "}}\n");
  if (j->sym)
    cprof__symbolizer_release(j->sym);
  j->sym = NULL;
  for (int i = 0; j->frames && i < FRAMES_CACHE; i++)
    frames_free(&j->frames[i]);
  free(j->frames);
  j->frames = NULL;
  cprof__buf_free(&j->stack);
  free(j->open);
  free(j->tasks);
  free(j->ends);
  j->open = NULL;
  j->tasks = NULL;
  j->ends = NULL;
  return j->failed || j->out->failed ? -ENOMEM : 0;
}
