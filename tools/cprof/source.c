/* A profile's bytes from a file, standard input or a URL (source.h says
 * which SOURCE is which). URLs go through libcurl's easy interface, set up
 * as go tool pprof's fetcher behaves: the same default path, ?seconds=
 * giving a timeout of 1.5 times the profile's duration plus 5 s (60 s plus
 * 5 without one), Basic auth from the URL, a few redirects, and one line
 * saying what went wrong. */
#include "source.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef CPROF_VERSION
#error "CPROF_VERSION comes from the project's version in CMakeLists.txt"
#endif

#define DEFAULT_PATH "/debug/pprof/profile" /* cmd/pprof's cpuProfileHandler */
#define MAX_REDIRECTS 5
#define READ_CHUNK 65536

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (errlen)
    vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

/* Copies src into dst for a terminal line: control characters and bytes
 * that are not printable ASCII are shown as \xHH, so that a file name or a
 * server's message cannot move the cursor or end the line. */
static void escape(char *dst, size_t dstlen, const char *src, size_t srclen) {
  size_t o = 0;
  for (size_t i = 0; i < srclen && o + 5 < dstlen; i++) {
    unsigned char c = (unsigned char)src[i];
    if (c < 0x20 || c >= 0x7f || c == '\\')
      o += (size_t)snprintf(dst + o, dstlen - o, c == '\\' ? "\\\\" : "\\x%02x", c);
    else
      dst[o++] = (char)c;
  }
  if (dstlen)
    dst[o < dstlen ? o : dstlen - 1] = '\0';
}

static char *escaped_copy(const char *s) {
  size_t n = strlen(s) * 4 + 1;
  char *d = malloc(n);
  if (d)
    escape(d, n, s, strlen(s));
  return d;
}

/* ---- the buffer the bytes go into ---------------------------------------- */

typedef struct buf {
  unsigned char *p;
  size_t len, cap;
  int too_big;
} buf_t;

