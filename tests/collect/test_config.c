/* collect/config.c: Parca's config read back with every default filled in,
 * a user's pprof_config merged over the defaults, and every error found
 * where it is, as FILE:LINE:COLUMN. Each case writes its YAML to a file of
 * its own in a scratch directory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "collect/config.h"

static char dir[] = "/tmp/cprof_test_config.XXXXXX";
static int nfiles;

/* Writes TEXT to a new file in the scratch directory; returns its path. */
static const char *write_file(const char *name, const char *text) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f)) {
    perror(path);
    exit(1);
  }
  return path;
}

static const char *write_yaml(const char *text) {
  char name[64];
  snprintf(name, sizeof name, "c%d.yaml", nfiles++);
  return write_file(name, text);
}

static const collect_profile_t *profile(const collect_job_t *j, const char *name) {
  for (size_t i = 0; i < j->nprofiles; i++)
    if (!strcmp(j->profiles[i].name, name))
      return &j->profiles[i];
  return NULL;
}

#define STORAGE                                                                                    \
  "object_storage:\n  bucket:\n    type: FILESYSTEM\n    config:\n      directory: d\n"

static const char seed[] = "object_storage:\n"
                           "  bucket:\n"
                           "    type: \"FILESYSTEM\"\n"
                           "    config:\n"
                           "      directory: \"./tmp\"\n"
                           "\n"
                           "scrape_configs:\n"
                           "  - job_name: \"backend\"\n"
                           "    scrape_interval: \"3s\"\n"
                           "    static_configs:\n"
                           "      - targets: [ '127.0.0.1:6060' ]\n"
                           "  - job_name: \"cluster-agent\"\n"
                           "    scrape_interval: \"3s\"\n"
                           "    static_configs:\n"
                           "      - targets: [ '127.0.0.1:6061' ]\n";

static void test_seed(void) {
  collect_config_t *c;
  char err[512];
  const char *path = write_yaml(seed);
  CHECK_EQ_INT(collect_config_load(path, &c, err, sizeof err), 0);
  if (!c) {
    fprintf(stderr, "seed: %s\n", err);
    return;
  }
  CHECK_EQ_STR(c->file, path);
  CHECK_EQ_STR(c->directory, "./tmp");
  CHECK_EQ_INT(c->njobs, 2);
  static const char *const names[] = {"backend", "cluster-agent"};
  static const char *const addrs[] = {"127.0.0.1:6060", "127.0.0.1:6061"};
  for (size_t i = 0; i < c->njobs && i < 2; i++) {
    const collect_job_t *j = &c->jobs[i];
    CHECK_EQ_STR(j->name, names[i]);
    CHECK_EQ_INT(j->interval_ms, 3000);
    CHECK_EQ_INT(j->timeout_ms, 3000); /* Parca v0.16: the interval */
    CHECK_EQ_STR(j->scheme, "http");
    CHECK_EQ_STR(j->path_prefix, "");
    CHECK(!j->username && !j->password && !j->bearer_token);
    CHECK_EQ_INT(j->ntargets, 1);
    if (j->ntargets) {
      CHECK_EQ_STR(j->targets[0].addr, addrs[i]);
      CHECK_EQ_INT(j->targets[0].nlabels, 0);
    }
    /* The defaults, in this order, all but threadcreate enabled. */
    static const char *const pn[] = {"memory", "block",        "goroutine",
                                     "mutex",  "threadcreate", "process_cpu"};
    static const char *const pp[] = {"/debug/pprof/heap",         "/debug/pprof/block",
                                     "/debug/pprof/goroutine",    "/debug/pprof/mutex",
                                     "/debug/pprof/threadcreate", "/debug/pprof/profile"};
    CHECK_EQ_INT(j->nprofiles, 6);
    CHECK_EQ_INT(collect_job_enabled_profiles(j), 5); /* threadcreate is off, as in Parca */
    for (size_t p = 0; p < j->nprofiles && p < 6; p++) {
      CHECK_EQ_STR(j->profiles[p].name, pn[p]);
      CHECK_EQ_STR(j->profiles[p].path, pp[p]);
      CHECK_EQ_INT(j->profiles[p].enabled, p != 4);
      CHECK_EQ_INT(j->profiles[p].delta, p == 5);
      CHECK_EQ_INT(j->profiles[p].nkeep, 0);
    }
    const collect_profile_t *cpu = profile(j, "process_cpu");
    CHECK(cpu && cpu->seconds == 2); /* the interval less a second */
  }
  collect_config_free(c);
}

