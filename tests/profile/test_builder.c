/* The profile builder, from real stacks of this program to bytes: merging,
 * totals, pseudo samples, the debug=1 text, the debug=2 stack format, and
 * the profile.proto output read back by a small decoder written here from
 * profile.proto and the protobuf spec (the shell test decode.sh reads the
 * same output with protoc and go tool pprof).
 *
 *   profile_test_builder                    runs the checks
 *   profile_test_builder --write FILE       writes a gzip profile.proto
 *   profile_test_builder --write-text FILE  writes the same profile as debug=1 text
 * (both options can be given, to write the two forms of one profile).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "core/buf.h"
#include "profile/builder.h"
#include "symbol/symbolize.h"

/* ---- stacks with known functions and lines ----
 *
 * Each function below records one frame of the stack it is part of, in
 * cprof's convention: pcs[0] an exact pc inside the leaf, pcs[1..] return
 * addresses. They are noinline and do something after each call, so no
 * call becomes a tail call, and their bodies differ, so that no
 * identical-code folding merges two of them. */
#define NOINLINE __attribute__((noinline))
#define RA() ((uintptr_t)__builtin_return_address(0))
#define BARRIER() __asm__ volatile("" ::: "memory")

volatile int ptest_sink;
static int line_alpha_call, line_delta_call, line_theta_call, line_eps_call;

NOINLINE uintptr_t ptest_here(void) {
  uintptr_t pc = RA();
  BARRIER();
  return pc;
}

NOINLINE void ptest_leaf_alpha(uintptr_t *pcs) {
  pcs[0] = ptest_here();
  pcs[1] = RA();
  ptest_sink = 1;
}

NOINLINE void ptest_leaf_delta(uintptr_t *pcs) {
  pcs[0] = ptest_here();
  pcs[1] = RA();
  ptest_sink = 2;
}

NOINLINE void ptest_leaf_theta(uintptr_t *pcs) {
  pcs[0] = ptest_here();
  pcs[1] = RA();
  ptest_sink = 3;
}

/* A short name, so that the debug=1 text has columns of different widths
 * to align. */
NOINLINE void ptx(uintptr_t *pcs) {
  pcs[0] = ptest_here();
  ptest_sink = 4;
}

NOINLINE void ptest_mid_beta(uintptr_t *pcs, int which) {
  if (which) {
    ptest_leaf_delta(pcs); line_delta_call = __LINE__;
  } else {
    ptest_leaf_alpha(pcs); line_alpha_call = __LINE__;
  }
  pcs[2] = RA();
  BARRIER();
}

/* Inlined into ptest_outer_zeta: the return address into it symbolizes to
 * two frames, this one first. */
static inline __attribute__((always_inline)) void ptest_inlined_eps(uintptr_t *pcs) {
  ptest_leaf_theta(pcs); line_theta_call = __LINE__;
}

NOINLINE void ptest_outer_zeta(uintptr_t *pcs) {
  ptest_inlined_eps(pcs); line_eps_call = __LINE__;
  pcs[2] = RA();
  BARRIER();
}

NOINLINE void ptest_top_gamma(uintptr_t *pcs, int which) {
  if (which == 2)
    ptest_outer_zeta(pcs);
  else
    ptest_mid_beta(pcs, which);
  pcs[3] = RA();
  BARRIER();
}

#define DEPTH 4
/* A: top -> mid -> alpha; B: top -> mid -> delta; C: top -> zeta (-> eps
 * inlined) -> theta. */
static uintptr_t A[DEPTH], B[DEPTH], C[DEPTH];

NOINLINE static void capture_stacks(void) {
  ptest_top_gamma(A, 0);
  ptest_top_gamma(B, 1);
  ptest_top_gamma(C, 2);
}

/* ---- an independent reader of profile.proto ---- */

#define MAXS 64
typedef struct dvt {
  int64_t type, unit;
} dvt_t;
typedef struct dlabel {
  int64_t key, str, num, num_unit;
} dlabel_t;
typedef struct dsample {
  uint64_t locs[MAXS];
  int nlocs;
  int64_t values[MAXS];
  int nvalues;
  dlabel_t labels[8];
  int nlabels;
} dsample_t;
typedef struct dline {
  uint64_t function;
  int64_t line;
} dline_t;
typedef struct dloc {
  uint64_t id, mapping, address;
  dline_t lines[MAXS];
  int nlines;
} dloc_t;
typedef struct dfunc {
  uint64_t id;
  int64_t name, system_name, file, start_line;
} dfunc_t;
typedef struct dmap {
  uint64_t id, start, limit, offset;
  int64_t file, build_id;
  int has_functions, has_filenames, has_line_numbers, has_inline_frames;
} dmap_t;

#define MAXN 1024
typedef struct dprof {
  dvt_t sample_types[8];
  int nsample_types;
  dsample_t samples[64];
  int nsamples;
  dmap_t mappings[MAXN];
  int nmappings;
  dloc_t locations[256];
  int nlocations;
  dfunc_t functions[256];
  int nfunctions;
  char *strings[MAXN];
  int nstrings;
  int64_t time_nanos, duration_nanos, period, default_sample_type;
  dvt_t period_type;
  int has_default;
  int errors;
} dprof_t;

