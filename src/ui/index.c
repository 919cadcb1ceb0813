/* /debug/pprof/: the index page, laid out as Go's net/http/pprof index
 * (a count and a debug=1 link per profile, then the descriptions) so that
 * people who know one know the other. Links are relative, so the page
 * works under any CPROF_PREFIX and behind any proxy path. */
#include "ui/index.h"

#include "ui/template.h"

static void link(cprof__buf_t *b, const cprof__index_row_t *p) {
  cprof__buf_printf(b, "<a href='%s%s%s'>", p->name, p->link_query ? "?" : "",
                    p->link_query ? p->link_query : "");
  cprof__ui_html_text(b, p->name);
  cprof__buf_puts(b, "</a>");
}

/* A process tree's processes: what the profiles above merge, and a link
 * to each one's threads. */
static void processes(const cprof__tree_proc_t *procs, int n, cprof__buf_t *b) {
  cprof__buf_puts(b, "<p>\nProcesses of this tree: each profile above is theirs, merged, with a "
                     "<code>pid</code> label on every sample; add <code>?pid=N</code> for one "
                     "process alone (<a href='processes'>as JSON</a>).\n<table>\n"
                     "<thead><td>pid</td><td>parent</td><td>state</td><td>started (UTC)</td>"
                     "<td>command</td></thead>\n");
  for (int i = 0; i < n; i++) {
    const cprof__tree_proc_t *p = &procs[i];
    char start[32];
    cprof__tree_started(p, "%Y-%m-%d %H:%M:%S", start, sizeof start);
    cprof__buf_printf(b,
                      "<tr><td><a href='goroutine?debug=2&amp;pid=%d'>%d</a></td><td>%d</td>"
                      "<td>%c</td><td>%s</td><td>",
                      (int)p->pid, (int)p->pid, (int)p->ppid, p->state, start);
    cprof__ui_html_text(b, p->cmdline[0] ? p->cmdline : p->name);
    cprof__buf_puts(b, p->self ? " <i>(this process: it serves the tree)</i></td></tr>\n"
                               : "</td></tr>\n");
  }
  cprof__buf_puts(b, "</table>\n</p>\n");
}

void cprof__index_page(const cprof__index_row_t *rows, int n, const cprof__tree_proc_t *procs,
                       int nprocs, cprof__buf_t *out) {
  cprof__buf_t *b = out;
  cprof__buf_puts(b, "<html>\n<head>\n<title>/debug/pprof/</title>\n<style>\n"
                     "body{font-family:sans-serif;margin:1.5rem}\n"
                     "td{padding:0 1rem 0 0}\n"
                     ".profile-name{display:inline-block;width:6rem}\n"
                     "</style>\n</head>\n<body>\n/debug/pprof/ (cprof)<br>\n<br>\n"
                     "Types of profiles available:\n<table>\n"
                     "<thead><td>Count</td><td>Profile</td></thead>\n");
  for (int i = 0; i < n; i++) {
    cprof__buf_printf(b, "<tr><td>%ld</td><td>", rows[i].count);
    link(b, &rows[i]);
    cprof__buf_puts(b, "</td></tr>\n");
  }
  cprof__buf_puts(b, "</table>\n");
  if (nprocs > 1)
    processes(procs, nprocs, b);
  cprof__buf_puts(b, "<a href='goroutine?debug=2'>full thread stack dump</a>\n<br>\n"
                     "<a href='ui/'>flame graphs in the browser</a>\n<br>\n");
  /* Relative, as every link here: /metrics is two levels up, beside the
   * prefix's /debug. */
  cprof__buf_puts(b, "<a href='../../metrics'>/metrics</a> (the process's figures for "
                     "Prometheus)\n<br>\n");
  cprof__buf_puts(b, "<p>\nProfile Descriptions:\n<ul>\n");
  for (int i = 0; i < n; i++) {
    cprof__buf_puts(b, "<li><div class=profile-name>");
    cprof__ui_html_text(b, rows[i].name);
    cprof__buf_puts(b, ": </div> ");
    cprof__ui_html_text(b, rows[i].desc);
    if (rows[i].off) {
      cprof__buf_puts(b, " <b>");
      cprof__ui_html_text(b, rows[i].off);
      cprof__buf_puts(b, "</b>");
    }
    cprof__buf_puts(b, "</li>\n");
  }
  cprof__buf_puts(b, "</ul>\n</p>\n<p><a href='../charts/'>Live charts</a> of this process: CPU, "
                     "memory, threads, open files, I/O and cprof's own cost.</p>\n");
  cprof__buf_puts(b, "<p>Read any profile with <code>go tool pprof "
                     "http://HOST:PORT/debug/pprof/NAME</code>.</p>\n</body>\n</html>\n");
}
