/* cprof collect's main loop (collect/run.h). */
#include "collect/run.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "collect/scrape.h"
#include "collect/store.h"
#include "collect/web.h"

/* Waits for SIGTERM or SIGINT (blocked in every thread), then stops the
 * scraper: a thread of its own, since nothing of libcurl's may run in a
 * signal handler. */
static void *signals(void *arg) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig;
  if (sigwait(&set, &sig) == 0) {
    fprintf(stderr, "cprof collect: %s: finishing the scrapes in flight\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT");
    collect_scraper_stop(arg);
  }
  return NULL;
}

int collect_run(const collect_config_t *cfg, const char *listen) {
  char err[512];
  collect_store_t *store;
  collect_store_repair_t repair = {0};
  if (collect_store_open(cfg->directory, &store, &repair, err, sizeof err) != 0) {
    fprintf(stderr, "cprof collect: %s\n", err);
    return 1;
  }
  if (repair.tmp_removed || repair.orphans_removed || repair.rows_removed)
    fprintf(stderr,
            "cprof collect: %s: repaired after a crash: %lld unfinished files, %lld files without "
            "an index entry and %lld entries without their file removed\n",
            cfg->directory, (long long)repair.tmp_removed, (long long)repair.orphans_removed,
            (long long)repair.rows_removed);
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
  pthread_t t;
  if (pthread_create(&t, NULL, signals, s) != 0) {
    fprintf(stderr, "cprof collect: cannot start a thread\n");
    collect_web_stop(web);
    collect_scraper_free(s);
    collect_store_close(store);
    return 1;
  }
  pthread_detach(t);
  size_t targets = 0;
  for (size_t i = 0; i < cfg->njobs; i++)
    targets += cfg->jobs[i].ntargets;
  fprintf(stderr, "cprof collect: scraping %zu targets of %zu jobs into %s\n", targets, cfg->njobs,
          cfg->directory);
  int rc = collect_scraper_run(s);
  collect_web_stop(web);
  collect_scraper_free(s);
  collect_store_close(store);
  if (rc != 0)
    fprintf(stderr, "cprof collect: the scrape loop failed\n");
  else
    fprintf(stderr, "cprof collect: stopped\n");
  return rc != 0;
}