typedef struct reader {
  const unsigned char *p, *end;
  int *errors;
} reader_t;

static uint64_t rd_varint(reader_t *r) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) {
      (*r->errors)++;
      return 0;
    }
    unsigned char c = *r->p++;
    x |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80))
      return x;
  }
  (*r->errors)++;
  return x;
}

/* Reads one field: its number and wire type, and either its varint value
 * or its length-delimited contents. Returns 0 at the end. */
static int rd_field(reader_t *r, int *field, int *wire, uint64_t *v, reader_t *sub) {
  if (r->p >= r->end)
    return 0;
  uint64_t key = rd_varint(r);
  *field = (int)(key >> 3);
  *wire = (int)(key & 7);
  switch (*wire) {
  case 0:
    *v = rd_varint(r);
    return 1;
  case 2: {
    uint64_t n = rd_varint(r);
    if (n > (uint64_t)(r->end - r->p)) {
      (*r->errors)++;
      return 0;
    }
    sub->p = r->p;
    sub->end = r->p + n;
    sub->errors = r->errors;
    r->p += n;
    return 1;
  }
  default: /* profile.proto uses no fixed-width fields */
    (*r->errors)++;
    return 0;
  }
}

/* A repeated scalar, packed (wire type 2) or not (wire type 0): readers
 * must accept both. */
static void rd_repeated(int wire, uint64_t v, reader_t *sub, uint64_t *out, int *n, int max) {
  if (wire == 0) {
    if (*n < max)
      out[(*n)++] = v;
    return;
  }
  while (sub->p < sub->end) {
    uint64_t x = rd_varint(sub);
    if (*n < max)
      out[(*n)++] = x;
  }
}

static void rd_value_type(reader_t *m, dvt_t *vt) {
  int f, w;
  uint64_t v;
  reader_t s;
  while (rd_field(m, &f, &w, &v, &s)) {
    if (f == 1)
      vt->type = (int64_t)v;
    else if (f == 2)
      vt->unit = (int64_t)v;
  }
}

static void rd_sample(reader_t *m, dsample_t *d) {
  int f, w;
  uint64_t v;
  reader_t s;
  while (rd_field(m, &f, &w, &v, &s)) {
    if (f == 1) {
      rd_repeated(w, v, &s, d->locs, &d->nlocs, MAXS);
    } else if (f == 2) {
      rd_repeated(w, v, &s, (uint64_t *)d->values, &d->nvalues, MAXS);
    } else if (f == 3 && w == 2 && d->nlabels < 8) {
      dlabel_t *l = &d->labels[d->nlabels++];
      int lf, lw;
      uint64_t lv;
      reader_t ls;
      while (rd_field(&s, &lf, &lw, &lv, &ls)) {
        if (lf == 1)
          l->key = (int64_t)lv;
        else if (lf == 2)
          l->str = (int64_t)lv;
        else if (lf == 3)
          l->num = (int64_t)lv;
        else if (lf == 4)
          l->num_unit = (int64_t)lv;
      }
    }
  }
}

static void rd_location(reader_t *m, dloc_t *d) {
  int f, w;
  uint64_t v;
  reader_t s;
  while (rd_field(m, &f, &w, &v, &s)) {
    if (f == 1)
      d->id = v;
    else if (f == 2)
      d->mapping = v;
    else if (f == 3)
      d->address = v;
    else if (f == 4 && w == 2 && d->nlines < MAXS) {
      dline_t *l = &d->lines[d->nlines++];
      int lf, lw;
      uint64_t lv;
      reader_t ls;
      while (rd_field(&s, &lf, &lw, &lv, &ls)) {
        if (lf == 1)
          l->function = lv;
        else if (lf == 2)
          l->line = (int64_t)lv;
      }
    }
  }
}

static void rd_function(reader_t *m, dfunc_t *d) {
  int f, w;
  uint64_t v;
  reader_t s;
  while (rd_field(m, &f, &w, &v, &s)) {
    if (f == 1)
      d->id = v;
    else if (f == 2)
      d->name = (int64_t)v;
    else if (f == 3)
      d->system_name = (int64_t)v;
    else if (f == 4)
      d->file = (int64_t)v;
    else if (f == 5)
      d->start_line = (int64_t)v;
  }
}

static void rd_mapping(reader_t *m, dmap_t *d) {
  int f, w;
  uint64_t v;
  reader_t s;
  while (rd_field(m, &f, &w, &v, &s)) {
    switch (f) {
    case 1: d->id = v; break;
    case 2: d->start = v; break;
    case 3: d->limit = v; break;
    case 4: d->offset = v; break;
    case 5: d->file = (int64_t)v; break;
    case 6: d->build_id = (int64_t)v; break;
    case 7: d->has_functions = v != 0; break;
    case 8: d->has_filenames = v != 0; break;
    case 9: d->has_line_numbers = v != 0; break;
    case 10: d->has_inline_frames = v != 0; break;
    }
  }
}

