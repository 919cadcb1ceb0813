/* The scrape scheduler (collect/scrape.h). */
#include "collect/scrape.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/fetch.h"
#include "collect/validate.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/hash.h"
#include "profile/table.h"
#include "push/ingest.h"

/* Answers past this are refused: the largest profile a target may send. */
#define MAX_PROFILE_BYTES ((size_t)256 << 20)

typedef struct loop {
  collect_loop_status_t st; /* under the scraper's lock */
  char *url;
  char *procs_url; /* the target's /debug/pprof/processes; process_tree: each only */
  int64_t next_ns; /* monotonic: when due */
  int in_flight;
  struct collect_scraper *s;
  /* A round of process_tree: each, on the fetcher's thread alone: the
   * process scrapes still out, and what they found. */
  struct {
    int pending;
    uint64_t failed;
    char error[256]; /* the first failure's */
    collect_reason_t reason;
    int64_t start_ns;
  } round;
} loop_t;

/* One process of a tree, scraped with ?pid=N (process_tree: each). */
typedef struct proc_scrape {
  loop_t *l;
  char pid[16];
  char name[64];
} proc_scrape_t;

struct collect_scraper {
  const collect_config_t *cfg;
  collect_store_t *store;
  collect_pusher_t *pusher; /* or NULL */
  collect_fetcher_t *fetcher;
  loop_t *loops;
  size_t n;
  pthread_mutex_t lock; /* the loops' st, totals, round */
  collect_scrape_totals_t totals;
  struct {
    uint64_t ok, failed, bytes;
    /* The round's failed loops by target and class, for its line. */
    struct {
      const collect_job_t *job;
      const collect_target_t *target;
      collect_reason_t reason;
      const char *types[8];
      size_t ntypes, more;
      char error[160]; /* the first one's text */
    } why[8];
    size_t nwhy, unnamed;
  } round;
  int stop; /* atomic */
};

static int64_t wall_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

const char *collect_health_name(collect_health_t h) {
  return h == COLLECT_GOOD ? "Good" : h == COLLECT_BAD ? "Bad" : "Unknown";
}

/* scheme://addr/path?params[&seconds=N], as Parca's target URL. */
static char *loop_url(const collect_job_t *j, const collect_target_t *t,
                      const collect_profile_t *p) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_printf(&b, "%s://%s%s", j->scheme, t->addr, p->path);
  char sep = '?';
  for (size_t i = 0; i < j->nparams; i++) {
    cprof__buf_putc(&b, sep);
    cprof__url_escape(&b, j->params[i].name);
    cprof__buf_putc(&b, '=');
    cprof__url_escape(&b, j->params[i].value);
    sep = '&';
  }
  if (p->delta)
    cprof__buf_printf(&b, "%cseconds=%ld", sep, p->seconds);
  cprof__buf_putc(&b, '\0');
  return b.failed ? (cprof__buf_free(&b), NULL) : cprof__buf_take(&b, NULL);
}

/* scheme://addr[path_prefix]/debug/pprof/processes: the index of a cprof
 * process tree (src/http/tree.c). */
static char *procs_url(const collect_job_t *j, const collect_target_t *t) {
  const char *prefix = j->path_prefix;
  size_t pl = strlen(prefix);
  while (pl && prefix[pl - 1] == '/') /* joined as config_job.c joins a profile's path */
    pl--;
  char *u = NULL;
  return asprintf(&u, "%s://%s%s%.*s/debug/pprof/processes", j->scheme, t->addr,
                  pl && prefix[0] != '/' ? "/" : "", (int)pl, prefix) < 0
             ? NULL
             : u;
}

