/* The model's encoder (src/model/encode.c): a profile decoded, encoded and
 * decoded again is the profile it was, every field of it, for pprof's own
 * test profiles, for profiles the builder writes and for one built by hand
 * with every field the model has set; the string table holds each string
 * once, "" first; and cprof__pf_set_label replaces a key's labels and adds
 * one where there was none, keeping the rest.
 *
 *   profile_test_encode                   the checks
 *   profile_test_encode --reencode IN OUT IN decoded and encoded (gzip) to
 *                                         OUT, for tests/profile/encode.sh
 *   profile_test_encode --round-trip MIN DIR...
 *                                         every file in DIR that decodes
 *                                         round-tripped, at least MIN of them
 *                                         (encode.sh: pprof's test data that
 *                                         go tool pprof -proto converted) */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "core/buf.h"
#include "model/model.h"
#include "pf_fixture.h"
#include "profile/builder.h"

/* pprof's test profiles, in a Debian golang-github-google-pprof-dev tree. */
static const char *testdata_dirs[] = {
    "/usr/share/gocode/src/github.com/google/pprof/profile/testdata",
    "/usr/share/gocode/src/github.com/google/pprof/internal/driver/testdata",
};

/* ---- comparing two models ---------------------------------------------- */

static const char *what_; /* the profile being compared, for the messages */
static int differences;

static void differ(const char *field, size_t i, const char *a, const char *b) {
  differences++;
  if (differences <= 10)
    fprintf(stderr, "%s: %s [%zu]: \"%s\" != \"%s\"\n", what_, field, i, a, b);
}

static void eq_str(const char *field, size_t i, const char *a, const char *b) {
  /* NULL and "" are one for the strings the model allows either. */
  if (strcmp(a ? a : "", b ? b : "") != 0)
    differ(field, i, a ? a : "(null)", b ? b : "(null)");
}

static void eq_int(const char *field, size_t i, int64_t a, int64_t b) {
  if (a != b) {
    char sa[32], sb[32];
    snprintf(sa, sizeof sa, "%" PRId64, a);
    snprintf(sb, sizeof sb, "%" PRId64, b);
    differ(field, i, sa, sb);
  }
}

static uint64_t mapping_id(const cprof__pf_mapping_t *m) { return m ? m->id : 0; }
static uint64_t function_id(const cprof__pf_function_t *f) { return f ? f->id : 0; }

/* Whether a and b hold the same profile, field by field, references
 * compared by ID. One CHECK, with the first differences printed. */
