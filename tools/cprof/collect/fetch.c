/* Scrapes in flight on one libcurl multi handle (collect/fetch.h). */
#include "collect/fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

#ifndef CPROF_VERSION
#define CPROF_VERSION "dev"
#endif

typedef struct transfer {
  struct transfer *prev, *next; /* the fetcher's transfers in flight */
  CURL *easy;
  struct curl_slist *headers;
  char *url, *username, *password;
  collect_fetch_done_fn done;
  void *arg;
  unsigned char *data;
  size_t len, cap, max;
  int too_big;
  int64_t start_ns;
  char curl_err[CURL_ERROR_SIZE];
} transfer_t;

struct collect_fetcher {
  CURLM *multi;
  size_t max_bytes;
  int running;
  transfer_t *head; /* in flight */
};

static void link_in(collect_fetcher_t *f, transfer_t *t) {
  t->prev = NULL;
  t->next = f->head;
  if (f->head)
    f->head->prev = t;
  f->head = t;
  f->running++;
}

static void unlink_out(collect_fetcher_t *f, transfer_t *t) {
  if (t->prev)
    t->prev->next = t->next;
  else
    f->head = t->next;
  if (t->next)
    t->next->prev = t->prev;
  f->running--;
  curl_multi_remove_handle(f->multi, t->easy);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
  transfer_t *t = arg;
  size_t len = size * n;
  if (t->len + len > t->max) {
    t->too_big = 1;
    return 0; /* libcurl ends the transfer with CURLE_WRITE_ERROR */
  }
  if (t->len + len > t->cap) {
    size_t cap = t->cap ? t->cap : 64 * 1024;
    while (cap < t->len + len)
      cap *= 2;
    unsigned char *d = realloc(t->data, cap);
    if (!d)
      return 0;
    t->data = d;
    t->cap = cap;
  }
  memcpy(t->data + t->len, p, len);
  t->len += len;
  return len;
}

static void transfer_free(transfer_t *t) {
  if (!t)
    return;
  if (t->easy)
    curl_easy_cleanup(t->easy);
  curl_slist_free_all(t->headers);
  free(t->url);
  free(t->username);
  free(t->password);
  free(t->data);
  free(t);
}

int collect_fetcher_new(size_t max_bytes, collect_fetcher_t **out) {
  static int global;
  if (!global) { /* the collector's main thread calls this before any other */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      return -EIO;
    global = 1;
  }
  collect_fetcher_t *f = calloc(1, sizeof *f);
  if (!f)
    return -ENOMEM;
  f->multi = curl_multi_init();
  if (!f->multi) {
    free(f);
    return -EIO;
  }
  f->max_bytes = max_bytes;
  *out = f;
  return 0;
}

void collect_fetcher_free(collect_fetcher_t *f) {
  if (!f)
    return;
  while (f->head) {
    transfer_t *t = f->head;
    unlink_out(f, t);
    transfer_free(t);
  }
  curl_multi_cleanup(f->multi);
  free(f);
}

int collect_fetcher_add(collect_fetcher_t *f, const collect_request_t *req,
                        collect_fetch_done_fn done, void *arg) {
  transfer_t *t = calloc(1, sizeof *t);
  if (!t)
    return -ENOMEM;
  t->done = done;
  t->arg = arg;
  t->max = f->max_bytes;
  t->url = strdup(req->url);
  t->easy = curl_easy_init();
  if (!t->url || !t->easy)
    goto nomem;
  CURL *c = t->easy;
  curl_easy_setopt(c, CURLOPT_URL, t->url);
  curl_easy_setopt(c, CURLOPT_PRIVATE, (char *)t);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "cprof-collect/" CPROF_VERSION);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms > 0 ? req->timeout_ms : 10000L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, t->curl_err);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)f->max_bytes);
  /* Gzip is what profiles come in already; other encodings are decoded. */
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  if (req->username) {
    t->username = strdup(req->username);
    t->password = strdup(req->password ? req->password : "");
    if (!t->username || !t->password)
      goto nomem;
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, t->username);
    curl_easy_setopt(c, CURLOPT_PASSWORD, t->password);
  }
  if (req->bearer_token) {
    char *h = NULL;
    if (asprintf(&h, "Authorization: Bearer %s", req->bearer_token) < 0)
      goto nomem;
    struct curl_slist *l = curl_slist_append(NULL, h); /* copies h */
    free(h);
    if (!l)
      goto nomem;
    t->headers = l;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, t->headers);
  }
  t->start_ns = cprof__now_ns(CLOCK_MONOTONIC);
  if (curl_multi_add_handle(f->multi, c) != CURLM_OK)
    goto nomem;
  link_in(f, t);
  return 0;
nomem:
  transfer_free(t);
  return -ENOMEM;
}

const char *collect_reason_name(collect_reason_t r) {
  static const char *const names[COLLECT_REASON_N] = {
      "",         "connection_refused", "timeout",         "dns",   "tls",  "too_large",
      "transfer", "http_status",        "invalid_profile", "store", "other"};
  return (unsigned)r < COLLECT_REASON_N ? names[r] : "other";
}

static collect_reason_t reason_of(CURLcode code) {
  switch (code) {
  case CURLE_COULDNT_CONNECT:
    return COLLECT_REASON_REFUSED;
  case CURLE_OPERATION_TIMEDOUT:
    return COLLECT_REASON_TIMEOUT;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
    return COLLECT_REASON_DNS;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
    return COLLECT_REASON_TLS;
  default:
    return COLLECT_REASON_TRANSFER;
  }
}

/* The result of a transfer that ended with code, handed to its callback. */
static void finish(collect_fetcher_t *f, transfer_t *t, CURLcode code) {
  collect_result_t r = {0};
  r.duration_ns = cprof__now_ns(CLOCK_MONOTONIC) - t->start_ns;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &r.status);
  if (t->too_big || code == CURLE_FILESIZE_EXCEEDED) {
    snprintf(r.error, sizeof r.error, "the answer is larger than %zu bytes", f->max_bytes);
    r.reason = COLLECT_REASON_TOO_LARGE;
  } else if (code != CURLE_OK) {
    snprintf(r.error, sizeof r.error, "%s",
             t->curl_err[0] ? t->curl_err : curl_easy_strerror(code));
    r.reason = reason_of(code);
  }
  r.data = t->data;
  r.len = t->len;
  t->data = NULL;
  unlink_out(f, t);
  t->done(t->arg, &r);
  free(r.data);
  transfer_free(t);
}

int collect_fetcher_run(collect_fetcher_t *f, long wait_ms) {
  int still = 0;
  if (curl_multi_perform(f->multi, &still) != CURLM_OK)
    return -EIO;
  if (still > 0 || f->running == 0) {
    if (curl_multi_poll(f->multi, NULL, 0, (int)(wait_ms > 0 ? wait_ms : 0), NULL) != CURLM_OK)
      return -EIO;
    if (curl_multi_perform(f->multi, &still) != CURLM_OK)
      return -EIO;
  }
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(f->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    transfer_t *t = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
    finish(f, t, m->data.result);
  }
  return f->running;
}

void collect_fetcher_wakeup(collect_fetcher_t *f) { curl_multi_wakeup(f->multi); }