int collect_scraper_new(const collect_config_t *cfg, collect_store_t *store,
                        collect_scraper_t **out, char *err, size_t errlen) {
  collect_scraper_t *s = calloc(1, sizeof *s);
  if (!s)
    goto nomem;
  s->cfg = cfg;
  s->store = store;
  pthread_mutex_init(&s->lock, NULL);
  size_t n = 0;
  for (size_t j = 0; j < cfg->njobs; j++)
    n += cfg->jobs[j].ntargets * collect_job_enabled_profiles(&cfg->jobs[j]);
  s->loops = calloc(n ? n : 1, sizeof *s->loops);
  if (!s->loops)
    goto nomem;
  for (size_t j = 0; j < cfg->njobs; j++) {
    const collect_job_t *job = &cfg->jobs[j];
    for (size_t t = 0; t < job->ntargets; t++)
      for (size_t p = 0; p < job->nprofiles; p++) {
        if (!job->profiles[p].enabled)
          continue;
        loop_t *l = &s->loops[s->n++];
        l->s = s;
        l->st.job = job;
        l->st.target = &job->targets[t];
        l->st.profile = &job->profiles[p];
        if (!(l->url = loop_url(job, &job->targets[t], &job->profiles[p])))
          goto nomem;
        l->st.url = l->url;
        if (job->process_tree_each && !(l->procs_url = procs_url(job, &job->targets[t])))
          goto nomem;
      }
  }
  int rc = collect_fetcher_new(MAX_PROFILE_BYTES, &s->fetcher);
  if (rc != 0) {
    snprintf(err, errlen, "cannot start libcurl: %s", strerror(-rc));
    collect_scraper_free(s);
    return rc;
  }
  *out = s;
  return 0;
nomem:
  snprintf(err, errlen, "out of memory");
  collect_scraper_free(s);
  return -ENOMEM;
}