static void check_equal(const char *what, const cprof__pf_t *a, const cprof__pf_t *b,
                        int with_ids_sequential) {
  what_ = what;
  differences = 0;
  eq_int("n_sample_types", 0, (int64_t)a->n_sample_types, (int64_t)b->n_sample_types);
  for (size_t i = 0; i < a->n_sample_types && i < b->n_sample_types; i++) {
    eq_str("sample_type.type", i, a->sample_types[i].type, b->sample_types[i].type);
    eq_str("sample_type.unit", i, a->sample_types[i].unit, b->sample_types[i].unit);
  }
  eq_int("n_samples", 0, (int64_t)a->n_samples, (int64_t)b->n_samples);
  for (size_t i = 0; i < a->n_samples && i < b->n_samples; i++) {
    const cprof__pf_sample_t *x = &a->samples[i], *y = &b->samples[i];
    eq_int("sample.n_locations", i, (int64_t)x->n_locations, (int64_t)y->n_locations);
    for (size_t k = 0; k < x->n_locations && k < y->n_locations; k++)
      eq_int("sample.location_id", i, (int64_t)x->locations[k]->id, (int64_t)y->locations[k]->id);
    for (size_t k = 0; k < a->n_sample_types; k++)
      eq_int("sample.value", i, x->values[k], y->values[k]);
    eq_int("sample.n_labels", i, (int64_t)x->n_labels, (int64_t)y->n_labels);
    for (size_t k = 0; k < x->n_labels && k < y->n_labels; k++) {
      const cprof__label_t *l = &x->labels[k], *m = &y->labels[k];
      eq_str("label.key", i, l->key, m->key);
      eq_int("label is a string", i, l->str != NULL, m->str != NULL);
      eq_str("label.str", i, l->str, m->str);
      eq_int("label.num", i, l->num, m->num);
      eq_int("label has num_unit", i, l->num_unit != NULL, m->num_unit != NULL);
      eq_str("label.num_unit", i, l->num_unit, m->num_unit);
    }
  }
  eq_int("n_mappings", 0, (int64_t)a->n_mappings, (int64_t)b->n_mappings);
  for (size_t i = 0; i < a->n_mappings && i < b->n_mappings; i++) {
    const cprof__pf_mapping_t *x = &a->mappings[i], *y = &b->mappings[i];
    eq_int("mapping.id", i, (int64_t)x->id, (int64_t)y->id);
    eq_int("mapping.start", i, (int64_t)x->start, (int64_t)y->start);
    eq_int("mapping.limit", i, (int64_t)x->limit, (int64_t)y->limit);
    eq_int("mapping.offset", i, (int64_t)x->offset, (int64_t)y->offset);
    eq_str("mapping.file", i, x->file, y->file);
    eq_str("mapping.build_id", i, x->build_id, y->build_id);
    eq_int("mapping.has_functions", i, x->has_functions, y->has_functions);
    eq_int("mapping.has_filenames", i, x->has_filenames, y->has_filenames);
    eq_int("mapping.has_line_numbers", i, x->has_line_numbers, y->has_line_numbers);
    eq_int("mapping.has_inline_frames", i, x->has_inline_frames, y->has_inline_frames);
  }
  eq_int("n_locations", 0, (int64_t)a->n_locations, (int64_t)b->n_locations);
  for (size_t i = 0; i < a->n_locations && i < b->n_locations; i++) {
    const cprof__pf_location_t *x = &a->locations[i], *y = &b->locations[i];
    eq_int("location.id", i, (int64_t)x->id, (int64_t)y->id);
    eq_int("location.mapping_id", i, (int64_t)mapping_id(x->mapping),
           (int64_t)mapping_id(y->mapping));
    eq_int("location.address", i, (int64_t)x->address, (int64_t)y->address);
    eq_int("location.is_folded", i, x->is_folded, y->is_folded);
    eq_int("location.n_lines", i, (int64_t)x->n_lines, (int64_t)y->n_lines);
    for (size_t k = 0; k < x->n_lines && k < y->n_lines; k++) {
      eq_int("line.function_id", i, (int64_t)function_id(x->lines[k].function),
             (int64_t)function_id(y->lines[k].function));
      eq_int("line.line", i, x->lines[k].line, y->lines[k].line);
      eq_int("line.column", i, x->lines[k].column, y->lines[k].column);
    }
  }
  eq_int("n_functions", 0, (int64_t)a->n_functions, (int64_t)b->n_functions);
  for (size_t i = 0; i < a->n_functions && i < b->n_functions; i++) {
    const cprof__pf_function_t *x = &a->functions[i], *y = &b->functions[i];
    eq_int("function.id", i, (int64_t)x->id, (int64_t)y->id);
    eq_str("function.name", i, x->name, y->name);
    eq_str("function.system_name", i, x->system_name, y->system_name);
    eq_str("function.filename", i, x->filename, y->filename);
    eq_int("function.start_line", i, x->start_line, y->start_line);
  }
  eq_str("drop_frames", 0, a->drop_frames, b->drop_frames);
  eq_str("keep_frames", 0, a->keep_frames, b->keep_frames);
  eq_int("time_nanos", 0, a->time_nanos, b->time_nanos);
  eq_int("duration_nanos", 0, a->duration_nanos, b->duration_nanos);
  eq_str("period_type.type", 0, a->period_type.type, b->period_type.type);
  eq_str("period_type.unit", 0, a->period_type.unit, b->period_type.unit);
  eq_int("period", 0, a->period, b->period);
  eq_int("n_comments", 0, (int64_t)a->n_comments, (int64_t)b->n_comments);
  for (size_t i = 0; i < a->n_comments && i < b->n_comments; i++)
    eq_str("comment", i, a->comments[i], b->comments[i]);
  eq_str("default_sample_type", 0, a->default_sample_type, b->default_sample_type);
  if (with_ids_sequential)
    eq_int("ids_sequential", 0, a->ids_sequential, b->ids_sequential);
  if (differences > 10)
    fprintf(stderr, "%s: %d differences in all\n", what, differences);
  CHECK(differences == 0);
}

/* ---- reading the encoding back raw ------------------------------------- */

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      return 0;
  }
  return -1;
}

