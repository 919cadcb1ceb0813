/* Remote write to Grafana Pyroscope (collect/push.h). */
#include "collect/push.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/fetch.h"
#include "core/buf.h"

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

static int64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* ---- The pure parts ---- */

/* Appends s with the characters that would end a Pyroscope name or tag
 * early replaced by _. */
static void put_tag_text(cprof__buf_t *b, const char *s) {
  for (; *s; s++)
    cprof__buf_putc(b, strchr("{},= \t\r\n", *s) ? '_' : *s);
}

char *collect_push_name(const char *job, const char *instance, const collect_label_t *labels,
                        size_t n) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  put_tag_text(&b, job);
  cprof__buf_puts(&b, "{instance=");
  put_tag_text(&b, instance);
  for (size_t i = 0; i < n; i++) {
    cprof__buf_putc(&b, ',');
    put_tag_text(&b, labels[i].name);
    cprof__buf_putc(&b, '=');
    put_tag_text(&b, labels[i].value);
  }
  cprof__buf_puts(&b, "}");
  cprof__buf_putc(&b, '\0');
  return b.failed ? (cprof__buf_free(&b), NULL) : cprof__buf_take(&b, NULL);
}

char *collect_push_url(const char *base, const char *name, int64_t from_s, int64_t until_s,
                       long hz) {
  size_t bl = strlen(base);
  while (bl && base[bl - 1] == '/')
    bl--;
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_append(&b, base, bl);
  cprof__buf_puts(&b, "/ingest?name=");
  collect_url_escape(&b, name);
  cprof__buf_printf(&b, "&from=%lld&until=%lld&format=pprof&spyName=cprof", (long long)from_s,
                    (long long)until_s);
  if (hz > 0)
    cprof__buf_printf(&b, "&sampleRate=%ld", hz);
  cprof__buf_putc(&b, '\0');
  return b.failed ? (cprof__buf_free(&b), NULL) : cprof__buf_take(&b, NULL);
}

static void json_string(cprof__buf_t *b, const char *s) {
  cprof__buf_putc(b, '"');
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\')
      cprof__buf_printf(b, "\\%c", *c);
    else if (*c < 0x20)
      cprof__buf_printf(b, "\\u%04x", *c);
    else
      cprof__buf_putc(b, (char)*c);
  }
  cprof__buf_putc(b, '"');
}

typedef struct stc {
  const char *units, *display, *aggregation; /* NULL: left out */
  int cumulative, sampled;
} stc_t;

/* Pyroscope's settings for one sample type (push.h says which). */
static stc_t stc_for(const char *kind, int delta, const cprof__value_type_t *t) {
  int mutex = !strcmp(kind, "mutex");
  if (!strcmp(t->type, "samples"))
    return (stc_t){.units = "samples", .display = "cpu", .sampled = 1};
  if (!strcmp(t->type, "inuse_objects"))
    return (stc_t){.units = "objects", .aggregation = "average"};
  if (!strcmp(t->type, "inuse_space"))
    return (stc_t){.units = "bytes", .aggregation = "average"};
  if (!strcmp(t->type, "alloc_objects"))
    return (stc_t){.units = "objects", .cumulative = !delta};
  if (!strcmp(t->type, "alloc_space"))
    return (stc_t){.units = "bytes", .cumulative = !delta};
  if (!strcmp(t->type, "goroutine") || !strcmp(t->type, "goroutines"))
    return (stc_t){.units = "goroutines", .display = "goroutines", .aggregation = "average"};
  if (!strcmp(t->type, "contentions"))
    return (stc_t){.units = "lock_samples",
                   .display = mutex ? "mutex_count" : "block_count",
                   .cumulative = !delta};
  if (!strcmp(t->type, "delay"))
    return (stc_t){.units = "lock_nanoseconds",
                   .display = mutex ? "mutex_duration" : "block_duration",
                   .cumulative = !delta};
  stc_t s = {.units = !strcmp(t->unit, "bytes")   ? "bytes"
                      : !strcmp(t->unit, "count") ? "objects"
                                                  : t->unit,
             .aggregation = delta ? NULL : "average"};
  if (!strcmp(t->type, "cpu"))
    s.display = "cpu_nanoseconds";
  return s;
}