/* Room for n more bytes and a NUL, within SOURCE_MAX_BYTES. */
static int buf_reserve(buf_t *b, size_t n) {
  if (n > SOURCE_MAX_BYTES - b->len) {
    b->too_big = 1;
    return -EFBIG;
  }
  if (b->len + n + 1 <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : READ_CHUNK;
  while (cap < b->len + n + 1)
    cap *= 2;
  if (cap > SOURCE_MAX_BYTES + 1)
    cap = SOURCE_MAX_BYTES + 1;
  unsigned char *p = realloc(b->p, cap);
  if (!p)
    return -ENOMEM;
  b->p = p;
  b->cap = cap;
  return 0;
}

static int buf_add(buf_t *b, const void *data, size_t n) {
  int rc = buf_reserve(b, n);
  if (rc)
    return rc;
  memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

/* ---- files and standard input -------------------------------------------- */

static int read_fd(int fd, const char *shown, buf_t *b, char *err, size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return fail(err, errlen, -EISDIR, "%s: is a directory, not a profile", shown);
    /* A regular file's size is known: one allocation, and a file over the
     * limit is refused before reading it. */
    if (S_ISREG(st.st_mode) && st.st_size > 0 && buf_reserve(b, (size_t)st.st_size) != 0)
      goto too_big;
  }
  for (;;) {
    size_t want = SOURCE_MAX_BYTES - b->len < READ_CHUNK ? SOURCE_MAX_BYTES - b->len : READ_CHUNK;
    char probe;
    if (want == 0) { /* at the limit: only one more byte is too much */
      ssize_t r = read(fd, &probe, 1);
      if (r < 0 && errno == EINTR)
        continue;
      if (r == 0)
        break;
      goto too_big;
    }
    if (buf_reserve(b, want) != 0)
      return fail(err, errlen, -ENOMEM, "%s: out of memory", shown);
    ssize_t r = read(fd, b->p + b->len, b->cap - b->len - 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return fail(err, errlen, -errno, "%s: %s", shown, strerror(errno));
    if (r == 0)
      break;
    b->len += (size_t)r;
  }
  if (b->p)
    b->p[b->len] = '\0';
  return 0;
too_big:
  return fail(err, errlen, -EFBIG, "%s: larger than %zu MiB, more than cprof reads", shown,
              SOURCE_MAX_BYTES >> 20);
}

static int read_file(const char *path, source_t *out, buf_t *b, char *err, size_t errlen) {
  out->name = escaped_copy(strcmp(path, "-") == 0 ? "standard input" : path);
  if (!out->name)
    return fail(err, errlen, -ENOMEM, "out of memory");
  if (strcmp(path, "-") == 0)
    return read_fd(STDIN_FILENO, out->name, b, err, errlen);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(err, errlen, -errno, "%s: %s", out->name, strerror(errno));
  int rc = read_fd(fd, out->name, b, err, errlen);
  close(fd);
  return rc;
}

/* ---- which SOURCE is a URL ---------------------------------------------- */

/* The length of a "scheme://" prefix (RFC 3986 scheme), or 0. */
static size_t scheme_length(const char *s) {
  size_t i = 0;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
    return 0;
  while (s[i] && strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-", s[i]))
    i++;
  return strncmp(s + i, "://", 3) == 0 ? i : 0;
}

static int is_scheme(const char *s, size_t n, const char *name) {
  return strlen(name) == n && strncasecmp(s, name, n) == 0;
}

/* Whether s[0..n) is [USER[:PASSWORD]@]HOST:PORT with a numeric port: what
 * Go's url.Parse, given "http://" + source, accepts as a host where the
 * source alone did not parse as a URL with a host. */
static int host_port(const char *s, size_t n) {
  const char *at = memrchr(s, '@', n);
  if (at) {
    n -= (size_t)(at + 1 - s);
    s = at + 1;
  }
  const char *colon = memrchr(s, ':', n);
  if (!colon || colon == s + n - 1)
    return 0;
  for (const char *p = colon + 1; p < s + n; p++)
    if (*p < '0' || *p > '9')
      return 0;
  if (s[0] == '[') /* an IPv6 literal, "[::1]:6060" */
    return colon > s && colon[-1] == ']';
  for (const char *p = s; p < colon; p++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_~%", *p))
      return 0;
  return 1;
}

int source_is_url(const char *source) {
  size_t n = scheme_length(source);
  if (n)
    return is_scheme(source, n, "http") || is_scheme(source, n, "https");
  return host_port(source, strcspn(source, "/?#"));
}

/* ---- URLs ---------------------------------------------------------------- */

/* Sets the URL's query to its own without any seconds= and with
 * seconds=N (pprof's -seconds replaces the URL's). */
static int set_seconds(CURLU *u, int seconds) {
  char *q = NULL, *nq;
  size_t n = 0;
  if (curl_url_get(u, CURLUPART_QUERY, &q, 0) != CURLUE_OK)
    q = NULL;
  nq = malloc((q ? strlen(q) : 0) + 32);
  if (!nq) {
    curl_free(q);
    return -ENOMEM;
  }
  for (char *p = q, *next; p && *p; p = next) {
    size_t len = strcspn(p, "&");
    next = p[len] ? p + len + 1 : p + len;
    if (len == 0 || (len >= 8 && strncmp(p, "seconds=", 8) == 0) ||
        (len == 7 && !strncmp(p, "seconds", 7)))
      continue;
    memcpy(nq + n, p, len);
    n += len;
    nq[n++] = '&';
  }
  sprintf(nq + n, "seconds=%d", seconds);
  curl_free(q);
  int rc = curl_url_set(u, CURLUPART_QUERY, nq, 0) == CURLUE_OK ? 0 : -EINVAL;
  free(nq);
  return rc;
}

/* The query's seconds=N, as Go's strconv.ParseInt(_, 10, 32) reads it, or 0. */
static int query_seconds(CURLU *u) {
  char *q = NULL;
  long v = 0;
  if (curl_url_get(u, CURLUPART_QUERY, &q, 0) != CURLUE_OK)
    return 0;
  for (char *p = q; p && *p; p += strcspn(p, "&"), p += *p == '&') {
    if (strncmp(p, "seconds=", 8) != 0)
      continue;
    char *end;
    errno = 0;
    v = strtol(p + 8, &end, 10);
    if (end == p + 8 || (*end && *end != '&') || errno || v > 2147483647L || v < -2147483647L)
      v = 0;
    break;
  }
  curl_free(q);
  return v > 0 ? (int)v : 0;
}

/* The source as the URL to fetch (*url, curl_free'd) and as shown, with
 * the password hidden (*shown, malloc'd and escaped), and the profile's
 * duration in seconds, 0 when it asks for none. */
static int prepare_url(const char *source, int seconds, char **url, char **shown, int *duration,
                       char *err, size_t errlen) {
  char *text = NULL, *path = NULL, *pw = NULL, *redacted = NULL;
  CURLU *u = curl_url();
  int rc = -ENOMEM;
  CURLUcode uc;
  *url = *shown = NULL;
  if (!u)
    goto fail;
  if (scheme_length(source))
    text = strdup(source);
  else if (asprintf(&text, "http://%s%s", source[0] == ':' ? "localhost" : "", source) < 0)
    text = NULL;
  if (!text)
    goto fail;
  if ((uc = curl_url_set(u, CURLUPART_URL, text, 0)) != CURLUE_OK) {
    char *e = escaped_copy(source);
    rc = fail(err, errlen, -EINVAL, "%s: not a valid URL (%s)", e ? e : "", curl_url_strerror(uc));
    free(e);
    goto fail;
  }
  if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK || !path[0] || !strcmp(path, "/"))
    if (curl_url_set(u, CURLUPART_PATH, DEFAULT_PATH, 0) != CURLUE_OK)
      goto fail;
  if (seconds > 0 && set_seconds(u, seconds) != 0)
    goto fail;
  *duration = query_seconds(u);
  if (curl_url_get(u, CURLUPART_URL, url, 0) != CURLUE_OK)
    goto fail;
  /* As Go's url.Redacted: the password is not for the terminal. */
  if (curl_url_get(u, CURLUPART_PASSWORD, &pw, 0) == CURLUE_OK &&
      curl_url_set(u, CURLUPART_PASSWORD, "xxxxx", 0) != CURLUE_OK)
    goto fail;
  if (curl_url_get(u, CURLUPART_URL, &redacted, 0) != CURLUE_OK)
    goto fail;
  if (!(*shown = escaped_copy(redacted)))
    goto fail;
  rc = 0;
fail:
  if (rc == -ENOMEM)
    fail(err, errlen, rc, "out of memory");
  if (rc) {
    curl_free(*url);
    *url = NULL;
  }
  curl_free(path);
  curl_free(pw);
  curl_free(redacted);
  free(text);
  curl_url_cleanup(u);
  return rc;
}

typedef struct fetch {
  buf_t body;
  char status[160]; /* the last status line's "404 Not Found" */
  int countdown;    /* a terminal: show the seconds left */
  int duration;
  struct timespec start;
  long shown_left;
} fetch_t;

static size_t on_body(char *data, size_t size, size_t n, void *arg) {
  fetch_t *f = arg;
  return buf_add(&f->body, data, size * n) == 0 ? size * n : 0; /* 0: curl stops */
}

/* Keeps the status line of the last response (redirects have their own). */
static size_t on_header(char *data, size_t size, size_t n, void *arg) {
  fetch_t *f = arg;
  size_t len = size * n;
  if (len > 5 && memcmp(data, "HTTP/", 5) == 0) {
    const char *sp = memchr(data, ' ', len);
    if (sp) {
      size_t rest = len - (size_t)(sp + 1 - data);
      while (rest && (sp[rest] == '\r' || sp[rest] == '\n'))
        rest--;
      escape(f->status, sizeof f->status, sp + 1, rest);
    }
  }
  return len;
}

/* On a terminal, "Please wait... N s left" on one line rewritten in place
 * while the server records the profile, as a countdown. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t d, curl_off_t ut, curl_off_t u) {
  fetch_t *f = arg;
  struct timespec now;
  (void)dt, (void)d, (void)ut, (void)u;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long ms = (now.tv_sec - f->start.tv_sec) * 1000 + (now.tv_nsec - f->start.tv_nsec) / 1000000;
  long left = ((long)f->duration * 1000 - ms + 999) / 1000;
  if (left < 0)
    left = 0;
  if (left != f->shown_left) {
    if (left > 0)
      fprintf(stderr, "\rPlease wait... %ld s left\033[K", left);
    else
      fprintf(stderr, "\rPlease wait... the server is finishing\033[K");
    fflush(stderr);
    f->shown_left = left;
  }
  return 0;
}

/* Go's time.Duration.String for whole seconds: 30s, 1m30s, 1h0m0s. */
static void go_duration(char *out, size_t n, int s) {
  if (s >= 3600)
    snprintf(out, n, "%dh%dm%ds", s / 3600, s / 60 % 60, s % 60);
  else if (s >= 60)
    snprintf(out, n, "%dm%ds", s / 60, s % 60);
  else
    snprintf(out, n, "%ds", s);
}

static int curl_ready(char *err, size_t errlen) {
  static int done;
  if (!done) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      return fail(err, errlen, -EIO, "cannot initialise libcurl");
    done = 1;
  }
  return 0;
}

static int fetch_url(const char *source, const source_options_t *o, source_t *out, buf_t *b,
                     char *err, size_t errlen) {
  fetch_t f = {.shown_left = -1};
  char curl_err[CURL_ERROR_SIZE] = "", *url = NULL;
  CURL *c = NULL;
  long code = 0;
  int rc = curl_ready(err, errlen);
  if (rc)
    return rc;
  if ((rc = prepare_url(source, o->seconds, &url, &out->name, &f.duration, err, errlen)) != 0)
    return rc;
  out->is_url = 1;
  if (!o->quiet) {
    fprintf(stderr, "Fetching profile over HTTP from %s\n", out->name);
    f.countdown = f.duration > 0 && isatty(STDERR_FILENO);
    if (f.duration > 0 && !f.countdown) {
      char d[32];
      go_duration(d, sizeof d, f.duration);
      fprintf(stderr, "Please wait... (%s)\n", d);
    }
  }
  if (!(c = curl_easy_init())) {
    rc = fail(err, errlen, -ENOMEM, "cannot start libcurl");
    goto done;
  }
  /* pprof's timeout: 1.5 times the profile's duration, or 60 s, and 5 s
   * more for the client (cmd/pprof's adjustURL and getProfile). */
  long timeout_ms = (f.duration > 0 ? f.duration * 1500L : 60000L) + 5000L;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "cprof/" CPROF_VERSION);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)MAX_REDIRECTS);
  /* user:password@ in the URL is sent as Basic auth (libcurl's default,
   * stated here so no build default changes it), and only to the URL's own
   * host: libcurl drops it on a redirect elsewhere. */
  curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)SOURCE_MAX_BYTES);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &f);
  if (f.countdown) {
    clock_gettime(CLOCK_MONOTONIC, &f.start);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &f);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  }
  CURLcode res = curl_easy_perform(c);
  if (f.countdown) /* the countdown's line goes; the "Fetching" line stays */
    fprintf(stderr, "\r\033[K");
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  if (f.body.too_big || res == CURLE_FILESIZE_EXCEEDED) {
    rc = fail(err, errlen, -EFBIG, "%s: the response is larger than %zu MiB, more than cprof reads",
              out->name, SOURCE_MAX_BYTES >> 20);
  } else if (res != CURLE_OK) {
    rc = fail(err, errlen, -EIO, "%s: %s", out->name,
              curl_err[0] ? curl_err : curl_easy_strerror(res));
  } else if (code != 200) {
    /* cprof's server, as Go's, says why in a plain-text body. */
    char line[240] = "";
    const char *body = (const char *)f.body.p;
    if (body)
      escape(line, sizeof line, body, strcspn(body, "\r\n") < 200 ? strcspn(body, "\r\n") : 200);
    if (!f.status[0])
      snprintf(f.status, sizeof f.status, "%ld", code);
    rc = fail(err, errlen, -EIO, "%s: server response: %s%s%s", out->name, f.status,
              line[0] ? " - " : "", line);
  } else {
    *b = f.body;
    f.body.p = NULL;
  }