/* The string table of an uncompressed encoding must start with "" and
 * hold no string twice: walks the top-level fields (only wire types 0 and
 * 2 appear). */
static void check_string_table(const char *what, const cprof__buf_t *b) {
  const uint8_t *p = (const uint8_t *)b->data, *end = p + b->len;
  char **seen = NULL;
  size_t n = 0, dups = 0;
  int bad = 0;
  while (p < end && !bad) {
    uint64_t key, v;
    if (read_varint(&p, end, &key) != 0) {
      bad = 1;
    } else if ((key & 7) == 0) {
      bad = read_varint(&p, end, &v) != 0;
    } else if ((key & 7) == 2) {
      if (read_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p)) {
        bad = 1;
      } else {
        if (key >> 3 == 6) {
          char *s = strndup((const char *)p, (size_t)v);
          for (size_t i = 0; i < n; i++)
            dups += strcmp(seen[i], s) == 0;
          seen = realloc(seen, (n + 1) * sizeof *seen);
          seen[n++] = s;
        }
        p += v;
      }
    } else {
      bad = 1;
    }
  }
  if (bad || dups || n == 0 || seen[0][0] != 0)
    fprintf(stderr, "%s: string table: bad wire %d, %zu strings, %zu duplicates, first \"%s\"\n",
            what, bad, n, dups, n ? seen[0] : "(none)");
  CHECK(!bad && dups == 0 && n > 0 && seen[0][0] == 0);
  for (size_t i = 0; i < n; i++)
    free(seen[i]);
  free(seen);
}

/* ---- round trips ------------------------------------------------------- */

/* p encoded (gzip or not) and decoded again must equal p; and encoding
 * that again gives the same bytes. Returns the decoded copy, or NULL. */
static cprof__pf_t *round_trip(const char *what, const cprof__pf_t *p, int gzip,
                               int with_ids_sequential) {
  cprof__buf_t b, b2, raw;
  cprof__buf_init(&b);
  cprof__buf_init(&b2);
  cprof__buf_init(&raw);
  char err[256] = "";
  cprof__pf_t *q = NULL, *r = NULL;
  int rc = cprof__pf_encode(p, gzip, &b, err, sizeof err);
  if (rc != 0)
    fprintf(stderr, "%s: encode: %s\n", what, err);
  CHECK_EQ_INT(rc, 0);
  if (rc == 0) {
    CHECK(b.len > 0);
    CHECK_EQ_INT(gzip ? (b.len > 2 && (uint8_t)b.data[0] == 0x1f && (uint8_t)b.data[1] == 0x8b) : 1,
                 1);
    rc = cprof__pf_decode(b.data, b.len, &q, err, sizeof err);
    if (rc != 0)
      fprintf(stderr, "%s: decoding the encoding: %s\n", what, err);
    CHECK_EQ_INT(rc, 0);
  }
  if (q) {
    check_equal(what, p, q, with_ids_sequential);
    /* Encoded again, uncompressed: the string table, and a fixed point. */
    CHECK_EQ_INT(cprof__pf_encode(q, 0, &raw, err, sizeof err), 0);
    check_string_table(what, &raw);
    CHECK_EQ_INT(cprof__pf_decode(raw.data, raw.len, &r, err, sizeof err), 0);
    if (r) {
      CHECK_EQ_INT(cprof__pf_encode(r, 0, &b2, err, sizeof err), 0);
      CHECK(b2.len == raw.len && memcmp(b2.data, raw.data, raw.len) == 0);
      cprof__pf_free(r);
    }
  }
  cprof__buf_free(&b);
  cprof__buf_free(&b2);
  cprof__buf_free(&raw);
  return q;
}

static int read_file(const char *path, cprof__buf_t *out) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -errno;
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    cprof__buf_append(out, chunk, n);
  int bad = ferror(f) || out->failed;
  fclose(f);
  return bad ? -EIO : 0;
}

/* Every file in dirs[0..n_dirs) that decodes, round-tripped: returns how
 * many decoded. */
