/* Remote write to Grafana Pyroscope (collect/push.h). */
#include "collect/push.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "collect/fetch.h"
#include "core/buf.h"
#include "push/ingest.h"

#define BACKOFF_FIRST_NS 500000000LL
#define BACKOFF_MAX_NS 30000000000LL
#define REQUEST_TIMEOUT_MS 30000L

typedef struct item {
  char *url;  /* the ingest URL, query and all */
  char *stc;  /* sample_type_config */
  char *what; /* "JOB ADDR KIND", for messages */
  void *data; /* the profile's bytes */
  size_t len;
} item_t;

struct collect_pusher {
  const collect_remote_write_t *rw;
  CURL *curl;
  struct curl_slist *headers;
  item_t **ring; /* cap slots, count from head */
  size_t cap, head, count;
  int inflight;         /* an item is out of the ring, being sent */
  int stopping;         /* under lock */
  int64_t deadline_ns;  /* monotonic: when stopping gives up */
  int failing;          /* the last attempt failed; its line is written */
  pthread_mutex_t lock; /* all the above but curl, and totals */
  pthread_cond_t cond;  /* an item queued, or stopping */
  collect_push_totals_t totals;
  pthread_t thread;
  int started;
};

/* libcurl as the command links it, for push/ingest.c. */
static const cprof__curl_t linked_curl = {
    .easy_init = curl_easy_init,
    .easy_setopt = curl_easy_setopt,
    .easy_perform = curl_easy_perform,
    .easy_getinfo = curl_easy_getinfo,
    .easy_cleanup = curl_easy_cleanup,
    .easy_reset = curl_easy_reset,
    .easy_strerror = curl_easy_strerror,
    .mime_init = curl_mime_init,
    .mime_addpart = curl_mime_addpart,
    .mime_name = curl_mime_name,
    .mime_filename = curl_mime_filename,
    .mime_type = curl_mime_type,
    .mime_data = curl_mime_data,
    .mime_free = curl_mime_free,
};

char *collect_push_name(const char *job, const char *instance, const collect_label_t *labels,
                        size_t n) {
  cprof__ingest_tag_t *tags = malloc((n + 1) * sizeof *tags);
  if (!tags)
    return NULL;
  tags[0] = (cprof__ingest_tag_t){"instance", instance};
  for (size_t i = 0; i < n; i++)
    tags[i + 1] = (cprof__ingest_tag_t){labels[i].name, labels[i].value};
  char *name = cprof__ingest_name(job, tags, n + 1);
  free(tags);
  return name;
}

/* ---- The queue ---- */

static void item_free(item_t *it) {
  if (!it)
    return;
  free(it->url);
  free(it->stc);
  free(it->what);
  free(it->data);
  free(it);
}

static item_t *item_new(const collect_pusher_t *p, const collect_push_profile_t *prof) {
  item_t *it = calloc(1, sizeof *it);
  if (!it)
    return NULL;
  char *name = collect_push_name(prof->job, prof->instance, prof->labels, prof->nlabels);
  int64_t from = prof->start_ns / 1000000000;
  int64_t until = (prof->start_ns + (prof->duration_ns > 0 ? prof->duration_ns : 0)) / 1000000000;
  if (name)
    it->url = cprof__ingest_url(
        p->rw->url, name, from, until,
        cprof__ingest_sample_rate(&prof->profile->period_type, prof->profile->period));
  free(name);
  it->stc = cprof__ingest_sample_type_config(prof->kind, prof->delta, prof->profile->sample_types,
                                             prof->profile->n_sample_types);
  if (asprintf(&it->what, "%s %s %s", prof->job, prof->instance, prof->kind) < 0)
    it->what = NULL;
  it->data = malloc(prof->len ? prof->len : 1);
  if (!it->url || !it->stc || !it->what || !it->data) {
    item_free(it);
    return NULL;
  }
  memcpy(it->data, prof->data, prof->len);
  it->len = prof->len;
  return it;
}

int collect_pusher_enqueue(collect_pusher_t *p, const collect_push_profile_t *prof) {
  item_t *it = item_new(p, prof);
  pthread_mutex_lock(&p->lock);
  if (!it || p->stopping) {
    p->totals.dropped++;
    pthread_mutex_unlock(&p->lock);
    item_free(it);
    return it ? 0 : -ENOMEM;
  }
  if (p->count == p->cap) { /* full: the oldest goes */
    item_free(p->ring[p->head]);
    p->head = (p->head + 1) % p->cap;
    p->count--;
    p->totals.dropped++;
  }
  p->ring[(p->head + p->count) % p->cap] = it;
  p->count++;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
  return 0;
}

void collect_pusher_totals(collect_pusher_t *p, collect_push_totals_t *out) {
  pthread_mutex_lock(&p->lock);
  *out = p->totals;
  out->queued = p->count + (size_t)p->inflight;
  pthread_mutex_unlock(&p->lock);
}

/* ---- Sending ---- */

/* Aborts a request when stopping has run out of time. */
static int late(void *arg) {
  collect_pusher_t *p = arg;
  pthread_mutex_lock(&p->lock);
  int late = p->stopping && cprof__now_ns(CLOCK_MONOTONIC) >= p->deadline_ns;
  pthread_mutex_unlock(&p->lock);
  return late;
}

/* One attempt; why gets the reason when it is not SENT. */
static int send_one(collect_pusher_t *p, const item_t *it, long timeout_ms, char *why,
                    size_t whylen) {
  cprof__ingest_request_t r = {.url = it->url,
                               .profile = it->data,
                               .len = it->len,
                               .stc = it->stc,
                               .user_agent = "cprof-collect/" CPROF_VERSION,
                               .username = p->rw->username,
                               .password = p->rw->password,
                               .headers = p->headers,
                               .timeout_ms = timeout_ms,
                               .abort = late,
                               .abort_arg = p};
  return cprof__ingest_post(&linked_curl, p->curl, &r, why, whylen);
}

