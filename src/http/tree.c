/* A process tree's requests (src/tree/tree.h), ahead of the router's own:
 * - /debug/pprof/processes: the tree's processes, as JSON;
 * - ?pid=N on any path under /debug/pprof/: the request as process N
 *   answers it (its socket, through the owner);
 * - without ?pid, at the owner of a tree with members: the CPU, wall and
 *   every registry profile (heap, allocs, block, mutex, threadcreate,
 *   goroutine, custom ones) of every process, asked at once, over the
 *   same window, merged into one with a `pid` label on every sample
 *   (debug=0), or one after the other under a line naming each process
 *   (debug=1 and 2). What could not be reached is said in the profile's
 *   comments (`go tool pprof -comments`), one line each.
 * Everything else, and every request at a member or in a process that
 * never forked, is the process's own. */
#include "http/tree.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/params.h"
#include "http/query.h"
#include "http/response.h"
#include "registry/registry.h"
#include "tree/tree.h"

/* The most processes a tree answers for. */
#define MAX_PROCS 1024
/* Beyond a request's own seconds, how long members have to answer. */
#define SLACK_MS 30000

static const char root[] = "/debug/pprof/";

/* The query without its pid=... parts ("" when nothing is left): 0, or -1
 * when it does not fit. */
static int without_pid(const char *query, char *out, size_t outlen) {
  size_t n = 0;
  out[0] = '\0';
  for (const char *p = query; p && *p;) {
    size_t len = strcspn(p, "&");
    if (!(len >= 4 && strncmp(p, "pid=", 4) == 0) && !(len == 3 && strncmp(p, "pid", 3) == 0) &&
        len) {
      if (n + len + 2 >= outlen)
        return -1;
      if (n)
        out[n++] = '&';
      memcpy(out + n, p, len);
      n += len;
      out[n] = '\0';
    }
    p += len;
    if (*p == '&')
      p++;
  }
  return 0;
}

/* What a member is asked: the same path (under the prefix) and query. */
static int target_of(const char *path, const char *query, const cprof__config_t *cfg, char *out,
                     size_t outlen) {
  char q[2048];
  if (without_pid(query, q, sizeof q) != 0)
    return -1;
  int n = snprintf(out, outlen, "%s%s%s%s", cfg->prefix, path, q[0] ? "?" : "", q);
  if (n <= 0 || (size_t)n >= outlen)
    return -1;
  /* It goes into a request line: no space nor control byte may end it. */
  for (const char *c = out; *c; c++)
    if ((unsigned char)*c <= ' ' || *c == 0x7f)
      return -1;
  return 0;
}

/* How long to wait for members: the request's seconds (the CPU and wall
 * profiles' default when it names none) and some. */
static long timeout_for(const char *name, const char *query) {
  char v[32];
  long s = 0;
  if (cprof__query_get(query, "seconds", v, sizeof v) == 1)
    cprof__query_int(v, 0, CPROF_MAX_SECONDS, &s);
  else if (strcmp(name, "profile") == 0 || strcmp(name, "wall") == 0)
    s = CPROF_DEFAULT_SECONDS;
  return s * 1000 + SLACK_MS;
}

static void json_string(cprof__buf_t *b, const char *s) {
  cprof__buf_putc(b, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      cprof__buf_printf(b, "\\%c", c);
    else if (c < 0x20)
      cprof__buf_printf(b, "\\u%04x", c);
    else
      cprof__buf_putc(b, (char)c);
  }
  cprof__buf_putc(b, '"');
}

static void serve_processes(cprof_response_t *resp) {
  cprof__tree_proc_t *procs = calloc(MAX_PROCS, sizeof *procs);
  if (!procs) {
    cprof__resp_error(resp, 500, "out of memory");
    return;
  }
  int n = cprof__tree_list(procs, MAX_PROCS);
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_printf(&b, "{\"owner\":%d,\"processes\":[", (int)getpid());
  for (int i = 0; i < n; i++) {
    const cprof__tree_proc_t *p = &procs[i];
    char start[32];
    cprof__tree_started(p, "%Y-%m-%dT%H:%M:%SZ", start, sizeof start);
    cprof__buf_printf(&b, "%s\n{\"pid\":%d,\"ppid\":%d,\"name\":", i ? "," : "", (int)p->pid,
                      (int)p->ppid);
    json_string(&b, p->name);
    cprof__buf_puts(&b, ",\"cmdline\":");
    json_string(&b, p->cmdline);
    cprof__buf_printf(&b, ",\"state\":\"%c\",\"start\":\"%s\",\"self\":%s}", p->state, start,
                      p->self ? "true" : "false");
  }
  cprof__buf_puts(&b, "\n]}\n");
  free(procs);
  cprof__resp_body(resp, "application/json", &b);
}