static int round_trip_dirs(const char *const *dirs, size_t n_dirs) {
  int n = 0, files = 0;
  for (size_t d = 0; d < n_dirs; d++) {
    DIR *dir = opendir(dirs[d]);
    if (!dir) {
      fprintf(stderr, "test_encode: cannot open %s: %s\n", dirs[d], strerror(errno));
      continue;
    }
    struct dirent *e;
    while ((e = readdir(dir))) {
      char path[4096];
      struct stat st;
      snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
      if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        continue;
      files++;
      cprof__buf_t b;
      cprof__buf_init(&b);
      cprof__pf_t *p = NULL;
      char err[256];
      if (read_file(path, &b) == 0 && cprof__pf_decode(b.data, b.len, &p, err, sizeof err) == 0) {
        cprof__pf_t *q = round_trip(path, p, n % 2, 1);
        cprof__pf_free(q);
        /* As a process tree's owner does to a worker's profile: the
         * decoded profile's arena (with its budget) takes the labels. */
        CHECK_EQ_INT(cprof__pf_set_label(p, "pid", "12345"), 0);
        for (size_t i = 0; i < p->n_samples; i++) {
          const cprof__pf_sample_t *s = &p->samples[i];
          int pids = 0;
          for (size_t k = 0; k < s->n_labels; k++)
            pids += !strcmp(s->labels[k].key, "pid") && s->labels[k].str &&
                    !strcmp(s->labels[k].str, "12345");
          if (pids != 1)
            CHECK_EQ_INT(pids, 1);
        }
        cprof__pf_free(round_trip(path, p, 1, 1));
        cprof__pf_free(p);
        n++;
      }
      cprof__buf_free(&b);
    }
    closedir(dir);
  }
  fprintf(stderr, "test_encode: %d of %d files decoded and round-tripped\n", n, files);
  return n;
}

/* A profile by hand with every field the model has set, IDs sparse (as
 * pprof allows), a location without a mapping, a line without a function,
 * a sample without locations and labels of every kind. */
static cprof__pf_t *every_field(void) {
  fx_t f = fx_new("alloc_objects/count alloc_space/bytes", 16);
  cprof__pf_t *p = f.p;
  cprof__pf_sample_t *s =
      fx_sample(&f, "main(main.c);work>inl(w.c)@/bin/prog;leaf@/lib/x.so", (int64_t[]){3, -4096});
  fx_label(&f, s, "thread", "worker-1");
  fx_num_label(&f, s, "bytes", 4096, "bytes");
  fx_num_label(&f, s, "count", -7, NULL);
  fx_label(&f, s, "thread", "again"); /* a key twice, as pprof allows */
  s = fx_sample(&f, "main(main.c);#deadbeef", (int64_t[]){0, 0});
  fx_label(&f, s, "", "empty key");
  fx_sample(&f, "", (int64_t[]){1, INT64_MIN});
  for (size_t i = 0; i < p->n_mappings; i++) {
    cprof__pf_mapping_t *m = &p->mappings[i];
    m->id = 5 + 10 * i;
    m->offset = 0x1000 * (i + 1);
    m->build_id = i ? "build-two" : "abc123";
    m->has_filenames = m->has_line_numbers = 1;
    m->has_inline_frames = i == 0;
    m->has_functions = i == 1;
  }
  p->mappings[1].limit = UINT64_MAX;
  for (size_t i = 0; i < p->n_locations; i++) {
    cprof__pf_location_t *l = &p->locations[i];
    l->id = 1000 + 3 * i;
    l->is_folded = i % 2;
    for (size_t k = 0; k < l->n_lines; k++)
      ((cprof__pf_line_t *)l->lines)[k].column = (int64_t)(k + 1) * 4;
  }
  /* A line whose function is unknown (function_id 0). */
  for (size_t i = 0; i < p->n_locations; i++)
    if (p->locations[i].n_lines == 2)
      ((cprof__pf_line_t *)p->locations[i].lines)[0].function = NULL;
  for (size_t i = 0; i < p->n_functions; i++) {
    cprof__pf_function_t *fn = &p->functions[i];
    fn->id = 77 + i;
    fn->start_line = (int64_t)(i * 100) - 1;
    if (i == 1)
      fn->system_name = "_Z4workv";
  }
  p->drop_frames = "malloc|free";
  p->keep_frames = "keep.*";
  p->time_nanos = 1700000000123456789;
  p->duration_nanos = -1;
  p->period_type = (cprof__value_type_t){"space", "bytes"};
  p->period = 524288;
  static const char *comments[] = {"first comment", "", "first comment", "dropped 3 frames"};
  p->comments = comments;
  p->n_comments = 4;
  p->default_sample_type = "alloc_space";
  return p;
}