/* Waits on the condition until abs_ns (monotonic) or a signal. */
static void wait_until(collect_pusher_t *p, int64_t abs_ns) {
  struct timespec ts = {.tv_sec = abs_ns / 1000000000, .tv_nsec = abs_ns % 1000000000};
  pthread_cond_timedwait(&p->cond, &p->lock, &ts);
}

static void *sender(void *arg) {
  collect_pusher_t *p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->count && !p->stopping)
      pthread_cond_wait(&p->cond, &p->lock);
    if (!p->count || (p->stopping && cprof__now_ns(CLOCK_MONOTONIC) >= p->deadline_ns))
      break;
    item_t *it = p->ring[p->head];
    p->head = (p->head + 1) % p->cap;
    p->count--;
    p->inflight = 1;
    int64_t backoff = BACKOFF_FIRST_NS;
    for (;;) {
      long timeout = REQUEST_TIMEOUT_MS;
      if (p->stopping) {
        int64_t left = (p->deadline_ns - cprof__now_ns(CLOCK_MONOTONIC)) / 1000000;
        if (left <= 0) {
          p->totals.dropped++;
          break;
        }
        timeout = left < timeout ? (long)left : timeout;
      }
      pthread_mutex_unlock(&p->lock);
      char why[256] = "";
      int r = send_one(p, it, timeout, why, sizeof why);
      pthread_mutex_lock(&p->lock);
      if (r == CPROF_INGEST_SENT) {
        p->totals.pushed++;
        if (p->failing)
          fprintf(stderr, "cprof collect: remote write to %s works again\n", p->rw->url);
        p->failing = 0;
        break;
      }
      if (r == CPROF_INGEST_REJECTED) {
        p->totals.rejected++;
        fprintf(stderr, "cprof collect: remote write: %s refused the profile of %s: %s\n",
                p->rw->url, it->what, why);
        break;
      }
      p->totals.retried++;
      if (!p->failing)
        fprintf(stderr, "cprof collect: remote write to %s failed: %s; retrying\n", p->rw->url,
                why);
      p->failing = 1;
      /* A pause, cut short by a stop (then retried at once, up to the
       * deadline). */
      int was_stopping = p->stopping;
      int64_t until = cprof__now_ns(CLOCK_MONOTONIC) + backoff;
      if (p->stopping && until > p->deadline_ns)
        until = p->deadline_ns;
      while (p->stopping == was_stopping && cprof__now_ns(CLOCK_MONOTONIC) < until)
        wait_until(p, until);
      backoff = backoff * 2 < BACKOFF_MAX_NS ? backoff * 2 : BACKOFF_MAX_NS;
    }
    p->inflight = 0;
    pthread_mutex_unlock(&p->lock);
    item_free(it);
    pthread_mutex_lock(&p->lock);
  }
  /* Stopped: what could not be sent in time. */
  while (p->count) {
    item_free(p->ring[p->head]);
    p->head = (p->head + 1) % p->cap;
    p->count--;
    p->totals.dropped++;
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

int collect_pusher_new(const collect_remote_write_t *rw, collect_pusher_t **out, char *err,
                       size_t errlen) {
  const char *why;
  if (!collect_remote_write_url_ok(rw->url, &why)) {
    snprintf(err, errlen, "remote write url \"%s\" %s", rw->url, why);
    return -EINVAL;
  }
  collect_pusher_t *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  p->rw = rw;
  p->cap = rw->queue_size > 0 ? (size_t)rw->queue_size : COLLECT_DEFAULT_QUEUE_SIZE;
  pthread_mutex_init(&p->lock, NULL);
  cprof__cond_init_monotonic(&p->cond);
  int rc = -ENOMEM;
  char *h = NULL;
  if (!(p->ring = calloc(p->cap, sizeof *p->ring)))
    goto fail;
  if (rw->bearer_token && (asprintf(&h, "Authorization: Bearer %s", rw->bearer_token) < 0 ||
                           !(p->headers = curl_slist_append(p->headers, h))))
    goto fail;
  free(h);
  h = NULL;
  if (rw->tenant_id && (asprintf(&h, "X-Scope-OrgID: %s", rw->tenant_id) < 0 ||
                        !(p->headers = curl_slist_append(p->headers, h))))
    goto fail;
  free(h);
  h = NULL;
  rc = -EIO;
  if (!(p->curl = curl_easy_init()))
    goto fail;
  if (pthread_create(&p->thread, NULL, sender, p) != 0)
    goto fail;
  p->started = 1;
  *out = p;
  return 0;
fail:
  free(h);
  snprintf(err, errlen, "remote write: %s", rc == -ENOMEM ? "out of memory" : "cannot start");
  collect_pusher_free(p);
  return rc;
}

void collect_pusher_stop(collect_pusher_t *p, long flush_ms) {
  if (!p || !p->started)
    return;
  pthread_mutex_lock(&p->lock);
  p->stopping = 1;
  p->deadline_ns = cprof__now_ns(CLOCK_MONOTONIC) + (int64_t)flush_ms * 1000000;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  pthread_join(p->thread, NULL);
  p->started = 0;
}

void collect_pusher_free(collect_pusher_t *p) {
  if (!p)
    return;
  collect_pusher_stop(p, 0);
  for (size_t i = 0; i < p->count; i++)
    item_free(p->ring[(p->head + i) % p->cap]);
  free(p->ring);
  if (p->curl)
    curl_easy_cleanup(p->curl);
  curl_slist_free_all(p->headers);
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
  free(p);
}