static void test_defaults(void) {
  collect_config_t *c;
  char err[512];
  const char *path = write_yaml(STORAGE "scrape_configs:\n"
                                        "  - job_name: a\n"
                                        "    static_configs:\n"
                                        "      - targets: ['[::1]:6060', 'localhost:1']\n"
                                        "  - job_name: b\n"
                                        "    scrape_interval: 1m30s\n"
                                        "    scrape_timeout: 1m\n");
  CHECK_EQ_INT(collect_config_load(path, &c, err, sizeof err), 0);
  if (!c) {
    fprintf(stderr, "defaults: %s\n", err);
    return;
  }
  CHECK_EQ_STR(c->directory, "d");
  CHECK_EQ_INT(c->njobs, 2);
  CHECK_EQ_INT(c->jobs[0].interval_ms, 10000);
  CHECK_EQ_INT(c->jobs[0].timeout_ms, 10000);
  CHECK_EQ_INT(c->jobs[0].ntargets, 2);
  CHECK_EQ_STR(c->jobs[0].targets[0].addr, "[::1]:6060");
  CHECK(profile(&c->jobs[0], "process_cpu") && profile(&c->jobs[0], "process_cpu")->seconds == 9);
  CHECK_EQ_INT(c->jobs[1].interval_ms, 90000);
  CHECK_EQ_INT(c->jobs[1].timeout_ms, 60000);
  CHECK_EQ_INT(c->jobs[1].ntargets, 0);
  /* Less than the shorter timeout, so that it arrives in time. */
  CHECK(profile(&c->jobs[1], "process_cpu") && profile(&c->jobs[1], "process_cpu")->seconds == 59);
  collect_config_free(c);

  /* No scrape_configs at all is a config Parca accepts. */
  CHECK_EQ_INT(collect_config_load(write_yaml(STORAGE), &c, err, sizeof err), 0);
  CHECK(c && c->njobs == 0);
  collect_config_free(c);
}

static void test_overrides(void) {
  collect_config_t *c;
  char err[512];
  write_file("pw", "  s3cret\n");
  write_file("token", "tok-123\n");
  const char *path = write_yaml(STORAGE "scrape_configs:\n"
                                        "  - job_name: full\n"
                                        "    scheme: https\n"
                                        "    scrape_interval: 5s\n"
                                        "    params:\n"
                                        "      debug: ['0']\n"
                                        "      x: [a, b]\n"
                                        "    basic_auth:\n"
                                        "      username: ops\n"
                                        "      password_file: pw\n"
                                        "    tls_config:\n"
                                        "      ca_file: /ca.pem\n"
                                        "      insecure_skip_verify: yes\n"
                                        "    static_configs:\n"
                                        "      - targets: ['h1:1', 'h2:2']\n"
                                        "        labels: {env: prod, team: core}\n"
                                        "      - targets: ['h3:3']\n"
                                        "    profiling_config:\n"
                                        "      path_prefix: /auth/\n"
                                        "      pprof_config:\n"
                                        "        memory: {enabled: false}\n"
                                        "        process_cpu: {enabled: true}\n"
                                        "        mutex:\n"
                                        "        threadcreate: {}\n"
                                        "        block:\n"
                                        "          path: /custom/block\n"
                                        "          keep_sample_type:\n"
                                        "            - {type: delay, unit: nanoseconds}\n"
                                        "            - type: contentions\n"
                                        "        fgprof:\n"
                                        "          path: /debug/fgprof\n"
                                        "          delta: true\n"
                                        "          seconds: 3\n"
                                        "  - job_name: token\n"
                                        "    bearer_token_file: token\n");
  CHECK_EQ_INT(collect_config_load(path, &c, err, sizeof err), 0);
  if (!c) {
    fprintf(stderr, "overrides: %s\n", err);
    return;
  }
  const collect_job_t *j = &c->jobs[0];
  CHECK_EQ_STR(j->scheme, "https");
  CHECK_EQ_STR(j->username, "ops");
  CHECK_EQ_STR(j->password, "s3cret"); /* read relative to the config, trimmed */
  CHECK_EQ_STR(j->ca_file, "/ca.pem");
  CHECK_EQ_INT(j->insecure_skip_verify, 1);
  CHECK(!j->cert_file && !j->bearer_token);
  CHECK_EQ_INT(j->nparams, 3);
  if (j->nparams == 3) {
    CHECK_EQ_STR(j->params[0].name, "debug");
    CHECK_EQ_STR(j->params[0].value, "0");
    CHECK_EQ_STR(j->params[2].name, "x");
    CHECK_EQ_STR(j->params[2].value, "b");
  }
  CHECK_EQ_INT(j->ntargets, 3);
  if (j->ntargets == 3) {
    CHECK_EQ_STR(j->targets[1].addr, "h2:2");
    CHECK_EQ_INT(j->targets[1].nlabels, 2);
    if (j->targets[1].nlabels == 2) {
      CHECK_EQ_STR(j->targets[1].labels[1].name, "team");
      CHECK_EQ_STR(j->targets[1].labels[1].value, "core");
    }
    CHECK_EQ_INT(j->targets[2].nlabels, 0);
  }
  CHECK_EQ_INT(j->nprofiles, 7);
  CHECK_EQ_INT(collect_job_enabled_profiles(j), 6);
  /* Off by default; named in the file, on. */
  CHECK(profile(j, "threadcreate") && profile(j, "threadcreate")->enabled);
  const collect_profile_t *p;
  CHECK((p = profile(j, "memory")) && !p->enabled && !strcmp(p->path, "/auth/debug/pprof/heap"));
  /* Parca would drop delta here; the default's delta stays. */
  CHECK((p = profile(j, "process_cpu")) && p->enabled && p->delta && p->seconds == 4);
  CHECK((p = profile(j, "mutex")) && p->enabled && !strcmp(p->path, "/auth/debug/pprof/mutex"));
  CHECK((p = profile(j, "block")) && !strcmp(p->path, "/auth/custom/block") && p->nkeep == 2);
  if (p && p->nkeep == 2) {
    CHECK_EQ_STR(p->keep[0].type, "delay");
    CHECK_EQ_STR(p->keep[0].unit, "nanoseconds");
    CHECK_EQ_STR(p->keep[1].type, "contentions");
    CHECK_EQ_STR(p->keep[1].unit, "");
  }
  CHECK((p = profile(j, "fgprof")) && p->enabled && p->delta && p->seconds == 3 &&
        !strcmp(p->path, "/auth/debug/fgprof"));
  CHECK_EQ_STR(j->profiles[6].name, "fgprof"); /* the job's own come after the defaults */
  CHECK_EQ_STR(c->jobs[1].bearer_token, "tok-123");
  collect_config_free(c);
}