/* The builder's own profile (symbolized addresses of this program, a
 * pseudo frame, string and numeric labels with a unit) decoded, then
 * round-tripped. */
static void builder_round_trip(void) {
  static const cprof__profile_desc_t desc = {
      .sample_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
      .n_sample_types = 2,
      .period_type = {"cpu", "nanoseconds"},
      .period = 10000000,
      .time_nanos = 1700000000000000000,
      .duration_nanos = 1000000000,
      .default_sample_type = "cpu",
  };
  cprof__builder_t *b = cprof__builder_new(&desc);
  CHECK(b != NULL);
  if (!b)
    return;
  uintptr_t pcs[3] = {(uintptr_t)&check_equal + 8, (uintptr_t)&round_trip + 16,
                      (uintptr_t)&builder_round_trip + 32};
  cprof__label_t labels[] = {{"thread", "worker-1", 0, NULL},
                             {"bytes", NULL, 4096, "bytes"},
                             {"requests", NULL, 12, NULL}};
  CHECK_EQ_INT(cprof__builder_add(b, pcs, 3, (int64_t[]){1, 10000000}, labels, 3), 0);
  CHECK_EQ_INT(cprof__builder_add(b, pcs + 1, 2, (int64_t[]){2, 20000000}, labels + 1, 1), 0);
  CHECK_EQ_INT(cprof__builder_add_pseudo(b, "[lost]", (int64_t[]){3, 0}, labels, 1), 0);
  cprof__buf_t out;
  cprof__buf_init(&out);
  CHECK_EQ_INT(cprof__builder_write_proto(b, &out), 0);
  cprof__builder_free(b);
  cprof__pf_t *p = NULL;
  char err[256];
  CHECK_EQ_INT(cprof__pf_decode(out.data, out.len, &p, err, sizeof err), 0);
  cprof__buf_free(&out);
  if (!p)
    return;
  CHECK_EQ_INT(p->n_samples, 3);
  CHECK(p->n_locations >= 3);
  for (int gzip = 0; gzip <= 1; gzip++)
    cprof__pf_free(round_trip("builder profile", p, gzip, 1));
  cprof__pf_free(p);
}

/* ---- set_label --------------------------------------------------------- */

static void set_label(void) {
  fx_t f = fx_new("samples/count", 8);
  cprof__pf_sample_t *s0 = fx_sample(&f, "main;a", (int64_t[]){5});
  fx_label(&f, s0, "thread", "t1");
  fx_num_label(&f, s0, "pid", 17, "pid"); /* replaced, though a number */
  fx_num_label(&f, s0, "bytes", 64, "bytes");
  cprof__pf_sample_t *s1 = fx_sample(&f, "main;b", (int64_t[]){6});
  fx_label(&f, s1, "pid", "old");
  fx_label(&f, s1, "pid", "older");                                 /* two of the key: one left */
  cprof__pf_sample_t *s2 = fx_sample(&f, "main;c", (int64_t[]){7}); /* none: added */
  (void)s2;
  cprof__pf_t *p = f.p;
  CHECK_DUMP(p, "main;a 5 bytes=64 bytes pid=17 pid thread=t1\n"
                "main;b 6 pid=old pid=older\n"
                "main;c 7");

  char pid[16];
  snprintf(pid, sizeof pid, "%d", 4242);
  CHECK_EQ_INT(cprof__pf_set_label(p, "pid", pid), 0);
  pid[0] = 'x'; /* copied, not borrowed */
  CHECK_DUMP(p, "main;a 5 bytes=64 bytes pid=4242 thread=t1\n"
                "main;b 6 pid=4242\n"
                "main;c 7 pid=4242");
  /* In place of the first of the key, others in their order. */
  CHECK_EQ_INT(p->samples[0].n_labels, 3);
  CHECK_EQ_STR(p->samples[0].labels[0].key, "thread");
  CHECK_EQ_STR(p->samples[0].labels[1].key, "pid");
  CHECK_EQ_STR(p->samples[0].labels[1].str, "4242");
  CHECK(p->samples[0].labels[1].num_unit == NULL);
  CHECK_EQ_INT(p->samples[0].labels[2].num, 64);
  CHECK_EQ_INT(p->samples[2].n_labels, 1);
  /* A second key, then the first again. */
  CHECK_EQ_INT(cprof__pf_set_label(p, "host", "a"), 0);
  CHECK_EQ_INT(cprof__pf_set_label(p, "pid", "1"), 0);
  CHECK_DUMP(p, "main;a 5 bytes=64 bytes host=a pid=1 thread=t1\n"
                "main;b 6 host=a pid=1\n"
                "main;c 7 host=a pid=1");
  CHECK_EQ_INT(cprof__pf_set_label(p, NULL, "x"), -EINVAL);
  CHECK_EQ_INT(cprof__pf_set_label(p, "k", NULL), -EINVAL);
  /* And it survives the encoding. */
  cprof__pf_t *q = round_trip("set_label", p, 1, 0);
  if (q) {
    CHECK_DUMP(q, "main;a 5 bytes=64 bytes host=a pid=1 thread=t1\n"
                  "main;b 6 host=a pid=1\n"
                  "main;c 7 host=a pid=1");
    cprof__pf_free(q);
  }
  cprof__pf_free(p);
}