static void rd_profile(const unsigned char *p, size_t n, dprof_t *d) {
  memset(d, 0, sizeof *d);
  reader_t r = {p, p + n, &d->errors};
  int f, w;
  uint64_t v;
  reader_t s;
  while (rd_field(&r, &f, &w, &v, &s)) {
    switch (f) {
    case 1:
      if (d->nsample_types < 8)
        rd_value_type(&s, &d->sample_types[d->nsample_types++]);
      break;
    case 2:
      if (d->nsamples < 64)
        rd_sample(&s, &d->samples[d->nsamples++]);
      else
        d->errors++;
      break;
    case 3:
      if (d->nmappings < MAXN)
        rd_mapping(&s, &d->mappings[d->nmappings++]);
      break;
    case 4:
      if (d->nlocations < 256)
        rd_location(&s, &d->locations[d->nlocations++]);
      else
        d->errors++;
      break;
    case 5:
      if (d->nfunctions < 256)
        rd_function(&s, &d->functions[d->nfunctions++]);
      else
        d->errors++;
      break;
    case 6:
      if (d->nstrings < MAXN) {
        char *str = malloc((size_t)(s.end - s.p) + 1);
        memcpy(str, s.p, (size_t)(s.end - s.p));
        str[s.end - s.p] = '\0';
        d->strings[d->nstrings++] = str;
      }
      break;
    case 9: d->time_nanos = (int64_t)v; break;
    case 10: d->duration_nanos = (int64_t)v; break;
    case 11: rd_value_type(&s, &d->period_type); break;
    case 12: d->period = (int64_t)v; break;
    case 14:
      d->default_sample_type = (int64_t)v;
      d->has_default = 1;
      break;
    }
  }
}

static void dprof_free(dprof_t *d) {
  for (int i = 0; i < d->nstrings; i++)
    free(d->strings[i]);
}

static const char *dstr(const dprof_t *d, int64_t i) {
  return i >= 0 && i < d->nstrings ? d->strings[i] : "(bad string index)";
}

static const dloc_t *dloc_at(const dprof_t *d, uint64_t address) {
  for (int i = 0; i < d->nlocations; i++)
    if (d->locations[i].address == address)
      return &d->locations[i];
  return NULL;
}

static const dloc_t *dloc_id(const dprof_t *d, uint64_t id) {
  return id >= 1 && id <= (uint64_t)d->nlocations ? &d->locations[id - 1] : NULL;
}

static const char *dfunc_name(const dprof_t *d, uint64_t id) {
  return id >= 1 && id <= (uint64_t)d->nfunctions ? dstr(d, d->functions[id - 1].name) : NULL;
}

/* The function name of a location's outermost line, or NULL. */
static const char *dloc_func(const dprof_t *d, const dloc_t *l) {
  return l && l->nlines > 0 ? dfunc_name(d, l->lines[l->nlines - 1].function) : NULL;
}

/* The structural rules strict readers (Parca) apply. */
static void check_wellformed(const dprof_t *d) {
  CHECK_EQ_INT(d->errors, 0);
  CHECK(d->nstrings > 0);
  if (d->nstrings > 0)
    CHECK_EQ_STR(d->strings[0], "");
  for (int i = 0; i < d->nmappings; i++)
    CHECK_EQ_INT(d->mappings[i].id, i + 1);
  for (int i = 0; i < d->nlocations; i++) {
    const dloc_t *l = &d->locations[i];
    CHECK_EQ_INT(l->id, i + 1);
    CHECK(l->mapping <= (uint64_t)d->nmappings);
    for (int j = 0; j < l->nlines; j++)
      CHECK(l->lines[j].function >= 1 && l->lines[j].function <= (uint64_t)d->nfunctions);
  }
  for (int i = 0; i < d->nfunctions; i++) {
    CHECK_EQ_INT(d->functions[i].id, i + 1);
    CHECK(d->functions[i].name > 0 && d->functions[i].name < d->nstrings);
  }
  for (int i = 0; i < d->nsamples; i++) {
    CHECK_EQ_INT(d->samples[i].nvalues, d->nsample_types);
    for (int j = 0; j < d->samples[i].nlocs; j++)
      CHECK(d->samples[i].locs[j] >= 1 && d->samples[i].locs[j] <= (uint64_t)d->nlocations);
  }
}

/* Gunzips a whole buffer; NULL on any error. */
static unsigned char *gunzip(const char *in, size_t n, size_t *outlen) {
  if (n < 2 || (unsigned char)in[0] != 0x1f || (unsigned char)in[1] != 0x8b)
    return NULL;
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 15 + 16) != Z_OK)
    return NULL;
  size_t cap = 1 << 16, len = 0;
  unsigned char *out = malloc(cap);
  zs.next_in = (Bytef *)(uintptr_t)in;
  zs.avail_in = (uInt)n;
  int rc;
  do {
    if (len == cap) {
      cap *= 2;
      out = realloc(out, cap);
    }
    zs.next_out = out + len;
    zs.avail_out = (uInt)(cap - len);
    rc = inflate(&zs, Z_NO_FLUSH);
    len = cap - zs.avail_out;
  } while (rc == Z_OK);
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || zs.avail_in != 0) {
    free(out);
    return NULL;
  }
  *outlen = len;
  return out;
}

