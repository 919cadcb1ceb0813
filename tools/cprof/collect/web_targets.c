/* /targets: every scrape loop's health, as Parca's targets page shows it:
 * per job a table, a row per target and profile (collect/web.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "collect/web_pages.h"
#include "ui/viewer.h"

/* A copy of every loop's status, or NULL with *n 0 when out of memory. */
static collect_loop_status_t *statuses(collect_scraper_t *s, size_t *n) {
  size_t want = collect_scraper_status(s, NULL, 0);
  for (;;) {
    collect_loop_status_t *st = calloc(want ? want : 1, sizeof *st);
    if (!st) {
      *n = 0;
      return NULL;
    }
    size_t got = collect_scraper_status(s, st, want);
    if (got <= want) {
      *n = got;
      return st;
    }
    free(st);
    want = got;
  }
}

/* 2024-05-01T12:00:00.123Z */
static void utc(char *out, size_t n, int64_t ns) {
  time_t secs = (time_t)(ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char day[32];
  strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, n, "%s.%03dZ", day, (int)(ns / 1000000 % 1000));
}

/* "3.2s ago", "4m10s ago", "2h5m ago" */
static void ago(char *out, size_t n, int64_t ns) {
  double s = (double)ns / 1e9;
  if (s < 0)
    s = 0;
  if (s < 60)
    snprintf(out, n, "%.1fs ago", s);
  else if (s < 3600)
    snprintf(out, n, "%dm%ds ago", (int)s / 60, (int)s % 60);
  else
    snprintf(out, n, "%dh%dm ago", (int)s / 3600, (int)s % 3600 / 60);
}

static void json(const web_ctx_t *ctx, const collect_loop_status_t *st, size_t n, web_reply_t *r) {
  cprof__buf_t *b = &r->body;
  cprof__buf_puts(b, "{\"jobs\":[");
  for (size_t j = 0; j < ctx->cfg->njobs; j++) {
    const collect_job_t *job = &ctx->cfg->jobs[j];
    cprof__buf_puts(b, j ? ",\n{\"job\":" : "\n{\"job\":");
    cprof__viewer_json_string(b, job->name);
    cprof__buf_puts(b, ",\"targets\":[");
    int first = 1;
    for (size_t i = 0; i < n; i++) {
      if (st[i].job != job)
        continue;
      cprof__buf_puts(b, first ? "\n {\"target\":" : ",\n {\"target\":");
      first = 0;
      cprof__viewer_json_string(b, st[i].target->addr);
      cprof__buf_puts(b, ",\"profile\":");
      cprof__viewer_json_string(b, st[i].profile->name);
      cprof__buf_puts(b, ",\"url\":");
      cprof__viewer_json_string(b, st[i].url);
      cprof__buf_puts(b, ",\"labels\":{");
      for (size_t k = 0; k < st[i].target->nlabels; k++) {
        if (k)
          cprof__buf_putc(b, ',');
        cprof__viewer_json_string(b, st[i].target->labels[k].name);
        cprof__buf_putc(b, ':');
        cprof__viewer_json_string(b, st[i].target->labels[k].value);
      }
      char when[40] = "";
      if (st[i].last_ns)
        utc(when, sizeof when, st[i].last_ns);
      cprof__buf_printf(b,
                        "},\"health\":\"%s\",\"last_scrape\":\"%s\",\"last_scrape_ns\":\"%" PRId64
                        "\",\"duration_seconds\":%.6f,\"scrapes\":%" PRIu64 ",\"failures\":%" PRIu64
                        ",\"last_error\":",
                        collect_health_name(st[i].health), when, st[i].last_ns,
                        (double)st[i].last_duration_ns / 1e9, st[i].scrapes, st[i].failures);
      cprof__viewer_json_string(b, st[i].last_error);
      /* The last failure, kept once the loop is good again, and the
       * failures by class (/metrics' reason label). */
      cprof__buf_puts(b, ",\"last_failure\":");
      cprof__viewer_json_string(b, st[i].last_failure);
      cprof__buf_printf(b, ",\"last_failure_ns\":\"%" PRId64 "\",\"last_reason\":\"%s\"",
                        st[i].last_failure_ns,
                        st[i].last_failure_ns ? collect_reason_name(st[i].last_reason) : "");
      cprof__buf_puts(b, ",\"failures_by_reason\":{");
      int any = 0;
      for (int k = 1; k < COLLECT_REASON_N; k++)
        if (st[i].failures_by[k]) {
          cprof__buf_printf(b, "%s\"%s\":%" PRIu64, any ? "," : "",
                            collect_reason_name((collect_reason_t)k), st[i].failures_by[k]);
          any = 1;
        }
      cprof__buf_puts(b, "}}");
    }
    cprof__buf_puts(b, "]}");
  }
  cprof__buf_puts(b, "\n]}\n");
  r->type = WEB_JSON;
}

