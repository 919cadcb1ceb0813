/* Grafana Pyroscope's ingest API (push/ingest.h). */
#include "push/ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends s with the characters that would end a Pyroscope name or tag
 * early replaced by _. */
static void put_tag_text(cprof__buf_t *b, const char *s) {
  for (; *s; s++)
    cprof__buf_putc(b, strchr("{},= \t\r\n", *s) ? '_' : *s);
}

static char *take(cprof__buf_t *b) {
  cprof__buf_putc(b, '\0');
  return b->failed ? (cprof__buf_free(b), NULL) : cprof__buf_take(b, NULL);
}

char *cprof__ingest_name(const char *app, const cprof__ingest_tag_t *tags, size_t n) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  put_tag_text(&b, app);
  cprof__buf_putc(&b, '{');
  for (size_t i = 0; i < n; i++) {
    if (i)
      cprof__buf_putc(&b, ',');
    put_tag_text(&b, tags[i].name);
    cprof__buf_putc(&b, '=');
    put_tag_text(&b, tags[i].value);
  }
  cprof__buf_putc(&b, '}');
  return take(&b);
}

void cprof__url_escape(cprof__buf_t *b, const char *s) {
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
        strchr("-._~", *c))
      cprof__buf_putc(b, (char)*c);
    else
      cprof__buf_printf(b, "%%%02X", *c);
  }
}

char *cprof__ingest_url(const char *base, const char *name, int64_t from_s, int64_t until_s,
                        long hz) {
  size_t bl = strlen(base);
  while (bl && base[bl - 1] == '/')
    bl--;
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_append(&b, base, bl);
  cprof__buf_puts(&b, "/ingest?name=");
  cprof__url_escape(&b, name);
  cprof__buf_printf(&b, "&from=%lld&until=%lld&format=pprof&spyName=cprof", (long long)from_s,
                    (long long)until_s);
  if (hz > 0)
    cprof__buf_printf(&b, "&sampleRate=%ld", hz);
  return take(&b);
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

/* Pyroscope's settings for one sample type (ingest.h says which). */
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

char *cprof__ingest_sample_type_config(const char *kind, int delta,
                                       const cprof__value_type_t *types, size_t n) {
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
  cprof__buf_putc(&b, '}');
  return take(&b);
}

long cprof__ingest_sample_rate(const cprof__value_type_t *period_type, int64_t period) {
  if (!period_type->type || strcmp(period_type->type, "cpu") || !period_type->unit ||
      strcmp(period_type->unit, "nanoseconds") || period <= 0)
    return 0;
  return (long)((1000000000 + period / 2) / period);
}

/* ---- The request ---- */

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

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  (void)dt, (void)dn, (void)ut, (void)un;
  const cprof__ingest_request_t *r = arg;
  return r->abort(r->abort_arg);
}

#if LIBCURL_VERSION_NUM < 0x075700 /* 7.87: a header older than the libcurl loaded */
#define CURLOPT_QUICK_EXIT ((CURLoption)(CURLOPTTYPE_LONG + 322))
#endif

/* How often a request that may be aborted asks whether it is. */
#define POLL_MS 50

/* Runs the request on c, through the multi interface when the table has
 * it and the request may be aborted: an abort then ends it within POLL_MS.
 * Else curl_easy_perform, whose progress calls come up to a second apart. */
static CURLcode perform(const cprof__curl_t *api, CURL *c, const cprof__ingest_request_t *r) {
  CURLM *m = r->abort && api->multi_init && api->multi_poll ? api->multi_init() : NULL;
  if (!m)
    return api->easy_perform(c);
  if (api->multi_add_handle(m, c) != CURLM_OK) {
    api->multi_cleanup(m);
    return api->easy_perform(c);
  }
  CURLcode rc = CURLE_OK;
  int running = 1;
  for (;;) {
    if (api->multi_perform(m, &running) != CURLM_OK) {
      rc = CURLE_OUT_OF_MEMORY; /* what multi_perform's failures come down to */
      break;
    }
    if (!running) {
      int left;
      for (CURLMsg *msg; (msg = api->multi_info_read(m, &left));)
        if (msg->msg == CURLMSG_DONE && msg->easy_handle == c)
          rc = msg->data.result;
      break;
    }
    if (r->abort(r->abort_arg)) {
      rc = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    api->multi_poll(m, NULL, 0, POLL_MS, NULL);
  }
  api->multi_remove_handle(m, c);
  api->multi_cleanup(m);
  return rc;
}

static void add_part(const cprof__curl_t *api, curl_mime *mime, const char *name, const char *file,
                     const char *type, const void *data, size_t len) {
  curl_mimepart *part = api->mime_addpart(mime);
  api->mime_name(part, name);
  api->mime_filename(part, file);
  api->mime_type(part, type);
  api->mime_data(part, data, len);
}

int cprof__ingest_post(const cprof__curl_t *api, CURL *c, const cprof__ingest_request_t *r,
                       char *why, size_t whylen) {
  curl_mime *mime = api->mime_init(c);
  if (!mime)
    return snprintf(why, whylen, "out of memory"), CPROF_INGEST_RETRY;
  add_part(api, mime, "profile", "profile.pprof", "application/octet-stream", r->profile, r->len);
  add_part(api, mime, "sample_type_config", "sample_type_config.json", "application/json", r->stc,
           strlen(r->stc));

  answer_t a = {.n = 0};
  api->easy_reset(c);
  long connect_ms = r->timeout_ms < 10000 ? r->timeout_ms : 10000L;
  api->easy_setopt(c, CURLOPT_URL, r->url);
  api->easy_setopt(c, CURLOPT_MIMEPOST, mime);
  /* No signals: libcurl would otherwise time its name lookups with
   * SIGALRM, which is the program's. */
  api->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  /* A request cut short (an abort, a timeout) does not wait for its name
   * lookup to finish: libcurl's threaded resolver otherwise joins the
   * thread in getaddrinfo, which a server that does not answer holds for
   * ten seconds and more (glibc's timeout times its attempts, per server).
   * The lookup ends on its own, its thread detached. From libcurl 7.87;
   * an older one refuses the option and waits. */
  api->easy_setopt(c, CURLOPT_QUICK_EXIT, 1L);
  api->easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms);
  api->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  api->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  api->easy_setopt(c, CURLOPT_WRITEDATA, &a);
  api->easy_setopt(c, CURLOPT_USERAGENT, r->user_agent);
  if (r->abort) {
    api->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    api->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    api->easy_setopt(c, CURLOPT_XFERINFODATA, (void *)r);
  }
  if (r->open_socket)
    api->easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, r->open_socket);
  if (r->headers)
    api->easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);
  if (r->username) {
    api->easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    api->easy_setopt(c, CURLOPT_USERNAME, r->username);
    api->easy_setopt(c, CURLOPT_PASSWORD, r->password ? r->password : "");
  }
  CURLcode rc = perform(api, c, r);
  long status = 0;
  api->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  api->mime_free(mime);
  if (rc != CURLE_OK)
    return snprintf(why, whylen, "%s", api->easy_strerror(rc)), CPROF_INGEST_RETRY;
  if (status >= 200 && status < 300)
    return CPROF_INGEST_SENT;
  snprintf(why, whylen, "HTTP status %ld%s%s", status, a.n ? ": " : "", a.first);
  return status == 429 || status >= 500 ? CPROF_INGEST_RETRY : CPROF_INGEST_REJECTED;
}