/* Writes b's profile.proto and decodes it into d. 0 on success. */
static int write_and_decode(cprof__builder_t *b, dprof_t *d, unsigned char **raw, size_t *rawlen) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  int rc = cprof__builder_write_proto(b, &out);
  CHECK_EQ_INT(rc, 0);
  size_t n = 0;
  unsigned char *pb = rc == 0 ? gunzip(out.data, out.len, &n) : NULL;
  CHECK(pb != NULL);
  cprof__buf_free(&out);
  if (!pb)
    return -1;
  rd_profile(pb, n, d);
  check_wellformed(d);
  if (raw) {
    *raw = pb;
    *rawlen = n;
  } else {
    free(pb);
  }
  return 0;
}

/* ---- the tests ---- */

static const cprof__profile_desc_t count_desc = {
    .sample_types = {{"goroutine", "count"}},
    .n_sample_types = 1,
    .period_type = {"goroutine", "count"},
    .period = 1,
};

static const int64_t one[] = {1};

static void add_n(cprof__builder_t *b, const uintptr_t *pcs, int n, const cprof__label_t *l,
                  int nl) {
  for (int i = 0; i < n; i++)
    CHECK_EQ_INT(cprof__builder_add(b, pcs, DEPTH, one, l, nl), 0);
}

static const cprof__label_t label_k[] = {{.key = "k", .str = "v"}};
static const cprof__label_t label_ak[] = {{.key = "a", .str = "1"}, {.key = "k", .str = "v"}};
static const cprof__label_t label_ka[] = {{.key = "k", .str = "v"}, {.key = "a", .str = "1"}};
static const cprof__label_t label_n[] = {{.key = "n", .num = 4096, .num_unit = "bytes"}};
static const uintptr_t bogus[] = {0x10};

/* The count profile most tests use: 8 distinct samples, 13 in all. */
static cprof__builder_t *count_profile(void) {
  cprof__builder_t *b = cprof__builder_new(&count_desc);
  CHECK(b != NULL);
  if (!b)
    return NULL;
  add_n(b, A, 3, NULL, 0);
  add_n(b, B, 1, NULL, 0);
  add_n(b, C, 2, NULL, 0);
  add_n(b, A, 1, label_k, 1);
  add_n(b, A, 1, label_ak, 2);
  add_n(b, A, 1, label_ka, 2); /* the same labels in another order: merged */
  add_n(b, B, 1, label_n, 1);
  CHECK_EQ_INT(cprof__builder_add_pseudo(b, "[lost]", one, NULL, 0), 0);
  CHECK_EQ_INT(cprof__builder_add_pseudo(b, "[lost]", one, NULL, 0), 0);
  CHECK_EQ_INT(cprof__builder_add(b, bogus, 1, one, NULL, 0), 0);
  return b;
}

static void test_totals(void) {
  cprof__builder_t *b = count_profile();
  if (!b)
    return;
  CHECK_EQ_INT(cprof__builder_count(b), 13);
  CHECK_EQ_INT(cprof__builder_total(b, 0), 13);
  CHECK_EQ_INT(cprof__builder_total(b, 1), 0); /* out of range */
  CHECK_EQ_INT(cprof__builder_total(b, -1), 0);
  cprof__builder_free(b);

  static const cprof__profile_desc_t bad0 = {.n_sample_types = 0};
  static const cprof__profile_desc_t bad5 = {.n_sample_types = CPROF_MAX_SAMPLE_TYPES + 1};
  CHECK(cprof__builder_new(NULL) == NULL);
  CHECK(cprof__builder_new(&bad0) == NULL);
  CHECK(cprof__builder_new(&bad5) == NULL);
  b = cprof__builder_new(&count_desc);
  CHECK_EQ_INT(cprof__builder_add(b, A, -1, one, NULL, 0), -EINVAL);
  CHECK_EQ_INT(cprof__builder_add(b, NULL, 2, one, NULL, 0), -EINVAL);
  CHECK_EQ_INT(cprof__builder_add(b, A, 2, NULL, NULL, 0), -EINVAL);
  CHECK_EQ_INT(cprof__builder_count(b), 0);
  cprof__builder_free(b);
}

static char *self_path(void) {
  static char path[PATH_MAX];
  return realpath("/proc/self/exe", path);
}