void collect_scraper_free(collect_scraper_t *s) {
  if (!s)
    return;
  collect_fetcher_free(s->fetcher);
  for (size_t i = 0; i < s->n; i++) {
    free(s->loops[i].url);
    free(s->loops[i].procs_url);
  }
  free(s->loops);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* The labels of a series: the target's, then pid and process when it is
 * one process of a tree (proc is NULL otherwise). At most max. */
static size_t series_labels(const loop_t *l, const proc_scrape_t *proc, collect_label_t *out,
                            size_t max) {
  const collect_target_t *t = l->st.target;
  size_t n = 0;
  for (size_t i = 0; i < t->nlabels && n + 2 < max; i++)
    out[n++] = t->labels[i];
  if (proc) {
    out[n++] = (collect_label_t){"pid", (char *)proc->pid};
    if (proc->name[0])
      out[n++] = (collect_label_t){"process", (char *)proc->name};
  }
  return n;
}

/* Stores a good profile; 0, or a negative errno with the reason in err. */
static int store(loop_t *l, const collect_label_t *own, size_t nown, const cprof__pf_t *p,
                 const unsigned char *data, size_t len, int64_t start_ns, char *err,
                 size_t errlen) {
  const collect_target_t *t = l->st.target;
  collect_store_label_t labels[2 + 66];
  size_t n = 0;
  labels[n++] = (collect_store_label_t){"job", l->st.job->name};
  labels[n++] = (collect_store_label_t){"instance", t->addr};
  for (size_t i = 0; i < nown && n < sizeof labels / sizeof *labels; i++)
    labels[n++] = (collect_store_label_t){own[i].name, own[i].value};
  collect_entry_t e = {.job = l->st.job->name,
                       .instance = t->addr,
                       .type = l->st.profile->name,
                       .labels = labels,
                       .nlabels = n,
                       .time_ns = start_ns,
                       .duration_ns = p->duration_nanos,
                       .total = collect_total(p)};
  int64_t id;
  return collect_store_put(l->s->store, &e, data, len, &id, err, errlen);
}

/* Remote write: a copy of a stored profile for the pusher, with the same
 * labels (a process's pid among them: one Pyroscope series per process). */
static void push(loop_t *l, const collect_label_t *own, size_t nown, const cprof__pf_t *p,
                 const unsigned char *data, size_t len, int64_t start_ns) {
  const collect_target_t *t = l->st.target;
  collect_push_profile_t pp = {.job = l->st.job->name,
                               .instance = t->addr,
                               .kind = l->st.profile->name,
                               .delta = l->st.profile->delta,
                               .labels = own,
                               .nlabels = nown,
                               .start_ns = start_ns,
                               .duration_ns = p->duration_nanos,
                               .profile = p,
                               .data = data,
                               .len = len};
  collect_pusher_enqueue(l->s->pusher, &pp); /* a failure is counted as dropped */
}

/* Atomic: the pages read it from their threads. */
void collect_scraper_set_pusher(collect_scraper_t *s, collect_pusher_t *p) {
  __atomic_store_n(&s->pusher, p, __ATOMIC_RELEASE);
}

collect_pusher_t *collect_scraper_pusher(collect_scraper_t *s) {
  return __atomic_load_n(&s->pusher, __ATOMIC_ACQUIRE);
}

/* The first line of a body, for an error message. */
static void first_line(const unsigned char *data, size_t len, char *out, size_t outlen) {
  size_t n = 0;
  while (n < len && n + 1 < outlen && data[n] != '\n' && data[n] != '\r')
    n++;
  for (size_t i = 0; i < n; i++)
    out[i] = data[i] >= 0x20 && data[i] < 0x7f ? (char)data[i] : '?';
  out[n] = '\0';
}

/* Why an answer is not a 200, into err and *reason; 0 when it is one. */
static int bad_answer(const collect_result_t *r, char *err, size_t errlen,
                      collect_reason_t *reason) {
  if (r->error[0]) {
    snprintf(err, errlen, "%s", r->error);
    *reason = r->reason ? r->reason : COLLECT_REASON_TRANSFER;
    return -1;
  }
  if (r->status != 200) {
    char line[120];
    first_line(r->data, r->len, line, sizeof line);
    snprintf(err, errlen, "server returned HTTP status %ld%s%s", r->status, line[0] ? ": " : "",
             line);
    *reason = COLLECT_REASON_HTTP;
    return -1;
  }
  return 0;
}

/* A profile answered: checked, stored, pushed. err gets why not. */
static void take(loop_t *l, const proc_scrape_t *proc, collect_result_t *r, int64_t start_ns,
                 char *err, size_t errlen, collect_reason_t *reason) {
  if (bad_answer(r, err, errlen, reason) != 0)
    return;
  cprof__pf_t *p = NULL;
  char why[200];
  collect_label_t own[66];
  size_t nown = series_labels(l, proc, own, sizeof own / sizeof *own);
  if (collect_decode_valid(r->data, r->len, &p, why, sizeof why) != 0) {
    snprintf(err, errlen, "invalid profile: %s", why);
    *reason = COLLECT_REASON_INVALID;
  } else if (store(l, own, nown, p, r->data, r->len, start_ns, why, sizeof why) != 0) {
    snprintf(err, errlen, "cannot store the profile: %s", why);
    *reason = COLLECT_REASON_STORE;
  } else if (l->s->pusher)
    push(l, own, nown, p, r->data, r->len, start_ns);
  cprof__pf_free(p);
}

/* One fetch's figures into the totals (a tree's processes each count). */
static void count_fetch(collect_scraper_t *s, const collect_result_t *r, int failed) {
  pthread_mutex_lock(&s->lock);
  s->totals.scrapes++;
  s->totals.bytes_scraped += r->len;
  s->round.bytes += r->len;
  if (failed) {
    s->totals.failures++;
    s->round.failed++;
  } else {
    s->round.ok++;
  }
  pthread_mutex_unlock(&s->lock);
}

/* Names a failed loop in the round's line: grouped by target and class. */
static void round_why(collect_scraper_t *s, const loop_t *l, const char *err,
                      collect_reason_t reason) {
  size_t i = 0;
  while (i < s->round.nwhy &&
         !(s->round.why[i].target == l->st.target && s->round.why[i].job == l->st.job &&
           s->round.why[i].reason == reason))
    i++;
  if (i == s->round.nwhy) {
    if (i == sizeof s->round.why / sizeof *s->round.why) {
      s->round.unnamed++;
      return;
    }
    s->round.nwhy++;
    s->round.why[i].job = l->st.job;
    s->round.why[i].target = l->st.target;
    s->round.why[i].reason = reason;
    s->round.why[i].ntypes = s->round.why[i].more = 0;
    snprintf(s->round.why[i].error, sizeof s->round.why[i].error, "%s", err);
  }
  if (s->round.why[i].ntypes < sizeof s->round.why[i].types / sizeof *s->round.why[i].types)
    s->round.why[i].types[s->round.why[i].ntypes++] = l->st.profile->name;
  else
    s->round.why[i].more++;
}

/* The round's line: what was scraped, and why each failure failed. */
static void round_line(collect_scraper_t *s, int64_t shortest) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_printf(
      &b, "cprof collect: %llu scraped and stored, %llu failed, %.1f MB in the last %.0f s",
      (unsigned long long)s->round.ok, (unsigned long long)s->round.failed,
      (double)s->round.bytes / 1e6, (double)shortest / 1e9);
  for (size_t i = 0; i < s->round.nwhy; i++) {
    cprof__buf_printf(&b, "%s%s %s (", i ? "; " : ": ", s->round.why[i].job->name,
                      s->round.why[i].target->addr);
    for (size_t t = 0; t < s->round.why[i].ntypes; t++)
      cprof__buf_printf(&b, "%s%s", t ? ", " : "", s->round.why[i].types[t]);
    if (s->round.why[i].more)
      cprof__buf_printf(&b, " and %zu more", s->round.why[i].more);
    cprof__buf_printf(&b, "): %s: %s", collect_reason_name(s->round.why[i].reason),
                      s->round.why[i].error);
  }
  if (s->round.unnamed)
    cprof__buf_printf(&b, "; and %zu more", s->round.unnamed);
  cprof__buf_putc(&b, '\0');
  if (!b.failed)
    fprintf(stderr, "%s\n", b.data);
  cprof__buf_free(&b);
}