/* How long a member that could not answer is given to be seen ended:
 * its connection is closed as its process exits, just before it does. */
#define ENDING_MS 200

/* The member's answer as ours. One that ended while asked (a worker that
 * a server stops, a profile in flight) is a process that left the tree,
 * a 404, as one that ended just before: a scraper counts it no failure. */
static void relay(cprof__tree_reply_t *r, cprof_response_t *resp) {
  if (!r->status && cprof__tree_ended_within(r->pid, ENDING_MS)) {
    cprof__resp_error(resp, 404, "pid %d: ended while asked", (int)r->pid);
    return;
  }
  if (!r->status) {
    cprof__resp_error(resp, 502, "pid %d: not reached: %s", (int)r->pid, r->error);
    return;
  }
  cprof__resp_body(resp, r->content_type[0] ? r->content_type : "application/octet-stream",
                   &r->body);
  resp->status = r->status;
  if (r->disposition[0])
    cprof__resp_header(resp, "Content-Disposition", r->disposition);
}

/* A member writes addresses where it would name functions (tree.h): the
 * owner names them, once for the tree. profile.proto when relayed alone
 * (proto: a merge names its parts itself), and the goroutine dump. */
static void name_reply(cprof__tree_reply_t *r, const char *name, const char *query, int proto) {
  if (r->status != 200)
    return;
  char debug[16] = "";
  cprof__query_get(query, "debug", debug, sizeof debug);
  cprof__buf_t named;
  cprof__buf_init(&named);
  int rc = 0;
  if (proto && strcmp(r->content_type, "application/octet-stream") == 0)
    rc = cprof__tree_symbolize_proto(r->body.data, r->body.len, &named);
  else if ((strcmp(name, "goroutine") == 0 || strcmp(name, "threads") == 0) &&
           strcmp(debug, "2") == 0)
    rc = cprof__tree_name_dump(r->body.data, r->body.len, &named) == 0;
  if (rc == 1 && !named.failed) {
    cprof__buf_free(&r->body);
    r->body = named;
  } else {
    cprof__buf_free(&named);
  }
}

static void serve_one(pid_t pid, const char *path, const cprof_request_t *req,
                      const cprof__config_t *cfg, cprof_response_t *resp) {
  cprof__tree_proc_t me;
  char sock[128], target[2400];
  if (cprof__tree_socket_path(pid, sock, sizeof sock) != 0 || access(sock, F_OK) != 0 ||
      cprof__tree_describe(pid, &me) != 0) {
    cprof__resp_error(resp, 404, "pid %d: not a process of this tree (see %s%sprocesses)", (int)pid,
                      cfg->prefix, root);
    return;
  }
  if (target_of(path, req->query, cfg, target, sizeof target) != 0) {
    cprof__resp_error(resp, 400,
                      "the path or query cannot be passed on (too long, or a space or "
                      "control byte in it)");
    return;
  }
  cprof__tree_reply_t r = {.pid = pid};
  cprof__tree_fetch(&r, 1, target, timeout_for(path + sizeof root - 1, req->query),
                    req->is_cancelled, req->ctx);
  name_reply(&r, path + sizeof root - 1, req->query, 1);
  relay(&r, resp);
  cprof__tree_replies_free(&r, 1);
}

/* The tree's other processes asked for one target while this process
 * takes its own: procs[0] is this process, replies[i] procs[i + 1]'s. */
typedef struct gather {
  cprof__tree_proc_t *procs;
  cprof__tree_reply_t *replies;
  int n; /* processes, this one included */
  char target[2400];
  long timeout_ms;
  int (*cancelled)(void *);
  void *ctx;
  pthread_t thread;
  int threaded;
} gather_t;

static void *gather_thread(void *arg) {
  gather_t *g = arg;
  cprof__tree_fetch(g->replies, g->n - 1, g->target, g->timeout_ms, g->cancelled, g->ctx);
  return NULL;
}

/* Starts asking the members, at the owner of a tree that has some: 1, or
 * 0 when there is nothing to gather (g is then empty). */