/* ---- the shell test's mode --------------------------------------------- */

static int reencode(const char *in, const char *out_path) {
  cprof__buf_t b, out;
  cprof__buf_init(&b);
  cprof__buf_init(&out);
  cprof__pf_t *p = NULL;
  char err[256] = "";
  int rc = read_file(in, &b);
  if (rc != 0)
    snprintf(err, sizeof err, "cannot read: %s", strerror(-rc));
  else if ((rc = cprof__pf_decode(b.data, b.len, &p, err, sizeof err)) == 0)
    rc = cprof__pf_encode(p, 1, &out, err, sizeof err);
  if (rc == 0) {
    FILE *f = fopen(out_path, "wb");
    if (!f || fwrite(out.data, 1, out.len, f) != out.len || fclose(f) != 0) {
      snprintf(err, sizeof err, "cannot write %s", out_path);
      rc = -EIO;
    }
  }
  if (rc != 0)
    fprintf(stderr, "reencode %s: %s\n", in, err);
  cprof__pf_free(p);
  cprof__buf_free(&b);
  cprof__buf_free(&out);
  return rc == 0 ? 0 : rc == -EINVAL ? 2 : 1;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--reencode") == 0)
    return reencode(argv[2], argv[3]);
  if (argc >= 4 && strcmp(argv[1], "--round-trip") == 0) {
    int n = round_trip_dirs((const char *const *)argv + 3, (size_t)argc - 3);
    CHECK(n >= atoi(argv[2]));
    return check_result("test_encode --round-trip");
  }

  cprof__pf_t *p = every_field();
  for (int gzip = 0; gzip <= 1; gzip++) {
    cprof__pf_t *q = round_trip("every field", p, gzip, 0);
    if (q) {
      /* The model's own check of what was set above, in case the two
       * sides agreed on something wrong. */
      CHECK_EQ_INT(q->mappings[1].id, 15);
      CHECK(q->mappings[1].limit == UINT64_MAX);
      CHECK_EQ_INT(q->locations[0].id, 1000);
      CHECK_EQ_INT(q->functions[1].start_line, 99);
      CHECK_EQ_STR(q->functions[1].system_name, "_Z4workv");
      CHECK_EQ_INT(q->n_comments, 4);
      CHECK_EQ_STR(q->comments[1], "");
      CHECK_EQ_INT(q->samples[2].n_locations, 0);
      CHECK(q->samples[2].values[1] == INT64_MIN);
      CHECK_EQ_INT(q->ids_sequential, 0);
      cprof__pf_free(q);
    }
  }
  cprof__pf_free(p);

  builder_round_trip();
  set_label();

  /* Of pprof's test data, only go.nomappings.crash is profile.proto; the
   * rest are the legacy formats (text, Go's binary CPU format) and pprof's
   * report outputs, which decode refuses. encode.sh has go tool pprof
   * convert them all and runs --round-trip on what it wrote. A walk that
   * found none (a moved folder) must fail, not pass with nothing read. */
  int n = round_trip_dirs(testdata_dirs, sizeof testdata_dirs / sizeof *testdata_dirs);
  CHECK(n >= 1);

  /* Errors. */
  cprof__buf_t b;
  cprof__buf_init(&b);
  char err[64] = "";
  CHECK_EQ_INT(cprof__pf_encode(NULL, 0, &b, err, sizeof err), -EINVAL);
  CHECK(err[0] != 0 && strchr(err, '\n') == NULL);
  cprof__buf_free(&b);
  return check_result("test_encode");
}