static void test_durations(void) {
  static const struct {
    const char *s;
    long ms;
  } good[] = {{"10s", 10000}, {"1m30s", 90000}, {"500ms", 500},     {"1h", 3600000},
              {"0", 0},       {"1d", 86400000}, {"1m1s1ms", 61001}, {"2w", 1209600000}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    long ms = -1;
    CHECK_EQ_INT(collect_parse_duration(good[i].s, &ms), 0);
    CHECK_EQ_INT(ms, good[i].ms);
  }
  static const char *const bad[] = {
      "", "10", "1s1m", "1.5s", "s", "10x", "1ms1s", "-1s", "1s ", "1m1m", "99999999999999999999s"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    long ms;
    if (collect_parse_duration(bad[i], &ms) != -EINVAL)
      fprintf(stderr, "duration \"%s\" was taken\n", bad[i]);
    CHECK_EQ_INT(collect_parse_duration(bad[i], &ms), -EINVAL);
  }
}

/* Each broken config, the LINE:COLUMN it must name and a phrase of the
 * message. */
static const struct {
  const char *yaml, *where, *phrase;
} broken[] = {
    {"object_storag: {}\n", "1:1", "unknown key object_storag in the config"},
    {"object_storage: [a]\n", "1:17", "object_storage wants a map, not a list"},
    {"scrape_configs: []\n", "1:1", "object_storage is missing"},
    {"- a\n", "1:1", "the config wants a map"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    scrape_intervall: 3s\n", "8:5",
     "unknown key scrape_intervall in a scrape config"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    scrape_interval: \"3x\"\n", "8:22",
     "\"3x\" is not a duration"},
    {STORAGE
     "scrape_configs:\n  - job_name: a\n    scrape_interval: 10s\n    scrape_timeout: 11s\n",
     "9:21", "scrape_timeout (11000ms) must be more than 0 and fit in scrape_interval (10000ms)"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n"
             "    scrape_timeout: 1s\n",
     "9:21", "at least 2s while process_cpu"},
    {STORAGE "scrape_configs:\n  - scheme: http\n", "7:5", "without a job_name"},
    {STORAGE "scrape_configs:\n  - job_name: \"\"\n", "7:15", "without a job_name"},
    {STORAGE "scrape_configs:\n  - job_name: a\n  - job_name: b\n  - job_name: a\n", "9:15",
     "job_name a is used twice"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    static_configs:\n"
             "      - targets: ['h:1', 'http://h:2/']\n",
     "9:26", "target \"http://h:2/\" is not host:port"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets:\n"
             "        - localhost\n",
     "10:11", "target \"localhost\" is not host:port"},
    {STORAGE
     "scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: ['h:99999']\n",
     "9:19", "no port from 1 to 65535"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: 'h:1'\n",
     "9:18", "targets wants a list, not a single value"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    scheme: ftp\n", "8:13",
     "scheme \"ftp\" is not http or https"},
    {"object_storage:\n  bucket:\n    type: S3\n    config: {bucket: b}\n", "3:11",
     "only FILESYSTEM"},
    {"object_storage:\n  bucket:\n    type: FILESYSTEM\n    config: {}\n", "4:13",
     "needs config.directory"},
    {"object_storage:\n  bucket:\n    type: FILESYSTEM\n", "3:5", "needs config.directory"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    profiling_config:\n      pprof_config:\n"
             "        fgprof: {enabled: true}\n",
     "10:9", "profile fgprof is not one of Parca's defaults, so it needs a path"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    profiling_config:\n      pprof_config:\n"
             "        memory: {enabled: maybe}\n",
     "10:27", "enabled wants true or false"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    profiling_config:\n      pprof_config:\n"
             "        memory: {path: heap}\n",
     "10:24", "does not begin with /"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    scrape_interval: 3s\n    profiling_config:\n"
             "      pprof_config:\n        x: {path: /x, delta: true, seconds: 6}\n",
     "11:45", "does not end before scrape_timeout"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    relabel_configs: []\n", "8:5",
     "relabel_configs in a scrape config is a Parca setting cprof collect does not support"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    kubernetes_sd_configs: []\n", "8:5",
     "does not support yet"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    job_name: b\n", "8:5",
     "job_name is given twice in a scrape config (first on line 7)"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    static_configs:\n"
             "      - targets: ['h:1']\n        labels: {1x: y}\n",
     "10:18", "label name \"1x\" is not valid"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    basic_auth:\n      password_file: nope\n",
     "9:22", "password_file nope: No such file or directory"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    bearer_token: x\n    bearer_token_file: y\n",
     "9:24", "bearer_token or bearer_token_file, not both"},
    {STORAGE "scrape_configs:\n  - job_name: a\n    static_configs: {targets: []}\n", "8:21",
     "static_configs wants a list, not a map"},
    {"object_storage:\n  bucket:\n    type: FILESYSTEM\n  config: [\n", "5:1",
     "did not find expected node content"},
    {"object_storage:\n  bucket: {\n    type: FILESYSTEM\n   bad\n", "5:1", "(while parsing"},
    {"a: b\n c: d\n", "2:3", "mapping values are not allowed"},
    {"object_storage:\n  bucket: \xff\n", "2:11", "invalid leading UTF-8 octet"},
    {"", "1:1", "the file is empty"},
    {"# only a comment\n", "1:1", "the file is empty"},
    /* remote_write (cprof's own section) */
    {STORAGE "remote_write: [x]\n", "6:15", "remote_write wants a map, not a list"},
    {STORAGE "remote_write:\n  urll: http://p:4040\n", "7:3", "unknown key urll in remote_write"},
    {STORAGE "remote_write:\n  queue_size: 3\n", "7:3", "remote_write has no url"},
    {STORAGE "remote_write:\n  url: p:4040\n", "7:8", "is not an http:// or https:// URL"},
    {STORAGE "remote_write:\n  url: http://\n", "7:8", "has no host"},
    {STORAGE "remote_write:\n  url: http://p:4040/ingest?name=a\n", "7:8", "has a query"},
    {STORAGE "remote_write:\n  url: http://p\n  queue_size: 0\n", "8:15",
     "queue_size \"0\" is not a number from 1 to 1000000"},
    {STORAGE "remote_write:\n  url: http://p\n  queue_size: 10k\n", "8:15", "not a number"},
    {STORAGE "remote_write:\n  url: http://p\n  queue_size: [1]\n", "8:15",
     "queue_size wants a single value"},
    {STORAGE "remote_write:\n  url: http://p\n  bearer_token: t\n  basic_auth: {username: u}\n",
     "8:17", "remote_write takes basic_auth or a bearer token, not both"},
    {STORAGE "remote_write:\n  url: http://p\n  basic_auth: {user: u}\n", "8:16",
     "unknown key user in basic_auth"},
    {STORAGE "remote_write:\n  url: http://p\n  bearer_token_file: absent\n", "8:22",
     "bearer_token_file absent: No such file or directory"},
    {STORAGE "remote_write:\n  url: http://p\n  tenant_id: {a: b}\n", "8:14",
     "tenant_id wants a single value"},
};