static int gather_start(gather_t *g, const char *target, long timeout_ms, int (*cancelled)(void *),
                        void *ctx) {
  memset(g, 0, sizeof *g);
  if (cprof__tree_role() != CPROF_TREE_OWNER || strlen(target) >= sizeof g->target)
    return 0;
  g->procs = calloc(MAX_PROCS, sizeof *g->procs);
  g->replies = calloc(MAX_PROCS, sizeof *g->replies);
  g->n = g->procs && g->replies ? cprof__tree_list(g->procs, MAX_PROCS) : 0;
  if (g->n <= 1) {
    free(g->procs);
    free(g->replies);
    memset(g, 0, sizeof *g);
    return 0;
  }
  for (int i = 1; i < g->n; i++)
    g->replies[i - 1].pid = g->procs[i].pid;
  strcpy(g->target, target);
  g->timeout_ms = timeout_ms;
  g->cancelled = cancelled;
  g->ctx = ctx;
  g->threaded = pthread_create(&g->thread, NULL, gather_thread, g) == 0;
  return 1;
}

/* Waits for every member's answer (or its failure). */
static void gather_wait(gather_t *g) {
  if (g->threaded)
    pthread_join(g->thread, NULL);
  else
    gather_thread(g);
}

static void gather_free(gather_t *g) {
  cprof__tree_replies_free(g->replies, g->n - 1);
  free(g->procs);
  free(g->replies);
}

/* "pid 812 (nginx: worker process)" */
static void describe(cprof__buf_t *b, const cprof__tree_proc_t *p) {
  cprof__buf_printf(b, "pid %d (%s)", (int)p->pid, p->cmdline[0] ? p->cmdline : p->name);
}

/* Why a reply is not a profile to merge, or NULL when it is one. */
static const char *unusable(const cprof__tree_reply_t *r, char *why, size_t whylen) {
  if (!r->status)
    return r->error;
  if (r->status == 200)
    return NULL;
  int n = (int)strcspn(r->body.data ? r->body.data : "", "\n");
  snprintf(why, whylen, "status %d: %.*s", r->status, n > 150 ? 150 : n,
           r->body.data ? r->body.data : "");
  return why;
}

/* debug=1 and 2: each process's text after a line that names it. */
static void join_text(const gather_t *g, cprof_response_t *resp) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__buf_puts(&b, "# ");
  describe(&b, &g->procs[0]);
  cprof__buf_puts(&b, "\n");
  cprof__buf_append(&b, resp->body, resp->body_len);
  for (int i = 0; i < g->n - 1; i++) {
    char why[200];
    const char *bad = unusable(&g->replies[i], why, sizeof why);
    cprof__buf_puts(&b, "\n# ");
    describe(&b, &g->procs[i + 1]);
    if (bad) {
      cprof__buf_printf(&b, ": not reached: %s\n", bad);
      continue;
    }
    cprof__buf_puts(&b, "\n");
    cprof__buf_append(&b, g->replies[i].body.data, g->replies[i].body.len);
  }
  if (b.failed) {
    cprof__buf_free(&b);
    cprof__resp_error(resp, 500, "out of memory");
    return;
  }
  free(resp->body);
  resp->body = cprof__buf_take(&b, &resp->body_len);
}

/* debug=0: this process's profile.proto (own) and the members' merged
 * into *out, every sample labelled with its pid. 0, or -1 with a line in
 * err. */
static int merge_protos(const gather_t *g, const void *own, size_t ownlen, cprof__buf_t *out,
                        char *err, size_t errlen) {
  cprof__tree_part_t *parts = calloc((size_t)g->n, sizeof *parts);
  char **missing = calloc((size_t)g->n, sizeof *missing);
  int nparts = 0, nmissing = 0, rc = -1;
  snprintf(err, errlen, "out of memory");
  if (parts && missing) {
    parts[nparts++] = (cprof__tree_part_t){g->procs[0].pid, own, ownlen};
    for (int i = 0; i < g->n - 1; i++) {
      const cprof__tree_reply_t *r = &g->replies[i];
      char why[200];
      const char *bad = unusable(r, why, sizeof why);
      if (!bad) {
        parts[nparts++] = (cprof__tree_part_t){r->pid, r->body.data, r->body.len};
        continue;
      }
      cprof__buf_t line;
      cprof__buf_init(&line);
      describe(&line, &g->procs[i + 1]);
      cprof__buf_printf(&line, ": not reached: %s", bad);
      cprof__buf_putc(&line, '\0');
      if (!line.failed)
        missing[nmissing++] = line.data;
      else
        cprof__buf_free(&line);
    }
    rc = cprof__tree_merge(parts, nparts, (const char *const *)missing, nmissing, out, err,
                           errlen) == 0 &&
                 !out->failed
             ? 0
             : -1;
  }
  for (int i = 0; missing && i < nmissing; i++)
    free(missing[i]);
  free(missing);
  free(parts);
  return rc;
}

