/* Writes a large, valid profile.proto for timing `cprof top` against
 * `go tool pprof -top` (bench/cli/run.sh). Deterministic: the same seed,
 * shape and size give the same bytes, so runs on different days read the
 * same profile.
 *
 *   gen_profile [--shape deep|cpu] [--size MB] [--seed N] [--raw] -o FILE
 *
 * Two shapes, so that a speed figure is never stated for one kind of
 * profile only:
 *   deep  a heap profile as Go writes one (alloc_objects, alloc_space,
 *         inuse_objects, inuse_space; period 512 KiB): 20,000 functions with
 *         C++ names (templates, `<`, `>`, `&`), 100,000 locations of one to
 *         three lines (inlined frames), stacks 20 to 200 frames deep with
 *         runs of recursion, one in a hundred 1,000 deep, a thread label and
 *         a numeric bytes label on one sample in five.
 *   cpu   a CPU profile (samples, cpu nanoseconds; period 10 ms): 5,000
 *         functions, 30,000 locations, stacks 4 to 30 deep, many more samples
 *         for the same size, a handler label on one sample in three.
 * Stacks are walks down a fixed random call graph whose edges favour a few
 * callees, so some paths are hot and most are cold, as in a real program.
 *
 * --size is the size of the encoding before gzip (default 50 MB; at least
 * the tables and 100 samples, about 6 MB for deep, 2 for cpu); the file
 * is gzipped as Go and cprof write profiles unless --raw. The encoding goes
 * through cprof's own wire primitives (src/profile/protobuf.h), not its
 * profile builder, which symbolizes real addresses. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "core/buf.h"
#include "profile/fields.h"
#include "profile/gzip.h"
#include "profile/protobuf.h"

static const char usage[] = "gen_profile [--shape deep|cpu] [--size MB] [--seed N] [--raw] -o FILE";


/* The call graph's fan-out, and how often a walk takes each edge. */
#define CALLEES 4
static const double callee_odds[CALLEES] = {0.55, 0.8, 0.93, 1.0};
#define ROOTS 8
#define MAX_DEPTH 1100
#define BASE_ADDRESS 0x400000u

typedef struct shape {
  const char *name;
  uint32_t functions, locations, files;
  int depth_min, depth_max;
  double deep_share;  /* samples 1,000 frames deep */
  double label_share; /* samples with labels */
  int heap;           /* heap-like values and labels; else CPU-like */
} shape_t;

static const shape_t shapes[] = {
    {"deep", 20000, 100000, 800, 20, 200, 0.01, 0.2, 1},
    {"cpu", 5000, 30000, 300, 4, 30, 0, 0.33, 0},
};

/* The string table, in the order the strings are added; the generator
 * never adds one twice. */
typedef struct strings {
  char **s;
  uint32_t n, cap;
} strings_t;

static uint32_t str_add(strings_t *t, const char *s) {
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 1024;
    t->s = realloc(t->s, t->cap * sizeof *t->s);
    if (!t->s) {
      fprintf(stderr, "gen_profile: out of memory\n");
      exit(1);
    }
  }
  t->s[t->n] = strdup(s);
  if (!t->s[t->n]) {
    fprintf(stderr, "gen_profile: out of memory\n");
    exit(1);
  }
  return t->n++;
}

static const char *const namespaces[] = {"app",  "net",   "db",    "storage", "render",
                                         "absl", "folly", "boost", "proto2",  "v8"};
static const char *const modules[] = {"detail", "internal", "io",  "sched", "cache",
                                      "codec",  "index",    "rpc", "txn",   "gc"};
static const char *const classes[] = {"Table",  "Session",   "Worker",  "Buffer",
                                      "Parser", "Allocator", "Channel", "Executor",
                                      "Arena",  "Handler",   "Visitor", "Batch"};
static const char *const args[] = {
    "std::vector<Row, std::allocator<Row> >", "std::basic_string<char, std::char_traits<char> >",
    "std::map<Key, Value*, std::less<Key> >", "std::function<void (int&)>",
    "std::unique_ptr<Node, Deleter>",         "absl::Span<unsigned char const>"};
static const char *const verbs[] = {"scan",  "flush", "encode",   "decode",  "lookup",  "insert",
                                    "merge", "visit", "dispatch", "reserve", "compact", "step"};

#define PICK(r, a) ((a)[rng_below((r), sizeof(a) / sizeof((a)[0]))])

/* A unique C++-like name for function j: the template argument is j. */
static void function_name(rng_t *r, uint32_t j, char *out, size_t size) {
  snprintf(out, size, "%s::%s::%s<%s, %uul>::%s_%s(%s const&, unsigned long)", PICK(r, namespaces),
           PICK(r, modules), PICK(r, classes), PICK(r, args), j, PICK(r, verbs), PICK(r, verbs),
           PICK(r, args));
}

