/* The list of profiles, and the delta controller (registry.h). */
#include "registry/registry.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;
static const cprof__profile_t *profiles[CPROF_MAX_PROFILES_REGISTERED]; /* sorted by name */
static int nprofiles;

/* Paths under /debug/pprof/ that are endpoints of their own; a custom
 * profile may not take them. (The built-in wall profile is one too: its
 * endpoint takes hz, its registry entry serves cprof_profile_write.) */
static const char *const reserved[] = {"cmdline", "profile", "symbol", "threads", "trace", "wall",
                                       "ui"};

int cprof__registry_name_ok(const char *name) {
  if (!name)
    return 0;
  size_t n = strlen(name);
  if (n == 0 || n > 64 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return 0;
  return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static int add_locked(const cprof__profile_t *p, int builtin) {
  if (!p || !p->ops || !cprof__registry_name_ok(p->name))
    return -EINVAL;
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0] && !builtin; i++)
    if (strcmp(p->name, reserved[i]) == 0)
      return -EEXIST;
  int at = 0;
  while (at < nprofiles && strcmp(profiles[at]->name, p->name) < 0)
    at++;
  if (at < nprofiles && strcmp(profiles[at]->name, p->name) == 0)
    return -EEXIST;
  if (nprofiles == CPROF_MAX_PROFILES_REGISTERED)
    return -ENOSPC;
  memmove(&profiles[at + 1], &profiles[at], (size_t)(nprofiles - at) * sizeof profiles[0]);
  profiles[at] = p;
  nprofiles++;
  return 0;
}

static int add(const cprof__profile_t *p, int builtin) {
  pthread_mutex_lock(&lock);
  int rc = add_locked(p, builtin);
  pthread_mutex_unlock(&lock);
  return rc;
}

int cprof__registry_add_builtin(const cprof__profile_t *p) { return add(p, 1); }

int cprof__registry_add(const cprof__profile_t *p) {
  pthread_once(&builtins_once, cprof__builtin_register);
  return add(p, 0);
}

const cprof__profile_t *cprof__registry_lookup(const char *name) {
  if (!name)
    return NULL;
  pthread_once(&builtins_once, cprof__builtin_register);
  if (strcmp(name, "threads") == 0)
    name = "goroutine";
  const cprof__profile_t *found = NULL;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nprofiles && !found; i++)
    if (strcmp(profiles[i]->name, name) == 0)
      found = profiles[i];
  pthread_mutex_unlock(&lock);
  return found;
}

int cprof__registry_list(const cprof__profile_t **out, int max) {
  pthread_once(&builtins_once, cprof__builtin_register);
  pthread_mutex_lock(&lock);
  int n = nprofiles < max ? nprofiles : max;
  memcpy(out, profiles, (size_t)(n > 0 ? n : 0) * sizeof *out);
  pthread_mutex_unlock(&lock);
  return n;
}

int cprof__snapshot_done(const cprof__profile_t *p, void *s, int err, void **out) {
  if (!s)
    return -ENOMEM;
  if (err) {
    p->ops->release(p, s);
    return err;
  }
  *out = s;
  return 0;
}

static int plain_wait(void *ctx, long ms) {
  (void)ctx;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
  return 0;
}

int cprof__profile_collect(const cprof__profile_t *p, const cprof__collect_t *c,
                           cprof__buf_t *out) {
  if (!p || !c || c->debug < 0 || c->seconds < 0 || (c->seconds && c->debug))
    return -EINVAL;
  int (*wait)(void *, long) = c->wait ? c->wait : plain_wait;
  void *base = NULL, *now = NULL;
  int64_t start = cprof__now_ns(CLOCK_MONOTONIC);
  int err = 0;
  if (c->seconds) {
    if ((err = p->ops->snapshot(p, &base)) != 0)
      return err;
    if (wait(c->ctx, c->seconds * 1000) != 0) {
      p->ops->release(p, base);
      return -ECANCELED;
    }
  }
  if ((err = p->ops->snapshot(p, &now)) == 0)
    err = p->ops->write(p, now, base, c->debug,
                        c->seconds ? cprof__now_ns(CLOCK_MONOTONIC) - start : 0, out);
  if (!err && out->failed)
    err = -ENOMEM;
  if (base)
    p->ops->release(p, base);
  if (now)
    p->ops->release(p, now);
  return err;
}
