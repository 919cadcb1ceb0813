/* The viewer's JSON (src/ui/viewer.h): every string escaped so that it is
 * valid JSON and valid UTF-8 and cannot end the <script> element it sits
 * in, the tree written in preorder with shared strings, and the page put
 * together around it. python3's json module checks what we wrote parses. */
#include "ui/viewer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tree_fixture.h"

static char *json_of(const char *s) {
  cprof__buf_t b;
  cprof__buf_init(&b);
  cprof__viewer_json_string(&b, s);
  return cprof__buf_take(&b, NULL);
}

static void check_string(const char *in, const char *want) {
  char *got = json_of(in);
  CHECK_EQ_STR(got, want);
  free(got);
}

static void test_escaping(void) {
  check_string("main", "\"main\"");
  check_string("", "\"\"");
  check_string("</script><script>alert(1)</script>",
               "\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\"");
  check_string("a<b>&c", "\"a\\u003cb\\u003e\\u0026c\"");
  check_string("<!--", "\"\\u003c!--\"");
  check_string("say \"hi\"", "\"say \\\"hi\\\"\"");
  check_string("C:\\dir", "\"C:\\\\dir\"");
  check_string("line1\nline2\r\tend", "\"line1\\nline2\\r\\tend\"");
  check_string("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
  /* Bytes that are not UTF-8: one U+FFFD each. */
  check_string("\xff\xfe", "\"\\ufffd\\ufffd\"");
  check_string("bad\xffname", "\"bad\\ufffdname\"");
  check_string("\xc0\xaf", "\"\\ufffd\\ufffd\"");                       /* overlong '/' */
  check_string("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");            /* a surrogate */
  check_string("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* past U+10FFFF */
  check_string("\xe2\x82", "\"\\ufffd\\ufffd\"");                       /* cut short */
  check_string("\xe2\x82x", "\"\\ufffd\\ufffdx\"");
  /* Valid UTF-8 is kept as it is. */
  check_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5",
               "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5\"");
  check_string("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF */
  /* Line and paragraph separators end a line in older JavaScript. */
  check_string("a\xe2\x80\xa8"
               "b\xe2\x80\xa9",
               "\"a\\u2028b\\u2029\"");
}

static cprof__value_type_t heap_types[] = {
    {"alloc_objects", "count"},
    {"alloc_space", "bytes"},
    {"inuse_objects", "count"},
    {"inuse_space", "bytes"},
};

static const char *evil = "</script><script>window.__pwned=1</script>";

static cprof__pf_tree_t *small_tree(size_t n_values) {
  cprof__pf_tree_t *t = fixture_tree(n_values);
  int64_t hot[8] = {10, 1000, 5, 500, 8, 800, 4, 400};
  int64_t one[8] = {1, 100, 1, 100, 1, 100, 1, 100};
  cprof__pf_tree_node_t *m = fixture_node(t, t->root, "main", "main.c", NULL);
  cprof__pf_tree_node_t *h =
      fixture_node(t, m, "hot_function<std::map<int, char>>&", "hot.cc", hot);
  fixture_node(t, h, "main", "main.c", one); /* recursion, and a string seen before */
  fixture_node(t, m, evil, "evil<file>.c", one);
  fixture_node(t, m, "quote\" back\\slash\nnewline \x01 bad\xff\xfe caf\xc3\xa9", "", one);
  fixture_totals(t, t->root);
  return t;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

/* Runs python3 on the JSON in path: it must parse, as UTF-8, and read back
 * as the strings we put in. */
static int python_parses(const char *path, int n_nodes, int stride) {
  char cmd[2048];
  snprintf(
      cmd, sizeof cmd,
      "python3 -c 'import json, sys\n"
      "d = json.load(open(sys.argv[1], encoding=\"utf-8\"))\n"
      "s = d[\"strings\"]\n"
      "assert \"</script><script>window.__pwned=1</script>\" in s, s\n"
      "assert \"quote\\\" back\\\\slash\\nnewline \\x01 bad\\ufffd\\ufffd caf\\u00e9\" in s, s\n"
      "assert \"hot_function<std::map<int, char>>&\" in s, s\n"
      "assert len(d[\"nodes\"]) == %d * %d, len(d[\"nodes\"])\n"
      "assert d[\"nodes\"][0] == -1\n' %s",
      n_nodes, stride, path);
  return system(cmd);
}

static void test_json(void) {
  cprof__pf_t p = {0};
  p.sample_types = heap_types;
  p.n_sample_types = 4;
  const char *comments[] = {"made by <test> & friends"};
  p.comments = comments;
  p.n_comments = 1;
  p.default_sample_type = "";
  cprof__pf_tree_t *t = small_tree(4);

  cprof__buf_t b;
  cprof__buf_init(&b);
  CHECK_EQ_INT(cprof__viewer_json(t, &p, "heap of </title>", 0, &b), 0);
  CHECK(b.data && !strchr(b.data, '<'));
  CHECK(b.data && !strchr(b.data, '>'));
  CHECK(b.data && !strchr(b.data, '&'));
  /* No sample type named: pprof shows the last. */
  CHECK(b.data && strstr(b.data, "\"default\":3,"));
  CHECK(b.data && strstr(b.data, "\"diff\":false"));
  /* "main" twice in the tree, once in the strings. */
  CHECK_EQ_INT(b.data ? count(b.data, "\"main\"") : 0, 1);
  /* Root first, then main (parent 0), then the hot function (parent 1):
   * parent, name, file, 4 totals, 4 selfs. */
  CHECK(b.data &&
        strstr(b.data, "\"nodes\":[\n-1,0,0,13,1300,8,800,0,0,0,0,\n0,1,2,13,1300,8,800,0,0,0,0,\n"
                       "1,3,4,11,1100,6,600,10,1000,5,500,\n2,1,2,1,100,1,100,1,100,1,100,"));
  FILE *f = fopen("viewer_json.json", "w");
  if (f) {
    fwrite(b.data, 1, b.len, f);
    fclose(f);
  }
  CHECK_EQ_INT(python_parses("viewer_json.json", 6, 3 + 8), 0);

  /* The page around it. */
  cprof__buf_t page;
  cprof__buf_init(&page);
  CHECK_EQ_INT(cprof__viewer_page(b.data, b.len, "heap of </title><b>x</b> \xff", &page), 0);
  CHECK(
      page.data &&
      strstr(page.data, "<title>heap of &lt;/title&gt;&lt;b&gt;x&lt;/b&gt; \xef\xbf\xbd</title>"));
  CHECK(page.data &&
        strstr(page.data, "<script type=\"application/json\" id=\"profile-data\">{\"version\":1,"));
  /* The data's script and the code's, and no other end of a script. */
  CHECK_EQ_INT(page.data ? count(page.data, "</script>") : 0, 2);
  CHECK(page.data && !strstr(page.data, "{{data}}") && !strstr(page.data, "{{js}}") &&
        !strstr(page.data, "{{css}}") && !strstr(page.data, "{{title}}"));
  CHECK(page.data && strstr(page.data, "window.cprofViewer")); /* the js is in */
  CHECK(page.data && strstr(page.data, "#flame"));             /* and the css */
  cprof__buf_free(&page);
  /* JSON that could end the element is refused. */
  cprof__buf_init(&page);
  CHECK_EQ_INT(cprof__viewer_page("{\"a\":\"</script>\"}", 17, NULL, &page), -EINVAL);
  cprof__buf_free(&page);
  cprof__buf_free(&b);

  /* The profile's default type; a tree whose values do not fit the types. */
  p.default_sample_type = "alloc_space";
  cprof__buf_init(&b);
  CHECK_EQ_INT(cprof__viewer_json(t, &p, NULL, 0, &b), 0);
  CHECK(b.data && strstr(b.data, "\"default\":1,"));
  cprof__buf_free(&b);
  cprof__buf_init(&b);
  CHECK_EQ_INT(cprof__viewer_json(t, &p, NULL, 1, &b), -EINVAL);
  cprof__buf_free(&b);
  fixture_free(t);

  /* A diff: NEW's values, then BASE's. */
  t = small_tree(8);
  cprof__buf_init(&b);
  CHECK_EQ_INT(cprof__viewer_json(t, &p, NULL, 1, &b), 0);
  CHECK(b.data && strstr(b.data, "\"diff\":true"));
  f = fopen("viewer_json_diff.json", "w");
  if (f) {
    fwrite(b.data, 1, b.len, f);
    fclose(f);
  }
  CHECK_EQ_INT(python_parses("viewer_json_diff.json", 6, 3 + 16), 0);
  cprof__buf_free(&b);
  fixture_free(t);
  unlink("viewer_json.json");
  unlink("viewer_json_diff.json");
}

/* A tree as deep as a long recursion: written without recursing. */
static void test_deep(void) {
  enum { DEPTH = 200000 };
  cprof__pf_t p = {0};
  p.sample_types = heap_types;
  p.n_sample_types = 1;
  p.default_sample_type = "";
  cprof__pf_tree_t *t = fixture_tree(1);
  cprof__pf_tree_node_t *n = t->root;
  for (int i = 0; i < DEPTH; i++) {
    n = fixture_node(t, n, i % 2 ? "even" : "odd", "r.c", NULL);
    n->total[0] = DEPTH - i;
  }
  n->self[0] = 1;
  cprof__buf_t b;
  cprof__buf_init(&b);
  CHECK_EQ_INT(cprof__viewer_json(t, &p, NULL, 0, &b), 0);
  /* The last node's parent is the one before it. */
  char want[64];
  snprintf(want, sizeof want, "\n%d,", DEPTH - 1);
  CHECK(b.data && strstr(b.data, want));
  cprof__buf_free(&b);
  fixture_free(t);
}

int main(void) {
  test_escaping();
  test_json();
  test_deep();
  return check_result("test_viewer_json");
}