/* A number in [0, n) that favours small ones: a few functions and
 * locations get most of the traffic. */
static uint32_t skewed(rng_t *r, uint32_t n) {
  double u = rng_unit(r);
  return (uint32_t)(u * u * u * n);
}

static void value_type(cprof__buf_t *out, int field, uint32_t type, uint32_t unit) {
  size_t m = cprof__pb_start(out);
  cprof__pb_int64(out, VALUE_TYPE_TYPE, type);
  cprof__pb_int64(out, VALUE_TYPE_UNIT, unit);
  cprof__pb_end(out, field, m);
}

static int write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -errno;
  size_t w = fwrite(p, 1, n, f);
  int rc = (w == n) ? 0 : -EIO;
  if (fclose(f) != 0 && rc == 0)
    rc = -errno;
  return rc;
}

int main(int argc, char **argv) {
  const shape_t *sh = &shapes[0];
  double size_mb = 50;
  uint64_t seed = 1;
  int raw = 0;
  const char *path = NULL;
  static const struct option opts[] = {{"shape", required_argument, 0, 's'},
                                       {"size", required_argument, 0, 'm'},
                                       {"seed", required_argument, 0, 'r'},
                                       {"raw", no_argument, 0, 'R'},
                                       {"output", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
    switch (c) {
    case 's':
      sh = NULL;
      for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (strcmp(optarg, shapes[i].name) == 0)
          sh = &shapes[i];
      if (!sh) {
        fprintf(stderr, "gen_profile: no shape %s (deep or cpu)\n", optarg);
        return 2;
      }
      break;
    case 'm':
      size_mb = number_arg(optarg, usage);
      break;
    case 'r':
      seed = (uint64_t)number_arg(optarg, usage);
      break;
    case 'R':
      raw = 1;
      break;
    case 'o':
      path = optarg;
      break;
    case 'h':
      printf("usage: %s\n", usage);
      return 0;
    default:
      fprintf(stderr, "usage: %s\n", usage);
      return 2;
    }
  }
  if (!path || optind != argc) {
    fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  size_t target = (size_t)(size_mb * 1e6);
  rng_t r;
  rng_seed(&r, seed);

  /* Strings that are not names: index 0 must be "". */
  strings_t st = {0};
  str_add(&st, "");
  uint32_t s_types[4], s_units[4], s_ptype, s_punit, s_thread, s_bytes, s_handler, s_file, s_build;
  int ntypes;
  if (sh->heap) {
    static const char *const t[] = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"};
    static const char *const u[] = {"count", "bytes"};
    ntypes = 4;
    for (int i = 0; i < ntypes; i++) {
      s_types[i] = str_add(&st, t[i]);
      s_units[i] = i < 2 ? str_add(&st, u[i]) : s_units[i - 2];
    }
    s_ptype = str_add(&st, "space");
    s_punit = s_units[1];
  } else {
    ntypes = 2;
    s_types[0] = str_add(&st, "samples");
    s_units[0] = str_add(&st, "count");
    s_types[1] = str_add(&st, "cpu");
    s_units[1] = str_add(&st, "nanoseconds");
    s_ptype = s_types[1];
    s_punit = s_units[1];
  }
  s_thread = str_add(&st, "thread");
  s_bytes = sh->heap ? s_units[1] : str_add(&st, "bytes");
  s_handler = str_add(&st, "handler");
  s_file = str_add(&st, "/usr/bin/bigserver");
  s_build = str_add(&st, "4f2c9a0e1b7d3c5a6e8f9b0c1d2e3f4a5b6c7d8e");
  uint32_t s_values[32];
  char name[512];
  for (int i = 0; i < 32; i++) {
    if (sh->heap)
      snprintf(name, sizeof name, "worker-%02d", i);
    else
      snprintf(name, sizeof name, "/api/v%d/%s", i % 3 + 1, verbs[i % 12]);
    s_values[i] = str_add(&st, name);
  }
  uint32_t file0 = st.n;
  for (uint32_t i = 0; i < sh->files; i++) {
    snprintf(name, sizeof name, "/src/bigserver/%s/%s/%s_%u.cc", PICK(&r, namespaces),
             PICK(&r, modules), PICK(&r, verbs), i);
    str_add(&st, name);
  }
  uint32_t func0 = st.n;
  for (uint32_t j = 0; j < sh->functions; j++) {
    function_name(&r, j, name, sizeof name);
    str_add(&st, name);
  }

  /* Everything but the samples goes into `tail`, first, so that the
   * samples can fill what is left of the size asked for. */
  cprof__buf_t tail, out;
  cprof__buf_init(&tail);
  cprof__buf_init(&out);

  size_t m = cprof__pb_start(&tail);
  cprof__pb_uint64(&tail, MAPPING_ID, 1);
  cprof__pb_uint64(&tail, MAPPING_MEMORY_START, BASE_ADDRESS);
  cprof__pb_uint64(&tail, MAPPING_MEMORY_LIMIT, BASE_ADDRESS + (uint64_t)sh->locations * 64);
  cprof__pb_int64(&tail, MAPPING_FILENAME, s_file);
  cprof__pb_int64(&tail, MAPPING_BUILD_ID, s_build);
  cprof__pb_bool(&tail, MAPPING_HAS_FUNCTIONS, 1);
  cprof__pb_bool(&tail, MAPPING_HAS_FILENAMES, 1);
  cprof__pb_bool(&tail, MAPPING_HAS_LINE_NUMBERS, 1);
  cprof__pb_bool(&tail, MAPPING_HAS_INLINE_FRAMES, 1);
  cprof__pb_end(&tail, PROFILE_MAPPING, m);

  /* Location i (ID i + 1) sits at BASE_ADDRESS + 64 i; one in ten has
   * three lines (two functions inlined into a third), two in ten two. */
  for (uint32_t i = 0; i < sh->locations; i++) {
    double u = rng_unit(&r);
    int lines = u < 0.7 ? 1 : u < 0.9 ? 2 : 3;
    size_t l = cprof__pb_start(&tail);
    cprof__pb_uint64(&tail, LOCATION_ID, i + 1);
    cprof__pb_uint64(&tail, LOCATION_MAPPING_ID, 1);
    cprof__pb_uint64(&tail, LOCATION_ADDRESS, BASE_ADDRESS + (uint64_t)i * 64 + rng_below(&r, 60));
    for (int k = 0; k < lines; k++) {
      size_t ln = cprof__pb_start(&tail);
      cprof__pb_uint64(&tail, LINE_FUNCTION_ID, skewed(&r, sh->functions) + 1);
      cprof__pb_int64(&tail, LINE_LINE, 1 + rng_below(&r, 5000));
      cprof__pb_end(&tail, LOCATION_LINE, ln);
    }
    cprof__pb_end(&tail, PROFILE_LOCATION, l);
  }
  for (uint32_t j = 0; j < sh->functions; j++) {
    size_t f = cprof__pb_start(&tail);
    cprof__pb_uint64(&tail, FUNCTION_ID, j + 1);
    cprof__pb_int64(&tail, FUNCTION_NAME, func0 + j);
    cprof__pb_int64(&tail, FUNCTION_SYSTEM_NAME, func0 + j);
    cprof__pb_int64(&tail, FUNCTION_FILENAME, file0 + rng_below(&r, sh->files));
    cprof__pb_int64(&tail, FUNCTION_START_LINE, 1 + rng_below(&r, 5000));
    cprof__pb_end(&tail, PROFILE_FUNCTION, f);
  }
  for (uint32_t i = 0; i < st.n; i++)
    cprof__pb_string(&tail, PROFILE_STRING_TABLE, st.s[i]);
  cprof__pb_int64(&tail, PROFILE_TIME_NANOS, 1700000000LL * 1000000000LL);
  value_type(&tail, PROFILE_PERIOD_TYPE, s_ptype, s_punit);
  if (sh->heap) {
    cprof__pb_int64(&tail, PROFILE_PERIOD, 512 * 1024);
  } else {
    cprof__pb_int64(&tail, PROFILE_PERIOD, 10000000);
  }

  /* The call graph: location i calls callees[i][0..CALLEES), the first
   * most often; callees favour low location numbers. */
  uint32_t(*callees)[CALLEES] = malloc(sizeof *callees * sh->locations);
  uint32_t *stack = malloc(sizeof *stack * MAX_DEPTH);
  if (!callees || !stack) {
    fprintf(stderr, "gen_profile: out of memory\n");
    return 1;
  }
  for (uint32_t i = 0; i < sh->locations; i++)
    for (int k = 0; k < CALLEES; k++)
      callees[i][k] = ROOTS + skewed(&r, sh->locations - ROOTS);

  for (int i = 0; i < ntypes; i++)
    value_type(&out, PROFILE_SAMPLE_TYPE, s_types[i], s_units[i]);

  uint64_t samples = 0, frames = 0, cpu_ns = 0;
  int deepest = 0;
  /* At least 100 samples, even when the tables alone pass the size. */
  while ((samples < 100 || out.len + tail.len < target) && !out.failed) {
    int depth = sh->depth_min + (int)rng_below(&r, (uint64_t)(sh->depth_max - sh->depth_min + 1));
    /* The frame where a deep stack's recursion starts, or -1. */
    int recurse_at = -1;
    if (sh->deep_share > 0 && rng_unit(&r) < sh->deep_share) {
      depth = 1000;
      recurse_at = 10;
    }
    /* Built from the root down, then written leaf first as the format
     * wants. A deep stack is a recursion of three locations through most
     * of its depth; others recurse on one location now and then. */
    uint32_t cur = (uint32_t)rng_below(&r, ROOTS);
    int n = 0;
    stack[n++] = cur;
    while (n < depth) {
      if (recurse_at >= 0 && n >= recurse_at) {
        recurse_at = -1;
        uint32_t a = cur, b = callees[a][0], c3 = callees[b][0];
        while (n + 3 <= depth - 10) {
          stack[n++] = a;
          stack[n++] = b;
          stack[n++] = c3;
        }
        cur = c3;
        continue;
      }
      double u = rng_unit(&r);
      int k = 0;
      while (u >= callee_odds[k])
        k++;
      cur = callees[cur][k];
      stack[n++] = cur;
      if (rng_unit(&r) < 0.03) {
        int reps = 2 + (int)rng_below(&r, 6);
        for (int t = 0; t < reps && n < depth; t++)
          stack[n++] = cur;
      }
    }
    for (int i = 0; i < n / 2; i++) {
      uint32_t t = stack[i];
      stack[i] = stack[n - 1 - i];
      stack[n - 1 - i] = t;
    }

    int64_t v[4];
    if (sh->heap) {
      int64_t objs = 1 + (int64_t)rng_below(&r, 1u << rng_below(&r, 11));
      int64_t size = 16LL << rng_below(&r, 12);
      int64_t live = rng_below(&r, 2) ? (int64_t)rng_below(&r, (uint64_t)objs + 1) : 0;
      v[0] = objs;
      v[1] = objs * size;
      v[2] = live;
      v[3] = live * size;
    } else {
      v[0] = 1 + (int64_t)(rng_unit(&r) < 0.2 ? rng_below(&r, 20) : 0);
      v[1] = v[0] * 10000000;
      cpu_ns += (uint64_t)v[1];
    }

    size_t s = cprof__pb_start(&out);
    cprof__pb_uint32s_plus(&out, SAMPLE_LOCATION_ID, stack, (size_t)n, 1);
    cprof__pb_int64s(&out, SAMPLE_VALUE, v, (size_t)ntypes);
    if (rng_unit(&r) < sh->label_share) {
      size_t l = cprof__pb_start(&out);
      cprof__pb_int64(&out, LABEL_KEY, sh->heap ? s_thread : s_handler);
      cprof__pb_int64(&out, LABEL_STR, s_values[rng_below(&r, 32)]);
      cprof__pb_end(&out, SAMPLE_LABEL, l);
      if (sh->heap) {
        l = cprof__pb_start(&out);
        cprof__pb_int64(&out, LABEL_KEY, s_bytes);
        cprof__pb_int64(&out, LABEL_NUM, v[1] / v[0]);
        cprof__pb_int64(&out, LABEL_NUM_UNIT, s_bytes);
        cprof__pb_end(&out, SAMPLE_LABEL, l);
      }
    }
    cprof__pb_end(&out, PROFILE_SAMPLE, s);
    samples++;
    frames += (uint64_t)n;
    if (n > deepest)
      deepest = n;
  }
  cprof__buf_append(&out, tail.data, tail.len);
  /* A CPU profile's duration comes last (fields may come in any order):
   * the samples' CPU time spread over 32 busy cores. */
  if (!sh->heap)
    cprof__pb_int64(&out, PROFILE_DURATION_NANOS, (int64_t)(cpu_ns / 32));
  if (out.failed || tail.failed) {
    fprintf(stderr, "gen_profile: out of memory\n");
    return 1;
  }

  size_t encoded = out.len;
  cprof__buf_t gz;
  cprof__buf_init(&gz);
  int rc;
  if (raw) {
    rc = write_file(path, out.data, out.len);
  } else {
    rc = cprof__gzip(out.data, out.len, &gz);
    if (rc == 0)
      rc = write_file(path, gz.data, gz.len);
  }
  if (rc != 0) {
    fprintf(stderr, "gen_profile: %s: %s\n", path, strerror(-rc));
    return 1;
  }
  printf("%s: %llu samples, %u locations, %u functions, stacks %d-%d deep (mean %.1f), "
         "%.1f MB encoded",
         sh->name, (unsigned long long)samples, sh->locations, sh->functions, sh->depth_min,
         deepest, (double)frames / (double)samples, (double)encoded / 1e6);
  if (!raw)
    printf(", %.1f MB gzipped", (double)gz.len / 1e6);
  printf("\n");
  return 0;
}