static void test_proto(void) {
  cprof__builder_t *b = count_profile();
  if (!b)
    return;
  dprof_t *d = calloc(1, sizeof *d);
  unsigned char *raw1 = NULL;
  size_t raw1len = 0;
  if (write_and_decode(b, d, &raw1, &raw1len) != 0)
    goto out;

  CHECK_EQ_INT(d->nsample_types, 1);
  CHECK_EQ_STR(dstr(d, d->sample_types[0].type), "goroutine");
  CHECK_EQ_STR(dstr(d, d->sample_types[0].unit), "count");
  CHECK_EQ_STR(dstr(d, d->period_type.type), "goroutine");
  CHECK_EQ_INT(d->period, 1);
  CHECK_EQ_INT(d->has_default, 0);

  /* Merging: 8 distinct (stack, labels), their values summing to 13. */
  CHECK_EQ_INT(d->nsamples, 8);
  int64_t sum = 0;
  for (int i = 0; i < d->nsamples; i++)
    sum += d->samples[i].values[0];
  CHECK_EQ_INT(sum, 13);

  /* Mapping 1 is this program, as `go tool pprof` shows in "File:". */
  CHECK(d->nmappings >= 1);
  const char *self = self_path();
  if (d->nmappings >= 1 && self)
    CHECK_EQ_STR(dstr(d, d->mappings[0].file), self);
  const dmap_t *m1 = d->nmappings >= 1 ? &d->mappings[0] : NULL;

  /* One location per address: the leaf's exact pc as is, return addresses
   * minus one; the function names of this file. */
  const dloc_t *la0 = dloc_at(d, A[0]), *la1 = dloc_at(d, A[1] - 1), *la2 = dloc_at(d, A[2] - 1),
               *lb0 = dloc_at(d, B[0]), *lb1 = dloc_at(d, B[1] - 1);
  CHECK(la0 && la1 && la2 && lb0 && lb1);
  CHECK(dloc_at(d, A[1]) == NULL);
  CHECK_EQ_STR(dloc_func(d, la0), "ptest_leaf_alpha");
  CHECK_EQ_STR(dloc_func(d, la1), "ptest_mid_beta");
  CHECK_EQ_STR(dloc_func(d, la2), "ptest_top_gamma");
  CHECK_EQ_STR(dloc_func(d, dloc_at(d, A[3] - 1)), "capture_stacks");
  CHECK_EQ_STR(dloc_func(d, lb0), "ptest_leaf_delta");
  CHECK_EQ_STR(dloc_func(d, lb1), "ptest_mid_beta");
  CHECK_EQ_STR(dloc_func(d, dloc_at(d, C[0])), "ptest_leaf_theta");
  CHECK_EQ_STR(dloc_func(d, dloc_at(d, C[1] - 1)), "ptest_outer_zeta");
  if (la1)
    CHECK_EQ_INT(la1->mapping, 1);

  /* A's stack and B's share the return address into top_gamma: 4 + 3 + 4
   * locations, the pseudo frame and the bogus pc: distinct addresses only. */
  CHECK_EQ_INT(d->nlocations, 4 + 3 + 4 + 1 + 1);

  /* Sample location IDs are leaf first. */
  for (int i = 0; i < d->nsamples; i++) {
    const dsample_t *s = &d->samples[i];
    if (s->nlocs == DEPTH && dloc_id(d, s->locs[0]) == la0) {
      CHECK(dloc_id(d, s->locs[1]) == la1);
      CHECK(dloc_id(d, s->locs[2]) == la2);
    }
  }

  /* Line numbers and inlining: this program is built with -g, so the
   * symbolizer reads its DWARF, and the mapping must say so. */
  CHECK(m1 && m1->has_filenames && m1->has_line_numbers && m1->has_inline_frames);
  if (m1 && m1->has_line_numbers && la1 && lb1) {
    CHECK(la1->nlines == 1 && la1->lines[0].line == line_alpha_call);
    CHECK(lb1->nlines == 1 && lb1->lines[0].line == line_delta_call);
    uint64_t fid = la1->nlines ? la1->lines[0].function : 0;
    const char *file = fid >= 1 && fid <= (uint64_t)d->nfunctions ? dstr(d, d->functions[fid - 1].file) : "";
    CHECK(strstr(file, "test_builder.c") != NULL);
  }
  if (m1 && m1->has_inline_frames) {
    const dloc_t *lc2 = dloc_at(d, C[1] - 1);
    CHECK(lc2 && lc2->nlines == 2);
    if (lc2 && lc2->nlines == 2) {
      CHECK_EQ_STR(dfunc_name(d, lc2->lines[0].function), "ptest_inlined_eps");
      CHECK_EQ_STR(dfunc_name(d, lc2->lines[1].function), "ptest_outer_zeta");
      CHECK_EQ_INT(lc2->lines[0].line, line_theta_call);
      CHECK_EQ_INT(lc2->lines[1].line, line_eps_call);
    }
  }
  /* Every location of ours in this program got a name, and the program
   * has a symbol table: has_functions must be set, or pprof would ask the
   * server to symbolize again. */
  if (m1)
    CHECK_EQ_INT(m1->has_functions, 1);

  /* The pseudo frame: no mapping, address 0, one Line naming it. The bogus
   * pc: no mapping, no lines. */
  const dloc_t *lp = dloc_at(d, 0), *lz = dloc_at(d, 0x10);
  CHECK(lp && lp->mapping == 0 && lp->nlines == 1);
  CHECK_EQ_STR(dloc_func(d, lp), "[lost]");
  CHECK(lz && lz->mapping == 0 && lz->nlines == 0);

  /* Labels: merged regardless of order, string and numeric. */
  int seen_k = 0, seen_ak = 0, seen_n = 0;
  for (int i = 0; i < d->nsamples; i++) {
    const dsample_t *s = &d->samples[i];
    if (s->nlabels == 1 && !strcmp(dstr(d, s->labels[0].key), "k")) {
      seen_k++;
      CHECK_EQ_STR(dstr(d, s->labels[0].str), "v");
      CHECK_EQ_INT(s->values[0], 1);
    } else if (s->nlabels == 2) {
      seen_ak++;
      CHECK_EQ_INT(s->values[0], 2);
    } else if (s->nlabels == 1 && !strcmp(dstr(d, s->labels[0].key), "n")) {
      seen_n++;
      CHECK_EQ_INT(s->labels[0].num, 4096);
      CHECK_EQ_INT(s->labels[0].str, 0);
      CHECK_EQ_STR(dstr(d, s->labels[0].num_unit), "bytes");
    }
  }
  CHECK(seen_k == 1 && seen_ak == 1 && seen_n == 1);

  /* Writing again gives the same profile. */
  dprof_t *d2 = calloc(1, sizeof *d2);
  unsigned char *raw2 = NULL;
  size_t raw2len = 0;
  if (write_and_decode(b, d2, &raw2, &raw2len) == 0)
    CHECK(raw1len == raw2len && memcmp(raw1, raw2, raw1len) == 0);
  free(raw2);
  dprof_free(d2);
  free(d2);
out:
  free(raw1);
  dprof_free(d);
  free(d);
  cprof__builder_free(b);
}