char *collect_push_sample_type_config(const char *kind, int delta, const cprof__value_type_t *types,
                                      size_t n) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_putc(&b, '{');
  for (size_t i = 0; i < n; i++) {
    stc_t s = stc_for(kind, delta, &types[i]);
    if (i)
      cprof__buf_putc(&b, ',');
    json_string(&b, types[i].type);
    cprof__buf_puts(&b, ":{\"units\":");
    json_string(&b, s.units ? s.units : "");
    if (s.display) {
      cprof__buf_puts(&b, ",\"display-name\":");
      json_string(&b, s.display);
    }
    if (s.aggregation) {
      cprof__buf_puts(&b, ",\"aggregation\":");
      json_string(&b, s.aggregation);
    }
    if (s.cumulative)
      cprof__buf_puts(&b, ",\"cumulative\":true");
    if (s.sampled)
      cprof__buf_puts(&b, ",\"sampled\":true");
    cprof__buf_putc(&b, '}');
  }
  cprof__buf_puts(&b, "}");
  cprof__buf_putc(&b, '\0');
  return b.failed ? (cprof__buf_free(&b), NULL) : cprof__buf_take(&b, NULL);
}

long collect_push_sample_rate(const cprof__pf_t *p) {
  if (!p->period_type.type || strcmp(p->period_type.type, "cpu") || !p->period_type.unit ||
      strcmp(p->period_type.unit, "nanoseconds") || p->period <= 0)
    return 0;
  return (long)((1000000000 + p->period / 2) / p->period);
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
    it->url =
        collect_push_url(p->rw->url, name, from, until, collect_push_sample_rate(prof->profile));
  free(name);
  it->stc = collect_push_sample_type_config(prof->kind, prof->delta, prof->profile->sample_types,
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

typedef struct answer {
  char first[160]; /* the body's first bytes, for a message */
  size_t n;
} answer_t;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg) {
  answer_t *a = arg;
  size_t len = size * nmemb;
  for (size_t i = 0; i < len && a->n + 1 < sizeof a->first; i++)
    a->first[a->n++] = data[i] == '\n' || data[i] == '\r' ? ' ' : data[i];
  a->first[a->n] = '\0';
  return len;
}

/* Aborts a request when stopping has run out of time. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  (void)dt, (void)dn, (void)ut, (void)un;
  collect_pusher_t *p = arg;
  pthread_mutex_lock(&p->lock);
  int late = p->stopping && mono_ns() >= p->deadline_ns;
  pthread_mutex_unlock(&p->lock);
  return late;
}

enum { SENT, RETRY, REJECTED };

/* One attempt; why gets the reason when it is not SENT. */
static int send_one(collect_pusher_t *p, const item_t *it, long timeout_ms, char *why,
                    size_t whylen) {
  CURL *c = p->curl;
  curl_mime *mime = curl_mime_init(c);
  curl_mimepart *part;
  if (!mime)
    return snprintf(why, whylen, "out of memory"), RETRY;
  part = curl_mime_addpart(mime);
  curl_mime_name(part, "profile");
  curl_mime_filename(part, "profile.pprof");
  curl_mime_type(part, "application/octet-stream");
  curl_mime_data(part, it->data, it->len);
  part = curl_mime_addpart(mime);
  curl_mime_name(part, "sample_type_config");
  curl_mime_filename(part, "sample_type_config.json");
  curl_mime_type(part, "application/json");
  curl_mime_data(part, it->stc, CURL_ZERO_TERMINATED);

  answer_t a = {.n = 0};
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, it->url);
  curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, p);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "cprof-collect/" CPROF_VERSION);
  if (p->headers)
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->headers);
  if (p->rw->username) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, p->rw->username);
    curl_easy_setopt(c, CURLOPT_PASSWORD, p->rw->password ? p->rw->password : "");
  }
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_mime_free(mime);
  if (rc != CURLE_OK)
    return snprintf(why, whylen, "%s", curl_easy_strerror(rc)), RETRY;
  if (status >= 200 && status < 300)
    return SENT;
  snprintf(why, whylen, "HTTP status %ld%s%s", status, a.n ? ": " : "", a.first);
  return status == 429 || status >= 500 ? RETRY : REJECTED;
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
    if (!p->count || (p->stopping && mono_ns() >= p->deadline_ns))
      break;
    item_t *it = p->ring[p->head];
    p->head = (p->head + 1) % p->cap;
    p->count--;
    p->inflight = 1;
    int64_t backoff = BACKOFF_FIRST_NS;
    for (;;) {
      long timeout = REQUEST_TIMEOUT_MS;
      if (p->stopping) {
        int64_t left = (p->deadline_ns - mono_ns()) / 1000000;
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
      if (r == SENT) {
        p->totals.pushed++;
        if (p->failing)
          fprintf(stderr, "cprof collect: remote write to %s works again\n", p->rw->url);
        p->failing = 0;
        break;
      }
      if (r == REJECTED) {
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
      int64_t until = mono_ns() + backoff;
      if (p->stopping && until > p->deadline_ns)
        until = p->deadline_ns;
      while (p->stopping == was_stopping && mono_ns() < until)
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
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->cond, &ca);
  pthread_condattr_destroy(&ca);
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
  p->deadline_ns = mono_ns() + (int64_t)flush_ms * 1000000;
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
