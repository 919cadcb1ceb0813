/* pprof's -focus, -ignore, -hide, -show, -tagfocus and -tagignore
 * (src/model/filter.c), on profiles built by hand, with what pprof's
 * FilterSamplesByName and FilterSamplesByTag keep. */
#include <errno.h>

#include "check.h"
#include "profile/pf_fixture.h"

static fx_t stacks(void) {
  fx_t f = fx_new("samples/count", 32);
  fx_sample(&f, "main(main.c);work(work.c);leaf(util.c)", (int64_t[]){1});
  fx_sample(&f, "main(main.c);work(work.c)>inl(inl.h)", (int64_t[]){2});
  fx_sample(&f, "main(main.c);@/lib/libc.so.6", (int64_t[]){4});
  fx_sample(&f, "main(main.c);other(other.c);leaf(util.c)", (int64_t[]){8});
  fx_sample(&f, "", (int64_t[]){16}); /* no stack: pprof always drops it */
  return f;
}

/* Filters a fresh copy of stacks() and compares the dump; returns the
 * return code, with matched[] and err for more checks. */
static int run(const cprof__pf_filter_t *opt, const char *want, int *matched, char *err,
               size_t errlen) {
  fx_t f = stacks();
  int rc = cprof__pf_filter(f.p, opt, matched, err, errlen);
  if (rc == 0 && want)
    CHECK_DUMP(f.p, want);
  cprof__pf_free(f.p);
  return rc;
}

static void test_names(void) {
  int m[CPROF_PF_FILTER_N];
  char err[128] = "";
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){0},
                   "main;@libc.so.6 4\n"
                   "main;other;leaf 8\n"
                   "main;work;leaf 1\n"
                   "main;work>inl 2",
                   m, err, sizeof err),
               0);
  for (int i = 0; i < CPROF_PF_FILTER_N; i++)
    CHECK_EQ_INT(m[i], 1);

  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.focus = "work"},
                   "main;work;leaf 1\n"
                   "main;work>inl 2",
                   m, err, sizeof err),
               0);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_FOCUS], 1);
  /* An inlined function is a frame of its own. */
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.focus = "^inl$"}, "main;work>inl 2", m, err, sizeof err),
               0);
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.ignore = "leaf", .hide = ""},
                   "main;@libc.so.6 4\n"
                   "main;work>inl 2",
                   m, err, sizeof err),
               0);
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.focus = "main", .ignore = "^other$"},
                   "main;@libc.so.6 4\n"
                   "main;work;leaf 1\n"
                   "main;work>inl 2",
                   m, err, sizeof err),
               0);
  /* Files and mapping files match too. */
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.focus = "util\\.c"},
                   "main;other;leaf 8\n"
                   "main;work;leaf 1",
                   m, err, sizeof err),
               0);
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.ignore = "inl\\.h|libc"},
                   "main;other;leaf 8\n"
                   "main;work;leaf 1",
                   m, err, sizeof err),
               0);
  CHECK_EQ_INT(
      run(&(cprof__pf_filter_t){.focus = "^/lib/"}, "main;@libc.so.6 4", m, err, sizeof err), 0);
  /* Nothing matched: no samples, and matched[] says which option. */
  CHECK_EQ_INT(
      run(&(cprof__pf_filter_t){.focus = "nothing", .ignore = "leaf"}, "", m, err, sizeof err), 0);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_FOCUS], 0);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_IGNORE], 1);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_HIDE], 1);
}

static void test_hide_show(void) {
  int m[CPROF_PF_FILTER_N];
  char err[128] = "";
  /* hide takes frames out; of an inlined frame's lines, only the match. */
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.hide = "^work$"},
                   "main;@libc.so.6 4\n"
                   "main;inl 2\n"
                   "main;leaf 1\n"
                   "main;other;leaf 8",
                   m, err, sizeof err),
               0);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_HIDE], 1);
  /* A matching mapping hides its whole location. */
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.hide = "libc"},
                   "main 4\n"
                   "main;other;leaf 8\n"
                   "main;work;leaf 1\n"
                   "main;work>inl 2",
                   m, err, sizeof err),
               0);
  /* show keeps only matching frames; a location without lines whose
   * mapping does not match goes. */
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.show = "^(main|leaf)$"},
                   "main 2\n"
                   "main 4\n"
                   "main;leaf 1\n"
                   "main;leaf 8",
                   m, err, sizeof err),
               0);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_SHOW], 1);
  /* hide first, then show; a sample left without frames goes. */
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.hide = "leaf", .show = "leaf|work"},
                   "work 1\n"
                   "work 2",
                   m, err, sizeof err),
               0);
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.show = "zzz"}, "", m, err, sizeof err), 0);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_SHOW], 0);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_FOCUS], 1);
  /* focus looks at the frames before hide takes them. */
  CHECK_EQ_INT(run(&(cprof__pf_filter_t){.focus = "leaf", .hide = "leaf"},
                   "main;other 8\n"
                   "main;work 1",
                   m, err, sizeof err),
               0);
}

static fx_t labelled(void) {
  fx_t f = fx_new("alloc_objects/count alloc_space/bytes", 16);
  cprof__pf_sample_t *s;
  s = fx_sample(&f, "main;a", (int64_t[]){1, 512});
  fx_label(&f, s, "handler", "/x");
  fx_num_label(&f, s, "bytes", 512, "bytes");
  s = fx_sample(&f, "main;b", (int64_t[]){2, 2048});
  fx_label(&f, s, "handler", "/y");
  fx_label(&f, s, "user", "bob");
  fx_num_label(&f, s, "bytes", 2048, NULL); /* the key's unit is bytes all the same */
  s = fx_sample(&f, "main;c", (int64_t[]){4, 1 << 20});
  fx_num_label(&f, s, "bytes", 1 << 20, "bytes");
  fx_num_label(&f, s, "delay", 200000000, "nanoseconds");
  s = fx_sample(&f, "main;d", (int64_t[]){8, 0});
  fx_num_label(&f, s, "delay", 50000000, "nanoseconds");
  fx_num_label(&f, s, "pid", 15, NULL);
  s = fx_sample(&f, "main;e", (int64_t[]){16, 0});
  fx_num_label(&f, s, "request", 100, NULL); /* pprof's legacy key: bytes */
  return f;
}

