/* cprof collect's main loop (collect/run.h). */
#include "collect/run.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collect/push.h"
#include "collect/scrape.h"
#include "collect/store.h"
#include "collect/web.h"

#define RETAIN_EVERY_S 10

typedef struct {
  collect_scraper_t *scraper;
  collect_store_t *store;
  collect_retention_t keep;
} housekeeper_t;

static void retain(housekeeper_t *h) {
  if (h->keep.max_age_ns <= 0 && h->keep.max_bytes <= 0)
    return;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  collect_store_retained_t gone = {0};
  char err[512];
  if (collect_store_retain(h->store, h->keep.max_age_ns, h->keep.max_bytes,
                           (int64_t)now.tv_sec * 1000000000 + now.tv_nsec, &gone, err,
                           sizeof err) != 0)
    fprintf(stderr, "cprof collect: retention: %s\n", err);
  else if (gone.profiles)
    fprintf(stderr, "cprof collect: retention: %lld profiles (%.1f MB) deleted\n",
            (long long)gone.profiles, (double)gone.bytes / 1e6);
}

/* The collector's second thread: applies the retention every
 * RETAIN_EVERY_S seconds, and stops the scraper at SIGTERM or SIGINT
 * (blocked in every thread, taken here by sigtimedwait: nothing of
 * libcurl's may run in a signal handler). */
static void *housekeeper(void *arg) {
  housekeeper_t *h = arg;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  for (;;) {
    retain(h);
    struct timespec every = {RETAIN_EVERY_S, 0};
    int sig = sigtimedwait(&set, NULL, &every);
    if (sig == SIGTERM || sig == SIGINT) {
      fprintf(stderr, "cprof collect: %s: finishing the scrapes in flight\n",
              sig == SIGTERM ? "SIGTERM" : "SIGINT");
      collect_scraper_stop(h->scraper);
      return NULL;
    }
  }
}

/* The store, opened and repaired (saying what a crash left), or NULL
 * after a line on stderr. */
static collect_store_t *open_store(const collect_config_t *cfg) {
  char err[512];
  collect_store_t *store;
  collect_store_repair_t repair = {0};
  if (collect_store_open(cfg->directory, &store, &repair, err, sizeof err) != 0) {
    fprintf(stderr, "cprof collect: %s\n", err);
    return NULL;
  }
  if (repair.tmp_removed || repair.orphans_removed || repair.rows_removed)
    fprintf(stderr,
            "cprof collect: %s: repaired after a crash: %lld unfinished files, %lld files without "
            "an index entry and %lld entries without their file removed\n",
            cfg->directory, (long long)repair.tmp_removed, (long long)repair.orphans_removed,
            (long long)repair.rows_removed);
  return store;
}

/* What the remote write did, once it has stopped. */
static void say_pushed(collect_pusher_t *pusher) {
  collect_push_totals_t pt;
  collect_pusher_totals(pusher, &pt);
  fprintf(stderr,
          "cprof collect: remote write: pushed %llu, retried %llu, dropped %llu, rejected %llu\n",
          (unsigned long long)pt.pushed, (unsigned long long)pt.retried,
          (unsigned long long)pt.dropped, (unsigned long long)pt.rejected);
}

int collect_run(const collect_config_t *cfg, const collect_retention_t *keep, const char *listen) {
  char err[512];
  collect_store_t *store = open_store(cfg);
  if (!store)
    return 1;
  collect_scraper_t *s;
  if (collect_scraper_new(cfg, store, &s, err, sizeof err) != 0) {
    fprintf(stderr, "cprof collect: %s\n", err);
    collect_store_close(store);
    return 1;
  }
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  /* The server's threads start after the mask, so they inherit it. */
  collect_web_t *web;
  if (collect_web_start(cfg, s, store, listen, &web, err, sizeof err) != 0) {
    fprintf(stderr, "cprof collect: %s\n", err);
    collect_scraper_free(s);
    collect_store_close(store);
    return 1;
  }
  fprintf(stderr, "cprof collect: serving http://%s/\n", collect_web_address(web));
  collect_pusher_t *pusher = NULL;
  /* After the mask: the pusher's thread must not take SIGTERM either. */
  if (cfg->remote_write) {
    if (collect_pusher_new(cfg->remote_write, &pusher, err, sizeof err) != 0) {
      fprintf(stderr, "cprof collect: %s\n", err);
      collect_web_stop(web);
      collect_scraper_free(s);
      collect_store_close(store);
      return 1;
    }
    collect_scraper_set_pusher(s, pusher);
    fprintf(stderr, "cprof collect: remote write to %s (Pyroscope's /ingest)\n",
            cfg->remote_write->url);
  }
  pthread_t t;
  housekeeper_t h = {s, store, *keep};
  if (pthread_create(&t, NULL, housekeeper, &h) != 0) {
    fprintf(stderr, "cprof collect: cannot start a thread\n");
    collect_pusher_free(pusher);
    collect_web_stop(web);
    collect_scraper_free(s);
    collect_store_close(store);
    return 1;
  }

  size_t targets = 0;
  for (size_t i = 0; i < cfg->njobs; i++)
    targets += cfg->jobs[i].ntargets;
  fprintf(stderr, "cprof collect: scraping %zu targets of %zu jobs into %s\n", targets, cfg->njobs,
          cfg->directory);
  int rc = collect_scraper_run(s);
  if (rc != 0) /* the housekeeper waits for a signal: send it one */
    pthread_kill(t, SIGTERM);
  pthread_join(t, NULL);
  /* What was scraped last is sent, if Pyroscope takes it soon enough;
   * then the pages stop, before what they read goes. */
  if (pusher)
    collect_pusher_stop(pusher, COLLECT_PUSH_FLUSH_MS);
  collect_web_stop(web);
  if (pusher) {
    say_pushed(pusher);
    collect_pusher_free(pusher);
  }
  collect_scraper_free(s);
  collect_store_close(store);
  if (rc != 0)
    fprintf(stderr, "cprof collect: the scrape loop failed\n");
  else
    fprintf(stderr, "cprof collect: stopped\n");
  return rc != 0;
}
