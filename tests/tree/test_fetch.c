/* The owner asking its members (src/tree/fetch.c), against fake members:
 * threads of this test listening on PID.sock in a real tree directory
 * (cprof__tree_own with TMPDIR pointing at a scratch directory), for pids
 * nobody else uses here (this process's own pid + k). Each fake member
 * accepts one connection, reads the request and then answers as a member
 * would, or as a broken one would: an error, nothing, garbage, an answer
 * cut short, or no answer at all until the test lets it go. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/clock.h"
#include "tree/tree.h"

typedef enum {
  ANSWER,       /* head, then body, in pieces with delay_ms between */
  CLOSE,        /* reads the request, closes without a word */
  CLOSE_UNREAD, /* closes without reading the request */
  SILENT,       /* reads the request, then says nothing until released */
  NO_ACCEPT,    /* listens, never accepts: the connection waits in the queue */
} act_t;

typedef struct member {
  pid_t pid;
  act_t act;
  const char *head;
  const unsigned char *body;
  size_t body_len;
  int pieces; /* the body in this many writes (1 when 0) */
  int delay_ms;
  int lfd;
  int release[2]; /* SILENT ends when the write end closes */
  char path[108];
  char request[512];
  pthread_t thread;
  int has_thread;
} member_t;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return; /* the owner gave up: nothing to do */
    p += w;
    len -= (size_t)w;
  }
}

static void *member_main(void *arg) {
  member_t *m = arg;
  int fd = accept(m->lfd, NULL, NULL);
  if (fd < 0)
    return NULL;
  if (m->act != CLOSE_UNREAD) {
    size_t got = 0;
    while (got < sizeof m->request - 1 && !strstr(m->request, "\r\n\r\n")) {
      ssize_t r = recv(fd, m->request + got, sizeof m->request - 1 - got, 0);
      if (r <= 0)
        break;
      got += (size_t)r;
      m->request[got] = '\0';
    }
  }
  if (m->act == ANSWER) {
    write_all(fd, m->head, strlen(m->head));
    int pieces = m->pieces > 0 ? m->pieces : 1;
    size_t each = m->body_len / (size_t)pieces + 1, done = 0;
    while (done < m->body_len) {
      size_t n = m->body_len - done < each ? m->body_len - done : each;
      if (m->delay_ms)
        sleep_ms(m->delay_ms);
      write_all(fd, m->body + done, n);
      done += n;
    }
  } else if (m->act == SILENT) {
    char c;
    while (read(m->release[0], &c, 1) < 0 && errno == EINTR) {
    }
  }
  close(fd);
  return NULL;
}

/* Listens on m->pid's socket in the tree and, but for NO_ACCEPT, starts
 * the thread that answers. */
static void member_start(member_t *m) {
  m->has_thread = 0;
  m->release[0] = m->release[1] = -1;
  CHECK_EQ_INT(cprof__tree_socket_path(m->pid, m->path, sizeof m->path), 0);
  unlink(m->path);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  snprintf(sun.sun_path, sizeof sun.sun_path, "%s", m->path);
  m->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK(m->lfd >= 0);
  CHECK_EQ_INT(bind(m->lfd, (struct sockaddr *)&sun, sizeof sun), 0);
  CHECK_EQ_INT(listen(m->lfd, 4), 0);
  CHECK_EQ_INT(pipe(m->release), 0);
  if (m->act != NO_ACCEPT) {
    CHECK_EQ_INT(pthread_create(&m->thread, NULL, member_main, m), 0);
    m->has_thread = 1;
  }
}

static void member_end(member_t *m) {
  close(m->release[1]);
  if (m->has_thread)
    pthread_join(m->thread, NULL);
  close(m->release[0]);
  close(m->lfd);
  unlink(m->path);
}