/* The samples a tag filter keeps, as their leaf names: "abc". */
static void check_tags(int line, const char *tagfocus, const char *tagignore, const char *want) {
  fx_t f = labelled();
  char err[128] = "", got[16] = "";
  int m[CPROF_PF_FILTER_N];
  int rc = cprof__pf_filter(
      f.p, &(cprof__pf_filter_t){.tagfocus = tagfocus, .tagignore = tagignore}, m, err, sizeof err);
  CHECK_EQ_INT(rc, 0);
  for (size_t i = 0; i < f.p->n_samples && i + 1 < sizeof got; i++)
    got[i] = f.p->samples[i].locations[0]->lines[0].function->name[0];
  if (strcmp(got, want) != 0)
    fprintf(stderr, "test_filter.c:%d: tagfocus \"%s\" tagignore \"%s\" kept \"%s\" (%s)\n", line,
            tagfocus ? tagfocus : "", tagignore ? tagignore : "", got, err);
  CHECK_EQ_STR(got, want);
  CHECK_EQ_INT(m[CPROF_PF_FILTER_TAGFOCUS], strchr(want, 0) != want || !tagfocus || !*tagfocus);
  cprof__pf_free(f.p);
}

static void test_tags(void) {
  check_tags(__LINE__, "handler=/x", NULL, "a");
  check_tags(__LINE__, "handler=/x,/y", NULL, "ab");
  check_tags(__LINE__, "handler=^x", NULL, "");
  check_tags(__LINE__, "user=.", NULL, "b");
  /* Bare: each expression matches some "key:value". */
  check_tags(__LINE__, "/y", NULL, "b");
  check_tags(__LINE__, "handler:/", NULL, "ab");
  check_tags(__LINE__, "^handler:/y$,user:bob", NULL, "b");
  check_tags(__LINE__, "handler:/x,user:bob", NULL, "");
  check_tags(__LINE__, NULL, "handler=/y", "acde");
  check_tags(__LINE__, "handler", "user=bob", "a");
  /* Ranges, in the range's unit. */
  check_tags(__LINE__, "bytes=1kb:", NULL, "bc");
  check_tags(__LINE__, "bytes=:1kb", NULL, "a");
  check_tags(__LINE__, "bytes=1kb:2kb", NULL, "b");
  check_tags(__LINE__, "bytes=2048b", NULL, "b");
  check_tags(__LINE__, "bytes=2kb", NULL, "b");
  check_tags(__LINE__, "bytes=1mb", NULL, "c");
  /* A number without a unit compares in none, and bytes have one. */
  check_tags(__LINE__, "bytes=512", NULL, "");
  check_tags(__LINE__, "delay=:100ms", NULL, "d");
  check_tags(__LINE__, "delay=100ms:1s", NULL, "c");
  check_tags(__LINE__, "pid=10:20", NULL, "d");
  check_tags(__LINE__, "pid=16:", NULL, "");
  check_tags(__LINE__, "request=100b", NULL, "e");
  /* Without a key, any numeric label. A unit pprof does not know (pid's,
   * the key itself) scales to the range's unit unchanged, so pid 15 is
   * 15 kB to pprof, and in range. */
  check_tags(__LINE__, "1kb:", NULL, "bcd");
  check_tags(__LINE__, NULL, "1kb:", "ae");
  /* Units that do not convert: not a range but a regex, matching nothing. */
  check_tags(__LINE__, "bytes=1kb:2ms", NULL, "");
}

static void test_errors(void) {
  char err[128];
  int m[CPROF_PF_FILTER_N];
  const char *bad[][2] = {
      {"focus", "("},
      {"ignore", "a["},
      {"hide", "*"},
      {"show", "a{1"},
      {"tagfocus", "k=("},
      {"tagignore", "x,["},
      {"tagfocus", "k=99999999999999999999:"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cprof__pf_filter_t opt = {0};
    const char **field = !strcmp(bad[i][0], "focus")      ? &opt.focus
                         : !strcmp(bad[i][0], "ignore")   ? &opt.ignore
                         : !strcmp(bad[i][0], "hide")     ? &opt.hide
                         : !strcmp(bad[i][0], "show")     ? &opt.show
                         : !strcmp(bad[i][0], "tagfocus") ? &opt.tagfocus
                                                          : &opt.tagignore;
    *field = bad[i][1];
    fx_t f = stacks();
    err[0] = 0;
    CHECK_EQ_INT(cprof__pf_filter(f.p, &opt, m, err, sizeof err), -EINVAL);
    /* One line naming the option; the profile is untouched. */
    CHECK(strstr(err, bad[i][0]) != NULL);
    CHECK(err[0] && strchr(err, '\n') == NULL);
    CHECK_EQ_INT(f.p->n_samples, 5);
    fprintf(stderr, "  %s \"%s\": %s\n", bad[i][0], bad[i][1], err);
    cprof__pf_free(f.p);
  }
}

int main(void) {
  test_names();
  test_hide_show();
  test_tags();
  test_errors();
  return check_result("test_filter");
}