done:
  free(f.body.p);
  curl_easy_cleanup(c);
  curl_free(url);
  return rc;
}

/* ---- the API -------------------------------------------------------------- */

int source_read_opts(const char *source, const source_options_t *opts, source_t *out, char *err,
                     size_t errlen) {
  static const source_options_t none;
  buf_t b = {0};
  size_t n;
  int rc;
  memset(out, 0, sizeof *out);
  if (!opts)
    opts = &none;
  if (!source || !source[0])
    return fail(err, errlen, -EINVAL, "no profile named (a file, - or a URL)");
  n = scheme_length(source);
  if (n && is_scheme(source, n, "file"))
    rc = read_file(source + n + 3, out, &b, err, errlen);
  else if (n && !source_is_url(source)) {
    char *e = escaped_copy(source);
    rc = fail(err, errlen, -EPROTONOSUPPORT, "%s: cprof fetches only http:// and https:// URLs",
              e ? e : "");
    free(e);
  } else if (source_is_url(source))
    rc = fetch_url(source, opts, out, &b, err, errlen);
  else
    rc = read_file(source, out, &b, err, errlen);
  if (rc) {
    free(b.p);
    source_free(out);
    return rc;
  }
  if (!b.p && buf_reserve(&b, 0) != 0) {
    source_free(out);
    return fail(err, errlen, -ENOMEM, "out of memory");
  }
  b.p[b.len] = '\0';
  out->data = b.p;
  out->len = b.len;
  return 0;
}

int source_read(const char *source, source_t *out, char *err, size_t errlen) {
  return source_read_opts(source, NULL, out, err, errlen);
}

void source_free(source_t *s) {
  free(s->data);
  free(s->name);
  memset(s, 0, sizeof *s);
}