/* A socket file nobody listens on any more: connect is refused. */
static void dead_socket(pid_t pid) {
  char path[108];
  CHECK_EQ_INT(cprof__tree_socket_path(pid, path, sizeof path), 0);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK_EQ_INT(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
  CHECK_EQ_INT(listen(fd, 1), 0);
  close(fd);
}

/* Every reply's error is one line, and says something exactly when there
 * is no status. */
static void check_error_line(const cprof__tree_reply_t *r) {
  CHECK(memchr(r->error, '\0', sizeof r->error) != NULL);
  CHECK(strchr(r->error, '\n') == NULL);
  CHECK(strchr(r->error, '\r') == NULL);
  CHECK((r->status == 0) == (r->error[0] != '\0'));
  if ((r->status == 0) != (r->error[0] != '\0'))
    fprintf(stderr, "  pid %d: status %d, error \"%s\"\n", (int)r->pid, r->status, r->error);
}

static void check_error_has(const cprof__tree_reply_t *r, const char *want) {
  CHECK_EQ_INT(r->status, 0);
  CHECK(strstr(r->error, want) != NULL);
  if (!strstr(r->error, want))
    fprintf(stderr, "  pid %d: error \"%s\", want \"%s\" in it\n", (int)r->pid, r->error, want);
  check_error_line(r);
}

static int64_t now_ms(void) { return cprof__now_ms(CLOCK_MONOTONIC); }

static pid_t fake_pid(int k) { return getpid() + 1000 + k; }

/* Bytes a text parser would trip on: NULs, CRLFs, what looks like a head. */
static unsigned char *binary_body(size_t len, uint32_t seed) {
  unsigned char *b = malloc(len);
  uint32_t x = seed;
  for (size_t i = 0; i < len; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b[i] = (unsigned char)x;
  }
  const char *tricky = "\r\n\r\nHTTP/1.0 500 No\r\nContent-Length: 3\r\n\r\n";
  if (len > 100)
    memcpy(b + 50, tricky, strlen(tricky));
  b[0] = 0;
  if (len > 1)
    b[len - 1] = 0;
  return b;
}

static int body_is(const cprof__tree_reply_t *r, const void *want, size_t len) {
  return r->body.len == len && (len == 0 || memcmp(r->body.data, want, len) == 0);
}

/* Before the tree exists, there is no socket to ask. */
static void test_no_tree(void) {
  cprof__tree_reply_t r = {.pid = fake_pid(0)};
  cprof__tree_fetch(&r, 1, "/debug/pprof/heap", 300, NULL, NULL);
  check_error_has(&r, "no socket");
  CHECK_EQ_INT(r.body.len, 0);
  cprof__tree_replies_free(&r, 1);
}

/* One member's well-formed answer, larger than several socket buffers and
 * binary: status, headers and every byte kept. */
static void test_answer(void) {
  size_t len = (size_t)4 << 20;
  unsigned char *body = binary_body(len, 12345);
  char head[256];
  snprintf(head, sizeof head,
           "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n"
           "content-disposition: attachment; filename=\"profile\"\r\n"
           "Content-Length: %zu\r\nX-Other: 1\r\n\r\n",
           len);
  member_t m = {
      .pid = fake_pid(1), .act = ANSWER, .head = head, .body = body, .body_len = len, .pieces = 3};
  member_start(&m);
  cprof__tree_reply_t r = {.pid = m.pid};
  cprof__tree_fetch(&r, 1, "/debug/pprof/profile?seconds=1", 5000, NULL, NULL);
  member_end(&m);
  CHECK_EQ_INT(r.pid, m.pid);
  CHECK_EQ_INT(r.status, 200);
  CHECK_EQ_STR(r.error, "");
  CHECK_EQ_STR(r.content_type, "application/octet-stream");
  CHECK_EQ_STR(r.disposition, "attachment; filename=\"profile\"");
  CHECK_EQ_INT(r.body.len, len);
  CHECK(body_is(&r, body, len));
  check_error_line(&r);
  /* What the member was asked: HTTP/1.0, so that the answer ends with the
   * connection, and no Accept-Encoding. */
  CHECK(strncmp(m.request, "GET /debug/pprof/profile?seconds=1 HTTP/1.0\r\n", 45) == 0);
  CHECK(strstr(m.request, "Accept-Encoding") == NULL);
  cprof__tree_replies_free(&r, 1);
  free(body);
}

/* Several members at once, their answers interleaved, one slow, one
 * without Content-Length (the end of the connection ends it), one with an
 * empty body, and one that is not there: each reply is its own member's. */
static void test_several(void) {
  enum { N = 5 };
  unsigned char *bodies[N];
  size_t lens[N] = {300000, 700000, 1000, 0, 0};
  char heads[N][256];
  member_t ms[N];
  for (int i = 0; i < N; i++) {
    bodies[i] = binary_body(lens[i] ? lens[i] : 1, 777u + (uint32_t)i);
    if (i == 2)
      snprintf(heads[i], sizeof heads[i], "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n");
    else
      snprintf(heads[i], sizeof heads[i],
               "HTTP/1.0 200 OK\r\nContent-Type: type/%d\r\nContent-Length: %zu\r\n\r\n", i,
               lens[i]);
    ms[i] = (member_t){.pid = fake_pid(10 + i),
                       .act = ANSWER,
                       .head = heads[i],
                       .body = bodies[i],
                       .body_len = lens[i],
                       .pieces = 6,
                       .delay_ms = 20};
  }
  ms[1].delay_ms = 80; /* the slow one: about half a second */
  for (int i = 0; i < N - 1; i++)
    member_start(&ms[i]);
  cprof__tree_reply_t r[N];
  for (int i = 0; i < N; i++)
    r[i] = (cprof__tree_reply_t){.pid = ms[i].pid};
  int64_t t0 = now_ms();
  cprof__tree_fetch(r, N, "/debug/pprof/heap", 10000, NULL, NULL);
  int64_t took = now_ms() - t0;
  for (int i = 0; i < N - 1; i++)
    member_end(&ms[i]);
  CHECK(took >= 6 * 80 - 20);
  CHECK(took < 5000);
  for (int i = 0; i < N - 1; i++) {
    char type[32];
    snprintf(type, sizeof type, i == 2 ? "text/plain" : "type/%d", i);
    CHECK_EQ_INT(r[i].pid, ms[i].pid);
    CHECK_EQ_INT(r[i].status, 200);
    CHECK_EQ_STR(r[i].error, "");
    CHECK_EQ_STR(r[i].content_type, type);
    CHECK_EQ_STR(r[i].disposition, "");
    CHECK_EQ_INT(r[i].body.len, lens[i]);
    CHECK(body_is(&r[i], bodies[i], lens[i]));
    check_error_line(&r[i]);
  }
  check_error_has(&r[N - 1], "No such file");
  cprof__tree_replies_free(r, N);
  for (int i = 0; i < N; i++)
    free(bodies[i]);
}

/* Members that answer, but not with a profile. */
static void test_bad_answers(void) {
  static const char text500[] = "cannot take a profile: another is running\n";
  member_t ms[] = {
      /* An error: a status, and its text kept for the caller to show. */
      {.act = ANSWER,
       .head = "HTTP/1.0 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\n"
               "Content-Length: 42\r\n\r\n",
       .body = (const unsigned char *)text500,
       .body_len = sizeof text500 - 1},
      {.act = CLOSE},
      {.act = ANSWER, .head = "SSH-2.0-OpenSSH_9.6\r\n"},
      {.act = ANSWER, .head = "hello\r\n\r\nworld"},
      {.act = ANSWER,
       .head = "HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\n",
       .body = (const unsigned char *)"0123456789",
       .body_len = 10},
      {.act = CLOSE_UNREAD},
  };
  enum { N = sizeof ms / sizeof ms[0] };
  cprof__tree_reply_t r[N];
  for (int i = 0; i < N; i++) {
    ms[i].pid = fake_pid(20 + i);
    member_start(&ms[i]);
    r[i] = (cprof__tree_reply_t){.pid = ms[i].pid};
  }
  cprof__tree_fetch(r, N, "/debug/pprof/goroutine?debug=1", 5000, NULL, NULL);
  for (int i = 0; i < N; i++)
    member_end(&ms[i]);

  CHECK_EQ_INT(r[0].status, 500);
  CHECK_EQ_STR(r[0].error, "");
  CHECK_EQ_STR(r[0].content_type, "text/plain; charset=utf-8");
  CHECK(body_is(&r[0], text500, sizeof text500 - 1));
  check_error_line(&r[0]);

  check_error_has(&r[1], "no answer");
  check_error_has(&r[2], "not an HTTP answer");
  check_error_has(&r[3], "not an HTTP answer");
  check_error_has(&r[4], "cut short");
  /* Closed with the request unread: the reset or the broken pipe, as the
   * scheduler has it, but one line and no status. */
  CHECK_EQ_INT(r[5].status, 0);
  CHECK(r[5].error[0] != '\0');
  check_error_line(&r[5]);
  for (int i = 0; i < N; i++)
    fprintf(stderr, "  bad answer %d: status %d, \"%s\"\n", i, r[i].status, r[i].error);
  cprof__tree_replies_free(r, N);
}

/* Members that never answer: the call returns when the time is up, the
 * others' answers kept. */
static void test_timeout(void) {
  static const char ok[] = "fine";
  member_t ms[] = {
      {.act = SILENT},
      {.act = NO_ACCEPT},
      {.act = ANSWER,
       .head = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n",
       .body = (const unsigned char *)ok,
       .body_len = 4},
  };
  enum { N = sizeof ms / sizeof ms[0] };
  cprof__tree_reply_t r[N];
  for (int i = 0; i < N; i++) {
    ms[i].pid = fake_pid(40 + i);
    member_start(&ms[i]);
    r[i] = (cprof__tree_reply_t){.pid = ms[i].pid};
  }
  int64_t t0 = now_ms();
  cprof__tree_fetch(r, N, "/debug/pprof/heap", 300, NULL, NULL);
  int64_t took = now_ms() - t0;
  for (int i = 0; i < N; i++)
    member_end(&ms[i]);
  fprintf(stderr, "  timeout of 300 ms: returned after %lld ms\n", (long long)took);
  CHECK(took >= 290);
  CHECK(took < 1500);
  check_error_has(&r[0], "no answer in time");
  check_error_has(&r[1], "no answer in time");
  CHECK_EQ_INT(r[2].status, 200);
  CHECK(body_is(&r[2], ok, 4));
  check_error_line(&r[2]);
  cprof__tree_replies_free(r, N);
}

/* No socket, or one nobody listens on. */
static void test_unreachable(void) {
  cprof__tree_reply_t r[2] = {{.pid = fake_pid(50)}, {.pid = fake_pid(51)}};
  dead_socket(r[1].pid);
  int64_t t0 = now_ms();
  cprof__tree_fetch(r, 2, "/debug/pprof/heap", 5000, NULL, NULL);
  CHECK(now_ms() - t0 < 1000); /* nothing to wait for */
  check_error_has(&r[0], "cannot connect");
  check_error_has(&r[0], "No such file");
  check_error_has(&r[1], "cannot connect");
  check_error_has(&r[1], "refused");
  char path[108];
  cprof__tree_socket_path(r[1].pid, path, sizeof path);
  unlink(path);
  cprof__tree_replies_free(r, 2);
}

typedef struct cancel_ctx {
  int64_t after;
  int calls;
} cancel_ctx_t;

static int cancel_after(void *arg) {
  cancel_ctx_t *c = arg;
  c->calls++;
  return now_ms() >= c->after;
}

static int never(void *arg) {
  (void)arg;
  return 0;
}

/* The cancelled callback ends the wait long before the timeout; one that
 * never says so changes nothing. */
static void test_cancelled(void) {
  member_t m = {.pid = fake_pid(60), .act = SILENT};
  member_start(&m);
  cprof__tree_reply_t r = {.pid = m.pid};
  int64_t t0 = now_ms();
  cancel_ctx_t c = {t0 + 150, 0};
  cprof__tree_fetch(&r, 1, "/debug/pprof/heap", 10000, cancel_after, &c);
  int64_t took = now_ms() - t0;
  member_end(&m);
  fprintf(stderr, "  cancelled after 150 ms: returned after %lld ms, %d calls\n", (long long)took,
          c.calls);
  CHECK(took >= 140);
  CHECK(took < 1500);
  CHECK(c.calls >= 1);
  check_error_has(&r, "cancelled");
  cprof__tree_replies_free(&r, 1);

  static const char ok[] = "ok";
  member_t a = {.pid = fake_pid(61),
                .act = ANSWER,
                .head = "HTTP/1.0 200 OK\r\n\r\n",
                .body = (const unsigned char *)ok,
                .body_len = 2,
                .delay_ms = 250};
  member_start(&a);
  r = (cprof__tree_reply_t){.pid = a.pid};
  cprof__tree_fetch(&r, 1, "/x", 5000, never, NULL);
  member_end(&a);
  CHECK_EQ_INT(r.status, 200);
  CHECK(body_is(&r, ok, 2));
  CHECK_EQ_STR(r.content_type, "");
  cprof__tree_replies_free(&r, 1);
}

/* More members than this process may have files open (poll refuses
 * more descriptors than RLIMIT_NOFILE, even ones it ignores): the one
 * member reached still answers, or its reply says why not. */
static void test_many(void) {
  enum { N = 100 };
  static const char ok[] = "ok";
  member_t m = {.pid = fake_pid(70),
                .act = ANSWER,
                .head = "HTTP/1.0 200 OK\r\n\r\n",
                .body = (const unsigned char *)ok,
                .body_len = 2,
                .delay_ms = 50};
  member_start(&m);
  cprof__tree_reply_t *r = calloc(N, sizeof *r);
  r[0].pid = m.pid;
  for (int i = 1; i < N; i++)
    r[i].pid = fake_pid(100 + i); /* no socket: closed at once */
  struct rlimit was, low;
  CHECK_EQ_INT(getrlimit(RLIMIT_NOFILE, &was), 0);
  low = was;
  low.rlim_cur = 64;
  CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &low), 0);
  cprof__tree_fetch(r, N, "/debug/pprof/heap", 2000, NULL, NULL);
  CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &was), 0);
  member_end(&m);
  fprintf(stderr, "  many: status %d, \"%s\"\n", r[0].status, r[0].error);
  CHECK_EQ_INT(r[0].status, 200);
  CHECK(body_is(&r[0], ok, 2));
  for (int i = 0; i < N; i++)
    check_error_line(&r[i]);
  check_error_has(&r[N - 1], "No such file");
  cprof__tree_replies_free(r, N);
  free(r);
}