static void test_heap_like(void) {
  static const cprof__profile_desc_t desc = {
      .sample_types = {{"alloc_objects", "count"},
                       {"alloc_space", "bytes"},
                       {"inuse_objects", "count"},
                       {"inuse_space", "bytes"}},
      .n_sample_types = 4,
      .period_type = {"space", "bytes"},
      .period = 524288,
      .time_nanos = 1700000000123456789,
      .duration_nanos = 5000000000,
      .default_sample_type = "alloc_space",
  };
  cprof__builder_t *b = cprof__builder_new(&desc);
  CHECK(b != NULL);
  if (!b)
    return;
  static const int64_t v1[] = {1, 100, 1, 100}, v2[] = {2, 50, 0, 0}, v3[] = {1, 10, 1, 10};
  CHECK_EQ_INT(cprof__builder_add(b, A, DEPTH, v1, NULL, 0), 0);
  CHECK_EQ_INT(cprof__builder_add(b, A, DEPTH, v2, NULL, 0), 0);
  CHECK_EQ_INT(cprof__builder_add(b, B, DEPTH, v3, NULL, 0), 0);
  CHECK_EQ_INT(cprof__builder_count(b), 3);
  CHECK_EQ_INT(cprof__builder_total(b, 0), 4);
  CHECK_EQ_INT(cprof__builder_total(b, 1), 160);
  CHECK_EQ_INT(cprof__builder_total(b, 2), 2);
  CHECK_EQ_INT(cprof__builder_total(b, 3), 110);

  dprof_t *d = calloc(1, sizeof *d);
  if (write_and_decode(b, d, NULL, NULL) == 0) {
    CHECK_EQ_INT(d->nsample_types, 4);
    CHECK_EQ_STR(dstr(d, d->sample_types[1].type), "alloc_space");
    CHECK_EQ_STR(dstr(d, d->sample_types[3].unit), "bytes");
    CHECK_EQ_INT(d->has_default, 1);
    CHECK_EQ_STR(dstr(d, d->default_sample_type), "alloc_space");
    CHECK_EQ_STR(dstr(d, d->period_type.type), "space");
    CHECK_EQ_INT(d->period, 524288);
    CHECK_EQ_INT(d->time_nanos, 1700000000123456789);
    CHECK_EQ_INT(d->duration_nanos, 5000000000);
    CHECK_EQ_INT(d->nsamples, 2);
    for (int i = 0; i < d->nsamples; i++) {
      const dsample_t *s = &d->samples[i];
      if (dloc_id(d, s->locs[0]) == dloc_at(d, A[0])) {
        CHECK(s->values[0] == 3 && s->values[1] == 150 && s->values[2] == 1 && s->values[3] == 100);
      } else {
        CHECK(s->values[0] == 1 && s->values[1] == 10 && s->values[2] == 1 && s->values[3] == 10);
      }
    }
  }
  dprof_free(d);
  free(d);
  cprof__builder_free(b);
}

/* The line of `text` that contains `needle`, copied into line (or ""). */
static const char *line_with(const char *text, const char *needle, char *line, size_t max) {
  const char *p = strstr(text, needle);
  line[0] = '\0';
  if (!p)
    return line;
  const char *s = p;
  while (s > text && s[-1] != '\n')
    s--;
  const char *e = strchr(p, '\n');
  size_t n = e ? (size_t)(e - s) : strlen(s);
  if (n >= max)
    n = max - 1;
  memcpy(line, s, n);
  line[n] = '\0';
  return line;
}