/* The loop's scrape is over: its health is err's ("" is good). A failure,
 * and a loop good again, go to the store's scrape events. */
static void loop_done(loop_t *l, int64_t start_ns, int64_t duration_ns, const char *err,
                      collect_reason_t reason) {
  collect_scraper_t *s = l->s;
  pthread_mutex_lock(&s->lock);
  collect_health_t before = l->st.health;
  l->in_flight = 0;
  l->st.last_ns = start_ns;
  l->st.last_duration_ns = duration_ns;
  l->st.scrapes++;
  if (err[0]) {
    if (reason <= COLLECT_REASON_NONE || reason >= COLLECT_REASON_N)
      reason = COLLECT_REASON_OTHER;
    l->st.health = COLLECT_BAD;
    l->st.failures++;
    l->st.failures_by[reason]++;
    l->st.last_reason = reason;
    l->st.last_failure_ns = start_ns;
    snprintf(l->st.last_error, sizeof l->st.last_error, "%s", err);
    snprintf(l->st.last_failure, sizeof l->st.last_failure, "%s", err);
    round_why(s, l, err, reason);
  } else {
    l->st.health = COLLECT_GOOD;
    l->st.last_error[0] = '\0';
  }
  pthread_mutex_unlock(&s->lock);
  if (!err[0] && before != COLLECT_BAD)
    return;
  const collect_target_t *t = l->st.target;
  collect_store_label_t labels[2 + 64];
  size_t n = 0;
  labels[n++] = (collect_store_label_t){"job", l->st.job->name};
  labels[n++] = (collect_store_label_t){"instance", t->addr};
  for (size_t i = 0; i < t->nlabels && n < sizeof labels / sizeof *labels; i++)
    labels[n++] = (collect_store_label_t){t->labels[i].name, t->labels[i].value};
  char *text = collect_store_labels_text(labels, n);
  collect_scrape_event_t e = {.time_ns = start_ns,
                              .job = l->st.job->name,
                              .instance = t->addr,
                              .type = l->st.profile->name,
                              .labels = text ? text : "{}",
                              .event = err[0] ? "failure" : "up",
                              .down = err[0] && before != COLLECT_BAD,
                              .reason = err[0] ? collect_reason_name(reason) : "",
                              .error = err};
  char why[256];
  if (collect_store_put_event(s->store, &e, why, sizeof why) != 0)
    fprintf(stderr, "cprof collect: cannot keep a failed scrape of %s: %s\n", l->url, why);
  free(text);
}

static void done(void *arg, collect_result_t *r) {
  loop_t *l = arg;
  char err[256] = "";
  collect_reason_t reason = COLLECT_REASON_NONE;
  int64_t start_ns = wall_ns() - r->duration_ns;
  take(l, NULL, r, start_ns, err, sizeof err, &reason);
  count_fetch(l->s, r, err[0] != 0);
  loop_done(l, start_ns, r->duration_ns, err, reason);
}

/* ---- process_tree: each ---- */

/* The next JSON string at *p (just past its opening quote) into out,
 * unescaped as far as a label needs (\uXXXX becomes ?); *p moves past the
 * closing quote. */
static void json_string(const char **p, char *out, size_t outlen) {
  const char *s = *p;
  size_t n = 0;
  for (; *s && *s != '"'; s++) {
    char c = *s;
    if (c == '\\' && s[1]) {
      s++;
      c = *s == 'u' ? '?' : *s == 'n' ? ' ' : *s == 't' ? ' ' : *s;
      if (*s == 'u')
        for (int i = 0; i < 4 && s[1]; i++)
          s++;
    }
    if (out && n + 1 < outlen)
      out[n++] = c;
  }
  if (out)
    out[n] = '\0';
  *p = *s ? s + 1 : s;
}