/* A member whose queue of connections is full (it accepts none): the
 * reply says it could not connect, and why. */
static void test_queue_full(void) {
  member_t m = {.pid = fake_pid(80), .act = NO_ACCEPT};
  member_start(&m);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  snprintf(sun.sun_path, sizeof sun.sun_path, "%s", m.path);
  int fds[64], nfds = 0, full = 0;
  while (nfds < 64 && !full) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
      full = errno == EAGAIN;
      close(fd);
      continue;
    }
    fds[nfds++] = fd;
  }
  CHECK(full);
  cprof__tree_reply_t r = {.pid = m.pid};
  int64_t t0 = now_ms();
  cprof__tree_fetch(&r, 1, "/debug/pprof/heap", 300, NULL, NULL);
  int64_t took = now_ms() - t0;
  fprintf(stderr, "  queue full: \"%s\" after %lld ms\n", r.error, (long long)took);
  check_error_has(&r, "cannot connect");
  CHECK(took < 1000);
  for (int i = 0; i < nfds; i++)
    close(fds[i]);
  member_end(&m);
  cprof__tree_replies_free(&r, 1);
}

/* Nothing to ask: returns at once. */
static void test_none(void) {
  int64_t t0 = now_ms();
  cprof__tree_fetch(NULL, 0, "/debug/pprof/heap", 5000, NULL, NULL);
  CHECK(now_ms() - t0 < 500);
}

int main(void) {
  char scratch[] = "/tmp/cprof-tree-fetch-XXXXXX";
  if (!mkdtemp(scratch)) {
    perror("mkdtemp");
    return 1;
  }
  setenv("TMPDIR", scratch, 1);
  unsetenv("XDG_RUNTIME_DIR");

  test_no_tree();
  CHECK_EQ_INT(cprof__tree_own(), 0);
  CHECK_EQ_INT(cprof__tree_role(), CPROF_TREE_OWNER);
  test_none();
  test_answer();
  test_several();
  test_bad_answers();
  test_timeout();
  test_unreachable();
  test_cancelled();
  test_many();
  test_queue_full();

  /* The owner leaving with no member left removes the tree's directory. */
  cprof__tree_leave();
  CHECK_EQ_INT(rmdir(scratch), 0);
  return check_result("tree/test_fetch");
}