static const char style[] =
    "body{font:14px system-ui,sans-serif;margin:0;color:#1d2330}"
    "header{padding:.6rem 1rem;background:#f4f6fa;border-bottom:1px solid #d4d8e0}"
    "header a{margin-right:1rem}main{padding:0 1rem 1rem}"
    "table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}"
    "th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #e3e6ec;"
    "vertical-align:top}th{background:#f4f6fa}"
    ".label{display:inline-block;background:#e8ecf5;border-radius:3px;padding:0 .3rem;"
    "margin:0 .2rem .2rem 0;font-size:12px}"
    ".Good{color:#fff;background:#2e7d32}.Bad{color:#fff;background:#c62828}"
    ".Unknown{background:#cfd3da}.health{padding:.1rem .4rem;border-radius:3px}"
    ".err{color:#c62828;font-family:monospace;white-space:pre-wrap}.past{color:#6b7280}";

static void html(const web_ctx_t *ctx, const collect_loop_status_t *st, size_t n, web_reply_t *r) {
  cprof__buf_t *b = &r->body;
  int64_t now = cprof__now_ns(CLOCK_REALTIME);
  cprof__buf_printf(b,
                    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<title>Targets - cprof collect</title><style>%s</style></head><body>\n"
                    "<header><a href=\"./\">Profiles</a><a href=\"targets\">Targets</a>"
                    "<a href=\"metrics\">Metrics</a><a href=\"targets?format=json\">JSON</a>"
                    "</header><main><h1>Targets</h1>\n",
                    style);
  for (size_t j = 0; j < ctx->cfg->njobs; j++) {
    const collect_job_t *job = &ctx->cfg->jobs[j];
    size_t up = 0, all = 0;
    for (size_t i = 0; i < n; i++)
      if (st[i].job == job) {
        all++;
        up += st[i].health == COLLECT_GOOD;
      }
    cprof__buf_puts(b, "<h2 class=\"job\">");
    cprof__ui_html_text(b, job->name);
    cprof__buf_printf(b,
                      " (%zu/%zu up)</h2>\n<table><thead><tr><th>Endpoint</th><th>Labels</th>"
                      "<th>Health</th><th>Last scrape</th><th>Scrape duration</th>"
                      "<th>Error</th></tr></thead><tbody>\n",
                      up, all);
    for (size_t i = 0; i < n; i++) {
      if (st[i].job != job)
        continue;
      cprof__buf_puts(b, "<tr><td>");
      cprof__ui_html_text(b, st[i].url);
      /* The labels a series of this target has, as Prometheus's and
       * Parca's targets pages show them: job and instance, then the
       * static_configs entry's own. */
      cprof__buf_puts(b, "</td><td><span class=\"label\">job=");
      cprof__ui_html_text(b, job->name);
      cprof__buf_puts(b, "</span><span class=\"label\">instance=");
      cprof__ui_html_text(b, st[i].target->addr);
      cprof__buf_puts(b, "</span>");
      for (size_t k = 0; k < st[i].target->nlabels; k++) {
        cprof__buf_puts(b, "<span class=\"label\">");
        cprof__ui_html_text(b, st[i].target->labels[k].name);
        cprof__buf_putc(b, '=');
        cprof__ui_html_text(b, st[i].target->labels[k].value);
        cprof__buf_puts(b, "</span>");
      }
      const char *h = collect_health_name(st[i].health);
      cprof__buf_printf(b, "</td><td><span class=\"health %s\">%s</span></td><td>", h, h);
      if (st[i].last_ns) {
        char a[40], u[40];
        ago(a, sizeof a, now - st[i].last_ns);
        utc(u, sizeof u, st[i].last_ns);
        cprof__buf_printf(b, "<span title=\"%s\">%s</span><br><small>%s</small>", u, a, u);
      } else {
        cprof__buf_puts(b, "never");
      }
      cprof__buf_puts(b, "</td><td>");
      if (st[i].last_ns)
        cprof__buf_printf(b, "%.3fs", (double)st[i].last_duration_ns / 1e9);
      cprof__buf_puts(b, "</td><td class=\"err\">");
      if (st[i].last_error[0]) {
        cprof__buf_printf(b, "<b>%s</b>: ", collect_reason_name(st[i].last_reason));
        cprof__ui_html_text(b, st[i].last_error);
      } else if (st[i].last_failure_ns) {
        /* Good now: the last failure, so that a flapping target shows. */
        char a[40];
        ago(a, sizeof a, now - st[i].last_failure_ns);
        cprof__buf_printf(b, "<small class=\"past\">last failed %s (%" PRIu64 " in all), %s: ", a,
                          st[i].failures, collect_reason_name(st[i].last_reason));
        cprof__ui_html_text(b, st[i].last_failure);
        cprof__buf_puts(b, "</small>");
      }
      cprof__buf_puts(b, "</td></tr>\n");
    }
    cprof__buf_puts(b, "</tbody></table>\n");
  }
  cprof__buf_puts(b, "</main></body></html>\n");
  r->type = WEB_HTML;
}

void web_targets(const web_ctx_t *ctx, int as_json, web_reply_t *r) {
  size_t n;
  collect_loop_status_t *st = statuses(ctx->scraper, &n);
  if (!st) {
    web_reply_error(r, 500, "500 out of memory");
    return;
  }
  r->status = 200;
  if (as_json)
    json(ctx, st, n, r);
  else
    html(ctx, st, n, r);
  free(st);
}
