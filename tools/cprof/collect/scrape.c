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
  int64_t next_ns; /* monotonic: when due */
  int in_flight;
  struct collect_scraper *s;
} loop_t;

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
  for (size_t i = 0; i < s->n; i++)
    free(s->loops[i].url);
  free(s->loops);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* Stores a good profile; 0, or a negative errno with the reason in err. */
static int store(loop_t *l, const cprof__pf_t *p, const unsigned char *data, size_t len,
                 int64_t start_ns, char *err, size_t errlen) {
  const collect_target_t *t = l->st.target;
  collect_store_label_t labels[2 + 64];
  size_t n = 0;
  labels[n++] = (collect_store_label_t){"job", l->st.job->name};
  labels[n++] = (collect_store_label_t){"instance", t->addr};
  for (size_t i = 0; i < t->nlabels && n < sizeof labels / sizeof *labels; i++)
    labels[n++] = (collect_store_label_t){t->labels[i].name, t->labels[i].value};
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

/* Remote write: a copy of a stored profile for the pusher. */
static void push(loop_t *l, const cprof__pf_t *p, const unsigned char *data, size_t len,
                 int64_t start_ns) {
  const collect_target_t *t = l->st.target;
  collect_push_profile_t pp = {.job = l->st.job->name,
                               .instance = t->addr,
                               .kind = l->st.profile->name,
                               .delta = l->st.profile->delta,
                               .labels = t->labels,
                               .nlabels = t->nlabels,
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

static void done(void *arg, collect_result_t *r) {
  loop_t *l = arg;
  char err[256] = "";
  int64_t start_ns = wall_ns() - r->duration_ns;
  if (r->error[0]) {
    snprintf(err, sizeof err, "%s", r->error);
  } else if (r->status != 200) {
    char line[120];
    first_line(r->data, r->len, line, sizeof line);
    snprintf(err, sizeof err, "server returned HTTP status %ld%s%s", r->status, line[0] ? ": " : "",
             line);
  } else {
    cprof__pf_t *p = NULL;
    char why[200];
    if (collect_decode_valid(r->data, r->len, &p, why, sizeof why) != 0)
      snprintf(err, sizeof err, "invalid profile: %s", why);
    else if (store(l, p, r->data, r->len, start_ns, why, sizeof why) != 0)
      snprintf(err, sizeof err, "cannot store the profile: %s", why);
    else if (l->s->pusher)
      push(l, p, r->data, r->len, start_ns);
    cprof__pf_free(p);
  }
  collect_scraper_t *s = l->s;
  pthread_mutex_lock(&s->lock);
  l->in_flight = 0;
  l->st.last_ns = start_ns;
  l->st.last_duration_ns = r->duration_ns;
  l->st.scrapes++;
  s->totals.scrapes++;
  s->totals.bytes_scraped += r->len;
  s->round.bytes += r->len;
  if (err[0]) {
    l->st.health = COLLECT_BAD;
    l->st.failures++;
    s->totals.failures++;
    s->round.failed++;
    snprintf(l->st.last_error, sizeof l->st.last_error, "%s", err);
  } else {
    l->st.health = COLLECT_GOOD;
    l->st.last_error[0] = '\0';
    s->round.ok++;
  }
  pthread_mutex_unlock(&s->lock);
}

static int start_scrape(collect_scraper_t *s, loop_t *l) {
  const collect_job_t *j = l->st.job;
  /* A delta profile takes its seconds; the timeout covers that (config.c). */
  collect_request_t req = {.url = l->url,
                           .timeout_ms = j->timeout_ms,
                           .username = j->username,
                           .password = j->password,
                           .bearer_token = j->bearer_token};
  l->in_flight = 1;
  int rc = collect_fetcher_add(s->fetcher, &req, done, l);
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
      fprintf(stderr,
              "cprof collect: %llu scraped and stored, %llu failed, %.1f MB in the last %.0f s\n",
              (unsigned long long)s->round.ok, (unsigned long long)s->round.failed,
              (double)s->round.bytes / 1e6, (double)shortest / 1e9);
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