/* The processes of /debug/pprof/processes's answer, {"owner":N,
 * "processes":[{"pid":N,...,"name":"...",...},...]} (src/http/tree.c),
 * into out[max]: how many, or -1 when the body is not that. Only pid and
 * name are read; every other member is skipped, strings and all. */
static int parse_processes(const char *body, proc_scrape_t *out, int max) {
  const char *p = strstr(body, "\"processes\"");
  if (!p || !(p = strchr(p, '[')))
    return -1;
  int n = 0, depth = 0;
  proc_scrape_t cur;
  char key[32];
  for (p++; *p; p++) {
    if (*p == '"') {
      p++;
      json_string(&p, depth == 1 ? key : NULL, sizeof key);
      while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
      if (depth != 1 || *p != ':') {
        p--;
        continue;
      }
      for (p++; *p == ' ' || *p == '\n'; p++)
        ;
      if (!strcmp(key, "pid")) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > 0x7fffffff)
          return -1;
        snprintf(cur.pid, sizeof cur.pid, "%d", (int)v);
        p = end - 1;
      } else if (!strcmp(key, "name") && *p == '"') {
        p++;
        json_string(&p, cur.name, sizeof cur.name);
        p--;
      } else {
        p--;
      }
    } else if (*p == '{') {
      if (++depth == 1)
        memset(&cur, 0, sizeof cur);
    } else if (*p == '}') {
      if (--depth == 0 && cur.pid[0] && n < max)
        out[n++] = cur;
      if (depth < 0)
        return -1;
    } else if (*p == ']' && depth == 0) {
      return n;
    }
  }
  return -1;
}

/* One process of a tree scraped: stored, or its failure kept for the
 * loop; the last to end ends the loop's round. A 404 is a process that
 * left the tree between the list and the scrape: nothing to store, and
 * no failure. */
static void proc_done(void *arg, collect_result_t *r) {
  proc_scrape_t *ps = arg;
  loop_t *l = ps->l;
  char err[256] = "", why[230] = "";
  collect_reason_t reason = COLLECT_REASON_NONE;
  int gone = !r->error[0] && r->status == 404;
  if (!gone)
    take(l, ps, r, wall_ns() - r->duration_ns, why, sizeof why, &reason);
  if (why[0]) {
    snprintf(err, sizeof err, "pid %s: %s", ps->pid, why);
    if (!l->round.failed++) {
      snprintf(l->round.error, sizeof l->round.error, "%s", err);
      l->round.reason = reason;
    }
  }
  count_fetch(l->s, r, err[0] != 0);
  free(ps);
  if (--l->round.pending == 0)
    loop_done(l, l->round.start_ns, wall_ns() - l->round.start_ns, l->round.error, l->round.reason);
}

static int start_fetch(collect_scraper_t *s, loop_t *l, const char *url, collect_fetch_done_fn fn,
                       void *arg) {
  const collect_job_t *j = l->st.job;
  /* A delta profile takes its seconds; the timeout covers that (config.c). */
  collect_request_t req = {.url = url,
                           .timeout_ms = j->timeout_ms,
                           .username = j->username,
                           .password = j->password,
                           .bearer_token = j->bearer_token};
  return collect_fetcher_add(s->fetcher, &req, fn, arg);
}

#define MAX_TREE 1024

/* The tree's index answered: every process scraped with ?pid=N, or, from
 * a target that has no index (404: a Go program, a cprof before process
 * trees), the target as it is, silently. */
