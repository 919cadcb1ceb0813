/* /metrics: the collector's own figures in Prometheus's text format 0.0.4,
 * each with HELP and TYPE, and the process_* basics Prometheus's client
 * libraries export. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "collect/push.h"
#include "collect/web_pages.h"

static void metric(cprof__buf_t *b, const char *name, const char *type, const char *help) {
  cprof__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value escaped as the text format wants: \\, \" and \\n. */
static void label_value(cprof__buf_t *b, const char *s) {
  for (; *s; s++)
    if (*s == '\\' || *s == '"')
      cprof__buf_putc(b, '\\'), cprof__buf_putc(b, *s);
    else if (*s == '\n')
      cprof__buf_puts(b, "\\n");
    else
      cprof__buf_putc(b, *s);
}

/* The process_* metrics; what /proc does not give is left out. */
static void process(const web_ctx_t *ctx, cprof__buf_t *b) {
  struct timespec cpu;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  metric(b, "process_cpu_seconds_total", "counter",
         "Total user and system CPU time spent in seconds.");
  cprof__buf_printf(b, "process_cpu_seconds_total %.6f\n", (double)cpu.tv_sec + cpu.tv_nsec / 1e9);
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) == 2) {
      long page = sysconf(_SC_PAGESIZE);
      metric(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
      cprof__buf_printf(b, "process_virtual_memory_bytes %ld\n", pages * page);
      metric(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
      cprof__buf_printf(b, "process_resident_memory_bytes %ld\n", rss * page);
    }
    fclose(f);
  }
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    long fds = -1; /* the directory's own descriptor is not the process's */
    struct dirent *e;
    while ((e = readdir(d)))
      fds += e->d_name[0] != '.';
    closedir(d);
    metric(b, "process_open_fds", "gauge", "Number of open file descriptors.");
    cprof__buf_printf(b, "process_open_fds %ld\n", fds);
  }
  metric(b, "process_start_time_seconds", "gauge",
         "Start time of the process since unix epoch in seconds.");
  cprof__buf_printf(b, "process_start_time_seconds %.3f\n", (double)ctx->start_ns / 1e9);
}

void web_metrics(const web_ctx_t *ctx, web_reply_t *r) {
  cprof__buf_t *b = &r->body;
  collect_scrape_totals_t t;
  collect_scraper_totals(ctx->scraper, &t);
  int64_t profiles, bytes;
  collect_store_totals(ctx->store, &profiles, &bytes);
  size_t n = collect_scraper_status(ctx->scraper, NULL, 0);
  collect_loop_status_t *st = calloc(n ? n : 1, sizeof *st);
  size_t health[3] = {0};
  if (st) {
    n = collect_scraper_status(ctx->scraper, st, n);
    for (size_t i = 0; i < n; i++)
      health[st[i].health]++;
  }
  metric(b, "cprof_collect_scrapes_total", "counter", "Scrapes done, good or not.");
  cprof__buf_printf(b, "cprof_collect_scrapes_total %" PRIu64 "\n", t.scrapes);
  metric(b, "cprof_collect_scrape_failures_total", "counter",
         "Scrapes that failed: no answer, not a 200, or not a valid profile.");
  cprof__buf_printf(b, "cprof_collect_scrape_failures_total %" PRIu64 "\n", t.failures);
  /* By loop and class: a loop's target is its instance, its profile the
   * type, as the store's rows and /api/scrapes name them. */
  metric(b, "cprof_collect_target_scrape_failures_total", "counter",
         "Failed scrapes by job, instance, profile type and class of reason.");
  for (size_t i = 0; st && i < n; i++)
    for (int k = 1; k < COLLECT_REASON_N; k++) {
      if (!st[i].failures_by[k])
        continue;
      cprof__buf_puts(b, "cprof_collect_target_scrape_failures_total{job=\"");
      label_value(b, st[i].job->name);
      cprof__buf_puts(b, "\",instance=\"");
      label_value(b, st[i].target->addr);
      cprof__buf_puts(b, "\",type=\"");
      label_value(b, st[i].profile->name);
      cprof__buf_printf(b, "\",reason=\"%s\"} %" PRIu64 "\n",
                        collect_reason_name((collect_reason_t)k), st[i].failures_by[k]);
    }
  free(st);
  metric(b, "cprof_collect_scraped_bytes_total", "counter", "Bytes of the answers scraped.");
  cprof__buf_printf(b, "cprof_collect_scraped_bytes_total %" PRIu64 "\n", t.bytes_scraped);
  metric(b, "cprof_collect_stored_profiles", "gauge", "Profiles in the store.");
  cprof__buf_printf(b, "cprof_collect_stored_profiles %" PRId64 "\n", profiles);
  metric(b, "cprof_collect_stored_bytes", "gauge", "Bytes of the profiles in the store.");
  cprof__buf_printf(b, "cprof_collect_stored_bytes %" PRId64 "\n", bytes);
  metric(b, "cprof_collect_targets", "gauge",
         "Scrape loops (a target's profile) by the health of their last scrape.");
  cprof__buf_printf(b,
                    "cprof_collect_targets{health=\"good\"} %zu\n"
                    "cprof_collect_targets{health=\"bad\"} %zu\n"
                    "cprof_collect_targets{health=\"unknown\"} %zu\n",
                    health[COLLECT_GOOD], health[COLLECT_BAD], health[COLLECT_UNKNOWN]);
  collect_pusher_t *pusher = collect_scraper_pusher(ctx->scraper);
  if (pusher) { /* remote write (collect/push.h) */
    collect_push_totals_t pt;
    collect_pusher_totals(pusher, &pt);
    static const char *const names[] = {"pushed", "retried", "dropped", "rejected"};
    static const char *const helps[] = {
        "Profiles Pyroscope took.", "Sends retried after a failure, a 5xx or a 429.",
        "Profiles dropped: the queue was full, or the collector stopped.",
        "Profiles Pyroscope refused (a 4xx other than 429)."};
    const uint64_t values[] = {pt.pushed, pt.retried, pt.dropped, pt.rejected};
    for (size_t i = 0; i < 4; i++) {
      char name[64];
      snprintf(name, sizeof name, "cprof_collect_remote_write_%s_total", names[i]);
      metric(b, name, "counter", helps[i]);
      cprof__buf_printf(b, "%s %" PRIu64 "\n", name, values[i]);
    }
    metric(b, "cprof_collect_remote_write_queued", "gauge", "Profiles waiting to be sent.");
    cprof__buf_printf(b, "cprof_collect_remote_write_queued %" PRIu64 "\n", pt.queued);
  }
  process(ctx, b);
  r->status = 200;
  r->type = WEB_METRICS;
}