/* remote_write read back, with its defaults and its secret from a file. */
static void test_remote_write(void) {
  collect_config_t *c;
  char err[512];
  CHECK_EQ_INT(collect_config_load(write_yaml(STORAGE), &c, err, sizeof err), 0);
  CHECK(c && c->remote_write == NULL);
  collect_config_free(c);

  CHECK_EQ_INT(collect_config_load(write_yaml(STORAGE "remote_write:\n  url: http://p:4040\n"), &c,
                                   err, sizeof err),
               0);
  CHECK(c && c->remote_write);
  if (c && c->remote_write) {
    CHECK_EQ_STR(c->remote_write->url, "http://p:4040");
    CHECK_EQ_INT(c->remote_write->queue_size, COLLECT_DEFAULT_QUEUE_SIZE);
    CHECK(!c->remote_write->username && !c->remote_write->password &&
          !c->remote_write->bearer_token && !c->remote_write->tenant_id);
  }
  collect_config_free(c);

  write_file("rw_password", "  s3cret\n");
  CHECK_EQ_INT(collect_config_load(write_yaml(STORAGE "remote_write:\n"
                                                      "  url: https://p/base/\n"
                                                      "  basic_auth:\n"
                                                      "    username: me\n"
                                                      "    password_file: rw_password\n"
                                                      "  tenant_id: team-a\n"
                                                      "  queue_size: 7\n"),
                                   &c, err, sizeof err),
               0);
  CHECK(c && c->remote_write);
  if (c && c->remote_write) {
    CHECK_EQ_STR(c->remote_write->url, "https://p/base/");
    CHECK_EQ_STR(c->remote_write->username, "me");
    CHECK_EQ_STR(c->remote_write->password, "s3cret");
    CHECK_EQ_STR(c->remote_write->tenant_id, "team-a");
    CHECK_EQ_INT(c->remote_write->queue_size, 7);
    CHECK(!c->remote_write->bearer_token);
  }
  collect_config_free(c);

  CHECK_EQ_INT(collect_config_load(
                   write_yaml(STORAGE "remote_write: {url: 'http://p', bearer_token: tok}\n"), &c,
                   err, sizeof err),
               0);
  if (c && c->remote_write)
    CHECK_EQ_STR(c->remote_write->bearer_token, "tok");
  collect_config_free(c);
}