static void test_count_text(void) {
  cprof__builder_t *b = count_profile();
  if (!b)
    return;
  cprof__buf_t out;
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__builder_write_count_text(b, "goroutine", &out), 0);
  const char *t = out.data ? out.data : "";

  CHECK(strncmp(t, "goroutine profile: total 13\n", 28) == 0);

  /* Stacks sorted by count, highest first, ties by their "@" line; their
   * counts add up to the total. */
  int64_t prev = INT64_MAX, sum = 0;
  int nstacks = 0;
  const char *prev_key = NULL;
  for (const char *p = t; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
    long long c;
    int at;
    if (*p >= '0' && *p <= '9' && sscanf(p, "%lld @%n", &c, &at) == 1 && at > 0) {
      const char *key = strchr(p, '@');
      CHECK(c <= prev);
      if (c == prev && prev_key) {
        size_t n1 = strcspn(prev_key, "\n"), n2 = strcspn(key, "\n");
        CHECK(strncmp(prev_key, key, n1 < n2 ? n1 : n2) <= 0);
      }
      prev = c;
      prev_key = key;
      sum += c;
      nstacks++;
    }
  }
  CHECK_EQ_INT(nstacks, 8);
  CHECK_EQ_INT(sum, 13);

  /* The "@" line lists the pcs, the leaf's plus one: pprof subtracts one
   * from each to land inside the call instruction. */
  char want[256], line[512];
  snprintf(want, sizeof want, "3 @ 0x%lx 0x%lx 0x%lx 0x%lx\n", (unsigned long)A[0] + 1,
           (unsigned long)A[1], (unsigned long)A[2], (unsigned long)A[3]);
  CHECK(strstr(t, want) != NULL);
  snprintf(want, sizeof want, "@ 0x%lx 0x%lx 0x%lx 0x%lx\n# labels: {\"a\":\"1\", \"k\":\"v\"}\n",
           (unsigned long)A[0] + 1, (unsigned long)A[1], (unsigned long)A[2], (unsigned long)A[3]);
  CHECK(strstr(t, want) != NULL);
  CHECK(strstr(t, "\n# labels: {\"n\":4096}\n") != NULL);
  CHECK(strstr(t, "\n2 @ 0x1\n#\t0x0\t[lost]\n\n") != NULL);
  CHECK(strstr(t, "\n1 @ 0x11\n#\t0x10\n\n") != NULL);

  /* One "#" line per frame: address, function+offset, file:line. */
  snprintf(want, sizeof want, "#\t0x%lx\tptest_leaf_alpha+0x", (unsigned long)A[0]);
  CHECK(strstr(t, want) != NULL);
  snprintf(want, sizeof want, "#\t0x%lx\tptest_mid_beta+0x", (unsigned long)A[1] - 1);
  line_with(t, want, line, sizeof line);
  CHECK(line[0] != '\0');
  snprintf(want, sizeof want, "test_builder.c:%d", line_alpha_call);
  CHECK(strstr(line, want) != NULL);
  CHECK(strstr(t, "ptest_top_gamma+0x") != NULL);
  CHECK(strstr(t, "ptest_leaf_delta+0x") != NULL);

  /* An inlined call: two lines with the same address, inner first. */
  snprintf(want, sizeof want, "#\t0x%lx\tptest_inlined_eps+0x", (unsigned long)C[1] - 1);
  const char *inner = strstr(t, want);
  snprintf(want, sizeof want, "#\t0x%lx\tptest_outer_zeta+0x", (unsigned long)C[1] - 1);
  const char *outer = strstr(t, want);
  CHECK(inner != NULL && outer != NULL);
  if (inner && outer)
    CHECK(outer > inner && memchr(inner, '\n', (size_t)(outer - inner)) == outer - 1);

  if (check_failures)
    fprintf(stderr, "the text was:\n%s", t);
  cprof__buf_free(&out);
  cprof__builder_free(b);

  /* An empty profile is just its header. */
  b = cprof__builder_new(&count_desc);
  CHECK_EQ_INT(cprof__builder_write_count_text(b, "threadcreate", &out), 0);
  CHECK_EQ_STR(out.data, "threadcreate profile: total 0\n");
  cprof__buf_free(&out);
  dprof_t *d = calloc(1, sizeof *d);
  if (write_and_decode(b, d, NULL, NULL) == 0)
    CHECK_EQ_INT(d->nsamples, 0);
  dprof_free(d);
  free(d);
  cprof__builder_free(b);
}

static void test_format_stack(void) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  cprof__format_stack(&out, A, DEPTH);
  const char *t = out.data ? out.data : "";
  CHECK(strstr(t, "ptest_leaf_alpha()\n\t") == t);
  CHECK(strstr(t, "\nptest_mid_beta()\n\t") != NULL);
  CHECK(strstr(t, "\nptest_top_gamma()\n\t") != NULL);
  char want[64];
  snprintf(want, sizeof want, "test_builder.c:%d +0x", line_alpha_call);
  CHECK(strstr(t, want) != NULL);
  cprof__buf_free(&out);

  cprof__format_stack(&out, C, DEPTH);
  t = out.data ? out.data : "";
  /* Go prints an inlined call as "name(...)", its line with no offset. */
  const char *eps = strstr(t, "ptest_inlined_eps(...)\n\t");
  CHECK(eps != NULL);
  snprintf(want, sizeof want, "test_builder.c:%d\n", line_theta_call);
  const char *eps_line = eps ? strstr(eps, want) : NULL;
  CHECK(eps_line && memchr(eps, '\n', (size_t)(eps_line - eps)) == strchr(eps, '\n'));
  CHECK(strstr(t, "ptest_outer_zeta()\n\t") != NULL);
  cprof__buf_free(&out);

  cprof__format_stack(&out, bogus, 1);
  CHECK_EQ_STR(out.data, "0x10 ?\n");
  cprof__buf_free(&out);
}

/* ---- files for the shell test ---- */