static int mergeable(const char *name) {
  return strcmp(name, "profile") == 0 || strcmp(name, "wall") == 0 ||
         cprof__registry_lookup(name) != NULL;
}

/* Returns 0 when there is nothing to merge (no member): the caller serves. */
static int serve_merged(const char *path, const cprof_request_t *req, const cprof__config_t *cfg,
                        cprof_response_t *resp, cprof__local_fn local) {
  char target[2400];
  gather_t g;
  if (target_of(path, req->query, cfg, target, sizeof target) != 0 ||
      !gather_start(&g, target, timeout_for(path + sizeof root - 1, req->query), req->is_cancelled,
                    req->ctx))
    return 0;
  local(path, req, cfg, resp);
  gather_wait(&g);
  char debug[16];
  int text = cprof__query_get(req->query, "debug", debug, sizeof debug) == 1 && debug[0] &&
             strcmp(debug, "0") != 0;
  if (resp->status == 200 && text) {
    for (int i = 0; i < g.n - 1; i++)
      name_reply(&g.replies[i], path + sizeof root - 1, req->query, 0);
    join_text(&g, resp);
  } else if (resp->status == 200) {
    cprof__buf_t out;
    cprof__buf_init(&out);
    char err[300];
    if (merge_protos(&g, resp->body, resp->body_len, &out, err, sizeof err) == 0) {
      free(resp->body);
      resp->body = cprof__buf_take(&out, &resp->body_len);
    } else {
      cprof__buf_free(&out);
      cprof__resp_error(resp, 500, "merging the profiles of this process tree: %s", err);
    }
  }
  gather_free(&g);
  return 1;
}

int cprof__tree_take(const char *name, long seconds, const cprof__config_t *cfg,
                     int (*take)(void *arg, cprof__buf_t *own), void *arg, cprof__buf_t *out,
                     char *err, size_t errlen) {
  char target[600];
  if (seconds)
    snprintf(target, sizeof target, "%s%s%s?seconds=%ld", cfg->prefix, root, name, seconds);
  else
    snprintf(target, sizeof target, "%s%s%s", cfg->prefix, root, name);
  gather_t g;
  if (!gather_start(&g, target, seconds * 1000 + SLACK_MS, NULL, NULL))
    return take(arg, out) == 0 ? 0 : -1;
  cprof__buf_t own;
  cprof__buf_init(&own);
  int rc = take(arg, &own);
  gather_wait(&g);
  if (rc == 0 && merge_protos(&g, own.data, own.len, out, err, errlen) != 0)
    rc = -2;
  cprof__buf_free(&own);
  gather_free(&g);
  return rc;
}

int cprof__serve_tree(const char *path, const cprof_request_t *req, const cprof__config_t *cfg,
                      cprof_response_t *resp, cprof__local_fn local) {
  if (strncmp(path, root, sizeof root - 1) != 0)
    return 0;
  const char *name = path + sizeof root - 1;
  if (strcmp(name, "processes") == 0) {
    serve_processes(resp);
    return 1;
  }
  char v[32];
  int has = cprof__query_get(req->query, "pid", v, sizeof v);
  long pid = 0;
  if (has < 0 || (has == 1 && cprof__query_int(v, 1, 0x7fffffff, &pid) != 0)) {
    cprof__resp_error(resp, 400, "pid: want a process id (see %s%sprocesses)", cfg->prefix, root);
    return 1;
  }
  if (has == 1 && pid != getpid()) {
    if (req->method && strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
      cprof__resp_error(resp, 405, "pid: only GET is passed on to another process");
    else if (cprof__tree_role() != CPROF_TREE_OWNER)
      cprof__resp_error(resp, 404, "pid %ld: not this process (%d), which answers for itself only",
                        pid, (int)getpid());
    else
      serve_one((pid_t)pid, path, req, cfg, resp);
    return 1;
  }
  if (has == 1 || cprof__tree_role() != CPROF_TREE_OWNER || !mergeable(name))
    return 0;
  return serve_merged(path, req, cfg, resp, local);
}