static void procs_done(void *arg, collect_result_t *r) {
  loop_t *l = arg;
  collect_scraper_t *s = l->s;
  char err[256] = "";
  collect_reason_t reason = COLLECT_REASON_OTHER;
  if (!r->error[0] && r->status == 404) {
    if (start_fetch(s, l, l->url, done, l) == 0)
      return;
    snprintf(err, sizeof err, "out of memory");
  }
  proc_scrape_t *procs = err[0] ? NULL : calloc(MAX_TREE, sizeof *procs);
  int n = 0;
  if (!err[0] && bad_answer(r, err, sizeof err, &reason) == 0) {
    char *body = procs ? malloc(r->len + 1) : NULL;
    if (body) {
      memcpy(body, r->data, r->len);
      body[r->len] = '\0';
      n = parse_processes(body, procs, MAX_TREE);
      free(body);
    }
    if (!body)
      snprintf(err, sizeof err, "out of memory");
    else if (n <= 0)
      snprintf(err, sizeof err, "%s: not a list of processes", l->procs_url);
  } else if (err[0] && !strstr(err, "out of memory")) {
    char what[256];
    snprintf(what, sizeof what, "%s", err);
    snprintf(err, sizeof err, "%.100s: %.150s", l->procs_url, what);
  }
  l->round.pending = 0;
  l->round.failed = 0;
  l->round.error[0] = '\0';
  l->round.reason = reason;
  l->round.start_ns = wall_ns() - r->duration_ns;
  /* pending counts one more until every fetch is added: none may end the
   * round early (a callback runs only from collect_fetcher_run, but an
   * add can fail). */
  l->round.pending = 1;
  for (int i = 0; i < n; i++) {
    proc_scrape_t *ps = malloc(sizeof *ps);
    char *url = NULL;
    if (ps) {
      *ps = procs[i];
      ps->l = l;
    }
    if (!ps || asprintf(&url, "%s%cpid=%s", l->url, strchr(l->url, '?') ? '&' : '?', ps->pid) < 0 ||
        start_fetch(s, l, url, proc_done, ps) != 0) {
      free(ps);
      snprintf(err, sizeof err, "out of memory");
    } else {
      l->round.pending++;
    }
    free(url);
  }
  free(procs);
  if (err[0] && !l->round.error[0]) {
    snprintf(l->round.error, sizeof l->round.error, "%s", err);
    count_fetch(s, r, 1);
  }
  if (--l->round.pending == 0)
    loop_done(l, l->round.start_ns, r->duration_ns, l->round.error, l->round.reason);
}

static int start_scrape(collect_scraper_t *s, loop_t *l) {
  l->in_flight = 1;
  int rc = l->procs_url ? start_fetch(s, l, l->procs_url, procs_done, l)
                        : start_fetch(s, l, l->url, done, l);
  if (rc != 0)
    l->in_flight = 0;
  return rc;
}

int collect_scraper_run(collect_scraper_t *s) {
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC), shortest = INT64_MAX;
  for (size_t i = 0; i < s->n; i++) {
    loop_t *l = &s->loops[i];
    int64_t every = (int64_t)l->st.job->interval_ms * 1000000;
    /* Spread over the interval by the URL, the same offset every run. */
    uint64_t h = cprof__hash_bytes(CPROF_HASH_SEED, l->url, strlen(l->url));
    l->next_ns = start + (int64_t)(h % (uint64_t)every);
    if (every < shortest)
      shortest = every;
  }
  int64_t next_log = start + (shortest == INT64_MAX ? 10000000000 : shortest);
  while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
    int64_t now = cprof__now_ns(CLOCK_MONOTONIC), wait = 1000000000;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->n; i++) {
      loop_t *l = &s->loops[i];
      int64_t every = (int64_t)l->st.job->interval_ms * 1000000;
      if (!l->in_flight && l->next_ns <= now) {
        /* Late (a scrape outlasted its interval): the next slot ahead. */
        while (l->next_ns <= now)
          l->next_ns += every;
        pthread_mutex_unlock(&s->lock);
        if (start_scrape(s, l) != 0)
          fprintf(stderr, "cprof collect: out of memory starting a scrape of %s\n", l->url);
        pthread_mutex_lock(&s->lock);
      }
      if (!l->in_flight && l->next_ns - now < wait)
        wait = l->next_ns - now;
    }
    if (now >= next_log) {
      round_line(s, shortest);
      memset(&s->round, 0, sizeof s->round);
      while (next_log <= now)
        next_log += shortest;
    }
    pthread_mutex_unlock(&s->lock);
    if (collect_fetcher_run(s->fetcher, (long)(wait > 0 ? wait / 1000000 : 0)) < 0)
      return -EIO;
  }
  /* Stopping: what is in flight finishes and is stored. */
  while (collect_fetcher_run(s->fetcher, 100) > 0)
    ;
  return 0;
}

void collect_scraper_stop(collect_scraper_t *s) {
  __atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
  collect_fetcher_wakeup(s->fetcher);
}

size_t collect_scraper_status(collect_scraper_t *s, collect_loop_status_t *out, size_t max) {
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < s->n && i < max; i++)
    out[i] = s->loops[i].st;
  pthread_mutex_unlock(&s->lock);
  return s->n;
}

void collect_scraper_totals(collect_scraper_t *s, collect_scrape_totals_t *out) {
  pthread_mutex_lock(&s->lock);
  *out = s->totals;
  pthread_mutex_unlock(&s->lock);
}