static int write_file(cprof__builder_t *b, const char *path, int text) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  int rc = text ? cprof__builder_write_count_text(b, "goroutine", &out)
                : cprof__builder_write_proto(b, &out);
  FILE *f = rc == 0 ? fopen(path, "wb") : NULL;
  if (f) {
    if (fwrite(out.data, 1, out.len, f) != out.len)
      rc = -EIO;
    if (fclose(f) != 0)
      rc = -EIO;
  } else if (rc == 0) {
    rc = -errno;
  }
  cprof__buf_free(&out);
  if (rc != 0)
    fprintf(stderr, "profile_test_builder: writing %s: %s\n", path, strerror(-rc));
  return rc;
}

/* Writes the files named by --write and --write-text, from one profile, so
 * that both hold the same addresses. */
static int write_files(int argc, char **argv) {
  cprof__builder_t *b = cprof__builder_new(&count_desc);
  if (!b)
    return 1;
  add_n(b, A, 3, NULL, 0);
  add_n(b, B, 1, NULL, 0);
  add_n(b, C, 2, NULL, 0);
  add_n(b, A, 4, label_k, 1);
  /* ptx's pc on top of A's callers: not a real stack, but real addresses. */
  uintptr_t X[DEPTH];
  memcpy(X, A, sizeof X);
  ptx(X);
  add_n(b, X, 1, NULL, 0);
  int rc = 0;
  for (int i = 1; i + 1 < argc && rc == 0; i += 2) {
    if (strcmp(argv[i], "--write") == 0) {
      rc = write_file(b, argv[i + 1], 0);
    } else if (strcmp(argv[i], "--write-text") == 0) {
      rc = write_file(b, argv[i + 1], 1);
    } else {
      fprintf(stderr, "usage: %s [--write FILE] [--write-text FILE]\n", argv[0]);
      rc = -EINVAL;
    }
  }
  cprof__builder_free(b);
  return rc == 0 ? 0 : 1;
}

/* Written in the symbolizer's quick mode, as the profiles at exit are: our
 * mapping keeps names, files, lines and its four flags; a mapping whose
 * DWARF quick mode left out (libc's, where its debug file is compressed, as
 * Debian's libc6-dbg is) has names and claims none of the flags, so that
 * pprof symbolizes it again from the file when it can. */
static void test_quick_flags(void) {
  uintptr_t libc_pc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
  CHECK(libc_pc != 0);
  cprof__symbolizer_t *sym = cprof__symbolizer_acquire();
  const cprof__mapping_t *maps;
  cprof__symbolizer_mappings(sym, &maps);
  int k = cprof__symbolizer_mapping_of(sym, libc_pc);
  int heavy = k >= 0 && maps[k].heavy_dwarf, has_dwarf = k >= 0 && maps[k].has_dwarf;
  cprof__symbolizer_release(sym);
  CHECK(k >= 0);

  cprof__profile_desc_t desc = {.sample_types = {{"samples", "count"}},
                                .n_sample_types = 1,
                                .period_type = {"cpu", "nanoseconds"},
                                .period = 1};
  cprof__builder_t *b = cprof__builder_new(&desc);
  dprof_t *d = calloc(1, sizeof *d);
  CHECK(b && d);
  if (!b || !d)
    goto out;
  uintptr_t pcs[3] = {libc_pc, A[1], A[2]};
  int64_t one = 1;
  CHECK_EQ_INT(cprof__builder_add(b, pcs, 3, &one, NULL, 0), 0);
  cprof__symbolizer_quick(1);
  int rc = write_and_decode(b, d, NULL, NULL);
  cprof__symbolizer_quick(0);
  if (rc != 0)
    goto out;

  const dmap_t *m1 = d->nmappings >= 1 ? &d->mappings[0] : NULL;
  CHECK(m1 && m1->has_functions && m1->has_filenames && m1->has_line_numbers &&
        m1->has_inline_frames);
  const dloc_t *la1 = dloc_at(d, A[1] - 1), *lc = dloc_at(d, libc_pc);
  CHECK(la1 && la1->nlines == 1 && la1->lines[0].line == line_alpha_call);
  CHECK(lc && lc->nlines >= 1 && strstr(dloc_func(d, lc), "getpid"));
  const dmap_t *ml = lc && lc->mapping >= 1 && lc->mapping <= (uint64_t)d->nmappings
                         ? &d->mappings[lc->mapping - 1]
                         : NULL;
  CHECK(ml && strstr(dstr(d, ml->file), "libc.so"));
  fprintf(stderr, "libc in quick mode: %s\n", heavy ? "names only" : "as always");
  if (ml && heavy) {
    CHECK(!ml->has_functions && !ml->has_filenames && !ml->has_line_numbers &&
          !ml->has_inline_frames);
    CHECK(lc && lc->nlines == 1 && dstr(d, d->functions[lc->lines[0].function - 1].file)[0] == 0);
  } else if (ml) {
    CHECK_EQ_INT(ml->has_filenames, has_dwarf);
  }
out:
  if (d)
    dprof_free(d);
  free(d);
  cprof__builder_free(b);
}

int main(int argc, char **argv) {
  capture_stacks();
  if (argc > 1)
    return write_files(argc, argv);
  test_totals();
  test_proto();
  test_heap_like();
  test_quick_flags();
  test_count_text();
  test_format_stack();
  return check_result("profile/test_builder");
}