static void test_errors(void) {
  for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
    collect_config_t *c = (void *)1;
    char err[512] = "", want[4200];
    const char *path = write_yaml(broken[i].yaml);
    int rc = collect_config_load(path, &c, err, sizeof err);
    snprintf(want, sizeof want, "%s:%s: ", path, broken[i].where);
    int ok = rc == -EINVAL && c == NULL && !strncmp(err, want, strlen(want)) &&
             strstr(err, broken[i].phrase) && !strchr(err, '\n');
    if (!ok)
      fprintf(stderr, "case %zu: rc %d, got \"%s\", want \"%s...%s\"\n", i, rc, err, want,
              broken[i].phrase);
    CHECK(ok);
    if (c != (void *)1)
      collect_config_free(c);
  }
}

static void test_unreadable(void) {
  collect_config_t *c;
  char err[512], want[4200];
  snprintf(want, sizeof want, "%s/absent.yaml", dir);
  CHECK_EQ_INT(collect_config_load(want, &c, err, sizeof err), -ENOENT);
  strcat(want, ": No such file or directory");
  CHECK_EQ_STR(err, want);
  CHECK(c == NULL);
  CHECK_EQ_INT(collect_config_load(dir, &c, err, sizeof err), -EISDIR);
  /* A message longer than the buffer is cut, not overrun. */
  char small[12];
  CHECK_EQ_INT(collect_config_load(write_yaml("object_storag: {}\n"), &c, small, sizeof small),
               -EINVAL);
  CHECK_EQ_INT(strlen(small), sizeof small - 1);
}

int main(void) {
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_seed();
  test_defaults();
  test_overrides();
  test_durations();
  test_errors();
  test_remote_write();
  test_unreadable();
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return check_result("collect/test_config");
}
